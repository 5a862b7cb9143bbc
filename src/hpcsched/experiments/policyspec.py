"""Policies named on the command line: a heuristic (`sjf`), a trained model (`rl:PATH`), or a model
shipped with the package (`rl:pretrained/NAME`, see `hpcsched.data.pretrained`)."""

from __future__ import annotations

from pathlib import Path

from hpcsched.sim.run import Prepared

PRETRAINED = Path(__file__).resolve().parent.parent / "data" / "pretrained"


def pretrained_models() -> list[str]:
    """Names of the shipped RLScheduler models (``rl:pretrained/NAME``); DeepRM's (deeprm-*.pt)
    are listed by `hpcsched.experiments.deeprm.shipped_models`."""
    return sorted(p.stem for p in PRETRAINED.glob("*.pt") if not p.stem.startswith("deeprm-"))


def model_path(spec: str) -> Path:
    """The checkpoint file an `rl:` spec names (without the `rl:` prefix)."""
    if spec.startswith("pretrained/"):
        name = spec[len("pretrained/"):].removesuffix(".pt")
        path = PRETRAINED / f"{name}.pt"
        if not path.exists():
            known = ", ".join(pretrained_models()) or "none"
            raise ValueError(f"no pretrained model {name!r}; shipped models: {known}")
        return path
    path = Path(spec)
    if path.is_dir():  # a run folder: its model.pt
        path = path / "model.pt"
    if not path.exists():
        raise ValueError(f"no model file at {path}")
    return path


def resolve_policy(spec: str, prepared: Prepared | None = None, *, seed: int = 0,
                   sample: bool = False):
    """The `Policy` a name stands for. A trained model observes with the constants of the trace it
    schedules (`prepared`), like the authors' test script; `sample=True` samples its actions.
    Under the discrete `deeprm` profile (or for `deeprm:PATH`) the names are DeepRM's: sjf, packer,
    tetris[:KNOB], random, deeprm:PATH or deeprm:pretrained/NAME."""
    if spec.startswith("deeprm:") or (prepared is not None and prepared.profile.discrete):
        from hpcsched.experiments.deeprm import resolve_grid_policy

        return resolve_grid_policy(spec, seed=seed, sample=sample)
    if spec.startswith("rl:"):
        from hpcsched.agents.checkpoint import load_policy

        norm = prepared.report.norm if prepared is not None else None
        return load_policy(model_path(spec[3:]), sample=sample, seed=seed, name=spec, norm=norm)
    from hpcsched.policies.priority import get_policy

    return get_policy(spec, seed=seed)


__all__ = ["PRETRAINED", "model_path", "pretrained_models", "resolve_policy"]
