"""RLScheduler's observation of a decision (spec rlscheduler.md sections 3, 4 and 6).

Per visible job, in this order, each capped at 1 - 1e-5:

    0 waiting time / 43200 s             4 user id / max user id          (unknown, -1: 1)
    1 requested time / max run time      5 group id / max group id        (unknown, -1: 1)
    2 processors / MaxProcs              6 executable / max executable    (unknown, -1: 1)
    3 req. memory / max req. memory      7 fits the free nodes now: 1 - 1e-5, else 1e-5
      (unknown, -1: 1)

The maxima are the trace's `CleaningReport.norm` (a maximum of 0 is read as 1). Empty slots hold
[0, 1, 1, 1, 1, 1, 1, 0] and are masked. The fairness variant inserts the authors' per-user feature
(`UserScores`) before the fit flag, as their HPCEnvFair does: 9 features, the flag still last.

Visible jobs: with at most `slots` waiting jobs, all of them in FCFS order (submit time, then row).
With more, cut-off "fcfs" keeps the first `slots` in that order (the paper); "interleave" alternates
the SJF order (requested time, then submit) and the smallest-first order (processors, then submit),
skipping jobs already taken, until `slots` are taken, in that interleaved order (the authors' code;
their third, "random" list re-used the SJF list, so it adds nothing).

Everything is vectorised over the visible rows: a table of the features that never change during a
run (`TraceFeatures`) is built once per trace, and a decision only gathers its rows and fills in the
waiting time and the fit flag. `fill_observations` does that for N decisions at once (N envs of a
batch); it is the one implementation, which `PickJobEnv` (N = 1), `VecPickJob` and `observe` call.
"""

from __future__ import annotations

import weakref
from typing import Mapping, Sequence

import numpy as np

from hpcsched.sim.engine import DecisionView
from hpcsched.workload.jobs import JobTable

#: waiting time that maps to 1 (12 h), as in the authors' code
MAX_WAIT = 43200.0
HIGH = 1.0 - 1e-5
LOW = 1e-5
FEATURES = ("wait", "req_time", "procs", "req_mem", "user", "group", "executable", "can_start")
FAIR_FEATURES = FEATURES[:7] + ("user_fairness", "can_start")
CUTOFFS = ("fcfs", "interleave")


def padding_row(n_features: int = 8) -> np.ndarray:
    """What an empty slot holds: [0, 1, ..., 1, 0]."""
    row = np.ones(n_features, dtype=np.float32)
    row[0] = row[-1] = 0.0
    return row


def check_choice(name: str, value: str, choices) -> str:
    """`value` if it is one of `choices` (an env's setting), else a ValueError naming them."""
    if value not in choices:
        raise ValueError(f"unknown {name} {value!r}; choose one of: {', '.join(choices)}")
    return value


def _scaled(values: np.ndarray, maximum: float) -> np.ndarray:
    """values / maximum capped at HIGH; unknown values (negative, SWF's -1) become 1."""
    top = float(maximum) if maximum and maximum > 0 else 1.0
    return np.where(values < 0, 1.0, np.minimum(values / top, HIGH))


class TraceFeatures:
    """The parts of the observation that never change during a run, for every row of a table:
    columns 1-6 normalised (the fairness column, if any, set to 1), and the columns the cut-off
    sorts by. Built once per trace; an episode reads its window through an offset."""

    def __init__(self, jobs: JobTable, norm: Mapping[str, float], n_features: int = 8) -> None:
        if n_features not in (8, 9):
            raise ValueError(f"n_features must be 8 or 9 (fairness), got {n_features}")
        n = len(jobs)
        static = np.zeros((n, n_features), dtype=np.float32)
        static[:, 1] = _scaled(jobs.req_time, norm.get("max_run_time", 0.0))
        static[:, 2] = _scaled(jobs.procs, norm.get("max_procs", 0.0))
        static[:, 3] = _scaled(jobs.req_mem, norm.get("max_req_mem", 0.0))
        static[:, 4] = _scaled(jobs.user, norm.get("max_user", 0.0))
        static[:, 5] = _scaled(jobs.group, norm.get("max_group", 0.0))
        static[:, 6] = _scaled(jobs.executable, norm.get("max_executable", 0.0))
        if n_features == 9:
            static[:, 7] = 1.0
        self.static = static
        self.n_features = n_features
        self.submit = np.ascontiguousarray(jobs.submit)
        self.req_time = np.ascontiguousarray(jobs.req_time)
        self.procs = np.ascontiguousarray(jobs.procs)
        #: submit times never decrease along the rows: FCFS order is then row order
        self.monotone = bool(n < 2 or np.all(self.submit[1:] >= self.submit[:-1]))
        self.pad = padding_row(n_features)


