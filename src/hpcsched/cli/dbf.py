"""DBF's commands: `train dbf`, and how `evaluate` scores its models; registered by
`hpcsched.recipes.dbf`."""

from __future__ import annotations

import argparse

from hpcsched.cli.common import (add_keep_validated, nonnegative_float, positive_float,
                                 positive_int)

EPILOG_TRAIN = """examples:
  hpcsched train dbf --trace lublin-1 --window 32 --tail 4 --out runs/dbf32
  hpcsched train dbf --out runs/dbf32 --episodes 3200 --resume     # continue that run
  hpcsched train dbf --window 32 --tail 4 --mask --lr 3e-5 --init runs/dbf32/best.pt \\
      --out runs/dbf32-masked                                       # fine-tune it with the mask
  hpcsched compare lublin-1 --policies fcfs,sjf,lcfs,dbf:runs/dbf32 --backfill none,easy \\
      --episodes 100 --jobs 1000                                    # its best.pt, on DBF's test episodes

PPO with the thesis's settings (lr 3e-4, clip 0.2, gamma 0.99, actor and critic MLPs
[1024, 512, 256], minibatches of 128; hpcsched.agents.dbf says what the thesis leaves open and what
is chosen). --num-envs episodes of --episode-jobs placed jobs run side by side from random starts
in the training block of the trace, then one update: an epoch of the run folder. Validation: the
greedy actor's mean AWT on 10 fixed validation episodes (best.pt: the lowest), every
--validate-every updates (--validate-masked: read through the mask, as dbf:PATH@masked is). The
run folder gets model.pt (every update), best.pt, log.csv, curve.png, config.json. --resume
continues with the run's own settings.
"""


def add_train_arguments(p: argparse.ArgumentParser) -> None:
    p.epilog = EPILOG_TRAIN
    p.add_argument("--out", required=True, help="the run's folder")
    p.add_argument("--resume", action="store_true", help="continue the run in --out")
    p.add_argument("--episodes", type=positive_int, default=1600,
                   help="train until this many episodes in all (default 1600)")
    p.add_argument("--trace", default="lublin-1", help="bundled trace name or SWF file")
    p.add_argument("--window", type=positive_int, default=32, help="M, the job slots (32)")
    p.add_argument("--tail", type=int, default=0, help="M_t of them show the newest jobs (0)")
    p.add_argument("--mask", action="store_true",
                   help="mask invalid picks (the thesis does not: an invalid pick is Fwd)")
    p.add_argument("--init", metavar="FILE",
                   help="start from the networks of this DBF model file (slim or full: the same "
                        "trace, window, tail and network), with new optimisers; to fine-tune "
                        "another way, e.g. with --mask (kept with the run)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--num-envs", type=positive_int, default=16,
                   help="episodes side by side, then one update (16)")
    p.add_argument("--episode-jobs", type=positive_int, default=1000,
                   help="an episode ends when this many jobs have started (1000)")
    p.add_argument("--update-epochs", type=positive_int, default=2,
                   help="passes over the episodes' decisions per update (2)")
    p.add_argument("--threads", type=positive_int, default=1, help="torch threads (1)")
    p.add_argument("--device", default="cpu",
                   help="where the updates run: cpu, or cuda on a machine with a GPU (rollouts "
                        "stay on the CPU); not kept with the run, so a resumed run may change it")
    g = p.add_argument_group("what the thesis leaves open (hpcsched.agents.dbf)")
    g.add_argument("--lr", type=positive_float,
                   help="Adam's rate of actor and critic (the thesis: 3e-4)")
    g.add_argument("--ent-coef", type=nonnegative_float, help="entropy bonus (0.01)")
    g.add_argument("--target-kl", type=nonnegative_float,
                   help="no further pass once a pass's approximate KL passes 1.5 x this "
                        "(0: off, the default)")
    g.add_argument("--minibatch", type=positive_int,
                   help="decisions per minibatch (the thesis: 128)")
    g.add_argument("--reward-weights", type=reward_weights, metavar="A1,A2,A3",
                   help="Eq. 3.1's weights of idle machine, queue length and total wait (the "
                        "thesis: 1/3 each), e.g. 0.2,0.6,0.2 to weigh the queue more")
    g = p.add_argument_group("validation")
    g.add_argument("--validate-every", type=int, default=5,
                   help="greedy validation every K updates, keeping best.pt (0: off)")
    g.add_argument("--validate-episodes", type=positive_int, default=10)
    g.add_argument("--validate-masked", action="store_true",
                   help="validate (and choose best.pt) reading the actor through the mask, as "
                        "dbf:PATH@masked does, though it trains without one")
    add_keep_validated(g)


