"""SchedInspector's commands: `train inspector`, `experiment schedinspector-table4` and
`schedinspector-seeds`, and how `evaluate` scores its models; registered by
`hpcsched.recipes.schedinspector`."""

from __future__ import annotations

import argparse

from hpcsched.cli.common import (add_format_options, add_validation_args, option_values,
                                 positive_float, positive_int)
from hpcsched.report.progress import Progress
from hpcsched.report.table import format_rows
from hpcsched.sim.profiles import BACKFILLS

EPILOG_TRAIN = """examples:
  hpcsched train inspector --trace lublin-1 --base sjf --metric bsld --out runs/insp-sjf
  hpcsched train inspector --out runs/insp-sjf --epochs 80 --resume      # continue that run
  hpcsched train inspector --config insp.toml --out runs/insp-f1 --base f1   # options from a file
  hpcsched compare lublin-1 --policies sjf,inspect:runs/insp-sjf --windows 50 --jobs 256   # its best.pt

Training windows (128 jobs) come from the first 20% of the trace; the run folder gets model.pt
(every epoch), best.pt (best greedy validation improvement), log.csv, curve.png, config.json
and TensorBoard events in tb/ when tensorboard is installed.
--resume continues with the run's own settings (validation included): leave them out, or repeat
them (a different value is refused); --threads may change.
"""

EPILOG_EXPERIMENT = """examples:
  hpcsched experiment schedinspector-table4
  hpcsched experiment schedinspector-table4 --json > table4.json
  hpcsched experiment schedinspector-table4 --windows ours      # the shipped models' protocol
  hpcsched experiment schedinspector-table4 --backfill schedgym --bases sjf,f1,fcfs

--windows code (default): the authors' test script exactly: the schedinspector profile (run times as
requests, SJF's ties by processors) and its draw, randint(0, N - 256) seeded with 1, over the whole
trace; its SJF base column is the paper's Table 4. --windows ours: the schedinspector-paper profile
(users' requested times) and windows drawn with seed 0 from the last 80% of each trace, the protocol
the shipped models were trained and chosen under.
"""

CAPTIONS = {
    "code": "SchedInspector's test protocol (its code: schedinspector profile, windows drawn as "
            "randint(0, N - 256) with seed 1)",
    "ours": "our protocol (schedinspector-paper profile: users' requested times; windows drawn "
            "with seed 0 from the last 80% of each trace)",
}


def caption(draw: str, count: int, jobs: int) -> str:
    return (f"bsld and utilization of each base heuristic alone and with its inspector (greedy), "
            f"mean over {count} windows of {jobs} jobs, {CAPTIONS[draw]}; paper = Table 4 (SJF "
            f"bsld) and Table 5 (utilization); rule = the fixed rule 'reject exactly when the "
            f"proposed job does not fit' in the inspector's place")


def window_draw(text: str) -> str:
    """`--windows`: the name of a draw; a number gets a clear error (the count is --count)."""
    from hpcsched.experiments.schedinspector import WINDOWS

    if text in WINDOWS:
        return text
    if text.strip().isdigit():
        raise argparse.ArgumentTypeError(
            f"{text}: --windows names the draw (code or ours); give the number of windows with "
            f"--count {text}")
    raise argparse.ArgumentTypeError(f"{text!r}: choose code or ours")


def add_train_arguments(p: argparse.ArgumentParser) -> None:
    """`train inspector`'s options."""
    p.epilog = EPILOG_TRAIN
    p.add_argument("--out", required=True, help="the run's folder")
    p.add_argument("--epochs", type=positive_int, default=60,
                   help="train until this many epochs in all")
    p.add_argument("--resume", action="store_true", help="continue the run in --out")
    p.add_argument("--trace", default="lublin-1", help="bundled trace name or SWF file")
    p.add_argument("--base", default="sjf", help="the base heuristic (any `hpcsched` heuristic)")
    p.add_argument("--metric", default="bsld", choices=["bsld", "wait", "utilization"])
    p.add_argument("--backfill", default="none", choices=BACKFILLS)
    p.add_argument("--seed", type=int, default=0)
    g = p.add_argument_group("environment")
    g.add_argument("--episode-jobs", type=positive_int, default=128, help="jobs per trajectory")
    g.add_argument("--features", default="code", choices=["code", "paper"],
                   help="code: the authors' 7 features; paper: 8, with the metric-aware queue "
                        "delay and the backfilling contribution")
    g.add_argument("--profile", default="schedinspector",
                   choices=["schedinspector", "schedinspector-paper"],
                   help="schedinspector (default): the authors' code (run times as requests, SJF's "
                        "ties by processors); schedinspector-paper: the users' requested times "
                        "on SchedGym's loader (the shipped models' semantics)")
    g.add_argument("--estimate", default=None, choices=["perfect"],
                   help="perfect: the run times as requests under schedinspector-paper too "
                        "(schedinspector always uses them)")
    g.add_argument("--reward", default="paper", choices=["paper", "code"],
                   help="paper: (base - insp) / base; code: / max(base, insp, 1)")
    g.add_argument("--train-fraction", type=positive_float, default=0.2,
                   help="training windows come from this first part of the trace")
    g = p.add_argument_group("PPO (defaults: the paper; the code's policy rate is 3e-4)")
    g.add_argument("--trajectories", type=positive_int, default=100, help="trajectories per epoch")
    g.add_argument("--pi-lr", type=positive_float, default=1e-3)
    g.add_argument("--vf-lr", type=positive_float, default=1e-3)
    g.add_argument("--pi-iters", type=positive_int, default=80)
    g.add_argument("--v-iters", type=positive_int, default=80)
    g.add_argument("--target-kl", type=positive_float, default=0.01)
    g.add_argument("--init-accept", type=float, metavar="P",
                   help="start the policy accepting with probability P (e.g. 0.95), so that it "
                        "begins as the base heuristic (default: PyTorch's initialisation, ~50%%)")
    g.add_argument("--init-rule", choices=["reject-unfit"],
                   help="before PPO, fit the policy to this fixed rule's decisions (reject-unfit: "
                        "reject exactly the proposals that do not fit now)")
    g.add_argument("--threads", type=positive_int, help="torch threads (default: all cores)")
    g = p.add_argument_group("validation")
    add_validation_args(g, windows=10, jobs=256)


