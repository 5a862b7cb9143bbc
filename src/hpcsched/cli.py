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
                       Lublin-1, Lublin-2 and HPC2N, heuristics and trained models, with and without
                       backfilling, as the paper printed them, as we reproduce them (rlscheduler
                       profile), and under the standard profile (correct WFP3/UNICEP, textbook EASY)
  rlscheduler-table7   Table VII: every trace's model applied to every trace (with CTC-SP2)
  rlscheduler-table8   Table VIII: largest per-user mean bsld on HPC2N, with the fairness model
examples:
  hpcsched experiment rlscheduler-table5
  hpcsched experiment rlscheduler-table5 --json > table5.json
"""

EXPERIMENTS = ("rlscheduler-table5", "rlscheduler-table7", "rlscheduler-table8")

EXPERIMENT_CAPTIONS = {
    "rlscheduler-table5":
        "bsld, mean over the paper's 10 windows x 1024 jobs (first 10,000 jobs); paper = Table V; "
        "rlscheduler = SchedGym's semantics, the code's WFP3/UNICEP and our trained models "
        "(greedy); standard = textbook semantics, correct WFP3/UNICEP, EASY",
    "rlscheduler-table7":
        "bsld of every trace's model on every trace (paper Table VII), 10 x 1024-job windows, "
        "rlscheduler profile; rows with backfilling use the models trained with it",
    "rlscheduler-table8":
        "largest per-user mean bsld on HPC2N (paper Table VIII), 10 x 1024-job windows, "
        "rlscheduler profile; RL = the model trained for fairness",
}

EPILOG_TRAIN = """examples:
  hpcsched train rlscheduler --trace lublin-1 --metric bsld --backfill none --epochs 60 --out runs/l1
  hpcsched train rlscheduler --out runs/l1 --epochs 100 --resume      # continue that run
  hpcsched train rlscheduler --trace hpc2n --metric fairness --episode-jobs 128 --out runs/h-fair

The run folder gets model.pt (every epoch), best.pt (best greedy validation score), log.csv,
curve.png, config.json and TensorBoard events in tb/ when tensorboard is installed.
"""

EPILOG_EVALUATE = """examples:
  hpcsched evaluate runs/l1/model.pt --trace lublin-1 --windows 10 --jobs 1024
  hpcsched evaluate pretrained/hpc2n-bsld --trace ctc-sp2 --backfill none,schedgym --json
