"""A training run on disk: `hpcsched train rlscheduler` is `train(config, out, epochs)`.

The run's folder holds

    model.pt     the checkpoint, rewritten (atomically) after every epoch: a crash loses at most
                 the epoch in progress, and `resume=True` continues from it
    best.pt      the checkpoint with the best greedy validation metric so far (with validation)
    log.csv      one row per epoch: mean reward, the epoch's metrics, losses, KL, timings
    curve.png    the training curve (redrawn every few epochs and at the end)
    config.json  the run's settings, readable without torch
    tb/          TensorBoard events, when the tensorboard package is installed

Validation (every `validate_every` epochs) runs the greedy policy on fixed windows drawn from the
training range with their own seed, so that `best.pt` is chosen on the same windows each time, and
clear of the test windows' jobs; the training metric itself is measured with sampled actions on
ever-changing windows and is noisy.
"""

from __future__ import annotations

import csv
import json
import math
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

#: the columns of log.csv, in this order (the epoch's metric keys follow `mean_reward`)
LOG_FIRST = ["epoch", "mean_reward"]
LOG_LAST = ["loss_pi", "loss_v", "kl", "entropy", "clip_fraction", "pi_iters", "decisions",
            "filtered", "rollout_s", "update_s", "epoch_s"]

VALIDATION_SEED = 20_201_115  # the validation windows' draw, different from any test draw


def _metric_key(metric: str) -> str:
    from hpcsched.envs.pick_job import METRICS, check_metric

    return METRICS[check_metric(metric)][0]


#: what validation windows keep clear of: "paper" = the jobs of RLScheduler's test windows (the
#: ten 1024-job windows of `experiment rlscheduler-table5/7/8`), "none" = nothing
VALIDATION_AVOID = ("paper", "none")


class Validation:
    """Greedy runs of the current policy on fixed windows; `score` is the mean metric.

    The windows are drawn (seed `VALIDATION_SEED`) from the training range, among the windows that
    share no job with the test windows (`avoid="paper"`, the default): `best.pt` is never chosen
    on a job the tables are scored on."""

    def __init__(self, config, windows: int, jobs: int, avoid: str = "paper"):
        from hpcsched.envs.pick_job import as_prepared
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
        self.key = _metric_key(config.metric)

    def score(self, model) -> float:
        from hpcsched.agents.checkpoint import RLPolicy
        from hpcsched.sim.run import simulate

        c = self.config
        policy = RLPolicy(model.policy, model.norm, slots=c.slots, cutoff=c.cutoff,
                          fairness=c.features == 9)
        values = [simulate(self.prepared, policy, backfill=c.backfill, start=s,
                           jobs=self.jobs).metrics[self.key] for s in self.starts]
        return float(np.mean(values))


def better(metric: str, a: float, b: float | None) -> bool:
    """Whether validation score a beats b (utilization: higher; every other metric: lower)."""
    if b is None or (isinstance(b, float) and math.isnan(b)):
        return True
    return a > b if metric == "utilization" else a < b


class _TensorBoard:
    def __init__(self, folder: Path):
        self.writer = None
        try:
            from torch.utils.tensorboard import SummaryWriter
        except Exception:  # tensorboard is optional
            return
        self.writer = SummaryWriter(str(folder))

    def log(self, row: dict[str, Any]) -> None:
        if self.writer is None:
            return
        for k, v in row.items():
            if k != "epoch" and isinstance(v, (int, float)) and not isinstance(v, bool):
                self.writer.add_scalar(k, v, row["epoch"])
        self.writer.flush()

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


def _write_log(path: Path, history: list[dict[str, Any]], metric_keys: list[str]) -> None:
    cols = LOG_FIRST + metric_keys + LOG_LAST
    cols += sorted({k for h in history for k in h if k.startswith("val_")})
    tmp = path.with_suffix(".csv.tmp")
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols, extrasaction="ignore")
        w.writeheader()
        for h in history:
            w.writerow({k: h.get(k, "") for k in cols})
    tmp.replace(path)


