"""DBF's training run: `hpcsched train dbf` is `train(config, out, epochs)`, in a run folder
(`experiments.runfolder`; an epoch is one PPO update after `num_envs` parallel episodes).

Validation runs the greedy actor on DBF's fixed validation episodes
(`workload.windows.dbf_starts(trace, "validation")`: 10 starts in a block of the trace that
neither training nor the test starts touch), all at once on `VecDBF`, and scores their mean
average waiting time (AWT, the thesis's first metric; lower is better): best.pt is the update with
the lowest. The heuristics' AWT on the same episodes is said once at the start, for reference.
With the run option `validate_masked` an actor trained without the mask is validated through it
(as `dbf:PATH@masked` reads it): without a mask the greedy actor of a short run can keep picking a
job that does not fit, which waits like FCFS, so the unmasked score then says little about the
model that would be used.

The run option `init` (`--init FILE`) starts a new run from the networks of another DBF model file
(`warm_start`), with new optimisers: to fine-tune a model in another way than it was trained (with
the mask, a lower rate). Its starting actor is then validated before the first update and may be
best.pt itself, if no update improves on it.
"""

from __future__ import annotations

import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

#: `train`'s options that shape a run besides its config, with their defaults
RUN_OPTIONS = {"validate_every": 5, "validate_episodes": 10, "validate_masked": False,
               "init": ""}
#: the settings a warm start's file must share with the run: what the networks read and are
WARM_SHARED = ("trace", "window", "tail", "hidden", "activation")
LOG_METRICS = ["wait", "bsld", "utilization", "queue_length", "job_load"]
#: the heuristics whose validation AWT is said at the start (the thesis's baselines)
REFERENCE = ("fcfs", "sqf", "lcfs")


class DbfValidation:
    """The greedy actor on fixed validation episodes, all stepped together; `masked`: through the
    mask of ``mask=True`` whatever the training (a masked run is validated through it anyway)."""

    def __init__(self, config, episodes: int = 10, masked: bool = False):
        from hpcsched.envs.dbf import as_dbf_trace
        from hpcsched.workload.windows import dbf_starts

        self.config = config
        self.mask = bool(config.mask or masked)
        self.prepared = as_dbf_trace(config.trace)
        self.starts = dbf_starts(self.prepared, "validation", episodes,
                                 episode_jobs=config.episode_jobs)

    def episodes(self, model) -> list[dict[str, Any]]:
        """Each validation episode's metrics under `model`'s greedy actor."""
        from hpcsched.envs.dbf_vec import VecDBF

        c = self.config
        n = len(self.starts)
        vec = VecDBF(n, self.prepared, window=c.window, tail=c.tail,
                     episode_jobs=c.episode_jobs, lookahead=c.lookahead, mask=self.mask, copy=False)
        obs, mask = vec.reset(seed=0, options={"starts": self.starts})
        found: list[dict[str, Any] | None] = [None] * n
        while any(f is None for f in found):
            obs, mask, _, done, infos = vec.step(model.predict(obs, mask))
            for i in np.flatnonzero(done):
                if found[i] is None:
                    found[i] = infos[i]["metrics"]
        return found

    def score(self, model) -> float:
        return float(np.mean([m["wait"] for m in self.episodes(model)]))

    def reference(self, names=REFERENCE) -> dict[str, float]:
        """The mean AWT of each heuristic (no backfilling) on the validation episodes."""
        from hpcsched.experiments.dbf_episodes import run_episode
        from hpcsched.policies.priority import get_policy

        return {name: float(np.mean([run_episode(self.prepared, get_policy(name), s,
                                                 episode_jobs=self.config.episode_jobs,
                                                 lookahead=self.config.lookahead)["wait"]
                                     for s in self.starts])) for name in names}


def train(config, out: str | Path, epochs: int, *, resume: bool = False, plot_every: int = 10,
          progress: bool | None = None, log=None, keep_validated: bool = False,
          device: str = "cpu", **options):
    """Train (or, with `resume`, continue) the DBF run in folder `out` until `epochs` updates are
    done in all; returns the model. `options`: those of `RUN_OPTIONS` (`validate_every=0` turns
    validation and best.pt off). `keep_validated`: a copy of model.pt at every validated update
    too (`runfolder.kept_path`). `device`: where the updates run (`PPO.to`)."""
    from hpcsched.agents.dbf import DBFConfig
    from hpcsched.experiments.runfolder import locked_run

    return locked_run(_train, DBFConfig, RUN_OPTIONS, config, out, epochs, resume=resume,
                      plot_every=plot_every, progress=progress, log=log, options=options,
                      keep_validated=keep_validated, device=device)


