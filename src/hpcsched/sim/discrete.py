"""DeepRM's discrete grid as a loop strategy of the one engine (the `deeprm` profile).

    engine = make_engine(window, cluster, "deeprm")      # a trace window, mapped into the grid
    while (view := engine.next_decision()) is not None:
        engine.apply(engine.choose(policy, view))        # policy.decide(view): Pick(row) or Wait()
    result = engine.result()                             # DeepRM's metrics, the mapping's counts

`DiscreteLoop` holds a `DiscreteBatch` of one environment (the semantics of slots, backlog,
placement and cost are in `hpcsched.sim.discrete_batch`) and keeps the engine's shared state in
step with it: the clock, the queue, the running jobs (through `Engine.start_job` / `end_job` at
the step each job starts and ends) and every start time.

**Rows and grid jobs.** `workload.deeprm.map_trace` turns the engine's JobTable (the window as
given) into grid jobs: a job that can never fit the grid (as long as the window or longer once
quantised, or larger than a resource) is left out and counted (`counts["never_fit"]`); the others,
in arrival order, are grid jobs 0..J-1. `rows[j]` is the JobTable row of grid job j and `job_of[row]` the
grid job of a row (-1: left out). A row left out never arrives and never starts (NaN start in the
`Result`). A synthetic jobset (`grid_engine`) has row j = grid job j.

**Time.** Step s is the instant t0 + s * quantum, t0 the window's first submit: a job submitted at
t is shown at step floor((t - t0) / quantum) + 1, the first step boundary after it, so no job
starts before its submit. `engine.now` and the `Result`'s start and end times are in those
seconds, and a job runs `length * quantum` s (its executed time: what it holds on the grid). A
synthetic jobset runs on a clock of steps (t0 = 0, quantum 1).

**Decisions.**
- `Pick(row)`: the row must be in one of the M slots (a DeepRM policy sees only those). The job
  is placed at the earliest offset from which it fits for its whole length: now, or later (a
  reservation: it starts in mode RESERVED when its step comes). A job that fits nowhere in the
  window ends the step instead, as such a pick does in DeepRM.
- `Wait()`: DeepRM's void, the time step ends. `Wait(until)` is refused (the grid decides at every
  step), and so are `Start` and `Reserve` (not in DeepRM's action set).

An integer given to `Engine.apply` is a row (Pick), as under every profile. DeepRM's own action
indices (0..M-1 a slot, M void), which its policies and its agent compute on batches
(`act(batch)`), become decisions through `view.grid.decision(action)`; `DiscreteBatch.step` takes
them directly, as the env and the trainer step it.
"""

from __future__ import annotations

import heapq

import numpy as np

from hpcsched.cluster.grid import ResourceGrid, earliest_start
from hpcsched.cluster.pool import ClusterError, NodePool
from hpcsched.sim.decisions import Decision, Pick, Wait
from hpcsched.sim.discrete_batch import REWARDS, DiscreteBatch, GridPolicy, run_batch
from hpcsched.sim.engine import READY, RESERVED, DecisionView, Engine
from hpcsched.sim.profiles import get_profile
from hpcsched.workload.deeprm import NEVER, GridJobs
from hpcsched.workload.jobs import JobTable