def add_table4_arguments(p: argparse.ArgumentParser) -> None:
    p.description, p.epilog = caption("code", 50, 256), EPILOG_EXPERIMENT
    add_format_options(p)
    p.add_argument("--traces", default="lublin-1,hpc2n,ctc-sp2",
                   help="comma-separated traces (default: the paper's three that we bundle)")
    p.add_argument("--bases", default="sjf,f1", help="comma-separated base heuristics")
    p.add_argument("--backfill", default="none", choices=BACKFILLS)
    p.add_argument("--windows", type=window_draw, default="code", metavar="{code,ours}",
                   help="the protocol, named by its window draw (see below; default: code)")
    p.add_argument("--count", type=positive_int, default=50, help="how many windows (default 50)")
    p.add_argument("--jobs", type=positive_int, default=256)
    p.add_argument("--seed", type=int, default=None,
                   help="seed of the windows' draw (default: the protocol's, code 1, ours 0)")
    p.add_argument("--models", help="take the models from this folder (NAME.pt or NAME/best.pt, "
                                    "NAME = inspect-TRACE-BASE[-backfill]) instead of the shipped")
    p.add_argument("--estimate", default=None, choices=["perfect"],
                   help="perfect: the run times as requests under --windows ours too (for models "
                        "trained with --estimate perfect); --windows code always uses them")
    p.add_argument("--no-rule", action="store_true",
                   help="leave out the reference rows of the fixed reject-unfit rule (source "
                        "'rule': reject exactly when the proposed job does not fit now)")


def add_seeds_arguments(p: argparse.ArgumentParser) -> None:
    p.description = SEEDS_CAPTION
    add_format_options(p)
    p.add_argument("--models", help="take the seeds' models from this folder (NAME-sK.pt or "
                                    "NAME-sK/best.pt) instead of the shipped ones")
    p.add_argument("--windows", default="code,ours",
                   help="the protocols, comma-separated (default: code,ours)")


SEEDS_CAPTION = ("SchedInspector's recipes over training seeds 0, 1, 2: each seed's best.pt (chosen "
                 "on validation windows that share no job with these) on table4's 50 windows of "
                 "256 jobs; gain = the relative bsld gain over the base; mean and sample sd of "
                 "the gains, how many seeds improve on the base (by 0.1 % or more, as printed), the "
                 "seed chosen on validation and the seed shipped")


def cmd_seeds(args) -> int:
    from hpcsched.cli.common import csv_list
    from hpcsched.experiments import schedinspector_seeds as seeds

    draws = csv_list(args.windows)
    for d in draws:
        window_draw(d)
    with Progress(seeds.simulations(draws=len(draws)), args.name) as bar:
        rows = seeds.seed_study(draws=draws, models=args.models, progress=bar.update)
    if args.fmt in ("json", "csv"):
        print(format_rows(rows, args.fmt))
        return 0
    if args.fmt is None:
        print(SEEDS_CAPTION + "\n")
    table, cols = seeds.printed(rows)
    print(format_rows(table, args.fmt or "table", columns=cols))
    return 0


#: command-line options -> InspectorConfig settings, where the names differ
CONFIG_NAMES = {"trajectories": ("trajectories_per_epoch", "n_envs"),
                "pi_iters": ("train_pi_iters",), "v_iters": ("train_v_iters",)}
RUN_OPTIONS = ("validate_every", "validate_windows", "validate_jobs")


