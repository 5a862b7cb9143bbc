"""DeepRM's commands: `train deeprm`, `experiment deeprm-load-sweep` (HotNets'16 Figs. 4, 7),
`experiment deeprm-seeds` (the shipped models over training seeds) and how `evaluate` scores its
models; registered by `hpcsched.recipes.deeprm`."""

from __future__ import annotations

import argparse

from hpcsched.cli.common import (add_format_options, nonnegative_float, nonnegative_int,
                                 option_values, positive_float, positive_int)
from hpcsched.report.progress import Progress
from hpcsched.report.table import format_rows

TUNED_KNOB = 0.1  # hpcsched.experiments.deeprm.TUNED_KNOB (kept here so --help imports little)

EPILOG_TRAIN = """examples:
  hpcsched train deeprm --load 0.7 --out runs/deeprm-70
  hpcsched train deeprm --load 0.7 --out runs/deeprm-70 --epochs 150 --resume   # continue it
  hpcsched train deeprm --load 1.3 --reward completion --out runs/deeprm-130-ct
  hpcsched train deeprm --config deeprm.toml --load 1.1 --out runs/deeprm-110   # options from a file

An epoch is one pass over the training jobsets (100, drawn with the authors' seed 42), in updates
of 10 jobsets x 20 rollouts each. The run folder gets model.pt (every epoch), best.pt (best greedy
slowdown on 50 validation jobsets), log.csv, curve.png, config.json and TensorBoard events in
tb/ when tensorboard is installed. --resume continues with the run's own settings: leave them
out, or repeat them (a different value is refused); --threads may change.
"""

EPILOG_SWEEP = """examples:
  hpcsched experiment deeprm-load-sweep
  hpcsched experiment deeprm-load-sweep --json > sweep.json
  hpcsched experiment deeprm-load-sweep --models runs/ --plot sweep.png --analysis-load 1.1
  hpcsched experiment deeprm-load-sweep --heuristics-only --rates 0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1.0 \\
      --seed 314159 --simu-len 50 --jobsets 100 --json      # DeepRM's own script's numbers

Rows: load (the level asked for; with --rates, rate x 1.845), rate (Bernoulli arrival
probability), offered_load (measured on the jobsets), policy, slowdown and completion (pooled over
the jobs of 100 unseen jobsets, seed 314159, drawn by DeepRM's generator), withheld_share (share
of time steps ended while a shown job would have fit now), dropped (arrivals that found the 10
slots and 60 backlog places full), model_load (the training load of the DeepRM model used at that
load: the nearest one shipped). sjf, packer and random are DeepRM's baselines and equal its own
code's numbers on the same settings (random: its evaluation script's draws, one at a time).
"""

SEEDS_CAPTION = ("DeepRM's shipped {reward} models over training seeds 0, 1, 2: each seed's best.pt "
                 "(chosen on 50 validation jobsets, seed 27182) at each load (model_load: the "
                 "nearest training load, whose seeds score it, as the sweep does), scored as "
                 "deeprm-load-sweep scores its DeepRM column (greedy, mean {reward} pooled over "
                 "the jobs of {jobsets} unseen jobsets, seed 314159), beside SJF, Packer and "
                 "Tetris* (tetris:0.1) of the same run; mean and sample sd over the seeds, how "
                 "many beat the best heuristic (at 2 decimals), the seed chosen on validation, "
                 "the seed of the file shipped now and its {reward} (the sweep's DeepRM number)")

EPILOG_SEEDS = """examples:
  hpcsched experiment deeprm-seeds                          # data/pretrained/seeds/
  hpcsched experiment deeprm-seeds --models runs/seeds      # NAME-sK.pt or NAME-sK/best.pt
  hpcsched experiment deeprm-seeds --models runs/seeds --loads 0.7,1.1 --json
  hpcsched experiment deeprm-seeds --sweep --markdown       # every load of the sweep

Seeds are trained by MODELS.md's commands with --seed K, e.g.
  hpcsched train deeprm --load 0.7 --init tetris --epochs 20 --seed 1 \\
      --out runs/seeds/deeprm-load-70-s1
"""


