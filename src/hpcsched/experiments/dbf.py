"""Wang's thesis Ch. 3 (DBF): the episodes every method is scored on, and Fig. 3.4's comparison
(spec thesis_ch2_3_4.md sections 4.6, 4.7; 9, items 21-22).

**The episode** is the DBF environment's (`hpcsched/DBF-v0`): from a fixed start on an empty
machine, jobs arriving as logged, until `episode_jobs` (1,000) jobs have started. Every method,
heuristic or learned, runs on the engine over the same jobs (the start and the next
``episode_jobs + lookahead`` of them, as the environment holds), stepped decision by decision and
stopped right after its 1,000th start; the episode's metrics are `interval_metrics` from the first
arrival to that start, jobs still waiting counted as waiting until then. So a heuristic's numbers
and a DBF model's mean the same thing, and a rule played through the environment gives exactly
the numbers its engine run gives (tests/experiments/test_dbf_experiments.py).

**The test episodes** (`test_starts`): DBF's test split, `workload.windows.dbf_starts(trace,
"test", n)`, the one place training, validation and test starts are defined: starts drawn with a
fixed seed from the last quarter of the trace (Lublin-1: starts 7,500-9,000), where no training
episode (starts 0-4,800) or validation episode (6,000-6,300) reaches.

**Fig. 3.4's methods** (`baseline_methods`): FCFS, Ch. 3's "SJF" (fewest requested cores:
`sqf`) and LCFS, each without backfilling and with EASY (the thesis does not say which, item 21);
SchedInspector's models, each around the base and with the backfilling it was trained with, under
the profile it was trained under, in DBF's online protocol and in its own offline one (128-job
windows from the same starts, no arrival after the 128th, run until every job has started: the
SchedInspector experiment's protocol code, `schedinspector.evaluate`, which also gives the base
heuristic's row); and DBF models by policy name (``dbf:PATH``, ``dbf:pretrained/NAME``).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Sequence

import numpy as np

from hpcsched.sim.metrics import interval_metrics, interval_waits

EPISODE_JOBS = 1000
#: SchedInspector's own protocol: windows of this many jobs, no arrival after them
OFFLINE_JOBS = 128
HEURISTICS = ("fcfs", "sqf", "lcfs")
#: how Fig. 3.4 names the heuristics (Ch. 3's "SJF" is the fewest requested cores: sqf)
LABELS = {"fcfs": "FCFS", "sqf": "SJF", "lcfs": "LCFS", "sjf": "SJF(time)", "f1": "F1"}
INSPECTORS = ("inspect:pretrained/inspect-lublin-1-sjf", "inspect:pretrained/inspect-lublin-1-f1",
              "inspect:pretrained/inspect-lublin-1-sjf-backfill",
              "inspect:pretrained/inspect-lublin-1-f1-backfill")
#: the DBF models Fig. 3.4 compares, by their shipped names (dbf:pretrained/NAME; those not
#: shipped are skipped with a note)
DBF_MODELS = ("dbf-m32", "dbf-m64", "dbf-m128")
#: the metrics of Fig. 3.4, in its order; every row carries them (and KEY_sd over seeds)
METRICS = ("utilization", "wait", "queue_length", "job_load", "bsld")
#: what the online rows carry besides (`Episode.queue_parts`): the mean wait of every job that
#: arrived by the cut (the waits of those still waiting cut there), and how many still wait
PART_KEYS = ("wait_all", "left_waiting")


# -- the test episodes -----------------------------------------------------------------------------
def test_starts(n_jobs: int, count: int = 100, *,
                episode_jobs: int = EPISODE_JOBS) -> list[int]:
    """`count` fixed test-episode starts: DBF's test split (`workload.windows.dbf_starts`, the one
    place the split of training, validation and test starts is defined)."""
    from hpcsched.workload.windows import dbf_starts

    if count < 1:
        raise ValueError(f"the number of test episodes must be at least 1, got {count}")
    return dbf_starts(n_jobs, "test", count, episode_jobs=episode_jobs)


def episode_span(n_jobs: int, start: int, episode_jobs: int = EPISODE_JOBS,
                 lookahead: int | None = None) -> range:
    """The job positions an episode from `start` holds (as `DBFEnv` gives its engine)."""
    extra = episode_jobs if lookahead is None else lookahead
    return range(start, start + min(n_jobs - start, episode_jobs + extra))


# -- one episode -----------------------------------------------------------------------------------
@dataclass
class Episode:
    """One episode cut at its `episode_jobs`-th start: the jobs it held, their start times (NaN:
    not started by the cut), when each ran, and the cut [t0, t1]."""

    start: int
    jobs: Any  # JobTable
    start_time: np.ndarray
    executed: np.ndarray
    t0: float
    t1: float
    total_procs: int
    placed: int
    summary: dict = field(default_factory=dict)  # the policy's (an inspector's rejections)

    def metrics(self) -> dict[str, float]:
        """`interval_metrics` over [t0, t1], as `DBFEnv` reports them, and `placed`."""
        m = interval_metrics(self.jobs, self.start_time, self.executed,
                             total_procs=self.total_procs, t0=self.t0, t1=self.t1)
        m["placed"] = self.placed
        m.update(self.summary)
        return m

    def queue_parts(self) -> dict[str, float]:
        """Where the episode's time-averaged queue length comes from. Every job that arrived by
        the cut (``arrived``) either started by it, its whole wait counted, or is still waiting
        there (``left_waiting``), its wait counted until the cut; ``queue_started`` and
        ``queue_left`` are the two shares of `metrics`' ``queue_length`` (their sum). The AWT
        (`metrics`' ``wait``) reads only the first group; ``wait_all`` is the mean over both,
        the waits cut at t1 (``queue_length`` x ``span`` / ``arrived``), and ``wait_left`` the
        second group's mean. ``span`` is t1 - t0 in seconds."""
        submit = self.jobs.submit
        span = self.t1 - self.t0
        arrived = submit <= self.t1
        begun, waited = interval_waits(submit, self.start_time, self.t0, self.t1)
        left = arrived & ~begun
        n_arrived, n_left = int(np.count_nonzero(arrived)), int(np.count_nonzero(left))
        per_span = (lambda x: float(x) / span) if span > 0 else (lambda x: 0.0)
        return {
            "span": span, "arrived": n_arrived, "left_waiting": n_left,
            "queue_started": per_span(np.sum(waited[begun])),
            "queue_left": per_span(np.sum(waited[left])),
            "wait_all": float(np.sum(waited[arrived])) / n_arrived if n_arrived else 0.0,
            "wait_left": float(np.mean(waited[left])) if n_left else 0.0,
        }


def run_episode(prepared, policy, start: int, *, backfill: str = "none",
                episode_jobs: int = EPISODE_JOBS, lookahead: int | None = None) -> Episode:
    """`policy` on the episode from `start`: the engine on the jobs `episode_span` names, stepped
    until `episode_jobs` jobs have started (or the run ends), the starts of the decision that
    passed the count (EASY may start several) after it left out, in the order the engine made
    them."""
    from hpcsched.sim.factory import make_engine

    span = episode_span(len(prepared.jobs), start, episode_jobs, lookahead)
    jobs = prepared.jobs.window(start, len(span))
    engine = make_engine(jobs, prepared.cluster, prepared.profile, backfill,
                         allocator=prepared.allocator)
    order: list[int] = []
    start_job = engine.start_job

    def recorded(row, nodes=None, mode=1):  # the engine's starts, in the order it makes them
        order.append(row)
        return start_job(row, nodes, mode)

    engine.start_job = recorded
    while len(order) < episode_jobs and (view := engine.next_decision()) is not None:
        engine.apply(engine.choose(policy, view))
    starts = np.full(len(jobs), np.nan)
    kept = order[:episode_jobs]
    starts[kept] = engine.start_array[kept]
    summary = getattr(policy, "summary", None)
    return Episode(start, jobs, starts, np.asarray(engine.executed, dtype=np.float64),
                   float(jobs.submit[0]), float(engine.now), int(engine.total_procs), len(kept),
                   dict(summary()) if summary is not None and engine.decisions else {})


# -- methods, and running them over episodes in parallel ---------------------------------------------
@dataclass(frozen=True)
class Method:
    """One bar of a figure: a policy name run with a backfilling under a profile, in a protocol
    ("online": DBF's episodes; "offline": SchedInspector's windows)."""

    label: str
    policy: str
    backfill: str = "none"
    profile: str = "standard"
    protocol: str = "online"
    kind: str = "heuristic"  # heuristic, inspector, base (an inspector's base, offline), model
    window: int | None = None
    tail: int | None = None
    #: the policy names of the training seeds judged together (None: `policy` alone)
    seeds: tuple[str, ...] | None = None
    #: offline rows: the inspector (its policy name; "" for a base heuristic alone) and its base
    inspector: str = ""
    base: str = ""

    def policies(self) -> tuple[str, ...]:
        return self.seeds or (self.policy,)


def label_of(policy: str, backfill: str) -> str:
    name = LABELS.get(policy, policy)
    return name if backfill == "none" else f"{name}+{backfill.upper()}"


def heuristic_methods(heuristics: Sequence[str] = HEURISTICS,
                      backfills: Sequence[str] = ("none", "easy")) -> list[Method]:
    from hpcsched.policies.priority import get_policy

    for h in heuristics:
        get_policy(h)  # an unknown name fails here, with the list
    return [Method(label_of(h, b), h, b) for h in heuristics for b in backfills]


def inspector_method(name: str) -> tuple[Method, Method, Method]:
    """The online method, the offline one and the offline base of a SchedInspector model name
    (``inspect:MODEL``): its base, backfilling and profile are the model's own training's."""
    from hpcsched.agents.inspector_policy import load_inspector_checkpoint
    from hpcsched.experiments.policyspec import _recipe_of
    from hpcsched.recipes import locate

    recipe, arg = _recipe_of(name)
    if recipe is None or recipe.prefix != "inspect":
        raise ValueError(f"{name!r} is not a SchedInspector model (inspect:MODEL)")
    model, option = recipe.split(arg)
    config = load_inspector_checkpoint(locate(model, recipe))["config"]
    base = option or config.get("base", "sjf")
    backfill = config.get("backfill", "none")
    profile = config.get("profile", "schedinspector-paper")
    label = f"Insp-{base.upper()}" + ("" if backfill == "none" else "+BF")
    offline = Method(f"{label}-o", name, backfill, profile, "offline", "inspector",
                     inspector=name, base=base)
    return (Method(label, name, backfill, profile, "online", "inspector"), offline,
            replace(offline, label=base_label(offline.label), policy=base, kind="base"))


def base_label(inspector_label: str) -> str:
    """The label of an offline inspector's base row ("Insp-SJF+BF-o" -> "SJF+BF-o (Insp. base)")."""
    return f"{inspector_label.removeprefix('Insp-')} (Insp. base)"


def model_window(policy) -> tuple[int | None, int | None]:
    """(M, M_t) of a loaded DBF policy, where it says (attributes `window` and `tail`, or its
    config's), else (None, None)."""
    for holder in (policy, getattr(policy, "config", None)):
        if holder is not None and getattr(holder, "window", None) is not None:
            return int(holder.window), int(getattr(holder, "tail", 0) or 0)
    return None, None


def model_profile(name: str) -> str:
    from hpcsched.experiments.policyspec import model_profiles

    return model_profiles([name]).get(name, "standard")


def shipped_models(names: Sequence[str] = DBF_MODELS) -> tuple[list[str], list[str]]:
    """(the policy names of the shipped DBF models among `names`, notes on those missing). A
    model trained without the mask comes twice: as trained (the thesis's reading, greedy without
    a mask) and through the mask (``@masked``), where, in a short run, it stops waiting behind
    jobs that do not fit (README, "Training DBF")."""
    from hpcsched.modelfile import read_model
    from hpcsched.recipes import PRETRAINED

    found, notes = [], []
    for n in names:
        path = PRETRAINED / f"{n}.pt"
        if path.is_file():
            found.append(f"dbf:pretrained/{n}")
            if not read_model(path)["config"].get("mask", False):
                found.append(f"dbf:pretrained/{n}@masked")
        else:
            notes.append(f"dbf:pretrained/{n} is not shipped: skipped (train one with `hpcsched "
                         f"train dbf`, or name models with --models)")
    return found, notes


def as_policy_name(item: str, prefix: str = "dbf") -> str:
    """A policy name as given, or a model file / run folder as ``PREFIX:PATH``."""
    from hpcsched.experiments.policyspec import _recipe_of

    if _recipe_of(item)[0] is not None:
        return item
    if os.path.exists(item) or item.endswith(".pt") or "/" in item or os.sep in item:
        return f"{prefix}:{item}"  # a path (a missing one fails as the recipe loads it)
    return item


def _prepared(trace: str, profile: str):
    from hpcsched.sim.run import as_prepared, estimated_trace

    if profile.startswith("schedinspector"):
        return estimated_trace(trace, None, profile)
    return as_prepared(trace, profile)


def map_starts(reference, prepared, starts: Sequence[int]) -> list[int]:
    """The positions in `prepared` of the jobs at `starts` in `reference` (the same trace
    prepared under another profile, whose cleaning may keep other jobs): by job id."""
    if prepared is reference or np.array_equal(prepared.jobs.job_id, reference.jobs.job_id):
        return list(starts)
    ids = prepared.jobs.job_id
    out = np.searchsorted(ids, reference.jobs.job_id[np.asarray(starts)], side="left")
    return np.minimum(out, len(ids) - 1).tolist()


@dataclass(frozen=True)
class Context:
    """What a worker needs to run an episode (plain data: it crosses to worker processes)."""

    trace: str
    methods: tuple[Method, ...]
    episode_jobs: int = EPISODE_JOBS
    #: windows M to measure invisible jobs for, beside a method's own (Fig. 3.6)
    windows: tuple[int, ...] = ()
    job_types: bool = False  # Fig. 3.7's per-job-type counts
    queue_parts: bool = False  # `Episode.queue_parts` of each episode


_WORKER: dict[str, Any] = {}


def _init(context: Context) -> None:
    _WORKER.clear()
    _WORKER["context"] = context
    if any(":" in p for m in context.methods for p in m.policies()):
        try:  # a learned policy: one thread per worker process
            import torch

            torch.set_num_threads(1)
        except ImportError:  # pragma: no cover
            pass


def _init_worker(context: Context) -> None:
    """`_init` in a worker process, with one BLAS thread: numpy's OpenBLAS pool (the greedy
    actors' products) starts with a thread per core in each worker, and two workers' pools
    spinning on two cores ran 20 times slower than with one thread each, for the same rows."""
    from threadpoolctl import threadpool_limits

    _init(context)
    _WORKER["blas_limit"] = threadpool_limits(limits=1, user_api="blas")


def _policy(key: tuple[int, int]):
    """The policy of (method, seed) in this worker, loaded once."""
    from hpcsched.experiments.policyspec import resolve_policy

    cache = _WORKER.setdefault("policies", {})
    if key not in cache:
        method = _WORKER["context"].methods[key[0]]
        cache[key] = resolve_policy(method.policies()[key[1]],
                                    _trace(method.profile))
    return cache[key]


def _trace(profile: str):
    cache = _WORKER.setdefault("traces", {})
    if profile not in cache:
        cache[profile] = _prepared(_WORKER["context"].trace, profile)
    return cache[profile]


def _run_chunk(task: tuple[int, int, list[int]]) -> list[dict]:
    """Episodes of one (method, seed) from the given starts (positions in the standard-profile
    trace): each one's metrics, and what the context asks besides."""
    from hpcsched.experiments import dbf_window

    m, k, starts = task
    ctx: Context = _WORKER["context"]
    method = ctx.methods[m]
    policy = _policy((m, k))
    prepared = _trace(method.profile)
    mapped = map_starts(_trace("standard"), prepared, starts)
    out = []
    for s in mapped:
        ep = run_episode(prepared, policy, s, backfill=method.backfill,
                         episode_jobs=ctx.episode_jobs)
        row = {"metrics": ep.metrics()}
        windows = set(ctx.windows) | ({method.window} if method.window else set())
        if windows:
            lengths = dbf_window.cycle_queue_lengths(ep)
            row["visible"] = {w: dbf_window.visibility(lengths, w) for w in sorted(windows)}
        if ctx.job_types:
            row["types"] = dbf_window.job_type_counts(ep)
        if ctx.queue_parts:
            row["parts"] = ep.queue_parts()
            row["metrics"].update({k: row["parts"][k] for k in PART_KEYS})
        out.append(row)
    return out


def run_online(context: Context, episodes: dict[int, list[int]], *, workers: int = 1,
               progress: Callable[[int], None] | None = None, chunk: int = 10
               ) -> dict[tuple[int, int], list[dict]]:
    """Every (method index, seed index) of `context` over its starts (`episodes`: method index ->
    starts), `workers` processes at once; {(method, seed): one dict per episode, in start
    order}. The same numbers whatever `workers` is."""
    tasks = []
    for m, starts in episodes.items():
        for k in range(len(context.methods[m].policies())):
            tasks += [(m, k, starts[i:i + chunk]) for i in range(0, len(starts), chunk)]
    results: dict[tuple[int, int], list[dict]] = {}

    def take(task, rows):
        results.setdefault(task[:2], []).extend(rows)  # tasks come back in order per key
        if progress:
            progress(len(task[2]))

    if workers <= 1 or len(tasks) <= 1:
        _init(context)
        for task in tasks:
            take(task, _run_chunk(task))
        return results
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=workers, initializer=_init_worker,
                             initargs=(context,)) as pool:
        for task, rows in zip(tasks, pool.map(_run_chunk, tasks)):
            take(task, rows)
    return results


