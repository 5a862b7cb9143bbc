"""DRAS's commands: `train dras` (DRAS-PG, DRAS-DQL, Decima-PG), `experiment dras`, `dras-seeds` and
`dras-curriculum`, and how `evaluate` scores its models; registered by `hpcsched.recipes.dras`."""

from __future__ import annotations

import argparse

from hpcsched.cli.common import (add_format_options, nonnegative_float, option_values,
                                 positive_float, positive_int)
from hpcsched.report.progress import Progress
from hpcsched.report.table import format_rows

EPILOG_TRAIN = """examples:
  hpcsched train dras --algo pg --trace ricc --reward capability --out runs/dras-pg-ricc
  hpcsched train dras --algo dql --trace ricc --out runs/dras-dql-ricc
  hpcsched train dras --algo decima --trace ricc --out runs/decima-pg-ricc
  hpcsched train dras --algo pg --curriculum real:20 --out runs/real-only   # the ablation
  hpcsched train dras --out runs/dras-pg-ricc --resume                      # continue a run
  hpcsched train dras --config dras.toml --seed 1 --out runs/dras-s1         # options from a file
  hpcsched trace convert ph-train.txt ph-train-cores.swf --cores-of spartan-physical
  hpcsched trace convert ph-validation.txt ph-validation-cores.swf --cores-of spartan-physical
  hpcsched train dras --trace ph-train-cores.swf --validate-trace ph-validation-cores.swf \\
      --validate-first-days 1 --out runs/dras-ph     # a cluster's jobs seen as cores, its own periods

One episode per jobset of the curriculum (sampled, then real, then synthetic), each from an empty
machine; updates every 10 scheduling instances; after every second episode the greedy agent is
scored on the validation week. The run folder gets model.pt (every episode), best.pt (the lowest
validation wait, or with --select reward the highest validation reward), log.csv, curve.png,
config.json and TensorBoard events in tb/ when tensorboard is installed. --resume continues with
the run's own settings: leave them out, or repeat them (a different value is refused); --threads
may change.
"""

EPILOG_EXPERIMENT = """examples:
  hpcsched experiment dras --trace ricc
  hpcsched experiment dras --trace ricc --json > dras.json
  hpcsched experiment dras --trace ricc --models runs --plots figs/   # your own trained models
  hpcsched experiment dras --trace ricc --methods fcfs-easy,binpacking,random,optimization
"""

EPILOG_SEEDS = """examples:
  hpcsched experiment dras-seeds                        # data/pretrained/seeds/NAME-sK.pt
  hpcsched experiment dras-seeds --models runs/dseeds   # NAME-sK/best.pt of run folders
  hpcsched experiment dras-seeds --markdown
"""

SEEDS_CAPTION = ("DRAS's recipes over training seeds 0, 1, 2 (DRAS-DQL on RICC with the capability "
                 "reward; DRAS-PG and DRAS-DQL on HPC2N with the capacity reward): each seed's "
                 "best.pt (the best validation score of its run, by what it selected on: "
                 "`select`, wait or reward) on experiment dras's test period, dras profile; every "
                 "ratio is to FCFS+EASY's on the same jobs (val: the validation days the run chose "
                 "best.pt on). Per recipe: mean and sample sd of the test wait ratios, how many "
                 "seeds wait less than FCFS+EASY (ratio below 1.000), the seed chosen on "
                 "validation, the seed shipped")