def add_train_arguments(p: argparse.ArgumentParser) -> None:
    """`train deeprm`'s options."""
    p.epilog = EPILOG_TRAIN
    p.add_argument("--out", required=True, help="the run's folder")
    p.add_argument("--load", type=positive_float, default=0.7,
                   help="offered load of the training jobsets (0.7 = 70%%; at most 1.845)")
    p.add_argument("--epochs", type=positive_int, default=100,
                   help="train until this many epochs in all")
    p.add_argument("--resume", action="store_true", help="continue the run in --out")
    p.add_argument("--seed", type=int, default=0)
    g = p.add_argument_group("the paper's settings (defaults: the paper's)")
    g.add_argument("--jobsets", type=positive_int, default=100, help="training jobsets")
    g.add_argument("--rollouts", type=positive_int, default=20, help="rollouts per jobset (N)")
    g.add_argument("--jobsets-per-update", type=positive_int, default=10)
    g.add_argument("--steps", type=positive_int, default=50, help="arrival steps per jobset")
    g.add_argument("--lr", type=positive_float, default=1e-3, help="RMSProp learning rate")
    g.add_argument("--reward", default="slowdown", choices=["slowdown", "completion"])
    g.add_argument("--slots", type=positive_int, default=10, help="M, job slots shown")
    g.add_argument("--horizon", type=positive_int, default=20, help="T, steps shown ahead")
    g.add_argument("--units", type=positive_int, default=10, help="units of each resource")
    g.add_argument("--backlog", type=positive_int, default=60,
                   help="backlog places (shown as cells of the image)")
    g.add_argument("--queue", default="bounded", choices=["bounded", "unbounded"],
                   help="bounded (DeepRM's: an arrival that finds the slots and backlog full is "
                        "dropped) or unbounded")
    g.add_argument("--no-mask", action="store_true",
                   help="let the policy pick empty slots and jobs that fit nowhere (they act as "
                        "void), as the paper; by default they are masked out")
    g.add_argument("--init", default="none",
                   help="none (random weights: the paper) or a heuristic to imitate first (sjf, "
                        "tetris, ...: the authors' code's supervised warm start, pg_su)")
    g.add_argument("--threads", type=positive_int, default=1, help="torch threads (default 1)")
    g.add_argument("--validate-jobsets", type=nonnegative_int, default=50,
                   help="greedy validation jobsets each epoch, keeping best.pt (0: off)")


def add_sweep_arguments(p: argparse.ArgumentParser) -> None:
    p.description = "DeepRM's Fig. 4 and Fig. 7 on unseen synthetic jobsets"
    p.epilog = EPILOG_SWEEP
    add_format_options(p)
    p.add_argument("--models", help="folder of DeepRM models (deeprm-*.pt or run folders) instead "
                                    "of the shipped ones")
    p.add_argument("--heuristics-only", action="store_true", help="leave DeepRM out")
    p.add_argument("--reward", default="slowdown", choices=["slowdown", "completion"],
                   help="use the DeepRM models trained for this reward (Fig. 5: completion, "
                        "compared on the completion column)")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--loads", help="comma-separated loads (default: 0.1,0.3,...,1.7,1.845)")
    which.add_argument("--rates", help="comma-separated arrival probabilities instead of loads "
                                       "(DeepRM's new_job_rate, e.g. 0.1,0.2,...,1.0)")
    p.add_argument("--jobsets", type=positive_int, default=100, help="unseen jobsets per load")
    p.add_argument("--seed", type=int, default=314159,
                   help="the jobsets' seed (default: DeepRM's unseen draw, 314159)")
    p.add_argument("--simu-len", type=positive_int, default=50,
                   help="steps per jobset (DeepRM's simu_len; the paper's 50)")
    p.add_argument("--queue", default="bounded", choices=["bounded", "unbounded"],
                   help="bounded (default, DeepRM's: 10 slots + 60 backlog, later arrivals are "
                        "dropped and counted) or unbounded")
    p.add_argument("--tetris-knob", type=float, default=TUNED_KNOB,
                   help=f"Tetris*'s weight of packing against 1/length (default {TUNED_KNOB}: "
                        f"the best on the training jobsets at 70%%, 110%% and 150%% load)")
    p.add_argument("--sample", action="store_true", help="sample DeepRM's actions (the "
                                                         "authors' test) instead of greedy")
    p.add_argument("--plot", default="deeprm-load-sweep.png", help="PNG file of the curves")
    p.add_argument("--analysis-load", type=nonnegative_float, default=1.1,
                   help="load of the Fig. 7 analysis (0: skip)")


