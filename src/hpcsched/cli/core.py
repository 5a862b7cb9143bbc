"""The commands that work on traces, policies and model files: simulate, compare, policies, trace,
upgrade-models (evaluate has a module of its own, `hpcsched.cli.evaluate`)."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace

from hpcsched.cli import evaluate
from hpcsched.cli.common import (add_cluster_args, add_profile_arg, add_window_args,
                                 check_backfills, csv_list, nonnegative_int, positive_int,
                                 prepare_from_args, resolve, resolve_profile)
from hpcsched.report.progress import Progress
from hpcsched.report.table import format_json, format_rows
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
  hpcsched compare lublin-1 --policies fcfs,sqf,lcfs,dbf:pretrained/dbf-m32 --backfill none,easy \\
      --episodes 100 --jobs 1000      # DBF's protocol: episodes, not windows (see --episodes)
  hpcsched compare dl-test.txt --cluster spartan-deeplearn --backfill easy \\
      --policies herasched:runs/hs-dl,fcfs+best-fit,unicep+topology   # SELECTOR+ALLOCATOR
  hpcsched compare dl-test.txt --cluster spartan-deeplearn --backfill easy \\
      --policies fcfs+best-fit,wfp3+best-fit --tie-draws 9     # ties broken at random, 10 tables

On a cluster of named nodes (--cluster) a policy may name its allocator, SELECTOR+ALLOCATOR
(first-available, best-fit, topology), instead of --allocator's; each row names its allocator
(agent: a HeraSched model's, which places its jobs itself and takes no +ALLOCATOR).
"""

EPILOG_TRACE = """examples:
  hpcsched trace list
  hpcsched trace stats hpc2n
  hpcsched trace stats jobs.txt                 # a sacct -P file: what was read and dropped, counted
  hpcsched trace jobs jobs.txt --json           # every job as read, one flat row each (--csv too)
  hpcsched trace jobs jobs.txt --partition gpu --csv
  hpcsched trace convert my.swf.gz out.swf --first 10000
  hpcsched trace convert ph-train.txt ph-train-cores.swf --cores-of spartan-physical   # jobs as cores
  hpcsched trace generate spartan-physical --days 7 --seed 1 -o physical-week.txt
  hpcsched trace stats physical-week.txt        # each calibrated statistic beside its target
  hpcsched trace generate lublin out.swf --jobs 10000 --nodes 256 --seed 1
"""

EPILOG_UPGRADE = """examples:
  hpcsched upgrade-models runs/my-run/model.pt runs/my-run/best.pt
  hpcsched upgrade-models runs/                 # every *.pt below a folder
"""



