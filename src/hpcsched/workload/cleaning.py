"""Cleaning rules: how a raw trace becomes the table a profile simulates.

Real logs hold unknown values (-1), zero run times and odd requests; every published simulator
dealt with them in its own way. Each profile names its way here, and `clean` returns, with the new
table, a `CleaningReport` that counts every row dropped and every value changed, so that nothing
changes without a trace in the run's summary.

``"rlscheduler"``: SchedGym's loader, exactly (RLScheduler, SC'20; spec section 2.2), which keeps
an unknown submit time (-1): such a job is scheduled from that time and reported like any other:

1. procs = max(alloc_procs, req_procs);
2. a requested time of -1 becomes the job's raw run time (before step 3, so a job whose run time
   is also unknown keeps a request of -1);
3. a negative run time becomes 10 s;
4. jobs with a run time of 0 are dropped;
5. the jobs are sorted by job id (a stable sort).

``"schedinspector"``: SchedInspector's loader, exactly (its code's `job.py`; spec schedinspector.md
section 2):

1. procs = max(alloc_procs, req_procs);
2. a negative (unknown) run time becomes 10 s;
3. every requested time becomes the job's run time (after step 2): perfect estimates;
4. nothing is dropped: jobs with a run time of 0 are kept (SchedGym drops them);
5. the jobs are sorted by job id (a stable sort).

``"standard"``: the textbook default of this package:

1. procs = max(alloc_procs, req_procs);
2. jobs are dropped when their processor count is unknown (procs <= 0), when their run time is
   unknown (< 0) or when it is 0, or when their submit time is unknown (SWF's -1, or any negative
   time), counted under the first of these reasons that applies;
3. a requested time that is unknown or not positive (<= 0) becomes the run time;
4. the jobs are sorted by submit time (a stable sort, so ties keep the file's order).

``"cqsim"``: CQSim's SWF filter exactly (`Filter_job_SWF.input_check` of SPEAR-UIC/CQSim), which
reads each field with Python's ``int()``, so every comparison is between whole seconds (values
truncated toward zero):

1. procs = the requested processors (SWF field 8) only: CQSim never reads the allocated count;
2. a run time longer than the request, compared in whole seconds, becomes the request;
3. jobs are dropped when their id is not positive, their submit time is negative, their (clamped)
   run time is not positive, their requested time is not positive or their requested processors
   are not positive, in this order, each counted under the first reason that applies;
4. the jobs are sorted by submit time (a stable sort; CQSim reads them in file order, which is
   the same order for a trace already in submit order, as the archive's are).

``"dras"``: CQSim's SWF filter as this package first read it for DRAS (IPDPS'21; spec dras.md
section 2.2), kept for the shipped DRAS models that were trained on it:

1. procs = max(alloc_procs, req_procs);
2. jobs are dropped when their id is not positive, their submit time is negative, their run time
   is not positive, their requested time is not positive or their processor count is not
   positive, counted under the first of these reasons that applies;
3. a run time longer than the request is clamped to the request (CQSim kills the job there);
4. the jobs are sorted by submit time (a stable sort).

``"hpcsim"``: HPCsim's (the thesis's simulator), whose reader (`hpcsched.workload.slurm`) has already
applied its own rules to its traces: as ``standard``, except that jobs with a run time of 0 are kept
(HPCsim runs them: they end where they start).

A request shorter than the run time is kept under the first two rules: under ``standard`` the engine kills
such a job at its request and counts it itself; SchedGym lets it run to its logged run time.

Every rule reports the same normalisation constants (`CleaningReport.norm`), which RLScheduler's
observation divides by. They are taken from the raw table, over every row including the dropped
ones, and start from 0 as SchedGym's do: ``max_run_time``, ``max_req_mem``, ``max_user``,
``max_group`` and ``max_executable`` are the maxima of the raw columns; ``max_procs`` is the
header's MaxProcs, or MaxNodes when MaxProcs is absent (or, for a table without either, the largest
job).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from hpcsched.workload.jobs import PROCS, JobTable

RULES: tuple[str, ...] = ("rlscheduler", "schedinspector", "standard", "cqsim", "dras", "hpcsim")

# what the report calls each rule
PROCS_RULE = "procs = max(allocated, requested)"
REQ_PROCS_RULE = "procs = requested"
REQ_TIME_RULE = "requested time unknown -> run time"
PERFECT_RULE = "requested time -> run time (perfect estimates)"
NEG_RUN_RULE = "run time unknown -> 10 s"
SORT_BY_ID = "reordered by job id"
SORT_BY_SUBMIT = "reordered by submit time"
DROP_PROCS = "processors unknown"
DROP_RUN_UNKNOWN = "run time unknown"
DROP_RUN_ZERO = "run time 0"
DROP_SUBMIT_UNKNOWN = "submit time unknown"
DROP_ID = "job id not positive"
DROP_SUBMIT = "submit time negative"
DROP_RUN_NOT_POSITIVE = "run time not positive"
DROP_REQ = "requested time not positive"
DROP_REQ_PROCS = "requested processors not positive"
CLAMP_RULE = "run time clamped to the request"


@dataclass(frozen=True)
class CleaningReport:
    """What cleaning did to a table: rows kept and dropped, values changed, normalisation constants.

    `dropped` maps a reason to the number of rows dropped for it and `changed` a rule to the number
    of kept rows it changed (a reordering counts the rows that moved); rules that did nothing are
    left out of both.
    """

    rules: str
    rows_read: int
    rows_kept: int
    dropped: dict[str, int] = field(default_factory=dict)
    changed: dict[str, int] = field(default_factory=dict)
    norm: dict[str, float] = field(default_factory=dict)

    def summary(self) -> str:
        """One line for a human, e.g. "10000 jobs read, 10000 kept; requested time unknown -> run
        time: 10000"."""
        parts = [f"{self.rows_read} jobs read, {self.rows_kept} kept"]
        parts += [f"dropped, {reason}: {n}" for reason, n in self.dropped.items()]
        parts += [f"{rule}: {n}" for rule, n in self.changed.items()]
        return "; ".join(parts)