def default_workers() -> int:
    return max(1, min(os.cpu_count() or 1, 8))


# -- rows ------------------------------------------------------------------------------------------
def mean_row(per_seed: Sequence[dict[str, float]], keys: Sequence[str]) -> dict[str, Any]:
    """The mean over seeds of each key (each seed's value a mean over episodes) and, over two or
    more seeds, KEY_sd, the sample standard deviation."""
    row: dict[str, Any] = {}
    for k in keys:
        values = [s[k] for s in per_seed if s.get(k) is not None]
        if not values:
            continue
        row[k] = float(np.mean(values))
        if len(per_seed) > 1:
            row[f"{k}_sd"] = float(np.std(values, ddof=1)) if len(values) > 1 else None
    return row


def episode_means(results: Sequence[dict], keys: Sequence[str]) -> dict[str, float]:
    out = {}
    for k in keys:
        values = [r["metrics"][k] for r in results if k in r["metrics"]]
        if values:
            out[k] = float(np.mean(values))
    return out


def method_row(method: Method, trace: str, per_seed: Sequence[dict[str, float]],
               episodes: int, keys: Sequence[str] = METRICS + ("rejection_ratio",)) -> dict:
    row = {"trace": trace, "method": method.label, "policy": method.policy,
           "backfill": method.backfill, "window": method.window, "tail": method.tail,
           "protocol": method.protocol, "profile": method.profile, "kind": method.kind,
           "episodes": episodes}
    row.update(mean_row(per_seed, keys))
    for k in METRICS:
        row.setdefault(k, None)
        if len(per_seed) > 1:  # so that a reader sees whether the mean rests on one seed
            row[f"{k}_per_seed"] = [s.get(k) for s in per_seed]
    row["seeds"] = list(method.seeds) if method.seeds else None
    return row


