"""Deep Backfilling (Wang's thesis Ch. 3): one PPO agent that selects and backfills, with a split
window and schedule cycling, on `hpcsched/DBF-v0` (`agents/dbf.py`, `experiments/dbf_training.py`).

``dbf:PATH`` runs a model file (a run folder: its best.pt) on the engine as `agents.dbf.DbfPolicy`
does: at each decision instant it picks slots whose job fits, starting each, until it chooses Fwd
or an invalid slot, which ends the cycle until the next event; under ``--backfill easy`` EASY
backfilling runs after that Fwd (the oldest waiting job that does not fit holds the reservation).
``dbf:PATH@masked`` reads a model trained without the mask through it: the greedy choice among
the picks that start a job and Fwd, as a model trained with ``--mask`` decides.
Models run under the ``standard`` profile (DBF's cycles need a decision at every event)."""

from __future__ import annotations

from hpcsched.envs import DBF
from hpcsched.recipes import Command, Evaluation, Recipe, Tiny, register

CLI = "hpcsched.cli.dbf"
XCLI = "hpcsched.cli.dbf_experiments"


#: how ``dbf:PATH@READING`` reads a model (none: as it was trained)
READINGS = {"masked": "its choice among the picks that start a job and Fwd (the mask of "
                      "`--mask` applied at decision time, whatever the training)"}


def policy(path, prepared, *, option: str, seed: int, sample: bool, name: str):
    """The DBF model at `path` as an engine Policy, observing with `prepared`'s constants;
    ``@masked`` (`option`) reads a model trained without the mask through it."""
    from hpcsched.agents.dbf import load_dbf
    from hpcsched.envs.dbf import check_profile

    if option and option not in READINGS:
        raise ValueError(f"{name}: unknown reading {option!r} after '@'; "
                         + "; ".join(f"@{k}: {v}" for k, v in READINGS.items()))
    if prepared is not None:
        check_profile(prepared)
    return load_dbf(path, prepared=prepared, sample=sample, seed=seed, name=name,
                    mask=True if option == "masked" else None)


def tiny() -> Tiny:
    """A small actor and critic ([32, 32]) on M = 4 slots (tail 1), 64-job episodes, 2 at a time,
    three updates at a rate that changes its mind in so few."""
    from hpcsched.agents.dbf import DBFConfig, as_policy
    from hpcsched.agents.ppo import PPO
    from hpcsched.envs.dbf import DbfScale

    def config(seed: int = 0) -> DBFConfig:
        return DBFConfig(trace="lublin-1", window=4, tail=1, episode_jobs=64, num_envs=2,
                         trajectories_per_epoch=2, hidden=(32, 32), minibatch=32,
                         pi_lr=1e-2, vf_lr=1e-2, seed=seed)

    def in_memory(model: PPO, prepared, name: str):  # as `policy` loads it from its file
        return as_policy(model.rollout_policy(), model.config, DbfScale.of(prepared), name=name)

    return Tiny(env=dict(trace="lublin-1", window=4, tail=1, episode_jobs=64),
                make=lambda env, seed: PPO(config(seed)),
                learn=lambda model, env: model.learn(3), policy=in_memory, trace="lublin-1",
                start=2000, jobs=128, profile="standard")


RECIPE = register(Recipe(
    name="dbf", prefix="dbf", env_id=DBF, learners={"ppo": "hpcsched.agents.ppo:PPO"},
    load="hpcsched.recipes.dbf:policy",
    train="hpcsched.experiments.dbf_training:train", shipped=("dbf-",), profile="standard",
    title="DBF models (Wang's thesis Ch. 3; standard profile)",
    usage="dbf:PATH (a model file, or a run folder: its best.pt); dbf:PATH@masked: read "
          "through the mask (only picks that start a job, or Fwd)",
    separator="@",
    train_command=Command("dbf", "DBF (Wang's thesis Ch. 3): PPO selects and backfills, with a "
                                 "split window and schedule cycling",
                          f"{CLI}:add_train_arguments", f"{CLI}:cmd_train"),
    experiments=(
        Command("dbf-baselines",
                "Wang's thesis Fig. 3.4: DBF against FCFS, SJF, LCFS and SchedInspector (online "
                "and offline) on DBF's 1,000-job test episodes; the thesis's facts checked",
                f"{XCLI}:add_baselines_arguments", f"{XCLI}:cmd_baselines"),
        Command("dbf-window-sweep",
                "Wang's thesis Fig. 3.5-3.7: DBF's split window per (M, M_t): AWT, queue length, "
                "invisible jobs, wait per job type",
                f"{XCLI}:add_sweep_arguments", f"{XCLI}:cmd_sweep"),
    ),
    evaluation=Evaluation("dbf", f"{CLI}:evaluate"),
    tiny="hpcsched.recipes.dbf:tiny"))
