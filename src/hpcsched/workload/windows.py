"""Which consecutive jobs of a trace an experiment runs: window starts (drawn once, or episode
after episode by a `WindowSampler`) and train/test splits.

A window is `length` consecutive jobs of a cleaned table, named by its 0-based start position, so
that every policy compared sees the same jobs (`JobTable.window(start, length)`).
"""

from __future__ import annotations

import hashlib
from typing import Any, Callable, Collection, Mapping, Sequence

import numpy as np

#: numpy's legacy seed state that gym 0.12's `seeding.np_random(1)` produces; RLScheduler's
#: evaluation script seeds its environment with 1, so this draws the paper's test windows.
PAPER_SEED = (2739863373, 598274112)


def paper_windows(first: int = 10000, count: int = 10, length: int = 1024) -> list[int]:
    """The RLScheduler paper's test window starts (its Tables V-XI): `count` starts drawn in
    sequence as ``randint(length, first - length - 1)`` from a legacy RandomState with the paper's
    seed. With the defaults: [1981, 2756, 4299, 8850, 3316, 2714, 5228, 7762, 4022, 7085].

    SchedGym's bounds keep the window clear of the first `length` jobs and of the end of the
    first `first` jobs; they are kept as they are so that the draw is the paper's.
    """
    low, high = length, first - length - 1
    if count < 0 or length <= 0:
        raise ValueError(f"paper_windows: count must be >= 0 and length > 0, got {count}, {length}")
    if high <= low:
        raise ValueError(
            f"paper_windows: the first {first} jobs are too few for windows of {length} "
            f"(starts are drawn from [{low}, {high}), which is empty)"
        )
    rs = np.random.RandomState(np.array(PAPER_SEED, dtype=np.uint32))
    return [int(rs.randint(low, high)) for _ in range(count)]


def gym_legacy_state(seed: int) -> tuple[int, ...]:
    """The seed that gym's old `seeding.np_random(seed)` gives numpy's legacy RandomState: the
    first 8 bytes of SHA-512 of the seed's decimal text, read as two little-endian uint32 words.
    Seed 1 gives `PAPER_SEED`."""
    digest = hashlib.sha512(str(int(seed)).encode()).digest()[:8]
    return tuple(np.frombuffer(digest, dtype="<u4").tolist())


def schedinspector_windows(n_jobs: int, count: int = 50, length: int = 256,
                           seed: int = 1) -> list[int]:
    """SchedInspector's test windows: its test script draws each start as ``randint(0, n_jobs -
    length)`` in sequence from its environment's generator, seeded with 1 through gym's old
    seeding (so over the whole trace: no train/test split). With the defaults on Lublin-1:
    [9149, 8144, 1732, 7826, 1690, ...]. The script writes 256 for `length` in the bound."""
    if count < 0 or length <= 0:
        raise ValueError(
            f"schedinspector_windows: count must be >= 0 and length > 0, got {count}, {length}")
    if n_jobs - length <= 0:
        raise ValueError(f"schedinspector_windows: a window of {length} jobs needs more than "
                         f"the trace's {n_jobs} jobs")
    rs = np.random.RandomState(np.array(gym_legacy_state(seed), dtype=np.uint32))
    return [int(rs.randint(0, n_jobs - length)) for _ in range(count)]


def sample_windows(
    n_jobs: int, count: int, length: int, first: int | None = None, seed: int = 0
) -> list[int]:
    """`count` window starts drawn uniformly (with replacement) from [0, limit - length], where
    limit = min(first, n_jobs) (all jobs when `first` is None), with numpy's Generator."""
    if count < 0 or length <= 0:
        raise ValueError(
            f"sample_windows: count must be >= 0 and length > 0, got {count}, {length}"
        )
    limit = n_jobs if first is None else min(first, n_jobs)
    if length > limit:
        scope = f"the first {limit} jobs" if first is not None and first < n_jobs else (
            f"the trace's {n_jobs} jobs")
        raise ValueError(f"sample_windows: a window of {length} jobs does not fit in {scope}")
    rng = np.random.default_rng(seed)
    return rng.integers(0, limit - length, size=count, endpoint=True).tolist()


