"""RLScheduler's training run: `hpcsched train rlscheduler` is `train(config, out, epochs)`, in a
run folder (`experiments.runfolder`: model.pt, best.pt, log.csv, curve.png, config.json, tb/).

Validation (every `validate_every` epochs) runs the greedy policy on fixed windows drawn from the
training range with their own seed, so that `best.pt` is chosen on the same windows each time, and
clear of the test windows' jobs; the training metric itself is measured with sampled actions on
ever-changing windows and is noisy. The validation settings are the run's options (`RUN_OPTIONS`),
kept with it and taken again on resume.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

#: the columns of log.csv, in this order (the epoch's metric keys follow `mean_reward`)
LOG_FIRST = ["epoch", "mean_reward"]
LOG_LAST = ["loss_pi", "loss_v", "kl", "entropy", "clip_fraction", "pi_iters", "decisions",
            "filtered", "rollout_s", "update_s", "epoch_s"]

VALIDATION_SEED = 20_201_115  # the validation windows' draw, different from any test draw

#: the options of `train` that shape a run besides its config, with their defaults; they are kept
#: with the run (model.pt's "run_options", config.json) and a resumed run takes them from there.
#: A new validation option is added by listing it here (and passing it on to `Validation`).
RUN_OPTIONS: dict[str, Any] = {"validate_every": 5, "validate_windows": 20, "validate_jobs": 256,
                               "validate_avoid": "paper"}

#: what validation windows keep clear of: "paper" = the jobs of RLScheduler's test windows (the
#: ten 1024-job windows of `experiment rlscheduler-table5/7/8`), "none" = nothing
VALIDATION_AVOID = ("paper", "none")


class Validation:
    """Greedy runs of the current policy on fixed windows; `score` is the mean metric.

    The windows are drawn (seed `VALIDATION_SEED`) from the training range, among the windows that
    share no job with the test windows (`avoid="paper"`, the default): `best.pt` is never chosen
    on a job the tables are scored on."""

    def __init__(self, config, windows: int, jobs: int, avoid: str = "paper"):
        from hpcsched.envs.pick_job import metric_key
        from hpcsched.sim.run import as_prepared
        from hpcsched.workload.windows import disjoint_windows, paper_test_jobs

        if avoid not in VALIDATION_AVOID:
            raise ValueError(f"validation avoid {avoid!r}: choose {' or '.join(VALIDATION_AVOID)}")
        self.config = config
        self.prepared = as_prepared(config.trace, config.profile)
        n = len(self.prepared.jobs)
        first = min(config.first or n, n)
        jobs = min(jobs, first)
        self.avoided = paper_test_jobs(n) if avoid == "paper" else []
        self.starts = disjoint_windows(n, windows, jobs, first=first, avoid=self.avoided,
                                       seed=VALIDATION_SEED)
        self.jobs = jobs
        self.key = metric_key(config.metric)

    def score(self, model) -> float:
        from hpcsched.agents.rlscheduler_policy import RLPolicy
        from hpcsched.sim.run import simulate

        policy = RLPolicy.of(model.policy, self.config, model.norm)
        values = [simulate(self.prepared, policy, backfill=self.config.backfill, start=s,
                           jobs=self.jobs).metrics[self.key] for s in self.starts]
        return float(np.mean(values))


def better(metric: str, a: float, b: float | None) -> bool:
    """Whether validation score a beats b (utilization: higher; every other metric: lower)."""
    if b is None or (isinstance(b, float) and math.isnan(b)):
        return True
    return a > b if metric == "utilization" else a < b


def train(config, out: str | Path, epochs: int, *, resume: bool = False, plot_every: int = 10,
          progress: bool | None = None, log=None, **options):
    """Train (or, with `resume`, continue: `runfolder.open_run`) the run in folder `out` until
    `epochs` epochs are done in all; returns the PPO model. `log(text)` receives a line per event
    worth telling (default: stderr). `options`: the run options of `RUN_OPTIONS` (validation:
    `validate_every` epochs, 0 turning validation and best.pt off; `validate_windows` windows of
    `validate_jobs` jobs, clear of the test windows' jobs with `validate_avoid="paper"`)."""
    from hpcsched.agents.rlscheduler import RLSchedulerConfig
    from hpcsched.experiments.runfolder import locked_run

    return locked_run(_train, RLSchedulerConfig, RUN_OPTIONS, config, out, epochs, resume=resume,
                      plot_every=plot_every, progress=progress, log=log, options=options)


def _train(config, out: Path, epochs: int, *, resume: bool, plot_every: int,
           progress: bool | None, log, options: dict[str, Any]):
    from hpcsched.agents.ppo import PPO
    from hpcsched.agents.rlscheduler import warm_start
    from hpcsched.envs.pick_job import metric_key
    from hpcsched.experiments.runfolder import learn_epochs, open_run
    from hpcsched.report.plots import training_curve
    from hpcsched.sim.metrics import METRIC_KEYS

    say = log or (lambda text: print(text, file=sys.stderr))

    def create() -> PPO:  # its environments made now: a setting they refuse leaves no run folder
        model = PPO(config)
        model.env()
        return model

    model = open_run(out, config, resume=resume, load=PPO.load, create=create,
                     say=say, options=options, run_options=RUN_OPTIONS,
                     info=lambda c: {"algorithm": "rlscheduler-ppo", "epochs": epochs})
    config, opts = model.config, model.run_options
    metric = config.metric
    key = metric_key(metric)
    validation = (Validation(config, opts["validate_windows"], opts["validate_jobs"],
                             opts["validate_avoid"])
                  if opts["validate_every"] and opts["validate_windows"] else None)
    warm = config.init != "none"
    if warm and model.epoch == 0 and epochs > 0:
        stats = warm_start(model)
        if "from_epoch" in stats:
            say(f"starting from {config.init[len('model:'):]} (epoch {stats['from_epoch']})")
        else:
            say(f"imitated {config.init} on {stats['imitation_decisions']} decisions: the network "
                f"picks {config.init}'s job in {100 * stats['imitation_agreement']:.1f}% of them")
    if validation is not None:
        model.norm = model.norm or validation.prepared.report.norm

    def note(stats: dict[str, Any]) -> str:
        val = f" val {stats[f'val_{key}']:.4g}" if f"val_{key}" in stats else ""
        return f"reward {stats['mean_reward']:.4g} {key} {stats.get(key, float('nan')):.4g}{val}"

    # the imitating policy is a candidate for best.pt; a random one is not
    learn_epochs(model, out, epochs, validation=validation, validate_every=opts["validate_every"],
                 key=f"val_{key}", improves=lambda a, b: better(metric, a, b), start_counts=warm,
                 started=lambda score: (
                     f"{'starting' if warm else 'untrained'} greedy policy: validation {key} "
                     f"{score:.4g} on {len(validation.starts)} windows of {validation.jobs} jobs"),
                 columns=LOG_FIRST + [k for k in METRIC_KEYS if k not in (
                     "first_job_id", "last_job_id")] + LOG_LAST,
                 label=f"training {config.trace} {metric}", note=note, curve=lambda: training_curve(
                     model.history, out / "curve.png", key,
                     title=f"{config.trace} {metric} backfill={config.backfill}"),
                 plot_every=plot_every, progress=progress, say=say)
    return model


__all__ = ["RUN_OPTIONS", "Validation", "better", "train"]
