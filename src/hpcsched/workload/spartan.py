"""Spartan-like workloads: a seeded generator calibrated to what Wang's thesis says about the job
traces of Spartan (University of Melbourne), whose own traces are not public.

    trace = generate("spartan-physical", days=7, seed=1)      # a Spartan-like Physical week
    write_trace(trace, "physical-week.txt")                    # Slurm's `sacct -X -P` columns
    write_trace(trace, "physical-week.tsv", "hpcsim")          # HPCsim's tab-separated columns
    rows = calibration(trace.jobs, "spartan-physical")         # each statistic beside its target

    hpcsched trace generate spartan-physical --days 7 --seed 1 -o physical-week.txt

(`write_trace` is in `hpcsched.workload.spartan_format`, `calibration` in
`hpcsched.workload.spartan_targets`.)

Partitions: ``spartan-physical`` (CPU, 86 nodes x 72 cores), ``spartan-deeplearn`` (GPU, 30 nodes x
4 GPUs), ``spartan-sapphire`` (CPU, 52 nodes x 128 cores x 977 GB). Without ``days`` a trace covers
the thesis's own window of that partition (7, 375 and 6 days), from its first day; ``jobs`` sets
the count; ``high_load_day`` gives one day with the thesis's high-load job count and load.

How a trace is made. Jobs come in groups of identical requests submitted in the same second (job
arrays; sizes from the real traces); one-core jobs are an exact quota. Each group gets a request
(nodes, cores, memory, GPUs per node) and a time limit drawn from the real traces' limits; each job
a run time, a share of its limit (at or past it: TIMEOUT), and a state. Then every limit is
multiplied by one factor per trace, found by bisection, so that the work offered to the busiest
resource (cores, memory or GPUs: run time x request / the partition's total, over the span) is the
model's `offered_load`, and typed as users type limits. That load is the one calibrated number the
thesis does not give directly: it was chosen so that the thesis's reference cell (FCFS + EASY +
best-fit; Sapphire UNICEP + EASY + first-available) waits on average as long as in its Appendix B
(`benchmarks/spartan_calibrate.py` prints the comparison). At one load more jobs are shorter jobs,
which is how the high-load days (four to six times the jobs of a day) keep short waits.

Sources. Thesis sections are those of Wang (2025), extracted in ``shared/specs/thesis_ch2_3_4.md``
§6.8 and ``thesis_ch1_5_6_7.md`` §4; "real traces" are the tables of
`hpcsched.workload.spartan_shapes`, measured on ``shared/traces``. Each line: statistic: target
[source].

* Physical jobs in its window: 84,135 in 7 days (12,019 a day) [thesis Table 4.1 (2022-09-23 to
  09-30, "a week", §5.4.1)]
* Physical jobs over 13 months: 4,608,924 in 406 days (11,352 a day; the week is 5.9% busier)
  [thesis §5.4.1 (shown, not used: the week's rate is)]
* Deeplearn jobs in its window: 68,720 in 375 days (183.3 a day) [thesis Table 4.1 (2021-09-20 to
  2022-09-30)]
* Sapphire jobs in its window: 54,263 in 6 days (9,044 a day) [thesis Table 6.1 (2024-05-01 to
  05-07, end exclusive as for Physical's "week")]
* Physical one-core jobs: 71.5% of jobs (exact quota) [thesis §4.4.1, Fig. 4.3(C)]
* Physical/Sapphire median size: 1 node, 1 core; mean >> median [thesis §4.4.1, §6.5.2 Fig. 6.2]
* Physical heavy tail: some jobs > 15 nodes, hundreds of cores [thesis §4.4.1]
* mean cores / memory per node: Physical 2.63 cores (2.6-2.8), about 27 GB (25.8-35.1, weighted by
  node count); Deeplearn 3.6-4.4, 35-44 GB [thesis Table 4.3 (jobs placed per node type)]
* Deeplearn GPU-bound: every job >= 1 GPU per node, so at most 4 jobs per node [thesis §4.4.1, Table
  4.1]
* Deeplearn shape: median 1 node, more cores and memory than Physical; fewer multi-node jobs [thesis
  §4.4.1, Fig. 6.2]
* longest time limit: 30 days [thesis Tables 4.1, 6.1]
* high-load days: Physical 52,985, Deeplearn 1,137 jobs in one day [thesis §4.4.7 (Tables B.3, B.4)]
* offered load (busiest resource): Physical 0.94, Deeplearn 0.62, high-load days 1.18, 2.7; Sapphire
  1.15 [calibrated by simulation to the AWT of Tables B.1-B.4 and Ch. 6 (Sapphire)]
* arrivals by hour and weekday: 168 shares (local time) [real traces: 7 logs pooled]
* time limits: quantiles, scaled, rounded to the values users type, <= 30 days [real traces: 7 logs
  pooled]
* run time / limit: quantiles; >= 1: TIMEOUT at the limit [real traces: 7 logs pooled]
* states: 75% COMPLETED, 15% FAILED, 10% CANCELLED (besides TIMEOUT) [real traces: the logs that
  record them]
* groups (arrays) of identical jobs: size shares, one-core and others; Deeplearn at most 15 jobs
  [real traces: 7 logs pooled; Deeplearn's cap assumed (B.2's MWT rules out bigger bursts)]
* cores per node of multi-core jobs: CERIT-SC's, exponentially tilted to Table 4.3's mean (the
  closest law to CERIT's, in KL, that has that mean) [CERIT-SC wagap-2013 + Table 4.3]
* multi-node jobs: 3.7% of multi-core jobs; nodes and cores per node as CERIT-SC's, 5% of them 11-32
  nodes [CERIT-SC; the tail > 15 nodes is the thesis's (assumption: its share)]
* memory per node: CERIT-SC's quantiles by width class (multi-node jobs apart) x 3.1 (Sapphire 2.4)
  [CERIT-SC; scale: Table 4.3 (Sapphire: Physical's per core on its nodes)]
* GPUs per node (Deeplearn): 1: 60%, 2: 20%, 3: 5%, 4: 15% [assumption: no GPU trace is available
  ("many jobs ask for several GPUs", §4.4.1)]
* cores per GPU (Deeplearn): CERIT-SC's cores per node (with one-core jobs), tilted to Table 4.3
  [CERIT-SC shape (assumption: no GPU trace), Table 4.3]
* users: Zipf(1.2) over 500/150/300 users [assumption (the thesis gives none)]

Every job fits the partition's empty cluster as the thesis describes it (Table 4.1; where the
bundled platform files differ, the smaller node): a draw that does not fit is clipped, never
redrawn, and `Generated.clipped` counts each clip by reason. Start and End in the written files are
Submit and Submit + run: the generator has no scheduler, so Start says only that the job ran for
ElapsedRaw seconds (sacct's ``Unknown`` would mark a job that never started, which readers drop).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

import numpy as np

from hpcsched.workload import spartan_shapes as shapes
from hpcsched.workload.jobs import JobTable, TraceHeader

DAY = 86400
MAX_LIMIT_S = 30 * DAY  # thesis Tables 4.1 and 6.1: jobs run at most 30 days

#: Time limits as users type them (minutes): scaled limits are rounded to the nearest (in log).
TYPED_LIMITS_MIN = np.array([1, 2, 5, 10, 15, 20, 30, 45, 60, 90, 120, 180, 240, 300, 360, 480,
                             600, 720, 960, 1080, 1440, 2160, 2880, 4320, 5760, 7200, 10080,
                             14400, 20160, 30240, 43200])


@dataclass(frozen=True)
class NodeKind:
    count: int
    cores: int
    memory_mb: int
    gpus: int = 0


@dataclass(frozen=True)
class Model:
    """What the generator knows of one Spartan partition (see the module's table for sources)."""

    name: str  # the bundled cluster's name: spartan-physical
    partition: str  # Slurm's partition name, written in every row
    kinds: tuple[NodeKind, ...]
    jobs: int  # jobs in the thesis's window
    window_start: dt.date
    window_days: int
    high_load_jobs: int | None  # jobs of the thesis's high-load day
    one_core_share: float | None  # None: every job asks for GPUs (Deeplearn)
    mean_cores_per_node: float  # Table 4.3: multi-core (or GPU) jobs are tilted to give this mean
    memory_scale: float  # CERIT-SC's memory per node x this (to Table 4.3's means)
    offered_load: float  # of the busiest resource over the window (calibrated: module docstring)
    high_load_offered_load: float | None  # the same for the high-load day
    users: int
    largest_group: int | None = None  # jobs in one array at most (None: as the real traces)
    multi_node_share: float = shapes.MULTI_NODE_SHARE  # among multi-core jobs
    tail_share: float = 0.05  # of multi-node jobs: 11..tail_nodes nodes
    tail_nodes: int = 32
    gpus_per_node: tuple[tuple[int, float], ...] = ()
    first_id: int = 30_000_000

    @property
    def jobs_per_day(self) -> float:
        return self.jobs / self.window_days

    @property
    def max_cores(self) -> int:
        return max(k.cores for k in self.kinds)

    @property
    def nodes(self) -> int:
        return sum(k.count for k in self.kinds)

    def shares(self, nodes: np.ndarray, cores: np.ndarray, memory: np.ndarray,
               gpus: np.ndarray) -> dict[str, np.ndarray]:
        """Each job's request as a share of the partition's total, per resource it has."""
        total_cores = sum(k.count * k.cores for k in self.kinds)
        total_memory = sum(k.count * k.memory_mb for k in self.kinds)
        total_gpus = sum(k.count * k.gpus for k in self.kinds)
        out = {"cores": nodes * cores / total_cores, "memory": nodes * memory / total_memory}
        if total_gpus:
            out["gpus"] = nodes * gpus / total_gpus
        return out

    def holds(self, cores: np.ndarray, memory: np.ndarray, gpus: np.ndarray) -> np.ndarray:
        """How many nodes of the empty partition hold each per-node request."""
        out = np.zeros(len(cores), dtype=np.int64)
        for k in self.kinds:
            out += k.count * ((k.cores >= cores) & (k.memory_mb >= memory) & (k.gpus >= gpus))
        return out


# Node kinds: thesis Table 4.1 (Deeplearn's decoded in thesis_ch2_3_4.md §6.8), memory in MB as the
# bundled platform files give it (710,000 and 1,519,000 MB; 1,000,000 MB for "1000 GB"), which is
# the smaller reading of "710 GB". Sapphire: 52 x 128 cores x 977 GB (§6.5.2), 977,000 MB.
# Offered loads: calibrated by `benchmarks/spartan_calibrate.py` (see the module's docstring).
# Deeplearn: 1% of jobs on several nodes and none beyond 10 (assumption: "fewer nodes", §4.4.1).
MODELS: dict[str, Model] = {
    "spartan-physical": Model(
        "spartan-physical", "physical",
        (NodeKind(72, 72, 710_000), NodeKind(14, 72, 1_519_000)),
        jobs=84_135, window_start=dt.date(2022, 9, 23), window_days=7, high_load_jobs=52_985,
        one_core_share=0.715, mean_cores_per_node=2.63, memory_scale=3.1, offered_load=0.94,
        high_load_offered_load=1.18, users=500, first_id=38_000_000),
    "spartan-deeplearn": Model(
        "spartan-deeplearn", "deeplearn",
        (NodeKind(4, 28, 234_000, 4), NodeKind(5, 28, 174_000, 4), NodeKind(3, 24, 175_000, 4),
         NodeKind(6, 32, 234_000, 4), NodeKind(12, 32, 1_000_000, 4)),
        jobs=68_720, window_start=dt.date(2021, 9, 20), window_days=375, high_load_jobs=1_137,
        one_core_share=None, mean_cores_per_node=4.0, memory_scale=3.1, offered_load=0.62,
        high_load_offered_load=2.7, users=150, largest_group=15, multi_node_share=0.01,
        tail_share=0.0, tail_nodes=8, gpus_per_node=((1, 0.60), (2, 0.20), (3, 0.05), (4, 0.15)),
        first_id=25_000_000),
    "spartan-sapphire": Model(
        "spartan-sapphire", "sapphire", (NodeKind(52, 128, 977_000),),
        jobs=54_263, window_start=dt.date(2024, 5, 1), window_days=6, high_load_jobs=None,
        one_core_share=0.715, mean_cores_per_node=2.63, memory_scale=2.4, offered_load=1.15,
        high_load_offered_load=None, users=300, first_id=8_000_000),
}


def get_model(name: str) -> Model:
    key = name if name in MODELS else f"spartan-{name}"
    if key not in MODELS:
        raise ValueError(f"no Spartan model {name!r}; known: {', '.join(MODELS)}")
    return MODELS[key]


@dataclass(frozen=True)
class Generated:
    """A generated trace: the jobs, and what the writers need besides.

    `jobs` has the request columns (`nodes`, `cores_per_node`, `mem_per_node` MB, `gpus_per_node`),
    `submit` in seconds from `start` (local wall-clock time, as sacct prints it), `run_time` and
    `req_time` (the limit) in seconds, `status` (1 completed, 0 failed or timeout, 5 cancelled),
    `user` (0-based index) and `group` (the account's index). `array_id` is the JobIDRaw of an
    array's first task (-1: not an array) and `array_index` the task's index; `state` is Slurm's.
    `time_scale` is what the real traces' limits were multiplied by so that the busiest resource
    (`dominant`) is offered `target_load`; `loads` is the offered load of each resource (work over
    the span / the partition's total) and `offered_load` the dominant one's.
    """

    model: Model
    jobs: JobTable
    start: dt.datetime
    days: float
    seed: int
    array_id: np.ndarray
    array_index: np.ndarray
    state: np.ndarray  # str per job
    target_load: float
    loads: dict[str, float]
    dominant: str
    time_scale: float
    clipped: dict[str, int] = field(default_factory=dict)
    high_load_day: bool = False

    @property
    def offered_load(self) -> float:
        return self.loads[self.dominant]

    def summary(self) -> str:
        clips = "; ".join(f"{why}: {n}" for why, n in self.clipped.items()) or "nothing clipped"
        kind = "high-load day" if self.high_load_day else f"{self.days:g} day(s)"
        return (f"{self.model.name} ({self.model.partition}), {kind} from "
                f"{self.start:%Y-%m-%d}, seed {self.seed}: {len(self.jobs)} jobs; offered load "
                + ", ".join(f"{r} {v:.3f}" for r, v in self.loads.items())
                + f" (limits x {self.time_scale:.3g}); {clips}")


# ---- sampling helpers ----------------------------------------------------------------------------


def _from_quantiles(rng: np.random.Generator, table, n: int, log: bool) -> np.ndarray:
    """n draws from a quantile table (values at probabilities 0, 1/(K-1), ..., 1)."""
    q = np.asarray(table, dtype=np.float64)
    u = rng.random(n) * (len(q) - 1)
    i = np.minimum(u.astype(np.int64), len(q) - 2)
    f = u - i
    if log:
        lq = np.log(np.maximum(q, 1e-9))
        return np.exp(lq[i] + f * (lq[i + 1] - lq[i]))
    return q[i] + f * (q[i + 1] - q[i])


def _tilted(values: np.ndarray, weights: np.ndarray, mean: float) -> np.ndarray:
    """Weights p_k proportional to w_k exp(-lam v_k) whose mean of v is `mean`: the law closest to
    w (in Kullback-Leibler divergence) with that mean. Bisection on lam."""
    v = values.astype(np.float64)
    w = weights / weights.sum()
    if not v.min() < mean < v.max():
        raise ValueError(f"cannot tilt to mean {mean}: values span {v.min()}..{v.max()}")

    def mean_at(lam: float) -> float:
        e = w * np.exp(-lam * (v - v.min()))
        return float((e * v).sum() / e.sum())

    lo, hi = -1.0, 1.0
    while mean_at(lo) < mean:
        lo *= 2
    while mean_at(hi) > mean:
        hi *= 2
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if mean_at(mid) > mean else (lo, mid)
    p = w * np.exp(-lo * (v - v.min()))
    return p / p.sum()


def _table(pairs, cap: int) -> tuple[np.ndarray, np.ndarray]:
    """(values clipped at cap, merged, and their counts) of a (value, count) table."""
    values = np.minimum([v for v, _ in pairs], cap)
    counts = np.array([c for _, c in pairs], dtype=np.float64)
    uniq, inv = np.unique(values, return_inverse=True)
    return uniq, np.bincount(inv, weights=counts)


def _group_sizes(rng: np.random.Generator, shares, total: int,
                 largest: int | None = None) -> np.ndarray:
    """Sizes of groups adding up to exactly `total` jobs (the last group is cut): a bucket
    [2^k, 2^(k+1) - 1] drawn by its share, then a size uniformly in it; none above `largest`."""
    if total <= 0:
        return np.zeros(0, dtype=np.int64)
    p = np.asarray(shares, dtype=np.float64)
    lows = 2 ** np.arange(len(p))
    highs = lows * 2 - 1
    if largest is not None:
        p = np.where(lows <= largest, p, 0.0)
        highs = np.minimum(highs, largest)
    p /= p.sum()
    mean = float((p * (lows + highs) / 2).sum())
    sizes = np.zeros(0, dtype=np.int64)
    while sizes.sum() < total:
        n = int(total / mean * 1.3) + 16
        b = rng.choice(len(p), size=n, p=p)
        span = highs[b] - lows[b] + 1
        sizes = np.concatenate([sizes, lows[b] + (rng.random(n) * span).astype(np.int64)])
    cum = np.cumsum(sizes)
    last = int(np.searchsorted(cum, total))
    sizes = sizes[:last + 1].copy()
    sizes[-1] -= int(cum[last] - total)
    return sizes


def _arrival_times(rng: np.random.Generator, n: int, start: dt.datetime, days: float) -> np.ndarray:
    """n arrival times (s after `start`) with the pooled weekly rhythm of the real traces."""
    hours = int(np.ceil(days * 24))
    profile = np.asarray(shapes.WEEK_PROFILE, dtype=np.float64)  # (7, 24), Monday first
    first = start.weekday() * 24 + start.hour
    week_hour = (first + np.arange(hours)) % 168
    w = profile[week_hour // 24, week_hour % 24]
    length = np.minimum(days * 24 - np.arange(hours), 1.0)  # the last hour may be cut
    w = w * length
    h = rng.choice(hours, size=n, p=w / w.sum())
    return np.floor((h + rng.random(n) * length[h]) * 3600).astype(np.int64)


def _memory_per_node(rng: np.random.Generator, nodes: np.ndarray,
                     cores: np.ndarray) -> np.ndarray:
    """MB per node: CERIT-SC's quantiles of multi-node jobs, or of single-node jobs of that width."""
    out = np.empty(len(cores), dtype=np.float64)
    classes = np.where(nodes > 1, -1, np.searchsorted(shapes.MEM_CLASSES, cores, side="right") - 1)
    tables = ((-1, shapes.MEM_PER_NODE_MULTI_QUANTILES),) + tuple(
        enumerate(shapes.MEM_PER_NODE_QUANTILES))
    for k, table in tables:
        mask = classes == k
        out[mask] = _from_quantiles(rng, table, int(mask.sum()), log=True)
    return out


def _typed_limit_minutes(seconds: np.ndarray) -> np.ndarray:
    """Round limits to the nearest typed value (in log), 1 minute to 30 days."""
    minutes = np.clip(seconds / 60.0, 1.0, MAX_LIMIT_S / 60)
    logs = np.log(TYPED_LIMITS_MIN)
    i = np.clip(np.searchsorted(logs, np.log(minutes)), 1, len(logs) - 1)
    lower_closer = np.log(minutes) - logs[i - 1] < logs[i] - np.log(minutes)
    return TYPED_LIMITS_MIN[np.where(lower_closer, i - 1, i)]


def _typed_memory(mb: np.ndarray) -> np.ndarray:
    """Memory as users type it: whole GB (x 1024 MB) from 1 GB up, else multiples of 100 MB."""
    return np.where(mb >= 1024, np.round(mb / 1024) * 1024,
                    np.maximum(np.round(mb / 100) * 100, 100)).astype(np.int64)


# ---- the groups --------------------------------------------------------------------------------


@dataclass
class _Groups:
    """One row per group of identical jobs (a job array, or a single job)."""

    size: np.ndarray
    nodes: np.ndarray
    cores: np.ndarray
    memory: np.ndarray
    gpus: np.ndarray
    limit: np.ndarray  # seconds, the real traces' limit before it is scaled and typed

    FIELDS = ("size", "nodes", "cores", "memory", "gpus", "limit")

    @staticmethod
    def concat(parts: list["_Groups"]) -> "_Groups":
        return _Groups(*(np.concatenate([getattr(p, f) for p in parts]) for f in _Groups.FIELDS))

    def take(self, rows: np.ndarray) -> "_Groups":
        return _Groups(*(getattr(self, f)[rows] for f in _Groups.FIELDS))


def _shapes(rng: np.random.Generator, model: Model, sizes: np.ndarray, one_core: bool) -> _Groups:
    """Requests and limits for groups of the given sizes."""
    g = len(sizes)
    nodes = np.ones(g, dtype=np.int64)
    gpus = np.zeros(g, dtype=np.int64)
    if one_core:
        cores = np.ones(g, dtype=np.int64)
    elif model.gpus_per_node:
        gv = np.array([v for v, _ in model.gpus_per_node])
        gp = np.array([p for _, p in model.gpus_per_node])
        gpus = rng.choice(gv, size=g, p=gp / gp.sum())
        # cores per GPU: CERIT-SC's cores per node of single-node jobs, one-core ones included
        one = shapes.ONE_CORE_SHARE / (1 - shapes.ONE_CORE_SHARE) * sum(
            c for _, c in shapes.CORES_SINGLE_NODE) / (1 - shapes.MULTI_NODE_SHARE)
        v, c = _table(((1, one),) + shapes.CORES_SINGLE_NODE, model.max_cores)
        p = _tilted(v, c, model.mean_cores_per_node / float((gv * gp).sum() / gp.sum()))
        cores = np.minimum(gpus * rng.choice(v, size=g, p=p), model.max_cores)
    else:
        v, c = _table(shapes.CORES_SINGLE_NODE, model.max_cores)
        # tilted so that all jobs (one-core ones included) average Table 4.3's cores per node
        target = (model.mean_cores_per_node - model.one_core_share) / (1 - model.one_core_share)
        cores = rng.choice(v, size=g, p=_tilted(v, c, target))
    if not one_core:
        multi = rng.random(g) < model.multi_node_share
        m = int(multi.sum())
        nv, nc = _table(shapes.NODES_MULTI_NODE, model.nodes)
        n_multi = rng.choice(nv, size=m, p=nc / nc.sum())
        tail = rng.random(m) < model.tail_share
        if tail.any():
            lo, hi = np.log(11), np.log(model.tail_nodes + 1)
            n_multi[tail] = np.exp(lo + rng.random(int(tail.sum())) * (hi - lo)).astype(np.int64)
        nodes[multi] = n_multi
        if not model.gpus_per_node:
            cv, cc = _table(shapes.CORES_MULTI_NODE, model.max_cores)
            cores[multi] = rng.choice(cv, size=m, p=cc / cc.sum())
    memory = _typed_memory(_memory_per_node(rng, nodes, cores) * model.memory_scale)
    limit = _from_quantiles(rng, shapes.LIMIT_QUANTILES, g, log=True)
    return _Groups(sizes.astype(np.int64), nodes, cores.astype(np.int64), memory,
                   gpus.astype(np.int64), limit)


def _clip(model: Model, groups: _Groups, clipped: dict[str, int]) -> None:
    """Make every group fit the empty partition; count the jobs changed, by reason."""
    def count(why: str, mask: np.ndarray) -> None:
        n = int(groups.size[mask].sum())
        if n:
            clipped[why] = clipped.get(why, 0) + n

    max_mem = max(k.memory_mb for k in model.kinds)
    over = groups.memory > max_mem
    count(f"memory per node above the largest node's {max_mem} MB (set to it)", over)
    groups.memory[over] = max_mem
    # a request no single node holds (cores and memory of different kinds): memory cut to the
    # largest that a node with enough cores has
    none = model.holds(groups.cores, groups.memory, groups.gpus) == 0
    count("no node kind holds both the cores and the memory (memory cut)", none)
    for i in np.flatnonzero(none):
        groups.memory[i] = max(k.memory_mb for k in model.kinds
                               if k.cores >= groups.cores[i] and k.gpus >= groups.gpus[i])
    held = model.holds(groups.cores, groups.memory, groups.gpus)
    few = groups.nodes > held
    count("more nodes than hold the per-node request (node count cut)", few)
    groups.nodes[few] = held[few]


# ---- generation ----------------------------------------------------------------------------------


def generate(partition: str, days: float | None = None, seed: int = 0, *,
             jobs: int | None = None, high_load_day: bool = False, load: float | None = None,
             start: dt.date | dt.datetime | None = None) -> Generated:
    """A Spartan-like trace of `partition` (``spartan-physical``, ``spartan-deeplearn``,
    ``spartan-sapphire``, or without the prefix); the same arguments give the same trace.

    `days`: the span (default: the thesis's window of that partition, 7, 375 or 6 days, or with
    `jobs` given, as many days as the thesis's rate takes for them). `jobs`: how many jobs (default:
    the thesis's jobs per day times `days`). `high_load_day`: one day with the thesis's high-load
    job count (52,985 on Physical, 1,137 on Deeplearn) and its calibrated load. `load`: the offered
    load (work / capacity over the span, of cores, or GPUs on Deeplearn) instead of the calibrated
    one; the limits and run times are scaled to it, so at one load more jobs are shorter jobs.
    `start`: the first day (default: the first day of the thesis's window).
    """
    model = get_model(partition)
    if high_load_day:
        if model.high_load_jobs is None:
            raise ValueError(f"the thesis gives no high-load day for {model.name}")
        if days not in (None, 1) or jobs is not None:
            raise ValueError("a high-load day is one day of the thesis's job count: give neither "
                             "days nor jobs")
        days, jobs = 1.0, model.high_load_jobs
        target = model.high_load_offered_load
    else:
        target = model.offered_load
    if jobs is not None and jobs < 1:
        raise ValueError(f"jobs must be at least 1, got {jobs}")
    if days is None:
        days = model.window_days if jobs is None else jobs / model.jobs_per_day
    days = float(days)
    if not days > 0:
        raise ValueError(f"days must be positive, got {days}")
    total = int(round(model.jobs_per_day * days)) if jobs is None else int(jobs)
    if total < 1:
        raise ValueError(f"{days:g} day(s) of {model.name} hold no job at the thesis's rate of "
                         f"{model.jobs_per_day:.1f} a day; give more days or jobs")
    if load is not None:
        if not load > 0:
            raise ValueError(f"load must be positive, got {load}")
        target = float(load)
    first = start or model.window_start
    first = first if isinstance(first, dt.datetime) else dt.datetime.combine(first, dt.time())
    rng = np.random.default_rng([seed, sorted(MODELS).index(model.name), int(high_load_day)])

    # requests, in groups of identical jobs (arrays); one-core jobs are an exact quota
    parts = []
    rest = total
    if model.one_core_share is not None:
        ones = int(round(model.one_core_share * total))
        parts.append(_shapes(rng, model, _group_sizes(rng, shapes.GROUP_SIZES_ONE_CORE, ones,
                                                         model.largest_group),
                             True))
        rest = total - ones
    parts.append(_shapes(rng, model, _group_sizes(rng, shapes.GROUP_SIZES_OTHER, rest,
                                                     model.largest_group), False))
    groups = _Groups.concat(parts)
    groups = groups.take(groups.size > 0)
    clipped: dict[str, int] = {}
    _clip(model, groups, clipped)

    # arrivals: a group's jobs share one Submit second (an array); jobs in submit order
    when = _arrival_times(rng, len(groups.size), first, days)
    order = np.argsort(when, kind="stable")
    when = when[order]
    groups = groups.take(order)
    g_of_job = np.repeat(np.arange(len(groups.size)), groups.size)
    n = len(g_of_job)
    first_of_group = np.cumsum(groups.size) - groups.size
    index_in_group = np.arange(n) - first_of_group[g_of_job]
    job_id = model.first_id + np.arange(n)
    array_id = np.where(groups.size[g_of_job] > 1, job_id[first_of_group[g_of_job]], -1)
    array_index = np.where(array_id >= 0, index_in_group, -1)

    # times: each job's run time is a share of its limit (>= 1: TIMEOUT at the limit); the limits
    # are the real traces' times scaled so that the trace offers the target load, then typed
    nodes = groups.nodes[g_of_job]
    cores = groups.cores[g_of_job]
    ratio = _from_quantiles(rng, shapes.RATIO_QUANTILES, n, log=False)
    timeout = ratio >= 1.0
    shares = model.shares(nodes, cores, groups.memory[g_of_job], groups.gpus[g_of_job])
    raw = {r: float((s * np.minimum(ratio, 1.0) * groups.limit[g_of_job]).sum())
           for r, s in shares.items()}
    dominant = max(raw, key=raw.get)  # the busiest resource, before scaling (scaling keeps it)
    scale, limit_s, run = _scaled_times(groups.limit[g_of_job], ratio, shares[dominant],
                                        target * days * DAY)
    loads = {r: float((run * s).sum()) / (days * DAY) for r, s in shares.items()}
    done, failed, _ = shapes.STATUS_SHARES
    u = rng.random(n)
    state = np.where(timeout, "TIMEOUT",
                     np.where(u < done, "COMPLETED", np.where(u < done + failed, "FAILED",
                                                              "CANCELLED")))
    status = np.select([state == "COMPLETED", state == "CANCELLED"], [1.0, 5.0], 0.0)

    # users: Zipf popularity, one user per group; each user charges one account
    ranks = np.arange(1, model.users + 1, dtype=np.float64)
    popularity = ranks ** -1.2
    user_of_group = rng.choice(model.users, size=len(groups.size), p=popularity / popularity.sum())
    user = user_of_group[g_of_job]
    account = (user * 7919 + 13) % max(model.users // 3, 1)

    procs = nodes * cores
    header = TraceHeader(
        name=f"{model.name}-{'highload' if high_load_day else f'{days:g}d'}-s{seed}",
        unix_start_time=int((first - dt.datetime(1970, 1, 1)).total_seconds()),
        fields={"Generator": "hpcsched.workload.spartan", "Partition": model.partition,
                "Seed": str(seed), "Days": f"{days:g}", "Load": f"{loads[dominant]:.4g}"},
        partitions=(model.partition,))
    table = JobTable.from_columns(
        header, job_id=job_id, submit=when[g_of_job], run_time=run, alloc_procs=procs,
        req_procs=procs, req_time=limit_s, status=status, user=user, group=account,
        partition=np.zeros(n), nodes=nodes, cores_per_node=cores,
        mem_per_node=groups.memory[g_of_job], gpus_per_node=groups.gpus[g_of_job])
    return Generated(model, table, first, days, seed, array_id, array_index, state, target,
                     loads, dominant, scale, clipped, high_load_day)


def _scaled_times(limit: np.ndarray, ratio: np.ndarray, width: np.ndarray,
                  work: float) -> tuple[float, np.ndarray, np.ndarray]:
    """(scale, limits in s, run times in s) such that sum(run * width) is as close to `work` as
    typing allows.

    Limits are `limit * scale` typed (whole minutes users type, at most 30 days), run times
    `ratio * limit` (at least 1 s; the limit itself from a ratio of 1). The work grows with the
    scale in steps (one typed value to the next), so the scale is found by bisection.
    """
    def times(scale: float) -> tuple[np.ndarray, np.ndarray]:
        limit_s = _typed_limit_minutes(limit * scale).astype(np.int64) * 60
        run = np.where(ratio >= 1.0, limit_s, np.maximum(np.round(ratio * limit_s), 1))
        return limit_s, run.astype(np.int64)

    def offered(scale: float) -> float:
        return float((times(scale)[1] * width).sum())

    guess = work / max(float((np.minimum(ratio, 1.0) * limit * width).sum()), 1.0)
    lo, hi = guess / 2, guess * 2
    while offered(lo) > work and lo > 1e-9:
        lo /= 2
    while offered(hi) < work and hi < 1e9:
        if offered(hi * 2) == offered(hi):  # every limit at 30 days: no more work to offer
            break
        hi *= 2
    for _ in range(60):
        mid = (lo + hi) / 2
        got = offered(mid)
        if abs(got / work - 1) < 1e-3:
            lo = hi = mid
            break
        lo, hi = (mid, hi) if got < work else (lo, mid)
    scale = lo if abs(offered(lo) / work - 1) <= abs(offered(hi) / work - 1) else hi
    limit_s, run = times(scale)
    return scale, limit_s, run


__all__ = ["MODELS", "Model", "NodeKind", "Generated", "generate", "get_model"]
