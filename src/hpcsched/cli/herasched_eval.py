"""`hpcsched experiment herasched`: HeraSched's models against the 21 heuristic cells on the held-out
periods of its protocol (`hpcsched.experiments.herasched_eval`)."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from hpcsched.cli.common import add_format_options, csv_list, positive_int
from hpcsched.report.progress import Progress
from hpcsched.report.table import format_rows

EPILOG = """examples:
  hpcsched experiment herasched --cluster spartan-deeplearn --models runs/dl-dense,runs/dl-dense-s1
  hpcsched experiment herasched --cluster spartan-deeplearn,spartan-physical \\
      --models spartan-deeplearn=runs/dl-a,runs/dl-b --models spartan-physical=runs/ph-a
  hpcsched experiment herasched --cluster spartan-deeplearn --models runs/dl-a --plot figs --json
  hpcsched experiment herasched --cluster cerit-zewura          # the grid alone: no model given
  hpcsched experiment herasched --cluster spartan-physical \\
      --baselines rl:runs/rl-ph,dras:runs/dras-ph                # learned baselines, best-fit
  hpcsched experiment herasched --cluster spartan-physical \\
      --models pretrained/herasched-physical-s0@reserve=1:00:00  # EASY's reservation, oldest job
  hpcsched experiment herasched --cluster spartan-deeplearn \\
      --models pretrained/herasched-deeplearn-s0@allocator=best-fit  # its selector, best fit places
  hpcsched experiment herasched --cluster spartan-deeplearn --periods test --tie-draws 19

On each period (default: the partition's held-out test period and, on the Spartan-like ones, its
test high-load day; hera_periods: generated with fixed seeds, or, on cerit-zewura, cut from the
real CERIT-SC log cerit-2013) it runs the 21 cells of Appendix B (7 selectors x 3 allocators, EASY
backfilling, the hpcsim profile) and each model given, greedy. --models takes one model per
training seed (a model file, a run folder: its best.pt, or pretrained/NAME); HeraSched's numbers
are then the models' mean, with their spread, and every model's own. Without a model (none given,
none shipped) it prints the grid alone. Printed per period:

  Appendix B's table (AWT / MWT in seconds; the grid's lowest of each: *) and HeraSched's rows;
  S = AWT_cell/AWT_H + MWT_cell/MWT_H of HeraSched against every cell (Fig. 4.8; above 2:
    HeraSched is the better of the two; the thesis's bars show the cell's S against HeraSched);
  the issue's criteria as facts: HeraSched's MWT below every cell's (yes/no, with numbers), and
    against how many cells S > 2, for the mean and for each model;
  Table 4.3: per node kind, the mean per-node request (cores, memory in GB = MB/1024, GPUs) of the
    jobs HeraSched placed on a node of that kind (a job once per kind), beside all jobs' mean;
  Fig. 4.6: how often the selector chose slot 0, the middle slots, the tail slots and Forward.

Before the tables, what preparing the period dropped, counted (a real log's jobs with an unknown
run time, and those larger than the cluster: on cerit-2013 one, job 8687, named).

