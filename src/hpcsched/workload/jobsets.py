"""The jobsets a training run plays, cut or drawn from a trace (DRAS's data, spec dras.md 7.3-7.4):
its consecutive periods by days (`split`: training, validation, test), jobs sampled from a period
and re-timed as a Poisson process, runs of consecutive jobs spread over a period, and a curriculum
of such phases. A curriculum spec like "sampled:4,real:4,synthetic:12" gives the phases, in order,
and their jobset counts: "sampled" (`sampled_jobset`), "real" (`real_jobsets`) and "synthetic"
(the Lublin-Feitelson model fitted to the period, `lublin.fitted`); "real:20" is DRAS's real-only
ablation.
"""

from __future__ import annotations

import numpy as np

from hpcsched.workload import lublin
from hpcsched.workload.jobs import JobTable

PHASES = ("sampled", "real", "synthetic")
DAY = 86400.0


def parse_curriculum(spec: str) -> list[tuple[str, int]]:
    """"sampled:4,real:4,synthetic:12" -> [("sampled", 4), ...], checked."""
    phases = []
    for part in spec.split(","):
        name, _, count = part.strip().partition(":")
        if name not in PHASES or not count.isdigit() or int(count) <= 0:
            raise ValueError(f"curriculum {spec!r}: each part is PHASE:COUNT with PHASE one of "
                             f"{', '.join(PHASES)} and COUNT > 0 (got {part!r})")
        phases.append((name, int(count)))
    return phases


def split(jobs: JobTable, train_days: float, validate_days: float,
          test_days: float) -> tuple[JobTable, JobTable, JobTable]:
    """Consecutive periods (days from the first submission): train, validate, test."""
    t = (jobs.submit - jobs.submit[0]) / DAY
    a, b, c = train_days, train_days + validate_days, train_days + validate_days + test_days
    parts = (jobs.take(t < a), jobs.take((t >= a) & (t < b)), jobs.take((t >= b) & (t < c)))
    for name, part in zip(("training", "validation", "test"), parts):
        if len(part) == 0:
            raise ValueError(f"{jobs.header.name or 'the trace'}: the {name} period has no job "
                             f"(split {train_days}/{validate_days}/{test_days} days; the trace "
                             f"spans {t[-1]:.1f} days)")
    return parts


def first_days(jobs: JobTable, days: float) -> JobTable:
    t = (jobs.submit - jobs.submit[0]) / DAY
    return jobs.take(t < days)


def sampled_jobset(train: JobTable, n: int, rng: np.random.Generator) -> JobTable:
    """n jobs drawn from the training period, arrivals re-timed as a Poisson process with the
    period's mean inter-arrival time."""
    n = min(n, len(train))
    rows = np.sort(rng.choice(len(train), n, replace=False))
    gap = (train.submit[-1] - train.submit[0]) / max(len(train) - 1, 1)
    submit = train.submit[0] + np.cumsum(rng.exponential(gap, n))
    return train.take(rows).with_columns(submit=submit)


def real_jobsets(train: JobTable, n: int, count: int) -> list[JobTable]:
    """`count` runs of n consecutive jobs, their starts spread evenly over the training period."""
    n = min(n, len(train))
    starts = np.linspace(0, len(train) - n, count).astype(int)
    return [train.window(int(s), n) for s in starts]


def curriculum(spec: str, train: JobTable, n: int, seed: int, nodes: int,
               procs_per_node: int = 1) -> list[tuple[str, JobTable]]:
    """Every (phase, jobset) of the curriculum `spec`, in order: jobsets of n jobs from the
    training period `train` of a machine of `nodes` nodes, drawn with the generator of `seed`."""
    rng = np.random.default_rng(seed)
    out = []
    for phase, count in parse_curriculum(spec):
        if phase == "real":
            out += [("real", j) for j in real_jobsets(train, n, count)]
            continue
        for _ in range(count):
            if phase == "sampled":
                jobs = sampled_jobset(train, n, rng)
            else:
                jobs = lublin.fitted(train, nodes, n, seed=int(rng.integers(2**31)),
                                     procs_per_node=procs_per_node)
            out.append((phase, jobs))
    return out


__all__ = ["DAY", "PHASES", "curriculum", "first_days", "parse_curriculum", "real_jobsets",
           "sampled_jobset", "split"]