def baseline_methods(*, heuristics: Sequence[str] = HEURISTICS,
                     backfills: Sequence[str] = ("none", "easy"),
                     inspectors: Sequence[str] = INSPECTORS,
                     models: Sequence[tuple[str, str]] = (),
                     seeds: dict[str, Sequence[str]] | None = None
                     ) -> tuple[list[Method], list[str]]:
    """Fig. 3.4's methods (see the module docstring) and notes. `models`: (label or "", policy
    name) of DBF models (or any policy: run without backfilling under the profile its recipe
    names); `seeds`: label -> the policy names (or files, run folders) of one method's training
    seeds, judged as one row (mean and sd); a label not among `models` adds a method."""
    methods = heuristic_methods(heuristics, backfills)
    notes: list[str] = []
    for name in inspectors:
        methods.extend(inspector_method(as_policy_name(name, "inspect")))
    seeds = dict(seeds or {})
    given = [(label, as_policy_name(p)) for label, p in models]
    given += [(label, "") for label in seeds if label not in {lb for lb, _ in given}]
    for label, name in given:
        chosen = tuple(as_policy_name(s, (name or "dbf:").partition(":")[0] or "dbf")
                       for s in seeds.get(label, ()))
        first = chosen[0] if chosen else name
        methods.append(Method(label or first, first, "none", model_profile(first),
                              kind="model", seeds=chosen or None))
    return methods, notes


