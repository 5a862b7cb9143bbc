"""DRAS (Fan et al., IPDPS'21): DRAS-PG, DRAS-DQL and Decima-PG pick (or reserve for) a job of a
window, trained on `hpcsched/DRAS-v0` (`agents/dras_pg.py`, `agents/dql.py`,
`experiments/dras_training.py`). A model runs under the dras profile, with ``--backfill easy``
(Decima-PG: ``none``)."""

from __future__ import annotations

from hpcsched.envs import DRAS
from hpcsched.recipes import Recipe, register


def policy(path, prepared, *, option: str, seed: int, sample: bool, name: str):
    """The agent at `path`, greedy and frozen, on the trace it schedules."""
    if prepared is None:
        raise ValueError(f"{name}: a DRAS model needs the trace it schedules")
    from hpcsched.experiments.dras_training import DrasPolicy, load_agent

    agent, config = load_agent(path)
    return DrasPolicy(agent, config, prepared, name)


RECIPE = register(Recipe(
    name="dras", prefix="dras", env_id=DRAS,
    load="hpcsched.recipes.dras:policy", train="hpcsched.experiments.dras_training:train",
    shipped=("dras-", "decima-"), profile="dras",
    title="DRAS models (run under the dras profile unless --profile says otherwise; --backfill "
          "easy, Decima-PG none)",
    usage="dras:PATH"))
