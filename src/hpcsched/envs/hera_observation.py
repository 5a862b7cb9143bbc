"""What HeraSched's two agents see (Wang's thesis §4.3, spec thesis_ch2_3_4.md §6.3-6.5): the layout
of the flat observation that a cluster and a window give, the observation of one decision instant,
and both masks. One implementation, read by the environment (`envs.herasched`) and by a trained
model scheduling on the engine (`agents.herasched_policy`), so that both see the same numbers.

**Layout** (the selector's input; the allocator's is the same and one more number):

    W slots x 7     wait, requested time, nodes, cores per node, memory per node, GPUs per node,
                    fits now (1/0); an empty slot is 7 zeros
    1               L(t), the number of waiting jobs
    per node i      5 numbers: leaf switch, cores, memory, GPUs (its capacities), node id;
                    then P_i placeholders x 5, one per job running there (placement order):
                    requested time, cores, memory, GPUs (its per-node request), elapsed time;
                    an empty placeholder is 5 zeros
    (allocator) 1   the window slot of the job being placed

P_i, the placeholders of node i, is sized as the thesis sizes them: g_i on a node with GPUs (every
job there takes one at least), else c_i (every job takes a core at least). The selector's input is
7W + 1 + sum_i (5 + 5 P_i): 1,451 on Deeplearn (W = 100) and, with the 87 nodes of the bundled
Physical platform (W = 512), 35,340, the thesis's Table 4.2 figure exactly (34,975 with Table 4.1's
86 nodes); `tests/envs/test_herasched_env.py` computes both from the clusters.

**Split window** (`envs.dbf.split_window`, the rule of DBF's split window): with L <= W waiting
jobs the queue is shown once in queue (arrival) order; with L > W its first W - T jobs, then its
last T newest first.

**Masks.** The selector's has W + 1 entries (the slots, then Forward): a slot is allowed when it
holds a job that fits now; Forward always, except when waiting cannot change anything (nothing runs
and nothing is to arrive: Forward would end the run with jobs waiting). The allocator's has N
entries: a node is allowed when it can take one share of the chosen job's per-node request now, has
a free placeholder, and is not yet chosen for this job. A job fits now when at least l_j nodes are
so allowed (k_j(t) = 1); then any l_j distinct allowed picks complete its allocation (the per-node
request is the same on every node), so the allocator never reaches a dead end.

**Choices the thesis leaves open** (spec §9, by item):

- item 1 and 25: the 5 per-node numbers are the node's leaf switch, its capacities (Table 2.1's
  c_i, m_i, g_i are totals) and its identity (the fifth number the thesis's sizes imply); what is
  free follows from the capacities and the placeholders (their sum is what is used);
- item 5: a node runs at most P_i jobs: a node whose placeholders are all taken is masked (and does
  not count towards k_j). This binds only where a job takes no GPU on a GPU node (none in the
  Spartan-like Deeplearn traces: every job there asks for one at least) or no core;
- item 24: w_j is shown as the wait t - w_j, not the submission time;
- item 26 (normalisation; the thesis gives none): every time (wait, requested, elapsed) is
  log(1 + s) / log(1 + 30 days in s), so a second, an hour, a day and 30 days (the longest request
  on Spartan) read 0.05, 0.55, 0.77 and 1.0; a job's nodes are divided by the cluster's N; cores,
  memory and GPUs (requests and capacities alike) by the largest node's of the cluster (0 where no
  node has any); L(t) is log(1 + L) / log(1 + W) (1 when the queue just fills the window); the
  leaf switch is its rank among the cluster's leaves (1..S) / S, 0 for a node off any switch; the
  node id is (i + 1) / N; the allocator's slot is (slot + 1) / W. Only the cluster and fixed
  constants enter, never the trace: a model observes a new trace on the same cluster exactly as
  its own.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import chain

import numpy as np

from hpcsched.cluster.nodes import Cluster
from hpcsched.envs.dbf import split_window

#: values per window slot, per node and per placeholder
JOB_FEATURES = 7
NODE_FEATURES = 5
SLOT_FEATURES = 5
#: the longest time the observation scales to: 30 days, Spartan's longest request (Table 4.1)
TIME_CAP = 30 * 86_400.0
_LOG_CAP = math.log1p(TIME_CAP)


def scale_time(seconds) -> np.ndarray:
    """Times in seconds as the observation shows them: log(1 + s) / log(1 + 30 days)."""
    return np.log1p(np.maximum(seconds, 0.0)) / _LOG_CAP


def placeholders(cluster: Cluster) -> np.ndarray:
    """(N,) the thesis's placeholders per node: its GPUs where it has any, else its cores."""
    cores = cluster.capacity[:, cluster.resources.index("cores")]
    g = cluster.resource_index("gpus")
    gpus = cluster.capacity[:, g] if g is not None else np.zeros_like(cores)
    return np.where(gpus > 0, gpus, cores).astype(np.int64)