def resolve_windows(methods: Sequence[Method], trace: str) -> list[Method]:
    """Each model method with its (M, M_t) read from its loaded policy, and its label "M32" (or
    "M32-4" with a tail) where none was given; an unknown policy or a missing file fails here,
    in one line, before any episode runs."""
    from hpcsched.experiments.policyspec import resolve_policy

    out = []
    for m in methods:
        if m.kind in ("heuristic", "base"):
            out.append(m)
            continue
        window, tail = m.window, m.tail
        for name in m.policies():
            try:
                policy = resolve_policy(name, _prepared(trace, m.profile))
            except (ValueError, OSError, KeyError) as e:
                raise ValueError(str(e) if m.label in (name, m.policy) else
                                 f"{m.label}: {e}") from None
            if window is None:
                window, tail = model_window(policy)
        label = m.label
        if m.kind == "model" and label in m.policies() and window is not None:
            reading = m.policies()[0].partition("@")[2]  # dbf:PATH@masked
            label = (f"M{window}" + (f"-{tail}" if tail else "")
                     + (f"@{reading}" if reading else ""))
        out.append(replace(m, window=window, tail=tail, label=label))
    return out


def baselines(trace: str = "lublin-1", methods: Sequence[Method] | None = None, *,
              episodes: int = 100, episode_jobs: int = EPISODE_JOBS,
              offline_jobs: int = OFFLINE_JOBS, workers: int = 1,
              progress: Callable[[int], None] | None = None) -> list[dict]:
    """Fig. 3.4: one row per method over the test episodes (`test_starts`), sorted by AWT."""
    from hpcsched.experiments import schedinspector as si
    from hpcsched.recipes import locate

    methods = list(methods if methods is not None else baseline_methods()[0])
    std = _prepared(trace, "standard")
    starts = test_starts(len(std.jobs), episodes, episode_jobs=episode_jobs)
    online = [i for i, m in enumerate(methods) if m.protocol == "online"]
    context = Context(trace, tuple(methods), episode_jobs, queue_parts=True)
    results = run_online(context, {i: starts for i in online}, workers=workers, progress=progress)
    rows = []
    keys = METRICS + ("rejection_ratio",) + PART_KEYS
    for i in online:
        m = methods[i]
        per_seed = [episode_means(results[i, k], keys) for k in range(len(m.policies()))]
        rows.append(method_row(m, std.name, per_seed, len(starts), keys))
    # SchedInspector's own protocol: its experiment's code, on windows from the same starts
    done: dict[str, list[dict]] = {}
    for m in methods:
        if m.protocol != "offline":
            continue
        if m.inspector not in done:
            prepared = _prepared(trace, m.profile)
            windows = [min(s, len(prepared.jobs) - offline_jobs)
                       for s in map_starts(std, prepared, starts)]
            path = None
            if m.inspector:
                from hpcsched.experiments.policyspec import _recipe_of

                recipe, arg = _recipe_of(m.inspector)
                path = locate(recipe.split(arg)[0], recipe)
            done[m.inspector] = si.evaluate(prepared, m.base, path, windows, offline_jobs,
                                            m.backfill, progress, label=m.inspector or None)
        got = done[m.inspector][1 if m.kind == "inspector" else 0]
        row = method_row(m, std.name, [{k: got[k] for k in METRICS + ("rejection_ratio",)
                                        if got.get(k) is not None}], len(starts))
        if m.kind == "base":
            row.pop("rejection_ratio", None)
        rows.append(row)
    return sort_by_wait(rows)


