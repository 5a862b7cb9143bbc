"""Many DBF episodes stepped together, for batched rollouts (`hpcsched.envs.dbf`).

    vec = VecDBF(64, "lublin-1", window=32, tail=4)
    obs, mask = vec.reset(seed=0)                 # (64, 256 + 3 * 32) float32, (64, 33) bool
    while training:
        actions = agent(obs)                      # (64,) actions: a slot, or 32 = Fwd
        obs, mask, reward, done, infos = vec.step(actions)

Each of the N episodes behaves exactly as a `DBFEnv` with the same arguments (same starts, same
observation, same rewards; tested step for step). A finished episode is replaced at once by a new
one: the returned observation is the new episode's first, `reward[i]` and `done[i]` belong to the
finished one and `infos[i]` holds its `metrics`, `window`, `placed` and `trace_end`.

Speed: the engines are stepped one by one (a valid pick is one `Start`, a Fwd one `Wait`), and
everything else is done for all N at once, with numpy, into preallocated arrays: the per-core
block (every running job of every episode in one sort), the split windows (index arithmetic over
the N queues laid end to end), the slot features, the validity of every pick and the sums and
maxima R(t) needs.

`DBFVectorEnv` is the same as a Gymnasium `VectorEnv` (``gym.make_vec("hpcsched/DBF-v0", N)``).
"""

from __future__ import annotations

import os
from typing import Any, Mapping, Sequence

import numpy as np
from gymnasium import spaces

from hpcsched.envs.dbf import (
    ALPHAS,
    EPISODE_JOBS,
    PLACED_ALL,
    TRACE_END,
    WINDOW,
    DbfEpisode,
    DbfScale,
    act,
    as_dbf_trace,
    check_start_range,
    check_window,
)
from hpcsched.envs.vector import MaskedVectorEnv
from hpcsched.sim.run import Prepared
from hpcsched.workload.jobs import JobTable


def generators(seed, n: int, kept: Sequence[np.random.Generator] = ()) -> list:
    """One generator per env: spawned from an int (or None) seed; or, with one seed per env,
    ``default_rng(seed[i])``, the generator of a single env reset with seed[i] (None there keeps
    env i's generator, as a reset without a seed does)."""
    if seed is None or isinstance(seed, (int, np.integer)):
        return [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(n)]
    seeds = list(seed)
    if len(seeds) != n:
        raise ValueError(f"reset needs one seed per env ({n}), got {len(seeds)}")
    kept = list(kept) if len(kept) == n else [None] * n
    return [np.random.default_rng(s) if s is not None
            else kept[i] if kept[i] is not None else np.random.default_rng()
            for i, s in enumerate(seeds)]


