"""HeraSched's `train herasched`; registered by `hpcsched.recipes.herasched`."""

from __future__ import annotations

import argparse

from hpcsched.cli.common import (add_keep_validated, nonnegative_float, positive_float,
                                 positive_int)
from hpcsched.experiments.herasched_training import RUN_OPTIONS as _DEFAULTS

VALIDATE_SUBSETS = _DEFAULTS["validate_subsets"]

EPILOG_TRAIN = """examples:
  hpcsched trace generate spartan-deeplearn --seed 1 -o deeplearn-train.txt
  hpcsched train herasched --cluster spartan-deeplearn --trace deeplearn-train.txt --out runs/hs-dl
  hpcsched train herasched --out runs/hs-dl --epochs 400 --resume        # continue that run
  hpcsched train herasched --cluster spartan-deeplearn --trace more.txt --init runs/hs-dl/best.pt \\
      --out runs/hs-dl-more                                  # train that model on more data
  hpcsched train herasched --cluster spartan-deeplearn --trace deeplearn-train.txt \\
      --imitate first-fit+best-fit --out runs/hs-dl-ff      # start from a heuristic's schedule
  hpcsched train herasched --cluster spartan-physical --trace week.txt --net thesis --out runs/hs-ph
  hpcsched trace convert cerit-2013 cerit-train.swf --from 2013-01-01 --until 2013-02-26
  hpcsched trace convert cerit-2013 cerit-validation.swf --from 2013-02-26 --until 2013-03-12
  hpcsched train herasched --cluster cerit-zewura --trace cerit-train.swf --drop-oversized \\
      --validate-trace cerit-validation.swf --validate-jobs 5000 --out runs/hs-cerit
  hpcsched compare deeplearn-test.txt --cluster spartan-deeplearn \\
      --policies herasched:runs/hs-dl,fcfs --backfill easy

Two PPO agents (hpcsched.agents.herasched): the selector picks a job of the split window (W slots,
T of them the newest jobs) or Forward, the allocator the job's nodes one per step. Every
--update-every selector steps (2,048) both update on the same rollout: an epoch of the run folder.
Settings of the thesis (Tables 4.2, 6.3): lr 3e-4, minibatches of 64, 10 passes, GAE lambda 0.95,
clip 0.2, gamma 1, rewards every 512 selector actions (A_s) and 100 placed jobs (A_a), in hours;
no KL stop and no entropy bonus (SB3's defaults). The PPO options set both agents alike.
On Deeplearn these did not learn in 51 updates; --selector-every 1 --allocator-every 1 --gamma 0.99
(Eq. 4.1 and 4.2 paid at every action, the bounded discount of Table 6.3) did (README, "Does
HeraSched learn?").
--net default: our shared per-job and per-node scorers (8.5k parameters per actor, on any
cluster); --net thesis: Table 4.2's Tanh MLPs ([2048, 1024] on Deeplearn, [4096, 2048, 1024] on
Physical: 145 M weights in the first layer of each of its four networks).

An episode is the whole trace from an empty machine (the thesis's), or --episode-jobs jobs from a
random start; --num-envs episodes run side by side, each network called once per step for all.
Validation: the greedy model on the last --validate-jobs jobs of the trace (or of
--validate-trace: the protocol's validation period, hpcsched.workload.hera_periods), every
--validate-every updates, scored by the thesis's S = AWT_ref/AWT + MWT_ref/MWT against FCFS +
best-fit + EASY in each of --validate-subsets interleaved subsets of those jobs (from one run of
them), the median of the subsets' S the score (best.pt: the highest); with --validate-also TRACE,
the lower of that and S on the whole of TRACE. The run folder gets model.pt
(every update), best.pt, log.csv, curve.png, config.json; --resume continues exactly where the run
stopped (its episodes replayed).
"""


def slurm_duration(text: str) -> float:
    """Seconds of a Slurm duration (`workload.sacct.parse_duration`), for argparse."""
    from hpcsched.workload.sacct import parse_duration

    seconds = parse_duration(text)
    if seconds is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not a Slurm duration (MM, MM:SS, "
                                         f"HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS)")
    return seconds