def sort_by_wait(rows: list[dict]) -> list[dict]:
    """Rows by AWT, lowest first (Fig. 3.4's order); rows without one last."""
    return sorted(rows, key=lambda r: (r.get("wait") is None, r.get("wait") or 0.0))


def simulations(methods: Sequence[Method], episodes: int) -> int:
    """Episodes and windows `baselines` runs (for a progress bar)."""
    online = sum(len(m.policies()) for m in methods if m.protocol == "online") * episodes
    pairs = {m.inspector for m in methods if m.protocol == "offline"}
    offline = sum(2 if p else 1 for p in pairs) * episodes
    return online + offline


# -- the thesis's claims (section 3.4.3), checked ---------------------------------------------------
@dataclass(frozen=True)
class Claim:
    """A fact the thesis reports, ours beside it, and whether it holds on our rows."""

    claim: str
    thesis: str
    ours: str
    verdict: str  # "holds", "does not hold", "not judged"

    def line(self) -> str:
        return f"{self.claim} (thesis: {self.thesis}): {self.verdict.upper()}: {self.ours}"


def _fmt(x: float | None, digits: int = 1) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{x:,.{digits}f}"


def _seeds_below(row: dict, best_w: dict, best_q: dict) -> str:
    """For a row over training seeds: each seed's AWT and queue length, and how many seeds are
    below each best by themselves (the verdict is the mean's)."""
    waits, queues = row.get("wait_per_seed"), row.get("queue_length_per_seed")
    if not waits or not queues:
        return ""
    return (f" (mean of {len(waits)} seeds: AWT " + ", ".join(_fmt(w, 0) for w in waits)
            + ", queue " + ", ".join(_fmt(q) for q in queues)
            + f"; seeds below by themselves: "
            + seeds_below(row, best_w["wait"], best_q["queue_length"]) + ")")