def add_seeds_arguments(p: argparse.ArgumentParser) -> None:
    p.description = seeds_caption(100, "slowdown (or completion-time)")
    p.epilog = EPILOG_SEEDS
    add_format_options(p)
    p.add_argument("--models", help="take the seeds' models from this folder "
                                    "(deeprm-load-NN-sK.pt or the run folder deeprm-load-NN-sK/, "
                                    "its best.pt) instead of data/pretrained/seeds/")
    p.add_argument("--loads",
                   help="the rows: comma-separated loads (default: the training loads, "
                        "0.7,1.1,1.5, or 1.3 with --reward completion); another load is scored "
                        "with the seeds of the nearest training load, as the sweep scores it")
    p.add_argument("--reward", choices=("slowdown", "completion"), default="slowdown",
                   help="the models trained for this reward, scored on its metric (completion: "
                        "Fig. 5's completion-time model, mean completion time)")
    p.add_argument("--sweep", action="store_true",
                   help="every load of deeprm-load-sweep (replaces --loads)")
    p.add_argument("--seeds", default="0,1,2",
                   help="comma-separated training seeds (default 0,1,2)")
    p.add_argument("--jobsets", type=positive_int, default=100,
                   help="unseen jobsets per load (default 100, the sweep's)")


def cmd_train(args) -> int:
    from hpcsched.agents.deeprm import DeepRMConfig
    from hpcsched.experiments.deeprm import train
    from hpcsched.workload.deeprm import rate_for_load

    # a resumed run: the options given (the others are the run's own); a new one: all
    values = option_values(args, given_only=args.resume)
    if "load" in values:
        rate_for_load(values["load"])  # a clear error for an impossible load, before any write
    if values.get("init", "none") != "none":
        from hpcsched.policies.deeprm import get_grid_policy

        try:
            get_grid_policy(values["init"])
        except ValueError as e:
            raise ValueError(f"--init: {e}") from None
    settings = {("mask_invalid" if k == "no_mask" else k): (not v if k == "no_mask" else v)
                for k, v in values.items()}
    config = settings if args.resume else DeepRMConfig(**settings)
    model = train(config, args.out, args.epochs, resume=args.resume)
    last = model.history[-1] if model.history else None
    print(f"{model.epoch} epochs; model: {args.out}/model.pt; best: {args.out}/best.pt; "
          f"log: {args.out}/log.csv; curve: {args.out}/curve.png")
    if last is not None:
        print(f"last epoch: slowdown {last['slowdown']:.4g} (sampled), validation "
              f"{last.get('val_slowdown', float('nan')):.4g} (greedy), {last['epoch_s']:.1f} s")
    return 0


def _keys(rows) -> list[str]:
    keys: list[str] = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    return keys


