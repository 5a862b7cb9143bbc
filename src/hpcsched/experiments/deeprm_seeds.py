"""DeepRM's shipped models judged over training seeds: each training load (70%, 110%, 150%) trained
with seeds 0, 1 and 2 by MODELS.md's commands, each seed's `best.pt` (chosen on 50 validation
jobsets, seed 27182) scored at its own training load as `experiment deeprm-load-sweep` scores its
DeepRM column: greedy, mean slowdown pooled over the jobs of 100 unseen jobsets (seed 314159),
beside SJF, Packer and Tetris* of the same run.

    hpcsched experiment deeprm-seeds                       # data/pretrained/seeds/
    hpcsched experiment deeprm-seeds --models runs/seeds   # deeprm-load-NN-sK.pt or .../best.pt

A row: the heuristics, the best of them, each seed's slowdown, their mean and sample sd, how many
seeds beat the best heuristic (at the printed 2 decimals), the seed chosen on validation and the
seed of the file shipped now. `export(runs)` writes the slim seed files from run folders and copies
the chosen seed's `best.pt` as the shipped model.
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from hpcsched.experiments.deeprm import TUNED_KNOB, nearest_load, score_at, tetris_name
from hpcsched.experiments.policyspec import PRETRAINED
from hpcsched.experiments.seeds import SEED_FOLDER, SEEDS
from hpcsched.experiments.seeds import seed_path as named_seed_path
from hpcsched.experiments.seeds import shipped_seed as named_shipped_seed
from hpcsched.workload.deeprm import TEST_SEED, rate_for_load

#: the training loads of the shipped models, per reward (Fig. 4's slowdown, Fig. 5's completion)
TRAINING_LOADS = {"slowdown": (0.7, 1.1, 1.5), "completion": (1.3,)}
#: the training loads of the shipped slowdown models
LOADS = TRAINING_LOADS["slowdown"]
#: the heuristics a seed is held against: DeepRM's SJF and Packer, and our Tetris*
HEURISTICS = ("sjf", "packer", tetris_name(TUNED_KNOB))
#: a win is counted at the precision the tables print
DIGITS = 2


def training_loads(reward: str = "slowdown") -> tuple[float, ...]:
    if reward not in TRAINING_LOADS:
        raise ValueError(f"no shipped DeepRM models for reward {reward!r} "
                         f"(known: {', '.join(TRAINING_LOADS)})")
    return TRAINING_LOADS[reward]


def model_name(load: float, reward: str = "slowdown") -> str:
    """The shipped model of a training load: deeprm-load-70 for 0.7, deeprm-load-130-completion
    for 1.3 with the completion-time reward."""
    return f"deeprm-load-{round(100 * load)}" + ("" if reward == "slowdown" else f"-{reward}")


def seed_path(load: float, seed: int, models: str | Path | None = None,
              reward: str = "slowdown") -> Path:
    """The model of `load` trained with `seed` (`experiments.seeds.seed_path` of deeprm-load-NN)."""
    return named_seed_path(model_name(load, reward), seed, models)


def seed_paths(loads: Sequence[float], seeds: Sequence[int], models: str | Path | None = None,
               reward: str = "slowdown") -> dict[tuple[float, int], Path]:
    """Every (load, seed)'s file, or one error naming all that are missing."""
    found, missing = {}, {}
    for load in loads:
        for s in seeds:
            try:
                found[load, s] = seed_path(load, s, models, reward)
            except ValueError:
                missing.setdefault(model_name(load, reward), []).append(s)
    if missing:
        folder = SEED_FOLDER if models is None else Path(models)
        what = "; ".join(f"{name} seed{'s' if len(ss) > 1 else ''} "
                         f"{', '.join(map(str, ss))}" for name, ss in missing.items())
        looked = "NAME-sK.pt" + (" or NAME-sK/best.pt" if models is not None else "")
        raise ValueError(f"no model for {what} in {folder} (looked for {looked})")
    running = [f"{path.parent.name} (epoch {done} of {target})" for path in found.values()
               for done, target in [run_progress(path)] if done < target]
    if running:
        raise ValueError(f"unfinished runs (their best.pt may still change): "
                         f"{', '.join(running)}")
    return found