def clean(jobs: JobTable, rules: str) -> tuple[JobTable, CleaningReport]:
    """Apply the cleaning `rules` (one of `RULES`) to a raw table."""
    if rules not in _CLEANERS:
        raise ValueError(f"unknown cleaning rules {rules!r}; valid: {', '.join(RULES)}")
    return _CLEANERS[rules](jobs)


def norm_constants(jobs: JobTable) -> dict[str, float]:
    """RLScheduler's normalisation constants of a raw table (see the module docstring)."""

    def col_max(name: str) -> float:
        col = jobs[name]
        return float(max(0.0, col.max())) if len(col) else 0.0

    h = jobs.header
    if h.max_procs:
        max_procs = float(h.max_procs)
    elif h.max_nodes:
        max_procs = float(h.max_nodes)
    else:
        max_procs = col_max(PROCS)
    return {
        "max_run_time": col_max("run_time"),
        "max_procs": max_procs,
        "max_req_mem": col_max("req_mem"),
        "max_user": col_max("user"),
        "max_group": col_max("group"),
        "max_executable": col_max("executable"),
    }


class _Log:
    """Counts kept while cleaning; only non-zero counts reach the report."""

    def __init__(self) -> None:
        self.dropped: dict[str, int] = {}
        self.changed: dict[str, int] = {}

    def drop(self, reason: str, mask: np.ndarray) -> None:
        n = int(np.count_nonzero(mask))
        if n:
            self.dropped[reason] = self.dropped.get(reason, 0) + n

    def change(self, rule: str, mask: np.ndarray) -> None:
        n = int(np.count_nonzero(mask))
        if n:
            self.changed[rule] = self.changed.get(rule, 0) + n


def _sort(table: JobTable, key: np.ndarray, rule: str, log: _Log) -> JobTable:
    order = np.argsort(key, kind="stable")
    moved = order != np.arange(len(order))
    log.change(rule, moved)
    return table.take(order) if moved.any() else table


def _clean_rlscheduler(jobs: JobTable) -> tuple[JobTable, CleaningReport]:
    log = _Log()
    raw_run = jobs.run_time
    # a negative run time becomes 10 s, so only a run time of exactly 0 is dropped
    keep = raw_run != 0
    log.drop(DROP_RUN_ZERO, ~keep)

    procs = np.maximum(jobs.alloc_procs, jobs.req_procs)
    log.change(PROCS_RULE, keep & (procs != jobs.procs))
    unknown_req = jobs.req_time == -1
    log.change(REQ_TIME_RULE, keep & unknown_req)
    req_time = np.where(unknown_req, raw_run, jobs.req_time)  # the raw run time, -1 included
    negative = raw_run < 0
    log.change(NEG_RUN_RULE, keep & negative)
    run_time = np.where(negative, 10.0, raw_run)

    table = jobs.with_columns(procs=procs, req_time=req_time, run_time=run_time).take(keep)
    table = _sort(table, table.job_id, SORT_BY_ID, log)
    return table, _report("rlscheduler", jobs, table, log)


def _clean_schedinspector(jobs: JobTable) -> tuple[JobTable, CleaningReport]:
    log = _Log()
    procs = np.maximum(jobs.alloc_procs, jobs.req_procs)
    log.change(PROCS_RULE, procs != jobs.procs)
    # SWF's only negative run time is -1 (unknown), which the loader reads as 10 s
    negative = jobs.run_time < 0
    log.change(NEG_RUN_RULE, negative)
    run_time = np.where(negative, 10.0, jobs.run_time)
    log.change(PERFECT_RULE, jobs.req_time != run_time)
    table = jobs.with_columns(procs=procs, req_time=run_time.copy(), run_time=run_time)
    table = _sort(table, table.job_id, SORT_BY_ID, log)
    return table, _report("schedinspector", jobs, table, log)