def cmd_sweep(args) -> int:
    from hpcsched.experiments import deeprm as exp

    def numbers(option: str, text: str) -> tuple[float, ...]:
        try:
            values = tuple(float(x) for x in text.split(",") if x.strip())
        except ValueError:
            raise ValueError(f"{option} {text!r}: expected comma-separated numbers") from None
        if not values:
            raise ValueError(f"{option} {text!r}: expected at least one number")
        return values

    loads = numbers("--loads", args.loads) if args.loads else exp.SWEEP_LOADS
    rates = numbers("--rates", args.rates) if args.rates else None
    if args.jobsets < 1:
        raise ValueError(f"--jobsets must be at least 1 (got {args.jobsets})")
    if args.simu_len < 2:
        raise ValueError(f"--simu-len must be at least 2 steps (got {args.simu_len})")
    with_model = not args.heuristics_only
    trained = exp.model_loads(args.models, args.reward) if with_model else {}
    if with_model and not trained:
        raise ValueError(f"no DeepRM model in {args.models or exp.PRETRAINED}; train one "
                         f"(hpcsched train deeprm) or pass --heuristics-only")
    per_load = 4 + (1 if trained else 0)
    with Progress(len(rates or loads) * per_load, "deeprm-load-sweep") as bar:
        rows = exp.load_sweep(loads, rates=rates, models=args.models, jobsets=args.jobsets,
                              steps=args.simu_len, seed=args.seed, queue=args.queue,
                              with_model=with_model, tetris_knob=args.tetris_knob,
                              sample=args.sample, progress=bar.update, reward=args.reward)
    analysis = []
    if trained and args.analysis_load:
        near = min(trained, key=lambda x: abs(x - args.analysis_load))
        from hpcsched.agents.deeprm_policy import load_deeprm_policy

        analysis = exp.what_it_learned(load_deeprm_policy(trained[near], sample=args.sample),
                                       args.analysis_load, jobsets=args.jobsets,
                                       steps=args.simu_len, seed=args.seed, queue=args.queue,
                                       against=f"tetris:{args.tetris_knob:g}")
        for r in analysis:
            r["model_load"] = near if r["policy"] == "deeprm" else ""
    if args.plot:
        path = exp.sweep_plot(rows, args.plot)
    if args.fmt in ("json", "csv"):
        print(format_rows(rows, args.fmt))
        return 0
    table = []
    for load in dict.fromkeys(r["load"] for r in rows):
        sub = {r["policy"]: r for r in rows if r["load"] == load}
        first = next(iter(sub.values()))
        row = {"load": load, "rate": first["rate"], "offered_load": first["offered_load"]}
        row.update({name: r["slowdown"] for name, r in sub.items()})
        if "deeprm" in sub:
            row["model_load"] = sub["deeprm"]["model_load"]
            row["deeprm_withheld"] = sub["deeprm"]["withheld_share"]
        table.append(row)
    if args.fmt is None:
        print(f"mean job slowdown, pooled over {args.jobsets} unseen jobsets of {args.simu_len} "
              f"steps (seed {args.seed}) per load"
              + ("" if args.heuristics_only else
                 f"; DeepRM {'sampled' if args.sample else 'greedy'}, the model trained at the "
                 f"nearest load (model_load)") + "\n")
    print(format_rows(table, args.fmt or "table", columns=_keys(table)))
    dropped = [r for r in rows if r["dropped"]]
    if dropped:
        print(f"\narrivals dropped because the queue ({args.queue}: 10 slots + 60 backlog) was "
              f"full: " + "; ".join(f"load {r['load']:g} {r['policy']} {r['dropped']}"
                                    for r in dropped))
    if analysis:
        print(f"\nwhat DeepRM learned (paper Fig. 7, load {args.analysis_load:g}): share of time "
              f"steps ended while a shown job would have fit now, the share of those held-back "
              f"job-steps that were long jobs, and slowdown by job length\n")
        print(format_rows(analysis, args.fmt or "table", columns=_keys(analysis)))
    if args.plot:
        print(f"\nplot: {path}")
    return 0