def warm_start(model, path) -> tuple[int, bool]:
    """Load the actor's and the critic's weights of the DBF model file `path` into the new
    `model`, whose optimisers, epoch and history stay new; returns the file's epoch and whether
    it had a critic (a slim file keeps the actor alone: the critic then starts new). The
    file must share `WARM_SHARED` with the run (else `ValueError` naming the settings), since
    those fix what the networks read and their shapes; the rest (the mask, the rate, the
    entropy bonus...) may differ: that is what a warm start is for."""
    from hpcsched.agents.ppo import recipe_of
    from hpcsched.experiments.runfolder import warm_refusal
    from hpcsched.modelfile import read_model, restore_state

    ck = read_model(path, recipe=recipe_of(model.config))
    ours = asdict(model.config)
    problem = warm_refusal(path, ck["config"], {k: ours[k] for k in WARM_SHARED})
    if problem:
        raise ValueError(problem)
    restore_state(path, model.policy, ck["weights"], "policy")
    critic = "value" in ck["weights"]
    if critic:
        restore_state(path, model.value, ck["weights"], "value")
    return int(ck["epoch"]), critic


def _train(config, out: Path, epochs: int, *, resume: bool, plot_every: int,
           progress: bool | None, log, options: dict[str, Any],
           keep_validated: bool = False, device: str = "cpu"):
    from hpcsched.agents.ppo import PPO
    from hpcsched.experiments.runfolder import learn_epochs, open_run
    from hpcsched.experiments.training import LOG_FIRST, LOG_LAST
    from hpcsched.report.plots import training_curve

    say = log or (lambda text: print(text, file=sys.stderr))
    model = open_run(out, config, resume=resume, load=PPO.load, create=lambda: PPO(config),
                     say=say, options=options, run_options=RUN_OPTIONS,
                     info=lambda c: {"epochs": epochs, "episodes": epochs * c.trajectories_per_epoch})
    config, opts = model.config, model.run_options
    if opts.get("init") and not resume:  # a new run: epoch 0
        epoch, critic = warm_start(model, opts["init"])
        say(f"starting from the {'networks' if critic else 'actor'} of {opts['init']} (its "
            f"update {epoch}; {'' if critic else 'a new critic, '}new optimisers)")
    model.to(device)
    validation = (DbfValidation(config, opts["validate_episodes"],
                                masked=opts.get("validate_masked", False))
                  if opts["validate_every"] and opts["validate_episodes"] else None)
    if validation is not None and model.epoch == 0:
        ref = validation.reference()
        say("validation AWT of the heuristics (no backfilling) on "
            f"{len(validation.starts)} episodes: "
            + ", ".join(f"{k} {v:,.0f} s" for k, v in ref.items()))

    if validation is not None and validation.mask and not config.mask and model.epoch == 0:
        say("validating the actor through the mask (as dbf:PATH@masked reads it)")

    def note(stats: dict[str, Any]) -> str:
        val = stats.get("val_wait")
        return (f"return {stats['mean_reward']:.1f} AWT {stats.get('wait', 0):,.0f} s"
                + ("" if val is None else f" val AWT {val:,.0f} s"))

    learn_epochs(model, out, epochs, validation=validation, validate_every=opts["validate_every"],
                 key="val_wait", improves=lambda v, best: best is None or v < best,
                 start_counts=bool(opts.get("init")), started=lambda score: (
                     f"{'starting' if opts.get('init') else 'untrained'} greedy actor: "
                     f"validation AWT {score:,.0f} s"),
                 columns=LOG_FIRST + LOG_METRICS + LOG_LAST,
                 label=f"training dbf {config.trace} M={config.window} tail={config.tail}",
                 note=note,
                 curve=lambda: training_curve(
                     model.history, out / "curve.png", "wait",
                     title=f"DBF {config.trace} M={config.window} tail={config.tail}: AWT"),
                 plot_every=plot_every, progress=progress, say=say,
                 keep_validated=keep_validated)
    return model


__all__ = ["DbfValidation", "REFERENCE", "RUN_OPTIONS", "WARM_SHARED", "train",
           "warm_start"]
