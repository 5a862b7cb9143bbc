"""The heuristic grid of Wang's thesis (Appendix B): selectors x allocators, all with EASY
backfilling, on Spartan-like workloads; the combined score (Fig. 4.8) and the relative-difference
heatmap (Fig. 4.5) against the best cell; and the thesis's qualitative findings, checked.

    grid = run_grid(prepare(jobs, "hpcsim", cluster="spartan-physical"), workload="physical-week")
    ref = grid.reference()                     # the best cell (see `Grid.reference`)
    rows = grid.rows(ref)                      # one flat row per cell
    heatmap(grid, ref, "grid.png")
    for f in findings([grid, other]): print(f.line())

Every cell is one whole run of the workload: the selector is a static or waiting-time priority, the
allocator places each job on named nodes, and the engine's compiled pass loop runs it (seconds for
a Physical week). AWT is the mean wait and MWT the largest wait over every job, in seconds, the
thesis's two metrics (Ch. 4 reports only those).

The thesis's four workloads are not public; `WORKLOADS` names generated stand-ins for them (the
Spartan-like generator, `hpcsched.workload.spartan`), each with a fixed seed, and `workload_jobs`
is the one place where their source is chosen.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from hpcsched.sim.factory import make_engine
from hpcsched.sim.metrics import combined_score
from hpcsched.sim.run import Prepared
from hpcsched.workload.jobs import JobTable
from hpcsched.workload.timecut import from_first_submission

#: The thesis's seven selectors (Ch. 4 §4.4.3, Appendix B), in its row order.
SELECTORS = ("fcfs", "lcfs", "sjf", "wfp3", "unicep", "f1", "f2")
#: The three allocators, in the thesis's column order (Topology-Aware, Best-Fit, First-Available).
ALLOCATORS = ("topology", "best-fit", "first-available")


# ---- the workloads ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Workload:
    """One of the thesis's evaluation sets (Appendix B), as a generated stand-in."""

    name: str  # physical-week
    cluster: str  # the bundled cluster it runs on
    high_load: bool  # the one-day high-load set instead of the partition's window
    seed: int  # the fixed seed of the stand-in
    thesis_jobs: int  # how many jobs the thesis's set has
    table: str  # the thesis's table of this set

    def describe(self) -> str:
        what = "high-load day" if self.high_load else "window"
        return (f"{self.name}: a generated stand-in for the thesis's {self.cluster} {what} "
                f"({self.thesis_jobs:,} jobs, Table {self.table}), seed {self.seed}")


#: The thesis's four sets (Table 4.1, §4.4.7), each generated with its fixed seed.
WORKLOADS = {
    "physical-week": Workload("physical-week", "spartan-physical", False, 1, 84_135, "B.1"),
    "deeplearn-year": Workload("deeplearn-year", "spartan-deeplearn", False, 1, 68_720, "B.2"),
    "physical-high-load": Workload("physical-high-load", "spartan-physical", True, 1, 52_985,
                                   "B.3"),
    "deeplearn-high-load": Workload("deeplearn-high-load", "spartan-deeplearn", True, 1, 1_137,
                                    "B.4"),
}


def workload_for(cluster: str, high_load: bool = False) -> Workload:
    """The thesis's set on a bundled Spartan cluster (its window, or its high-load day)."""
    for w in WORKLOADS.values():
        if w.cluster == cluster and w.high_load == high_load:
            return w
    known = sorted({w.cluster for w in WORKLOADS.values()})
    raise ValueError(f"no generated workload for the cluster {cluster!r}: the thesis's sets are on "
                     f"{', '.join(known)}; give your own jobs with --trace FILE")


def workload_jobs(workload: Workload, seed: int | None = None) -> JobTable:
    """The jobs of `workload` (with `seed` instead of its own, if given).

    This is the one place that chooses where the stand-ins come from: the Spartan-like generator
    (`hpcsched.workload.spartan`), calibrated to the thesis's statistics, at the set's window or
    high-load day: `generate(cluster, seed=seed, high_load_day=...)`, with no file in between.
    Times count from the first submission, as the trace readers count them (F1 and F2 read the
    submit time itself), so the grid is the one of the same jobs written out and read back.
    """
    from hpcsched.workload.spartan import generate

    seed = workload.seed if seed is None else seed
    trace = generate(workload.cluster, seed=seed, high_load_day=workload.high_load)
    name = workload.name if seed == workload.seed else f"{workload.name}-s{seed}"
    return from_first_submission(trace.jobs, name)


