"""Schedule metrics, computed from every job's start time and the time it actually ran.

Per job, with wait w = start - submit and executed time e:
- turnaround (response time) = w + e
- slowdown = (w + e) / e (e is at least 1 s, so that a zero-length job stays finite)
- bounded slowdown (bsld) = max((w + e) / max(e, 10 s), 1)

Utilization has two definitions, chosen by the profile:
- "makespan": the executed processor-seconds over (last end - first submit) x total processors;
- "last_start": SchedGym's, sum(e * procs) over (clock at the end of the episode, i.e. the last
  start, - first submit) x total processors. Its numerator counts work done after the episode ended,
  so it can exceed the true utilization.

Queue metrics (Wang's thesis Ch. 3 compares schedulers on them), time averages over the span the
utilization is divided by (a job waits from its submit to its start):
- `queue_length`: the time-averaged number of waiting jobs, sum(w) / span;
- `job_load`: the time-averaged requested work waiting in the queue, sum over waiting jobs of
  processors x requested time, in seconds of the whole machine: sum(n * r * w) / (span x total
  processors). The thesis does not say how it scales the "average job load" (spec thesis_ch2_3_4.md
  section 9 item 10); ours reads "how long the whole cluster would need to run what waits".
`interval_metrics` gives the same quantities for a schedule cut at a time (an episode that ends
when a number of jobs have started, with jobs still waiting and running).

Fairness: each user's mean bounded slowdown; `max_user_bsld` is the largest of them (RLScheduler's
"Maximal" aggregator) and `jain_user_bsld` is Jain's index of them (1 = perfectly even).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hpcsched.workload.jobs import JobTable

BSLD_THRESHOLD = 10.0

#: the keys every metrics dict holds, in the order tables print them
METRIC_KEYS = (
    "jobs", "first_job_id", "last_job_id", "bsld", "max_bsld", "wait", "max_wait", "turnaround",
    "slowdown", "utilization", "makespan", "max_user_bsld", "jain_user_bsld",
)
#: Wang's thesis Ch. 3 queue metrics: every metrics dict holds them too (not in METRIC_KEYS, so
#: that training logs keep their columns); comparisons average them where every run has them
QUEUE_KEYS = ("queue_length", "job_load")


def bounded_slowdown(wait: np.ndarray, executed: np.ndarray,
                     threshold: float = BSLD_THRESHOLD) -> np.ndarray:
    return np.maximum((wait + executed) / np.maximum(executed, threshold), 1.0)


def slowdown(wait: np.ndarray, executed: np.ndarray) -> np.ndarray:
    return (wait + executed) / np.maximum(executed, 1.0)


def per_user_mean(values: np.ndarray, users: np.ndarray) -> np.ndarray:
    """Mean of `values` per distinct user id (unknown ids, -1, form one group)."""
    _, inverse = np.unique(users, return_inverse=True)
    sums = np.bincount(inverse, weights=values)
    counts = np.bincount(inverse)
    return sums / counts


def jain_index(x: np.ndarray) -> float:
    x = np.asarray(x, dtype=np.float64)
    denom = x.size * float(np.sum(x * x))
    return float(np.sum(x)) ** 2 / denom if denom > 0 else 1.0


def schedule_metrics(
    jobs: JobTable,
    start: np.ndarray,
    executed: np.ndarray,
    *,
    total_procs: int,
    utilization: str = "makespan",
    end_clock: float | None = None,
) -> dict[str, Any]:
    """The metrics of one schedule of `jobs` (jobs never started are left out and counted)."""
    started = np.isfinite(start)
    m: dict[str, Any] = {
        "jobs": int(np.count_nonzero(started)),
        "first_job_id": int(jobs.job_id[0]),
        "last_job_id": int(jobs.job_id[-1]),
    }
    if not started.all():
        m["unstarted"] = int(np.count_nonzero(~started))
    submit = jobs.submit[started]
    e = executed[started]
    w = start[started] - submit
    procs = jobs.procs[started]
    bsld = bounded_slowdown(w, e)
    first_submit = float(jobs.submit[0])
    last_end = float(np.max(start[started] + e)) if m["jobs"] else first_submit
    area = float(np.sum(e * procs))
    if utilization == "last_start":
        clock = end_clock if end_clock is not None else float(np.max(start[started]))
        span = clock - first_submit
    elif utilization == "makespan":
        span = last_end - first_submit
    else:
        raise ValueError(f"unknown utilization definition {utilization!r}")
    user_bsld = per_user_mean(bsld, jobs.user[started]) if m["jobs"] else np.ones(1)
    req = jobs.req_time[started]
    m.update(
        bsld=float(np.mean(bsld)),
        max_bsld=float(np.max(bsld)),
        wait=float(np.mean(w)),
        max_wait=float(np.max(w)),
        turnaround=float(np.mean(w + e)),
        slowdown=float(np.mean(slowdown(w, e))),
        utilization=area / (span * total_procs) if span > 0 else 0.0,
        makespan=last_end - first_submit,
        max_user_bsld=float(np.max(user_bsld)),
        jain_user_bsld=jain_index(user_bsld),
        queue_length=float(np.sum(w)) / span if span > 0 else 0.0,
        job_load=float(np.sum(procs * req * w)) / (span * total_procs) if span > 0 else 0.0,
    )
    return m


def interval_waits(submit: np.ndarray, start: np.ndarray, t0: float,
                   t1: float) -> tuple[np.ndarray, np.ndarray]:
    """(begun, waited): which jobs started by t1, and how long each waited inside [t0, t1] (a job
    not started by t1, start NaN or later, waits until t1)."""
    start = np.asarray(start, dtype=np.float64)
    begun = np.isfinite(start) & (start <= t1)
    until = np.where(begun, start, t1)  # when each job stops waiting, as seen from [t0, t1]
    return begun, np.clip(np.minimum(until, t1) - np.maximum(submit, t0), 0.0, None)


def interval_metrics(
    jobs: JobTable,
    start: np.ndarray,
    executed: np.ndarray,
    *,
    total_procs: int,
    t0: float,
    t1: float,
) -> dict[str, float]:
    """Metrics of a schedule seen over the interval [t0, t1] only, jobs still waiting or running
    at t1 included (a DBF episode ends when its 1,000th job starts, with more queued):

    - `jobs`: the jobs started in [t0, t1]; `wait` and `bsld`: their mean wait and bounded
      slowdown (bsld with their whole executed time);
    - `utilization`: the processor-seconds run inside [t0, t1] over (t1 - t0) x total processors
      (the time average of the instantaneous utilization);
    - `queue_length` and `job_load`: as in `schedule_metrics`, over [t0, t1]; a job not started
      by t1 (start NaN or later) waits until t1.

    Time averages are 0 over an empty interval."""
    start = np.asarray(start, dtype=np.float64)
    executed = np.asarray(executed, dtype=np.float64)
    submit, procs, req = jobs.submit, jobs.procs, jobs.req_time
    span = float(t1) - float(t0)
    begun, waited = interval_waits(submit, start, t0, t1)
    placed = begun & (start >= t0)
    ran = np.where(begun, np.clip(np.minimum(start + executed, t1) - np.maximum(start, t0),
                                  0.0, None), 0.0)
    w = start[placed] - submit[placed]
    out = {
        "jobs": int(np.count_nonzero(placed)),
        "wait": float(np.mean(w)) if w.size else 0.0,
        "bsld": float(np.mean(bounded_slowdown(w, executed[placed]))) if w.size else 0.0,
        "utilization": 0.0, "queue_length": 0.0, "job_load": 0.0,
    }
    if span > 0:
        out["utilization"] = float(np.sum(procs * ran)) / (span * total_procs)
        out["queue_length"] = float(np.sum(waited)) / span
        out["job_load"] = float(np.sum(procs * req * waited)) / (span * total_procs)
    return out


def per_job_records(jobs: JobTable, start: np.ndarray, executed: np.ndarray) -> dict[str, np.ndarray]:
    """One record per job, as columns, ready for CSV."""
    wait = start - jobs.submit
    return {
        "job_id": jobs.job_id,
        "user": jobs.user,
        "submit": jobs.submit,
        "start": start,
        "end": start + executed,
        "wait": wait,
        "run": executed,
        "req_time": jobs.req_time,
        "procs": jobs.procs,
        "bsld": bounded_slowdown(wait, executed),
        "slowdown": slowdown(wait, executed),
    }


def combined_score(metrics, reference) -> float:
    """Wang's combined score of a run against a reference run (thesis Fig. 4.8):
    S = AWT_ref / AWT + MWT_ref / MWT, from the `wait` and `max_wait` of each. The reference scores
    2; above 2 is better than the reference. A zero wait scores its term as 1 when the reference's
    is zero too, and as infinity otherwise."""
    def term(ref: float, value: float) -> float:
        if value == 0:
            return 1.0 if ref == 0 else float("inf")
        return ref / value

    return term(float(reference["wait"]), float(metrics["wait"])) + \
        term(float(reference["max_wait"]), float(metrics["max_wait"]))


def pool_allocations(start: np.ndarray, end: np.ndarray, need: np.ndarray,
                     nodes: int) -> list:
    """Node ids for a schedule on identical nodes, which only counts them: at every start the
    lowest-numbered free nodes (a job ending at t frees its nodes for one starting at t). Any
    assignment is as good on identical nodes; this one is reproducible."""
    import heapq

    started = np.flatnonzero(np.isfinite(start))
    out: list = [None] * len(start)
    # events in time order: ends before starts at the same instant; starts in row order
    order = sorted([(float(end[r]), 0, int(r)) for r in started] +
                   [(float(start[r]), 1, int(r)) for r in started])
    free = list(range(nodes))
    for _, kind, r in order:
        if kind == 0:
            if out[r] is not None:
                for i in out[r]:
                    heapq.heappush(free, i)
        else:
            k = int(need[r])
            if k > len(free):
                raise ValueError(f"row {r} needs {k} nodes at {start[r]}, {len(free)} are free")
            out[r] = tuple(heapq.heappop(free) for _ in range(k))
    return out


def resource_utilization(start: np.ndarray, executed: np.ndarray, count: np.ndarray,
                         demand: np.ndarray, capacity: np.ndarray, resources, allocations,
                         first_submit: float, exclusive: bool = False) -> dict[str, float]:
    """Per resource (cores, memory, GPUs, ...), `utilization_<resource>`: the resource-seconds
    the jobs used over the cluster's capacity times the makespan (first submit to last end), as
    HPCsim divides its CPU and GPU utilization. Exclusive clusters count whole nodes as used."""
    started = np.flatnonzero(np.isfinite(start))
    out: dict[str, float] = {}
    if started.size == 0:
        return out
    span = float(np.max(start[started] + executed[started]) - first_submit)
    total = capacity.sum(axis=0).astype(np.float64)
    used = np.zeros(capacity.shape[1])
    for r in started.tolist():
        per = capacity[allocations[r]].sum(axis=0) if exclusive else demand[r] * count[r]
        used += per * executed[r]
    for i, name in enumerate(resources):
        out[f"utilization_{name}"] = float(used[i] / (total[i] * span)) if total[i] and span > 0 \
            else 0.0
    return out
