"""Policies named on the command line: a heuristic (`sjf`), a trained model (`rl:PATH`), or a model
shipped with the package (`rl:pretrained/NAME`, see `hpcsched.data.pretrained`).

`inspect:PATH` (or `inspect:pretrained/NAME`) is a SchedInspector model around the base heuristic it
was trained with; `inspect:PATH@BASE` puts it around another base heuristic. `inspect:reject-unfit@BASE`
is a fixed rule in the inspector's place, for reference: reject the proposed job exactly when it does
not fit in the free nodes now.

`dras:PATH` (or `dras:pretrained/NAME`, e.g. `dras:pretrained/dras-pg-ricc`) is a trained DRAS-PG,
DRAS-DQL or Decima-PG agent; it runs under the dras profile, with `--backfill easy` (Decima-PG:
`none`)."""

from __future__ import annotations

from pathlib import Path

from hpcsched.sim.run import Prepared

PRETRAINED = Path(__file__).resolve().parent.parent / "data" / "pretrained"


#: file-name prefixes of the shipped models of the other learned schedulers; RLScheduler's have none
FAMILY_PREFIXES = ("inspect-", "deeprm-", "dras-", "decima-")


def pretrained_models(prefix: str | None = None) -> list[str]:
    """Names of the shipped models: RLScheduler's (``rl:pretrained/NAME``) by default, or those
    whose names start with `prefix` (``inspect-``, ``deeprm-``, ``dras-``, ``decima-``)."""
    names = sorted(p.stem for p in PRETRAINED.glob("*.pt"))
    if prefix is not None:
        return [n for n in names if n.startswith(prefix)]
    return [n for n in names if not n.startswith(FAMILY_PREFIXES)]


def model_path(spec: str, prefixes: tuple[str, ...] | None = None) -> Path:
    """The checkpoint file a model spec names (without its `rl:`, `inspect:`, `dras:` prefix);
    `prefixes`: the shipped names to list when a pretrained name is unknown (default:
    RLScheduler's)."""
    if spec.startswith("pretrained/"):
        name = spec[len("pretrained/"):].removesuffix(".pt")
        path = PRETRAINED / f"{name}.pt"
        if not path.exists():
            names = (pretrained_models() if prefixes is None else
                     [n for p in prefixes for n in pretrained_models(p)])
            known = ", ".join(names) or "none"
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
    if spec.startswith("inspect:"):
        return _inspector(spec, prepared, seed=seed, sample=sample)
    if spec.startswith("dras:"):
        from hpcsched.experiments.dras_training import DrasPolicy, load_agent

        if prepared is None:
            raise ValueError(f"{spec}: a DRAS model needs the trace it schedules")
        agent, config = load_agent(model_path(spec[len("dras:"):], prefixes=("dras-",
                                                                              "decima-")))
        return DrasPolicy(agent, config, prepared, spec)
    if spec.startswith("rl:"):
        from hpcsched.agents.checkpoint import load_policy

        norm = prepared.report.norm if prepared is not None else None
        return load_policy(model_path(spec[3:]), sample=sample, seed=seed, name=spec, norm=norm)
    from hpcsched.policies.priority import get_policy

    return get_policy(spec, seed=seed, profile=prepared.profile if prepared is not None else None)


def model_profiles(specs: list[str]) -> dict[str, str]:
    """{spec: profile} for the SchedInspector and DRAS policies among `specs`: the profile a model
    was trained with (the fixed reject-unfit rule: schedinspector; DRAS: dras). Heuristics and `rl:` models are left
    out: `rl:` models keep the standard default they have always had."""
    out: dict[str, str] = {}
    for spec in specs:
        if spec.startswith("dras:"):
            out[spec] = "dras"
            continue
        if not spec.startswith("inspect:"):
            continue
        path = spec[len("inspect:"):].partition("@")[0]
        if path == "reject-unfit":
            out[spec] = "schedinspector"
            continue
        from hpcsched.agents.inspector import load_inspector_checkpoint

        out[spec] = load_inspector_checkpoint(model_path(path))["config"].get(
            "profile", "schedinspector")
    return out


def _inspector(spec: str, prepared: Prepared | None, *, seed: int, sample: bool):
    from hpcsched.agents.inspector import load_inspector
    from hpcsched.policies.priority import get_policy

    path, _, base = spec[len("inspect:"):].partition("@")
    if base:
        get_policy(base)  # an unknown base fails here with the list of heuristics
    if prepared is not None and not prepared.profile.commit:
        raise ValueError(f"{spec}: an inspector delays the base heuristic's committed pick, which "
                         f"needs commit semantics; use --profile schedinspector or leave "
                         f"--profile out (not {prepared.profile.name})")
    norm = prepared.report.norm if prepared is not None else None
    profile = prepared.profile if prepared is not None else None
    if path == "reject-unfit":
        from hpcsched.agents.inspector import InspectedPolicy, reject_unfit

        if not base:
            raise ValueError(f"{spec}: name the base heuristic, e.g. inspect:reject-unfit@sjf")
        return InspectedPolicy(None, get_policy(base, profile=profile or "schedinspector"),
                               norm or {}, decide=reject_unfit, name=spec)
    return load_inspector(model_path(path), base=base or None, norm=norm, sample=sample,
                          seed=seed, name=spec, profile=profile)


__all__ = ["PRETRAINED", "model_path", "model_profiles", "pretrained_models", "resolve_policy"]