class UserScores:
    """Each user's mean bounded slowdown over the jobs of the episode started so far: the state
    behind the fairness variant's extra feature (spec section 6; the authors' HPCEnvFair).

    The feature of a job is 1 - (its user's mean / the largest user mean); it is 1 when its user has
    no started job yet or the largest mean is 0. Backfilled jobs count, as in the authors' code.
    `executed` is the time each job runs (the engine's `executed`; the run time by default).
    """

    def __init__(self, jobs: JobTable, executed: np.ndarray | None = None) -> None:
        users, index = np.unique(jobs.user, return_inverse=True)
        self.user_index = index.astype(np.int64)
        self.n_users = len(users)
        self.submit = jobs.submit
        run = jobs.run_time if executed is None else executed
        self.executed = np.asarray(run, dtype=np.float64)
        self.sums = np.zeros(self.n_users)
        self.counts = np.zeros(self.n_users)
        self.seen = np.zeros(len(jobs), dtype=bool)

    def sync(self, start) -> None:
        """Count the jobs started since the last call (`start`: start time per row, NaN for jobs
        not started, as `DecisionView.start_time` gives it; a start may be negative, for a job
        whose submit time is SWF's unknown -1 under SchedGym's loader)."""
        start = np.asarray(start, dtype=np.float64)
        new = np.flatnonzero(np.isfinite(start) & ~self.seen)
        if new.size == 0:
            return
        self.seen[new] = True
        e = self.executed[new]
        bsld = np.maximum((start[new] - self.submit[new] + e) / np.maximum(e, 10.0), 1.0)
        u = self.user_index[new]
        self.sums += np.bincount(u, weights=bsld, minlength=self.n_users)
        self.counts += np.bincount(u, minlength=self.n_users)

    def feature(self, rows: np.ndarray) -> np.ndarray:
        """The feature of each of `rows` (rows of the table), from the jobs counted so far."""
        counted = self.counts > 0
        if not counted.any():
            return np.ones(len(rows))
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = self.sums / self.counts  # NaN for a user with no started job
        top = float(mean[counted].max())
        if top == 0:
            return np.ones(len(rows))
        u = self.user_index[rows]
        return np.where(counted[u], 1.0 - mean[u] / top, 1.0)


def interleave(g: np.ndarray, tf: TraceFeatures, slots: int) -> np.ndarray:
    """SJF and smallest-first orders taken in turn, skipping repeats. `g` is in FCFS order, so the
    stable sorts break every remaining tie FCFS."""
    submit = tf.submit[g]
    sjf = g[np.lexsort((submit, tf.req_time[g]))[:slots]]
    small = g[np.lexsort((submit, tf.procs[g]))[:slots]]
    both = np.empty(2 * slots, dtype=np.int64)
    both[0::2] = sjf
    both[1::2] = small
    _, first = np.unique(both, return_index=True)
    first.sort()
    return both[first[:slots]]


def visible_rows(g: np.ndarray, tf: TraceFeatures, slots: int, cutoff: str) -> np.ndarray:
    """The rows of `g` (waiting jobs, any order) that fill the slots, in slot order."""
    # FCFS: by submit time, then row. Rows are distinct, so any sort gives the same order; the
    # stable one is the fast one on queues that are nearly in order already
    g = np.sort(g, kind="stable") if tf.monotone else g[np.lexsort((g, tf.submit[g]))]
    if len(g) <= slots:
        return g
    if cutoff == "fcfs":
        return g[:slots]
    return interleave(g, tf, slots)