class VecDBF:
    """N DBF episodes stepped together; the arguments after `num_envs` are `DBFEnv`'s.

    start_range: (lo, hi), the starts random episodes draw from, both included (default: every
    start; DBF's training block: `workload.windows.dbf_starts(trace, "train")`).

    copy: return fresh arrays from `reset` and `step` (default); with False the same buffers are
    returned every time and overwritten by the next call.
    """

    def __init__(
        self,
        num_envs: int,
        trace: str | os.PathLike | JobTable | Prepared = "lublin-1",
        window: int = WINDOW,
        tail: int = 0,
        episode_jobs: int = EPISODE_JOBS,
        lookahead: int | None = None,
        mask: bool = False,
        alphas: Sequence[float] = ALPHAS,
        profile: str | None = None,
        copy: bool = True,
        start_range: tuple[int, int] | None = None,
    ) -> None:
        if num_envs <= 0:
            raise ValueError(f"num_envs must be positive, got {num_envs}")
        self.num_envs = int(num_envs)
        self.prepared = as_dbf_trace(trace, profile)
        self.window, self.tail = check_window(window, tail)
        n_jobs = len(self.prepared.jobs)
        self.episode_jobs = int(episode_jobs)
        if not 0 < self.episode_jobs <= n_jobs:
            raise ValueError(f"episode_jobs must be in [1, {n_jobs}] (the trace's jobs), got "
                             f"{episode_jobs}")
        self.lookahead = self.episode_jobs if lookahead is None else int(lookahead)
        if self.lookahead < 0:
            raise ValueError(f"lookahead must be >= 0, got {lookahead}")
        self.mask = bool(mask)
        self.alphas = tuple(float(a) for a in alphas)
        if len(self.alphas) != 3:
            raise ValueError(f"alphas are three weights (a1, a2, a3), got {alphas!r}")
        self.copy = copy
        self.start_range = check_start_range(start_range, n_jobs - self.episode_jobs)
        scale = self.scale = DbfScale.of(self.prepared)
        jobs = self.prepared.jobs
        # trace-level columns, indexed by global rows (an episode's row + its start)
        self._need = self.prepared.cluster.nodes_needed(jobs.procs).astype(np.int64)
        self._cores = self._need * scale.procs_per_node
        self._submit = jobs.submit.astype(np.float64)
        self._procs_n = jobs.procs / scale.cores
        self._req_n = jobs.req_time / scale.e_max
        self.n_obs = scale.cores + 3 * self.window
        self.single_observation_space = spaces.Box(0.0, 1.0, (self.n_obs,), np.float32)
        self.single_action_space = spaces.Discrete(self.window + 1)
        n, m = self.num_envs, self.window
        self._obs = np.zeros((n, self.n_obs), dtype=np.float32)
        self._cores_view = self._obs[:, :scale.cores]
        self._slots_view = self._obs[:, scale.cores:].reshape(n, m, 3)
        self._mask = np.ones((n, m + 1), dtype=bool)
        self._rows = np.full((n, m), -1, dtype=np.int64)
        self._valid = np.zeros((n, m), dtype=bool)
        self._base = np.zeros(n, dtype=np.int64)
        self._now = np.zeros(n)
        self._free = np.zeros(n, dtype=np.int64)
        self._l_max = np.zeros(n)
        self._w_max = np.zeros(n)
        self._wait_max = np.zeros(n)
        self._util = np.zeros(n)
        self._length = np.zeros(n)
        self._total_wait = np.zeros(n)
        self._arange = np.arange(n)
        self._slot = np.arange(m)[None, :]
        self._core = np.arange(scale.cores)[None, :]
        self._episodes: list[DbfEpisode] = []
        self._rngs: list[np.random.Generator] = []

    # -- API ------------------------------------------------------------------------------------
    def reset(self, seed: int | Sequence[int | None] | None = None,
              options: Mapping[str, Any] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Start N new episodes, each env drawing its starts from its own generator (`generators`).
        options={"starts": [s0, s1, ...]} fixes the first episode of each env."""
        options = dict(options or {})
        unknown = set(options) - {"starts"}
        if unknown:
            raise ValueError(f"unknown reset options {sorted(unknown)}; known: 'starts'")
        self._rngs = generators(seed, self.num_envs, self._rngs)
        starts = options.get("starts")
        if starts is not None and len(starts) != self.num_envs:
            raise ValueError(f"reset option 'starts' needs {self.num_envs} starts, "
                             f"got {len(starts)}")
        last = len(self.prepared.jobs) - self.episode_jobs
        self._episodes = []
        for i in range(self.num_envs):
            if starts is None:
                start = int(self._rngs[i].integers(self.start_range[0], self.start_range[1] + 1))
            else:
                start = int(starts[i])
                if not 0 <= start <= last:
                    raise ValueError(f"an episode of {self.episode_jobs} jobs starts in "
                                     f"[0, {last}], not at {start}")
            self._episodes.append(None)
            self._begin(i, start)
        self._observe_all()
        return self._out(self._obs), self._out(self._mask)

    def step(self, actions) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[dict]]:
        """One action per env (a slot, or `window` = Fwd); returns (obs, mask, reward, done,
        infos)."""
        if not self._episodes:
            raise RuntimeError("call reset() first")
        a = np.asarray(actions)
        m = self.window
        if a.shape != (self.num_envs,) or not np.issubdtype(a.dtype, np.integer):
            raise ValueError(f"actions must be {self.num_envs} integer actions, got shape "
                             f"{a.shape} dtype {a.dtype}")
        if ((a < 0) | (a > m)).any():
            i = int(np.flatnonzero((a < 0) | (a > m))[0])
            raise ValueError(f"env {i}: action {int(a[i])} is outside 0..{m} (slots, then Fwd)")
        slot = np.minimum(a, m - 1)
        pick = (a < m) & self._valid[self._arange, slot]
        rows = self._rows[self._arange, slot].tolist()
        pick = pick.tolist()
        reward = np.zeros(self.num_envs)
        done = np.zeros(self.num_envs, dtype=bool)
        infos: list[dict] = [{} for _ in range(self.num_envs)]
        alphas = self.alphas
        util, length, total_wait = self._util, self._length, self._total_wait
        l_max, w_max = self._l_max, self._w_max
        episodes = self._episodes
        for i in range(self.num_envs):
            ep = episodes[i]
            reward[i], outcome = act(ep, rows[i] if pick[i] else -1, length[i], util[i],
                                     total_wait[i], l_max[i], w_max[i], self._need,
                                     self.scale.nodes, alphas)
            if outcome == PLACED_ALL or outcome == TRACE_END:
                done[i] = True
                infos[i] = {"window": (ep.start, ep.jobs), "placed": ep.placed,
                            "metrics": ep.metrics(), "trace_end": ep.placed < ep.target}
                self._begin(i, int(self._rngs[i].integers(self.start_range[0],
                                                          self.start_range[1] + 1)))
        self._observe_all()
        return self._out(self._obs), self._out(self._mask), reward, done, infos

    def action_masks(self) -> np.ndarray:
        """(N, window + 1): the valid actions (all True unless `mask`)."""
        return self._mask.copy()

    @property
    def rows(self) -> np.ndarray:
        """(N, window): the row of each env's episode table in each slot (-1: empty)."""
        return self._rows.copy()

    @property
    def valid(self) -> np.ndarray:
        """(N, window): which slots hold a job that fits now."""
        return self._valid.copy()

    @property
    def windows(self) -> list[tuple[int, int]]:
        """(start, jobs) of each env's current episode."""
        return [(ep.start, ep.jobs) for ep in self._episodes]

    @property
    def placed(self) -> list[int]:
        return [ep.placed for ep in self._episodes]

    @property
    def times(self) -> np.ndarray:
        """The clock of each env's current decision."""
        return self._now.copy()

    @property
    def engines(self):
        return [ep.engine for ep in self._episodes]

    def close(self) -> None:
        self._episodes = []

    # -- internals ------------------------------------------------------------------------------
    def _out(self, a: np.ndarray) -> np.ndarray:
        return a.copy() if self.copy else a

    def _begin(self, i: int, start: int) -> None:
        self._episodes[i] = DbfEpisode(self.prepared, start, self.episode_jobs, self.lookahead)
        self._base[i] = start
        self._l_max[i] = self._w_max[i] = self._wait_max[i] = 0.0

    def _observe_all(self) -> None:
        """Every env's observation, validity, mask and R(t) terms, for all N at once."""
        n, m, tail = self.num_envs, self.window, self.tail
        scale = self.scale
        now, free, base = self._now, self._free, self._base
        queues, runs, ests = [], [], []
        for i, ep in enumerate(self._episodes):
            v = ep.view
            now[i] = v.now
            free[i] = v.free_nodes
            queues.append(v.queue)
            r = v.running
            runs.append(r)
            ests.append(v.estimated_end[r])
        # the queues, end to end (global rows): R(t)'s sums and the wait normalisation
        lens = np.fromiter(map(len, queues), np.int64, n)  # >= 1: a decision has a waiting job
        offsets = np.zeros(n, dtype=np.int64)
        np.cumsum(lens[:-1], out=offsets[1:])
        env_q = np.repeat(self._arange, lens)
        queue = np.concatenate(queues) + base[env_q]
        waits = now[env_q] - self._submit[queue]
        self._length[:] = lens
        self._total_wait[:] = np.bincount(env_q, waits, minlength=n)
        np.maximum(self._l_max, self._length, out=self._l_max)
        np.maximum(self._w_max, self._total_wait, out=self._w_max)
        np.maximum(self._wait_max, np.maximum.reduceat(waits, offsets), out=self._wait_max)
        np.subtract(1.0, free / scale.nodes, out=self._util)

        # cores: free ones first, then the busy ones by remaining requested time
        run_lens = np.fromiter(map(len, runs), np.int64, n)
        env_r = np.repeat(self._arange, run_lens)
        running = np.concatenate(runs) + base[env_r]
        remaining = np.maximum(np.concatenate(ests) - now[env_r], 0.0) / scale.e_max
        order = np.lexsort((remaining, env_r))
        block = self._cores_view
        block.fill(0.0)
        block[self._core >= (free * scale.procs_per_node)[:, None]] = np.repeat(
            remaining[order], self._cores[running[order]])

        # split windows: slot k shows queue position k, or, past the head of a long queue,
        # position L - 1 - (k - head): the newest first
        k, length = self._slot, lens[:, None]
        head = m - tail
        position = np.where((length > m) & (k >= head), length - 1 - (k - head), k)
        present = k < length
        rows = queue[offsets[:, None] + np.minimum(position, length - 1)]
        g = np.where(present, rows, 0)
        slots = self._slots_view
        slots[..., 0] = np.where(present, self._procs_n[g], 0.0)
        slots[..., 1] = np.where(present, self._req_n[g], 0.0)
        wait_max = self._wait_max[:, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            slots[..., 2] = np.where(present & (wait_max > 0),
                                     (now[:, None] - self._submit[g]) / wait_max, 0.0)
        np.subtract(rows, base[:, None], out=self._rows)
        self._rows[~present] = -1
        np.logical_and(present, self._need[g] <= free[:, None], out=self._valid)
        if self.mask:
            self._mask[:, :m] = self._valid
            can_wait = np.fromiter((ep.view.can_wait for ep in self._episodes), bool, n)
            self._mask[:, m] = can_wait | ~self._valid.any(axis=1)


class DBFVectorEnv(MaskedVectorEnv):
    """`hpcsched/DBF-v0` x `num_envs` on `VecDBF`; the other arguments are `DBFEnv`'s
    (``gym.make_vec("hpcsched/DBF-v0", num_envs=N, **kwargs)`` builds it). It behaves step for
    step as gymnasium's `SyncVectorEnv` over ``gym.make("hpcsched/DBF-v0")`` with the same
    arguments and seeds (``reset(seed=s)`` seeds env i with s + i), auto-resetting in the same
    step. Reset options: {"start": s} for every env, or {"starts": [s0, s1, ...]}."""

    def __init__(self, num_envs: int = 1, copy: bool = True, **kwargs: Any) -> None:
        batch = VecDBF(num_envs, copy=copy, **kwargs)
        super().__init__(batch, batch.num_envs, batch.single_observation_space,
                         batch.single_action_space)
        self._zeros = np.zeros(batch.n_obs, np.float32)
        end_mask = np.ones(batch.window + 1, dtype=bool)
        if batch.mask:
            end_mask[:batch.window] = False
        self._end_mask = end_mask

    def _final_obs(self) -> np.ndarray:
        return self._zeros.copy()  # an ended DBFEnv shows zeros

    def _final_info(self, info: dict[str, Any]) -> dict[str, Any]:
        return {"action_mask": self._end_mask.copy(), **info}

    def _infos(self, mask: np.ndarray) -> dict[str, Any]:
        infos = super()._infos(mask)
        batch = self.batch
        windows = np.empty(self.num_envs, dtype=object)
        for i, window in enumerate(batch.windows):
            windows[i] = window
        infos["window"], infos["_window"] = windows, self._all.copy()
        infos["time"], infos["_time"] = batch.times, self._all.copy()
        infos["placed"] = np.array(batch.placed, dtype=np.int64)
        infos["_placed"] = self._all.copy()
        return infos

    def _options(self, options: dict[str, Any] | None) -> dict[str, Any] | None:
        if not options:
            return options
        options = dict(options)
        unknown = set(options) - {"start", "starts"}
        if unknown:
            raise ValueError(f"unknown reset options {sorted(unknown)}; known: 'start', "
                             f"'starts'")
        if "start" in options:
            if "starts" in options:
                raise ValueError("reset options 'start' and 'starts' exclude each other")
            options["starts"] = [int(options.pop("start"))] * self.num_envs
        return options


__all__ = ["DBFVectorEnv", "VecDBF", "generators"]