# ---- the grid -----------------------------------------------------------------------------------

@dataclass
class Grid:
    """The cells of one grid: `metrics[selector, allocator]` is the run's metrics dict (`wait` is
    AWT, `max_wait` MWT)."""

    workload: str  # the set's name (or the trace's)
    cluster: str
    profile: str
    backfill: str
    jobs: int
    selectors: tuple[str, ...]
    allocators: tuple[str, ...]
    metrics: dict[tuple[str, str], dict] = field(default_factory=dict)
    seconds: dict[tuple[str, str], float] = field(default_factory=dict)  # CPU s per cell
    #: shuffled copies averaged into each cell (`run_grid`'s `tie_draws`; 0: the table alone)
    tie_draws: int = 0

    def cells(self) -> list[tuple[str, str]]:
        return [(s, a) for s in self.selectors for a in self.allocators]

    def awt(self, cell) -> float:
        return float(self.metrics[cell]["wait"])

    def mwt(self, cell) -> float:
        return float(self.metrics[cell]["max_wait"])

    def best_awt(self) -> tuple[str, str]:
        """The cell with the lowest AWT (the first in grid order on a tie)."""
        return min(self.cells(), key=self.awt)

    def best_mwt(self) -> tuple[str, str]:
        return min(self.cells(), key=self.mwt)

    def reference(self) -> tuple[str, str]:
        """The best cell: the highest combined score against the grid's ideal point, S =
        min AWT / AWT + min MWT / MWT (at most 2, reached only by a cell best on both).

        The thesis scores against HeraSched (Fig. 4.8) and, in Ch. 6, against a best heuristic it
        picks by hand; this rule picks WFP3 + best-fit from its Table B.1 (its best S, 1.56, on the
        full Physical week) and FCFS + best-fit from B.2 (its Ch. 6 reference for Deeplearn)."""
        ideal = {"wait": self.awt(self.best_awt()), "max_wait": self.mwt(self.best_mwt())}
        return max(self.cells(), key=lambda c: combined_score(self.metrics[c], ideal))

    def score(self, cell, reference) -> float:
        """The thesis's combined score of `cell` against `reference` (2.0 for the reference)."""
        return combined_score(self.metrics[cell], self.metrics[reference])

    def relative(self, cell, reference) -> tuple[float, float]:
        """Fig. 4.5's relative differences (value - reference) / reference of AWT and MWT:
        positive is worse than the reference (a cell, or a run's metrics: HeraSched's)."""
        ref = reference if isinstance(reference, dict) else self.metrics[reference]
        return (_relative(self.awt(cell), float(ref["wait"])),
                _relative(self.mwt(cell), float(ref["max_wait"])))

    def rows(self, reference=None) -> list[dict]:
        """One flat row per cell: the set, `policy` (the selector), `allocator`, `backfill`, every
        metric of the run, and against `reference`: `score`, `awt_rel`, `mwt_rel`."""
        reference = reference or self.reference()
        best_a, best_m = self.best_awt(), self.best_mwt()
        out = []
        for cell in self.cells():
            sel, alloc = cell
            row = {"trace": self.workload, "cluster": self.cluster, "profile": self.profile,
                   "policy": sel, "allocator": alloc, "backfill": self.backfill,
                   "tie_draws": self.tie_draws}
            row.update(row_numbers(self.metrics[cell]))
            awt_rel, mwt_rel = self.relative(cell, reference)
            row.update(score=self.score(cell, reference), awt_rel=awt_rel, mwt_rel=mwt_rel,
                       reference=cell == reference, best_awt=cell == best_a,
                       best_mwt=cell == best_m, cpu_s=self.seconds.get(cell, float("nan")))
            out.append(row)
        return out

    def allocator_spread(self) -> tuple[float, float]:
        """How much the allocator matters: over the selectors, the mean of (worst - best) / best
        across the allocators, for AWT and for MWT."""
        def spread(value) -> float:
            out = []
            for sel in self.selectors:
                vals = [value((sel, a)) for a in self.allocators]
                out.append(_relative(max(vals), min(vals)))
            return float(np.mean(out))

        return spread(self.awt), spread(self.mwt)


