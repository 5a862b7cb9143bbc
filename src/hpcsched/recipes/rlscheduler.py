"""RLScheduler (Zhang et al., SC'20): a kernel network picks one of the first 128 waiting jobs,
trained with PPO on `hpcsched/PickJob-v0` (`agents/ppo.py`, `experiments/training.py`)."""

from __future__ import annotations

from hpcsched.envs import PICK_JOB
from hpcsched.recipes import Recipe, register


def policy(path, prepared, *, option: str, seed: int, sample: bool, name: str):
    """The model at `path`, observing with the constants of the trace it schedules (as the
    authors' test script does), else with its training trace's."""
    from hpcsched.agents.checkpoint import load_policy

    norm = prepared.report.norm if prepared is not None else None
    return load_policy(path, sample=sample, seed=seed, name=name, norm=norm)


RECIPE = register(Recipe(
    name="rlscheduler", prefix="rl", env_id=PICK_JOB,
    load="hpcsched.recipes.rlscheduler:policy", train="hpcsched.experiments.training:train",
    shipped=None, title="RLScheduler models",
    usage="rl:PATH (a model file, or a run folder: its best.pt)"))