def _column(cluster: Cluster, matrix: np.ndarray, resource: str) -> np.ndarray:
    r = cluster.resource_index(resource)
    return matrix[..., r] if r is not None else np.zeros(matrix.shape[:-1], dtype=matrix.dtype)


@dataclass(frozen=True, eq=False)
class HeraLayout:
    """Where every number of the observation sits, for one cluster and window (see the module
    docstring). Arrays are per node, in cluster order."""

    window: int  # W
    tail: int  # T
    nodes: int  # N
    slots: np.ndarray  # (N,) placeholders per node
    node_base: np.ndarray  # (N,) index of each node's 5 numbers in the observation
    n_selector: int  # the selector's input size
    #: (R,) the largest node's cores, memory, GPUs (1.0 where no node has any: the value stays 0)
    scale: np.ndarray
    template: np.ndarray  # (n_allocator,) float32: the static numbers, zeros elsewhere

    @property
    def n_allocator(self) -> int:
        return self.n_selector + 1

    @property
    def forward(self) -> int:
        """The selector's Forward action (= W)."""
        return self.window

    @property
    def queue_size(self) -> int:
        """7 W + 1: the window and L(t)."""
        return JOB_FEATURES * self.window + 1

    @property
    def max_slots(self) -> int:
        return int(self.slots.max())

    @classmethod
    def of(cls, cluster: Cluster, window: int, tail: int) -> "HeraLayout":
        if not isinstance(cluster, Cluster):
            raise ValueError("HeraSched places jobs on named nodes with cores, memory and GPUs: "
                             "give it a cluster (--cluster spartan-deeplearn, a slurm.conf, ...) "
                             "or run it under the hpcsim profile, not a pool of identical nodes")
        window, tail = int(window), int(tail)
        if window <= 0:
            raise ValueError(f"the window must hold at least one slot, got {window}")
        if not 0 <= tail <= window:
            raise ValueError(f"the tail must be in [0, window={window}], got {tail}")
        n = cluster.nodes
        slots = placeholders(cluster)
        if np.any(slots <= 0):
            i = int(np.argmax(slots <= 0))
            raise ValueError(f"{cluster.where(i)} has no core and no GPU: it has no placeholder "
                             f"for a job")
        sizes = NODE_FEATURES + SLOT_FEATURES * slots
        base = JOB_FEATURES * window + 1 + np.concatenate([[0], np.cumsum(sizes)[:-1]])
        n_sel = int(JOB_FEATURES * window + 1 + sizes.sum())
        caps = np.stack([_column(cluster, cluster.capacity, r).astype(np.float64)
                         for r in ("cores", "memory", "gpus")], axis=1)
        top = caps.max(axis=0)
        scale = np.where(top > 0, top, 1.0)
        template = np.zeros(n_sel + 1, dtype=np.float32)
        leaves = np.unique(cluster.leaf[cluster.leaf >= 0])
        rank = np.searchsorted(leaves, cluster.leaf)
        leaf = np.where(cluster.leaf >= 0, (rank + 1) / max(len(leaves), 1), 0.0)
        static = np.column_stack([leaf, caps / scale, (np.arange(n) + 1) / n])
        for k in range(NODE_FEATURES):
            template[base + k] = static[:, k]
        return cls(window, tail, n, slots, base, n_sel, scale, template)