class GridState:
    """DeepRM's state at a decision, read-only: the loop's batch of one environment through the
    attributes batch policies read, so that `policy.act(view.grid)` runs unchanged (arrays have a
    leading axis of 1 and are read-only views, valid until the next `apply`), and the map from its
    slots to the engine's rows.

    Arrays: `now` (step), `used` (1, T, d) units taken per step ahead, `slot` (1, M) grid job in each
    slot (-1 empty), `slot_length`, `slot_demand`, `offset` (earliest offset of each slot's job,
    -1: fits nowhere), `valid` (offset >= 0), `fit_now` (offset == 0), `idle`, `done`, `head`,
    `arrived`, `accepted`, `order` (the queue), `dropped` (per grid job: found the queue full),
    `start`, `finish` (steps, per grid job). Plain: `grid` (the ResourceGrid), `slots`, `backlog`,
    `queue`, `capacity`, `actions`, `void`, `B` (1), `reward_kind`, `image_shape`; methods
    `images()`, `action_mask()`, `backlog_count()`. `rows`: the engine row of each grid job.
    """

    ARRAYS = frozenset({"now", "used", "slot", "slot_length", "slot_demand", "offset", "valid",
                        "fit_now", "idle", "done", "head", "arrived", "accepted", "order",
                        "dropped", "start", "finish"})
    PLAIN = frozenset({"grid", "slots", "backlog", "queue", "capacity", "actions", "void", "B",
                       "reward_kind", "image_shape", "images", "action_mask", "backlog_count"})

    __slots__ = ("_batch", "rows")

    def __init__(self, batch: DiscreteBatch, rows: np.ndarray) -> None:
        self._batch = batch
        self.rows = rows

    def __getattr__(self, name: str):
        if name in GridState.ARRAYS:
            a = getattr(self._batch, name).view()
            a.flags.writeable = False
            return a
        if name in GridState.PLAIN:
            return getattr(self._batch, name)
        raise AttributeError(f"the grid state has no {name!r}")

    def slot_rows(self) -> np.ndarray:
        """The engine row of each slot's job (M,), -1 for an empty slot."""
        j = self._batch.slot[0]
        return np.where(j >= 0, self.rows[np.maximum(j, 0)], -1)

    def decision(self, action: int) -> Decision:
        """DeepRM's action index as a decision: a slot holding a job -> `Pick(its row)`; void (M),
        or an empty slot (which DeepRM treats as void) -> `Wait()`."""
        b = self._batch
        action = int(action)
        if not 0 <= action <= b.slots:
            raise ValueError(f"action {action} is outside DeepRM's 0..{b.slots} "
                             f"(0..{b.slots - 1} a slot, {b.slots} void)")
        j = int(b.slot[0, action]) if action < b.slots else -1
        return Pick(int(self.rows[j])) if j >= 0 else Wait()


class GridView(DecisionView):
    """A decision of the discrete loop: the engine's view (clock in seconds, queue, running rows,
    `fits`) with `grid`, DeepRM's state (a `GridState`). `free_nodes` and `total_nodes` count the
    units of resource 0 (processors, for a trace)."""

    __slots__ = ("grid",)

    def __init__(self, engine: Engine, grid: GridState) -> None:
        super().__init__(engine)
        self.grid = grid


class GridUnits:
    """The engine's resource state under the discrete loop, read from the batch's occupancy table
    (the truth; `take` and `give` have nothing to book): resource 0's units free now, and whether a
    job fits now for its whole length."""

    exclusive = False

    def __init__(self, batch: DiscreteBatch, job_of: np.ndarray) -> None:
        self.batch = batch
        self.job_of = job_of
        self.total = batch.grid.units

    @property
    def free_nodes(self) -> int:
        return int(self.total - self.batch.used[0, 0, 0])

    def fits(self, row: int) -> bool:
        return bool(self.fits_rows(np.array([row]))[0])

    def fits_rows(self, rows: np.ndarray, need: np.ndarray | None = None) -> np.ndarray:
        b = self.batch
        j = self.job_of[np.asarray(rows, dtype=np.int64)]
        known = j >= 0
        jj = np.maximum(j, 0)
        length = np.where(known, b.jobs.length[0, jj], 0)
        offset = earliest_start(b.used[:1], b.jobs.demand[0, jj][None], length[None],
                                b.grid.units)[0]
        return known & (offset == 0)

    def take(self, row: int, nodes=None) -> None:
        if nodes is not None:
            raise ValueError("DeepRM's grid has no nodes to place a job on: it is one pool")

    def give(self, row: int) -> None:
        pass