def add_train_arguments(p: argparse.ArgumentParser) -> None:
    from hpcsched.envs.herasched import HEURISTIC_ALLOCATORS, SELECTOR_REWARDS

    p.epilog = EPILOG_TRAIN
    p.add_argument("--out", required=True, help="the run's folder")
    p.add_argument("--resume", action="store_true", help="continue the run in --out")
    p.add_argument("--epochs", type=positive_int, default=200,
                   help="train until this many updates in all, each after --update-every "
                        "selector steps (default 200)")
    p.add_argument("--trace", help="the training trace (sacct, HPCsim's format or SWF; default: "
                                   "the cluster's generated high-load day)")
    p.add_argument("--cluster", default="spartan-deeplearn",
                   help="a bundled cluster, a slurm.conf or HPCsim's platform files "
                        "(default spartan-deeplearn)")
    p.add_argument("--profile", default="hpcsim", choices=["hpcsim", "standard"],
                   help="hpcsim (the thesis's simulator; default) or standard")
    p.add_argument("--window", type=positive_int,
                   help="W, the job slots (default: Table 4.2's, 100 on Deeplearn, 512 on "
                        "Physical)")
    p.add_argument("--tail", type=int, help="T of them show the newest jobs (10 and 64)")
    p.add_argument("--episode-jobs", type=positive_int,
                   help="episodes of this many jobs from random starts (default: the whole trace)")
    p.add_argument("--net", choices=["default", "thesis"], default="default",
                   help="default: shared per-job and per-node scorers; thesis: Table 4.2's MLPs")
    p.add_argument("--num-envs", type=positive_int, default=4,
                   help="episodes side by side (4)")
    p.add_argument("--update-every", type=positive_int, default=2048,
                   help="selector steps per update (2048)")
    p.add_argument("--gamma", type=float, default=1.0, help="discount (Table 4.2: 1)")
    p.add_argument("--selector-every", type=positive_int, default=512,
                   help="A_s: selector actions per selector reward (Table 4.2: 512; 1 pays Eq. "
                        "4.1 at every action)")
    p.add_argument("--allocator-every", type=positive_int, default=100,
                   help="A_a: placed jobs per allocator reward (Table 4.2: 100)")
    p.add_argument("--selector-reward", choices=SELECTOR_REWARDS, default="average",
                   help="average: Eq. 4.1 (the thesis's); accrued (ours): minus the waiting time "
                        "that accrues as time moves on after the selector's action, so that an "
                        "episode's rewards add up to minus its jobs' total wait; squared (ours): "
                        "the same of the waits' squares (hours squared), which weighs the longest "
                        "waits more")
    p.add_argument("--reserve-after", type=slurm_duration, metavar="AGE",
                   help="ours: train with EASY's reservation for the oldest waiting job once it "
                        "has waited AGE (a Slurm duration: MM, HH:MM:SS, D-HH, ...; 0: always), "
                        "the masks that herasched:MODEL@reserve=AGE reads a model through; the "
                        "model then reads so by default (default: the thesis's masks)")
    p.add_argument("--allocator", dest="place_with", choices=HEURISTIC_ALLOCATORS,
                   metavar="NAME",
                   help="ours: a heuristic allocator (topology, best-fit or first-available, in "
                        "the profile's dialect) places each job the selector picks, as "
                        "herasched:MODEL@allocator=NAME does; only the selector is trained, and "
                        "the model then reads so by default (default: the allocator agent)")
    g = p.add_argument_group("PPO, both agents (defaults: Table 4.2, SB3 where it is silent)")
    g.add_argument("--pi-lr", type=positive_float, default=3e-4,
                   help="the actors' Adam learning rate (3e-4)")
    g.add_argument("--vf-lr", type=positive_float, default=3e-4,
                   help="the critics' Adam learning rate (3e-4)")
    g.add_argument("--update-epochs", type=positive_int, default=10,
                   help="passes over the rollout per update (10)")
    g.add_argument("--minibatch", type=positive_int, default=64,
                   help="decisions per minibatch, one Adam step each (64)")
    g.add_argument("--target-kl", type=nonnegative_float, default=0.0,
                   help="no further pass once a pass's approximate KL to the rollout policy "
                        "exceeds 1.5 x this (0: off, SB3's default)")
    g.add_argument("--clip-ratio", type=positive_float, default=0.2,
                   help="PPO's clip range (0.2)")
    g.add_argument("--ent-coef", type=nonnegative_float, default=0.0,
                   help="entropy bonus of the policy loss (0)")
    p.add_argument("--init", metavar="FILE",
                   help="start from the networks of this HeraSched model file (slim: its actors, "
                        "with new critics), with new optimisers, to train it on this run's trace "
                        "and settings; the same cluster layout, window, tail and network (kept "
                        "with the run)")
    p.add_argument("--imitate", metavar="RULES",
                   help="ours: before the first update, teach the agents a fixed rule's choices "
                        "on the training trace (behaviour cloning), so that PPO starts from that "
                        "rule's schedule: SELECTOR+ALLOCATOR, e.g. first-fit+best-fit (the first "
                        "job of the window that may start, on best-fit's nodes); with --allocator "
                        "the selector's alone (first-fit); update 0 is validated")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--drop-oversized", action="store_true",
                   help="drop jobs that can never run on the cluster (counted) instead of stopping")
    p.add_argument("--threads", type=positive_int, default=1, help="torch threads (1)")
    g = p.add_argument_group("validation")
    g.add_argument("--validate-every", type=int, default=10,
                   help="greedy validation every K updates, keeping best.pt (0: off)")
    g.add_argument("--validate-jobs", type=positive_int, default=2000,
                   help="the trace's last N jobs validate (2000)")
    g.add_argument("--validate-trace",
                   help="validate on this trace's last --validate-jobs jobs instead of the "
                        "training trace's (the protocol's validation period)")
    g.add_argument("--validate-subsets", type=positive_int, default=VALIDATE_SUBSETS, metavar="K",
                   help=f"deal the validated jobs into K interleaved subsets (job i into subset "
                        f"i mod K), score each and take the median, so that one job's wait "
                        f"hardly moves it (default {VALIDATE_SUBSETS}; 1: the span scored whole, "
                        f"the score of runs from before this option, which resume with it)")
    g.add_argument("--validate-also", metavar="TRACE",
                   help="a second validation period, scored whole (e.g. the protocol's "
                        "validation high-load day); the validation score is then the lower of "
                        "the two S, so that best.pt holds on both")
    add_keep_validated(g)

