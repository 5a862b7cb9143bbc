"""SchedInspector's training run: `hpcsched train inspector` is `train(config, out, epochs)`, in a
run folder (`experiments.runfolder`; best.pt: the best greedy validation improvement).

Validation runs the greedy inspector on fixed windows of the training part of the trace (drawn
with their own seed) and scores the mean relative improvement over the base heuristic on them, in
the paper's form ((base - inspected) / base; higher is better).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

VALIDATION_SEED = 20_220_627  # the validation windows' draw (HPDC'22), unlike any test draw
#: `train`'s options that shape a run besides its config, with their defaults (kept with the run,
#: see `experiments.training.RUN_OPTIONS`)
RUN_OPTIONS = {"validate_every": 5, "validate_windows": 10, "validate_jobs": 256}
LOG_METRICS = ["improvement", "bsld", "base_bsld", "wait", "base_wait", "utilization",
               "base_utilization", "rejection_ratio", "inspections", "rejections"]


class InspectorValidation:
    """Greedy inspected runs against the pure base heuristic on fixed training-part windows.

    The windows share no job with the test windows of `experiment schedinspector-table4`: the
    authors' 50 windows of 256 jobs drawn over the whole trace (`schedinspector_windows`), and
    ours, which lie in the test part after `train_fraction`."""

    def __init__(self, config, windows: int = 10, jobs: int = 256):
        from hpcsched.policies.priority import get_policy
        from hpcsched.sim.run import estimated_trace
        from hpcsched.workload.windows import (covered, disjoint_windows, schedinspector_windows,
                                               split_point)

        self.config = config
        self.prepared = estimated_trace(config.trace, config.estimate, config.profile)
        n = len(self.prepared.jobs)
        cut = split_point(n, config.train_fraction)
        self.jobs = min(jobs, cut)
        self.avoided = covered(schedinspector_windows(n), 256) if n > 256 else []
        self.starts = disjoint_windows(n, windows, self.jobs, first=cut, avoid=self.avoided,
                                       seed=VALIDATION_SEED)
        self.base = get_policy(config.base, profile=self.prepared.profile)
        self._base_values = [self._run(self.base, s) for s in self.starts]

    def _run(self, policy, start: int) -> float:
        from hpcsched.envs.inspection import METRICS
        from hpcsched.sim.run import simulate

        key = METRICS[self.config.metric][0]
        return simulate(self.prepared, policy, backfill=self.config.backfill, start=start,
                        jobs=self.jobs).metrics[key]

    def score(self, model) -> float:
        from hpcsched.agents.inspector_policy import InspectedPolicy
        from hpcsched.envs.inspection import METRICS
        from hpcsched.envs.inspector import improvement

        policy = InspectedPolicy.of(model.policy, self.base, self.prepared.report.norm,
                                    self.config)
        sign = METRICS[self.config.metric][1]
        return float(np.mean([improvement(self._run(policy, s), b, sign, "paper")
                              for s, b in zip(self.starts, self._base_values)]))


def train(config, out: str | Path, epochs: int, *, resume: bool = False, plot_every: int = 10,
          progress: bool | None = None, log=None, **options):
    """Train (or, with `resume`, continue: `runfolder.open_run`) the run in folder `out` until
    `epochs` epochs are done in all; returns the model. `options`: those of `RUN_OPTIONS`
    (`validate_every=0` turns validation and best.pt off)."""
    from hpcsched.agents.inspector import InspectorConfig
    from hpcsched.experiments.runfolder import locked_run

    return locked_run(_train, InspectorConfig, RUN_OPTIONS, config, out, epochs, resume=resume,
                      plot_every=plot_every, progress=progress, log=log, options=options)


def _train(config, out: Path, epochs: int, *, resume: bool, plot_every: int,
           progress: bool | None, log, options: dict[str, Any]):
    from hpcsched.agents.inspector import fit_rule
    from hpcsched.agents.ppo import PPO
    from hpcsched.experiments.runfolder import learn_epochs, open_run
    from hpcsched.experiments.training import LOG_FIRST, LOG_LAST
    from hpcsched.report.plots import training_curve

    say = log or (lambda text: print(text, file=sys.stderr))

    def create() -> PPO:  # its environments made now: a setting they refuse leaves no run folder
        model = PPO(config)
        model.env()
        if config.init_rule:
            fit = fit_rule(model)
            say(f"policy fitted to the {config.init_rule} rule: agreement "
                f"{100 * fit['imitation_agreement']:.1f}% on {config.init_episodes} episodes")
        return model

    model = open_run(out, config, resume=resume, load=PPO.load, create=create, say=say,
                     options=options, run_options=RUN_OPTIONS,
                     info=lambda c: {"algorithm": "schedinspector-ppo", "epochs": epochs})
    config, opts = model.config, model.run_options
    validation = (InspectorValidation(config, opts["validate_windows"], opts["validate_jobs"])
                  if opts["validate_every"] and opts["validate_windows"] else None)

    def note(stats: dict[str, Any]) -> str:
        val = stats.get("val_improvement")
        return (f"reward {stats['mean_reward']:.3f} rejections "
                f"{100 * stats.get('rejection_ratio', 0):.0f}%"
                + ("" if val is None else f" val {100 * val:.1f}%"))

    # the untrained inspector's epoch-0 score is no candidate for best.pt
    learn_epochs(model, out, epochs, validation=validation, validate_every=opts["validate_every"],
                 key="val_improvement", improves=lambda v, best: best is None or v > best,
                 start_counts=False, started=lambda score: (
                     f"untrained greedy inspector: validation improvement over {config.base} "
                     f"{100 * score:.1f}% on {len(validation.starts)} windows of "
                     f"{validation.jobs} jobs"),
                 columns=LOG_FIRST + LOG_METRICS + LOG_LAST,
                 label=f"training inspector {config.trace}/{config.base}", note=note,
                 curve=lambda: training_curve(
                     model.history, out / "curve.png", "improvement",
                     title=f"{config.trace} {config.base} {config.metric} "
                           f"backfill={config.backfill}: improvement over the base"),
                 plot_every=plot_every, progress=progress, say=say)
    return model


__all__ = ["InspectorValidation", "RUN_OPTIONS", "VALIDATION_SEED", "train"]