def shown_path(path) -> str:
    """A model file as printed: a shipped one as `pretrained/...` (the same on every machine)."""
    from pathlib import Path

    from hpcsched.experiments.policyspec import PRETRAINED

    path = Path(path)
    try:
        return f"pretrained/{path.resolve().relative_to(PRETRAINED.resolve()).as_posix()}"
    except ValueError:
        return str(path)


def cmd_seeds(args) -> int:
    from hpcsched.cli.common import csv_list
    from hpcsched.experiments import deeprm_seeds as seeds
    from hpcsched.experiments.deeprm import SWEEP_LOADS
    from hpcsched.workload.deeprm import rate_for_load

    def values(option: str, text: str, kind, allowed=None) -> list:
        try:
            out = [kind(x) for x in csv_list(text)]
        except (ValueError, argparse.ArgumentTypeError):
            raise ValueError(f"{option} {text!r}: expected comma-separated "
                             f"{'numbers' if kind is float else 'integers'}") from None
        if allowed is not None:
            for x in out:
                allowed(x)
        return list(dict.fromkeys(out))

    def load_ok(x: float) -> None:
        try:
            rate_for_load(x)
        except ValueError as e:
            raise ValueError(f"--loads: {e}") from None

    loads = (list(SWEEP_LOADS) if args.sweep else
             None if args.loads is None else values("--loads", args.loads, float, load_ok))
    chosen_seeds = values("--seeds", args.seeds, int)
    metric = args.reward
    with Progress(seeds.simulations(loads, chosen_seeds, metric), args.name) as bar:
        rows = seeds.seed_study(loads, models=args.models, seeds=chosen_seeds,
                                jobsets=args.jobsets, progress=bar.update, reward=metric)
    if args.fmt in ("json", "csv"):
        print(format_rows(rows, args.fmt))
        return 0
    if args.fmt is None:
        print(seeds_caption(args.jobsets, metric) + "\n")
    digits = {k: seeds.DIGITS for r in rows for k, v in r.items() if isinstance(v, float)}
    digits.update(load=3, model_load=3)  # 1.845, the sweep's last load
    cols = ["load", "model_load", *seeds.HEURISTICS, "best_heuristic", *(f"s{s}" for s in chosen_seeds),
            "mean", "sd", "beats", "chosen_seed", "shipped_seed", "shipped"]
    print(format_rows(rows, args.fmt or "table", columns=cols, digits=digits))
    # one row per model: its slowdown at its own training load (where that load is a row)
    own = {r["model_load"]: r for r in rows if r["load"] == r["model_load"]}
    models = {r["model_load"]: own.get(r["model_load"], {}) for r in rows}
    first = {r["model_load"]: r for r in reversed(rows)}
    val = f"val_{metric}"
    per_seed = [{"load": load, "seed": s, "file": shown_path(first[load][f"file_s{s}"]),
                 "epoch": first[load][f"epoch_s{s}"], val: first[load][f"val_s{s}"],
                 metric: r.get(f"s{s}", float("nan"))}
                for load, r in models.items() for s in chosen_seeds]
    if args.fmt is None:
        print(f"\neach seed's best.pt: its epoch, the validation {metric} it was chosen with, "
              f"its {metric} above at its own training load\n")
    else:
        print()
    print(format_rows(per_seed, args.fmt or "table",
                      columns=["load", "seed", "epoch", val, metric, "file"],
                      digits={"load": 2, val: 3, metric: seeds.DIGITS}))
    return 0


def seeds_caption(jobsets: int = 100, reward: str = "slowdown") -> str:
    return SEEDS_CAPTION.format(jobsets=jobsets, reward=reward)


#: the sweep's heuristics beside a DeepRM model in `evaluate` (deeprm-seeds' three)
EVALUATE_AGAINST = ("sjf", "packer", f"tetris:{TUNED_KNOB:g}")
EVALUATE_JOBSETS, EVALUATE_STEPS = 100, 50  # deeprm-load-sweep's


