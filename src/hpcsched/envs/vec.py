"""The environments stepped many together, for batched rollouts (the contract
`agents.rollout.collect` reads: ``reset(seed) -> (obs, mask)``, ``step(actions) -> (obs, mask,
reward, done, infos)``): `VecPickJob` and `VecInspect`.

    vec = VecPickJob(64, "lublin-1", metric="bsld")
    obs, mask = vec.reset(seed=0)                 # (64, 128, 8) float32, (64, 128) bool
    while training:
        actions = agent(obs, mask)                # (64,) slot indices, each unmasked
        obs, mask, reward, done, infos = vec.step(actions)

Each of the N episodes behaves exactly as its single environment with the same arguments (same
windows, same observation, same reward). A finished episode is replaced at once by a new window:
the returned observation is the new episode's first, `reward[i]` and `done[i]` belong to the
finished one and `infos[i]` is what the single environment's last step gives (`metrics`,
`window`, no valid action).

Speed: all N PickJob engines share one prepared trace and one table of static features; their
observations are built together (`observation.fill_observations`, the one implementation of the
observation), with a handful of numpy calls per step, into preallocated arrays.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
from gymnasium import spaces

from hpcsched.envs.inspector import InspectEnv
from hpcsched.envs.pick_job import Episodes, episode_reward


class VecPickJob(Episodes):
    """N PickJob episodes stepped together; the arguments after `num_envs` are `PickJobEnv`'s
    (`pick_job.Episodes`').

    copy: return fresh arrays from `reset` and `step` (default); with False the same buffers are
    returned every time and overwritten by the next call (faster, for a caller that copies what it
    keeps).
    """

    def __init__(self, num_envs: int, *args: Any, copy: bool = True, **kwargs: Any) -> None:
        super().__init__(num_envs, *args, **kwargs)
        self.copy = copy
        self.single_action_space = spaces.Discrete(self.slots)
        self.final_obs = np.broadcast_to(self.features.pad, self.single_observation_space.shape)
        self._arange = np.arange(self.num_envs)

    # -- API ------------------------------------------------------------------------------------
    def reset(self, seed: int | Sequence[int | None] | None = None,
              options: Mapping[str, Any] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Start N new episodes. Env i draws its windows from its own generator: spawned from
        `seed` (an int or None), or, with one seed per env, ``np.random.default_rng(seed[i])``,
        the generator of a `PickJobEnv` reset with seed[i] (None there keeps env i's generator,
        as a PickJobEnv reset without a seed does). `options`: see `Episodes._begin` (fixed
        first windows; a window filter until the next reset)."""
        self._begin(self._generators(seed), options)
        return self._out_copy(self._obs), self._out_copy(self._mask)

    def step(self, actions) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[dict]]:
        """Apply one slot per env; returns (obs, mask, reward, done, infos)."""
        if not self._episodes:
            raise RuntimeError("call reset() first")
        a = np.asarray(actions)
        if a.shape != (self.num_envs,) or not np.issubdtype(a.dtype, np.integer):
            raise ValueError(f"actions must be {self.num_envs} integer slot indices, got "
                             f"shape {a.shape} dtype {a.dtype}")
        bad = (a < 0) | (a >= self.slots)
        if not bad.any():
            rows = self._rows[self._arange, a]
            bad = rows < 0
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise self._invalid(i, int(a[i]))
        reward = np.zeros(self.num_envs)
        done = np.zeros(self.num_envs, dtype=bool)
        infos: list[dict] = [{} for _ in range(self.num_envs)]
        episodes = self._episodes
        for i, row in enumerate(rows.tolist()):
            ep = episodes[i]
            if not ep.apply(row):
                metrics = ep.engine.result().metrics
                reward[i] = episode_reward(metrics, self.metric)
                done[i] = True
                infos[i] = {"action_mask": np.zeros(self.slots, dtype=bool), "metrics": metrics,
                            "window": (ep.start, ep.jobs)}
                episodes[i] = self._new_episode(i)
        self._observe()
        return self._out_copy(self._obs), self._out_copy(self._mask), reward, done, infos

    def action_masks(self) -> np.ndarray:
        return self._mask.copy()

    def rollout_info(self) -> dict[str, Any]:
        """What a learner logs of these environments with each rollout: whether the windows since
        the last reset are drawn through a window filter (trajectory filtering's first stage)."""
        return {"filtered": self.sampler.filtered}

    @property
    def rows(self) -> np.ndarray:
        """(N, slots): the row of each env's window in each slot (-1: empty slot)."""
        return self._rows.copy()

    def close(self) -> None:
        self._episodes = []

    # -- internals ------------------------------------------------------------------------------
    def _generators(self, seed) -> list[np.random.Generator]:
        n = self.num_envs
        if seed is None or isinstance(seed, (int, np.integer)):
            return [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(n)]
        seeds = list(seed)
        if len(seeds) != n:
            raise ValueError(f"reset needs one seed per env ({n}), got {len(seeds)}")
        kept = self._rngs if len(self._rngs) == n else [None] * n
        return [np.random.default_rng(s) if s is not None
                else kept[i] if kept[i] is not None else np.random.default_rng()
                for i, s in enumerate(seeds)]

    def _out_copy(self, a: np.ndarray) -> np.ndarray:
        return a.copy() if self.copy else a


class VecInspect:
    """`num_envs` InspectEnvs stepped together (see the module docstring); the arguments after
    `num_envs` are `InspectEnv`'s. All share the base heuristic's runs."""

    def __init__(self, num_envs: int, **env_kwargs):
        first = InspectEnv(**env_kwargs)
        env_kwargs = dict(env_kwargs, trace=first.prepared)
        self.envs = [first] + [InspectEnv(**env_kwargs) for _ in range(num_envs - 1)]
        for env in self.envs[1:]:
            env._base_scores = first._base_scores  # one cache of base runs for all
        self.num_envs = num_envs
        self.norm = first.norm
        self.single_observation_space = first.observation_space
        self.single_action_space = first.action_space
        self.final_obs = np.zeros(first.observation_space.shape, np.float32)  # InspectEnv's last

    @property
    def windows(self) -> list[tuple[int, int]]:
        return [env.window for env in self.envs]

    def reset(self, seed: int | Sequence[int | None] | None = None,
              options: dict | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Reset every env: with seeds drawn from `seed` (an int), with `seed[i]` for env i (one
        per env), or without seeds (None: each env keeps its generator). `options` go to every
        env's reset."""
        n = self.num_envs
        seeds = ([None] * n if seed is None else
                 np.random.SeedSequence(seed).generate_state(n).tolist()
                 if isinstance(seed, (int, np.integer)) else list(seed))
        if len(seeds) != n:
            raise ValueError(f"reset needs one seed per env ({n}), got {len(seeds)}")
        out = [env.reset(seed=s, options=options) for env, s in zip(self.envs, seeds)]
        return np.stack([o for o, _ in out]), np.stack([i["action_mask"] for _, i in out])

    def step(self, actions: np.ndarray):
        steps = [env.step(a) for env, a in zip(self.envs, np.asarray(actions).tolist())]
        after = [env.reset() if done else (obs, info)  # a finished env starts its next episode
                 for env, (obs, _, done, _, info) in zip(self.envs, steps)]
        return (np.stack([obs for obs, _ in after]),
                np.stack([info["action_mask"] for _, info in after]),
                np.array([s[1] for s in steps], np.float64), np.array([s[2] for s in steps], bool),
                [s[4] for s in steps])


__all__ = ["VecInspect", "VecPickJob"]