def register(sub, fmt) -> None:
    """Add simulate, compare, evaluate, policies and trace to the top-level subparsers."""
    RAW = argparse.RawDescriptionHelpFormatter
    p = sub.add_parser("simulate", parents=[fmt], help="schedule one window of a trace",
                       epilog=EPILOG_SIMULATE, formatter_class=RAW)
    p.add_argument("trace", help="a bundled trace name (see `hpcsched trace list`) or an SWF file")
    p.add_argument("--policy", default="fcfs",
                   help="heuristic (see `hpcsched policies`) or model; on --cluster also "
                        "SELECTOR+ALLOCATOR, e.g. fcfs+topology")
    p.add_argument("--backfill", default="none", choices=BACKFILLS)
    add_profile_arg(p, from_models=True)
    p.add_argument("--start", type=nonnegative_int, help="first job of the window (0-based)")
    p.add_argument("--jobs", type=positive_int, help="jobs in the window (default: to the end)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random policy")
    p.add_argument("--records", metavar="CSV", help="write one record per job to this CSV file")
    add_cluster_args(p)

    p = sub.add_parser("compare", parents=[fmt], help="compare policies on the same windows",
                       epilog=EPILOG_COMPARE, formatter_class=RAW)
    p.add_argument("trace", help="a bundled trace name or an SWF file")
    p.add_argument("--policies", type=csv_list, default=["fcfs", "sjf", "f1"],
                   help="comma-separated policies (default: fcfs,sjf,f1); on --cluster also "
                        "SELECTOR+ALLOCATOR, e.g. fcfs+best-fit")
    p.add_argument("--backfill", type=csv_list, default=["none", "easy"],
                   help=f"comma-separated backfilling choices among {', '.join(BACKFILLS)}")
    p.add_argument("--reference", metavar="POLICY",
                   help="add `score`: Wang's combined score S = AWT_ref/AWT + MWT_ref/MWT against "
                        "this one of the policies (it scores 2; higher is better)")
    p.add_argument("--episodes", type=positive_int, metavar="N",
                   help="DBF's protocol (Wang's thesis Ch. 3) instead of windows: N fixed test "
                        "episodes (workload.windows.dbf_starts), each from an empty machine, jobs "
                        "arriving throughout, ending when --jobs (default 1000) have started; "
                        "Ch. 3's metrics over each episode")
    p.add_argument("--tie-draws", type=int, default=0, metavar="K",
                   help="also run every window on K copies of the trace with the run times of "
                        "jobs alike (same submit time and request) dealt again, and average over "
                        "them too: the luck of which of a job array's jobs starts first, which no "
                        "policy can see (default 0)")
    p.add_argument("--sample", action="store_true",
                   help="learned policies draw their actions from their distribution (seeded by "
                        "--seed; each row says actions=sampled) instead of the greedy choice")
    add_profile_arg(p, from_models=True)
    add_window_args(p)
    add_cluster_args(p)

    evaluate.register(sub, fmt)

    sub.add_parser("policies", help="list the heuristics")

    p = sub.add_parser("upgrade-models", help="rewrite model files of the formats before "
                                              "hpcsched.model/2 in it, in place",
                       epilog=EPILOG_UPGRADE, formatter_class=RAW)
    p.add_argument("paths", nargs="+", metavar="FILE_OR_FOLDER",
                   help="a model file, or a folder: every *.pt below it")

    p = sub.add_parser("trace", help="inspect and convert traces", epilog=EPILOG_TRACE,
                       formatter_class=RAW)
    tsub = p.add_subparsers(dest="trace_command", metavar="ACTION")
    t = tsub.add_parser("list", help="the bundled traces")
    t = tsub.add_parser("stats", parents=[fmt], help="summary statistics of a trace (of a Slurm "
                                                    "accounting file: also what was read and "
                                                    "dropped, and why)")
    t.add_argument("trace", nargs="+")
    add_profile_arg(t)
    t.add_argument("--partition", help="a Slurm-accounting trace: only this partition's jobs")
    t.add_argument("--cluster", metavar="NAME|FILE",
                   help="size the offered load by this cluster (default: the trace header's "
                        "size; a Slurm-accounting file has none, and its load is then left out)")
    t.add_argument("--nodes", type=int, help="cluster size in nodes, for the offered load")
    t.add_argument("--procs-per-node", type=int)
    t.add_argument("--calibration", action="store_true",
                   help="print only the table of the Spartan-like generator's calibrated "
                        "statistics, each beside its target (shown anyway, after the summary, "
                        "for a trace of a partition named physical, deeplearn or sapphire)")
    t.add_argument("--against", choices=["spartan-physical", "spartan-deeplearn",
                                         "spartan-sapphire"],
                   help="compare with this Spartan partition's targets whatever the trace's "
                        "partition")
    p.set_defaults(trace_parser=p)
    t = tsub.add_parser("jobs", parents=[fmt],
                        help="every job of a trace as read, one flat row each (job_id as the "
                             "source names it, submit, wait, run, limit, nodes, cores_per_node, "
                             "mem_per_node, gpus_per_node, partition, user, state, ...)")
    t.add_argument("trace", help="a bundled trace name, an SWF file, sacct -P output or an HPCsim "
                                 "trace")
    t.add_argument("--partition", help="a Slurm-accounting trace: only this partition's jobs")
    t.add_argument("--clean", choices=list(PROFILES),
                   help="apply a profile's cleaning rules first (default: the jobs as read)")
    t = tsub.add_parser("convert", help="rewrite a trace (or part of it) as SWF; a CERIT-SC "
                                        "trace keeps its own lines and .machines file")
    t.add_argument("source")
    t.add_argument("dest", help="output SWF file (.gz to compress)")
    t.add_argument("--first", type=positive_int, help="keep only the first N jobs")
    t.add_argument("--start", type=nonnegative_int, default=0,
                   help="skip the jobs before this position")
    t.add_argument("--from", dest="since", metavar="WHEN",
                   help="keep the jobs submitted at or after WHEN: a date (YYYY-MM-DD, or "
                        "YYYY-MM-DDTHH:MM) on the trace's wall clock (its header's "
                        "TimeZoneString, else UTC), or seconds of its submit clock")
    t.add_argument("--until", metavar="WHEN", help="keep the jobs submitted before WHEN")
    t.add_argument("--clean", choices=list(PROFILES),
                   help="apply a profile's cleaning rules before writing (with --cores-of: the "
                        "profile that prepares the jobs on the cluster, default hpcsim)")
    t.add_argument("--cores-of", metavar="CLUSTER",
                   help="write the jobs as they run on this cluster of named nodes, each seen as "
                        "its total cores (nodes x cores per node) on a machine of the cluster's "
                        "total cores (MaxProcs = MaxNodes): the trace an RLScheduler or DRAS "
                        "model is trained on to be compared on the cluster (memory and GPUs left "
                        "out, counted)")
    t.add_argument("--partition", help="with --cores-of: that partition of the cluster (a "
                                       "Slurm-accounting trace keeps its jobs)")
    t.add_argument("--drop-oversized", action="store_true",
                   help="with --cores-of: drop (and count) the jobs that can never run on the "
                        "cluster instead of stopping")
    from hpcsched.cli.generate import add_parser as add_generate_parser

    add_generate_parser(tsub)
    for name, func in (("simulate", cmd_simulate), ("compare", cmd_compare),
                       ("policies", cmd_policies), ("trace", cmd_trace),
                       ("upgrade-models", cmd_upgrade_models)):
        sub.choices[name].set_defaults(func=func)