--plot DIR writes, per period, CLUSTER-PERIOD-heatmap.png (Fig. 4.5: (cell - HeraSched) /
HeraSched of AWT and MWT; without a model, against the grid's best cell), -scores.png (Fig. 4.8)
and -slots.png (Fig. 4.6); with --tie-draws, -draws.png (each cell's and model's MWT on every
schedule, and its mean). --json prints flat rows: a row per cell (policy = the selector,
allocator, wait = AWT, max_wait = MWT, score = mean S against it, score_sd, awt_rel, mwt_rel,
seeds = []), a row per model (policy herasched:MODEL, allocator agent, its metrics, seeds =
[MODEL], selector_decisions, selector_slots, slots_*, and Table 4.3 as jobs_/cores_/memory_gb_/
gpus_KIND) and HeraSched's mean (policy herasched, wait_sd, max_wait_sd, seeds = every model);
each with cluster and period. Without a model: the cells' rows alone, without score.

--tie-draws K: a job array submits many jobs at one instant with one request, which every policy
here sees as equal; which of them starts first is the order of the rows, and their run times
differ. On the Spartan-like periods that luck alone moves a cell's MWT by a factor of two. With K,
every cell, baseline and model also schedules K copies of the period whose run times are dealt
again at random within each group of jobs alike (same submit time and request; seeds 1 to K), and
every number is the mean over the 1 + K schedules, the criteria included. A paired comparison is
added: HeraSched's MWT minus the lowest cell's, schedule by schedule (mean, standard error, and on
how many schedules it is lower), since the luck they share cancels there. Rows carry tie_draws (K)
and, with K > 0, wait_draw_sd and max_wait_draw_sd (the spread over the schedules) and
max_wait_draws (each schedule's MWT); HeraSched's mean row paired_cell, paired_difference,
paired_standard_error and paired_lower. Table 4.3 and Fig. 4.6 stay those of the period as
generated.

A partition without --models takes its shipped models (pretrained/herasched-PARTITION*: three
Deeplearn seeds and three Physical seeds ship); where none ships (cerit-zewura), and with
--models none, the grid alone.

--baselines adds learned baselines, issue 17's "RLScheduler and DRAS-PG trained on the same data
(jobs seen as total cores) with the engine's best-fit allocator": rl:MODEL and dras:MODEL specs
(a file, a run folder, pretrained/NAME; SPEC+ALLOCATOR for another allocator than best-fit), each
run as one more cell of the grid's simulation (hpcsim, EASY) and printed beside the cells with
how many cells it beats on AWT and on MWT and its S against the grid's best cell; with HeraSched
models, HeraSched's S against each baseline too. Such a model sees a job as its nodes x cores per
node and the partition as its total cores; one is trained on the partition's jobs written so:

  hpcsched trace convert ph-train.txt ph-train-cores.swf --cores-of spartan-physical
  hpcsched train rlscheduler --trace ph-train-cores.swf --first 0 --out runs/rl-ph
  hpcsched train dras --trace ph-train-cores.swf --validate-trace ph-validation-cores.swf \\
      --validate-first-days 1 --out runs/dras-ph

A spec that cannot run on the partition (a heuristic, a model of another scheduler, a DRAS model
of another core count, Decima-PG) is refused, named, before any run. In --json, a baseline's row
has kind baseline, policy = its spec, allocator, its metrics, seeds = [SPEC], cells_awt_above,
cells_mwt_above, best_cell, score_vs_best_cell (its S against the best cell) and, with models,
score (HeraSched's mean S against it), score_sd, awt_rel, mwt_rel; every row has a kind (cell,
baseline, herasched).
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    """`experiment herasched`'s options."""
    from hpcsched.workload.hera_periods import PERIODS, SPLITS

    p.description = ("HeraSched (Wang's thesis Ch. 4) against Appendix B's 21 heuristic cells\n"
                     "on the held-out periods of its protocol.")
    p.epilog = EPILOG
    add_format_options(p)
    p.add_argument("--cluster", type=csv_list, default=["spartan-deeplearn"],
                   help=f"partitions of the protocol, comma-separated: {', '.join(PERIODS)} "
                        f"(default: spartan-deeplearn)")
    p.add_argument("--models", action="append", metavar="[CLUSTER=]MODEL[,MODEL...]",
                   help="HeraSched models, one per training seed: files, run folders or "
                        "pretrained/NAME; none: no model (the grid alone); with several "
                        "--cluster, give --models once per partition, CLUSTER= in front")
    p.add_argument("--baselines", action="append", metavar="[CLUSTER=]SPEC[,SPEC...]",
                   help="learned baselines: rl:MODEL, dras:MODEL (jobs seen as total cores, "
                        "placed by best-fit unless SPEC+ALLOCATOR, EASY); with several --cluster, "
                        "give --baselines once per partition, CLUSTER= in front")
    p.add_argument("--periods", type=csv_list,
                   help=f"comma-separated, of {', '.join(SPLITS)} (default: test,test-high-load, "
                        f"those of them a partition has: test on cerit-zewura)")
    p.add_argument("--jobs", type=positive_int, help="only the first N jobs of each period "
                                                     "(a quick look)")
    p.add_argument("--plot", metavar="DIR", help="write the figures (PNG) to this folder")
    p.add_argument("--tie-draws", type=int, default=0, metavar="K",
                   help="also score every cell and model on K copies of each period with the run "
                        "times of jobs alike (same submit time and request) dealt again, and "
                        "report the mean over the 1 + K schedules (default 0: the period as "
                        "generated)")


def _default_models(cluster: str) -> list[str]:
    """The shipped models of `cluster`'s partition (pretrained/herasched-PARTITION*), if any."""
    from hpcsched import recipes

    short = cluster.removeprefix("spartan-")
    names = [n for n in recipes.shipped_models(recipes.get("herasched"))
             if n.startswith(f"herasched-{short}")]
    return [f"pretrained/{n}" for n in names]


def by_cluster(given: list[str] | None, clusters: list[str], option: str = "--models",
               what: str = "MODEL") -> dict[str, list[str]]:
    """{cluster: [item, ...]} of a repeatable option's values ``[CLUSTER=]ITEM[,ITEM...]``; with
    several clusters each value names its own."""
    out: dict[str, list[str]] = {c: [] for c in clusters}
    for text in given or []:
        head, eq, rest = text.partition("=")
        # CLUSTER= is a bare name in front (an '=' after a path or an '@' is the item's own)
        if eq and not any(c in head for c in "@/,:") and not Path(text).exists():
            cluster, items = head.strip(), rest
            if cluster not in out:
                raise ValueError(f"{option} {text!r}: {cluster!r} is not one of --cluster "
                                 f"({', '.join(clusters)})")
        elif len(clusters) == 1:
            cluster, items = clusters[0], text
        else:
            raise ValueError(f"{option} {text!r}: with several --cluster, name the partition in "
                             f"front: {option} {clusters[0]}={what}[,{what}...]")
        out[cluster] += csv_list(items)
    for cluster, items in out.items():
        if len(set(items)) != len(items):
            noun = "a model" if what == "MODEL" else "one"
            raise ValueError(f"{option} for {cluster}: {noun} is named twice "
                             f"({', '.join(items)})")
    return out


def models_by_cluster(given: list[str] | None, clusters: list[str]) -> dict[str, list[str]]:
    """{cluster: [model, ...]} from the --models options, each model checked to exist; a cluster
    without any takes its shipped models, if any ([]: the grid alone), and one given `none` has
    none."""
    from hpcsched import recipes

    out = by_cluster(given, clusters)
    recipe = recipes.get("herasched")
    for cluster, models in out.items():
        if "none" in models:
            if len(models) > 1:
                raise ValueError(f"--models for {cluster}: 'none' (no model, the grid alone) "
                                 f"cannot go with models ({', '.join(models)})")
            models.clear()
            continue
        if not models:
            models += _default_models(cluster)
        for m in models:
            recipes.locate(recipe.split(m)[0], recipe)  # a missing file fails before any work
    return out


def cmd_eval(args) -> int:
    from hpcsched.experiments import herasched_eval as he
    from hpcsched.experiments import herasched_grid as hg
    from hpcsched.workload.hera_periods import PERIODS, SPLITS

    clusters = list(dict.fromkeys(args.cluster))
    for c in clusters:
        if c not in PERIODS:
            raise ValueError(f"--cluster {c!r}: HeraSched's protocol has periods for "
                             f"{', '.join(PERIODS)}")
    for split in args.periods or []:
        if split not in SPLITS:
            raise ValueError(f"--periods {split!r}: choose among {', '.join(SPLITS)}")
    work = []
    for c in clusters:
        splits = list(dict.fromkeys(args.periods)) if args.periods else [
            s for s in he.REPORTED if s in PERIODS[c]]
        missing = [s for s in splits if s not in PERIODS[c]]
        if missing:
            raise ValueError(f"--periods {','.join(missing)}: {c} has no such period (its "
                             f"periods: {', '.join(PERIODS[c])})")
        work += [(c, s) for s in splits]
    models = models_by_cluster(args.models, clusters)
    baselines = by_cluster(args.baselines, clusters, "--baselines", "SPEC")
    for c in clusters:  # every model and baseline against its cluster before any work
        if models[c] or baselines[c]:
            from hpcsched.cluster.load import load_cluster

            cluster = load_cluster(next(iter(PERIODS[c].values())).cluster)
            for m in models[c]:
                he.check_model(m, cluster, c)
            for b in baselines[c]:
                he.check_baseline(b, cluster, c)
    if args.tie_draws < 0:
        raise ValueError(f"--tie-draws {args.tie_draws}: give 0 or more copies")
    total = (1 + args.tie_draws) * sum(
        len(hg.SELECTORS) * len(hg.ALLOCATORS) + len(models[c]) + len(baselines[c])
        for c, _ in work)
    evaluations, plots = [], []
    with Progress(total, "herasched", lines=True) as bar:
        for cluster, split in work:
            bar.note(f"{cluster} {split}: preparing")
            prepared = he.period_prepared(cluster, split, args.jobs)

            def step(label, where=f"{cluster} {split}"):
                bar.note(f"{where}: {label}")
                bar.update(1)

            ev = he.evaluate_tie_draws(prepared, models[cluster], cluster=cluster,
                                       period=split, draws=args.tie_draws, progress=step,
                                       baselines=baselines[cluster])
            evaluations.append((ev, prepared.summary()))
            if args.plot:
                stem = Path(args.plot) / f"{cluster}-{split}"
                plots.append(he.heatmap(ev, f"{stem}-heatmap.png"))
                if ev.runs:
                    plots += [he.score_plot(ev, f"{stem}-scores.png"),
                              he.slot_plot(ev, f"{stem}-slots.png")]
                if ev.tie_draws:
                    plots.append(he.draws_plot(ev, f"{stem}-draws.png"))
    if args.fmt in ("json", "csv"):
        print(format_rows([r for ev, _ in evaluations for r in ev.rows()], args.fmt))
        return 0
    for ev, summary in evaluations:
        _print(ev, summary, args)
    if plots:
        print("\nfigures: " + ", ".join(str(p) for p in plots))
    return 0


def _fmt(value: float, sd: float | None, digits: int) -> str:
    if math.isnan(value):
        return "-"
    text = f"{value:,.{digits}f}"
    return text if sd is None else f"{text} ± {sd:,.{digits}f}"


def _print(ev, summary: str, args) -> None:
    from hpcsched.experiments import herasched_grid as hg
    from hpcsched.experiments import herasched_eval as he
    from hpcsched.workload.hera_periods import hera_period

    markdown = args.fmt == "markdown"
    fmt = "markdown" if markdown else "table"
    g = ev.grid
    p = hera_period(ev.cluster, ev.period)
    cut = f" (its first {g.jobs:,} jobs)" if args.jobs else ""
    print(f"\n== {g.workload}: {ev.cluster}'s {ev.period} period, {p.describe()}, {g.jobs:,} "
          f"jobs{cut}; {g.profile}, {g.backfill} backfilling ==\n")
    print(f"{summary}\n")
    if ev.tie_draws:
        print(f"Tie order: {ev.ties}. Every AWT and MWT below is the mean over {1 + ev.tie_draws} "
              f"schedules: the period as generated, and {ev.tie_draws} copies with the run times "
              f"dealt again within those groups (seeds 1-{ev.tie_draws}), which no policy can "
              f"tell apart.\n")
    cols = ["selector", *g.allocators]
    print("Appendix B: AWT / MWT (s); the grid's lowest of each marked " +
          ("bold" if markdown else "*") + "\n")
    print(format_rows(hg.appendix_b_rows(g, markdown), fmt, columns=cols))
    low_awt, low_mwt = g.best_awt(), g.best_mwt()
    print(f"\nlowest AWT {g.awt(low_awt):,.1f} s ({hg.cell_name(low_awt)}), lowest MWT "
          f"{g.mwt(low_mwt):,.0f} s ({hg.cell_name(low_mwt)})")
    if ev.baselines:
        n = len(g.cells())
        brows = []
        for b in ev.baselines:
            f = ev.baseline_facts(b)
            brows.append({"baseline": b.spec, "allocator": b.allocator,
                          "AWT (s)": _fmt(b.awt, None, 1), "MWT (s)": _fmt(b.mwt, None, 0),
                          "AWT below": f"{f['cells_awt_above']} of {n}",
                          "MWT below": f"{f['cells_mwt_above']} of {n}",
                          "S vs best cell": f"{f['score_vs_best_cell']:.2f}",
                          "CPU s": f"{ev.seconds.get(b.spec, math.nan):.1f}"})
        print(f"\nlearned baselines: jobs seen as total cores, the grid's simulation ({g.profile}, "
              f"{g.backfill}); AWT / MWT below how many cells; S = AWT_cell/AWT + MWT_cell/MWT "
              f"against the best cell, {hg.cell_name(g.reference())} (above 2: the baseline is "
              f"better); the baselines' view: {ev.cores_view}\n")
        print(format_rows(brows, fmt, columns=list(brows[0])))
    if not ev.runs:
        print(f"\nno HeraSched model given for {ev.cluster} (--models): the grid alone")
        return
    many = len(ev.runs) > 1
    rows = [{"HeraSched": f"herasched:{r.model}", "AWT (s)": _fmt(r.awt, None, 1),
             "MWT (s)": _fmt(r.mwt, None, 0), "CPU s": f"{ev.seconds[r.model]:.1f}"}
            for r in ev.runs]
    if ev.tie_draws:
        for row, r in zip(rows, ev.runs):
            row["MWT sd over draws"] = _fmt(r.metrics["max_wait_draw_sd"], None, 0)
    if many:
        m = ev.herasched()
        rows.append({"HeraSched": f"mean ± sd of {len(ev.runs)} models",
                     "AWT (s)": _fmt(m["wait"], m["wait_sd"], 1),
                     "MWT (s)": _fmt(m["max_wait"], m["max_wait_sd"], 0), "CPU s": "",
                     **({"MWT sd over draws": ""} if ev.tie_draws else {})})
    print()
    print(format_rows(rows, fmt, columns=list(rows[0])))
    scores = ev.mean_scores()
    print(f"\nFig. 4.8: S = AWT_cell/AWT_H + MWT_cell/MWT_H, HeraSched against each cell "
          f"(above 2: HeraSched\nbetter{'; mean ± sd over the models' if many else ''})\n")
    srows = [{"selector": s, **{a: _fmt(*scores[s, a], 2) if many else f"{scores[s, a][0]:.2f}"
                               for a in g.allocators}} for s in g.selectors]
    print(format_rows(srows, fmt, columns=cols))
    if ev.baselines:
        bscores = ev.mean_baseline_scores()
        print(f"\nS of HeraSched against each learned baseline"
              f"{' (mean ± sd over the models)' if many else ''}\n")
        rows = [{"baseline": label, "S": _fmt(*bscores[label], 2) if many
                 else f"{bscores[label][0]:.2f}"} for label in bscores]
        print(format_rows(rows, fmt, columns=["baseline", "S"]))
    print("\nthe issue's criteria:")
    for line in ev.criteria():
        print(line if line.startswith("  ") else f"- {line}")
    kinds = ev.kinds()
    print("\nTable 4.3: mean per-node request of the jobs HeraSched placed on each node kind"
          + (" (mean over the models)" if many else "") + "\n")
    placed = "jobs placed (all models)" if many else "jobs placed"
    krows = [{"node kind": k.kind, "nodes": k.nodes or "", placed: k.jobs,
              "cores": _fmt(k.cores, None, 2), "memory (GB)": _fmt(k.memory, None, 1),
              "GPUs": _fmt(k.gpus, None, 2)} for k in kinds]
    print(format_rows(krows, fmt, columns=list(krows[0])))
    run = ev.runs[0]
    slots = ev.slots()
    total = int(slots.sum())
    bins = he.slot_bins(slots, run.window, run.tail)
    print(f"\nFig. 4.6: the selector's {total:,} decisions"
          f"{' (all models)' if many else ''} by window slot (W = {run.window}, T = {run.tail})\n")
    brows = [{"slots": label, "decisions": count, "share": f"{count / max(total, 1):.1%}"}
             for label, count in bins]
    print(format_rows(brows, fmt, columns=["slots", "decisions", "share"]))