def _relative(value: float, reference: float) -> float:
    if reference == 0:
        return 0.0 if value == 0 else math.inf
    return (value - reference) / reference


def row_numbers(metrics: dict) -> dict:
    """A run's metrics fit for a flat row: its numbers, and each tie draw's MWT
    (`max_wait_draws`, `mean_metrics`)."""
    return {k: v for k, v in metrics.items()
            if isinstance(v, (int, float)) or k == "max_wait_draws"}


def mean_metrics(runs: Sequence[dict]) -> dict:
    """The mean of each numeric metric over `runs` (one policy's schedules of tie draws, the
    first the period as generated), other entries as the first run has them, the draws' sample
    standard deviations of AWT and MWT (`wait_draw_sd`, `max_wait_draw_sd`) and each draw's MWT
    (`max_wait_draws`)."""
    out = {}
    for key, value in runs[0].items():
        numeric = isinstance(value, (int, float, np.number)) and not isinstance(value, bool)
        out[key] = float(np.mean([r[key] for r in runs])) if numeric else value
    sd = [float(np.std([r[k] for r in runs], ddof=1)) if len(runs) > 1 else 0.0
          for k in ("wait", "max_wait")]
    out["wait_draw_sd"], out["max_wait_draw_sd"] = sd
    out["max_wait_draws"] = [float(r["max_wait"]) for r in runs]
    return out


def selector_policy(name: str, profile: str):
    """The selector `name` as a policy in the profile's dialect (HPCsim's own under `hpcsim`)."""
    from hpcsched.policies.priority import get_policy

    return get_policy(name, dialect="hpcsim" if profile == "hpcsim" else "")


def run_grid(prepared: Prepared, *, workload: str | None = None,
             selectors: Sequence[str] = SELECTORS, allocators: Sequence[str] = ALLOCATORS,
             backfill: str = "easy",
             progress: Callable[[str], None] | None = None, tie_draws: int = 0) -> Grid:
    """Every selector x allocator on the whole prepared table (it must be on a heterogeneous
    cluster); `progress(label)` after each cell. `tie_draws` = K: each cell also runs K copies
    with the run times of jobs alike dealt again (`workload.ties.shuffle_ties`, seeds 1 to K),
    and its metrics are the mean over the 1 + K schedules (`mean_metrics`)."""
    from hpcsched.cluster.nodes import Cluster

    if not isinstance(prepared.cluster, Cluster):
        raise ValueError("the grid places jobs on named nodes: prepare the trace with a cluster "
                         "(--cluster spartan-physical, a slurm.conf, ...)")
    if not selectors or not allocators:
        raise ValueError("the grid needs at least one selector and one allocator")
    from hpcsched.workload.ties import drawn_tables

    tables = drawn_tables(prepared.jobs, tie_draws)  # a negative count fails here
    profile = prepared.profile.name
    policies = {s: selector_policy(s, profile) for s in selectors}  # unknown names fail first
    grid = Grid(workload or prepared.name, prepared.cluster.name, profile, backfill,
                len(prepared.jobs), tuple(selectors), tuple(allocators), tie_draws=tie_draws)
    for sel in selectors:
        for alloc in allocators:
            t0 = time.process_time()
            runs = []
            for draw, jobs in enumerate(tables):
                engine = make_engine(jobs, prepared.cluster, prepared.profile, backfill,
                                     allocator=alloc)
                result = engine.run(policies[sel])
                if "unstarted" in result.metrics:
                    where = f" (tie draw {draw})" if draw else ""
                    raise RuntimeError(f"{sel} + {alloc}{where}: "
                                       f"{result.metrics['unstarted']} job(s) never started")
                runs.append(result.metrics)
            grid.metrics[sel, alloc] = mean_metrics(runs) if tie_draws else runs[0]
            grid.seconds[sel, alloc] = time.process_time() - t0
            if progress:
                progress(f"{sel}+{alloc}")
    return grid


