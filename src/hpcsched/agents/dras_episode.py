"""The DRAS family's episode: one jobset scheduled by one agent (DRAS-PG, DRAS-DQL, Decima-PG) from
an empty machine, on `envs.dras.DrasEnv`. The same loop serves training (`learn`), validation and
test (with `learn=True` at test: the paper's online updates). `DrasAgent`: the verbs every agent
of the family has around it."""

from __future__ import annotations

from typing import Any, Callable, Iterable

import numpy as np

from hpcsched.agents import dras_policy
from hpcsched.agents.greedy import Float64Copy, greedy
from hpcsched.workload.jobs import JobTable


class DrasAgent:
    """SB3's verbs of a DRAS agent (`agents.dras_pg.DrasPG`, `agents.dql.DrasDQL`): `predict(obs,
    mask)`, `learn(env, jobsets)`, `save(path)`, `load(path)`, `policy(...)`. An agent builds its
    `net` after this seeds torch, and has `algo`, `explore`, `state()`, `from_state(state)`."""

    def __init__(self, config, rows: int, seed: int) -> None:
        import torch

        self.config, self.rows = config, rows
        torch.manual_seed(seed)
        self.rng = np.random.default_rng(seed)
        self._net64 = Float64Copy()  # the greedy picks' float64 copy of `net`

    def predict(self, obs: np.ndarray, mask: np.ndarray, deterministic: bool = True) -> int:
        """The most valued valid slot by the greedy rule of `hpcsched.agents.greedy` (float64
        scores rounded to float32; the first slot, the oldest job, on a tie), or with
        `deterministic=False` the agent's exploring pick (`explore`)."""
        if deterministic:
            return greedy(self.greedy_scores(obs, mask), mask)
        return self.explore(obs, mask)

    def scores(self, obs: np.ndarray, mask: np.ndarray, net=None, dtype=np.float32) -> np.ndarray:
        """The masked scores (logits, Q-values) of one observation by `net` (default: the agent's
        own, float32), in `dtype`."""
        import torch

        with torch.no_grad():
            obs = torch.from_numpy(np.asarray(obs, dtype=dtype))[None]
            return (self.net if net is None else net)(obs, torch.from_numpy(mask)[None])[0].numpy()

    def greedy_scores(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """The float64 scores a greedy pick compares."""
        return self.scores(obs, mask, self._net64(self.net), np.float64)

    def learn(self, env, jobsets, callback=None):
        """Play each jobset as a training episode (`learn` below)."""
        return learn(self, env, jobsets, callback)

    def training_state(self) -> dict:
        """What continuing the training needs besides `state`: the random generator's state."""
        return {"rng": self.rng.bit_generator.state}

    def restore_training_state(self, state: dict) -> None:
        self.rng.bit_generator.state = state["rng"]

    def save(self, path, *, config: dict | None = None, episode: int = 0,
             history: list | None = None, norm: dict | None = None,
             training: dict | None = None) -> None:
        """Write this agent's model file (`agents.dras_policy`) with the run's entries: its
        `config`, the episodes done, the history, the normalisation and `training` (what only
        resuming needs: `training_state()`, in model.pt)."""
        from hpcsched.modelfile import rng_states, write_model

        contents = self.state()
        contents.update(recipe="dras", config=dict(config or {}), epoch=int(episode),
                        history=list(history or []), norm=dict(norm or {}))
        contents["training"] = dict(contents["training"], rng=rng_states())
        if training:
            contents["training"]["learner"] = training
        write_model(path, contents)

    @classmethod
    def load(cls, path):
        """The agent of the model file at `path`, which must be a `cls`."""
        from hpcsched.modelfile import ModelFileError

        agent = dras_policy.checked_agent(path, dras_policy.read(path))
        if not isinstance(agent, cls):
            raise ModelFileError(f"{path} holds a DRAS-{agent.algo.upper()} agent, not a "
                                 f"{cls.__name__}")
        return agent

    def policy(self, config, prepared, name: str = "dras"):
        """The agent, greedy and frozen, as an engine policy (`agents.dras_policy.DrasPolicy`)."""
        return dras_policy.DrasPolicy(self, config, prepared, name)


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


__all__ = ["DrasAgent", "learn", "run_episode"]