@dataclass
class Snapshot:
    """What one observation found, for the masks and the rewards."""

    rows: np.ndarray  # (W,) the row in each slot, -1 for an empty one
    fits: np.ndarray  # (W,) bool: the slot holds a job that fits now
    class_of_slot: np.ndarray  # (W,) index into `node_fits` of each shown job's request (-1: none)
    node_fits: np.ndarray  # (K, N) bool: the nodes that can take each shown request now
    can_wait: bool  # whether letting time pass can change anything
    queued: int  # L(t)
    total_wait: float  # the sum of the waiting jobs' waits now, in seconds
    total_sq_wait: float = 0.0  # the sum of their squares, in seconds squared


class HeraObserver:
    """The observation and the masks for one run: its cluster, its jobs (the engine's table) and
    the layout. `observe(view, out)` writes the allocator-sized observation of a decision instant
    into `out` (its last number 0: no slot chosen yet) and keeps what the masks need."""

    def __init__(self, layout: HeraLayout, cluster: Cluster, jobs) -> None:
        from hpcsched.cluster.request import job_requests

        self.layout = layout
        self.cluster = cluster
        count, demand = job_requests(jobs, cluster)
        self.count = count
        self.demand = demand
        classes, klass = np.unique(demand, axis=0, return_inverse=True)
        self.klass = klass.reshape(-1)
        self.class_demand = classes
        self.submit = np.asarray(jobs.submit, dtype=np.float64)
        scale = layout.scale
        # each job's numbers that do not change: requested time, nodes, per-node request
        self.req_scaled = scale_time(jobs.req_time).astype(np.float32)
        self.nodes_scaled = (count / layout.nodes).astype(np.float32)
        per_node = np.stack([_column(cluster, demand, r) for r in ("cores", "memory", "gpus")],
                            axis=1)
        self.request_scaled = (per_node / scale).astype(np.float32)
        self.snapshot: Snapshot | None = None
        self._slot_index = np.zeros(0, dtype=np.int64)

    def observe(self, view, out: np.ndarray) -> Snapshot:
        """Write the observation of `view` (a decision instant of the engine) into `out`
        ((n_allocator,) float32) and return its snapshot (kept as `self.snapshot`)."""
        lay = self.layout
        now = float(view.now)
        np.copyto(out, lay.template)
        free = view.free
        node_jobs = view.node_jobs

        # the placeholders: every running job on each of its nodes, in placement order
        counts = np.fromiter(map(len, node_jobs), dtype=np.int64, count=lay.nodes)
        full = counts >= lay.slots
        total = int(counts.sum())
        if total:
            running = np.fromiter(chain.from_iterable(node_jobs), dtype=np.int64, count=total)
            node = np.repeat(np.arange(lay.nodes), counts)
            pos = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
            keep = pos < lay.slots[node]
            running, node, pos = running[keep], node[keep], pos[keep]
            at = lay.node_base[node] + NODE_FEATURES + SLOT_FEATURES * pos
            out[at] = self.req_scaled[running]
            req = self.request_scaled[running]
            out[at + 1] = req[:, 0]
            out[at + 2] = req[:, 1]
            out[at + 3] = req[:, 2]
            out[at + 4] = scale_time(now - view.start_time[running])

        # the window
        queue = view.queue
        rows = split_window(queue, lay.window, lay.tail)
        shown = rows[rows >= 0]
        k = shown.size
        fits = np.zeros(lay.window, dtype=bool)
        class_of_slot = np.full(lay.window, -1, dtype=np.int64)
        node_fits = np.zeros((0, lay.nodes), dtype=bool)
        if k:
            kinds, inverse = np.unique(self.klass[shown], return_inverse=True)
            demand = self.class_demand[kinds]
            node_fits = ~full[None, :].repeat(len(kinds), 0)
            for r in range(free.shape[1]):  # resource by resource (numpy reduces short rows slowly)
                node_fits &= free[None, :, r] >= demand[:, None, r]
            if self.cluster.exclusive:
                node_fits &= np.all(free == self.cluster.capacity, axis=1)[None, :]
            enough = node_fits.sum(axis=1)[inverse] >= self.count[shown]
            fits[:k] = enough
            class_of_slot[:k] = inverse
            slots = out[:JOB_FEATURES * lay.window].reshape(lay.window, JOB_FEATURES)
            slots[:k, 0] = scale_time(now - self.submit[shown])
            slots[:k, 1] = self.req_scaled[shown]
            slots[:k, 2] = self.nodes_scaled[shown]
            slots[:k, 3:6] = self.request_scaled[shown]
            slots[:k, 6] = enough
        queued = int(queue.size)
        out[JOB_FEATURES * lay.window] = math.log1p(queued) / math.log1p(lay.window)
        out[-1] = 0.0
        submitted = self.submit[queue]
        total_wait = float(now * queued - submitted.sum()) if queued else 0.0
        waits = now - submitted
        self.snapshot = Snapshot(rows, fits, class_of_slot, node_fits, bool(view.can_wait),
                                 queued, total_wait, float(waits @ waits) if queued else 0.0)
        return self.snapshot

    # -- masks -------------------------------------------------------------------------------------
    def selector_mask(self, out: np.ndarray | None = None) -> np.ndarray:
        """(W + 1,) the selector's valid actions at the last observation."""
        s = self.snapshot
        w = self.layout.window
        mask = np.zeros(w + 1, dtype=bool) if out is None else out
        mask[:w] = s.fits
        mask[w] = s.can_wait or not s.fits.any()
        return mask

    def allocator_mask(self, slot: int, chosen, out: np.ndarray | None = None) -> np.ndarray:
        """(N,) the allocator's valid nodes for the job in `slot`, given the nodes `chosen` for it
        so far."""
        s = self.snapshot
        mask = s.node_fits[s.class_of_slot[slot]].copy() if out is None else out
        if out is not None:
            mask[:] = s.node_fits[s.class_of_slot[slot]]
        if len(chosen):
            mask[list(chosen)] = False
        return mask

    def slot_value(self, slot: int) -> float:
        """The allocator's last input for a job in `slot`: (slot + 1) / W."""
        return (slot + 1) / self.layout.window


