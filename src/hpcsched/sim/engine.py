"""The event-driven engine: one decision loop for heuristics, Gym episodes and trained agents.

The engine is stepped, not called back::

    engine = make_engine(jobs, cluster, profile="standard", backfill="easy")
    while (view := engine.next_decision()) is not None:
        engine.apply(engine.choose(policy, view))   # or the row a trained agent picks
    result = engine.result()

`next_decision()` runs events until a decision is needed and returns a read-only `DecisionView`;
`apply(row)` starts (or commits to) the job in that row of the engine's job table. How a decision is
carried out depends on the profile: see `commit.py` (SchedGym's semantics) and `passes.py` (the
textbook one). The engine knows nothing of the decision maker beyond the `Policy` protocol below.

Rows are 0-based positions in the JobTable the engine was given (usually one window of a trace).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from hpcsched.cluster.pool import ClusterError, NodePool
from hpcsched.sim import metrics as metrics_mod
from hpcsched.sim.profiles import Profile, check_backfill, get_profile
from hpcsched.workload.jobs import JobTable


@runtime_checkable
class Policy(Protocol):
    """Anything that picks the next job. `select` gets a view and returns a row of `view.queue`.

    Optional fast paths an engine uses when present (results are identical to calling `select`):
    `static_keys(jobs) -> array` when the priority of a job never changes during a run, or
    `keys(view) -> array` (aligned with `view.queue`) for priorities that depend on the clock.
    Smaller keys go first.
    """

    name: str

    def select(self, view: "DecisionView") -> int: ...


class DecisionView:
    """What a policy may look at when it decides. Read-only; valid until the next `apply`."""

    __slots__ = ("_engine", "now", "free_nodes")

    def __init__(self, engine: "Engine") -> None:
        self._engine = engine
        self.now: float = engine.now
        self.free_nodes: int = engine.free_nodes

    @property
    def queue(self) -> np.ndarray:
        """Rows of the waiting jobs, in the engine's current queue order."""
        return np.fromiter(self._engine.queue, dtype=np.int64, count=len(self._engine.queue))

    @property
    def running(self) -> np.ndarray:
        """Rows of the running jobs."""
        return np.fromiter(self._engine.running, dtype=np.int64, count=len(self._engine.running))

    @property
    def jobs(self) -> JobTable:
        return self._engine.jobs

    @property
    def nodes_needed(self) -> np.ndarray:
        """Nodes each row of `jobs` needs (int64)."""
        return self._engine.need

    @property
    def total_nodes(self) -> int:
        return self._engine.cluster.nodes

    @property
    def start_time(self) -> np.ndarray:
        """Start time of every row so far (NaN for jobs not started). Read-only, no copy."""
        return self._engine.start_array

    @property
    def executed(self) -> np.ndarray:
        """Time each row runs (its run time, or its request where the profile kills it there)."""
        return self._engine.executed

    def fits(self, rows: np.ndarray) -> np.ndarray:
        """Whether each of `rows` fits in the free nodes now."""
        return self._engine.need[rows] <= self.free_nodes


@dataclass
class Result:
    """A finished (or stopped) run: every job's start and end, and the metrics of the profile."""

    jobs: JobTable
    start: np.ndarray  # start time per row (NaN if never started)
    end: np.ndarray  # end time per row (start + executed time)
    executed: np.ndarray  # time each job actually ran (run time, or its request if killed there)
    metrics: dict[str, Any]
    profile: str
    backfill: str
    policy: str = ""
    counts: dict[str, int] = field(default_factory=dict)  # e.g. jobs killed at their request
    #: execution mode of every row where the loop records one (cqsim: ready, reserved, backfilled)
    modes: np.ndarray | None = None

    def records(self) -> dict[str, np.ndarray]:
        """Per-job records as columns (job_id, submit, start, end, wait, run, procs, bsld, ...)."""
        return metrics_mod.per_job_records(self.jobs, self.start, self.executed)