def covered(starts: Sequence[int], length: int) -> list[tuple[int, int]]:
    """The job positions windows of `length` starting at `starts` cover, as sorted, merged
    half-open ranges ``[lo, hi)``."""
    spans = sorted((int(s), int(s) + length) for s in starts)
    merged: list[tuple[int, int]] = []
    for lo, hi in spans:
        if merged and lo <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
        else:
            merged.append((lo, hi))
    return merged


def disjoint_windows(n_jobs: int, count: int, length: int, *, first: int | None = None,
                     avoid: Sequence[tuple[int, int]] = (), seed: int = 0) -> list[int]:
    """`count` distinct window starts drawn uniformly from the starts in [0, limit - length]
    (limit = min(first, n_jobs)) whose window shares no job with any range ``[lo, hi)`` of
    `avoid`: validation windows that never see a test window's jobs. Sorted by the draw, not by
    position. A clear error when fewer than `count` such starts exist."""
    if count < 0 or length <= 0:
        raise ValueError(
            f"disjoint_windows: count must be >= 0 and length > 0, got {count}, {length}")
    limit = n_jobs if first is None else min(first, n_jobs)
    ok = np.ones(max(limit - length + 1, 0), dtype=bool)
    for lo, hi in avoid:  # a window [s, s + length) meets [lo, hi) when lo - length < s < hi
        ok[max(lo - length + 1, 0):max(min(hi, len(ok)), 0)] = False
    candidates = np.flatnonzero(ok)
    if len(candidates) < count:
        ranges = ", ".join(f"{lo}-{hi - 1}" for lo, hi in avoid) or "none"
        raise ValueError(
            f"disjoint_windows: only {len(candidates)} windows of {length} jobs in the first "
            f"{limit} jobs avoid the test jobs ({ranges}); asked for {count}: ask for fewer or "
            f"shorter windows")
    rng = np.random.default_rng(seed)
    return candidates[rng.choice(len(candidates), size=count, replace=False)].tolist()


def paper_test_jobs(n_jobs: int, first: int = 10000, count: int = 10,
                    length: int = 1024) -> list[tuple[int, int]]:
    """The jobs of RLScheduler's test windows (`paper_windows`, as `experiment rlscheduler-table5/7/8`
    draw them on a trace of `n_jobs` jobs), as merged ranges ``[lo, hi)``. With the defaults on any
    trace of 10,000 jobs or more: [(1981, 6252), (7085, 8786), (8850, 9874)]."""
    return covered(paper_windows(first=min(first, n_jobs), count=count, length=length), length)


#: allowed window starts: a callable start -> bool, or a collection of starts
StartFilter = Callable[[int], bool] | Collection[int]