def cmd_upgrade_models(args) -> int:
    """Rewrite every old model file named (`modelfile.legacy.upgrade_file`); 1 if one failed."""
    from pathlib import Path

    from hpcsched.modelfile import ModelFileError
    from hpcsched.modelfile.legacy import upgrade_file

    status = 0
    for arg in map(Path, args.paths):
        for path in (sorted(arg.rglob("*.pt")) if arg.is_dir() else [arg]):
            try:
                print(upgrade_file(path))
            except (ModelFileError, FileNotFoundError) as e:
                print(f"hpcsched: error: {e}", file=sys.stderr)
                status = 1
    return status


def cmd_simulate(args) -> int:
    from hpcsched.cluster.nodes import Cluster
    from hpcsched.experiments.policyspec import (allocator_label, require_named_nodes,
                                                 split_allocator)
    from hpcsched.sim.run import simulate

    spec, allocator = split_allocator(args.policy)
    profile_note = resolve_profile(args, [spec])
    prepared = prepare_from_args(args)
    if allocator is not None:
        require_named_nodes(prepared, [args.policy])
        prepared = replace(prepared, allocator=allocator)
    policy = resolve(spec, args.seed, prepared)
    result = simulate(prepared, policy, backfill=args.backfill, start=args.start, jobs=args.jobs)
    row = {"trace": prepared.name, "profile": prepared.profile.name, "policy": args.policy}
    if isinstance(prepared.cluster, Cluster):
        row["allocator"] = allocator_label(policy, prepared, allocator)
    row["backfill"] = args.backfill
    row.update(result.metrics)
    row.update(result.counts)
    row["dropped_oversized"] = prepared.dropped_oversized
    row["cleaning"] = prepared.summary()
    if args.records:
        _write_records(result, args.records)
    if args.fmt == "json":
        print(format_json(row))
    elif args.fmt in ("csv", "markdown"):
        print(format_rows([row], args.fmt))
    else:
        print(prepared.summary())
        if profile_note:
            print(profile_note)
        if result.counts.get("killed_at_request"):
            print(f"{result.counts['killed_at_request']} job(s) killed at their requested time")
        width = max(len(k) for k in row)
        for k, v in row.items():
            if k != "cleaning":
                print(f"{k.ljust(width)}  {v:.6g}" if isinstance(v, float) else
                      f"{k.ljust(width)}  {v}")
    return 0


