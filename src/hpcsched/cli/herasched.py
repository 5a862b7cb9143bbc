"""Wang's thesis (HeraSched): `experiment herasched-grid`, Appendix B's heuristic grid."""

from __future__ import annotations

import argparse
from pathlib import Path

from hpcsched.cli.common import add_format_options, csv_list
from hpcsched.report.progress import Progress
from hpcsched.report.table import format_rows

EPILOG_GRID = """examples:
  hpcsched experiment herasched-grid --cluster spartan-physical                 # Table B.1's grid
  hpcsched experiment herasched-grid --cluster spartan-deeplearn --high-load    # Table B.4's
  hpcsched experiment herasched-grid --cluster spartan-physical,spartan-deeplearn --profile hpcsim,standard
  hpcsched experiment herasched-grid --trace jobs.txt --cluster /etc/slurm/slurm.conf --partition gpu
  hpcsched experiment herasched-grid --cluster spartan-physical --json > grid.json
  hpcsched experiment herasched-grid --cluster spartan-physical,spartan-deeplearn --tie-draws 9

The workloads: stand-ins for the thesis's sets, which are not public, made by the Spartan-like
generator (hpcsched.workload.spartan, calibrated to the thesis's statistics), fixed seeds:
  spartan-physical               physical-week: the thesis's week, 84,135 jobs (Table B.1), seed 1
  spartan-deeplearn              deeplearn-year: the thesis's year, 68,720 jobs (Table B.2), seed 1
  spartan-physical --high-load   physical-high-load: one day, 52,985 jobs (Table B.3), seed 1
  spartan-deeplearn --high-load  deeplearn-high-load: one day, 1,137 jobs (Table B.4), seed 1
The same jobs written out (`hpcsched trace generate spartan-physical --seed 1 -o week.txt`) and
given as --trace week.txt give the same cells.

--tie-draws K: which of a job array's jobs (same submit time, same request: no selector can tell
them apart) starts first is the order of the rows, and it moves a cell's MWT a lot. With K, each
cell also runs K copies whose run times are dealt again within each group of jobs alike (seeds 1
to K); every number, the scores and the findings are then on the means over the 1 + K schedules.
Rows carry tie_draws, wait_draw_sd, max_wait_draw_sd and max_wait_draws.

Every cell is a whole run of the workload with EASY backfilling: a selector (the priority) x an
allocator (which nodes). Printed per grid: Appendix B's layout (AWT / MWT in seconds, the grid's
lowest of each marked: * here, bold with --markdown), the combined score S = AWT_ref/AWT +
MWT_ref/MWT (thesis Fig. 4.8) against the best cell (the highest S against the grid's lowest AWT
and lowest MWT; --reference to choose), and the thesis's findings, checked. The relative-difference
heatmap (Fig. 4.5) is drawn to --plot. --json prints one flat row per cell: trace, cluster,
profile, policy (the selector), allocator, backfill, every metric (wait = AWT, max_wait = MWT),
score, awt_rel, mwt_rel, reference, best_awt, best_mwt, cpu_s.
"""


