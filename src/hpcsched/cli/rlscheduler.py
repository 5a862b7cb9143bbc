"""RLScheduler's commands: `train rlscheduler`, the experiments of its paper (Tables V, VII, VIII,
and the seed study) and how `evaluate` scores its models; registered by `hpcsched.recipes.rlscheduler`."""

from __future__ import annotations

import argparse

from hpcsched.cli.common import (add_format_options, add_validation_args, nonnegative_int,
                                 option_values, positive_float, positive_int)
from hpcsched.recipes import get, locate
from hpcsched.report.progress import Progress
from hpcsched.report.table import format_rows
from hpcsched.sim.profiles import BACKFILLS, PROFILES

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
    "rlscheduler-seeds":
        "Table V's and VIII's RLScheduler recipes over training seeds 0, 1, 2: each seed's best.pt "
        "(chosen on validation windows that share no job with these) on the paper's 10 x 1024-job "
        "windows, rlscheduler profile; bsld (fairness: largest per-user mean bsld); mean, sample "
        "sd, how many seeds beat the best heuristic, and the seed shipped",
}

EPILOG_TRAIN = """examples:
  hpcsched train rlscheduler --trace lublin-1 --metric bsld --backfill none --epochs 60 --out runs/l1
  hpcsched train rlscheduler --out runs/l1 --epochs 100 --resume      # continue that run
  hpcsched train rlscheduler --trace hpc2n --metric fairness --episode-jobs 128 --out runs/h-fair
  hpcsched train rlscheduler --config l1.toml --seed 1 --out runs/l1-s1   # options from a file

The run folder gets model.pt (every epoch), best.pt (best greedy validation score), log.csv,
curve.png, config.json and TensorBoard events in tb/ when tensorboard is installed. --resume
continues with the run's own settings (validation included): leave them out, or repeat them
(a different value is refused); --threads may change.
"""

EPILOG_EXPERIMENT = """examples:
  hpcsched experiment rlscheduler-table5
  hpcsched experiment rlscheduler-table5 --json > table5.json
"""


def add_train_arguments(p: argparse.ArgumentParser) -> None:
    """`train rlscheduler`'s options."""
    p.epilog = EPILOG_TRAIN
    p.add_argument("--out", required=True, help="the run's folder")
    p.add_argument("--epochs", type=positive_int, default=100,
                   help="train until this many epochs in all")
    p.add_argument("--resume", action="store_true", help="continue the run in --out")
    p.add_argument("--trace", default="lublin-1", help="bundled trace name or SWF file")
    p.add_argument("--metric", default="bsld",
                   choices=["bsld", "wait", "turnaround", "slowdown", "utilization", "fairness"])
    p.add_argument("--backfill", default="none", choices=BACKFILLS)
    p.add_argument("--profile", default="rlscheduler", choices=list(PROFILES))
    p.add_argument("--seed", type=int, default=0)
    g = p.add_argument_group("episodes and networks")
    g.add_argument("--episode-jobs", type=positive_int, default=256, help="jobs per trajectory")
    g.add_argument("--trajectories", type=positive_int, default=100, help="trajectories per epoch")
    g.add_argument("--first", type=nonnegative_int, default=10000,
                   help="train on windows from the first N jobs (0: the whole trace)")
    g.add_argument("--slots", type=positive_int, default=128)
    g.add_argument("--cutoff", default="fcfs", choices=["fcfs", "interleave"])
    g.add_argument("--policy-net", default="kernel",
                   choices=["kernel", "mlp-v1", "mlp-v2", "mlp-v3", "lenet"])
    g.add_argument("--value-net", default="kernel", choices=["kernel", "flat"])
    g = p.add_argument_group("PPO (defaults: the RLScheduler code)")
    g.add_argument("--pi-lr", type=positive_float, default=3e-4)
    g.add_argument("--vf-lr", type=positive_float, default=1e-3)
    g.add_argument("--pi-iters", type=positive_int, default=80)
    g.add_argument("--v-iters", type=positive_int, default=80)
    g.add_argument("--target-kl", type=positive_float, default=0.01)
    g.add_argument("--filter", default="none", choices=["none", "paper", "fixed"],
                   help="trajectory filtering: paper = SJF band (median, 2 x mean); fixed = (10, 150)")
    g.add_argument("--filter-epochs", type=nonnegative_int,
                   help="epochs of stage 1 (filtered windows) before training on all windows")
    g.add_argument("--reward-baseline", default="none",
                   help="none (the paper's reward, -metric) or a heuristic: reward the episode's "
                        "improvement over that heuristic on the same window, in [-1, 1]")
    g.add_argument("--init", default="none",
                   help="none (random weights, the paper), a heuristic to imitate before PPO "
                        "(fcfs, sjf, f1, ...: a fixed score per job), or model:PATH to start "
                        "from a trained model's networks (PATH: a model file, a run folder, its "
                        "best.pt, or pretrained/NAME)")
    g.add_argument("--threads", type=positive_int, help="torch threads (default: all cores)")
    g = p.add_argument_group("validation and output")
    add_validation_args(g, windows=20, jobs=256)
    g.add_argument("--validate-avoid", choices=["paper", "none"], default="paper",
                   help="validation windows share no job with the paper's test windows (paper), "
                        "or are drawn from the whole training range (none)")


