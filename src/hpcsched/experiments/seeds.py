"""What every seed study (`experiment *-seeds`) shares: the training seeds, where the shipped seed
files live, and how a seed's model file is found."""

from __future__ import annotations

from pathlib import Path

from hpcsched.experiments.policyspec import PRETRAINED

#: the training seeds of every recipe judged over seeds
SEEDS = (0, 1, 2)
#: the shipped seed files, NAME-sK.pt
SEED_FOLDER = PRETRAINED / "seeds"


def seed_path(name: str, seed: int, models: str | Path | None = None) -> Path:
    """`name`'s model trained with `seed`: the shipped data/pretrained/seeds/NAME-sK.pt, or in the
    folder `models` NAME-sK.pt or the run folder NAME-sK/ (`recipes.in_folder`: its best.pt, its
    model.pt while it has none, said on stderr), in that order. A missing one is named with every
    path looked at."""
    from hpcsched.recipes import in_folder

    folder = SEED_FOLDER if models is None else Path(models)
    looked = [folder / f"{name}-s{seed}.pt"]
    if models is None:
        if looked[0].is_file():
            return looked[0]
    else:
        found = in_folder(folder, f"{name}-s{seed}")
        if found is not None:
            return found
        looked.append(folder / f"{name}-s{seed}" / "best.pt")
    raise ValueError(f"no model for {name} seed {seed} in {folder} (looked for "
                     + " and ".join(str(p) for p in looked) + ")")


def shipped_seed(name: str) -> int | None:
    """The training seed (its config's) of the shipped data/pretrained/NAME.pt; None where
    nothing is shipped under that name."""
    from hpcsched.modelfile import read_model

    path = PRETRAINED / f"{name}.pt"
    if not path.exists():
        return None
    return int(read_model(path)["config"]["seed"])


__all__ = ["SEEDS", "SEED_FOLDER", "seed_path", "shipped_seed"]