class WindowSampler:
    """Window starts as the authors' code draws them: uniform in
    [length, min(first, N) - length - 1) (numpy's `integers`, high excluded).

    `window_filter` keeps only some starts (trajectory filtering): a callable start -> bool is
    rejection-sampled; a collection of allowed starts is sampled uniformly among its members in
    that range (the same distribution, without retries)."""

    def __init__(self, n_jobs: int, length: int, first: int | None = 10000,
                 window_filter: StartFilter | None = None, max_tries: int = 100_000) -> None:
        if length <= 0:
            raise ValueError(f"episode_jobs must be positive, got {length}")
        limit = n_jobs if first is None else min(first, n_jobs)
        self.low, self.high = length, limit - length - 1
        if self.high <= self.low:
            raise ValueError(
                f"windows of {length} jobs cannot be drawn from {limit} jobs: starts are drawn "
                f"from [{self.low}, {self.high}) as in RLScheduler's code, which needs at least "
                f"{2 * length + 2} jobs; use fewer episode_jobs or fixed windows "
                f"(reset(options={{'start': ...}}))"
            )
        self.n_jobs, self.length, self.first, self.max_tries = n_jobs, length, first, max_tries
        self.accept: Callable[[int], bool] | None = None
        self.allowed: np.ndarray | None = None
        if window_filter is not None:
            if callable(window_filter):
                self.accept = window_filter
            else:
                allowed = np.unique(np.fromiter((int(s) for s in window_filter), dtype=np.int64))
                allowed = allowed[(allowed >= self.low) & (allowed < self.high)]
                if allowed.size == 0:
                    raise ValueError(
                        f"window_filter allows no start in [{self.low}, {self.high})")
                self.allowed = allowed

    @property
    def filtered(self) -> bool:
        return self.accept is not None or self.allowed is not None

    def for_reset(self, options: Mapping[str, Any]) -> "WindowSampler":
        """The sampler of a reset with these options: one drawing through its "window_filter",
        if it names one (None: every window), instead of this one's."""
        if "window_filter" not in options:
            return self
        return WindowSampler(self.n_jobs, self.length, self.first, options["window_filter"],
                             self.max_tries)

    def sample(self, rng: np.random.Generator) -> int:
        if self.allowed is not None:
            return int(self.allowed[rng.integers(len(self.allowed))])
        for _ in range(self.max_tries):
            start = int(rng.integers(self.low, self.high))
            if self.accept is None or self.accept(start):
                return start
        raise RuntimeError(f"window_filter accepted none of {self.max_tries} random starts")


#: SchedInspector's share of a trace for training (the first 20 %; the rest is for testing)
TRAIN_FRACTION = 0.2


def split_point(n_jobs: int, train_fraction: float = TRAIN_FRACTION) -> int:
    """Jobs [0, cut) are for training, [cut, n_jobs) for testing."""
    if not 0.0 < train_fraction <= 1.0:
        raise ValueError(f"train_fraction must be in (0, 1], got {train_fraction}")
    return int(n_jobs * train_fraction)


def evaluation_windows(n_jobs: int, count: int = 50, length: int = 256, seed: int = 0,
                       train_fraction: float = TRAIN_FRACTION) -> list[int]:
    """`count` window starts of `length` jobs drawn from the part of the trace after the
    training part (SchedInspector's paper: 50 windows of 256 jobs from the last 80 %)."""
    cut = split_point(n_jobs, train_fraction)
    if n_jobs - cut < length:
        raise ValueError(f"the test part ({n_jobs - cut} jobs after the first {cut}) is shorter "
                         f"than one window of {length} jobs")
    return [cut + s for s in sample_windows(n_jobs - cut, count, length, seed=seed)]


def train_test_split(n_jobs: int, test_fraction: float) -> tuple[range, range]:
    """Index ranges (train, test): the first part of the trace for training, the last
    round(n_jobs * test_fraction) jobs for testing (SchedInspector trains on the first 20 % and
    tests on the remaining 80 %: ``train_test_split(n, 0.8)``)."""
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"train_test_split: test_fraction must be in (0, 1), got {test_fraction}")
    n_test = int(round(n_jobs * test_fraction))
    if n_test == 0 or n_test == n_jobs:
        raise ValueError(
            f"train_test_split: {n_jobs} jobs cannot be split with a test fraction of "
            f"{test_fraction} (one part would be empty)"
        )
    cut = n_jobs - n_test
    return range(0, cut), range(cut, n_jobs)



#: DBF's split of a trace into blocks of jobs (Wang's thesis Ch. 3, `dbf_starts`): the last 25%
#: test, the 15% before it validation, the first 60% training
DBF_SPLIT = {"train": (0.0, 0.60), "validation": (0.60, 0.75), "test": (0.75, 1.0)}
#: the draws of DBF's fixed validation and test starts (training starts are drawn by the env)
DBF_SEEDS = {"validation": 3_1000, "test": 3_1007}


