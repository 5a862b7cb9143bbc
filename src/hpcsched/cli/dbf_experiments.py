"""Wang's thesis Ch. 3 (DBF): `experiment dbf-baselines` (Fig. 3.4) and `experiment
dbf-window-sweep` (Fig. 3.5-3.7)."""

from __future__ import annotations

import argparse

from hpcsched.cli.common import add_format_options, csv_list, int_list
from hpcsched.report.progress import Progress
from hpcsched.report.table import format_rows

EPISODES_HELP = """Episodes: DBF's (hpcsched/DBF-v0): from a fixed start on an empty machine, jobs
arriving as logged, until 1,000 jobs have started; every method runs on the engine over the same
jobs and is cut at its 1,000th start (metrics from the first arrival to it, jobs still waiting
counted). The test starts: DBF's test split (dbf_starts), drawn with a fixed seed from the last
25% of the trace's jobs (Lublin-1: starts 7,500-9,000), which training and validation leave alone;
the same for every method, and a larger draw holds a smaller one's. utilization is
the time-averaged share of busy cores, wait the AWT (s) of the jobs started, queue_length the
time-averaged number of waiting jobs, job_load the time-averaged requested work waiting (cores x
requested time) in seconds of the whole machine, bsld the mean bounded slowdown (10 s)."""

EPILOG_BASELINES = f"""examples:
  hpcsched experiment dbf-baselines                        # heuristics, SchedInspector, DBF (~2 min)
  hpcsched experiment dbf-baselines --models dbf:runs/m32,dbf:runs/m64 --plot fig34.png
  hpcsched experiment dbf-baselines --seeds M32=runs/m32-s0,runs/m32-s1,runs/m32-s2 --json
  hpcsched experiment dbf-baselines --inspectors none --episodes 20 --markdown

Fig. 3.4's methods, sorted by AWT: FCFS, Ch. 3's "SJF" (the fewest requested cores: sqf) and LCFS,
without backfilling and with EASY (the thesis does not say which); SchedInspector's shipped
Lublin-1 models (Insp-SJF, Insp-F1; +BF: trained with SchedGym's backfilling, as the thesis ran
them), each with the base, backfilling and profile it was trained with, in DBF's online protocol
and in its own offline one (-o: 128-job windows from the same starts, no arrival after the 128th,
run until all have started; "(Insp. base)" is its base heuristic alone there); and the DBF models
(--models, default the shipped ones: M = 32, 64, 128). Then the thesis's facts (section 3.4.3)
beside ours, each with a verdict.

{EPISODES_HELP}

--json prints one flat row per method: trace, method, policy, backfill, window, tail, protocol,
profile, kind, episodes, utilization, wait, queue_length, job_load, bsld, rejection_ratio (an
inspector's), seeds (a method judged over training seeds: the list; its metrics are the mean over
seeds of each seed's mean over episodes, KEY_sd the sample sd, KEY_per_seed each seed's own).
"""

EPILOG_SWEEP = f"""examples:
  hpcsched experiment dbf-window-sweep                     # the shipped models, FCFS's queue
  hpcsched experiment dbf-window-sweep --grid 10-0=runs/m10,9-1=runs/m10t1,0-10=runs/m10t10 \\
      --plot fig35.png --heatmap fig37.png
  hpcsched experiment dbf-window-sweep --grid 20-0=dbf:runs/m20 --heatmap-episodes 0 --json
  hpcsched experiment dbf-window-sweep --seeds 9-1=runs/m10t1-s0,runs/m10t1-s1

--grid names each model by the thesis's label MH-MT (head and tail slots: 9-1 is M = 10 with one
tail slot) = a policy name (dbf:PATH, dbf:pretrained/NAME), a model file or a run folder. Printed:
per model (Fig. 3.5) AWT and queue length; (Fig. 3.6) the mean number of invisible jobs, L - M
where L > M, and the share of partially observed cycles (L > M), measured at every scheduling
cycle of the episode (each arrival or completion instant with a job waiting, as the cycle opens;
cycles, not the environment's steps); (Fig. 3.7) for the M = 10 models and the reference
heuristics, over --heatmap-episodes (1,000, the thesis's), per job type (requested cores x
requested time) the jobs placed and their mean wait, and the share of jobs of more than 128 cores
not placed by the episode's end (starvation). The reference heuristics (--reference, default
FCFS without backfilling and with EASY) give the model-free queue on the same episodes, and their
invisible jobs for every M of the grid. Then the thesis's facts (section 3.4.4), each with a
verdict.

{EPISODES_HELP}

--json prints flat rows with a `table` key: "windows" (trace, method, policy, backfill, window,
tail, episodes, the metrics, invisible, partial, cycles, seeds), "job_types" (method, cores,
runtime, arrived, placed, not_placed, wait) and "starvation" (method, big_arrived, big_placed,
big_not_placed, big_wait).
"""


