"""The DRAS family's episode: one jobset scheduled by one agent (DRAS-PG, DRAS-DQL, Decima-PG) from
an empty machine, on `envs.dras.DrasEnv`. The same loop serves training (`learn`), validation and
test (with `learn=True` at test: the paper's online updates)."""

from __future__ import annotations

from typing import Any, Callable, Iterable

import numpy as np

from hpcsched.workload.jobs import JobTable


def run_episode(agent, env, jobs: JobTable, *, learn: bool, explore: bool | None = None,
                update_every: int | None = None) -> dict[str, Any]:
    """Schedule `jobs` with the agent from an empty machine. `learn`: remember every pick and
    update every `update_every` scheduling instances (and at the end). `explore` (default: `learn`):
    sample / epsilon-greedy picks instead of greedy ones. Returns the run's metrics, total reward,
    picks and updates."""
    explore = learn if explore is None else explore
    every = update_every or agent.config.update_every
    obs, info = env.reset(options={"jobs": jobs})
    total, picks, updates, last = 0.0, 0, 0, info["instances"]
    losses = []
    while True:
        mask = info["action_mask"]
        a = agent.predict(obs, mask, deterministic=not explore)
        obs2, r, term, _, info = env.step(a)
        total += r
        picks += 1
        if learn:
            agent.observe(obs, mask, a, r, obs2, info["action_mask"], term)
            if term or info["instances"] - last >= every:
                stats = agent.update()
                if "loss" in stats:
                    losses.append(stats["loss"])
                updates += 1
                last = info["instances"]
        obs = obs2
        if term:
            break
    if learn:
        agent.forget()
    result = env.result(agent.algo)
    return {"result": result, "reward": total, "picks": picks, "updates": updates,
            "loss": float(np.mean(losses)) if losses else float("nan")}


def learn(agent, env, jobsets: Iterable[JobTable],
          callback: Callable[[dict[str, Any]], None] | None = None):
    """Play each jobset as a training episode, in order; `callback` gets each episode's
    `run_episode` result. Returns the agent."""
    for jobs in jobsets:
        episode = run_episode(agent, env, jobs, learn=True)
        if callback is not None:
            callback(episode)
    return agent


__all__ = ["learn", "run_episode"]
