"""The other base heuristics of SchedInspector's code (its `sched_algo` list), smallest key first.

With r = requested time, n = processors, w = current waiting time:

| name        | key                                  | what it favours                              |
|-------------|--------------------------------------|----------------------------------------------|
| smallest    | n                                    | the fewest processors                        |
| largest     | -n                                   | the most processors                          |
| lpf         | -r                                   | the longest request (longest processing)     |
| laf         | -r * n                               | the largest area                             |
| lrf         | -r / n                               | the largest ratio                            |
| sexp        | (w + r) / r                          | the smallest expansion factor                |
| lexp        | -(w + r) / r                         | the largest expansion factor                 |
| multifactor | -(1000 min(w / 7 d, 1) + 1000 (1 - nodes / cluster nodes)) | Slurm-style: age and small size |

SEXP and LEXP read the real waiting time (the code reads `scheduled_time - submit`, which is -1 -
submit for a waiting job: the bug RLScheduler's WFP3 has, spec rlscheduler.md section 9). The
multifactor priority follows Slurm's (every weight 1000, the age factor saturating at Slurm's default
PriorityMaxAge of 7 days, the job-size factor favouring small jobs); the code's variant reads the
trace's recorded wait instead of the simulated one, and the paper's Fig. 12 run adds fair-share and
partition factors from user and queue ids, which are left out here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from hpcsched.workload.jobs import JobTable

SLURM_MAX_AGE = 7 * 24 * 3600.0  # Slurm's default PriorityMaxAge
SLURM_WEIGHT = 1000.0

EXTRA_STATIC: dict[str, Callable[[JobTable], np.ndarray]] = {
    "smallest": lambda j: j.procs,
    "largest": lambda j: -j.procs,
    "lpf": lambda j: -j.req_time,
    "laf": lambda j: -(j.req_time * j.procs),
    "lrf": lambda j: -(j.req_time / j.procs),
}


def _expansion(wait: np.ndarray, r: np.ndarray, n: np.ndarray) -> np.ndarray:
    return (wait + r) / r


EXTRA_DYNAMIC: dict[str, Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]] = {
    "sexp": _expansion,
    "lexp": lambda w, r, n: -_expansion(w, r, n),
}

EXTRA_DESCRIPTIONS = {
    "smallest": "fewest processors first",
    "largest": "most processors first",
    "lpf": "longest requested time first",
    "laf": "largest area (time x procs) first",
    "lrf": "largest ratio (time / procs) first",
    "sexp": "smallest expansion factor (w + r) / r first",
    "lexp": "largest expansion factor (w + r) / r first",
    "multifactor": "Slurm-style multifactor: 1000 x age (7 days max) + 1000 x (1 - size)",
}


@dataclass
class MultifactorPriority:
    """Slurm's multifactor priority with the age and job-size factors, every weight 1000; the
    highest priority goes first (its key is the priority negated)."""

    name: str = "multifactor"
    max_age: float = SLURM_MAX_AGE
    weight: float = SLURM_WEIGHT

    def keys(self, view) -> np.ndarray:
        q = view.queue
        age = np.minimum((view.now - view.jobs.submit[q]) / self.max_age, 1.0)
        size = 1.0 - view.nodes_needed[q] / view.total_nodes
        return -(self.weight * age + self.weight * size)

    def select(self, view) -> int:
        return int(view.queue[np.argmin(self.keys(view))])


__all__ = ["EXTRA_DESCRIPTIONS", "EXTRA_DYNAMIC", "EXTRA_STATIC", "MultifactorPriority"]