def cmd_train(args) -> int:
    from hpcsched.agents.inspector import InspectorConfig
    from hpcsched.experiments.inspector_training import train
    from hpcsched.policies.priority import get_policy

    # a resumed run: the options given (the others are the run's own); a new one: all
    values = option_values(args, given_only=args.resume)
    if "base" in values:
        get_policy(values["base"])  # an unknown name fails now, not after loading the trace
    settings = {name: v for dest, v in values.items() if dest not in RUN_OPTIONS
                for name in CONFIG_NAMES.get(dest, (dest,))}
    config = settings if args.resume else InspectorConfig(**settings)
    model = train(config, args.out, args.epochs, resume=args.resume,
                  **{k: v for k, v in values.items() if k in RUN_OPTIONS})
    last = next((h for h in reversed(model.history) if "mean_reward" in h), None)
    print(f"{model.epoch} epochs; model: {args.out}/model.pt; log: {args.out}/log.csv; "
          f"curve: {args.out}/curve.png")
    if last is not None:
        print(f"last epoch: mean reward {last['mean_reward']:.4g}, rejection ratio "
              f"{100 * last.get('rejection_ratio', 0):.1f}%, {last['epoch_s']:.1f} s")
    return 0


def cmd_experiment(args) -> int:
    from hpcsched.cli.common import csv_list
    from hpcsched.experiments import schedinspector as si

    traces, bases = csv_list(args.traces), csv_list(args.bases)
    if args.count < 1 or args.jobs < 1:
        raise ValueError(f"--count and --jobs must be at least 1, not {args.count} and {args.jobs}")
    total = si.simulations(traces, bases, args.count, rule=not args.no_rule)
    with Progress(total, "schedinspector-table4") as bar:
        rows = si.table4(traces, bases, backfill=args.backfill, windows=args.windows,
                         count=args.count, jobs=args.jobs, seed=args.seed, models=args.models,
                         rule=not args.no_rule, estimate=args.estimate, progress=bar.update)
    if args.fmt in ("json", "csv"):
        print(format_rows(rows, args.fmt))
        return 0
    if args.fmt is None:
        print(caption(args.windows, args.count, args.jobs) + "\n")
    # already rounded: print numbers as they are, and "-" where the paper gives none
    table = [{k: "-" if v is None else (f"{v:.10g}" if isinstance(v, float) else v)
              for k, v in line.items()} for line in si.side_by_side(rows)]
    print(format_rows(table, args.fmt or "table", columns=si.SIDE_COLUMNS))
    notes = si.notes(rows)
    if notes and args.fmt is None:
        print()
        print("\n".join(notes))
    return 0


def add_evaluate_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group(
        "SchedInspector models (inspect:)",
        "scored by default as schedinspector-table4 scores them: around the base heuristic they "
        "were trained with, on their trace, profile and backfilling, 50 windows of 256 jobs "
        "(--jobs to change) drawn by the protocol of that profile (schedinspector: the authors' "
        "test script's draw, seed 1; schedinspector-paper, the shipped models': seed 0, from the "
        "last 80% of the trace)")
    g.add_argument("--base", help="a SchedInspector model's base heuristic (default: the one it "
                                  "was trained with)")


#: the window draw of schedinspector-table4 (`experiments.schedinspector.WINDOWS`) by profile
DRAWS = {"schedinspector": "code", "schedinspector-paper": "ours"}


def evaluation_windows(args, prepared) -> tuple[list[int], int]:
    """Unless windows are placed, counted or drawn otherwise (--start, --starts, --windows,
    --first, --paper-windows): 50 windows of --jobs (default 256) jobs drawn as table4 draws them
    under this profile (with --seed, if given)."""
    from hpcsched.cli.evaluate import chosen_windows
    from hpcsched.experiments.schedinspector import protocol_windows

    chosen = args.start is not None or args.starts or args.windows is not None
    if chosen or args.first is not None or args.paper_windows:
        return chosen_windows(args, prepared)
    jobs = args.jobs or 256
    draw = DRAWS.get(prepared.profile.name)
    if draw is None:  # another commit profile: a plain draw
        args.windows, args.jobs = 50, jobs
        return chosen_windows(args, prepared)
    return protocol_windows(prepared, draw, 50, jobs, seed=args.seed), jobs


def evaluate(path, checkpoint: dict, args) -> int:
    """`hpcsched evaluate` of a SchedInspector model."""
    from hpcsched.agents.inspector import trained_config
    from hpcsched.cli.evaluate import on_windows

    config = trained_config(checkpoint["config"])  # the profile its semantics are called by today
    label = f"inspect:{args.model}" + (f"@{args.base}" if args.base else "")
    return on_windows(args, path, label=label,
                      about=f"trained on {config['trace']} around {config['base']}, metric "
                            f"{config['metric']}, backfill {config['backfill']}",
                      trace=config["trace"], profile=config["profile"],
                      backfills=[config["backfill"]], windows=evaluation_windows)