def open_run(out: Path, config, *, resume: bool, load, create, say):
    """The model of the run folder `out`: with `resume`, the one in its model.pt (its own settings
    win over `config`; the differences are told through `say`), else `create()`, refusing to
    overwrite an existing run. `load(path)` reads a checkpoint; the model has `.config`, `.epoch`."""
    model_path = out / "model.pt"
    if not resume:
        if model_path.exists():
            raise FileExistsError(f"{model_path} exists: pass --resume to continue that run, or "
                                  f"choose another --out")
        return create()
    if not model_path.exists():
        raise FileNotFoundError(f"--resume: no checkpoint at {model_path}")
    model = load(model_path)
    if asdict(model.config) != asdict(config):
        changed = sorted(k for k, v in asdict(config).items()
                         if asdict(model.config).get(k) != v)
        say(f"resuming {model_path} with its own settings (ignoring: {', '.join(changed)})")
    say(f"resumed {model_path} at epoch {model.epoch}")
    return model


def train(config, out: str | Path, epochs: int, *, resume: bool = False,
          validate_every: int = 5, validate_windows: int = 20, validate_jobs: int = 256,
          validate_avoid: str = "paper", plot_every: int = 10, progress: bool | None = None, log=None):
    """Train (or, with `resume`, continue) the run in folder `out` until `epochs` epochs are done in
    all. Returns the PPO model. `validate_every=0` turns validation (and best.pt) off. `log(text)`
    receives a line per event worth telling (default: stderr)."""
    from hpcsched.agents.ppo import PPO
    from hpcsched.report.plots import training_curve
    from hpcsched.report.progress import Progress
    from hpcsched.sim.metrics import METRIC_KEYS

    say = log or (lambda text: print(text, file=sys.stderr))
    out = Path(out)
    model_path = out / "model.pt"
    model = open_run(out, config, resume=resume, load=PPO.load, create=lambda: PPO(config), say=say)
    config = model.config
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(
        {"algorithm": "rlscheduler-ppo", "epochs": epochs, **asdict(config),
         "validation": {"every": validate_every, "windows": validate_windows, "jobs": validate_jobs,
                        "avoid": validate_avoid}}, indent=1) + "\n")

    metric = config.metric
    key = _metric_key(metric)
    validation = (Validation(config, validate_windows, validate_jobs, validate_avoid)
                  if validate_every and validate_windows else None)
    best = None
    for h in model.history:  # a resumed run keeps its best so far
        v = h.get(f"val_{key}")
        if v is not None and better(metric, v, best):
            best = v
    metric_keys = [k for k in METRIC_KEYS if k not in ("first_job_id", "last_job_id")]
    tb = _TensorBoard(out / "tb")
    todo = max(0, epochs - model.epoch)
    warm = config.init != "none"
    if warm and model.epoch == 0 and todo:
        stats = model.warm_start()
        if "from_epoch" in stats:
            say(f"starting from {config.init[len('model:'):]} (epoch {stats['from_epoch']})")
        else:
            say(f"imitated {config.init} on {stats['imitation_decisions']} decisions: the network "
                f"picks {config.init}'s job in {100 * stats['imitation_agreement']:.1f}% of them")
    if validation is not None and model.epoch == 0 and todo:
        model.norm = model.norm or validation.prepared.report.norm
        start = validation.score(model)
        model.history.append({"epoch": 0, f"val_{key}": start})
        if warm:  # the imitating policy is a candidate for best.pt; a random one is not
            best = start
            model.save(out / "best.pt")
        else:
            best = None
        say(f"{'starting' if warm else 'untrained'} greedy policy: validation {key} "
            f"{start:.4g} on {len(validation.starts)} windows of {validation.jobs} jobs")

    def curve() -> None:
        training_curve(model.history, out / "curve.png", key,
                       title=f"{config.trace} {metric} backfill={config.backfill}")

    try:
        with Progress(todo, f"training {config.trace} {metric}", enabled=progress) as bar:
            def after_epoch(stats: dict[str, Any]) -> None:
                nonlocal best
                note = f"reward {stats['mean_reward']:.4g} {key} {stats.get(key, float('nan')):.4g}"
                if validation is not None and (stats["epoch"] % validate_every == 0
                                               or stats["epoch"] == epochs):
                    v = validation.score(model)
                    stats[f"val_{key}"] = v
                    note += f" val {v:.4g}"
                    if better(metric, v, best):
                        best = v
                        model.save(out / "best.pt")
                model.save(model_path)
                _write_log(out / "log.csv", [h for h in model.history if "mean_reward" in h],
                           metric_keys)
                tb.log(stats)
                if plot_every and stats["epoch"] % plot_every == 0:
                    curve()
                bar.note(note)
                bar.update(1)

            model.learn(todo, callback=after_epoch)
    finally:
        tb.close()
        if model.history:
            curve()
    return model


__all__ = ["Validation", "better", "train"]