def reward_weights(text: str) -> tuple[float, float, float]:
    """`--reward-weights A1,A2,A3` (fractions allowed: 1/3)."""
    from fractions import Fraction

    from hpcsched.agents.dbf import check_weights

    try:
        parts = [float(Fraction(x.strip())) for x in text.split(",")]
        return check_weights(parts)
    except ZeroDivisionError:
        raise argparse.ArgumentTypeError(f"{text!r}: a division by zero") from None
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"{text!r}: {e}") from None


RUN_OPTIONS = ("validate_every", "validate_episodes", "validate_masked", "init")


def cmd_train(args) -> int:
    from hpcsched.agents.dbf import DBFConfig, epochs_for
    from hpcsched.cli.common import option_values
    from hpcsched.experiments.dbf_training import train

    values = option_values(args, given_only=args.resume)
    values.pop("keep_validated", None)  # what to keep, no setting of the run
    episodes = values.pop("episodes", None) or args.option_defaults["episodes"]
    device = values.pop("device", None) or "cpu"
    settings = {k: v for k, v in values.items() if k not in RUN_OPTIONS and v is not None}
    lr = settings.pop("lr", None)
    if lr is not None:  # the thesis names one rate
        settings["pi_lr"] = settings["vf_lr"] = lr
    if "num_envs" in settings:  # one episode per env, then the update
        settings["trajectories_per_epoch"] = settings["num_envs"]
    if args.resume:
        from hpcsched.agents.ppo import PPO

        per = PPO.load(f"{args.out}/model.pt").config.trajectories_per_epoch
        epochs = max(1, -(-episodes // per))
        config = settings
    else:
        config = DBFConfig(**settings)
        epochs = epochs_for(episodes, config)
    model = train(config, args.out, epochs, resume=args.resume, device=device,
                  keep_validated=bool(args.keep_validated),
                  **{k: v for k, v in values.items() if k in RUN_OPTIONS})
    c = model.config
    print(f"{model.epoch} updates, {model.epoch * c.trajectories_per_epoch} episodes, "
          f"{sum(h.get('decisions', 0) for h in model.history)} steps; model: {args.out}/model.pt")
    return 0


def evaluate(path, checkpoint: dict, args) -> int:
    """`hpcsched evaluate` of a DBF model: beside FCFS, SJF (fewest cores: sqf) and LCFS
    (`--against`) on DBF's 100 test episodes (`--windows N`: the first N of another draw of
    `dbf_starts`), without backfilling (`--backfill`), greedy (`--sample`)."""
    from hpcsched.agents.dbf import load_dbf
    from hpcsched.envs.dbf import as_dbf_trace
    from hpcsched.experiments.dbf_episodes import compare_episodes
    from hpcsched.policies.priority import get_policy
    from hpcsched.report.progress import Progress
    from hpcsched.report.table import format_rows
    from hpcsched.workload.windows import dbf_starts

    config = checkpoint["config"]
    prepared = as_dbf_trace(args.trace or config["trace"])
    jobs = args.jobs or config["episode_jobs"]
    starts = dbf_starts(prepared, "test", args.windows or 100, episode_jobs=jobs)
    against = [a for a in (args.against or ["fcfs", "sqf", "lcfs"]) if a != "none"]
    backfills = args.backfill or ["none"]
    label = f"dbf:{args.model}"
    policies = [(n, get_policy(n)) for n in against]
    policies.append((label, load_dbf(path, prepared=prepared, sample=args.sample,
                                     seed=args.seed or 0, name=label)))
    with Progress(len(policies) * len(backfills) * len(starts), "evaluating") as bar:
        rows = compare_episodes(prepared, policies, backfills, starts, episode_jobs=jobs,
                                progress=bar.update)
    if args.fmt is None:
        print(f"DBF M={config['window']} tail={config['tail']} trained on {config['trace']}; "
              f"{len(starts)} test episodes of {jobs} started jobs (dbf_starts 'test'), mean "
              f"over episodes; sqf = the thesis's SJF (fewest cores)\n")
    print(format_rows(rows, args.fmt or "table"))
    return 0