def run_progress(path: Path) -> tuple[int, int]:
    """(epochs done, epochs asked) of the run whose best.pt is `path`, from its model.pt and
    config.json; (0, 0) for a file that is not in a run folder."""
    import json

    from hpcsched.modelfile import read_model

    model, config = path.with_name("model.pt"), path.with_name("config.json")
    if path.name != "best.pt" or not model.exists() or not config.exists():
        return 0, 0
    target = int(json.loads(config.read_text()).get("epochs", 0))
    return int(read_model(model, recipe="deeprm")["epoch"]), target


def best_entry(path: str | Path) -> tuple[int, float]:
    """The epoch of a `best.pt` and the greedy validation score it was chosen with (the mean
    slowdown, or the mean completion time for a completion-reward run): its own epoch's entry in
    its history (NaN when that epoch was not validated). A run's best.pt saved by the warm start
    (epoch 0) before its entry was kept there is read in the run's model.pt."""
    from hpcsched.modelfile import read_model

    path = Path(path)
    ck = read_model(path, recipe="deeprm")
    epoch, key = int(ck["epoch"]), validation_key(ck)
    histories = [ck.get("history", [])]
    sibling = path.with_name("model.pt")
    if path.name == "best.pt" and sibling.exists():
        histories.append(lambda: read_model(sibling, recipe="deeprm")["history"])
    for history in histories:
        for h in reversed(history() if callable(history) else history):
            if h.get("epoch") == epoch and key in h:
                return epoch, float(h[key])
    return epoch, math.nan


def validation_key(ck: dict) -> str:
    """The history key a run chose its best.pt on: its reward's metric."""
    return f"val_{ck['config'].get('reward', 'slowdown')}"


def choose(val: dict[int, float]) -> int:
    """The seed with the lowest validation score (the first on a tie; NaN never)."""
    return min(val, key=lambda s: val[s] if not math.isnan(val[s]) else math.inf)


def shipped_file(load: float, reward: str = "slowdown") -> Path | None:
    path = PRETRAINED / f"{model_name(load, reward)}.pt"
    return path if path.exists() else None


def shipped_seed(load: float, reward: str = "slowdown") -> int | None:
    """The training seed (config) of the shipped deeprm-load-NN.pt."""
    return named_shipped_seed(model_name(load, reward))


def seed_study(loads: Sequence[float] | None = None, *, models: str | Path | None = None,
               seeds: Sequence[int] = SEEDS, jobsets: int = 100, steps: int = 50,
               seed: int = TEST_SEED, queue: str = "bounded",
               progress: Callable[[int], None] | None = None,
               reward: str = "slowdown") -> list[dict]:
    """One dict per training load: the heuristics' slowdown (`sjf`, `packer`, `tetris:0.1`),
    `best_heuristic` and `best`; per seed its slowdown (`s0`, ...), its best.pt's epoch
    (`epoch_s0`, ...) and validation slowdown (`val_s0`, ...); `mean`, `sd` (sample, ddof=1),
    `min`, `max`, `beats` (seeds below the best heuristic at 2 decimals), `chosen_seed` (the lowest
    validation slowdown), `shipped_seed` and `shipped` (the shipped file's slowdown: the sweep's
    DeepRM number at this load). Every model is scored by the load sweep's own code (`score_at`)
    on the same jobsets as the heuristics. A load that is not a training load (the sweep's 90 %,
    130 %, ...) is scored with the seeds of the nearest training load, as the sweep scores it
    (`model_load`, `model`). `reward="completion"`: the completion-time models (Fig. 5), every
    score then a mean completion time (default loads: each reward's training loads)."""
    from hpcsched.agents.deeprm_policy import load_deeprm_policy
    from hpcsched.policies.deeprm import get_grid_policy

    own = training_loads(reward)
    loads = own if loads is None else loads
    trained = {load: nearest_load(load, own) for load in loads}
    # all missing files named before any simulation
    paths = seed_paths(list(dict.fromkeys(trained.values())), seeds, models, reward)
    out = []
    for load in loads:
        near = trained[load]
        policies = [(h, get_grid_policy(h), None) for h in HEURISTICS]
        policies += [(f"s{s}", load_deeprm_policy(paths[near, s], name="deeprm"), near)
                     for s in seeds]
        if shipped_file(near, reward):
            policies.append(("shipped", load_deeprm_policy(shipped_file(near, reward),
                                                           name="deeprm"), near))
        rows = score_at(load, rate_for_load(load), policies, jobsets=jobsets, steps=steps,
                        seed=seed, queue=queue, progress=progress)
        result = {r["policy"]: r[reward] for r in rows}
        heur = {h: result[h] for h in HEURISTICS}
        best_h = min(heur, key=heur.get)
        scores = np.array([result[f"s{s}"] for s in seeds], dtype=np.float64)
        entries = {s: best_entry(paths[near, s]) for s in seeds}
        val = {s: entries[s][1] for s in seeds}
        row = {"load": load, "model": model_name(near, reward), "model_load": near,
               "metric": reward,
               "offered_load": rows[0]["offered_load"],
               "jobsets": jobsets, **heur, "best_heuristic": best_h, "best": heur[best_h]}
        row.update({f"s{s}": float(v) for s, v in zip(seeds, scores)})
        row.update(mean=float(scores.mean()),
                   sd=float(scores.std(ddof=1)) if len(scores) > 1 else math.nan,
                   min=float(scores.min()), max=float(scores.max()),
                   beats=f"{sum(round(v, DIGITS) < round(heur[best_h], DIGITS) for v in scores)}"
                         f"/{len(seeds)}",
                   chosen_seed=choose(val), shipped_seed=shipped_seed(near, reward),
                   shipped=result.get("shipped", math.nan))
        row.update({f"epoch_s{s}": entries[s][0] for s in seeds})
        row.update({f"val_s{s}": val[s] for s in seeds})
        row.update({f"file_s{s}": str(paths[near, s]) for s in seeds})
        out.append(row)
    return out


