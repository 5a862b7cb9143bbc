"""DRAS (Fan et al., IPDPS'21): DRAS-PG, DRAS-DQL and Decima-PG pick (or reserve for) a job of a
window, trained on `hpcsched/DRAS-v0` (`agents/dras_pg.py`, `agents/dql.py`,
`experiments/dras_training.py`). A model runs under the dras profile, with ``--backfill easy``
(Decima-PG: ``none``)."""

from __future__ import annotations

from hpcsched.envs import DRAS
from hpcsched.recipes import Command, Evaluation, Recipe, Tiny, register

CLI = "hpcsched.cli.dras"


def policy(path, prepared, *, option: str, seed: int, sample: bool, name: str):
    """The agent at `path`, greedy and frozen, on the trace it schedules."""
    if prepared is None:
        raise ValueError(f"{name}: a DRAS model needs the trace it schedules")
    from hpcsched.agents.dras_policy import DrasPolicy
    from hpcsched.experiments.dras_training import load_agent

    agent, config = load_agent(path)
    return DrasPolicy(agent, config, prepared, name)


def tiny() -> tuple[Tiny, ...]:
    """DRAS-PG, DRAS-DQL and Decima-PG with small layers and a window of 10 on KTH-SP2 (100
    nodes), each trained on two 60-job jobsets (DRAS-PG at a rate of 1e-3: at 1e-2 it collapses
    onto one slot, a model whose layers hardly matter). A model file of theirs holds the run's
    config besides the agent (what ``dras:PATH`` reads): `save` adds it."""
    from dataclasses import asdict

    from hpcsched.experiments.dras_training import DrasRunConfig, make_agent

    def learner(algo: str, agent: dict):
        config = DrasRunConfig(algo=algo, trace="kth-sp2", window=10, agent=agent)

        def make(env, seed: int):
            return make_agent(DrasRunConfig(**{**asdict(config), "seed": seed}), env.rows_shape[0])

        def learn(agent, env):
            jobs = env.prepared.jobs
            agent.learn(env, [jobs.window(2000, 60), jobs.window(4000, 60)])

        return Tiny(env=dict(trace="kth-sp2", window=10, hierarchy=algo != "decima"), make=make,
                    learn=learn, save=lambda agent, path: agent.save(path, config=asdict(config)),
                    policy=lambda agent, prepared, name: agent.policy(config, prepared, name),
                    trace="kth-sp2", start=8000, jobs=400,
                    backfill="none" if algo == "decima" else "easy", name=algo)

    small = dict(fc1=16, fc2=8, update_every=2)
    return (learner("pg", dict(small, lr=1e-3)),
            learner("dql", dict(small, lr=1e-2, batch=16, target_every=2)),
            learner("decima", dict(small, lr=1e-2)))


RECIPE = register(Recipe(
    name="dras", prefix="dras", env_id=DRAS,
    load="hpcsched.recipes.dras:policy", train="hpcsched.experiments.dras_training:train",
    learners={"reinforce": "hpcsched.agents.dras_pg:DrasPG", "dqn": "hpcsched.agents.dql:DrasDQL"},
    shipped=("dras-", "decima-"), profile="dras",
    title="DRAS models (run under the dras profile unless --profile says otherwise; --backfill "
          "easy, Decima-PG none)",
    usage="dras:PATH",
    train_command=Command("dras", "DRAS (IPDPS'21): reserve then backfill, picked by a PG or DQL "
                                  "agent",
                          f"{CLI}:add_train_arguments", f"{CLI}:cmd_train"),
    experiments=(
        Command("dras", "DRAS (IPDPS'21): every method on the test period, Kiviat plot and "
                        "tables",
                f"{CLI}:add_experiment_arguments", f"{CLI}:cmd_experiment"),
        Command("dras-seeds", "DRAS-DQL over training seeds 0, 1, 2 on the test period, against "
                              "FCFS+EASY",
                f"{CLI}:add_seeds_arguments", f"{CLI}:cmd_seeds"),
        Command("dras-curriculum", "DRAS's curriculum ablation: validation curves of training "
                                   "runs (paper Fig. 4)",
                f"{CLI}:add_curriculum_arguments", f"{CLI}:cmd_curriculum"),
    ),
    evaluation=Evaluation("dras", f"{CLI}:evaluate", f"{CLI}:add_evaluate_arguments"),
    tiny="hpcsched.recipes.dras:tiny"))