def _add_experiment_arguments(p: argparse.ArgumentParser, name: str) -> None:
    p.description, p.epilog = EXPERIMENT_CAPTIONS[name], EPILOG_EXPERIMENT
    add_format_options(p)
    p.add_argument("--models", help="take the trained models from this folder instead of "
                                    "the shipped ones (NAME.pt or NAME/best.pt; for "
                                    "rlscheduler-seeds NAME-sK.pt or NAME-sK/best.pt)")
    if name == "rlscheduler-table5":
        p.add_argument("--heuristics-only", action="store_true",
                       help="leave the trained models out")
    p.set_defaults(heuristics_only=False)


def add_table5_arguments(p: argparse.ArgumentParser) -> None:
    _add_experiment_arguments(p, "rlscheduler-table5")


def add_table7_arguments(p: argparse.ArgumentParser) -> None:
    _add_experiment_arguments(p, "rlscheduler-table7")


def add_table8_arguments(p: argparse.ArgumentParser) -> None:
    _add_experiment_arguments(p, "rlscheduler-table8")


def add_seeds_arguments(p: argparse.ArgumentParser) -> None:
    _add_experiment_arguments(p, "rlscheduler-seeds")


def cmd_experiment(args) -> int:
    from hpcsched.experiments import rlscheduler as rls

    name = args.name
    if name == "rlscheduler-seeds":
        return _cmd_seeds(args)
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


#: command-line options -> RLSchedulerConfig settings, where the names differ
CONFIG_NAMES = {"trajectories": ("trajectories_per_epoch", "n_envs"), "policy_net": ("policy",),
                "value_net": ("value",), "pi_iters": ("train_pi_iters",),
                "v_iters": ("train_v_iters",)}
RUN_OPTIONS = ("validate_every", "validate_windows", "validate_jobs", "validate_avoid")


def config_settings(values: dict) -> dict:
    """RLSchedulerConfig settings of the command-line options in `values` (run options left out)."""
    out = {}
    for dest, v in values.items():
        if dest in RUN_OPTIONS:
            continue
        if dest == "first":
            v = v or None  # 0: the whole trace
        for name in CONFIG_NAMES.get(dest, (dest,)):
            out[name] = v
    return out


def _cmd_seeds(args) -> int:
    from hpcsched.experiments import rlscheduler_seeds as seeds

    with Progress(seeds.simulations(), args.name) as bar:
        rows = seeds.seed_study(models=args.models, progress=bar.update)
    if args.fmt in ("json", "csv"):
        print(format_rows(rows, args.fmt))
        return 0
    if args.fmt is None:
        print(EXPERIMENT_CAPTIONS[args.name] + "\n")
    cols = ["trace", "backfilling", "metric", "best_heuristic", "best",
            *(f"s{s}" for s in seeds.SEEDS), "mean", "sd", "beats", "mean_ratio",
            "chosen_seed" if args.models else "shipped_seed"]
    print(format_rows(rows, args.fmt or "table", columns=cols))
    return 0


def cmd_train(args) -> int:
    from hpcsched.agents.rlscheduler import RLSchedulerConfig
    from hpcsched.experiments.training import train

    # a resumed run: the options given (the others are the run's own); a new one: all
    values = option_values(args, given_only=args.resume)
    init = values.get("init", "")
    if init.startswith("model:"):  # the file, found as every model is (a run folder: best.pt)
        values["init"] = "model:" + str(locate(init[len("model:"):], get("rl")))
    settings = config_settings(values)
    config = settings if args.resume else RLSchedulerConfig(**settings)
    model = train(config, args.out, args.epochs, resume=args.resume,
                  **{k: v for k, v in values.items() if k in RUN_OPTIONS})
    last = next((h for h in reversed(model.history) if "mean_reward" in h), None)
    print(f"{model.epoch} epochs; model: {args.out}/model.pt; log: {args.out}/log.csv; "
          f"curve: {args.out}/curve.png")
    if last is not None:
        print(f"last epoch: mean reward {last['mean_reward']:.6g}, {last['epoch_s']:.1f} s")
    return 0


def add_evaluate_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument_group(
        "RLScheduler models (rl:)",
        "scored by default as rlscheduler-table5 scores them: on the trace, profile and "
        "backfilling they were trained with, 10 windows of 1024 jobs (--jobs to change) drawn as "
        "the paper draws them under the rlscheduler profile (from the first 10,000 jobs), else "
        "with seed 0")


def evaluate(path, checkpoint: dict, args) -> int:
    """`hpcsched evaluate` of an RLScheduler model."""
    from hpcsched.cli.evaluate import drawn_windows, on_windows

    config = checkpoint["config"]
    return on_windows(args, path, label=f"rl:{args.model}",
                      about=f"trained on {config['trace']}, metric {config['metric']}, backfill "
                            f"{config['backfill']}",
                      trace=config["trace"], profile=config["profile"],
                      backfills=[config["backfill"]], windows=drawn_windows(10, 1024))
