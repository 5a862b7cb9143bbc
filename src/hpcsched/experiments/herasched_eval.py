"""HeraSched against the heuristic grid on held-out periods (issue 17 part 5, thesis Ch. 4 §4.4):
`experiment herasched`.

    prepared = period_prepared("spartan-deeplearn", "test")        # the held-out test period
    ev = evaluate(prepared, ["runs/a", "runs/b"], cluster="spartan-deeplearn", period="test")
    ev.rows()                    # flat rows: the 21 cells, each model, HeraSched's mean
    ev.criteria()                # the issue's criteria, as plain facts

On one period: the 21 cells of Appendix B (7 selectors x 3 allocators, EASY, `herasched_grid`),
each model given (one per training seed) scheduling the same jobs, and from those runs

- Appendix B's table with HeraSched's rows: each model's AWT / MWT, and their mean and spread;
- Fig. 4.5: the relative differences (cell - HeraSched) / HeraSched of AWT and MWT, against the
  models' mean;
- Fig. 4.8: the combined score S = AWT_cell / AWT_H + MWT_cell / MWT_H of HeraSched against
  every cell (above 2: HeraSched is the better of the two), per model, then averaged over them.
  The thesis's bars are the same comparison seen from the cell (its S against HeraSched, below 2
  where HeraSched is better);
- Table 4.3: per node kind, the mean per-node request (cores, memory, GPUs) of the jobs HeraSched
  placed on a node of that kind, a job counting once in each kind it has a node of, beside the
  mean request of all jobs (a kind that attracts no particular jobs shows that mean);
- Fig. 4.6: how often the selector chose each window slot, and Forward, over all its decisions.

Periods are `workload.hera_periods`'s (generated with fixed seeds, or cut from the real CERIT-SC
log), their times counted from the first submission as a file of them would be read
(`workload.timecut.from_first_submission`).

Without a model the evaluation is the grid alone (`evaluate(prepared, [])`): the cells' rows, no
HeraSched row, no S and no criteria, which need a model to compare with.

Learned baselines (`baselines=["rl:runs/rl-ph", "dras:runs/dras-ph"]`, issue 17's "RLScheduler
and DRAS-PG trained on the same data"): models of schedulers learned on processor counts, run as
the selector of one more cell of the grid's own simulation (the hpcsim profile, EASY), their jobs
placed by best-fit (`SPEC+ALLOCATOR` for another allocator), each seeing jobs as total cores
(`envs.cores_view`; train one on `trace convert --cores-of CLUSTER`). Each is a row beside the
cells, and HeraSched's S is taken against it as against a cell. `check_baseline` refuses, before
any run, a spec that cannot run on the partition, naming it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Callable, Sequence

import numpy as np

from hpcsched.experiments import herasched_grid as hg
from hpcsched.sim.metrics import combined_score
from hpcsched.sim.run import Prepared, prepare, simulate

#: the protocol's periods HeraSched is reported on (train and validation choose the model)
REPORTED = ("test", "test-high-load")
PROFILE = "hpcsim"
BACKFILL = "easy"
#: the allocator that places a learned baseline's jobs unless its spec names another
BASELINE_ALLOCATOR = "best-fit"
#: memory in the tables: MB / 1024, the unit of the node kinds' names (28c/229G/4gpu)
MB_PER_GB = 1024.0


def period_prepared(cluster: str, split: str, jobs: int | None = None) -> Prepared:
    """The period `split` of `cluster`'s protocol (`hera_period`: generated, or cut from a real
    log) prepared under the hpcsim profile on the bundled cluster, jobs larger than the cluster
    dropped (counted in `Prepared.summary`) where the period says so (a real log's); `jobs`: only
    its first N jobs."""
    from hpcsched.workload.hera_periods import hera_period

    period = hera_period(cluster, split)
    prepared = prepare(period.jobs(), PROFILE, cluster=period.cluster,
                       drop_oversized=period.drop_oversized)
    if jobs is not None:
        prepared = replace(prepared, jobs=prepared.jobs.window(0, min(jobs, len(prepared.jobs))))
    return prepared


# ---- Table 4.3 ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class KindRequests:
    """Table 4.3's column for one node kind: the mean per-node request of the jobs placed there."""

    kind: str  # the kind's name (28c/229G/4gpu), or "all jobs"
    nodes: int  # nodes of the kind (0 for "all jobs")
    jobs: int  # jobs with at least one node of the kind
    cores: float  # mean requested cores per node (NaN when no job)
    memory: float  # GB (MB / 1024)
    gpus: float


def kind_requests(jobs, allocations: Sequence, cluster) -> list[KindRequests]:
    """Table 4.3 of one run: per node kind of `cluster` (in its order), the mean per-node request
    of the jobs that have a node of that kind in `allocations` (node indices per job, None for a
    job that never started), each job once per kind; then the mean over every started job
    ("all jobs")."""
    from hpcsched.cluster.request import job_requests

    _, per_node = job_requests(jobs, cluster)
    col = {r: cluster.resources.index(r) for r in ("cores", "memory", "gpus")
           if r in cluster.resources}
    sums = np.zeros((len(cluster.kinds), 3))
    counts = np.zeros(len(cluster.kinds), dtype=np.int64)
    total, started = np.zeros(3), 0
    for row, nodes in enumerate(allocations):
        if nodes is None or len(nodes) == 0:
            continue
        request = np.array([per_node[row, col[r]] if r in col else 0.0
                            for r in ("cores", "memory", "gpus")], dtype=float)
        request[1] /= MB_PER_GB
        for k in np.unique(cluster.kind[np.asarray(nodes, dtype=np.int64)]):
            sums[k] += request
            counts[k] += 1
        total += request
        started += 1

    def mean(values, n):
        return values / n if n else np.full(3, math.nan)

    out = []
    for k, name in enumerate(cluster.kinds):
        c, m, g = mean(sums[k], counts[k])
        out.append(KindRequests(name, int(np.sum(cluster.kind == k)), int(counts[k]), c, m, g))
    c, m, g = mean(total, started)
    out.append(KindRequests("all jobs", 0, started, c, m, g))
    return out


# ---- Fig. 4.6 -----------------------------------------------------------------------------------

def slot_bins(slots: np.ndarray, window: int, tail: int, middle_bins: int = 8
              ) -> list[tuple[str, int]]:
    """Fig. 4.6's histogram of selector choices: (label, count) for slot 0 (the head), the middle
    slots 1 .. W-T-1 in up to `middle_bins` equal ranges, the tail slots W-T .. W-1 as one bin,
    and Forward (`slots[window]`). The counts add up to `slots.sum()`, every selector decision."""
    slots = np.asarray(slots, dtype=np.int64)
    if slots.shape != (window + 1,):
        raise ValueError(f"expected {window + 1} slot counts (W = {window} and Forward), got "
                         f"{slots.shape[0]}")
    out = [("0", int(slots[0]))]
    first, last = 1, window - tail  # the middle: [first, last)
    if last > first:
        edges = np.unique(np.linspace(first, last, min(middle_bins, last - first) + 1).astype(int))
        for a, b in zip(edges[:-1], edges[1:]):
            out.append((f"{a}" if b - a == 1 else f"{a}-{b - 1}", int(slots[a:b].sum())))
    if tail:
        out.append((f"{window - tail}-{window - 1} (tail)", int(slots[window - tail:window].sum())))
    out.append(("Forward", int(slots[window])))
    return out


# ---- one period ---------------------------------------------------------------------------------

class _Waits:
    """AWT and MWT of a run's `metrics`."""

    metrics: dict

    @property
    def awt(self) -> float:
        return float(self.metrics["wait"])

    @property
    def mwt(self) -> float:
        return float(self.metrics["max_wait"])


@dataclass
class ModelRun(_Waits):
    """One model (one training seed) on the period."""

    model: str  # as given: a file, a run folder or pretrained/NAME
    metrics: dict
    slots: np.ndarray  # (W + 1,) selector choices per slot, Forward last
    window: int
    tail: int
    kinds: list[KindRequests]
    #: what placed its jobs: ``agent`` (its allocator agent), or the heuristic of
    #: ``@allocator=NAME`` or of its training (`train herasched --allocator`)
    placed: str = "agent"


def check_model(model: str, cluster, name: str = "") -> None:
    """Refuse, before any run, a HeraSched model (file, run folder, pretrained/NAME) that cannot
    schedule `cluster` (a `Cluster`, named `name` in the message): the thesis's MLPs read only a
    cluster of the shape they were trained on (our network reads any)."""
    from hpcsched import recipes
    from hpcsched.agents.herasched_nets import fits_layout
    from hpcsched.agents.herasched_policy import load_herasched
    from hpcsched.envs.hera_observation import HeraLayout

    from hpcsched.recipes.herasched import model_options

    recipe = recipes.get("herasched")
    path, option = recipe.split(model)
    model_options(option, f"herasched:{model}")
    policy = load_herasched(recipes.locate(path, recipe))
    try:
        layout = HeraLayout.of(cluster, policy.window, policy.tail)
        fits_layout(policy.net, {"selector_policy": policy.selector,
                                 "allocator_policy": policy.allocator}, layout)
    except ValueError as e:
        raise ValueError(f"herasched:{model} cannot schedule {name or cluster.name}: {e}") from None


def run_model(prepared: Prepared, model: str) -> ModelRun:
    """The HeraSched model `model` (file, run folder, pretrained/NAME) on the whole prepared
    period, greedy, under EASY (which never acts behind it: it starts only jobs that fit)."""
    from hpcsched.experiments.policyspec import resolve_policy

    policy = resolve_policy(f"herasched:{model}", prepared)
    result = simulate(prepared, policy, backfill=BACKFILL)
    if "unstarted" in result.metrics:
        raise RuntimeError(f"herasched:{model}: {result.metrics['unstarted']} job(s) never "
                           f"started")
    return ModelRun(model, dict(result.metrics), policy.slots.copy(), policy.window, policy.tail,
                    kind_requests(result.jobs, result.allocations, prepared.cluster),
                    policy.place_with or "agent")


# ---- learned baselines --------------------------------------------------------------------------

@dataclass
class BaselineRun(_Waits):
    """One learned baseline (a model of a scheduler learned on processor counts) on the period."""

    spec: str  # as given, without +ALLOCATOR: rl:runs/rl-ph, dras:runs/dras-ph/best.pt
    allocator: str  # what placed its jobs
    metrics: dict

    @property
    def label(self) -> str:
        return f"{self.spec}+{self.allocator}"


def check_baseline(spec: str, cluster, name: str = "") -> tuple[str, str]:
    """(policy, allocator) of a learned baseline `spec` (``rl:MODEL``, ``dras:MODEL``, with an
    optional ``+ALLOCATOR``; default best-fit) for the partition `cluster` (a `Cluster`, named
    `name` in messages). Refused in one line naming the spec, before any run: a heuristic (the
    grid's cells are the heuristics), a HeraSched model (--models), a scheduler that does not see
    jobs as cores (SchedInspector, DeepRM, DBF), a model file that is missing or of another
    recipe, a DRAS model of another core count or one that does not reserve (Decima-PG: it runs
    without backfilling, the grid with EASY)."""
    from hpcsched import recipes
    from hpcsched.envs import DRAS, PICK_JOB
    from hpcsched.experiments.policyspec import split_allocator
    from hpcsched.sim.profiles import get_profile

    where = f"--baselines {spec}"
    on = name or cluster.name
    try:
        policy, allocator = split_allocator(spec)
    except ValueError as e:
        raise ValueError(f"{where}: {e}") from None
    prefix, colon, arg = policy.partition(":")
    recipe = recipes.find(prefix) if colon else None
    if recipe is None:
        raise ValueError(f"{where}: not a learned scheduler's model (a baseline is rl:MODEL or "
                         f"dras:MODEL; the heuristics are the grid's cells)")
    if recipe.places_jobs:
        raise ValueError(f"{where}: a {recipe.name} model is given with --models, not as a "
                         f"baseline")
    if recipe.env_id not in (PICK_JOB, DRAS):
        raise ValueError(f"{where}: a {recipe.name} model does not see jobs as the cores of "
                         f"{on}'s named nodes (the baselines are rl: and dras: models)")
    model, option = recipe.split(arg)
    if recipe.rule(model) is not None or option:
        raise ValueError(f"{where}: name a model file, a run folder or pretrained/NAME")
    try:
        path = recipes.locate(model, recipe)
        found, checkpoint = recipes.model_of(path)
    except (ValueError, OSError) as e:
        raise ValueError(f"{where}: {e}") from None
    if found is not recipe:
        raise ValueError(f"{where}: {path} is a {found.name} model, not a {recipe.name} one "
                         f"({found.prefix}:)")
    if recipe.env_id == DRAS:
        from hpcsched.agents.dras_policy import check_named
        from hpcsched.experiments.dras_training import load_agent

        agent, config = load_agent(path)
        try:
            check_named(agent.rows, config, cluster, get_profile(PROFILE), BACKFILL, name=where)
        except ValueError as e:
            raise ValueError(f"{e} (on {on})") from None
    else:
        from hpcsched.cluster.cores import check_shared

        try:
            check_shared(cluster)
        except ValueError as e:
            raise ValueError(f"{where}: {e}") from None
    return policy, allocator or BASELINE_ALLOCATOR


def run_baseline(prepared: Prepared, spec: str) -> BaselineRun:
    """The learned baseline `spec` (checked by `check_baseline`, as `evaluate` does before any
    run) on the whole prepared period, greedy: the grid's engine (its profile, EASY) with the
    baseline's allocator, as a cell is run."""
    from hpcsched.experiments.policyspec import resolve_policy, split_allocator
    from hpcsched.sim.factory import make_engine

    policy_spec, allocator = split_allocator(spec)
    allocator = allocator or BASELINE_ALLOCATOR
    policy = resolve_policy(policy_spec, prepared)
    engine = make_engine(prepared.jobs, prepared.cluster, prepared.profile, BACKFILL,
                         allocator=allocator)
    result = engine.run(policy)
    if "unstarted" in result.metrics:
        raise RuntimeError(f"{spec}: {result.metrics['unstarted']} job(s) never started")
    return BaselineRun(policy_spec, allocator, dict(result.metrics))


def _stats(values: Sequence[float]) -> tuple[float, float]:
    """(mean, sample standard deviation; 0 for one value)."""
    v = np.asarray(values, dtype=float)
    return float(v.mean()), float(v.std(ddof=1)) if v.size > 1 else 0.0


@dataclass
class Evaluation:
    """HeraSched's models and the grid on one period."""

    cluster: str
    period: str  # the split: test, test-high-load, ...
    grid: hg.Grid
    runs: list[ModelRun]
    seconds: dict[str, float] = field(default_factory=dict)
    baselines: list[BaselineRun] = field(default_factory=list)
    #: what the baselines' view of the period leaves out (`cluster.cores.CoresReport.summary`)
    cores_view: str = ""
    #: shuffled copies averaged in (`evaluate_tie_draws`; 0: the period as generated alone)
    tie_draws: int = 0
    #: the period's groups of jobs alike (`workload.ties.TieGroups.describe`), with tie draws
    ties: str = ""

    @property
    def seeds(self) -> list[str]:
        return [r.model for r in self.runs]

    def herasched(self) -> dict:
        """The models' mean AWT (`wait`) and MWT (`max_wait`), and their standard deviations (an
        evaluation without a model has none)."""
        if not self.runs:
            raise ValueError("no HeraSched model was evaluated: the grid alone")
        awt, awt_sd = _stats([r.awt for r in self.runs])
        mwt, mwt_sd = _stats([r.mwt for r in self.runs])
        return {"wait": awt, "wait_sd": awt_sd, "max_wait": mwt, "max_wait_sd": mwt_sd}

    def scores(self, run: ModelRun) -> dict:
        """{cell: S} of `run` against every cell: AWT_cell / AWT_H + MWT_cell / MWT_H."""
        return {c: combined_score(run.metrics, self.grid.metrics[c]) for c in self.grid.cells()}

    def mean_scores(self) -> dict:
        """{cell: (mean S over the models, its standard deviation)}."""
        per = [self.scores(r) for r in self.runs]
        return {c: _stats([p[c] for p in per]) for c in self.grid.cells()}

    def baseline_scores(self, run: ModelRun) -> dict:
        """{baseline label: S} of `run` against every learned baseline, as against a cell."""
        return {b.label: combined_score(run.metrics, b.metrics) for b in self.baselines}

    def mean_baseline_scores(self) -> dict:
        """{baseline label: (mean S over the models, its standard deviation)}."""
        per = [self.baseline_scores(r) for r in self.runs]
        return {b.label: _stats([p[b.label] for p in per]) for b in self.baselines}

    def baseline_facts(self, b: BaselineRun) -> dict:
        """A baseline against the grid: how many cells wait longer on average (AWT) and at most
        (MWT) than it does, and its S against the grid's best cell (`Grid.reference`; above 2:
        the baseline is the better of the two)."""
        g, cells = self.grid, self.grid.cells()
        ref = g.reference()
        return {"cells_awt_above": sum(g.awt(c) > b.awt for c in cells),
                "cells_mwt_above": sum(g.mwt(c) > b.mwt for c in cells),
                "best_cell": hg.cell_name(ref),
                "score_vs_best_cell": combined_score(b.metrics, g.metrics[ref])}

    def slots(self) -> np.ndarray:
        """The selector's choices per slot, summed over the models."""
        return np.sum([r.slots for r in self.runs], axis=0)

    def kinds(self) -> list[KindRequests]:
        """Table 4.3 averaged over the models (each model's per-kind means, averaged; jobs summed);
        none without a model."""
        out = []
        if not self.runs:
            return out
        for i, first in enumerate(self.runs[0].kinds):
            ks = [r.kinds[i] for r in self.runs]
            with np.errstate(all="ignore"):
                def avg(name):
                    vals = [getattr(k, name) for k in ks if not math.isnan(getattr(k, name))]
                    return float(np.mean(vals)) if vals else math.nan
                out.append(KindRequests(first.kind, first.nodes, sum(k.jobs for k in ks),
                                        avg("cores"), avg("memory"), avg("gpus")))
        return out

    def paired_mwt(self, cell) -> dict:
        """With tie draws: HeraSched's MWT (the models' mean, draw by draw) minus `cell`'s on the
        same schedules: the mean difference, its standard error, and on how many of the draws
        HeraSched's is lower. The draws' common luck cancels in each difference, so this tells
        whether a gap is larger than the tie order's noise."""
        if not self.tie_draws or not self.runs:
            raise ValueError("a paired comparison needs models and tie draws (--tie-draws K)")
        mine = np.mean([r.metrics["max_wait_draws"] for r in self.runs], axis=0)
        diff = mine - np.asarray(self.grid.metrics[cell]["max_wait_draws"])
        mean, sd = _stats(diff)
        return {"difference": mean, "standard_error": sd / math.sqrt(diff.size),
                "lower": int(np.sum(diff < 0)), "draws": int(diff.size)}

    # -- the criteria --------------------------------------------------------------------

    def criteria(self) -> list[str]:
        """The issue's two criteria as facts, for the models' mean and for each model: HeraSched's
        MWT below every cell's, and against how many cells S > 2 (none without a model)."""
        if not self.runs:
            return []
        grid, cells = self.grid, self.grid.cells()
        n = len(cells)
        low = grid.best_mwt()
        mean = self.herasched()
        below = sum(grid.mwt(c) > mean["max_wait"] for c in cells)
        many = len(self.runs) > 1
        what = f"mean of {len(self.runs)} models" if many else self.runs[0].model
        lines = [f"HeraSched's MWT below every cell's: {'yes' if below == n else 'no'} "
                 f"({mean['max_wait']:,.0f} s, {what}; the lowest cell's {grid.mwt(low):,.0f} s, "
                 f"{hg.cell_name(low)}; below {below} of {n} cells)"]
        if self.tie_draws:
            p = self.paired_mwt(low)
            lines.append(f"paired over the {p['draws']} schedules, HeraSched's MWT minus "
                         f"{hg.cell_name(low)}'s: {p['difference']:+,.0f} s (standard error "
                         f"{p['standard_error']:,.0f} s), lower on {p['lower']} of {p['draws']}")
        scores = self.mean_scores()
        above = sum(s > 2 for s, _ in scores.values())
        worst = min(cells, key=lambda c: scores[c][0])
        best = max(cells, key=lambda c: scores[c][0])
        lines.append(f"S > 2 against {above} of {n} cells ({'mean S over the models' if many else what}"
                     f"; lowest S {scores[worst][0]:.2f} against {hg.cell_name(worst)}, highest "
                     f"{scores[best][0]:.2f} against {hg.cell_name(best)})")
        if many:
            for r in self.runs:
                s = self.scores(r)
                b = sum(grid.mwt(c) > r.mwt for c in cells)
                lines.append(f"  {r.model}: AWT {r.awt:,.1f} s, MWT {r.mwt:,.0f} s; MWT below "
                             f"every cell's: {'yes' if b == n else 'no'} (below {b} of {n}); "
                             f"S > 2 against {sum(v > 2 for v in s.values())} of {n}")
        if self.baselines:
            bs = self.mean_baseline_scores()
            k = len(self.baselines)
            below = sum(b.mwt > mean["max_wait"] for b in self.baselines)
            lines.append(f"against the {k} learned baseline(s): MWT below {below} of {k}; S > 2 "
                         f"against {sum(v > 2 for v, _ in bs.values())} of {k} ("
                         + ", ".join(f"{label} {v:.2f}" for label, (v, _) in bs.items()) + ")")
        return lines

    # -- rows ------------------------------------------------------------------------------------

    def rows(self) -> list[dict]:
        """Flat rows: one per cell (`score`: S of HeraSched against it, mean over the models, and
        `score_sd`; `awt_rel`, `mwt_rel`: Fig. 4.5's against the models' mean), one per model
        (its metrics, Fig. 4.6's counts, Table 4.3's means per kind), and HeraSched's mean. Each
        carries cluster, period, trace, policy, allocator, backfill, wait, max_wait and seeds
        (the models behind it; [] for a cell). Without a model: the cells' rows alone, no S."""
        base = {"cluster": self.cluster, "period": self.period, "trace": self.grid.workload,
                "profile": self.grid.profile, "tie_draws": self.tie_draws}
        out = []
        for cell in self.grid.cells():
            row = {**base, "policy": cell[0], "allocator": cell[1], "backfill": BACKFILL,
                   "kind": "cell"}
            row.update(hg.row_numbers(self.grid.metrics[cell]))
            row["seeds"] = []
            out.append(row)
        brows = []
        for b in self.baselines:
            row = {**base, "policy": b.spec, "allocator": b.allocator, "backfill": BACKFILL,
                   "kind": "baseline"}
            row.update(hg.row_numbers(b.metrics))
            row.update(seeds=[b.spec], **self.baseline_facts(b))
            brows.append(row)
        out += brows
        if not self.runs:
            return out
        mean = self.herasched()
        scores = self.mean_scores()
        for row, cell in zip(out, self.grid.cells()):
            awt_rel, mwt_rel = self.grid.relative(cell, mean)
            row.update(score=scores[cell][0], score_sd=scores[cell][1], awt_rel=awt_rel,
                       mwt_rel=mwt_rel)
        bscores = self.mean_baseline_scores()
        for row, b in zip(brows, self.baselines):
            row.update(score=bscores[b.label][0], score_sd=bscores[b.label][1],
                       awt_rel=_rel(b.awt, mean["wait"]), mwt_rel=_rel(b.mwt, mean["max_wait"]))
        for run in self.runs:
            row = {**base, "policy": f"herasched:{run.model}", "allocator": run.placed,
                   "backfill": BACKFILL, "kind": "herasched"}
            row.update(hg.row_numbers(run.metrics))
            s = self.scores(run)
            row.update(seeds=[run.model], cells_s_above_2=sum(v > 2 for v in s.values()),
                       cells_mwt_above=sum(self.grid.mwt(c) > run.mwt for c in s),
                       selector_decisions=int(run.slots.sum()),
                       selector_slots=[int(x) for x in run.slots])
            if self.baselines:
                bs = self.baseline_scores(run)
                row.update(baselines_s_above_2=sum(v > 2 for v in bs.values()),
                           baselines_mwt_above=sum(b.mwt > run.mwt for b in self.baselines))
            for label, count in slot_bins(run.slots, run.window, run.tail):
                row[f"slots_{label.split(' ')[0]}"] = count
            for k in run.kinds:
                key = k.kind.replace(" ", "_")
                row.update({f"jobs_{key}": k.jobs, f"cores_{key}": k.cores,
                            f"memory_gb_{key}": k.memory, f"gpus_{key}": k.gpus})
            out.append(row)
        cells = self.grid.cells()
        placers = sorted({run.placed for run in self.runs})
        row = {**base, "policy": "herasched", "allocator": ",".join(placers), "backfill": BACKFILL,
               "kind": "herasched", **mean, "models": len(self.runs), "seeds": self.seeds,
               "cells_s_above_2": sum(scores[c][0] > 2 for c in cells),
               "cells_mwt_above": sum(self.grid.mwt(c) > mean["max_wait"] for c in cells)}
        if self.baselines:
            row.update(baselines_s_above_2=sum(v > 2 for v, _ in bscores.values()),
                       baselines_mwt_above=sum(b.mwt > mean["max_wait"] for b in self.baselines))
        if self.tie_draws:
            low = self.grid.best_mwt()
            p = self.paired_mwt(low)
            row.update(paired_cell=hg.cell_name(low), paired_difference=p["difference"],
                       paired_standard_error=p["standard_error"], paired_lower=p["lower"])
        out.append(row)
        return out


def _rel(value: float, reference: float) -> float:
    """(value - reference) / reference, Fig. 4.5's relative difference (`Grid.relative`'s)."""
    return hg._relative(value, reference)


def evaluate(prepared: Prepared, models: Sequence[str], *, cluster: str, period: str,
             progress: Callable[[str], None] | None = None,
             baselines: Sequence[str] = ()) -> Evaluation:
    """The 21 cells, every learned baseline in `baselines` (`run_baseline`) and every model in
    `models` (one per training seed; none: the grid alone) on the prepared period;
    `progress(label)` after each run. `seconds` holds the CPU seconds of each model and baseline
    (by its spec as given)."""
    import time

    for model in models:  # a model that cannot read the cluster fails before the grid runs
        check_model(model, prepared.cluster, cluster)
    for spec in baselines:
        check_baseline(spec, prepared.cluster, cluster)
    grid = hg.run_grid(prepared, workload=prepared.name, backfill=BACKFILL, progress=progress)
    runs, seconds, done = [], {}, []
    for spec in baselines:
        t0 = time.process_time()
        done.append(run_baseline(prepared, spec))
        seconds[spec] = time.process_time() - t0
        if progress:
            progress(spec)
    for model in models:
        t0 = time.process_time()
        runs.append(run_model(prepared, model))
        seconds[model] = time.process_time() - t0
        if progress:
            progress(f"herasched:{model}")
    view = ""
    if baselines:
        from hpcsched.cluster.cores import cores_report

        view = cores_report(prepared.jobs, prepared.cluster).summary()
    return Evaluation(cluster, period, grid, runs, seconds, done, view)


def evaluate_tie_draws(prepared: Prepared, models: Sequence[str], *, cluster: str, period: str,
                       draws: int, progress: Callable[[str], None] | None = None,
                       baselines: Sequence[str] = ()) -> Evaluation:
    """`evaluate` on the period as generated and on `draws` copies of it with the run times of
    each group of jobs alike dealt again (`workload.ties.drawn_tables`, seeds 1 to `draws`),
    every cell, baseline and model scoring the same copies. Each run's metrics are then the mean
    over the 1 + `draws` schedules (`herasched_grid.mean_metrics`: with `wait_draw_sd` and
    `max_wait_draw_sd`, the spread the tie order alone makes, and `max_wait_draws`, each
    schedule's MWT), so the criteria judge expected results with ties broken at random. Table
    4.3 and Fig. 4.6 stay those of the period as generated; `seconds` sums the draws. `draws` =
    0 is `evaluate`."""
    from hpcsched.workload.ties import drawn_tables, tie_groups

    groups = tie_groups(prepared.jobs)
    tables = drawn_tables(prepared.jobs, draws, groups)  # a negative count fails here
    evs = []
    for seed, jobs in enumerate(tables):
        table = prepared if seed == 0 else replace(prepared, jobs=jobs)
        step = progress
        if progress and draws:
            def step(label, seed=seed):
                progress(f"{label} (tie draw {seed} of {draws})")
        evs.append(evaluate(table, models, cluster=cluster, period=period, progress=step,
                            baselines=baselines))
    first = evs[0]
    ties = groups.describe()
    if not draws:
        return replace(first, ties=ties)
    grid = replace(first.grid, metrics={c: hg.mean_metrics([e.grid.metrics[c] for e in evs])
                                        for c in first.grid.cells()},
                   seconds={c: sum(e.grid.seconds[c] for e in evs) for c in first.grid.cells()},
                   tie_draws=draws)
    runs = [replace(r, metrics=hg.mean_metrics([e.runs[i].metrics for e in evs]))
            for i, r in enumerate(first.runs)]
    done = [replace(b, metrics=hg.mean_metrics([e.baselines[i].metrics for e in evs]))
            for i, b in enumerate(first.baselines)]
    seconds = {k: sum(e.seconds[k] for e in evs) for k in first.seconds}
    return replace(first, grid=grid, runs=runs, baselines=done, seconds=seconds,
                   tie_draws=draws, ties=ties)


# ---- figures ------------------------------------------------------------------------------------

def heatmap(ev: Evaluation, path):
    """Fig. 4.5: the cells' relative AWT and MWT against HeraSched (the models' mean); without a
    model, against the grid's best cell (`Grid.reference`), as `experiment herasched-grid` draws
    it."""
    n = len(ev.runs)
    if not n:
        ref = ev.grid.reference()
        return hg.heatmap(ev.grid, ref, path, title=f"{ev.grid.workload}: (cell - best cell) / "
                                                    f"best cell, best = {hg.cell_name(ref)}")
    title = (f"{ev.grid.workload}: (cell - HeraSched) / HeraSched, HeraSched = "
             f"{'mean of ' + str(n) + ' models' if n > 1 else ev.runs[0].model}")
    return hg.heatmap(ev.grid, ev.herasched(), path, title=title)


def score_plot(ev: Evaluation, path):
    """Fig. 4.8: S of HeraSched against each cell (bars: the mean over the models; ticks: each
    model's S), the line at 2 where HeraSched and the cell are even."""
    from hpcsched.report.plots import _pyplot, save_figure

    plt = _pyplot()
    cells = ev.grid.cells()
    scores = ev.mean_scores()
    fig, ax = plt.subplots(figsize=(max(6.0, 0.42 * len(cells)), 3.6), dpi=110)
    x = np.arange(len(cells))
    means = [scores[c][0] for c in cells]
    colours = {a: f"C{i}" for i, a in enumerate(ev.grid.allocators)}
    ax.bar(x, means, color=[colours[c[1]] for c in cells])
    for run in ev.runs:
        s = ev.scores(run)
        ax.plot(x, [s[c] for c in cells], "k_", markersize=8)
    ax.axhline(2.0, color="black", linestyle="--", linewidth=1)
    ax.set_xticks(x, [f"{s.upper()}+{a}" for s, a in cells], rotation=90, fontsize=7)
    ax.set_ylabel("S = AWT_cell/AWT_H + MWT_cell/MWT_H", fontsize=8)
    ax.set_title(f"{ev.grid.workload}: HeraSched against each cell (above 2: HeraSched better)",
                 fontsize=9)
    return save_figure(fig, path)


def draws_plot(ev: Evaluation, path):
    """With tie draws: each cell's and each model's MWT on every schedule (dots; a cross: the
    period as generated), their mean (a dash), the cells in order of their mean, the models last;
    the dashed line: the lowest cell's mean."""
    from hpcsched.report.plots import _pyplot, save_figure

    if not ev.tie_draws:
        raise ValueError("the draws figure needs tie draws (--tie-draws K)")
    plt = _pyplot()
    cells = sorted(ev.grid.cells(), key=ev.grid.mwt)
    series = [(hg.cell_name(c), ev.grid.metrics[c]["max_wait_draws"], "C0") for c in cells]
    series += [(_short(r.model), r.metrics["max_wait_draws"], "C3") for r in ev.runs]
    fig, ax = plt.subplots(figsize=(max(6.0, 0.42 * len(series)), 3.8), dpi=110)
    rng = np.random.default_rng(0)  # the dots' jitter only
    for i, (_, values, colour) in enumerate(series):
        v = np.asarray(values, dtype=float) / 3600.0
        ax.plot(i + rng.uniform(-0.2, 0.2, v.size - 1), v[1:], ".", color=colour, alpha=0.5,
                markersize=4)
        ax.plot([i], v[:1], "kx", markersize=5)
        ax.plot([i - 0.3, i + 0.3], [v.mean()] * 2, color="black", linewidth=1.5)
    ax.axhline(ev.grid.mwt(cells[0]) / 3600.0, color="grey", linestyle="--", linewidth=1)
    ax.set_xticks(range(len(series)), [name for name, _, _ in series], rotation=90, fontsize=7)
    ax.set_ylabel("MWT (hours)", fontsize=8)
    ax.set_title(f"{ev.grid.workload}: MWT over {1 + ev.tie_draws} tie draws (x: the period as "
                 f"generated; dash: the mean; blue: cells, red: models)", fontsize=9)
    return save_figure(fig, path)


def _short(model: str) -> str:
    """A model's short label: pretrained/NAME, or the file with its folder."""
    parts = model.replace("\\", "/").rstrip("/").split("/")
    return "/".join(parts[-2:])


def slot_plot(ev: Evaluation, path):
    """Fig. 4.6: the selector's choices (summed over the models) in `slot_bins`'s bins."""
    from hpcsched.report.plots import _pyplot, save_figure

    plt = _pyplot()
    run = ev.runs[0]
    bins = slot_bins(ev.slots(), run.window, run.tail)
    fig, ax = plt.subplots(figsize=(6.4, 3.2), dpi=110)
    ax.bar(range(len(bins)), [c for _, c in bins], color="C0")
    ax.set_xticks(range(len(bins)), [label for label, _ in bins], rotation=45, ha="right",
                  fontsize=7)
    ax.set_ylabel("selector decisions", fontsize=8)
    ax.set_title(f"{ev.grid.workload}: window slots the selector chose "
                 f"(W = {run.window}, T = {run.tail})", fontsize=9)
    return save_figure(fig, path)


__all__ = ["BASELINE_ALLOCATOR", "BaselineRun", "Evaluation", "KindRequests", "ModelRun",
           "REPORTED", "check_baseline", "check_model", "evaluate", "heatmap", "kind_requests",
           "period_prepared", "run_baseline", "run_model", "score_plot", "slot_bins", "slot_plot"]