def seeds_below(row: dict, wait: float, queue: float) -> str:
    """How many of a row's training seeds are below `wait` on AWT and below `queue` on queue
    length, each by itself: "k of n on AWT, m of n on queue"."""
    waits, queues = row["wait_per_seed"], row["queue_length_per_seed"]
    return (f"{sum(w < wait for w in waits)} of {len(waits)} on AWT, "
            f"{sum(q < queue for q in queues)} of {len(queues)} on queue")


def _models_text(models: Sequence[dict], best_w: dict, best_q: dict) -> str:
    """Each DBF row's AWT and queue length (and its seeds'), for the facts that compare them."""
    return ", ".join(f"{r['method']} AWT {_fmt(r['wait'], 0)} s, queue "
                     f"{_fmt(r['queue_length'])}" + _seeds_below(r, best_w, best_q)
                     for r in models)


def claims(rows: Sequence[dict]) -> list[Claim]:
    """Fig. 3.4's facts (spec section 4.7) on our rows: SchedInspector+SJF's bsld under SJF's,
    DBF with M >= 32 the best AWT and queue length, the heuristics' slightly better utilisation
    and job load, SchedInspector's lowest utilisation."""
    out = []
    # 1. SchedInspector+SJF bsld 62.2 against SJF 73.3 (its own objective)
    thesis = "SchedInspector+SJF bsld 62.2 vs SJF 73.3"
    pairs = []
    for r in rows:
        if r.get("kind") == "inspector" and r.get("protocol") == "offline" \
                and r["method"].startswith("Insp-SJF"):
            base = next((b for b in rows if b.get("kind") == "base"
                         and b["method"] == base_label(r["method"])), None)
            if base is not None and base.get("bsld") is not None and r.get("bsld") is not None:
                pairs.append((r, base))
    if not pairs:
        out.append(Claim("SchedInspector+SJF has a lower bsld than SJF", thesis,
                         "no SchedInspector+SJF model with its base in the rows", "not judged"))
    else:
        # the thesis ran SchedInspector with backfilling: that model first, where there is one
        pairs.sort(key=lambda p: p[0]["backfill"] == "none")
        r, b = pairs[0]
        holds = r["bsld"] < b["bsld"]
        text = f"{r['method']} {_fmt(r['bsld'])} vs {b['method']} {_fmt(b['bsld'])}"
        others = [f"{x['method']} {_fmt(x['bsld'])} vs {y['method']} {_fmt(y['bsld'])}"
                  for x, y in pairs[1:]]
        if others:
            text += " (also " + "; ".join(others) + ")"
        out.append(Claim("SchedInspector+SJF has a lower bsld than SJF", thesis, text,
                         "holds" if holds else "does not hold"))
    # 2. DBF with M >= 32: the best AWT and average queue length of all methods
    dbf = [r for r in rows if r.get("kind") == "model" and (r.get("window") or 0) >= 32]
    # Fig. 3.4's other methods (our offline base rows are not among them)
    others = [r for r in rows if r.get("kind") in ("heuristic", "inspector")]
    thesis = "DBF M = 32, 64, 128 have the best AWT and queue length of all methods"
    if not dbf or not others:
        out.append(Claim("DBF with M >= 32: best AWT and queue length", thesis,
                         "no DBF model with M >= 32 in the rows", "not judged"))
    else:
        best_w = min(others, key=lambda r: r["wait"])
        best_q = min(others, key=lambda r: r["queue_length"])
        holds = all(r["wait"] < best_w["wait"] and r["queue_length"] < best_q["queue_length"]
                    for r in dbf)
        text = (_models_text(dbf, best_w, best_q)
                + f"; best other: AWT {_fmt(best_w['wait'], 0)} s ({best_w['method']}), queue "
                  f"{_fmt(best_q['queue_length'])} ({best_q['method']})")
        out.append(Claim("DBF with M >= 32: best AWT and queue length", thesis, text,
                         "holds" if holds else "does not hold"))
    # 2b. issue 16's reading of it: against the heuristic baselines (with and without EASY)
    # alone, since the offline rows' windows drain (no arrival after the 128th job), so that
    # their queues are not an online method's
    heur = [r for r in rows if r.get("kind") == "heuristic"]
    thesis = "DBF M = 32, 64, 128 below FCFS, SJF and LCFS, with and without EASY"
    claim = "DBF with M >= 32: lower AWT and queue length than every heuristic"
    if not dbf or not heur:
        out.append(Claim(claim, thesis, "no DBF model with M >= 32 in the rows" if heur
                         else "no heuristic in the rows", "not judged"))
    else:
        best_w = min(heur, key=lambda r: r["wait"])
        best_q = min(heur, key=lambda r: r["queue_length"])
        awt = all(r["wait"] < best_w["wait"] for r in dbf)
        queue = all(r["queue_length"] < best_q["queue_length"] for r in dbf)
        text = (_models_text(dbf, best_w, best_q)
                + f"; best heuristic: AWT {_fmt(best_w['wait'], 0)} s ({best_w['method']}), "
                  f"queue {_fmt(best_q['queue_length'])} ({best_q['method']}); AWT "
                  + ("below" if awt else "not below") + ", queue "
                  + ("below" if queue else "not below"))
        out.append(Claim(claim, thesis, text, "holds" if awt and queue else "does not hold"))
    # 3. the heuristics: slightly better utilisation and job load than DBF
    models = [r for r in rows if r.get("kind") == "model"]
    thesis = "the heuristics get slightly better utilisation and job load than DBF"
    if not heur or not models:
        out.append(Claim("heuristics: better utilisation and job load than DBF", thesis,
                         "no DBF model in the rows" if heur else "no heuristic in the rows",
                         "not judged"))
    else:
        hu, mu = max(heur, key=lambda r: r["utilization"]), max(models,
                                                                  key=lambda r: r["utilization"])
        hl, ml = min(heur, key=lambda r: r["job_load"]), min(models, key=lambda r: r["job_load"])
        holds = hu["utilization"] >= mu["utilization"] and hl["job_load"] <= ml["job_load"]
        text = (f"best utilisation {100 * hu['utilization']:.2f}% ({hu['method']}) vs DBF "
                f"{100 * mu['utilization']:.2f}% ({mu['method']}); lowest job load "
                f"{_fmt(hl['job_load'], 0)} s ({hl['method']}) vs DBF {_fmt(ml['job_load'], 0)} s "
                f"({ml['method']})")
        out.append(Claim("heuristics: better utilisation and job load than DBF", thesis, text,
                         "holds" if holds else "does not hold"))
    # 4. SchedInspector (online and offline): the lowest utilisation
    insp = [r for r in rows if r.get("kind") == "inspector" and r.get("utilization") is not None]
    rest = [r for r in rows if r.get("kind") in ("heuristic", "model")
            and r.get("utilization") is not None]
    thesis = "SchedInspector (online and offline) has the lowest utilisation"
    if not insp or not rest:
        out.append(Claim("SchedInspector: lowest utilisation", thesis,
                         "no SchedInspector row" if not insp else "nothing to compare with",
                         "not judged"))
    else:
        low_rest = min(rest, key=lambda r: r["utilization"])
        below = [r for r in insp if r["utilization"] < low_rest["utilization"]]
        lowest = min(insp + rest, key=lambda r: r["utilization"])
        holds = lowest.get("kind") == "inspector"
        text = (f"lowest: {lowest['method']} {100 * lowest['utilization']:.2f}%; lowest other: "
                f"{low_rest['method']} {100 * low_rest['utilization']:.2f}%; "
                f"{len(below)} of {len(insp)} SchedInspector rows below every other")
        online = [r for r in insp if r.get("protocol") == "online"]
        if online:  # the offline windows' utilization counts their drain: online alone too
            low_online = [r["method"] for r in online
                          if r["utilization"] < low_rest["utilization"]]
            text += (f"; online alone: {len(low_online)} of {len(online)} below every other"
                     + (f" ({', '.join(low_online)})" if low_online else ""))
        out.append(Claim("SchedInspector: lowest utilisation", thesis, text,
                         "holds" if holds else "does not hold"))
    return out


