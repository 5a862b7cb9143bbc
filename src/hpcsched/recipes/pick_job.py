"""Recipes whose learner is the one PPO (`agents.ppo`) choosing among PickJob's job slots, as
RLScheduler's does. What they share is here, so that a new one is its network, its environment's
wrappers and its PPO configuration, registered by `ppo_recipe` (examples/smallest_job.py; README,
"Add a learned scheduler")::

    @dataclass
    class MyConfig(RLSchedulerConfig):       # RLScheduler's settings and environment, and ...
        def networks(self): ...              # ... my policy and value networks
        def make_env(self, model): ...       # ... my wrappers around the environment

    ppo_recipe(MyConfig, name="mine", prefix="mine", help="...")   # my files' recipe: "mine"

The configuration is PPO's (`agents.ppo.Configuration`) with RLScheduler's environment settings
(`trace`, `slots`, `cutoff`, ...: a subclass of `RLSchedulerConfig` has them)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

from hpcsched.envs import PICK_JOB
from hpcsched.recipes import Command, Recipe, Tiny, register


def train_run(config: type, out: str | Path, epochs: int, *, resume: bool = False,
              given: dict | None = None, progress: bool | None = None, log=None):
    """Train a `config` (with the settings `given` over its defaults) in the run folder `out` until
    `epochs` epochs are done in all, as every trainer's run folder is kept (`experiments.runfolder`:
    the folder held by one training, model.pt after every epoch, log.csv, curve.png of the mean
    reward, a progress bar or a line per epoch); with `resume`, continue the run there (a setting
    given must repeat its own). No validation, so no best.pt: ``PREFIX:DIR`` is its model.pt.
    Returns the model."""
    from hpcsched.agents.ppo import PPO
    from hpcsched.experiments.runfolder import learn_epochs, open_run, run_lock
    from hpcsched.experiments.training import LOG_FIRST, LOG_LAST
    from hpcsched.report.plots import training_curve

    out = Path(out)
    say = log or (lambda text: print(text, file=sys.stderr))

    def create() -> PPO:  # its environments made now: a setting they refuse leaves no run folder
        model = PPO(config(**(given or {})))
        model.env()
        return model

    with run_lock(out, resume=resume):
        model = open_run(out, given if resume else config(**(given or {})), resume=resume,
                         load=PPO.load, create=create, say=say, info=lambda c: {"epochs": epochs})
        learn_epochs(model, out, epochs, validation=None, validate_every=0, key="",
                     improves=lambda a, b: False, start_counts=False, columns=LOG_FIRST + LOG_LAST,
                     label=f"training {out.name}", note=lambda s: f"reward {s['mean_reward']:.4g}",
                     curve=lambda: training_curve(model.history, out / "curve.png", "mean_reward",
                                                  title=out.name),
                     plot_every=10, progress=progress, say=say)
    return model


def ppo_recipe(config: type, *, name: str, prefix: str, help: str, title: str = "",
               profile: str | None = "rlscheduler", epochs: int = 20, **fields) -> Recipe:
    """Register, and return, the recipe `name` of the PPO configuration class `config`:

    - its model files name the recipe (`hpcsched.modelfile`), and `PPO.load` builds a `config` for
      one (`agents.ppo.CONFIGURATIONS`; `recipes.load_learner` reads one as a PPO);
    - ``PREFIX:PATH`` names a model file of it (a run folder: its best.pt, else its model.pt), greedy
      over PickJob's observation with the constants of the trace it schedules, under `profile`
      unless the command names another;
    - ``hpcsched train NAME --out DIR [--epochs N] [--seed S] [--resume]`` trains a `config`
      with its defaults in the run folder DIR (`train_run`);
    - its tiny learner, for the contract every recipe keeps, is a `config` on 4 environments for
      5 epochs, run on the first 256 jobs of its trace.

    `fields`: the `Recipe`'s others (shipped, experiments, evaluation, ...)."""
    from hpcsched.agents.ppo import CONFIGURATIONS, PPO
    from hpcsched.agents.rlscheduler_policy import RLPolicy

    where = (config.__module__, config.__qualname__)
    if tuple(CONFIGURATIONS.get(name, where)) != where:
        raise ValueError(f"recipe {name}: its model files would be read as another "
                         f"configuration's ({'.'.join(CONFIGURATIONS[name])}), not "
                         f"{config.__name__}")
    CONFIGURATIONS[name] = where

    def policy(path, prepared, *, option: str, seed: int, sample: bool, name: str):
        from hpcsched.envs.cores_view import observed_norm

        model = PPO.load(path)
        norm = observed_norm(prepared) if prepared is not None else model.norm
        return RLPolicy.of(model.policy, model.config, norm, sample=sample, seed=seed, name=name)

    def arguments(parser: argparse.ArgumentParser) -> None:
        parser.description = help
        parser.add_argument("--out", required=True, metavar="DIR",
                            help="the run's folder: model.pt (after every epoch), log.csv, "
                                 "curve.png")
        parser.add_argument("--resume", action="store_true",
                            help="continue the run in --out up to --epochs epochs in all")
        parser.add_argument("--epochs", type=int, default=epochs, help=f"default {epochs}")
        parser.add_argument("--seed", type=int, help="default 0")

    def train(args) -> int:
        train_run(config, args.out, args.epochs, resume=args.resume,
                  given={} if args.seed is None else {"seed": args.seed})
        return 0

    def tiny() -> Tiny:
        c = config()
        env = dict(trace=c.trace, profile=c.profile, backfill=c.backfill, metric=c.metric,
                   episode_jobs=c.episode_jobs, slots=c.slots, cutoff=c.cutoff, first=c.first,
                   fairness=c.fairness)
        return Tiny(env=env, trace=c.trace, start=0, jobs=256, backfill=c.backfill,
                    make=lambda env, seed: PPO(replace(c, n_envs=4, trajectories_per_epoch=4,
                                                       seed=seed)),
                    learn=lambda model, env: model.learn(5),
                    policy=lambda model, prepared, name: RLPolicy.of(
                        model.policy, model.config, prepared.report.norm, name=name))

    return register(Recipe(
        name=name, prefix=prefix, env_id=PICK_JOB, load=policy, profile=profile,
        title=title or f"{name} models", usage=f"{prefix}:PATH (a model file, or a run folder)",
        train_command=Command(name, help, arguments, train), tiny=tiny,
        learners={"ppo": PPO}, **fields))


__all__ = ["ppo_recipe", "train_run"]
