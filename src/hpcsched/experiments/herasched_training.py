"""HeraSched's training run: `hpcsched train herasched` is `train(config, out, epochs)`, in a run
folder (`experiments.runfolder`; an epoch is one joint update of both agents, after 2,048 selector
steps).

Validation runs the greedy model on a fixed window of the training trace, its last
`validate_jobs` jobs (all of it when it has fewer), or, with `validate_trace`, on that trace's
last `validate_jobs` jobs (the protocol's validation period, `workload.hera_periods`),
scheduled whole through the engine (`agents.herasched_policy`, as ``herasched:PATH`` runs), and
scores it with the thesis's combined score against FCFS + best-fit with EASY on the same jobs
(the thesis's Deeplearn reference, §6.12): S = AWT_ref / AWT + MWT_ref / MWT, the thesis's
weighing of its two metrics (2: as good as the reference; higher is better), each wait taken as
1 s at least (`floored_score`). best.pt is the update with the highest S; val_wait and
val_max_wait (AWT and MWT, seconds) are logged beside it. The reference's own AWT and MWT are
said at the start.
Which window validates, and which tests, is part of the evaluation protocol (issue 17 part 4).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

#: `train`'s options that shape a run besides its config, with their defaults
RUN_OPTIONS = {"validate_every": 10, "validate_jobs": 2000, "validate_trace": None}
LOG_METRICS = ["wait", "max_wait", "episodes_ended", "selector_steps", "allocator_steps",
               "allocator_loss_pi", "allocator_loss_v", "allocator_kl", "allocator_entropy",
               "forward_share", "forward_with_fit_share", "selector_choice_share",
               "selector_valid", "selector_rewards", "allocator_rewards"]
#: the reference of the validation score: FCFS + best-fit with EASY backfilling
REFERENCE = ("fcfs", "easy")


class HeraValidation:
    """The greedy model on a fixed window of the training trace, against the reference."""

    def __init__(self, config, jobs: int = 2000, trace: str | None = None):
        from hpcsched.envs.herasched import as_herasched_trace
        from hpcsched.policies.priority import get_policy
        from hpcsched.sim.run import simulate

        self.trace = trace
        self.prepared = (config.prepared() if trace is None else
                         as_herasched_trace(trace, config.cluster, config.profile,
                                            drop_oversized=config.drop_oversized))
        n = len(self.prepared.jobs)
        self.jobs = min(int(jobs), n)
        self.start = n - self.jobs
        policy, backfill = REFERENCE
        self.reference = simulate(self.prepared, get_policy(policy, profile=self.prepared.profile),
                                  backfill=backfill, start=self.start, jobs=self.jobs).metrics

    def metrics(self, model) -> dict[str, Any]:
        from hpcsched.agents.herasched_policy import as_policy
        from hpcsched.sim.run import simulate

        return simulate(self.prepared, as_policy(model), start=self.start, jobs=self.jobs).metrics

    def score(self, model) -> float:
        """S of the greedy model against the reference; its AWT and MWT join the latest update's
        statistics (val_wait, val_max_wait)."""
        m = self.metrics(model)
        if model.history:
            model.history[-1].update(val_wait=float(m["wait"]), val_max_wait=float(m["max_wait"]))
        return floored_score(m, self.reference)


def floored_score(metrics, reference) -> float:
    """The combined score S with every wait taken as 1 s at least: a window where the reference
    never waits (a quiet stretch of a trace) still ranks models, where S itself would be 0 for
    all of them."""
    return sum(max(float(reference[k]), 1.0) / max(float(metrics[k]), 1.0)
               for k in ("wait", "max_wait"))


def train(config, out: str | Path, epochs: int, *, resume: bool = False, plot_every: int = 10,
          progress: bool | None = None, log=None, **options):
    """Train (or, with `resume`, continue) the HeraSched run in folder `out` until `epochs`
    updates are done in all; returns the model. `options`: those of `RUN_OPTIONS`
    (`validate_every=0` turns validation and best.pt off)."""
    from hpcsched.agents.herasched import HeraSchedConfig
    from hpcsched.experiments.runfolder import locked_run

    return locked_run(_train, HeraSchedConfig, RUN_OPTIONS, config, out, epochs, resume=resume,
                      plot_every=plot_every, progress=progress, log=log, options=options)


def _train(config, out: Path, epochs: int, *, resume: bool, plot_every: int,
           progress: bool | None, log, options: dict[str, Any]):
    from hpcsched.agents.herasched import HeraSched
    from hpcsched.experiments.runfolder import learn_epochs, open_run
    from hpcsched.experiments.training import LOG_FIRST, LOG_LAST
    from hpcsched.report.plots import training_curve

    say = log or (lambda text: print(text, file=sys.stderr))
    model = open_run(out, config, resume=resume, load=HeraSched.load,
                     create=lambda: HeraSched(config), say=say, options=options,
                     run_options=RUN_OPTIONS,
                     info=lambda c: {"epochs": epochs,
                                     "selector_steps": epochs * c.update_every})
    config, opts = model.config, model.run_options
    validation = (HeraValidation(config, opts["validate_jobs"], opts.get("validate_trace"))
                  if opts["validate_every"] and opts["validate_jobs"] else None)
    if validation is not None and model.epoch == 0:
        ref = validation.reference
        where = validation.trace or "the trace"
        say(f"validation: the last {validation.jobs} jobs of {where}; FCFS + best-fit + EASY "
            f"there: AWT {ref['wait']:,.0f} s, MWT {ref['max_wait']:,.0f} s (S = 2)")

    def note(stats: dict[str, Any]) -> str:
        val = stats.get("val_score")
        text = f"reward {stats['mean_reward']:.3f}"
        if "wait" in stats:
            text += f" AWT {stats['wait']:,.0f} s"
        if val is not None:
            text += (f" val S {val:.3f} (AWT {stats.get('val_wait', 0):,.0f} s, MWT "
                     f"{stats.get('val_max_wait', 0):,.0f} s)")
        return text

    learn_epochs(model, out, epochs, validation=validation, validate_every=opts["validate_every"],
                 key="val_score", improves=lambda v, best: best is None or v > best,
                 start_counts=False, started=lambda score: (
                     f"untrained greedy model: validation S {score:.3f}"),
                 columns=LOG_FIRST + LOG_METRICS + LOG_LAST,
                 label=f"training herasched {config.cluster} ({config.net} network)",
                 note=note,
                 curve=lambda: training_curve(
                     model.history, out / "curve.png", "mean_reward",
                     title=f"HeraSched {config.cluster}: reward per update"),
                 plot_every=plot_every, progress=progress, say=say)
    return model


__all__ = ["HeraValidation", "REFERENCE", "RUN_OPTIONS", "floored_score", "train"]