class DiscreteLoop:
    """The `deeprm` profile's loop: one DeepRM simulation stepped by typed decisions."""

    def __init__(self, engine: Engine, batch: DiscreteBatch, rows: np.ndarray, job_of: np.ndarray,
                 *, t0: float = 0.0, quantum: float = 1.0, counts: dict | None = None) -> None:
        self.e = engine
        self.batch = batch
        self.rows = rows
        self.job_of = job_of
        self.t0 = t0
        self.quantum = quantum
        self.counts = dict(counts or {})
        self.grid = GridState(batch, rows)
        self._shown = 0  # grid jobs shown so far (they joined the engine's queue)
        self._starts: list[tuple[int, int, int]] = []  # placed, not started: (step, row, mode)
        self._ends: list[tuple[int, int]] = []  # started, not finished: (step, row)
        self._sync()

    # -- stepped API -------------------------------------------------------------------------------
    def next_decision(self) -> GridView | None:
        if self.batch.done[0]:
            return None
        return GridView(self.e, self.grid)

    def apply(self, d) -> None:
        e, b = self.e, self.batch
        kind = type(d)
        if kind is Wait:
            if d.until is not None:
                raise ValueError("Wait(until): DeepRM's grid decides at every time step; give "
                                 "Wait() (void: the step ends)")
            action = b.void
        elif kind is Pick:
            action = self.slot_of(d.row)
        else:
            raise ValueError(f"{kind.__name__}: DeepRM's grid takes Pick(row) (place the job at "
                             f"its earliest offset) or Wait() (void)")
        e.decisions += 1
        placed = action < b.slots and bool(b.valid[0, action])
        if placed:
            j = int(b.slot[0, action])
            mode = READY if b.offset[0, action] == 0 else RESERVED
        b.step(np.array([action]))
        if placed:
            row = int(self.rows[j])
            e.queue.remove(row)
            heapq.heappush(self._starts, (int(b.start[0, j]), row, mode))
        self._sync()

    def slot_of(self, row: int) -> int:
        """The slot holding `row`'s job; a clear error where it is in none."""
        e, b = self.e, self.batch
        if not 0 <= row < e.n:
            raise ValueError(f"Pick({row}): not a row of the job table ({e.n} rows)")
        j = int(self.job_of[row])
        if j < 0:
            raise ValueError(f"Pick({row}): job {int(e.jobs.job_id[row])} was left out of the "
                             f"grid (it can never fit; counted in never_fit)")
        m = np.flatnonzero(b.slot[0] == j)
        if m.size:
            return int(m[0])
        if j >= b.arrived[0]:
            where = "has not arrived yet"
        elif b.dropped[0, j]:
            where = (f"was dropped on arrival: the {b.slots} slots and the backlog of "
                     f"{b.backlog} were full")
        elif b.start[0, j] >= 0:
            where = "is already placed"
        else:
            where = "waits in the backlog, beyond the M slots a DeepRM policy sees"
        raise ValueError(f"Pick({row}): the job {where}")

    def queue_reordered(self) -> None:
        pass

    def finish(self, result) -> None:
        """DeepRM's metrics (pooled over the grid jobs, in steps) and the mapping's counts replace
        the engine's, with the jobs dropped because the queue was full; the grid has no nodes, so
        records carry no node column."""
        result.metrics = self.batch.metrics()
        result.counts = dict(self.counts, dropped=int(self.batch.dropped.sum()))
        result.need = None
        result.node_names = ()

    # -- the engine's state, in step with the batch ------------------------------------------------
    def _sync(self) -> None:
        """Show the engine what the batch did: jobs shown (they join the queue), and every start
        and end up to the batch's clock, in time order (ends first at a step)."""
        e, b = self.e, self.batch
        now = int(b.now[0])
        shown = int(b.arrived[0])
        if shown > self._shown:
            kept = ~b.dropped[0, self._shown:shown]  # a dropped job never joins the queue
            e.queue.extend(self.rows[self._shown:shown][kept].tolist())
            self._shown = shown
        e.next_arrival = int(self.rows[shown]) if shown < len(self.rows) else e.n
        starts, ends = self._starts, self._ends
        while starts or ends:
            t_start = starts[0][0] if starts else NEVER
            t_end = ends[0][0] if ends else NEVER
            t = min(t_start, t_end)
            if t > now:
                break
            e.now = self.t0 + t * self.quantum
            if t_end <= t_start:
                e.end_job(heapq.heappop(ends)[1])
            else:
                _, row, mode = heapq.heappop(starts)
                e.start_job(row, None, mode)
                heapq.heappush(ends, (int(b.finish[0, self.job_of[row]]), row))
        e.now = self.t0 + now * self.quantum


