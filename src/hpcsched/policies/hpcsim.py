"""HPCsim's selectors (the thesis's simulator; spec hpcsim-semantics.md section 5), exactly.

Under the `hpcsim` profile, `--policy f1` means HPCsim's f_1, and so on. The keys are HPCsim's, with
its small offsets, computed with Python's float arithmetic as its code does (an ulp can reorder a
near-tie), from its job fields: n = the job's total cores, r = its requested time (s), s = its
submit time in seconds since the first arrival, t = the time of the pass. Smallest key first; ties
go to the earlier arrival.

| name   | key                                              |
|--------|--------------------------------------------------|
| fcfs   | s                                                |
| lcfs   | -s                                               |
| sjf    | r                                                |
| wfp3   | -((t - s) / r)^3 * n                             |
| unicep | -(t - s) / (log2(n + 1e-6) * r)                  |
| f1     | log10(r + 1e-6) * n + 870 * log10(s + 1e-6)      |
| f2     | sqrt(r + 1e-6) * n + 25600 * log10(s + 1e-6)     |

UNICEP's offset gives a one-core job a priority about 7e5 times larger (log2(1 + 1e-6)); F1 and F2
read the submit time relative to the first arrival, so the first jobs get log10(1e-6) = -6.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from hpcsched.workload.jobs import JobTable


def _static(fn: Callable[[float, float, float], float]):
    def keys(jobs: JobTable) -> np.ndarray:
        return np.array([fn(s, r, n) for s, r, n in zip(jobs.submit.tolist(),
                                                         jobs.req_time.tolist(),
                                                         jobs.procs.tolist())])
    return keys


STATIC = {
    "fcfs": _static(lambda s, r, n: s),
    "lcfs": _static(lambda s, r, n: -s),
    "sjf": _static(lambda s, r, n: r),
    "f1": _static(lambda s, r, n: math.log10(r + 1e-6) * n + 870 * math.log10(s + 1e-6)),
    "f2": _static(lambda s, r, n: math.sqrt(r + 1e-6) * n + 25600 * math.log10(s + 1e-6)),
}


def _wfp3(t: float, s: float, r: float, n: float) -> float:
    return -((t - s) / r) ** 3 * n


def _unicep(t: float, s: float, r: float, n: float) -> float:
    return -(t - s) / (math.log2(n + 1e-6) * r)


DYNAMIC = {"wfp3": _wfp3, "unicep": _unicep}
ALIASES = {"f_1": "f1", "f_2": "f2"}
NAMES = tuple(STATIC) + tuple(DYNAMIC)


@dataclass
class HpcsimStatic:
    name: str
    score: Callable[[JobTable], np.ndarray] = field(repr=False)

    def static_keys(self, jobs: JobTable) -> np.ndarray:
        return self.score(jobs)


@dataclass
class HpcsimDynamic:
    name: str
    score: Callable[[float, float, float, float], float] = field(repr=False)

    def keys(self, view) -> np.ndarray:
        q = view.queue.tolist()
        jobs, t = view.jobs, float(view.now)
        s, r, n = jobs.submit, jobs.req_time, jobs.procs
        try:
            return np.array([self.score(t, float(s[i]), float(r[i]), float(n[i])) for i in q])
        except ZeroDivisionError:
            bad = next(i for i in q if r[i] == 0)
            raise ValueError(f"{self.name} divides by the requested time, and job "
                             f"{int(jobs.job_id[bad])} asks for 0 s (HPCsim stops there too)"
                             ) from None


def get_hpcsim_policy(name: str):
    key = ALIASES.get(name, name)
    if key in STATIC:
        return HpcsimStatic(key, STATIC[key])
    if key in DYNAMIC:
        return HpcsimDynamic(key, DYNAMIC[key])
    raise ValueError(f"unknown policy {name!r} under the hpcsim profile; HPCsim's selectors: "
                     f"{', '.join(NAMES)}")


__all__ = ["NAMES", "get_hpcsim_policy"]