class OldestReservation:
    """EASY's reservation for the oldest waiting job, held once it has waited `after` seconds
    (``herasched:MODEL@reserve=AGE``, `train herasched --reserve-after`): it narrows the masks of
    an observer's last observation. `req` is the requested time of every row of the observed
    table; `reserving` counts the selector decisions it narrowed."""

    def __init__(self, after: float, req) -> None:
        self.after = self.check(after)
        self.req = np.asarray(req, dtype=np.float64)
        self.reserving = 0

    @staticmethod
    def check(after, where: str = "") -> float:
        """`after` as seconds, refused (`where` in front of the message) unless a wait >= 0."""
        if not after >= 0:
            raise ValueError(f"{where}reserve_after must be a wait in seconds >= 0, not "
                             f"{after!r}")
        return float(after)

    def narrow(self, view, observer: "HeraObserver", mask: np.ndarray):
        """Narrow the selector's `mask` (W + 1) once the oldest waiting job has waited `after`, as
        EASY would behind it: it alone if it fits now; else Forward and the jobs that either end
        (at their requested time) by its reservation or can be placed past it without taking its
        nodes (`sim.backfill_nodes.Reservation`). Returns the reservation held (None: none), for
        `placeable`."""
        snap = observer.snapshot
        queue = view.queue
        submit = observer.submit[queue]
        i = int(np.argmin(submit))
        if view.now - submit[i] < self.after:
            return None
        head = int(queue[i])
        window = observer.layout.window
        rows = snap.rows
        at = np.flatnonzero(rows == head)
        if at.size and snap.fits[at[0]]:
            self.reserving += 1
            mask[:] = False
            mask[at[0]] = True
            return None
        plan = view.reservation(head)
        if plan.shadow <= view.now or not np.isfinite(plan.shadow):
            return None  # it fits but is not shown, or it can never start: nothing to hold
        self.reserving += 1
        shown = np.flatnonzero(mask[:window])  # the slots whose jobs fit now
        if shown.size:
            jobs = rows[shown]
            past = view.now + self.req[jobs] > plan.shadow
            if past.any():
                # per request class of the window (`snap.node_fits`' rows): the nodes that fit
                # now and leave the oldest job its share, and those that would take it
                classes = snap.class_of_slot[shown]
                demand = np.zeros((snap.node_fits.shape[0], plan.at_shadow.shape[1]),
                                  dtype=plan.at_shadow.dtype)
                demand[classes] = observer.demand[jobs]
                safe = plan.harmless_each(demand) & snap.node_fits
                n_safe = safe.sum(axis=1)
                n_other = snap.node_fits.sum(axis=1) - n_safe
                room = n_safe + np.minimum(plan.spare, n_other)
                held = past & (room[classes] < observer.count[jobs])
                mask[shown[held]] = False
        mask[window] = True
        return plan

    def placeable(self, plan, now: float, observer: "HeraObserver", row: int, mask: np.ndarray,
                  chosen) -> np.ndarray:
        """The allocator's `mask` for `row` under `plan`: a job running past the reservation
        takes the oldest job's nodes only while spare ones are left."""
        if plan is None or now + self.req[row] <= plan.shadow:
            return mask
        safe = plan.harmless(observer.demand[row])
        if sum(1 for i in chosen if not safe[i]) >= plan.spare:
            mask &= safe
        return mask