class _Every:
    """A progress callback that passes counts on to `bar` in steps of about 1 % of its total,
    so that a log gets about a hundred lines, not one per episode."""

    def __init__(self, bar) -> None:
        self.bar, self.held = bar, 0
        self.step = max(bar.total // 100, 1)

    def __call__(self, k: int = 1) -> None:
        self.held += k
        if self.held >= self.step or self.bar.done + self.held >= self.bar.total:
            self.bar.update(self.held)
            self.held = 0


def _label_items(text: str) -> list[str]:
    return csv_list(text)


def _seeds(items: list[str] | None) -> dict[str, list[str]]:
    """--seeds LABEL=P1,P2,... (repeatable) -> {label: [P1, P2, ...]}."""
    out: dict[str, list[str]] = {}
    for item in items or ():
        label, sep, rest = item.partition("=")
        paths = [p.strip() for p in rest.split(",") if p.strip()]
        if not sep or not label.strip() or not paths:
            raise ValueError(f"--seeds {item!r}: give LABEL=MODEL,MODEL,... (a method's label "
                             f"and its training seeds' policy names, model files or run folders)")
        out.setdefault(label.strip(), []).extend(paths)
    return out


def _common(p: argparse.ArgumentParser) -> None:
    add_format_options(p)
    p.add_argument("--trace", default="lublin-1",
                   help="a bundled trace or an SWF file (default: lublin-1, the thesis's)")
    p.add_argument("--episodes", type=int, default=100,
                   help="test episodes (default: 100, the thesis's per checkpoint)")
    p.add_argument("--workers", type=int, default=None,
                   help="processes running episodes at once (default: the machine's cores, at "
                        "most 8); the numbers do not depend on it")
    p.add_argument("--seeds", action="append", metavar="LABEL=MODEL,MODEL,...",
                   help="a method's training seeds (policy names, model files or run folders), "
                        "judged together: the mean and sample sd over seeds; repeatable")


def add_baselines_arguments(p: argparse.ArgumentParser) -> None:
    """`experiment dbf-baselines`'s options (listed by `hpcsched.cli.EXPERIMENTS`)."""
    from hpcsched.experiments import dbf

    p.description = ("Wang's thesis Fig. 3.4: DBF against FCFS, SJF, LCFS and SchedInspector "
                     "on DBF's test episodes.")
    p.epilog = EPILOG_BASELINES
    _common(p)
    p.add_argument("--models", type=_label_items, default=None,
                   help="DBF models, comma-separated policy names (dbf:PATH, "
                        "dbf:pretrained/NAME), model files or run folders, each optionally "
                        "LABEL=NAME; 'none' for none (default: the shipped "
                        + ", ".join(dbf.DBF_MODELS) + ")")
    p.add_argument("--heuristics", type=csv_list, default=list(dbf.HEURISTICS),
                   help="heuristics (default: fcfs,sqf,lcfs: Ch. 3's FCFS, SJF and LCFS)")
    p.add_argument("--backfill", type=csv_list, default=["none", "easy"],
                   help="the heuristics' backfilling, comma-separated (default: none,easy)")
    p.add_argument("--inspectors", type=csv_list, default=list(dbf.INSPECTORS),
                   help="SchedInspector models (inspect:MODEL), 'none' for none (default: the "
                        "shipped Lublin-1 SJF and F1 ones, without and with backfilling)")
    p.add_argument("--offline-jobs", type=int, default=dbf.OFFLINE_JOBS,
                   help="jobs per window of SchedInspector's offline protocol (default: 128)")
    p.add_argument("--plot", default="", metavar="FILE",
                   help="draw Fig. 3.4 (a panel per metric, methods sorted by AWT) to this PNG")


def add_sweep_arguments(p: argparse.ArgumentParser) -> None:
    """`experiment dbf-window-sweep`'s options (listed by `hpcsched.cli.EXPERIMENTS`)."""
    from hpcsched.experiments import dbf_window as dw

    p.description = ("Wang's thesis Fig. 3.5-3.7: the split window, per (M, M_t) model: AWT, "
                     "queue length, invisible jobs and the wait per job type.")
    p.epilog = EPILOG_SWEEP
    _common(p)
    p.add_argument("--grid", type=_label_items, default=None, metavar="MH-MT=MODEL,...",
                   help="the models, by the thesis's window label (default: the shipped DBF "
                        "models)")
    p.add_argument("--reference", type=csv_list, default=["fcfs", "fcfs+easy"],
                   help="heuristics run on the same episodes, for the model-free queue: NAME "
                        "(without backfilling) or NAME+easy ('none' for none; default: "
                        "fcfs,fcfs+easy)")
    p.add_argument("--windows", type=int_list, default=None,
                   help="the M at which the references' invisible jobs are measured when no "
                        "model gives one (default: " + ",".join(map(str, dw.WINDOWS)) + ")")
    p.add_argument("--heatmap-episodes", type=int, default=dw.HEATMAP_EPISODES,
                   help="episodes of Fig. 3.7's job types (default: 1000, the thesis's; 0: "
                        "none); the first --episodes of them are Fig. 3.5's")
    p.add_argument("--heatmap-window", type=int, default=dw.HEATMAP_WINDOW,
                   help="the M of Fig. 3.7's models (default: 10)")
    p.add_argument("--plot", default="", metavar="FILE",
                   help="draw Fig. 3.5 and 3.6 (per M, against M_t) to this PNG")
    p.add_argument("--heatmap", default="", metavar="FILE",
                   help="draw Fig. 3.7 (per configuration, wait and jobs placed per job type) "
                        "to this PNG")


def _check_counts(args) -> None:
    if args.episodes < 1:
        raise ValueError(f"--episodes must be at least 1, got {args.episodes}")
    if args.workers is not None and args.workers < 1:
        raise ValueError(f"--workers must be at least 1, got {args.workers}")


def _workers(args) -> int:
    from hpcsched.experiments.dbf import default_workers

    return args.workers or default_workers()


def _none(items: list[str] | None) -> list[str] | None:
    return [] if items is not None and [i.lower() for i in items] == ["none"] else items


def cmd_baselines(args) -> int:
    from hpcsched.experiments import dbf

    _check_counts(args)
    if args.offline_jobs < 1:
        raise ValueError(f"--offline-jobs must be at least 1, got {args.offline_jobs}")
    notes: list[str] = []
    models = _none(args.models)
    if models is None:
        names, notes = dbf.shipped_models()
        pairs = [("", n) for n in names]
    else:
        pairs = [(lb.strip(), n.strip()) if sep else ("", lb.strip())
                 for lb, sep, n in (m.partition("=") for m in models)]
    methods, more = dbf.baseline_methods(
        heuristics=[h.lower() for h in args.heuristics], backfills=args.backfill,
        inspectors=_none(args.inspectors), models=pairs, seeds=_seeds(args.seeds))
    notes += more
    methods = dbf.resolve_windows(methods, args.trace)
    with Progress(dbf.simulations(methods, args.episodes), "dbf-baselines", lines=True) as bar:
        rows = dbf.baselines(args.trace, methods, episodes=args.episodes,
                             offline_jobs=args.offline_jobs, workers=_workers(args),
                             progress=_Every(bar))
    plot = dbf.plot_baselines(rows, args.plot) if args.plot else None
    if args.fmt in ("json", "csv"):
        print(format_rows(rows, args.fmt))
        return 0
    for line in notes:
        print(f"note: {line}")
    cols = ["method", "policy", "backfill", "protocol", "window", "tail", "utilization",
            "wait", "queue_length", "job_load", "bsld", "rejection_ratio"]
    if any(r.get("seeds") for r in rows):
        cols += ["wait_sd", "queue_length_sd", "seeds"]
        rows = [dict(r, seeds=len(r["seeds"]) if r.get("seeds") else None) for r in rows]
    print(f"\n{rows[0]['trace']}: {args.episodes} test episodes of 1,000 placed jobs, sorted by "
          f"AWT (Fig. 3.4)\n")
    print(format_rows(rows, "markdown" if args.fmt == "markdown" else "table", columns=cols,
                      digits={"wait": 0, "wait_sd": 0, "queue_length": 1,
                              "queue_length_sd": 1, "job_load": 0, "bsld": 1,
                              "utilization": 3, "rejection_ratio": 3}))
    print("\nthe thesis's facts (section 3.4.3), on these rows:")
    for c in dbf.claims(rows):
        print(f"- {c.line()}")
    if plot is not None:
        print(f"\nfigure: {plot}")
    return 0


def cmd_sweep(args) -> int:
    from hpcsched.experiments import dbf, dbf_window as dw

    _check_counts(args)
    if args.heatmap_episodes < 0:
        raise ValueError(f"--heatmap-episodes must be at least 0, got {args.heatmap_episodes}")
    notes: list[str] = []
    seeds = _seeds(args.seeds)
    if args.grid is None and not seeds:
        models, notes = dw.shipped_grid()
    else:
        models = dw.grid_methods(dw.parse_grid(args.grid or []), seeds)
    models = dbf.resolve_windows(models, args.trace)
    unknown = [m.label for m in models if m.window is None]
    if unknown:
        raise ValueError(f"the window of {', '.join(unknown)} cannot be read from the model: "
                         f"name it in --grid as MH-MT=MODEL")
    references = _none(args.reference) or []
    dw.reference_methods(references)  # an unknown name fails here
    if not models and not references:
        raise ValueError("nothing to run: no model (--grid) and no reference heuristic")
    total = dw.simulations(models, references, args.episodes, args.heatmap_episodes,
                           args.heatmap_window)
    with Progress(total, "dbf-window-sweep", lines=True) as bar:
        sweep = dw.window_sweep(args.trace, models, references=references,
                                episodes=args.episodes, heatmap_episodes=args.heatmap_episodes,
                                heatmap_window=args.heatmap_window, windows=args.windows,
                                workers=_workers(args), progress=_Every(bar))
    plots = []
    if args.plot:
        if any(r.get("kind") == "model" for r in sweep.rows):
            plots.append(dw.plot_sweep(sweep.rows, args.plot))
        else:
            notes.append("no model: Fig. 3.5/3.6 (--plot) not drawn")
    if args.heatmap:
        if sweep.types:
            plots.append(dw.plot_heatmap(sweep, args.heatmap))
        else:
            notes.append("--heatmap-episodes 0 or no configuration with M = "
                         f"{args.heatmap_window}: Fig. 3.7 not drawn")
    if args.fmt in ("json", "csv"):
        rows = [{"table": "windows", **r} for r in sweep.rows]
        rows += [{"table": "job_types", **r} for r in sweep.type_rows()]
        rows += [{"table": "starvation", **r} for r in sweep.starvation_rows()]
        print(format_rows(rows, args.fmt))
        return 0
    fmt = "markdown" if args.fmt == "markdown" else "table"
    for line in notes:
        print(f"note: {line}")
    rows = [dict(r, seeds=len(r["seeds"]) if r.get("seeds") else None) for r in sweep.rows]
    print(f"\n{rows[0]['trace']}: {args.episodes} test episodes of 1,000 placed jobs (Fig. 3.5 "
          f"and 3.6; invisible jobs per scheduling cycle)\n")
    cols = ["method", "policy", "window", "tail", "wait", "queue_length", "utilization",
            "invisible", "partial", "cycles"]
    if any(r.get("seeds") for r in rows):
        cols += ["wait_sd", "queue_length_sd", "seeds"]
    print(format_rows(rows, fmt, columns=cols,
                      digits={"wait": 0, "wait_sd": 0, "queue_length": 1, "queue_length_sd": 1,
                              "invisible": 2, "partial": 3, "utilization": 3}))
    if sweep.types:
        print(f"\nwait per job type over {sweep.heatmap_episodes} episodes (Fig. 3.7): jobs "
              f"placed / their mean wait (s), by requested cores (rows) and requested time")
        for label, parts in sweep.types.items():
            print(f"\n{label}:\n")
            print(format_rows(_type_grid(dw.job_type_rows(label, parts)), fmt,
                              columns=["cores", *dw.TIME_LABELS]))
        print("\njobs of more than 128 cores (starvation):\n")
        print(format_rows(sweep.starvation_rows(), fmt,
                          columns=["method", "big_arrived", "big_placed", "big_not_placed",
                                   "big_wait"], digits={"big_not_placed": 3, "big_wait": 0}))
    print("\nthe thesis's facts (section 3.4.4), on these rows:")
    for c in dw.claims(sweep):
        print(f"- {c.line()}")
    if plots:
        print("\nfigures: " + ", ".join(str(p) for p in plots))
    return 0


def _type_grid(rows: list[dict]) -> list[dict]:
    """Job-type rows as a grid: a line per core class, a column per time class."""
    from hpcsched.experiments.dbf_window import CORE_LABELS

    out = []
    for cores in CORE_LABELS:
        line = {"cores": cores}
        for r in rows:
            if r["cores"] == cores:
                line[r["runtime"]] = (f"{r['placed']} / {r['wait']:.0f}" if r["placed"]
                                      else f"0 of {r['arrived']}")
        out.append(line)
    return out