# -- building an engine ------------------------------------------------------------------------------
def _engine(table: JobTable, cluster, jobs: GridJobs, rows: np.ndarray, grid: ResourceGrid,
            slots: int, backlog: int, reward: str, *, t0: float, quantum: float,
            counts: dict, profile, queue: str | None) -> Engine:
    profile = get_profile(profile)
    batch = DiscreteBatch(grid, slots, backlog, reward, queue or profile.queue)
    batch.reset(jobs)  # refuses a job that can never fit, naming it
    n, J = len(table), len(rows)
    rows = np.asarray(rows, dtype=np.int64)
    rows.flags.writeable = False
    job_of = np.full(n, -1, dtype=np.int64)
    job_of[rows] = np.arange(J)
    job_of.flags.writeable = False
    need = np.zeros(n, dtype=np.int64)
    need[rows] = jobs.demand[0, :J, 0]
    executed = np.asarray(table.run_time, dtype=np.float64).copy()
    executed[rows] = jobs.length[0, :J] * quantum
    engine = Engine(table, GridUnits(batch, job_of), profile, "none", need, executed,
                    cluster=cluster)
    engine.loop = DiscreteLoop(engine, batch, rows, job_of, t0=t0, quantum=quantum,
                               counts=counts)
    return engine


def engine_for_trace(jobs: JobTable, cluster, grid: ResourceGrid = ResourceGrid(),
                     quantum: float | None = None, *, slots: int = 10, backlog: int = 60,
                     reward: str = "slowdown", profile="deeprm",
                     queue: str | None = None) -> Engine:
    """An engine for a trace window (JobTable) on a NodePool, mapped into the grid (see
    `hpcsched.workload.deeprm.map_trace`); the mapping's counts travel with the result. `queue`:
    bounded (DeepRM's: arrivals that find the slots and backlog full are dropped and counted) or
    unbounded; by default the profile's (`deeprm`: bounded, `deeprm-unbounded`: unbounded)."""
    from hpcsched.workload.deeprm import map_trace

    if not hasattr(cluster, "total_procs"):
        raise ClusterError("the deeprm profile scales a trace's processors into its grid: give a "
                           "pool of identical nodes, not a heterogeneous cluster")
    mapped, report = map_trace(jobs, cluster.total_procs, grid, quantum=quantum)
    if report.jobs == 0:
        raise ValueError(f"no job fits the grid ({report.summary()})")
    counts = {"quantum_s": report.quantum, "procs_per_unit": report.procs_per_unit,
              "mapped_jobs": report.jobs, "never_fit": report.never_fit,
              "memory_resource": report.memory}
    return _engine(jobs, cluster, mapped, report.rows, grid, slots, backlog, reward,
                   t0=float(np.min(jobs.submit)), quantum=report.quantum, counts=counts,
                   profile=profile, queue=queue)


def grid_engine(jobs: GridJobs, grid: ResourceGrid = ResourceGrid(), slots: int = 10,
                backlog: int = 60, reward: str = "slowdown", queue: str = "bounded") -> Engine:
    """An engine for one synthetic jobset (GridJobs of one), on a clock of steps. Its JobTable has
    row j = grid job j: submit = arrival step, run and requested time = length, procs = units of
    resource 0; its cluster is resource 0's units as a pool of one-processor nodes."""
    if len(jobs) != 1:
        raise ValueError(f"an engine runs one jobset (got {len(jobs)}); use DiscreteBatch")
    J = int(jobs.count[0])
    if J == 0:
        raise ValueError("nothing to simulate: the jobset is empty")
    length = jobs.length[0, :J]
    units0 = jobs.demand[0, :J, 0]
    table = JobTable.from_columns(submit=jobs.arrival[0, :J], run_time=length, req_time=length,
                                  req_procs=units0, alloc_procs=units0)
    return _engine(table, NodePool(grid.units, 1), jobs, np.arange(J), grid, slots, backlog,
                   reward, t0=0.0, quantum=1.0, counts={}, profile="deeprm", queue=queue)


__all__ = ["REWARDS", "DiscreteBatch", "DiscreteLoop", "GridJobs", "GridPolicy",
           "GridState", "GridUnits", "GridView", "engine_for_trace", "grid_engine", "run_batch"]