def heuristic_nodes(placer, view, observer: "HeraObserver", row: int, plan=None,
                    guard: OldestReservation | None = None) -> tuple[int, ...]:
    """`row`'s nodes from a heuristic allocator `placer` (``herasched:MODEL@allocator=NAME``,
    `train herasched --allocator NAME`), on what is free now. Under a reservation (`plan`, held
    by `guard`), a job running past it gets the nodes that leave the oldest job its share if they
    are enough, else all of those and the allocator's pick of the rest among the others (no more
    than the reservation spares: `OldestReservation.narrow` let it through so)."""
    from hpcsched.cluster.allocate import fitting_nodes

    cluster, free = view.cluster, view.free
    demand, count = observer.demand[row], int(observer.count[row])
    fits = fitting_nodes(cluster, free, demand)
    if plan is None or view.now + guard.req[row] <= plan.shadow:
        nodes = placer.allocate(cluster, free, demand, count, fits=fits)
    else:
        safe = plan.harmless(demand) & fits
        n_safe = int(np.count_nonzero(safe))
        if n_safe >= count:
            nodes = placer.allocate(cluster, free, demand, count, fits=safe)
        else:
            rest = placer.allocate(cluster, free, demand, count - n_safe, fits=fits & ~safe)
            nodes = np.concatenate([np.flatnonzero(safe), rest])
    return tuple(int(i) for i in nodes)


__all__ = ["HeraLayout", "HeraObserver", "JOB_FEATURES", "NODE_FEATURES", "OldestReservation",
           "SLOT_FEATURES", "Snapshot", "TIME_CAP", "heuristic_nodes", "placeholders",
           "scale_time"]