"""

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

    p = sub.add_parser("train", help="train a learned scheduler", epilog=EPILOG_TRAIN,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("algorithm", choices=["rlscheduler"], help="which learned scheduler")
    p.add_argument("--out", required=True, help="the run's folder")
    p.add_argument("--epochs", type=int, default=100, help="train until this many epochs in all")
    p.add_argument("--resume", action="store_true", help="continue the run in --out")
    p.add_argument("--trace", default="lublin-1", help="bundled trace name or SWF file")
    p.add_argument("--metric", default="bsld",
                   choices=["bsld", "wait", "turnaround", "slowdown", "utilization", "fairness"])
    p.add_argument("--backfill", default="none", choices=BACKFILLS)
    p.add_argument("--profile", default="rlscheduler", choices=list(PROFILES))
    p.add_argument("--seed", type=int, default=0)
    g = p.add_argument_group("episodes and networks")
    g.add_argument("--episode-jobs", type=int, default=256, help="jobs per trajectory")
    g.add_argument("--trajectories", type=int, default=100, help="trajectories per epoch")
    g.add_argument("--first", type=int, default=10000,
                   help="train on windows from the first N jobs (0: the whole trace)")
    g.add_argument("--slots", type=int, default=128)
    g.add_argument("--cutoff", default="fcfs", choices=["fcfs", "interleave"])
    g.add_argument("--policy-net", default="kernel",
                   choices=["kernel", "mlp-v1", "mlp-v2", "mlp-v3", "lenet"])
    g.add_argument("--value-net", default="kernel", choices=["kernel", "flat"])
    g = p.add_argument_group("PPO (defaults: the RLScheduler code)")
    g.add_argument("--pi-lr", type=float, default=3e-4)
    g.add_argument("--vf-lr", type=float, default=1e-3)
    g.add_argument("--pi-iters", type=int, default=80)
    g.add_argument("--v-iters", type=int, default=80)
    g.add_argument("--target-kl", type=float, default=0.01)
    g.add_argument("--filter", default="none", choices=["none", "paper", "fixed"],
                   help="trajectory filtering: paper = SJF band (median, 2 x mean); fixed = (10, 150)")
    g.add_argument("--filter-epochs", type=int,
                   help="epochs of stage 1 (filtered windows) before training on all windows")
    g.add_argument("--reward-baseline", default="none",
                   help="none (the paper's reward, -metric) or a heuristic: reward the episode's "
                        "improvement over that heuristic on the same window, in [-1, 1]")
    g.add_argument("--init", default="none",
                   help="none (random weights, the paper), a heuristic to imitate before PPO "
                        "(fcfs, sjf, f1, ...: a fixed score per job), or model:PATH to start "
                        "from a trained model's networks")
    g.add_argument("--threads", type=int, help="torch threads (default: all cores)")
    g = p.add_argument_group("validation and output")
    g.add_argument("--validate-every", type=int, default=5,
                   help="greedy validation every K epochs, keeping best.pt (0: off)")
    g.add_argument("--validate-windows", type=int, default=5)
    g.add_argument("--validate-jobs", type=int, default=1024)

    p = sub.add_parser("evaluate", parents=[fmt], help="evaluate a trained model beside heuristics",
                       epilog=EPILOG_EVALUATE, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", help="a model file, a run folder, or pretrained/NAME")
    p.add_argument("--trace", help="trace to evaluate on (default: the one it was trained on)")
    p.add_argument("--against", type=_csv_list, default=["fcfs", "sjf", "f1"],
                   help="heuristics to show beside it (default: fcfs,sjf,f1; 'none' for none)")
    p.add_argument("--backfill", type=_csv_list,
                   help="backfilling choices (default: the one it was trained with)")
    p.add_argument("--profile", choices=list(PROFILES),
                   help="simulation semantics (default: the one it was trained with)")
    p.add_argument("--sample", action="store_true",
                   help="sample the model's actions instead of taking the most probable job")
    _add_window_args(p)
    _add_cluster_args(p)

    p = sub.add_parser("policies", help="list the heuristics")

    p = sub.add_parser("experiment", parents=[fmt], help="run a paper's evaluation protocol",
                       epilog=EPILOG_EXPERIMENT,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("name", choices=list(EXPERIMENTS), help="which protocol")
    p.add_argument("--models", help="take the trained models from this folder (NAME.pt or "
                                    "NAME/best.pt) instead of the shipped ones")
    p.add_argument("--heuristics-only", action="store_true",
                   help="leave the trained models out (table5)")

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

def _policy(spec: str, seed: int = 0, prepared=None, sample: bool = False):
    from hpcsched.experiments.policyspec import resolve_policy

    return resolve_policy(spec, prepared, seed=seed, sample=sample)


def _prepare(args):
    from hpcsched.sim.run import prepare

    prepared = prepare(args.trace, args.profile, nodes=args.nodes,
                       procs_per_node=args.procs_per_node, drop_oversized=args.drop_oversized)
    return prepared


def cmd_simulate(args) -> int:
    from hpcsched.sim.run import simulate

    prepared = _prepare(args)
    policy = _policy(args.policy, args.seed, prepared)
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
    policies = [(p, _policy(p, args.seed or 0, prepared)) for p in args.policies]
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
    from hpcsched.experiments import rlscheduler as rls

    name = args.name
    with_models = not args.heuristics_only
    total = rls.simulations(name, with_models=with_models)
    with Progress(total, name) as bar:
        if name == "rlscheduler-table5":
            rows = rls.table5(models=args.models, with_models=with_models, progress=bar.update)
        elif name == "rlscheduler-table7":
            rows = rls.table7(models=args.models, progress=bar.update)
        else:
            rows = rls.table8(models=args.models, progress=bar.update)
    key = "max_user_bsld" if name == "rlscheduler-table8" else "bsld"
    if args.fmt in ("json", "csv"):
        print(format_rows(rows, args.fmt))
        return 0
    if name == "rlscheduler-table7":
        def col(policy: str) -> str:
            return policy.split("/")[-1].removesuffix("-backfill") if policy.startswith("rl:") \
                else rls.column(policy)
        table = rls.pivot(rows, key, columns=col)
        cols = ["trace", "backfilling", "source", *rls.HEURISTICS,
                *(rls.model_name(t) for t in rls.CROSS_TRACES)]
    else:
        table = rls.pivot(rows, key)
        cols = ["trace", "backfilling", "source", *rls.HEURISTICS, *(["RL"] if with_models else [])]
    if args.fmt is None:
        print(EXPERIMENT_CAPTIONS[name] + "\n")
    print(format_rows(table, args.fmt or "table", columns=cols))
    checks = rls.verdicts(rows, key)
    if checks and args.fmt is None:
        print(f"\nlearned policies against the heuristics of our own run ({key}, lower is better):")
        print(format_rows(checks, "table", columns=["trace", "backfill", "policy", key,
                                                    "best_heuristic", "best", "ratio_to_best",
                                                    "beats_best", "worst_heuristic", "worst",
                                                    "worse_than_worst"]))
    return 0


def cmd_train(args) -> int:
    from hpcsched.agents.ppo import PPOConfig
    from hpcsched.experiments.training import train

    config = PPOConfig(
        trace=args.trace, profile=args.profile, backfill=args.backfill, metric=args.metric,
        episode_jobs=args.episode_jobs, slots=args.slots, cutoff=args.cutoff,
        first=args.first or None, n_envs=args.trajectories, policy=args.policy_net,
        value=args.value_net, trajectories_per_epoch=args.trajectories, pi_lr=args.pi_lr,
        vf_lr=args.vf_lr, train_pi_iters=args.pi_iters, train_v_iters=args.v_iters,
        target_kl=args.target_kl, filter=args.filter, filter_epochs=args.filter_epochs,
        seed=args.seed, threads=args.threads, reward_baseline=args.reward_baseline,
        init=args.init,
    )
    model = train(config, args.out, args.epochs, resume=args.resume,
                  validate_every=args.validate_every, validate_windows=args.validate_windows,
                  validate_jobs=args.validate_jobs)
    last = next((h for h in reversed(model.history) if "mean_reward" in h), None)
    print(f"{model.epoch} epochs; model: {args.out}/model.pt; log: {args.out}/log.csv; "
          f"curve: {args.out}/curve.png")
    if last is not None:
        print(f"last epoch: mean reward {last['mean_reward']:.6g}, {last['epoch_s']:.1f} s")
    return 0


def cmd_evaluate(args) -> int:
    from hpcsched.agents.checkpoint import load_checkpoint
    from hpcsched.experiments.compare import choose_windows, compare
    from hpcsched.experiments.policyspec import model_path

    path = model_path(args.model)
    config = load_checkpoint(path)["config"]
    args.trace = args.trace or config["trace"]
    args.profile = args.profile or config["profile"]
    backfills = args.backfill or [config["backfill"]]
    for b in backfills:
        if b not in BACKFILLS:
            raise ValueError(f"unknown backfilling {b!r}; choose among {', '.join(BACKFILLS)}")
    prepared = _prepare(args)
    if args.start is None and not args.starts and args.windows is None:
        args.windows, args.jobs = 10, args.jobs or 1024
    starts, length = choose_windows(prepared, start=args.start, starts=args.starts,
                                    windows=args.windows, jobs=args.jobs, first=args.first,
                                    seed=args.seed, paper=args.paper_windows)
    label = f"rl:{args.model}"
    policies = [(label, _policy(label, args.seed or 0, prepared, sample=args.sample))]
    policies += [(h, _policy(h, args.seed or 0, prepared)) for h in args.against if h != "none"]
    total = len(policies) * len(backfills) * len(starts)
    with Progress(total, "evaluating") as bar:
        rows = compare(prepared, policies, backfills, starts, length, progress=bar.update)
    if args.fmt is None:
        print(f"{prepared.summary()}\nmodel {path} (trained on {config['trace']}, metric "
              f"{config['metric']}, backfill {config['backfill']}); {len(starts)} window(s) of "
              f"{length} jobs, starts {','.join(map(str, starts))}; mean over windows\n")
    print(format_rows(rows, args.fmt or "table"))
    return 0


def cmd_policies(args) -> int:
    from hpcsched.policies.priority import DESCRIPTIONS

    from hpcsched.experiments.policyspec import pretrained_models

    for name, text in DESCRIPTIONS.items():
        print(f"{name:<12}{text}")
    print("\ntrained models: rl:PATH (a model file or run folder), or a shipped one:")
    for name in pretrained_models():
        print(f"  rl:pretrained/{name}")
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
            "train": cmd_train, "evaluate": cmd_evaluate,
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