# ---- tables -------------------------------------------------------------------------------------

def _awt_text(v: float) -> str:
    return f"{v:.2f}"


def _mwt_text(v: float) -> str:
    return f"{v:.0f}"


def appendix_b_rows(grid: Grid, markdown: bool = False) -> list[dict]:
    """The thesis's Appendix B layout: a row per selector, a column per allocator, each cell
    "AWT / MWT" in seconds. The grid's lowest AWT and lowest MWT are marked: bold in Markdown,
    a trailing * otherwise."""
    best_a, best_m = grid.best_awt(), grid.best_mwt()

    def mark(text: str, best: bool) -> str:
        if not best:
            return text
        return f"**{text}**" if markdown else f"{text}*"

    rows = []
    for sel in grid.selectors:
        row = {"selector": sel}
        for alloc in grid.allocators:
            cell = (sel, alloc)
            row[alloc] = (
                f"{mark(_awt_text(grid.awt(cell)), cell == best_a)} / "
                f"{mark(_mwt_text(grid.mwt(cell)), cell == best_m)}")
        rows.append(row)
    return rows


def score_rows(grid: Grid, reference, markdown: bool = False) -> list[dict]:
    """Fig. 4.8's combined scores against `reference`, laid out as Appendix B (the reference
    scores 2.00 and is marked: bold in Markdown, a trailing * otherwise)."""
    rows = []
    for sel in grid.selectors:
        row = {"selector": sel}
        for alloc in grid.allocators:
            text = f"{grid.score((sel, alloc), reference):.2f}"
            if (sel, alloc) == reference:
                text = f"**{text}**" if markdown else f"{text}*"
            row[alloc] = text
        rows.append(row)
    return rows


def cell_name(cell) -> str:
    return f"{cell[0]} + {cell[1]}"


# ---- the thesis's findings ----------------------------------------------------------------------

@dataclass(frozen=True)
class Finding:
    claim: str
    verdict: str  # "holds", "partly", "does not hold", "not tested"
    evidence: str

    def line(self) -> str:
        return f"{self.claim}: {self.verdict} ({self.evidence})"


def _label(grid: Grid) -> str:
    return f"{grid.workload}, {grid.profile}"


def first_available_worst(grid: Grid) -> Finding:
    """Thesis (Fig. 4.5, Table B.1): first-available is the worst allocator on MWT, for every
    selector."""
    claim = f"first-available is the worst allocator on MWT [{_label(grid)}]"
    if "first-available" not in grid.allocators or len(grid.allocators) < 2:
        return Finding(claim, "not tested", "the grid has no first-available column to compare")
    worst = [sel for sel in grid.selectors
             if max(grid.allocators, key=lambda a: grid.mwt((sel, a))) == "first-available"]
    means = {a: np.mean([grid.mwt((s, a)) for s in grid.selectors]) for a in grid.allocators}
    n = len(grid.selectors)
    verdict = "holds" if len(worst) == n else "partly" if 2 * len(worst) > n else "does not hold"
    listed = ", ".join(f"{a} {means[a]:,.0f} s" for a in grid.allocators)
    return Finding(claim, verdict, f"largest MWT for {len(worst)} of {n} selectors; mean MWT "
                                   f"over the selectors: {listed}")


def best_cells_differ(grid: Grid) -> Finding:
    """Thesis (Tables B.1, B.2): the best AWT cell and the best MWT cell are different
    heuristics."""
    claim = f"the best AWT cell and the best MWT cell are different heuristics [{_label(grid)}]"
    a, m = grid.best_awt(), grid.best_mwt()
    verdict = "holds" if a[0] != m[0] else "partly" if a != m else "does not hold"
    note = "" if a[0] != m[0] else (" (same selector, other allocator)" if a != m else "")
    return Finding(claim, verdict, f"best AWT {cell_name(a)} {grid.awt(a):.2f} s, best MWT "
                                   f"{cell_name(m)} {grid.mwt(m):,.0f} s{note}")