def add_grid_arguments(p: argparse.ArgumentParser) -> None:
    """`experiment herasched-grid`'s options (listed by `hpcsched.cli.EXPERIMENTS`)."""
    from hpcsched.experiments.herasched_grid import ALLOCATORS, SELECTORS

    p.description = ("The thesis's heuristic grid (Appendix B) on generated stand-ins of its "
                     "workloads, or on your own trace.")
    p.epilog = EPILOG_GRID
    add_format_options(p)
    p.add_argument("--cluster", type=csv_list, default=["spartan-physical"],
                   help="spartan-physical and/or spartan-deeplearn, comma-separated (each with its "
                        "generated workload); with --trace, one cluster: a bundled name, a "
                        "slurm.conf or HPCsim's platform files (default: spartan-physical)")
    p.add_argument("--high-load", action="store_true",
                   help="the partition's high-load day (Tables B.3, B.4) instead of its window")
    p.add_argument("--trace", metavar="FILE",
                   help="your own jobs (sacct, HPCsim's format or SWF) instead of the generated "
                        "workload")
    p.add_argument("--partition", help="with --trace: one partition of --cluster")
    p.add_argument("--seed", type=int, help="a seed for the generated workloads instead of theirs")
    p.add_argument("--jobs", type=int, help="only the first N jobs of each workload (a quick look)")
    p.add_argument("--profile", type=csv_list, default=["hpcsim"],
                   help="comma-separated: hpcsim (the thesis's simulator, its selectors and "
                        "allocators; default) and/or standard (ours)")
    p.add_argument("--selectors", type=csv_list, default=list(SELECTORS),
                   help=f"comma-separated (default: {','.join(SELECTORS)}; under standard any "
                        f"heuristic of `hpcsched policies`)")
    p.add_argument("--allocators", type=csv_list, default=list(ALLOCATORS),
                   help=f"comma-separated (default: {','.join(ALLOCATORS)})")
    p.add_argument("--backfill", default="easy", choices=["easy", "conservative", "none"],
                   help="backfilling of every cell (default: easy, the thesis's)")
    p.add_argument("--reference", metavar="SELECTOR+ALLOCATOR",
                   help="the cell the scores and the heatmap are against (default: the best "
                        "cell), e.g. lcfs+best-fit")
    p.add_argument("--plot", default="herasched-grid.png",
                   help="PNG file of the heatmap; with several grids, one file each, named "
                        "NAME-WORKLOAD-PROFILE.png ('' for none; default: herasched-grid.png)")
    p.add_argument("--tie-draws", type=int, default=0, metavar="K",
                   help="also run every cell on K copies of the workload with the run times of "
                        "jobs alike (same submit time and request) dealt again, each cell's "
                        "numbers the mean over the 1 + K schedules (default 0)")
    p.add_argument("--drop-oversized", action="store_true",
                   help="drop jobs that can never run on the cluster (counted) instead of stopping")


def _reference(text: str | None, selectors, allocators):
    """The cell named by --reference ("lcfs+best-fit"), checked against the grid before it runs;
    None: the best cell of each grid."""
    if text is None:
        return None
    sel, sep, alloc = text.partition("+")
    cell = (sel.strip().lower(), alloc.strip().lower())
    if not sep or cell[0] not in selectors or cell[1] not in allocators:
        cells = ", ".join(f"{s}+{a}" for s in selectors for a in allocators)
        raise ValueError(f"--reference {text!r} is not a cell of the grid; the cells: {cells}")
    return cell


def _plot_path(plot: str, grid, several: bool) -> Path:
    path = Path(plot)
    if not several:
        return path
    return path.with_name(f"{path.stem}-{grid.workload}-{grid.profile}{path.suffix or '.png'}")


def _sets(args) -> list[tuple[str, object, object]]:
    """(label, jobs source, cluster) for each workload of the run: the source is a path or a
    Workload (generated when its turn comes)."""
    from hpcsched.experiments.herasched_grid import workload_for

    if args.trace is not None:
        if len(args.cluster) != 1:
            raise ValueError("--trace runs on one cluster: give one --cluster")
        if args.high_load or args.seed is not None:
            raise ValueError("--high-load and --seed choose a generated workload; with --trace "
                             "your file is the workload")
        return [(Path(args.trace).name, args.trace, args.cluster[0])]
    if args.partition is not None:
        raise ValueError("--partition selects the jobs of --trace; the generated workloads each "
                         "run on their whole cluster")
    return [(w.name, w, w.cluster) for w in (workload_for(c, args.high_load)
                                              for c in dict.fromkeys(args.cluster))]