RUN_OPTIONS = ("validate_every", "validate_jobs", "validate_trace", "validate_subsets",
               "validate_also", "init", "imitate")


def cmd_train(args) -> int:
    from hpcsched.agents.herasched import HeraSchedConfig
    from hpcsched.cli.common import option_values
    from hpcsched.experiments.herasched_training import train

    values = option_values(args, given_only=args.resume)
    values.pop("keep_validated", None)  # what to keep, no setting of the run
    epochs = args.epochs
    settings = {k: v for k, v in values.items() if k not in RUN_OPTIONS}
    config = settings if args.resume else HeraSchedConfig(**settings)
    model = train(config, args.out, epochs, resume=args.resume,
                  keep_validated=bool(args.keep_validated),
                  **{k: v for k, v in values.items() if k in RUN_OPTIONS})
    steps = sum(h.get("selector_steps", 0) for h in model.history)
    print(f"{model.epoch} updates, {steps} selector steps; model: {args.out}/model.pt")
    return 0


def evaluate(path, checkpoint: dict, args) -> int:
    """`hpcsched evaluate` of a HeraSched model: beside FCFS, SJF and UNICEP with EASY (`--against`,
    `--backfill`) on its training trace and cluster (`--trace`, `--cluster`), the whole trace
    unless the window options say otherwise, greedy (`--sample`)."""
    from hpcsched.cli.evaluate import chosen_windows, on_windows

    config = checkpoint["config"]
    if args.trace is None and config.get("trace") is None:
        raise ValueError(f"{path} was trained on its cluster's generated high-load day: give the "
                         f"trace to evaluate on with --trace FILE")
    args.cluster = args.cluster or config["cluster"]
    return on_windows(args, path, label=f"herasched:{args.model}",
                      about=f"HeraSched, {config['net']} network, W={checkpoint['norm']['window']}"
                            f" T={checkpoint['norm']['tail']}, trained on {config['cluster']}",
                      trace=config.get("trace"), profile=config.get("profile", "hpcsim"),
                      backfills=["easy"], windows=chosen_windows,
                      against=("fcfs", "sjf", "unicep"))


__all__ = ["add_train_arguments", "cmd_train", "evaluate"]