def simulations(loads: Sequence[float] | None = None, seeds: Sequence[int] = SEEDS,
                reward: str = "slowdown") -> int:
    """How many policy runs `seed_study` makes (for its progress bar)."""
    own = training_loads(reward)
    return sum(len(HEURISTICS) + len(seeds)
               + (shipped_file(nearest_load(load, own), reward) is not None)
               for load in (own if loads is None else loads))


def export(runs: str | Path, loads: Sequence[float] | None = None, seeds: Sequence[int] = SEEDS,
           to: str | Path = PRETRAINED, reward: str = "slowdown") -> list[dict]:
    """From run folders `runs/NAME-sK/` (NAME: `model_name(load, reward)`) write
    `to/seeds/NAME-sK.pt` (slim exports, `modelfile.slim`) and copy the best.pt of the
    seed with the lowest validation score (whole, as the shipped files are) to `to/NAME.pt`.
    Returns what was chosen, per load."""
    from hpcsched.modelfile import slim

    runs, to = Path(runs), Path(to)
    loads = training_loads(reward) if loads is None else loads
    for load in loads:  # every run is there before anything is written
        for s in seeds:
            best = runs / f"{model_name(load, reward)}-s{s}" / "best.pt"
            if not best.exists():
                raise ValueError(f"no model for {model_name(load, reward)} seed {s}: {best} "
                                 f"is missing")
    chosen = []
    for load in loads:
        name = model_name(load, reward)
        val = {}
        for s in seeds:
            best = runs / f"{name}-s{s}" / "best.pt"
            epoch, val[s] = best_entry(best)
            slim(best, to / "seeds" / f"{name}-s{s}.pt", history=_own_history(best, epoch))
        pick = choose(val)
        shutil.copyfile(runs / f"{name}-s{pick}" / "best.pt", to / f"{name}.pt")
        chosen.append({"model": name, "seed": pick, **{f"val_s{s}": v for s, v in val.items()}})
    return chosen


def _own_history(best: Path, epoch: int) -> list[dict] | None:
    """The history to keep in a slim copy of a run's best.pt: its own, or, where that lacks the
    best epoch's entry (a warm start's best.pt before the fix), the run's model.pt's up to it."""
    from hpcsched.modelfile import read_model

    ck = read_model(best, recipe="deeprm")
    own, key = ck["history"], validation_key(ck)
    if any(h.get("epoch") == epoch and key in h for h in own):
        return None
    model = best.with_name("model.pt")
    if not model.exists():
        return None
    return [h for h in read_model(model, recipe="deeprm")["history"]
            if h.get("epoch", math.inf) <= epoch]


__all__ = ["DIGITS", "HEURISTICS", "LOADS", "SEEDS", "SEED_FOLDER", "TRAINING_LOADS", "best_entry",
           "choose", "training_loads", "validation_key",
           "export", "model_name", "run_progress", "seed_path", "seed_paths", "seed_study",
           "shipped_file", "shipped_seed", "simulations"]