def cmd_grid(args) -> int:
    from hpcsched.experiments import herasched_grid as hg
    from hpcsched.sim.run import prepare

    args.selectors = [s.lower() for s in args.selectors]
    args.allocators = [a.lower() for a in args.allocators]
    for prof in args.profile:
        if prof not in ("hpcsim", "standard"):
            raise ValueError(f"--profile {prof!r}: the grid runs under hpcsim, standard (the "
                             f"thesis's simulator and ours)")
        for sel in args.selectors:
            hg.selector_policy(sel, prof)  # unknown names fail before any work
    for alloc in args.allocators:
        if alloc not in hg.ALLOCATORS:
            raise ValueError(f"--allocators: unknown allocator {alloc!r}; the grid's: "
                             f"{', '.join(hg.ALLOCATORS)} (under hpcsim, HPCsim's own)")
    if args.backfill == "conservative" and "hpcsim" in args.profile:
        raise ValueError("HPCsim backfills its own way (--backfill easy) or not at all: "
                         "conservative backfilling runs under --profile standard only")
    if args.jobs is not None and args.jobs < 1:
        raise ValueError(f"--jobs must be at least 1, got {args.jobs}")
    if args.tie_draws < 0:
        raise ValueError(f"--tie-draws {args.tie_draws}: give 0 or more copies")
    chosen = _reference(args.reference, args.selectors, args.allocators)
    sets = _sets(args)
    cells = len(args.selectors) * len(args.allocators)
    grids, notes = [], []
    with Progress(len(sets) * len(args.profile) * cells, "herasched-grid", lines=True) as bar:
        for label, source, cluster in sets:
            if isinstance(source, hg.Workload):
                bar.note(f"generating {label}")
                jobs = hg.workload_jobs(source, args.seed)
                label = jobs.header.name or label
                notes.append(source.describe() if args.seed is None else
                             f"{source.describe()}; here seed {args.seed}")
            else:
                jobs = source
            for prof in args.profile:
                bar.note(f"{label} ({prof}): reading")
                prepared = prepare(jobs, prof, cluster=cluster,
                                   partition=args.partition,
                                   drop_oversized=args.drop_oversized)
                if args.jobs is not None:
                    prepared = _first(prepared, args.jobs)
                if not isinstance(source, hg.Workload):
                    label = prepared.name  # the trace's own name: phys2k_s11
                notes.append(f"under {prof}: {prepared.summary()}")
                if args.tie_draws:
                    from hpcsched.workload.ties import tie_groups

                    notes.append(f"tie draws: {tie_groups(prepared.jobs).describe()}; each cell "
                                 f"is the mean over {1 + args.tie_draws} schedules, the workload "
                                 f"and {args.tie_draws} copies with their run times dealt again")

                def step(cell, label=label, prof=prof):
                    bar.note(f"{label} ({prof}): {cell}")
                    bar.update(1)

                grids.append(hg.run_grid(prepared, workload=label, selectors=args.selectors,
                                         allocators=args.allocators, backfill=args.backfill,
                                         progress=step, tie_draws=args.tie_draws))
    references = [chosen or g.reference() for g in grids]
    plots = []
    if args.plot:
        for g, ref in zip(grids, references):
            plots.append(hg.heatmap(g, ref, _plot_path(args.plot, g, len(grids) > 1)))
    found = hg.findings(grids)
    if args.fmt in ("json", "csv"):
        rows = [r for g, ref in zip(grids, references) for r in g.rows(ref)]
        print(format_rows(rows, args.fmt))
        return 0
    _print_grids(args, grids, references, notes, plots, found)
    return 0


def _first(prepared, n: int):
    """The prepared trace cut to its first `n` jobs."""
    from dataclasses import replace

    return replace(prepared, jobs=prepared.jobs.window(0, min(n, len(prepared.jobs))))


def _print_grids(args, grids, references, notes, plots, found) -> None:
    from hpcsched.experiments import herasched_grid as hg

    markdown = args.fmt == "markdown"
    fmt = "markdown" if markdown else "table"
    for line in notes:
        print(line)
    for g, ref in zip(grids, references):
        cols = ["selector", *g.allocators]
        mark = "bold" if markdown else "*"
        print(f"\n{g.workload} on {g.cluster}, profile {g.profile}, {g.backfill} backfilling, "
              f"{g.jobs:,} jobs: AWT / MWT (s); the lowest of each: {mark}\n")
        print(format_rows(hg.appendix_b_rows(g, markdown), fmt, columns=cols))
        how = "chosen" if args.reference else "the best cell"
        print(f"\ncombined score S = AWT_ref/AWT + MWT_ref/MWT against {hg.cell_name(ref)} "
              f"({how}: {g.awt(ref):.2f} / {g.mwt(ref):.0f} s; {mark}: 2.00)\n")
        print(format_rows(hg.score_rows(g, ref, markdown), fmt, columns=cols))
        spread_a, spread_m = g.allocator_spread()
        cpu = sum(g.seconds.values())
        print(f"\nallocator spread (mean over selectors of (worst - best) / best): AWT "
              f"{spread_a:.1%}, MWT {spread_m:.1%}; {cpu:.1f} CPU s for {len(g.cells())} cells")
    if plots:
        print("\nheatmap" + ("s" if len(plots) > 1 else "") + ": " +
              ", ".join(str(p) for p in plots))
    if found:
        print("\nthe thesis's findings:")
        for f in found:
            print(f"- {f.line()}")
