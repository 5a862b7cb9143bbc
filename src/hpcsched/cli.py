"""The `hpcsched` command."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Sequence

from hpcsched import __version__
from hpcsched.cluster.pool import ClusterError
from hpcsched.report.progress import Progress
from hpcsched.report.table import format_rows
from hpcsched.sim.profiles import BACKFILLS, PROFILES

EPILOG_SIMULATE = """examples:
  hpcsched simulate lublin-1 --policy sjf --backfill easy
  hpcsched simulate hpc2n --profile rlscheduler --policy f1 --backfill schedgym --start 4000 --jobs 1024 --json
  hpcsched simulate my.swf --policy fcfs --records jobs.csv
"""

EPILOG_COMPARE = """examples:
  hpcsched compare lublin-1 --policies fcfs,sjf,wfp3,unicep,f1 --backfill none,easy --windows 10 --jobs 1024
  hpcsched compare hpc2n --profile rlscheduler --policies fcfs,wfp3-rls,unicep-rls,sjf,f1 \\
      --backfill none,schedgym --windows 10 --jobs 1024 --first 10000      # the paper's own windows
  hpcsched compare ctc-sp2 --policies fcfs,sjf --starts 0,5000 --jobs 2048 --markdown
"""

EPILOG_EXPERIMENT = """experiments:
  rlscheduler-table5   RLScheduler (SC'20) Table V: bsld on the paper's 10 x 1024-job windows of
                       Lublin-1, Lublin-2 and HPC2N, heuristics with and without backfilling, as the
                       paper printed them, as we reproduce them (rlscheduler profile), and under
                       the standard profile (correct WFP3/UNICEP, textbook EASY)
examples:
  hpcsched experiment rlscheduler-table5
  hpcsched experiment rlscheduler-table5 --json > table5.json
"""

EXPERIMENTS = ("rlscheduler-table5",)

EPILOG_TRACE = """examples:
  hpcsched trace list
  hpcsched trace stats hpc2n
  hpcsched trace convert my.swf.gz out.swf --first 10000
"""


def _csv_list(text: str) -> list[str]:
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise argparse.ArgumentTypeError("expected a comma-separated list")
    return items


def _int_list(text: str) -> list[int]:
    try:
        return [int(t) for t in _csv_list(text)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None


def _add_cluster_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("cluster")
    g.add_argument("--nodes", type=int, help="number of nodes (default: the trace header's MaxNodes)")
    g.add_argument("--procs-per-node", type=int,
                   help="processors per node (default: MaxProcs / MaxNodes from the header)")
    g.add_argument("--drop-oversized", action="store_true",
                   help="drop jobs larger than the whole cluster (counted) instead of stopping")


def _add_profile_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--profile", default="standard", choices=list(PROFILES),
                   help="simulation semantics: standard (textbook, default) or rlscheduler "
                        "(SchedGym's, exactly)")


def _add_window_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("windows (0-based positions in the trace as loaded under the profile)")
    g.add_argument("--start", type=int, help="first job of the window")
    g.add_argument("--jobs", type=int, help="jobs per window")
    g.add_argument("--starts", type=_int_list, help="several window starts, comma-separated")
    g.add_argument("--windows", type=int, help="draw this many windows at random")
    g.add_argument("--first", type=int,
                   help="draw windows from the first N jobs (rlscheduler profile: 10000)")
    g.add_argument("--seed", type=int,
                   help="seed of the draw (rlscheduler profile without a seed: the paper's windows)")
    g.add_argument("--paper-windows", action="store_true",
                   help="RLScheduler's own draw under any profile (default 10 x 1024 jobs from "
                        "the first 10000)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hpcsched",
        description="HPC batch-job scheduling: simulate classic heuristics and learned schedulers "
                    "on real traces.",
    )
    parser.add_argument("--version", action="version", version=f"hpcsched {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    fmt = argparse.ArgumentParser(add_help=False)
    out = fmt.add_mutually_exclusive_group()
    out.add_argument("--json", dest="fmt", action="store_const", const="json",
                     help="print JSON (flat rows)")
    out.add_argument("--csv", dest="fmt", action="store_const", const="csv", help="print CSV")
    out.add_argument("--markdown", dest="fmt", action="store_const", const="markdown",
                     help="print a Markdown table")

    p = sub.add_parser("simulate", parents=[fmt], help="schedule one window of a trace",
                       epilog=EPILOG_SIMULATE, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("trace", help="a bundled trace name (see `hpcsched trace list`) or an SWF file")
    p.add_argument("--policy", default="fcfs", help="heuristic (see `hpcsched policies`)")
    p.add_argument("--backfill", default="none", choices=BACKFILLS)
    _add_profile_arg(p)
    p.add_argument("--start", type=int, help="first job of the window (0-based)")
    p.add_argument("--jobs", type=int, help="jobs in the window (default: to the end)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random policy")
    p.add_argument("--records", metavar="CSV", help="write one record per job to this CSV file")
    _add_cluster_args(p)

    p = sub.add_parser("compare", parents=[fmt], help="compare policies on the same windows",
                       epilog=EPILOG_COMPARE, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("trace", help="a bundled trace name or an SWF file")
    p.add_argument("--policies", type=_csv_list, default=["fcfs", "sjf", "f1"],
                   help="comma-separated policies (default: fcfs,sjf,f1)")
    p.add_argument("--backfill", type=_csv_list, default=["none", "easy"],
                   help=f"comma-separated backfilling choices among {', '.join(BACKFILLS)}")
    _add_profile_arg(p)
    _add_window_args(p)
    _add_cluster_args(p)

    p = sub.add_parser("policies", help="list the heuristics")

    p = sub.add_parser("experiment", parents=[fmt], help="run a paper's evaluation protocol",
                       epilog=EPILOG_EXPERIMENT,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("name", choices=list(EXPERIMENTS), help="which protocol")

    p = sub.add_parser("trace", help="inspect and convert traces", epilog=EPILOG_TRACE,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    tsub = p.add_subparsers(dest="trace_command", metavar="ACTION")
    t = tsub.add_parser("list", help="the bundled traces")
    t = tsub.add_parser("stats", parents=[fmt], help="summary statistics of a trace")
    t.add_argument("trace", nargs="+")
    _add_profile_arg(t)
    t = tsub.add_parser("convert", help="rewrite a trace (or part of it) as SWF")
    t.add_argument("source")
    t.add_argument("dest", help="output SWF file (.gz to compress)")
    t.add_argument("--first", type=int, help="keep only the first N jobs")
    t.add_argument("--start", type=int, default=0, help="skip the jobs before this position")
    t.add_argument("--clean", choices=list(PROFILES),
                   help="apply a profile's cleaning rules before writing")
    return parser


# -- commands ---------------------------------------------------------------------------------------

def _policy(spec: str, seed: int = 0):
    from hpcsched.policies.priority import get_policy

    return get_policy(spec, seed=seed)


def _prepare(args):
    from hpcsched.sim.run import prepare

    prepared = prepare(args.trace, args.profile, nodes=args.nodes,
                       procs_per_node=args.procs_per_node, drop_oversized=args.drop_oversized)
    return prepared


def cmd_simulate(args) -> int:
    from hpcsched.sim.run import simulate

    prepared = _prepare(args)
    policy = _policy(args.policy, args.seed)
    result = simulate(prepared, policy, backfill=args.backfill, start=args.start, jobs=args.jobs)
    row = {"trace": prepared.name, "profile": prepared.profile.name, "policy": args.policy,
           "backfill": args.backfill}
    row.update(result.metrics)
    row.update(result.counts)
    row["dropped_oversized"] = prepared.dropped_oversized
    row["cleaning"] = prepared.summary()
    if args.records:
        _write_records(result, args.records)
    if args.fmt == "json":
        print(json.dumps(row, indent=1))
    elif args.fmt in ("csv", "markdown"):
        print(format_rows([row], args.fmt))
    else:
        print(prepared.summary())
        if result.counts.get("killed_at_request"):
            print(f"{result.counts['killed_at_request']} job(s) killed at their requested time")
        width = max(len(k) for k in row)
        for k, v in row.items():
            if k != "cleaning":
                print(f"{k.ljust(width)}  {v:.6g}" if isinstance(v, float) else
                      f"{k.ljust(width)}  {v}")
    return 0


def _write_records(result, path: str) -> None:
    import numpy as np

    cols = result.records()
    names = list(cols)
    with open(path, "w") as f:
        f.write(",".join(names) + "\n")
        for i in range(len(result.jobs)):
            vals = []
            for name in names:
                v = float(cols[name][i])
                vals.append("" if np.isnan(v) else (str(int(v)) if v.is_integer() else repr(v)))
            f.write(",".join(vals) + "\n")


def cmd_compare(args) -> int:
    from hpcsched.experiments.compare import choose_windows, compare

    prepared = _prepare(args)
    starts, length = choose_windows(prepared, start=args.start, starts=args.starts,
                                    windows=args.windows, jobs=args.jobs, first=args.first,
                                    seed=args.seed, paper=args.paper_windows)
    policies = [(p, _policy(p, args.seed or 0)) for p in args.policies]
    for b in args.backfill:
        if b not in BACKFILLS:
            raise ValueError(f"unknown backfilling {b!r}; choose among {', '.join(BACKFILLS)}")
    total = len(policies) * len(args.backfill) * len(starts)
    with Progress(total, "simulating") as bar:
        rows = compare(prepared, policies, args.backfill, starts, length, progress=bar.update)
    if args.fmt is None:
        print(f"{prepared.summary()}\n{len(starts)} window(s) of {length} jobs, starts "
              f"{','.join(map(str, starts))}; mean over windows\n")
    print(format_rows(rows, args.fmt or "table"))
    return 0


def cmd_experiment(args) -> int:
    from hpcsched.experiments import rlscheduler

    traces = ("lublin-1", "lublin-2", "hpc2n")
    total = len(traces) * 2 * 2 * len(rlscheduler.HEURISTICS)
    with Progress(total, args.name) as bar:
        rows = rlscheduler.table5_heuristics(traces, progress=bar.update)
    if args.fmt in ("json", "csv"):
        print(format_rows(rows, args.fmt))
        return 0
    table = rlscheduler.pivot(rows)
    if args.fmt is None:
        print("bsld, mean over the paper's 10 windows x 1024 jobs (first 10,000 jobs); paper = "
              "Table V; rlscheduler = SchedGym's semantics and the code's WFP3/UNICEP; standard = "
              "textbook semantics, correct WFP3/UNICEP, EASY\n")
    cols = ["trace", "backfilling", "source", *rlscheduler.HEURISTICS]
    print(format_rows(table, args.fmt or "table", columns=cols))
    return 0


def cmd_policies(args) -> int:
    from hpcsched.policies.priority import DESCRIPTIONS

    for name, text in DESCRIPTIONS.items():
        print(f"{name:<12}{text}")
    return 0


def cmd_trace(args) -> int:
    from hpcsched.workload import traces

    if args.trace_command == "list":
        for name, info in traces.describe_traces().items():
            print(f"{name:<12}{info}")
        return 0
    if args.trace_command == "stats":
        from hpcsched.workload.stats import trace_stats

        from hpcsched.sim.run import prepare

        rows = []
        for name in args.trace:
            prepared = prepare(name, args.profile, drop_oversized=True)
            row = {"trace": prepared.name}
            row.update(trace_stats(prepared.jobs, prepared.cluster.total_procs))
            rows.append(row)
        print(format_rows(rows, args.fmt or "table", columns=list(rows[0])))
        return 0
    if args.trace_command == "convert":
        from hpcsched.workload.swf import write_swf

        jobs = traces.load_trace(args.source)
        if args.clean:
            from hpcsched.workload.cleaning import clean

            jobs, report = clean(jobs, PROFILES[args.clean].cleaning)
            print(report.summary(), file=sys.stderr)
        end = len(jobs) if args.first is None else min(len(jobs), args.start + args.first)
        if args.start < 0 or args.start >= len(jobs):
            raise ValueError(f"--start {args.start} is outside the trace of {len(jobs)} jobs")
        part = jobs.take(slice(args.start, end))
        write_swf(part, args.dest)
        print(f"wrote {len(part)} jobs to {args.dest}", file=sys.stderr)
        return 0
    build_parser().parse_args(["trace", "--help"])
    return 2


COMMANDS = {"simulate": cmd_simulate, "compare": cmd_compare, "policies": cmd_policies,
            "trace": cmd_trace, "experiment": cmd_experiment}


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    from hpcsched.workload.swf import TraceError

    try:
        return COMMANDS[args.command](args)
    except (TraceError, ClusterError, ValueError, OSError) as exc:
        print(f"hpcsched: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("hpcsched: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
