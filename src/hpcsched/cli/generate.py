"""`hpcsched trace generate`: synthetic traces from a workload model (Lublin-Feitelson, or the
Spartan-like generator), and the Spartan calibration table that `trace stats` prints."""

from __future__ import annotations

import argparse
import datetime as dt
import sys

from hpcsched.cli.common import positive_float, positive_int

SPARTAN = ("spartan-physical", "spartan-deeplearn", "spartan-sapphire")

DESCRIPTION = """Write a synthetic trace.

lublin: the Lublin-Feitelson (2003) model with its published parameters, as SWF.

spartan-physical, spartan-deeplearn, spartan-sapphire: Spartan-like workloads (University of
Melbourne; Wang's thesis evaluates on them, its traces are not public), written as `sacct -X -P`
output (or HPCsim's tab-separated columns with --format hpcsim). Seeded: the same arguments give the
same file.

  Calibrated to the thesis (Tables 4.1, 4.3, 6.1, B.1-B.4, §4.4): jobs per day (84,135 a week on
  Physical, 68,720 a year on Deeplearn, 54,263 in 6 days on Sapphire), the high-load days (52,985
  and 1,137 jobs), 71.5% one-core jobs and a median of 1 node and 1 core with a tail beyond 15
  nodes and hundreds of cores (Physical; Sapphire assumed alike), every Deeplearn job on >= 1 GPU
  per node (so at most 4 jobs a node), mean cores and memory per node (Table 4.3), limits of at
  most 30 days, and the offered load, chosen so that FCFS + EASY + best-fit waits as long on
  average as in Tables B.1-B.4 (Sapphire: UNICEP + EASY + first-available, Ch. 6).

  Borrowed from real traces (the thesis does not give them): arrivals by hour and weekday, time
  limits, run time / limit, job states and array sizes from seven real logs pooled (HPC2N,
  CTC-SP2, KTH-SP2, SDSC-BLUE, LLNL-Atlas, RICC from the Parallel Workloads Archive, and CERIT-SC's
  wagap-2013 from the Alea simulator's data set); memory per node,
  cores per node and multi-node shapes from CERIT-SC's wagap-2013, the one real multi-resource
  trace. Assumed: GPUs per job (1: 60%, 2: 20%, 3: 5%, 4: 15%), cores per GPU (CERIT-SC's cores
  per node), Deeplearn arrays of at most 15 jobs, users (Zipf).

`hpcsched trace stats FILE` shows each calibrated statistic beside its target."""

EPILOG = """examples:
  hpcsched trace generate spartan-physical --days 7 --seed 1 -o physical-week.txt
  hpcsched trace generate spartan-deeplearn --seed 1 -o deeplearn-year.txt.gz     # its 375 days
  hpcsched trace generate spartan-physical --high-load-day --seed 1 -o physical-busy-day.txt
  hpcsched trace generate spartan-sapphire --jobs 5000 --seed 2 -o sapphire-5k.txt
  hpcsched trace generate lublin out.swf --jobs 10000 --nodes 256 --seed 1
  hpcsched trace generate lublin out.swf --jobs 5000 --fit ricc   # fitted to a real trace
"""