# -- the figure --------------------------------------------------------------------------------------
def plot_baselines(rows: Sequence[dict], path) -> Any:
    """Fig. 3.4: one panel per metric, a bar per method, methods sorted by AWT (error bars: the
    sd over training seeds, where there is one)."""
    from hpcsched.report.plots import _pyplot, save_figure

    plt = _pyplot()
    rows = sort_by_wait(list(rows))
    titles = {"utilization": "utilisation (%)", "wait": "average waiting time (s)",
              "queue_length": "average queue length", "job_load": "average job load (s)",
              "bsld": "average bounded slowdown"}
    fig, axes = plt.subplots(1, len(METRICS), figsize=(4 * len(METRICS), 4.5), dpi=100)
    labels = [r["method"] for r in rows]
    colours = {"heuristic": "tab:blue", "inspector": "tab:orange", "base": "tab:gray",
               "model": "tab:green"}
    for ax, key in zip(axes, METRICS):
        scale = 100.0 if key == "utilization" else 1.0
        values = [(r.get(key) or 0.0) * scale for r in rows]
        errs = [(r.get(f"{key}_sd") or 0.0) * scale for r in rows]
        ax.bar(range(len(rows)), values, yerr=errs if any(errs) else None,
               color=[colours.get(r.get("kind"), "tab:purple") for r in rows])
        ax.set_xticks(range(len(rows)))
        ax.set_xticklabels(labels, rotation=70, ha="right", fontsize=7)
        ax.set_title(titles[key], fontsize=9)
        if key in ("wait", "queue_length", "job_load", "bsld") and values and \
                min(v for v in values if v > 0) * 50 < max(values):
            ax.set_yscale("log")
        ax.grid(axis="y", alpha=0.3)
    from matplotlib.patches import Patch

    names = {"heuristic": "heuristic", "inspector": "SchedInspector",
             "base": "its base (offline)", "model": "DBF / given model"}
    kinds = [k for k in names if any(r.get("kind") == k for r in rows)]
    axes[0].legend(handles=[Patch(color=colours[k], label=names[k]) for k in kinds],
                   fontsize=7, loc="lower left")
    fig.suptitle("DBF (Ch. 3, Fig. 3.4): methods sorted by average waiting time", fontsize=10)
    return save_figure(fig, path)


__all__ = ["Claim", "Context", "DBF_MODELS", "EPISODE_JOBS", "Episode", "HEURISTICS", "INSPECTORS",
           "METRICS", "Method", "OFFLINE_JOBS", "PART_KEYS", "baseline_methods", "baselines",
           "claims", "episode_span", "heuristic_methods", "inspector_method", "map_starts",
           "mean_row", "plot_baselines", "resolve_windows", "run_episode", "run_online",
           "shipped_models", "simulations", "sort_by_wait", "test_starts"]
