"""Priority heuristics: each ranks the waiting jobs by a score, smallest first.

With r = requested time, n = processors, s = submit time and w = current waiting time:

| name    | score                                   | source                                   |
|---------|-----------------------------------------|------------------------------------------|
| fcfs    | s                                       | first come, first served                 |
| lcfs    | -s                                      | last come, first served                  |
| sjf     | r (ties: s)                             | shortest (requested) job first           |
| sjf-procs | r (ties: n)                           | SJF as SchedInspector's code ranks ties  |
| saf     | r * n                                   | smallest area first                      |
| srf     | r / n                                   | smallest ratio first                     |
| sqf     | n                                       | smallest request first (Ch. 3's "SJF")   |
| wfp3    | -(w / r)^3 * n                          | Tang et al.                              |
| unicep  | -w / (log2(n) * r)                      | Tang et al.                              |
| f1..f4  | Carastan-Santos et al.'s learned scores | F1 = log10(r) n + 870 log10(s), ...      |
| random  | a random priority per job, seeded       |                                          |

Wang's thesis Ch. 3 (DBF) calls "Smallest-Job-First (SJF)" the policy that "always places the job
with the smallest number of requested cores": that is `sqf` here (ties: the job queued first), not
`sjf`, which is the shortest requested time as in RLScheduler and SchedInspector.

`wfp3-rls` and `unicep-rls` reproduce the RLScheduler code, which reads the waiting time of a waiting
job as -1 - s (its "scheduled time" is still -1). Their scores then favour long requests and early
submitters: that bug produced the paper's WFP3/UNICEP numbers (spec rlscheduler.md section 9).

Ties left by a score go to the job queued first. `sjf-procs` is the `sjf` of the `schedinspector`
profile (its code sorts on (requested time, processors)); every other profile's `sjf` breaks ties by
submit time, as RLScheduler's code does.

SchedInspector's further base heuristics (smallest, largest, lpf, laf, lrf, sexp, lexp,
multifactor) live in `hpcsched.policies.extra` and are known here by name too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from hpcsched.policies.extra import (EXTRA_DESCRIPTIONS, EXTRA_DYNAMIC, EXTRA_STATIC,
                                     MultifactorPriority)
from hpcsched.workload.jobs import JobTable

# log2(n) is 0 for a serial job; like the reference code, a tiny offset keeps UNICEP finite
_EPS = 1e-15


def _positive(x: np.ndarray) -> np.ndarray:
    """Carastan-Santos' scores replace a non-positive request or submit time by 0.1."""
    return np.where(x > 0, x, 0.1)


def _dense_rank(*keys: np.ndarray) -> np.ndarray:
    """Integer ranks ordering rows lexicographically by keys (first key most significant); equal
    key tuples get equal ranks, so a stable sort by the rank keeps their current order."""
    order = np.lexsort(keys[::-1])
    sorted_keys = np.stack([k[order] for k in keys])
    new = np.any(sorted_keys[:, 1:] != sorted_keys[:, :-1], axis=0)
    rank = np.empty(len(order), dtype=np.float64)
    rank[order] = np.concatenate([[0], np.cumsum(new)])
    return rank


def _f(base: Callable[[np.ndarray, np.ndarray], np.ndarray], weight: float):
    def score(jobs: JobTable) -> np.ndarray:
        r = _positive(jobs.req_time)
        return base(r, jobs.procs) + weight * np.log10(_positive(jobs.submit))

    return score


def _wfp3_as_coded(jobs: JobTable) -> np.ndarray:
    # computed element by element with math.pow, exactly as the reference code does
    return np.array([
        -math.pow((-1.0 - s) / r, 3) * n
        for s, r, n in zip(jobs.submit.tolist(), jobs.req_time.tolist(), jobs.procs.tolist())
    ])


def _unicep_as_coded(jobs: JobTable) -> np.ndarray:
    return np.array([
        -((-1.0 - s) + _EPS) / (math.log2(n + _EPS) * r)
        for s, r, n in zip(jobs.submit.tolist(), jobs.req_time.tolist(), jobs.procs.tolist())
    ])


_STATIC: dict[str, Callable[[JobTable], np.ndarray]] = {
    "fcfs": lambda j: j.submit,
    "lcfs": lambda j: -j.submit,
    "sjf": lambda j: _dense_rank(j.req_time, j.submit),
    "sjf-procs": lambda j: _dense_rank(j.req_time, j.procs),
    "saf": lambda j: j.req_time * j.procs,
    "srf": lambda j: j.req_time / j.procs,
    "sqf": lambda j: j.procs,
    "f1": _f(lambda r, n: np.log10(r) * n, 870.0),
    "f2": _f(lambda r, n: np.sqrt(r) * n, 25600.0),
    "f3": _f(lambda r, n: r * n, 6.86e6),
    "f4": _f(lambda r, n: r * np.sqrt(n), 5.3e5),
    "wfp3-rls": _wfp3_as_coded,
    "unicep-rls": _unicep_as_coded,
}