class Engine:
    """Shared state and bookkeeping of both semantics. Build one with `make_engine`."""

    def __init__(self, jobs: JobTable, cluster: NodePool, profile: Profile, backfill: str) -> None:
        if len(jobs) == 0:
            raise ValueError("nothing to simulate: the job table is empty")
        self.jobs = jobs
        self.cluster = cluster
        self.profile = profile
        self.backfill = check_backfill(backfill)
        self.n = len(jobs)
        need = cluster.nodes_needed(jobs.procs)
        too_big = np.flatnonzero(need > cluster.nodes)
        if too_big.size:
            r = int(too_big[0])
            raise ClusterError(
                f"job {int(jobs.job_id[r])} (line {int(jobs.line[r])}) asks for {int(jobs.procs[r])} "
                f"processors, more than the cluster's {cluster.total_procs}; {too_big.size} such "
                f"job(s) in all (drop them with --drop-oversized)"
            )
        if np.any(need <= 0):
            r = int(np.flatnonzero(need <= 0)[0])
            raise ClusterError(f"job {int(jobs.job_id[r])} asks for no processors")
        self.need = need
        run = jobs.run_time
        req = jobs.req_time
        executed = np.minimum(run, req) if profile.kill_at_request else run.copy()
        executed.flags.writeable = False
        self.executed = executed
        self.killed = int(np.count_nonzero(executed < run))
        # Python lists: the event loop reads single elements, which lists do far faster than arrays.
        self._submit: list[float] = jobs.submit.tolist()
        self._req: list[float] = req.tolist()
        self._exec: list[float] = executed.tolist()
        self._need: list[int] = need.tolist()
        self.start: list[float] = [-1.0] * self.n
        # the same start times as an array (NaN = not started), for vectorised readers
        self._start_array = np.full(self.n, np.nan)
        self.start_array = self._start_array.view()
        self.start_array.flags.writeable = False
        self.now: float = self._submit[0]
        self.free_nodes: int = cluster.nodes
        self.queue: list[int] = []
        self.running: list[int] = []
        self.done = False
        self.decisions = 0
        self.started = 0
        self._ranked_for: object = None
        self._rank: list = []
        #: (row, shadow time) of every EASY reservation made, for checking and explaining schedules
        self.reservations: list[tuple[int, float]] = []

    # -- the stepped API ---------------------------------------------------------------------------
    def next_decision(self) -> DecisionView | None:
        raise NotImplementedError

    def apply(self, row: int) -> None:
        raise NotImplementedError

    # -- helpers for priority policies --------------------------------------------------------------
    def sort_queue(self, keys: np.ndarray) -> int:
        """Reorder the waiting queue by `keys` (aligned with the current queue; smaller first) and
        return the first row. Ties keep the current queue order (a stable sort), as SchedGym's
        in-place `list.sort` does; under the textbook profile ties go to the earlier row."""
        q = self.queue
        keys = np.asarray(keys)
        if self.profile.commit:
            order = np.argsort(keys, kind="stable")
        else:
            order = np.lexsort((np.fromiter(q, np.int64, len(q)), keys))
        self.queue = [q[i] for i in order.tolist()]
        return self.queue[0]

    def _sort_queue_static(self, rank: list) -> int:
        self.queue.sort(key=rank.__getitem__)
        return self.queue[0]

    def _static_rank(self, keys: np.ndarray) -> list:
        """Sort keys for list.sort from a static key per row. Under the textbook profile ties are
        broken by row, so the rank is a total order; otherwise equal keys stay equal (stable sort)."""
        keys = np.asarray(keys, dtype=np.float64)
        if self.profile.commit:
            return keys.tolist()
        rank = np.empty(self.n, dtype=np.int64)
        rank[np.lexsort((np.arange(self.n), keys))] = np.arange(self.n)
        return rank.tolist()

    def choose(self, policy: Policy, view: DecisionView) -> int:
        """The row `policy` picks now. A priority policy first ranks the whole queue (stably), so
        that backfilling scans candidates in its order, as a real priority scheduler does; a policy
        that only picks (a trained agent) leaves the queue in arrival order."""
        static = getattr(policy, "static_keys", None)
        if static is not None:
            if self._ranked_for is not policy:
                self._rank = self._static_rank(static(self.jobs))
                self._ranked_for = policy
            return self._sort_queue_static(self._rank)
        keys = getattr(policy, "keys", None)
        if keys is not None:
            return self.sort_queue(keys(view))
        return policy.select(view)

    def run(self, policy: Policy) -> Result:
        """Run to the end with `policy` deciding, and return the result.

        A policy that also decides when to let time pass without starting a job (SchedInspector's
        inspector) has a `drive(engine) -> dict` method instead: it runs the loop itself, and the
        numbers it returns (its rejections, say) join the result's metrics."""
        drive = getattr(policy, "drive", None)
        if drive is not None:
            extra = drive(self)
        else:
            extra = None
            while (view := self.next_decision()) is not None:
                self.apply(self.choose(policy, view))
        result = self.result(getattr(policy, "name", type(policy).__name__))
        if extra:
            result.metrics.update(extra)
        return result

    # -- bookkeeping shared by both semantics --------------------------------------------------------
    def _start(self, row: int) -> None:
        self.started += 1
        self.start[row] = self.now
        self._start_array[row] = self.now
        self.free_nodes -= self._need[row]
        self.running.append(row)

    def result(self, policy: str = "") -> Result:
        start = np.asarray(self.start, dtype=np.float64)
        start = np.where(start < 0, np.nan, start)
        end = start + self.executed
        m = metrics_mod.schedule_metrics(
            self.jobs,
            start,
            self.executed,
            total_procs=self.cluster.total_procs,
            utilization=self.profile.utilization,
            end_clock=self.now,
        )
        m["decisions"] = self.decisions
        counts = {"killed_at_request": self.killed} if self.profile.kill_at_request else {}
        return Result(self.jobs, start, end, self.executed, m, self.profile.name, self.backfill,
                      policy, counts)


def make_engine(
    jobs: JobTable,
    cluster: NodePool,
    profile: str | Profile = "standard",
    backfill: str = "none",
) -> Engine:
    """An engine for `jobs` (already cleaned under the profile's rules) on `cluster`."""
    prof = get_profile(profile)
    check_backfill(backfill)
    if prof.discrete:
        from hpcsched.sim.discrete import engine_for_trace

        if backfill != "none":
            raise ValueError(f"the {prof.name} profile has no backfilling (got --backfill "
                             f"{backfill}): its scheduler may reserve into the future itself")
        return engine_for_trace(jobs, cluster)
    if prof.commit:
        from hpcsched.sim.commit import CommitEngine

        return CommitEngine(jobs, cluster, prof, backfill)
    if prof.loop == "cqsim":
        from hpcsched.sim.cqsim import CqsimEngine

        return CqsimEngine(jobs, cluster, prof, backfill)
    from hpcsched.sim.passes import PassEngine

    return PassEngine(jobs, cluster, prof, backfill)