def _write_records(result, path: str) -> None:
    import csv

    import numpy as np

    cols = result.records()
    names = list(cols)
    with open(path, "w", newline="") as f:
        out = csv.writer(f, lineterminator="\n")
        out.writerow(names)
        for i in range(len(result.jobs)):
            vals = []
            for name in names:
                v = cols[name][i]
                if isinstance(v, str):
                    vals.append(v)
                    continue
                v = float(v)
                vals.append("" if np.isnan(v) else (str(int(v)) if v.is_integer() else repr(v)))
            out.writerow(vals)


def cmd_compare(args) -> int:
    from hpcsched.experiments.compare import choose_windows, compare
    from hpcsched.experiments.policyspec import split_allocator

    named = {p: split_allocator(p) for p in args.policies}  # bad names fail before any work
    if args.tie_draws < 0:
        raise ValueError(f"--tie-draws {args.tie_draws}: give 0 or more copies")
    if args.episodes and args.tie_draws:
        raise ValueError("--tie-draws deals run times again within a trace's windows; DBF's "
                         "episodes (--episodes) do not take it")
    profile_note = resolve_profile(args, [spec for spec, _ in named.values()])
    prepared = prepare_from_args(args)
    if args.episodes:
        if any(a for _, a in named.values()):
            raise ValueError("--episodes runs DBF's episodes on identical processors: name "
                             "policies without +ALLOCATOR there")
        return compare_dbf_episodes(args, prepared, profile_note)
    starts, length = choose_windows(prepared, start=args.start, starts=args.starts,
                                    windows=args.windows, jobs=args.jobs, first=args.first,
                                    seed=args.seed, paper=args.paper_windows)
    policies = [(p, resolve(named[p][0], args.seed or 0, prepared, sample=args.sample))
                for p in args.policies]
    check_backfills(args.backfill)
    total = len(policies) * len(args.backfill) * len(starts) * (1 + args.tie_draws)
    with Progress(total, "simulating") as bar:
        rows = compare(prepared, policies, args.backfill, starts, length, progress=bar.update,
                       reference=args.reference,
                       allocators={p: a for p, (_, a) in named.items()},
                       tie_draws=args.tie_draws)
    mark_sampled(rows, args.policies, args.sample)
    if args.fmt is None:
        if profile_note:
            print(profile_note)
        over = "mean over windows"
        if args.tie_draws:
            from hpcsched.workload.ties import tie_groups

            over = (f"mean over windows and {1 + args.tie_draws} tie draws (the trace, and "
                    f"{args.tie_draws} copies with the run times of jobs alike dealt again; "
                    f"{tie_groups(prepared.jobs).describe()})")
        print(f"{prepared.summary()}\n{len(starts)} window(s) of {length} jobs, starts "
              f"{','.join(map(str, starts))}; {over}\n")
    print(format_rows(rows, args.fmt or "table"))
    if args.fmt is None and any("rejection_ratio" in r for r in rows):
        from hpcsched.experiments.schedinspector import inspector_summary

        print("\n" + "\n".join(inspector_summary(rows, policies)))
    return 0


