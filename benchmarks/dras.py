"""Speed of DRAS's decision loop: `python benchmarks/dras.py`.

RICC (dras profile), 2000 jobs of the training period. Baseline in the same process: FCFS+EASY on
the same engine (the loop every heuristic runs). Measured: the DRAS environment stepped with the
first slot (the same schedule as FCFS+EASY, so the ratio is the price of observing every pick),
DRAS-PG's greedy picks (one network call per pick), DRAS-DQL's (one window-scoring call per pick),
and one DRAS-PG training episode (picks + an update every 10 instances). Prints a table, then
`name=value` pairs.
"""
import time

import numpy as np
import torch

from hpcsched.agents.dras_episode import run_episode
from hpcsched.experiments.dras_training import DrasRunConfig, make_agent, make_env, prepared_for
from hpcsched.workload.jobsets import split
from hpcsched.policies.priority import get_policy
from hpcsched.sim.factory import make_engine

torch.set_num_threads(1)


def best(fn, repeat=3):
    b, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        b = min(b, time.perf_counter() - t)
    return b, out


config = DrasRunConfig()
p = prepared_for(config)
train, _, _ = split(p.jobs, config.train_days, config.validate_days, config.test_days)
jobs = train.window(20000, 2000)
base, res = best(lambda: make_engine(jobs, p.cluster, p.profile, "easy").run(get_policy("fcfs")))
env = make_env(config, p)


def first_slot():
    obs, info = env.reset(options={"jobs": jobs})
    n = 0
    while True:
        obs, r, term, _, info = env.step(0)
        n += 1
        if term:
            return n


t_env, picks = best(first_slot)
pg = make_agent(config, env.rows_shape[0])
t_pg, out_pg = best(lambda: run_episode(pg, env, jobs, learn=False), repeat=1)
dql = make_agent(DrasRunConfig(algo="dql"), env.rows_shape[0])
t_dql, out_dql = best(lambda: run_episode(dql, env, jobs, learn=False), repeat=1)
t_train, out_train = best(lambda: run_episode(pg, env, jobs, learn=True), repeat=1)

rows = [("FCFS+EASY, engine only (baseline)", base, res.metrics["decisions"]),
        ("DRAS env, slot 0 (same schedule)", t_env, picks),
        ("DRAS-PG greedy", t_pg, out_pg["picks"]),
        ("DRAS-DQL greedy", t_dql, out_dql["picks"]),
        ("DRAS-PG training episode", t_train, out_train["picks"])]
print(f"{'2000 RICC jobs':<40}{'s':>8}{'picks':>8}{'x base':>8}{'ms/pick':>9}")
for name, t, n in rows:
    print(f"{name:<40}{t:8.2f}{n:8d}{t / base:8.1f}{1000 * t / max(n, 1):9.3f}")
print(f"env_ratio={t_env / base:.2f} pg_ms_per_pick={1000 * t_pg / out_pg['picks']:.3f} "
      f"dql_ms_per_pick={1000 * t_dql / out_dql['picks']:.3f} "
      f"train_episode_s={t_train:.2f} train_ratio={t_train / base:.1f}")