def add_train_arguments(p: argparse.ArgumentParser) -> None:
    """`train dras`'s options."""
    from hpcsched.envs.dras import REWARDS
    from hpcsched.experiments.dras_training import ALGOS, DrasRunConfig

    d = DrasRunConfig()
    p.epilog = EPILOG_TRAIN
    p.add_argument("--out", required=True, help="the run's folder")
    p.add_argument("--resume", action="store_true", help="continue the run in --out")
    p.add_argument("--algo", default="pg", choices=ALGOS,
                   help="pg = DRAS-PG, dql = DRAS-DQL, decima = Decima-PG (one level)")
    p.add_argument("--trace", default=d.trace, help="bundled trace name or SWF file")
    p.add_argument("--reward", default=d.reward, choices=REWARDS)
    p.add_argument("--curriculum", default=d.curriculum,
                   help=f"phases and episodes, in order (default {d.curriculum})")
    p.add_argument("--jobset-jobs", type=positive_int, default=d.jobset_jobs,
                   help="jobs per jobset")
    p.add_argument("--train-days", type=positive_float, default=d.train_days)
    p.add_argument("--validate-days", type=positive_float, default=d.validate_days)
    p.add_argument("--validate-first-days", type=positive_float, default=d.validate_first_days,
                   help="days of the validation period scored after each episode")
    p.add_argument("--validate-trace", metavar="FILE",
                   help="validate on this trace (its first --validate-first-days days) instead "
                        "of the days after --train-days; training takes the first --train-days "
                        "of --trace, and no test period is cut")
    p.add_argument("--validate-every", type=positive_int, default=d.validate_every,
                   help="validate after every k-th episode (and the last)")
    p.add_argument("--select", default=d.select, choices=["reward", "wait"],
                   help="best.pt: the validation with the lowest average wait (default) or "
                        "the highest reward")
    p.add_argument("--keep-validated", action="store_true",
                   help="also keep every validated episode's checkpoint (validated/epNNN.pt)")
    p.add_argument("--test-days", type=positive_float, default=d.test_days)
    p.add_argument("--reserve", default=d.reserve, choices=["agent_pick", "fcfs_head"],
                   help="who gets the reservation (paper: the agent's pick; code: FCFS head)")
    p.add_argument("--persist", action="store_true",
                   help="keep the reservation across instances (the released code)")
    p.add_argument("--backfill-runtime", default=d.backfill_runtime,
                   choices=["estimate", "actual"])
    p.add_argument("--lr", type=positive_float, help="learning rate (default 1e-3)")
    p.add_argument("--gamma", type=positive_float, help="discount (default: 0.6 for pg and decima, "
                                                  "0.9 for dql)")
    p.add_argument("--net", choices=["paper", "per_job"],
                   help="PG network: paper (positional outputs, Table III; default) or per_job "
                        "(each job scored from its block and the nodes; our deviation)")
    p.add_argument("--hidden", help="FC1,FC2 sizes (default: scaled to the cluster as Theta's "
                                    "4000,1000 are to its 4460 input rows)")
    dql = p.add_argument_group("DRAS-DQL only")
    dql.add_argument("--epsilon-decay", type=positive_float,
                     help="epsilon's factor per update (default 0.995, the paper's)")
    dql.add_argument("--epsilon-min", type=nonnegative_float, help="epsilon's floor (default 0.01)")
    dql.add_argument("--target-every", type=positive_int,
                     help="updates between target-network copies (default 20)")
    dql.add_argument("--replay", type=positive_int,
                     help="replay memory, transitions (default 5000)")
    dql.add_argument("--batch", type=positive_int,
                     help="transitions per gradient step (default 32)")
    dql.add_argument("--gradient-steps", type=positive_int,
                     help="gradient steps per update (default 1)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=positive_int, default=1, help="torch threads (default 1)")


def add_experiment_arguments(p: argparse.ArgumentParser) -> None:
    from hpcsched.envs.dras import REWARDS
    from hpcsched.experiments.dras import METHODS

    p.description = ("FCFS+EASY, BinPacking, Random, Optimization, Decima-PG, DRAS-PG and "
                     "DRAS-DQL on the test period of a chronological split, dras profile")
    p.epilog = EPILOG_EXPERIMENT
    add_format_options(p)
    p.add_argument("--trace", default="ricc")
    p.add_argument("--reward", default="capability", choices=REWARDS)
    p.add_argument("--methods", default=",".join(METHODS), help="comma-separated methods")
    p.add_argument("--models", help="take trained models from this folder (NAME.pt or "
                                    "NAME/best.pt, NAME like dras-pg-ricc) instead of the shipped")
    p.add_argument("--online", action="store_true",
                   help="learned agents keep updating during the test (the paper)")
    p.add_argument("--test-days", type=positive_float, default=21.0)
    p.add_argument("--plots", help="folder for kiviat.png, wait_by_size.png, wait_by_mode.png, "
                                    "wait_by_week.png")
    p.add_argument("--seed", type=int, default=0)


def add_seeds_arguments(p: argparse.ArgumentParser) -> None:
    p.description, p.epilog = SEEDS_CAPTION, EPILOG_SEEDS
    add_format_options(p)
    p.add_argument("--models", help="take the seeds' models from this folder (NAME-sK.pt or the "
                                    "run folder NAME-sK/, its best.pt) instead of the shipped "
                                    "data/pretrained/seeds/")
    p.add_argument("--test-days", type=positive_float, default=21.0,
                   help="score on the test period's first days only (default: all 21)")


def add_curriculum_arguments(p: argparse.ArgumentParser) -> None:
    p.epilog = ("examples:\n  hpcsched experiment dras-curriculum --runs "
                "curriculum=runs/dras-pg-ricc,real-only=runs/real-only --out curriculum.png\n")
    p.add_argument("--runs", required=True,
                   help="LABEL=RUN_FOLDER[+RUN_FOLDER...],... (folders written by `hpcsched train "
                        "dras`; several folders under one label are seeds, drawn with their mean)")
    p.add_argument("--out", required=True, help="the PNG file to write")
    p.add_argument("--key", default="val_reward",
                   help="log.csv column to draw (val_reward, val_wait, val_max_wait, ...)")


#: the options that override the agent's settings (PGConfig, DQLConfig), besides --hidden
AGENT_OPTIONS = ("lr", "gamma", "net")
DQL_OPTIONS = ("epsilon_decay", "epsilon_min", "target_every", "replay", "batch",
               "gradient_steps")


def cmd_train(args) -> int:
    from hpcsched.experiments.dras_training import DrasRunConfig, train
    from hpcsched.workload.jobsets import parse_curriculum

    # a resumed run: the options given (the others are the run's own); a new one: all
    values = option_values(args, given_only=args.resume)
    if "curriculum" in values:
        parse_curriculum(values["curriculum"])
    algo = values.get("algo")  # None: a resumed run's own
    agent = {k: values.pop(k) for k in AGENT_OPTIONS if values.get(k) is not None}
    hidden = values.pop("hidden", None)
    if hidden:
        try:
            agent["fc1"], agent["fc2"] = (int(x) for x in hidden.split(","))
        except ValueError:
            raise ValueError(f"--hidden {hidden!r}: give two sizes, FC1,FC2") from None
    if agent.get("net") and algo == "dql":
        raise ValueError("--net is for the PG agents (pg, decima); DQL scores each job already")
    dql = {k: values.pop(k) for k in DQL_OPTIONS if values.get(k) is not None}
    if dql and algo not in ("dql", None):
        raise ValueError(f"--{next(iter(dql)).replace('_', '-')} is an option of DRAS-DQL "
                         f"(--algo dql), not of --algo {algo}")
    agent.update(dql)
    settings = {k: v for k, v in values.items()
                if k not in AGENT_OPTIONS + DQL_OPTIONS + ("hidden",)}
    if agent or not args.resume:
        settings["agent"] = agent
    config = settings if args.resume else DrasRunConfig(**settings)
    history = train(config, args.out, resume=args.resume)
    last = next((h for h in reversed(history) if "val_wait" in h), {})
    print(f"{len(history)} episodes; model: {args.out}/model.pt (best: {args.out}/best.pt); "
          f"log: {args.out}/log.csv; curve: {args.out}/curve.png")
    if last:
        print(f"last episode: {last['phase']}, reward/pick {last['mean_reward']:.4g}, validation "
              f"wait {last['val_wait']:.0f} s, max wait {last['val_max_wait']:.0f} s")
    return 0


def cmd_experiment(args) -> int:
    from hpcsched.experiments import dras
    from hpcsched.sim.run import prepare

    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    unknown = [m for m in methods if m not in dras.METHODS]
    if unknown:
        raise ValueError(f"--methods: unknown {', '.join(unknown)}; choose among "
                         f"{', '.join(dras.METHODS)}")
    with Progress(len(methods), "dras") as bar:
        rows, results = dras.evaluate(args.trace, reward=args.reward, methods=methods,
                                      models=args.models, online=args.online,
                                      test_days=args.test_days, seed=args.seed,
                                      progress=bar.update)
    if args.plots:
        from pathlib import Path

        folder = Path(args.plots)
        folder.mkdir(parents=True, exist_ok=True)
        title = f"{args.trace}, test period, {args.reward} reward"
        dras.kiviat(rows, folder / "kiviat.png", title)
        cluster = prepare(args.trace, "dras").cluster
        dras.wait_by_size(results, lambda jobs: cluster.nodes_needed(jobs.procs),
                          folder / "wait_by_size.png", title)
        dras.wait_by_mode(results, folder / "wait_by_mode.png", title)
        origin = min(float(res.jobs.submit.min()) for res in results.values())
        dras.wait_by_week(results, origin, folder / "wait_by_week.png", title)
    if args.fmt in ("json", "csv"):
        print(format_rows(rows, args.fmt))
        return 0
    cols = ["policy", "backfill", "jobs", "wait", "max_wait", "slowdown", "turnaround",
            "utilization", "ready_jobs_pct", "reserved_jobs_pct", "backfilled_jobs_pct",
            "ready_nodeh_pct", "reserved_nodeh_pct", "backfilled_nodeh_pct"]
    if args.fmt is None:
        print(f"DRAS experiment on {args.trace} (test period: {args.test_days:g} days after 28 "
              f"training + 7 validation days; dras profile; times in seconds)\n")
    print(format_rows(rows, args.fmt or "table", columns=cols))
    checks = dras.verdicts(rows, results)
    if checks and args.fmt is None:
        print("\nagainst FCFS+EASY (ratios; the paper: DRAS < 1 on wait and slowdown, max wait "
              "< 2; packing methods' max wait several times FCFS's):")
        print(format_rows(checks, "table", columns=["policy", "wait_vs_fcfs", "slowdown_vs_fcfs",
                                                    "max_wait_vs_fcfs", "jobs_over_fcfs_max"]))
        if args.plots:
            print(f"\nplots in {args.plots}: kiviat.png, wait_by_size.png, wait_by_mode.png, "
                  f"wait_by_week.png")
    return 0


def cmd_seeds(args) -> int:
    from hpcsched.experiments import dras_seeds as seeds

    with Progress(seeds.simulations(), args.name) as bar:
        rows = seeds.seed_study(models=args.models, test_days=args.test_days,
                                progress=bar.update)
    if args.fmt in ("json", "csv"):
        print(format_rows(rows, args.fmt))
        return 0
    if args.fmt is None:
        days = ("" if args.test_days == 21.0 else
                f"\n(here on the test period's first {args.test_days:g} days only)")
        print(SEEDS_CAPTION + days + "\n")
    print(format_rows(seeds.per_seed(rows), args.fmt or "table",
                      columns=["model", "seed", "episode", "val_ratio", "wait", "wait_ratio",
                               "slowdown_ratio", "max_wait_ratio", "chosen", "shipped"]))
    print()
    summary = [dict(r, fcfs_wait=round(r["fcfs_wait"])) for r in rows]  # seconds, as wait
    print(format_rows(summary, args.fmt or "table",
                      columns=["model", "jobs", "fcfs_wait", "mean_wait_ratio", "sd_wait_ratio",
                               "beats", "select", "chosen_seed", "shipped_seed"]))
    return 0


def cmd_curriculum(args) -> int:
    from pathlib import Path

    from hpcsched.experiments.dras import curriculum_plot, read_log

    runs = {}
    for part in args.runs.split(","):
        label, _, folders = part.partition("=")
        folders = [f for f in folders.split("+") if f]
        if not folders or any(not (Path(f) / "log.csv").exists() for f in folders):
            raise ValueError(f"--runs: {part!r} is not LABEL=FOLDER[+FOLDER...] with a log.csv "
                             f"in every FOLDER")
        runs[label] = folders
    curriculum_plot(runs, args.out, args.key)
    for label, folders in runs.items():
        for folder in folders:
            log = [r for r in read_log(Path(folder) / "log.csv") if r.get("val_reward") != ""]
            best = max(log, key=lambda r: r["val_reward"])
            print(f"{label} ({folder}): {len(log)} validations, best validation reward "
                  f"{best['val_reward']:.1f} at episode {int(best['episode'])} (wait "
                  f"{best['val_wait']:.0f} s)")
    print(f"plot: {args.out}")
    return 0


#: the agents' names, by `--algo`
ALGO_NAMES = {"pg": "DRAS-PG", "dql": "DRAS-DQL", "decima": "Decima-PG"}
DAY = 86400.0


def add_evaluate_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group(
        "DRAS models (dras:)",
        "scored by default as experiment dras scores them: greedy and frozen, from an empty "
        "machine, on the test period of the model's own chronological split of the trace it was "
        "trained on (the jobs submitted in the test days after its training and validation "
        "days: days 35 to 56 for the shipped models), under the dras profile with EASY "
        "backfilling (Decima-PG: none); --jobs N takes the period's first N jobs")
    g.add_argument("--test-days", type=positive_float,
                   help="days of the test period (default: the model's own, 21 for the shipped)")


def test_window(prepared, config: dict, days: float | None = None) -> tuple[int, int]:
    """(position of its first job, jobs) of the test period of a DRAS model's `config` in
    `prepared` (`workload.jobsets.split`'s): the jobs submitted from `train_days +
    validate_days` to `days` (default: the config's `test_days`) after the first submission."""
    import numpy as np

    jobs = prepared.jobs
    t = (jobs.submit - jobs.submit[0]) / DAY
    begin = float(config["train_days"]) + float(config["validate_days"])
    end = begin + (float(config["test_days"]) if days is None else days)
    inside = np.flatnonzero((t >= begin) & (t < end))
    if len(inside) == 0:
        raise ValueError(f"{prepared.name}: the test period (days {begin:g} to {end:g}) has no "
                         f"job; the trace spans {t[-1]:.1f} days")
    if inside[-1] - inside[0] + 1 != len(inside):
        raise ValueError(f"{prepared.name}: its jobs are not in submission order, so the test "
                         f"period is no window; give --start/--starts and --jobs")
    return int(inside[0]), len(inside)


def evaluate(path, checkpoint: dict, args) -> int:
    """`hpcsched evaluate` of a DRAS-PG, DRAS-DQL or Decima-PG model."""
    from hpcsched.cli.evaluate import chosen_windows, on_windows
    from hpcsched.experiments.compare import choose_windows

    config = checkpoint["config"]
    if args.sample:
        raise ValueError("--sample: a DRAS model is scored greedy, as experiment dras scores it")
    placed = args.start is not None or args.starts or args.windows is not None
    if placed and args.test_days is not None:
        raise ValueError("--test-days: the test period is the default window; leave it out with "
                         "--start, --starts or --windows")
    about = (f"{ALGO_NAMES.get(config['algo'], config['algo'])} trained on {config['trace']}, "
             f"reward {config['reward']}")
    if not placed:
        days = config["test_days"] if args.test_days is None else args.test_days
        begin = config["train_days"] + config["validate_days"]
        about += f"; its test period: days {begin:g} to {begin + days:g}"

    def windows(args, prepared) -> tuple[list[int], int]:
        if placed:
            return chosen_windows(args, prepared)
        start, length = test_window(prepared, config, args.test_days)
        return choose_windows(prepared, starts=[start], jobs=args.jobs or length)

    return on_windows(args, path, label=f"dras:{args.model}", about=about,
                      trace=config["trace"], profile="dras",
                      backfills=["none" if config["algo"] == "decima" else "easy"],
                      windows=windows)