def compare_dbf_episodes(args, prepared, profile_note: str | None) -> int:
    """`compare --episodes N`: DBF's test episodes (`experiments.dbf_episodes`)."""
    from hpcsched.experiments.dbf_episodes import compare_episodes
    from hpcsched.workload.windows import dbf_starts

    jobs = args.jobs or 1000
    starts = dbf_starts(prepared, "test", args.episodes, episode_jobs=jobs)
    policies = [(p, resolve(p, args.seed or 0, prepared, sample=args.sample))
                for p in args.policies]
    check_backfills(args.backfill)
    with Progress(len(policies) * len(args.backfill) * len(starts), "simulating") as bar:
        rows = compare_episodes(prepared, policies, args.backfill, starts, episode_jobs=jobs,
                                progress=bar.update)
    mark_sampled(rows, args.policies, args.sample)
    if args.fmt is None:
        if profile_note:
            print(profile_note)
        print(f"{prepared.summary()}\n{len(starts)} DBF test episode(s) of {jobs} started jobs "
              f"(dbf_starts 'test': {starts[0]}..{starts[-1]}); mean over episodes\n")
    print(format_rows(rows, args.fmt or "table"))
    return 0


def mark_sampled(rows: list[dict], names: list[str], sample: bool) -> None:
    """With --sample, the rows of learned policies (``PREFIX:MODEL`` names) get
    ``actions=sampled``; the heuristics' rows are as they are (they have no distribution)."""
    if not sample:
        return
    learned = {n for n in names if ":" in n}
    for row in rows:
        if row["policy"] in learned:
            row["actions"] = "sampled"


def cmd_policies(args) -> int:
    from hpcsched.policies.priority import DESCRIPTIONS

    from hpcsched.experiments.policyspec import listing

    for name, text in DESCRIPTIONS.items():
        print(f"{name:<12}{text}")
    print("\n".join(listing()))
    return 0


_CALIBRATION_COLUMNS = ["trace", "statistic", "target", "this trace", "ok", "source"]