def _wfp3(wait: np.ndarray, r: np.ndarray, n: np.ndarray) -> np.ndarray:
    return -((wait / r) ** 3) * n


def _unicep(wait: np.ndarray, r: np.ndarray, n: np.ndarray) -> np.ndarray:
    return -(wait + _EPS) / (np.log2(n + _EPS) * r)


_DYNAMIC = {"wfp3": _wfp3, "unicep": _unicep}
_STATIC.update(EXTRA_STATIC)
_DYNAMIC.update(EXTRA_DYNAMIC)

DESCRIPTIONS = {
    "fcfs": "first come, first served",
    "lcfs": "last come, first served",
    "sjf": "shortest requested time first (ties: earliest submit)",
    "sjf-procs": "shortest requested time first, ties: fewest processors (SchedInspector's code; "
                 "the schedinspector profile's sjf)",
    "saf": "smallest area (time x procs) first",
    "srf": "smallest ratio (time / procs) first",
    "sqf": "smallest processor request first (fewest cores: the \"SJF\" of Wang's thesis Ch. 3)",
    "wfp3": "Tang et al.'s WFP3, -(w/r)^3 n",
    "unicep": "Tang et al.'s UNICEP, -w/(log2(n) r)",
    "f1": "Carastan-Santos et al.'s F1",
    "f2": "Carastan-Santos et al.'s F2",
    "f3": "Carastan-Santos et al.'s F3",
    "f4": "Carastan-Santos et al.'s F4",
    "random": "a random priority per job (seeded)",
    "wfp3-rls": "WFP3 as RLScheduler's code computes it (waiting-time bug)",
    "unicep-rls": "UNICEP as RLScheduler's code computes it (waiting-time bug)",
    **EXTRA_DESCRIPTIONS,
}


@dataclass
class StaticPriority:
    """A heuristic whose score of a job never changes during a run."""

    name: str
    score: Callable[[JobTable], np.ndarray] = field(repr=False)

    def static_keys(self, jobs: JobTable) -> np.ndarray:
        return self.score(jobs)

    def select(self, view) -> int:
        q = view.queue
        keys = self.score(view.jobs)[q]
        return int(q[np.argmin(keys)])  # argmin returns the first of equal keys: a stable choice


@dataclass
class RandomPriority:
    """Every job gets a uniformly random priority when a run starts; the same seed, the same run."""

    seed: int = 0
    name: str = "random"

    def static_keys(self, jobs: JobTable) -> np.ndarray:
        return np.random.default_rng(self.seed).random(len(jobs))

    def select(self, view) -> int:
        # not cached: select() is the slow generic path; engines use static_keys
        q = view.queue
        return int(q[np.argmin(self.static_keys(view.jobs)[q])])


@dataclass
class WaitingPriority:
    """A heuristic whose score depends on the current waiting time, w = now - submit."""

    name: str
    score: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray] = field(repr=False)

    def keys(self, view) -> np.ndarray:
        q = view.queue
        jobs = view.jobs
        wait = view.now - jobs.submit[q]
        with np.errstate(divide="ignore", invalid="ignore"):
            return self.score(wait, jobs.req_time[q], jobs.procs[q])

    def select(self, view) -> int:
        return int(view.queue[np.argmin(self.keys(view))])


def policy_names() -> list[str]:
    return list(DESCRIPTIONS)


def get_policy(name: str, seed: int = 0, dialect: str = "", profile=None):
    """The heuristic called `name` (case-insensitive), in a profile's dialect: under "hpcsim" the
    names are HPCsim's selectors (`hpcsched.policies.hpcsim`). With `profile` (a name or a
    `Profile`), its dialect, and the name as that profile reads it (the schedinspector profile's
    `sjf` is `sjf-procs`, still named `sjf`, as the rows of a run under that profile call it)."""
    label = key = name.strip().lower()
    if profile is not None:
        from hpcsched.sim.profiles import get_profile

        prof = get_profile(profile)
        dialect = prof.dialect
        key = prof.heuristic(key)
    if dialect == "hpcsim":
        from hpcsched.policies.hpcsim import get_hpcsim_policy

        return get_hpcsim_policy(key)
    if key in _STATIC:
        return StaticPriority(label, _STATIC[key])
    if key in _DYNAMIC:
        return WaitingPriority(key, _DYNAMIC[key])
    if key == "random":
        return RandomPriority(seed)
    if key == "multifactor":
        return MultifactorPriority()
    raise ValueError(f"unknown policy {name!r}; known heuristics: {', '.join(policy_names())}")