def add_parser(tsub) -> None:
    """The `trace generate` subcommand."""
    t = tsub.add_parser("generate", help="write a synthetic trace from a workload model "
                                         "(Lublin-Feitelson, or Spartan-like sacct output)",
                        description=DESCRIPTION, epilog=EPILOG,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    t.add_argument("model", choices=["lublin", *SPARTAN],
                   help="lublin: the Lublin-Feitelson model; spartan-*: a Spartan-like partition")
    t.add_argument("dest", nargs="?", help="output file (.gz to compress); or -o")
    t.add_argument("-o", "--output", help="output file (.gz to compress)")
    t.add_argument("--jobs", type=int,
                   help="number of jobs (lublin: default 10000; spartan: default the thesis's "
                        "jobs per day x --days)")
    t.add_argument("--seed", type=int, default=0)
    g = t.add_argument_group("spartan-*")
    g.add_argument("--days", type=float,
                   help="days of submissions (default: the thesis's window: 7 Physical, 375 "
                        "Deeplearn, 6 Sapphire; with --jobs alone, the days they take at the "
                        "thesis's rate)")
    g.add_argument("--high-load-day", action="store_true",
                   help="one day with the thesis's high-load job count (52,985 Physical, 1,137 "
                        "Deeplearn) and its calibrated load")
    g.add_argument("--load", type=float,
                   help="offered load of the busiest resource (work / capacity over the days) "
                        "instead of the calibrated one; limits and run times scale to it")
    g.add_argument("--start", type=dt.date.fromisoformat, metavar="YYYY-MM-DD",
                   help="first day (default: the first day of the thesis's window)")
    g.add_argument("--format", choices=["sacct", "hpcsim"], default="sacct",
                   help="sacct -X -P output (default) or HPCsim's tab-separated columns")
    g = t.add_argument_group("lublin")
    g.add_argument("--nodes", type=positive_int, default=128,
                   help="machine size (default 128, the model's)")
    g.add_argument("--max-run-time", type=positive_float, default=2 * 86400.0,
                   help="longest run time in seconds (default 2 days)")
    g.add_argument("--fit", help="fit sizes, arrival rate, run-time cap and estimates to this trace "
                                 "(its first --fit-days days, dras cleaning); --nodes is then "
                                 "its own")
    g.add_argument("--fit-days", type=positive_float, default=28.0)


def cmd_generate(args) -> int:
    dest = args.output or args.dest
    if args.output and args.dest:
        raise ValueError("give the output file once: as DEST or as -o, not both")
    if not dest:
        raise ValueError("no output file: give DEST or -o FILE")
    if args.model == "lublin":
        return _lublin(args, dest)
    return _spartan(args, dest)


def _spartan(args, dest: str) -> int:
    from hpcsched.report.progress import Progress
    from hpcsched.workload.spartan import generate
    from hpcsched.workload.spartan_format import write_trace

    trace = generate(args.model, args.days, args.seed, jobs=args.jobs,
                     high_load_day=args.high_load_day, load=args.load, start=args.start)
    with Progress(len(trace.jobs) + 1, f"writing {dest}") as bar:
        write_trace(trace, dest, args.format, progress=bar.update)
    print(f"{trace.summary()}\nwrote {len(trace.jobs)} jobs to {dest} ({args.format})",
          file=sys.stderr)
    return 0


def _lublin(args, dest: str) -> int:
    from hpcsched.workload import lublin
    from hpcsched.workload.swf import write_swf

    spartan_only = [f"--{k.replace('_', '-')}" for k in ("days", "load", "start")
                    if getattr(args, k) is not None]
    if args.high_load_day:
        spartan_only.append("--high-load-day")
    if args.format != "sacct":
        spartan_only.append("--format")
    if spartan_only:
        raise ValueError(f"{', '.join(spartan_only)}: options of the spartan-* models, not lublin")
    n_jobs = 10000 if args.jobs is None else args.jobs
    if n_jobs <= 0 or args.nodes <= 0:
        raise ValueError(f"--jobs and --nodes must be positive (got {n_jobs}, {args.nodes})")
    if args.fit:
        from hpcsched.sim.run import prepare

        prepared = prepare(args.fit, "dras")
        real = prepared.jobs
        real = real.take((real.submit - real.submit[0]) < args.fit_days * 86400.0)
        jobs = lublin.fitted(real, prepared.cluster.nodes, n_jobs, seed=args.seed,
                             procs_per_node=prepared.cluster.procs_per_node)
    else:
        jobs = lublin.generate(n_jobs, args.nodes, seed=args.seed,
                               max_run_time=args.max_run_time)
    write_swf(jobs, dest)
    print(f"wrote {len(jobs)} jobs to {dest}", file=sys.stderr)
    return 0


def calibration_rows(name: str, raw, against: str | None) -> list[dict] | None:
    """The Spartan calibration rows of a trace as read (None: not a Spartan partition's trace and
    no `against` given)."""
    from hpcsched.workload.spartan import get_model
    from hpcsched.workload.spartan_targets import calibration, model_for

    model = get_model(against) if against else model_for(raw)
    if model is None:
        return None
    return [{"trace": name, "model": model.name, **r.as_dict()}
            for r in calibration(raw, model)]


__all__ = ["add_parser", "calibration_rows", "cmd_generate"]