def cmd_trace(args) -> int:
    from hpcsched.workload import traces

    if args.trace_command == "list":
        for name, info in traces.describe_traces().items():
            print(f"{name:<12}{info}")
        return 0
    if args.trace_command == "stats":
        from hpcsched.sim.run import prepare
        from hpcsched.workload.cleaning import clean
        from hpcsched.workload.stats import trace_stats

        from hpcsched.cli.generate import calibration_rows

        if args.calibration:  # only the Spartan calibration table
            cal = []
            for name in args.trace:
                raw = traces.load_trace(name, partition=args.partition)
                rows = calibration_rows(name, raw, args.against)
                if rows is None:
                    raise ValueError(f"{name}: not a trace of a Spartan partition (physical, "
                                     f"deeplearn, sapphire); name one with --against")
                cal += rows
            print(format_rows(cal, args.fmt or "table", columns=_CALIBRATION_COLUMNS))
            return 0
        rows, cal = [], []
        for name in args.trace:
            slurm = traces.is_slurm_file(name)
            raw = traces.load_trace(name, partition=args.partition) \
                if slurm or args.against else None
            if raw is not None:  # a Spartan partition's: its calibration table after the summary
                cal.append(calibration_rows(name, raw, args.against))
            if args.cluster or args.nodes or not slurm:
                # the statistics are of the jobs the profile would simulate: what cleaning
                # dropped or changed, jobs larger than the cluster included, is reported as
                # `simulate` does
                prepared = replace(prepare(name, args.profile, drop_oversized=True,
                                           partition=args.partition, cluster=args.cluster,
                                           nodes=args.nodes, procs_per_node=args.procs_per_node),
                                   oversized_rule="statistics count only jobs the cluster can run")
                label, jobs, cleaning = prepared.name, prepared.jobs, prepared
                dropped = prepared.dropped_oversized
                cluster = prepared.cluster
                procs = (cluster.total_procs if hasattr(cluster, "total_procs")
                         else int(cluster.total[cluster.resource_index("cores")]))
            else:  # a Slurm-accounting file names no cluster size: no offered load
                jobs, cleaning = clean(raw, PROFILES[args.profile].cleaning)
                label, procs, dropped = raw.header.name, None, 0
            row = {"trace": label}
            read = getattr(jobs.header, "report", None)
            if read is not None:  # a Slurm-accounting file: what reading dropped, and why
                if args.fmt:
                    row["read"] = read.summary()
                else:
                    print("\n".join(read.lines()))
            # a prepared run's summary names the trace and counts the oversized jobs it dropped
            row["cleaning"] = (cleaning.summary() if hasattr(cleaning, "oversized_rule")
                               else f"{label}: cleaning ({args.profile}): {cleaning.summary()}")
            row.update(trace_stats(jobs, procs))
            row["dropped_oversized"] = dropped
            rows.append(row)
        if not args.fmt:
            for row in rows:
                print(row.pop("cleaning"))
        print(format_rows(rows, args.fmt or "table", columns=list(rows[0])))
        for c in cal:
            if c and not args.fmt:  # --json/--csv keep one flat table: --calibration gives this
                print(f"\n{c[0]['trace']} beside the thesis's {c[0]['model']} (`hpcsched trace "
                      f"generate --help` says what is calibrated to what):")
                print(format_rows(c, "table", columns=_CALIBRATION_COLUMNS[1:]))
        return 0
    if args.trace_command == "jobs":
        return _jobs(args)
    if args.trace_command == "convert":
        return _convert(args)
    if args.trace_command == "generate":
        from hpcsched.cli.generate import cmd_generate

        return cmd_generate(args)
    args.trace_parser.print_help()
    return 2


def _chosen(args, jobs):
    """(rows, how they were chosen) of `jobs` for `trace convert`: by position (--start, --first)
    or by submission time (--from, --until; the trace's own clock); all of them by default."""
    import numpy as np

    from hpcsched.workload.timecut import submit_clock, submitted_between, trace_zone

    if args.since is not None or args.until is not None:
        lo = None if args.since is None else submit_clock(args.since, jobs.header, what="--from")
        hi = None if args.until is None else submit_clock(args.until, jobs.header, what="--until")
        rows = submitted_between(jobs, lo, hi)
        if rows.size == 0:
            span = f"from {args.since or 'its start'} until {args.until or 'its end'}"
            raise ValueError(f"{args.source}: no job was submitted {span}")
        return rows, (f"submitted from {args.since or 'the start'} until "
                      f"{args.until or 'the end'} "
                      f"({getattr(trace_zone(jobs.header), 'key', 'UTC')})")
    if args.start < 0 or args.start >= len(jobs):
        raise ValueError(f"--start {args.start} is outside the trace of {len(jobs)} jobs")
    end = len(jobs) if args.first is None else min(len(jobs), args.start + args.first)
    return np.arange(args.start, end), f"at positions {args.start} to {end - 1}"


def _check_choice(args) -> None:
    """Refuse choosing `trace convert`'s jobs both by position and by time."""
    if (args.since is not None or args.until is not None) and (args.start or
                                                               args.first is not None):
        raise ValueError("choose the jobs by position (--start, --first) or by submission time "
                         "(--from, --until), not both")


