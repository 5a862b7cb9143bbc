"""The batched environments as Gymnasium `VectorEnv`s, for any learner that takes one::

    import gymnasium as gym
    import hpcsched.envs  # noqa: F401  (registers the ids and their vector entry points)

    envs = gym.make_vec("hpcsched/PickJob-v0", num_envs=64, trace="lublin-1")
    obs, infos = envs.reset(seed=0)                 # obs (64, 128, 8); infos["action_mask"] (64, 128)
    actions = agent(obs, envs.action_masks())       # one unmasked slot per env
    obs, rewards, terminations, truncations, infos = envs.step(actions)

`PickJobVectorEnv` runs on `VecPickJob` (all N observations built together) and
`InspectVectorEnv` on `VecInspect`; both behave step for step as gymnasium's `SyncVectorEnv` over
``gym.make(id)`` with the same arguments and seeds: ``reset(seed=s)`` seeds env i with s + i, and a
finished episode is reset in the same step (``AutoresetMode.SAME_STEP``): its observation is the
new episode's first, its reward and termination the finished one's, and ``infos["final_obs"]`` /
``infos["final_info"]`` hold what the finished episode ended on. Every step's ``infos`` carries
the action masks (``"action_mask"``, (N, n_actions) bool), also given by `action_masks()`.

The learners in `hpcsched.agents` use `VecPickJob` and `VecInspect` directly (their own, leaner
contract, with seeds spawned per env); these classes add Gymnasium's API on top, nothing else.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from hpcsched.envs.pick_job import MaskedSampling
from hpcsched.envs.vec import VecInspect, VecPickJob


class SlotsSpace(MaskedSampling, spaces.MultiDiscrete):
    """One action per env, each sampled among its env's valid actions (`pick_job.SlotSpace`'s
    vector form)."""

    def __init__(self, n_actions: int, num_envs: int, masks: Callable[[], np.ndarray]) -> None:
        super().__init__(np.full(num_envs, n_actions, dtype=np.int64))
        self._masks = masks


class MaskedVectorEnv(VectorEnv):
    """A `VectorEnv` over a batched env with `VecPickJob`'s contract (``reset(seeds, options) ->
    (obs, mask)``, ``step(actions) -> (obs, mask, reward, done, infos)`` with auto-reset, a
    finished env's ``infos[i]`` being its single env's last info), whose episodes end only by
    termination. What a finished episode ends on, the infos of every step and the reset options
    are the batch's (its `final_obs` and `windows`) unless a subclass says otherwise."""

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}

    def __init__(self, batch, num_envs: int, single_observation_space: spaces.Space,
                 single_action_space: spaces.Discrete) -> None:
        self.batch = batch
        self.num_envs = n = int(num_envs)
        self.single_observation_space = single_observation_space
        self.single_action_space = single_action_space
        self.observation_space = batch_space(single_observation_space, n)
        self.action_space = SlotsSpace(int(single_action_space.n), n, self.action_masks)
        self._mask: np.ndarray | None = None
        self._all = np.ones(n, dtype=bool)

    # -- Gymnasium API ---------------------------------------------------------------------------
    def reset(self, *, seed: int | Sequence[int | None] | None = None,
              options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        """Seeds and options as `SyncVectorEnv` takes them (PickJob's "starts" also give one
        window start per env)."""
        obs, mask = self.batch.reset(seed=self._seeds(seed), options=self._options(options))
        self._mask = mask.copy()
        return obs, self._infos(mask)

    def step(self, actions) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                     dict[str, Any]]:
        if self._mask is None:
            raise RuntimeError("call reset() first")
        obs, mask, reward, done, env_infos = self.batch.step(np.asarray(actions))
        self._mask = mask.copy()
        infos = self._infos(mask)
        for i in np.flatnonzero(done).tolist():
            infos = self._add_info(infos, {"final_obs": self._final_obs(),
                                           "final_info": self._final_info(env_infos[i])}, i)
        return obs, reward, done, np.zeros(self.num_envs, dtype=bool), infos

    def action_masks(self) -> np.ndarray:
        """(N, n_actions) bool: the valid actions of each env now (sb3-contrib's name)."""
        if self._mask is None:
            raise RuntimeError("call reset() first")
        return self._mask.copy()

    def close_extras(self, **kwargs: Any) -> None:
        getattr(self.batch, "close", lambda: None)()

    # -- what a subclass may say otherwise -------------------------------------------------------
    def _final_obs(self) -> np.ndarray:
        """The observation a finished episode ends on (its single env's last one)."""
        return np.array(self.batch.final_obs)

    def _final_info(self, info: dict[str, Any]) -> dict[str, Any]:
        """The single env's info at the end of an episode, from the batch's."""
        return info

    def _infos(self, mask: np.ndarray) -> dict[str, Any]:
        """Every env's info of this step (of its new episode's start where one ended)."""
        windows = np.empty(self.num_envs, dtype=object)
        for i, window in enumerate(self.batch.windows):
            windows[i] = window
        return {"action_mask": mask, "_action_mask": self._all.copy(), "window": windows,
                "_window": self._all.copy()}

    def _options(self, options: dict[str, Any] | None) -> dict[str, Any] | None:
        if options and "window_filter" in options:  # a single env's filter ends with its episode
            raise ValueError("unknown reset options ['window_filter'] for a vector env")
        return options

    # -- internals -------------------------------------------------------------------------------
    def _seeds(self, seed) -> list[int | None]:
        n = self.num_envs
        if seed is None:
            return [None] * n
        if isinstance(seed, (int, np.integer)):
            return [int(seed) + i for i in range(n)]
        seeds = list(seed)
        if len(seeds) != n:
            raise ValueError(f"reset needs one seed per env ({n}), got {len(seeds)}")
        return seeds


class PickJobVectorEnv(MaskedVectorEnv):
    """`hpcsched/PickJob-v0` x `num_envs` on `VecPickJob`; the other arguments are `PickJobEnv`'s
    (``gym.make_vec("hpcsched/PickJob-v0", num_envs=N, **kwargs)`` builds it)."""

    def __init__(self, num_envs: int = 1, copy: bool = True, **kwargs: Any) -> None:
        batch = VecPickJob(num_envs, copy=copy, **kwargs)
        super().__init__(batch, batch.num_envs, batch.single_observation_space,
                         batch.single_action_space)


class InspectVectorEnv(MaskedVectorEnv):
    """`hpcsched/Inspect-v0` x `num_envs` on `VecInspect`; the other arguments are `InspectEnv`'s
    (``gym.make_vec("hpcsched/Inspect-v0", num_envs=N, **kwargs)`` builds it)."""

    def __init__(self, num_envs: int = 1, **kwargs: Any) -> None:
        batch = VecInspect(num_envs, **kwargs)
        super().__init__(batch, num_envs, batch.single_observation_space,
                         batch.single_action_space)


__all__ = ["InspectVectorEnv", "MaskedVectorEnv", "PickJobVectorEnv", "SlotsSpace"]