def allocators_matter_less(physical: Grid, deeplearn: Grid) -> Finding:
    """Thesis (Fig. 4.5): on Deeplearn the allocators matter less than on Physical, measured by
    `Grid.allocator_spread` on AWT and on MWT."""
    claim = (f"on Deeplearn the allocators matter less than on Physical [{deeplearn.workload} vs "
             f"{physical.workload}, {physical.profile}]")
    pa, pm = physical.allocator_spread()
    da, dm = deeplearn.allocator_spread()
    less = (da < pa) + (dm < pm)
    verdict = "holds" if less == 2 else "partly" if less == 1 else "does not hold"
    return Finding(claim, verdict, f"mean spread across allocators, AWT {da:+.1%} vs {pa:+.1%}, "
                                   f"MWT {dm:+.1%} vs {pm:+.1%}")


def findings(grids: Sequence[Grid]) -> list[Finding]:
    """The thesis's findings, on each grid (the first two) and on each pair of a Physical and a
    Deeplearn grid of the same profile and kind of set (the third)."""
    out = []
    for g in grids:
        if "physical" in g.cluster:
            out.append(first_available_worst(g))
        out.append(best_cells_differ(g))
    for p in grids:
        for d in grids:
            if "physical" in p.cluster and "deeplearn" in d.cluster and p.profile == d.profile \
                    and ("high-load" in p.workload) == ("high-load" in d.workload):
                out.append(allocators_matter_less(p, d))
    return out


# ---- the heatmap --------------------------------------------------------------------------------

def heatmap(grid: Grid, reference, path, title: str = ""):
    """Fig. 4.5: relative difference (value - reference) / reference of AWT and of MWT per cell,
    two panels of selectors x allocators, annotated; red is worse than the reference (a cell, or
    a run's metrics dict: then give `title`). Returns the path written."""
    from matplotlib.colors import Normalize

    from hpcsched.report.plots import _pyplot, save_figure

    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(3.2 + 1.3 * len(grid.allocators) * 2,
                                            1.4 + 0.42 * len(grid.selectors)), dpi=110)
    for ax, k, metric in zip(axes, (0, 1), ("AWT", "MWT")):
        values = np.array([[grid.relative((s, a), reference)[k] for a in grid.allocators]
                           for s in grid.selectors])
        finite = np.abs(values[np.isfinite(values)])
        # one scale for both signs, so a colour's depth is the size of the difference
        top = max(float(finite.max()) if finite.size else 0.0, 1e-9)
        shown = np.where(np.isfinite(values), values, top)
        image = ax.imshow(shown, cmap="RdBu_r", norm=Normalize(-top, top), aspect="auto")
        for i in range(len(grid.selectors)):
            for j in range(len(grid.allocators)):
                v = values[i, j]
                text = "inf" if not np.isfinite(v) else f"{v:+.2f}"
                dark = np.isfinite(v) and abs(v) > 0.6 * top
                ax.text(j, i, text, ha="center", va="center", fontsize=8,
                        color="white" if dark else "black")
        ax.set_xticks(range(len(grid.allocators)),
                      list(grid.allocators), fontsize=8)
        ax.set_yticks(range(len(grid.selectors)), [s.upper() for s in grid.selectors],
                      fontsize=8)
        ax.set_title(f"{metric}: (value - ref) / ref", fontsize=9)
        fig.colorbar(image, ax=ax, fraction=0.05)
    fig.suptitle(title or f"{grid.workload} ({grid.profile}, {grid.backfill}): relative to "
                          f"{cell_name(reference)}", fontsize=9)
    return save_figure(fig, path)


__all__ = ["ALLOCATORS", "SELECTORS", "WORKLOADS", "Finding", "Grid", "Workload",
           "appendix_b_rows", "findings", "from_first_submission", "heatmap", "run_grid",
           "score_rows", "workload_for", "workload_jobs"]