def _convert(args) -> int:
    """`trace convert`: the jobs chosen by position (--start, --first) or by submission time
    (--from, --until) written as SWF; a CERIT-SC source as its own lines, with its .machines file
    beside (`workload.cerit.write_cerit_lines`), since SWF's 18 fields cannot hold its node
    specifications."""
    from hpcsched.workload import traces
    from hpcsched.workload.cerit import write_cerit_lines
    from hpcsched.workload.swf import write_swf

    if args.cores_of is not None:
        return _convert_cores(args)
    for option in ("partition", "drop_oversized"):
        if getattr(args, option):
            raise ValueError(f"--{option.replace('_', '-')} goes with --cores-of CLUSTER")
    cerit = traces.cerit_file(args.source)
    if cerit is not None and args.clean:
        raise ValueError(f"{args.source}: a CERIT-SC trace is written as its own lines, which "
                         f"--clean cannot change; leave --clean out (simulate and train clean "
                         f"it as they read it)")
    _check_choice(args)
    jobs = traces.load_trace(args.source)
    if args.clean:
        from hpcsched.workload.cleaning import clean

        jobs, report = clean(jobs, PROFILES[args.clean].cleaning)
        print(report.summary(), file=sys.stderr)
    rows, chosen = _chosen(args, jobs)
    part = jobs.take(rows)
    if cerit is not None:
        note = (f"Note: {len(part)} jobs of {cerit.name} {chosen}, their lines as they are "
                f"(hpcsched trace convert)")
        machines = write_cerit_lines(cerit, part.line, args.dest, note=note)
        also = f" and its machines to {machines}" if machines else " (the source has no .machines)"
        print(f"wrote {len(part)} jobs to {args.dest}{also}", file=sys.stderr)
        return 0
    write_swf(part, args.dest)
    print(f"wrote {len(part)} jobs to {args.dest}", file=sys.stderr)
    return 0


def _convert_cores(args) -> int:
    """`trace convert --cores-of CLUSTER`: the jobs prepared on the cluster as a profile prepares
    them (default hpcsim: those the heuristic grid schedules there), chosen by position or
    submission time, written as SWF jobs of their total cores (`cluster.cores.cores_table`); what
    preparing dropped and what the view left out are printed, counted."""
    from hpcsched.cluster.cores import cores_table
    from hpcsched.sim.run import prepare
    from hpcsched.workload.swf import write_swf

    _check_choice(args)
    prepared = prepare(args.source, args.clean or "hpcsim", cluster=args.cores_of,
                       partition=args.partition, drop_oversized=args.drop_oversized)
    jobs = prepared.jobs.take(_chosen(args, prepared.jobs)[0])
    table, report = cores_table(jobs, prepared.cluster)
    print(prepared.summary(), file=sys.stderr)
    print(report.summary(), file=sys.stderr)
    write_swf(table, args.dest)
    print(f"wrote {len(table)} jobs to {args.dest}", file=sys.stderr)
    return 0


def _jobs(args) -> int:
    import csv

    from hpcsched.workload import traces
    from hpcsched.workload.listing import job_columns

    jobs = traces.load_trace(args.trace, partition=args.partition) if args.partition \
        else traces.load_trace(args.trace)
    read = getattr(jobs.header, "report", None)
    if read is not None:
        print(f"read: {read.summary()}", file=sys.stderr)
    if args.clean:
        from hpcsched.workload.cleaning import clean

        jobs, report = clean(jobs, PROFILES[args.clean].cleaning)
        print(f"cleaning ({args.clean}): {report.summary()}", file=sys.stderr)
    cols = job_columns(jobs)
    keys = list(cols)
    rows = (dict(zip(keys, values)) for values in zip(*cols.values()))
    out = sys.stdout
    if args.fmt == "json":
        out.write("[")
        for i, row in enumerate(rows):
            out.write(("\n" if i == 0 else ",\n") + json.dumps(row))
        out.write("\n]\n")
    elif args.fmt == "csv":
        writer = csv.writer(out, lineterminator="\n")  # None is written as an empty field
        writer.writerow(keys)
        writer.writerows(zip(*cols.values()))
    else:
        print(format_rows(list(rows), args.fmt or "table", columns=keys))
    return 0
