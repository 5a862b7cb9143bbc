"""The event-driven engine: one decision loop for heuristics, Gym episodes and trained agents.

The engine is stepped, not called back::

    engine = make_engine(jobs, cluster, profile="standard", backfill="easy")   # sim.factory
    while (view := engine.next_decision()) is not None:
        engine.apply(engine.choose(policy, view))   # or the decision a trained agent makes
    result = engine.result()

`next_decision()` runs events until a decision is needed and returns a read-only `DecisionView`;
`apply(decision)` carries out a typed decision (`hpcsched.sim.decisions`: Pick, Start, Reserve, Wait;
a plain row number means Pick). When decisions are asked and what they mean is the *loop* of the
profile, a strategy object the engine holds (`passes.PassLoop`: the textbook pass and HPCsim's;
`commit.CommitLoop`: SchedGym's; `cqsim.CqsimLoop`: CQSim's scheduling instances;
`discrete.DiscreteLoop`: DeepRM's grid). The engine holds the state every loop shares (clock, queue,
running jobs, what is free on the machine) and changes it only through `start_job` and `end_job`.
It knows nothing of the decision maker beyond the `Policy` protocol below.

Rows are 0-based positions in the JobTable the engine was given (usually one window of a trace).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from hpcsched.sim import metrics as metrics_mod
from hpcsched.sim.decisions import Decision, Pick, as_decision
from hpcsched.sim.profiles import Profile
from hpcsched.workload.jobs import JobTable

#: execution mode of every started job (CQSim's categories, the DRAS paper's Table IV): started
#: when picked and fitting, after holding a reservation, or backfilled around a reservation
NOT_STARTED, READY, RESERVED, BACKFILLED = 0, 1, 2, 3
MODE_NAMES = {READY: "ready", RESERVED: "reserved", BACKFILLED: "backfilled"}
NAN = float("nan")


@runtime_checkable
class Policy(Protocol):
    """Anything that decides. `decide(view)` returns a `Decision` (or a row, meaning Pick).

    Older policies have `select(view) -> row` instead; the engine reads that as Pick(row).
    Optional, used by the engine when present:
    - `static_keys(jobs) -> array` (a priority that never changes during a run) or `keys(view) ->
      array` aligned with `view.queue` (one that depends on the clock): smaller goes first. The
      engine keeps its queue in that order (so backfilling scans candidates in it, as a real
      priority scheduler does), and a policy without `decide` picks the first job;
    - `reset(view)`: called with the first decision of a run (per-run state, e.g. counters);
    - `summary() -> dict`: numbers that join the result's metrics at the end of a run;
    - `decides_backfill = True`: under CQSim's loop, the policy is asked for every backfill start
      too (level-2 decisions, `view.level == 2`, among `view.candidates`).
    """

    name: str


class DecisionView:
    """What a policy may look at when it decides. Read-only; valid until the next `apply`.

    Loops add what their decisions need: `level` and `candidates` (CQSim's backfill picks),
    `reserved` (the job holding the reservation), `can_wait` (whether waiting can change anything).
    """

    __slots__ = ("_engine", "now", "free_nodes", "level", "candidates", "reserved", "_queue")

    def __init__(self, engine: "Engine", level: int = 1, candidates: list | None = None,
                 reserved: int | None = None) -> None:
        self._engine = engine
        self.now: float = engine.now
        self.free_nodes: int = engine.res.free_nodes
        self.level = level
        self.candidates: list[int] = candidates if candidates is not None else []
        self.reserved = reserved
        self._queue: np.ndarray | None = None

    @property
    def queue(self) -> np.ndarray:
        """Rows of the waiting jobs, in the engine's current queue order."""
        if self._queue is None:
            q = self._engine.queue
            self._queue = np.fromiter(q, dtype=np.int64, count=len(q))
        return self._queue

    @property
    def running(self) -> np.ndarray:
        """Rows of the running jobs, in the order they started."""
        r = self._engine.running
        return np.fromiter(r, dtype=np.int64, count=len(r))

    @property
    def jobs(self) -> JobTable:
        return self._engine.jobs

    @property
    def nodes_needed(self) -> np.ndarray:
        """Nodes each row of `jobs` needs (int64)."""
        return self._engine.need

    @property
    def total_nodes(self) -> int:
        return self._engine.res.total

    @property
    def start_time(self) -> np.ndarray:
        """Start time of every row so far (NaN for jobs not started). Read-only, no copy."""
        return self._engine.start_array

    @property
    def estimated_end(self) -> np.ndarray:
        """Start + requested time of every started row (0 for the others). Read-only, no copy."""
        return self._engine.est_array

    @property
    def executed(self) -> np.ndarray:
        """Time each row runs (its run time, or its request where the profile kills it there)."""
        return self._engine.executed

    @property
    def can_wait(self) -> bool:
        """Whether letting time pass can change anything: a job is running or one is to arrive."""
        e = self._engine
        return bool(e.running) or e.next_arrival < e.n

    @property
    def cluster(self):
        """The cluster (a NodePool or a heterogeneous Cluster; immutable)."""
        return self._engine.cluster

    @property
    def procs_per_node(self) -> int:
        """Processors per node of a pool of identical nodes."""
        return int(self._engine.cluster.procs_per_node)

    @property
    def profile(self) -> str:
        """The name of the profile the engine runs under."""
        return self._engine.profile.name

    @property
    def profile_loop(self) -> str:
        """The profile's loop: pass, cqsim or discrete (commit semantics: `commit`)."""
        p = self._engine.profile
        return "commit" if p.commit else p.loop

    @property
    def backfill(self) -> str:
        return self._engine.backfill

    @property
    def instances(self) -> int:
        """Scheduling instances (passes) opened so far."""
        return self._engine.instances

    @property
    def free(self) -> np.ndarray | None:
        """(nodes, resources) free now on a heterogeneous cluster (read-only copy); None on a pool."""
        m = getattr(self._engine.res, "free_matrix", None)
        if m is None:
            return None
        out = m.copy()
        out.flags.writeable = False
        return out

    @property
    def node_jobs(self) -> tuple[tuple[int, ...], ...] | None:
        """The rows running on each node of a heterogeneous cluster, in the order they were placed
        there (copies); None on a pool, whose nodes are only counted."""
        tasks = getattr(self._engine.res, "node_tasks", None)
        return None if tasks is None else tuple(map(tuple, tasks))

    def reservation(self, row: int):
        """EASY's reservation for `row` on a heterogeneous cluster, as if it were the head now
        (`sim.backfill_nodes.Reservation`: its `shadow` time, running jobs ending at their
        estimated ends, and which nodes a job running past it may take)."""
        from hpcsched.sim.backfill_nodes import reservation

        if getattr(self._engine.res, "free_matrix", None) is None:
            raise ValueError("reservation() reads named nodes; this engine counts a pool's")
        return reservation(self._engine, int(row))

    def hpcsim_estimate(self, head: int, row: int | None = None, nodes=None) -> float:
        """HPCsim's estimate of `head`'s start, from now (the `count`-th smallest per-node
        estimate; -1: it can never fit), or with `row` started on `nodes` now as well: its
        backfilling keeps a job only if that leaves the estimate unchanged
        (`sim.backfill_nodes.hpcsim_estimate`)."""
        from hpcsched.sim.backfill_nodes import hpcsim_estimate

        if getattr(self._engine.res, "free_matrix", None) is None:
            raise ValueError("hpcsim_estimate() reads named nodes; this engine counts a pool's")
        return hpcsim_estimate(self._engine, int(head), row, nodes)

    def fits(self, rows: np.ndarray) -> np.ndarray:
        """Whether each of `rows` fits on the free resources now."""
        rows = np.asarray(rows, dtype=np.int64)
        return self._engine.res.fits_rows(rows, self._engine.need)


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
    #: the node indices of every row's allocation, in allocation order (None: not started); None
    #: on a pool of identical nodes, where `records()` assigns node ids from the schedule
    allocations: list | None = None
    #: node names of the cluster (hostnames, or n0, n1, ...)
    node_names: tuple[str, ...] = ()
    #: nodes each row took (whole nodes on a pool), for the node column of a pool's records
    need: np.ndarray | None = None

    def records(self) -> dict[str, np.ndarray]:
        """Per-job records as columns (job_id, submit, start, end, wait, run, procs, bsld, ...,
        nodes: the names of the job's nodes, space-separated, in allocation order)."""
        rec = metrics_mod.per_job_records(self.jobs, self.start, self.executed)
        if self.allocations is not None:
            allocs = self.allocations
        elif self.need is not None and self.node_names:
            allocs = metrics_mod.pool_allocations(self.start, self.end, self.need,
                                                  len(self.node_names))
        else:
            return rec
        names = self.node_names
        rec["nodes"] = np.array([" ".join(names[i] for i in a) if a is not None else ""
                                 for a in allocs], dtype=object)
        return rec


class Engine:
    """The state every loop shares, and the stepped API. Build one with `sim.factory.make_engine`.

    State (read by loops and backfilling; policies and envs see it through `DecisionView`):
    `now`, `queue` (waiting rows, in queue order), `running` (rows, insertion-ordered dict),
    `start` (per row, NaN until started), `est` (estimated end = start + request), `res` (what is
    free: a `PoolState` or `NodeState`), `mode` (per row), `need` (nodes per row), `executed`.
    """

    def __init__(self, jobs: JobTable, res, profile: Profile, backfill: str, need: np.ndarray,
                 executed: np.ndarray, *, cluster=None) -> None:
        self.jobs = jobs
        self.cluster = cluster
        self.res = res
        self.profile = profile
        self.backfill = backfill
        self.n = len(jobs)
        need = np.asarray(need, dtype=np.int64)
        need.flags.writeable = False
        self.need = need
        executed.flags.writeable = False
        self.executed = executed
        self.killed = int(np.count_nonzero(executed < jobs.run_time))
        # Python lists: the event loop reads single elements, which lists do far faster than arrays.
        self.submit_list: list[float] = jobs.submit.tolist()
        self.req_list: list[float] = jobs.req_time.tolist()
        self.exec_list: list[float] = executed.tolist()
        self.need_list: list[int] = need.tolist()
        self.start: list[float] = [NAN] * self.n  # NaN until started (a start may be negative)
        self.est: list[float] = [0.0] * self.n
        # the same start times as an array (NaN = not started), for vectorised readers
        self._start_array = np.full(self.n, np.nan)
        self.start_array = self._start_array.view()
        self.start_array.flags.writeable = False
        self._est_array = np.zeros(self.n)
        self.est_array = self._est_array.view()
        self.est_array.flags.writeable = False
        self.mode = np.zeros(self.n, dtype=np.int8)
        self.now: float = self.submit_list[0]
        self.queue: list[int] = []
        self.running: dict[int, None] = {}
        self.next_arrival = 0  # first row not yet arrived
        self.done = False
        self.decisions = 0
        self.started = 0
        self.instances = 0
        self._ranked_for: object = None
        self._rank: list = []
        self._reset_policy: object = None
        #: (row, time) of every reservation made, for checking and explaining schedules: EASY's
        #: (the shadow time of each head that did not fit) and conservative backfilling's (each
        #: job's first reservation, where it is later than the pass that gave it)
        self.reservations: list[tuple[int, float]] = []
        self.loop = None  # set by the factory

    # -- the stepped API ---------------------------------------------------------------------------
    def next_decision(self) -> DecisionView | None:
        """Run events until a decision is needed; None at the end of the run."""
        view = self.loop.next_decision()
        if view is None:
            self.done = True
        return view

    def apply(self, decision: Decision | int) -> None:
        """Carry out a decision (a plain row number means Pick(row))."""
        if self.done:
            raise RuntimeError("apply() after the end of the run")
        self.loop.apply(as_decision(decision))

    def view(self) -> DecisionView:
        """A read-only view of the state now, between decisions (e.g. to score the last one)."""
        return DecisionView(self)

    # -- policies ----------------------------------------------------------------------------------
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
        self.loop.queue_reordered()
        return self.queue[0]

    def _sort_queue_static(self, rank: list) -> int:
        self.queue.sort(key=rank.__getitem__)
        self.loop.queue_reordered()
        return self.queue[0]

    def static_rank(self, keys: np.ndarray) -> list:
        """Sort keys for list.sort from a static key per row. Under the textbook profile ties are
        broken by row, so the rank is a total order; otherwise equal keys stay equal (stable sort)."""
        keys = np.asarray(keys, dtype=np.float64)
        if self.profile.commit:
            return keys.tolist()
        rank = np.empty(self.n, dtype=np.int64)
        rank[np.lexsort((np.arange(self.n), keys))] = np.arange(self.n)
        return rank.tolist()

    def rank(self, policy) -> int | None:
        """Order the queue by `policy`'s priority (if it has one) and return the first row."""
        static = getattr(policy, "static_keys", None)
        if static is not None:
            if self._ranked_for is not policy:
                self._rank = self.static_rank(static(self.jobs))
                self._ranked_for = policy
            return self._sort_queue_static(self._rank)
        keys = getattr(policy, "keys", None)
        if keys is not None:
            return self.sort_queue(keys(DecisionView(self)))
        return None

    def choose(self, policy, view: DecisionView) -> Decision | int:
        """What `policy` decides now. A priority policy first ranks the whole queue (stably), so
        that backfilling scans candidates in its order, as a real priority scheduler does; a policy
        that only picks (a trained agent) leaves the queue in arrival order."""
        if self._reset_policy is not policy:
            self._reset_policy = policy
            reset = getattr(policy, "reset", None)
            if reset is not None:
                reset(view)
        head = self.rank(policy)
        decide = getattr(policy, "decide", None)
        if decide is not None:
            if head is not None:
                view = DecisionView(self, view.level, view.candidates, view.reserved)
            return decide(view)
        if head is not None and view.level == 1:
            return head
        return policy.select(view)

    def run(self, policy, *, compiled: bool = True) -> Result:
        """Run to the end with `policy` deciding, and return the result. A policy's `summary()`
        (its rejections, say) joins the result's metrics.

        Where the loop has a compiled version for this case (`sim.kernels`: the textbook pass with
        a static priority; `sim.kernels_nodes`: the same on heterogeneous nodes), it runs the
        whole table in one call and gives the same schedule; `compiled=False` always steps the
        Python loop (the reference the compiled loops are tested against)."""
        if getattr(policy, "decides_backfill", False):
            if not hasattr(self.loop, "agent_backfill"):
                raise ValueError(f"{getattr(policy, 'name', policy)} decides backfill starts "
                                 f"(level 2 of the cqsim loop): run it under the dras or cqsim "
                                 f"profile, not {self.profile.name}")
            self.loop.agent_backfill = True
        fast = getattr(self.loop, "run_fast", None) if compiled else None
        if fast is not None and fast(policy):
            pass
        else:
            while (view := self.next_decision()) is not None:
                self.apply(self.choose(policy, view))
        result = self.result(getattr(policy, "name", type(policy).__name__))
        summary = getattr(policy, "summary", None)
        if summary is not None:
            result.metrics.update(summary())
        return result

    # -- what loops call ---------------------------------------------------------------------------
    def arrive_until(self, t: float) -> range:
        """Rows submitted by `t` that have not arrived yet (they arrive now, in row order)."""
        first = self.next_arrival
        submit, n = self.submit_list, self.n
        i = first
        while i < n and submit[i] <= t:
            i += 1
        self.next_arrival = i
        return range(first, i)

    def start_job(self, row: int, nodes=None, mode: int = READY):
        """Start `row` now (on `nodes`, or where the allocator puts it). Returns its allocation
        (None on a pool)."""
        chosen = self.res.take(row, nodes)
        now = self.now
        self.started += 1
        self.start[row] = now
        self._start_array[row] = now
        est = now + self.req_list[row]
        self.est[row] = est
        self._est_array[row] = est
        self.running[row] = None
        self.mode[row] = mode
        return chosen

    def end_job(self, row: int) -> None:
        """`row` finishes now: its resources are free again."""
        del self.running[row]
        self.res.give(row)

    def record_run(self, start: np.ndarray, *, allocations: list | None = None,
                   modes: np.ndarray | None = None, decisions: int = 0,
                   reservations: list[tuple[int, float]] | None = None) -> None:
        """Take a whole run computed elsewhere (a compiled loop with the same semantics, see
        `Engine.run`): every row's start time (all rows started), and, on a heterogeneous cluster,
        its nodes. The engine is then at the end of the run, as if it had stepped through it."""
        start = np.asarray(start, dtype=np.float64)
        if start.shape != (self.n,) or not np.all(np.isfinite(start)):
            raise ValueError("record_run needs a start time for every row")
        self.start = start.tolist()
        self._start_array[:] = start
        est = start + self.jobs.req_time
        self.est = est.tolist()
        self._est_array[:] = est
        if modes is not None:
            self.mode[:] = modes
        else:
            self.mode[:] = READY
        self.started = self.n
        self.decisions = int(decisions)
        self.reservations = list(reservations or [])
        self.now = float(np.max(start + self.executed)) if self.profile.end == "last_finish" \
            else float(np.max(start))
        self.next_arrival = self.n
        self.queue = []
        self.running = {}
        self.res.clear()
        if allocations is not None:
            self.res.alloc_log = list(allocations)
        self.done = True

    def check_waiting(self, row: int) -> None:
        if row < 0 or row >= self.next_arrival or self.start[row] == self.start[row]:
            raise ValueError(f"row {row} is not waiting in the queue")

    # -- results -----------------------------------------------------------------------------------
    def result(self, policy: str = "") -> Result:
        start = np.asarray(self.start, dtype=np.float64)
        end = start + self.executed
        m = metrics_mod.schedule_metrics(
            self.jobs,
            start,
            self.executed,
            total_procs=self.total_procs,
            utilization=self.profile.utilization,
            end_clock=self.now,
        )
        m["decisions"] = self.decisions
        counts = {"killed_at_request": self.killed} if self.profile.kill_at_request else {}
        allocations = None
        names: tuple[str, ...] = ()
        res = self.res
        if hasattr(res, "alloc_log"):
            allocations = res.alloc_log
            names = tuple(self.cluster.names)
            m.update(metrics_mod.resource_utilization(start, self.executed, res.count,
                                                      res.demand, res.capacity,
                                                      self.cluster.resources, allocations,
                                                      float(self.jobs.submit[0]),
                                                      exclusive=res.exclusive))
        else:
            names = tuple(f"n{i}" for i in range(res.total))
        result = Result(self.jobs, start, end, self.executed, m, self.profile.name, self.backfill,
                        policy, counts, allocations=allocations, node_names=names,
                        need=self.need)
        self.loop.finish(result)
        return result

    @property
    def total_procs(self) -> int:
        c = self.cluster
        return int(c.total_procs) if hasattr(c, "total_procs") else int(c.total[0])

    @property
    def free_nodes(self) -> int:
        return self.res.free_nodes


__all__ = ["BACKFILLED", "DecisionView", "Engine", "MODE_NAMES", "NOT_STARTED", "Pick", "Policy",
           "READY", "RESERVED", "Result"]