def dbf_start_range(n_jobs: int, split: str, episode_jobs: int = 1000) -> tuple[int, int]:
    """(lo, hi), both included: the episode starts of `split` ("train", "validation", "test") of a
    trace of `n_jobs` jobs (see `dbf_starts`)."""
    if split not in DBF_SPLIT:
        raise ValueError(f"split {split!r}: choose one of {', '.join(DBF_SPLIT)}")
    a, b = DBF_SPLIT[split]
    lo, end = int(round(a * n_jobs)), int(round(b * n_jobs))
    # an episode also sees the jobs still queued when its last job starts (a few dozen on
    # Lublin-1): a gap of a fifth of an episode before the next block keeps them out of it
    gap = 0 if split == "test" else episode_jobs // 5
    hi = end - episode_jobs - gap
    if hi < lo:
        raise ValueError(f"a trace of {n_jobs} jobs is too short for DBF's {split} block of "
                         f"{episode_jobs}-job episodes (jobs {lo}..{end - 1})")
    return lo, hi


def dbf_starts(trace, split: str, n: int | None = None, episode_jobs: int = 1000) -> list[int]:
    """The episode starts of DBF's `split` of `trace` (a prepared trace, a job table, or its
    number of jobs), the one place they are defined, for training, validation and every DBF
    experiment:

    - the trace is cut into blocks of jobs: training the first 60%, validation the next 15%,
      test the last 25% (`DBF_SPLIT`);
    - an episode of `split` starts in its block and places its `episode_jobs` jobs there; the
      starts of the training and validation blocks stop a fifth of an episode short of the next
      block, so that what is still queued at an episode's end does not reach into it;
    - "validation" and "test" are `n` starts (default 10 and 100) drawn without replacement with
      a fixed seed per split (`DBF_SEEDS`), sorted, the same on every run, and nested: a
      smaller n's starts are among a larger n's; "train" (n None) is the
      range itself, ``[lo, hi]``, from which training episodes draw their starts uniformly.

    On Lublin-1 (10,000 jobs, 1,000-job episodes): training starts 0..4800, validation
    6000..6300, test 7500..9000."""
    n_jobs = trace if isinstance(trace, (int, np.integer)) else len(getattr(trace, "jobs", trace))
    lo, hi = dbf_start_range(int(n_jobs), split, episode_jobs)
    if split == "train" and n is None:
        return [lo, hi]
    default = {"validation": 10, "test": 100}.get(split, 1)
    n = default if n is None else int(n)
    size = hi - lo + 1
    if n > size:
        raise ValueError(f"DBF's {split} block holds {size} starts, fewer than {n}")
    return sorted(int(s) for s in lo + _nested_draw(size, n, default, DBF_SEEDS.get(split, 0)))


def _nested_draw(size: int, n: int, default: int, seed: int) -> np.ndarray:
    """`n` of range(size), without replacement, nested: a smaller n's draw is part of a larger
    one's (Fig. 3.7's 1,000 test episodes hold the 100 of the tables). The `default` draw is one
    `choice` with `seed`; fewer take the first of it, in the order drawn; more add a draw from
    the rest with seed + 1."""
    rng = np.random.default_rng(seed)
    first = rng.choice(size, size=min(default, size), replace=False)
    if n <= first.size:
        return first[:n]
    rest = np.setdiff1d(np.arange(size), first)
    extra = np.random.default_rng(seed + 1).choice(rest, size=n - first.size, replace=False)
    return np.concatenate([first, extra])

__all__ = ["DBF_SEEDS", "DBF_SPLIT", "PAPER_SEED", "StartFilter", "TRAIN_FRACTION", "WindowSampler",
           "covered", "dbf_start_range", "dbf_starts", "disjoint_windows", "evaluation_windows",
           "gym_legacy_state", "paper_test_jobs", "paper_windows", "sample_windows",
           "schedinspector_windows", "split_point", "train_test_split"]
