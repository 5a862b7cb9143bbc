"""The model-file formats before `hpcsched.model/2`, read and upgraded.

Until issue 15 each learner wrote its own format: `hpcsched.ppo/1` (RLScheduler's and
SchedInspector's PPO, the latter tagged ``algorithm: schedinspector-ppo``), `hpcsched.deeprm/1` and
`hpcsched.dras/1` (the agent's state under ``agent``), each with slim copies of its own. `upgrade`
maps such a file onto the one format entry for entry: every tensor is the same tensor, every
config, history and random state the same value, in its new place. `read_model`
(`hpcsched.modelfile`) calls it on an old file, so that a run folder written before keeps loading,
scoring and resuming (the next save writes the new format); `upgrade_file` rewrites an old file in
place, atomically, which ``hpcsched upgrade-models`` does for every file or folder it is given:

    hpcsched upgrade-models runs/my-run/model.pt runs/my-run/best.pt
    hpcsched upgrade-models runs/                    # every *.pt below a folder

Only an old DRAS slim copy loses something: the global random states of the process that slimmed
it (a slim export of the new format has no training state).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

#: the old formats this module reads
FORMATS = ("hpcsched.ppo/1", "hpcsched.deeprm/1", "hpcsched.dras/1")
#: an old PPO file's "algorithm" -> its recipe (RLScheduler's files name none)
PPO_RECIPES = {None: "rlscheduler", "schedinspector-ppo": "schedinspector"}


def _training(*, optimizers: dict, rng, learner: dict | None = None,
              run: dict | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"optimizers": optimizers}
    if rng is not None:
        out["rng"] = rng
    if learner:
        out["learner"] = learner
    if run:
        out["run"] = run
    return out


def _ppo(old: dict) -> dict[str, Any]:
    algorithm = old.get("algorithm")
    if algorithm not in PPO_RECIPES:
        raise ValueError(f"an unknown PPO algorithm {algorithm!r}")
    weights = {"policy": old["policy"]}
    if "value" in old:
        weights["value"] = old["value"]
    new = {"recipe": PPO_RECIPES[algorithm], "learner": "ppo", "config": old["config"],
           "weights": weights, "norm": old.get("norm") or {}}
    if "pi_optimizer" in old:
        # what PPO kept besides its own: RLScheduler's filter band and warm start, the run options
        run = {k: old[k] for k in ("filter", "warm", "run_options") if k in old}
        new["training"] = _training(
            optimizers={"policy": old["pi_optimizer"], "value": old["v_optimizer"]},
            rng=old.get("rng"), run=run)
    return new


def _deeprm(old: dict) -> dict[str, Any]:
    new = {"recipe": "deeprm", "learner": "reinforce", "config": old["config"],
           "weights": {"policy": old["policy"]}, "norm": {}}
    if "optimizer" in old:
        new["training"] = _training(optimizers={"policy": old["optimizer"]},
                                    rng=old.get("rng"), learner={"rng": old["np_rng"]})
    return new


#: the entries of an old DRAS agent's state that are counters of its training
DRAS_COUNTERS = ("running_baseline", "updates", "dropped", "epsilon")


def _dras(old: dict) -> dict[str, Any]:
    agent = old["agent"]
    dqn = agent["algo"] == "dql"
    net = "q" if dqn else "policy"
    weights = {net: agent["net"]}
    if dqn and "target" in agent and not agent.get("slim"):
        weights["target"] = agent["target"]
    new = {"recipe": "dras", "learner": "dqn" if dqn else "reinforce", "config": old["config"],
           "learner_config": {**agent["agent_config"], "rows": int(agent["rows"])},
           "learner_state": {k: agent[k] for k in DRAS_COUNTERS if k in agent},
           "weights": weights, "norm": old.get("norm") or {}}
    if "optimizer" in agent and not agent.get("slim"):
        # model.pt's "training": the agent's generator and DQN's replay memory
        new["training"] = _training(optimizers={net: agent["optimizer"]}, rng=old.get("rng"),
                                    learner=old.get("training"))
    return new


def upgrade(old: dict[str, Any]) -> dict[str, Any]:
    """The contents of an old-format model file (as torch read them) in the one format
    (`hpcsched.modelfile`), keeping its version; a KeyError, TypeError or ValueError where it is
    not what its format wrote."""
    fmt = old.get("format")
    convert = {"hpcsched.ppo/1": _ppo, "hpcsched.deeprm/1": _deeprm,
               "hpcsched.dras/1": _dras}.get(fmt)
    if convert is None:
        raise ValueError(f"format {fmt!r} is not an old hpcsched format")
    from hpcsched.modelfile import FORMAT

    new = convert(old)
    epoch = old["episode"] if fmt == "hpcsched.dras/1" else old["epoch"]
    return {"format": FORMAT, "version": old.get("version"), **new,
            "learner_config": new.get("learner_config", {}),
            "learner_state": new.get("learner_state", {}), "epoch": int(epoch),
            "history": list(old.get("history") or [])}


def upgraded(path, old: dict[str, Any]) -> dict[str, Any]:
    """`upgrade(old)` for the file at `path`; one that cannot be read is refused in one line."""
    from hpcsched.modelfile import ModelFileError, one_line

    try:
        return upgrade(old)
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise ModelFileError(f"{path}: a model file of the old format {old.get('format')} that "
                             f"cannot be read ({type(e).__name__}: {one_line(e)})") from None


def upgrade_file(path: str | Path) -> str:
    """Rewrite the model file at `path` in the one format if it is in an old one (atomically; its
    `version` is then this hpcsched's, the writer's); what was done, in words."""
    from hpcsched.modelfile import _read, write_model

    path, old = _read(path)
    fmt = old.get("format") if isinstance(old, dict) else None
    if fmt not in FORMATS:
        return f"{path}: left as it is ({fmt or 'not an hpcsched model file'})"
    new = upgraded(path, old)
    before = path.stat().st_size
    write_model(path, new)
    return (f"{path}: {fmt} -> {new['format']} ({new['recipe']}, {new['learner']}"
            f"{'' if 'training' in new else ', slim'}), {before:,} -> "
            f"{path.stat().st_size:,} bytes")


__all__ = ["FORMATS", "upgrade", "upgrade_file", "upgraded"]