def visible_rows_grouped(queues: Sequence[np.ndarray], base: np.ndarray, tf: TraceFeatures,
                         slots: int, cutoff: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`visible_rows` of N queues at once: ``(g, env, counts)``, the visible rows of `tf` of env
    0, then of env 1, ..., each env's in slot order; the env of each; how many each env shows.
    `queues[i]` holds rows of env i's window, which starts at row `base[i]` of `tf`."""
    n_env = len(queues)
    lens = np.fromiter(map(len, queues), dtype=np.int64, count=n_env)
    total = int(lens.sum())
    env = np.repeat(np.arange(n_env), lens)
    g = np.concatenate(queues) if total else np.zeros(0, dtype=np.int64)
    g += base[env]
    # FCFS within each env: sorted by (env, submit, row), so the envs stay grouped in env order
    if tf.monotone:
        group = env * len(tf.submit)
        g = np.sort(g + group, kind="stable") - group
    else:
        g = g[np.lexsort((g, tf.submit[g], env))]
    counts = np.minimum(lens, slots)
    if total > int(counts.sum()):  # the cut-off, in the envs with more waiting jobs than slots
        first = np.cumsum(lens) - lens
        if cutoff == "fcfs":
            keep = np.arange(total) - np.repeat(first, lens) < slots
            g, env = g[keep], env[keep]
        else:
            g = np.concatenate([g[f:f + n] if n <= slots else interleave(g[f:f + n], tf, slots)
                                for n, f in zip(lens.tolist(), first.tolist())])
            env = np.repeat(np.arange(n_env), counts)
    return g, env, counts


def fill_observations(
    obs: np.ndarray, mask: np.ndarray, rows: np.ndarray, tf: TraceFeatures,
    views: Sequence[DecisionView], base: np.ndarray, need: np.ndarray, cutoff: str = "fcfs",
    users: Sequence[UserScores] | None = None,
) -> None:
    """Write the observations of N decisions in place, all together: the one implementation of the
    observation, for one env as for a batch.

    obs (N, slots, F), mask (N, slots) and rows (N, slots) are the outputs, or (slots, F), (slots,)
    and (slots,) for one decision; `views[i]` is env i's decision, on a window that starts at row
    `base[i]` of `tf`'s table; `need` holds the nodes each row of that table needs; `users[i]` is
    env i's `UserScores` (fairness variant, F = 9). `rows` gets the row of env i's window in each
    slot, -1 for padding.
    """
    slots = mask.shape[-1]
    n_env = len(views)
    # one decision: the same rows and values without the per-row env index, written by slices
    single = mask.ndim == 1
    if single:
        view = views[0]
        offset = int(base[0])
        g = visible_rows(view.queue + offset if offset else view.queue, tf, slots, cutoff)
        counts = [len(g)]
        now, free = view.now, view.free_nodes
    else:
        g, env, count_array = visible_rows_grouped([v.queue for v in views], base, tf, slots,
                                                   cutoff)
        counts = count_array.tolist()
        now = np.fromiter((v.now for v in views), dtype=np.float64, count=n_env)[env]
        free = np.fromiter((v.free_nodes for v in views), dtype=np.int64, count=n_env)[env]
        offset = base[env]
    x = tf.static[g]
    x[:, 0] = np.minimum((now - tf.submit[g]) * (1.0 / MAX_WAIT), HIGH)
    x[:, -1] = np.where(need[g] <= free, HIGH, LOW)
    local = g - offset
    if users is not None:
        end = 0
        for view, scores, k in zip(views, users, counts):
            scores.sync(view.start_time)
            x[end:end + k, 7] = scores.feature(local[end:end + k])
            end += k
    if single:
        k = counts[0]
        obs[:k] = x
        obs[k:] = tf.pad
        mask[:k] = True
        mask[k:] = False
        rows[:k] = local
        rows[k:] = -1
    else:
        # env i shows its first counts[i] slots: in row-major order the mask's True cells are
        # the rows of x, env after env
        np.less(np.arange(slots), count_array[:, None], out=mask)
        obs[:] = tf.pad
        obs[mask] = x
        rows.fill(-1)
        rows[mask] = local


_NO_OFFSET = np.zeros(1, dtype=np.int64)

# observe() is called with many views of the same table: keep its static features
_CACHE: dict[int, tuple[weakref.ref, tuple, TraceFeatures]] = {}


def _features_of(jobs: JobTable, norm: Mapping[str, float], n_features: int) -> TraceFeatures:
    key = (tuple(sorted(norm.items())), n_features)
    hit = _CACHE.get(id(jobs))
    if hit is not None and hit[0]() is jobs and hit[1] == key:
        return hit[2]
    tf = TraceFeatures(jobs, norm, n_features)
    if len(_CACHE) > 32:
        _CACHE.clear()
    _CACHE[id(jobs)] = (weakref.ref(jobs), key, tf)
    return tf


def observe(
    view: DecisionView,
    norm: Mapping[str, float],
    slots: int = 128,
    cutoff: str = "fcfs",
    fairness: UserScores | bool | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """RLScheduler's observation of a decision: ``(obs, mask, rows)``.

    obs is float32 (slots, 8), or (slots, 9) with `fairness`; mask is bool (slots,), True for the
    slots holding a waiting job; rows is int64 (slots,), the row of `view.jobs` in each slot (-1 for
    padding). `norm` holds the trace's maxima (`CleaningReport.norm`).

    fairness: a `UserScores` of the run (one per engine: it brings its per-user sums up to date from
    `view.start_time`), or True to count them afresh at every call (simpler, O(jobs) per decision;
    the executed times are then the run times, as under the rlscheduler profile).
    """
    check_choice("cutoff", cutoff, CUTOFFS)
    if fairness is True:
        fairness = UserScores(view.jobs, getattr(view, "executed", None))
    elif fairness is False:
        fairness = None
    elif fairness is not None and not isinstance(fairness, UserScores):
        raise TypeError(f"fairness must be a UserScores, True, False or None, "
                        f"not {type(fairness).__name__}")
    n_features = 8 if fairness is None else 9
    tf = _features_of(view.jobs, norm, n_features)
    obs = np.empty((slots, n_features), dtype=np.float32)
    mask = np.empty(slots, dtype=bool)
    rows = np.empty(slots, dtype=np.int64)
    users = None if fairness is None else [fairness]
    fill_observations(obs, mask, rows, tf, [view], _NO_OFFSET, view.nodes_needed, cutoff, users)
    return obs, mask, rows


__all__ = [
    "CUTOFFS", "FAIR_FEATURES", "FEATURES", "HIGH", "LOW", "MAX_WAIT", "TraceFeatures",
    "UserScores", "check_choice", "fill_observations", "interleave", "observe", "padding_row",
    "visible_rows", "visible_rows_grouped",
]