def add_evaluate_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group(
        "DeepRM models (deeprm:)",
        "scored by default as deeprm-load-sweep scores its DeepRM column: on 100 unseen "
        "synthetic jobsets of 50 steps drawn with --seed (default 314159, DeepRM's unseen draw) "
        "at the load the model was trained at, in the queue it was trained with, greedy "
        "(--sample: sampled); slowdown and completion time (in steps) pooled over the jobs, "
        "beside sjf, packer and tetris:0.1 (random: DeepRM's own script's draws). With --trace: "
        "windows of that trace under the deeprm profile, as an rl: model's (10 x 1024 jobs)")
    g.add_argument("--load", help="comma-separated loads of the jobsets (default: the one it "
                                  "was trained at; at most 1.845)")
    g.add_argument("--jobsets", type=positive_int, help="unseen jobsets per load (default 100)")


def evaluate(path, checkpoint: dict, args) -> int:
    """`hpcsched evaluate` of a DeepRM model: its jobsets (`experiments.deeprm.score_at`, the
    sweep's rows), or with --trace windows of a trace."""
    from hpcsched.cli.evaluate import WINDOW_OPTIONS, drawn_windows, given, on_windows
    from hpcsched.experiments import deeprm as exp
    from hpcsched.workload.deeprm import TEST_SEED, rate_for_load

    config = checkpoint["config"]
    label = f"deeprm:{args.model}"
    queue = config.get("queue", "bounded")
    about = (f"DeepRM trained at load {config['load']:g}, reward "
             f"{config.get('reward', 'slowdown')}, {queue} queue")
    if args.trace is not None:
        mixed = given(args, ("load", "jobsets"))
        if mixed:
            raise ValueError(f"{mixed[0]}: with --trace a DeepRM model is scored on windows of "
                             f"the trace; leave --trace out to score it on synthetic jobsets")
        return on_windows(args, path, label=label, about=about, trace=args.trace,
                          profile="deeprm", backfills=["none"], windows=drawn_windows(10, 1024),
                          against=EVALUATE_AGAINST)
    mixed = given(args, WINDOW_OPTIONS)
    if mixed:
        raise ValueError(f"{mixed[0]}: a DeepRM model is scored on synthetic jobsets (--load, "
                         f"--jobsets, --seed); name a trace with --trace to score it on windows")
    if args.load is None:
        loads = [float(config["load"])]
    else:
        try:
            loads = [float(x) for x in args.load.split(",") if x.strip()]
        except ValueError:
            raise ValueError(f"--load {args.load!r}: expected comma-separated numbers") from None
        if not loads:
            raise ValueError(f"--load {args.load!r}: expected at least one load")
    rates = {}
    for load in loads:
        try:
            rates[load] = rate_for_load(load)
        except ValueError as e:
            raise ValueError(f"--load: {e}") from None
    jobsets = args.jobsets or EVALUATE_JOBSETS
    seed = TEST_SEED if args.seed is None else args.seed
    policies = [(label, exp.resolve_grid_policy(label, sample=args.sample), config["load"])]
    policies += [(h, exp.resolve_grid_policy(h), None)
                 for h in (args.against or EVALUATE_AGAINST) if h != "none"]
    rows = []
    with Progress(len(loads) * len(policies), "evaluating") as bar:
        for load in loads:
            rows += exp.score_at(load, rates[load], policies, jobsets=jobsets,
                                 steps=EVALUATE_STEPS, seed=seed, queue=queue,
                                 progress=bar.update)
    if args.fmt is None:
        print(f"model {path} ({about}); {jobsets} unseen jobsets of {EVALUATE_STEPS} steps "
              f"(seed {seed}) per load, {'sampled' if args.sample else 'greedy'}; slowdown and "
              f"completion time (steps) pooled over their jobs\n")
    columns = None if args.fmt in ("json", "csv") else [
        "load", "policy", "slowdown", "completion", "withheld_share", "jobs", "unfinished",
        "dropped"]
    print(format_rows(rows, args.fmt or "table", columns=columns))
    return 0