def _clean_standard(jobs: JobTable, rules: str = "standard") -> tuple[JobTable, CleaningReport]:
    log = _Log()
    procs = np.maximum(jobs.alloc_procs, jobs.req_procs)
    run_time = jobs.run_time
    # each dropped row is counted once, under the first reason that applies
    no_procs = procs <= 0
    no_run = ~no_procs & (run_time < 0)
    zero_run = ~no_procs & (run_time == 0) & (rules != "hpcsim")
    no_submit = ~(no_procs | no_run | zero_run) & (jobs.submit < 0)
    log.drop(DROP_PROCS, no_procs)
    log.drop(DROP_RUN_UNKNOWN, no_run)
    log.drop(DROP_RUN_ZERO, zero_run)
    log.drop(DROP_SUBMIT_UNKNOWN, no_submit)
    keep = ~(no_procs | no_run | zero_run | no_submit)

    log.change(PROCS_RULE, keep & (procs != jobs.procs))
    unknown_req = jobs.req_time <= 0
    log.change(REQ_TIME_RULE, keep & unknown_req)
    req_time = np.where(unknown_req, run_time, jobs.req_time)

    table = jobs.with_columns(procs=procs, req_time=req_time).take(keep)
    table = _sort(table, table.submit, SORT_BY_SUBMIT, log)
    return table, _report(rules, jobs, table, log)


def _clean_cqsim(jobs: JobTable) -> tuple[JobTable, CleaningReport]:
    log = _Log()
    whole = np.trunc  # CQSim's int(): toward zero
    procs = jobs.req_procs
    over = whole(jobs.run_time) > whole(jobs.req_time)
    run_time = np.where(over, jobs.req_time, jobs.run_time)
    dropped = np.zeros(len(jobs), dtype=bool)
    # input_check's order: the clamp first, then each test; a row counts under its first reason
    for reason, bad in ((DROP_ID, whole(jobs.job_id) <= 0), (DROP_SUBMIT, whole(jobs.submit) < 0),
                        (DROP_RUN_NOT_POSITIVE, whole(run_time) <= 0),
                        (DROP_REQ, whole(jobs.req_time) <= 0),
                        (DROP_REQ_PROCS, whole(procs) <= 0)):
        log.drop(reason, bad & ~dropped)
        dropped |= bad
    keep = ~dropped
    log.change(REQ_PROCS_RULE, keep & (procs != jobs.procs))
    log.change(CLAMP_RULE, keep & over)
    table = jobs.with_columns(procs=procs, run_time=run_time).take(keep)
    table = _sort(table, table.submit, SORT_BY_SUBMIT, log)
    return table, _report("cqsim", jobs, table, log)


def _clean_dras(jobs: JobTable) -> tuple[JobTable, CleaningReport]:
    log = _Log()
    procs = np.maximum(jobs.alloc_procs, jobs.req_procs)
    dropped = np.zeros(len(jobs), dtype=bool)
    # each dropped row is counted once, under the first reason that applies
    for reason, bad in ((DROP_ID, jobs.job_id <= 0), (DROP_SUBMIT, jobs.submit < 0),
                        (DROP_RUN_NOT_POSITIVE, jobs.run_time <= 0),
                        (DROP_REQ, jobs.req_time <= 0), (DROP_PROCS, procs <= 0)):
        log.drop(reason, bad & ~dropped)
        dropped |= bad
    keep = ~dropped
    log.change(PROCS_RULE, keep & (procs != jobs.procs))
    over = jobs.run_time > jobs.req_time
    log.change(CLAMP_RULE, keep & over)
    run_time = np.where(over, jobs.req_time, jobs.run_time)
    table = jobs.with_columns(procs=procs, run_time=run_time).take(keep)
    table = _sort(table, table.submit, SORT_BY_SUBMIT, log)
    return table, _report("dras", jobs, table, log)


def _report(rules: str, raw: JobTable, kept: JobTable, log: _Log) -> CleaningReport:
    return CleaningReport(
        rules=rules,
        rows_read=len(raw),
        rows_kept=len(kept),
        dropped=log.dropped,
        changed=log.changed,
        norm=norm_constants(raw),
    )


_CLEANERS = {"rlscheduler": _clean_rlscheduler, "schedinspector": _clean_schedinspector,
             "standard": _clean_standard, "cqsim": _clean_cqsim, "dras": _clean_dras,
             "hpcsim": lambda jobs: _clean_standard(jobs, "hpcsim")}

__all__ = ["CleaningReport", "RULES", "clean", "norm_constants"]
