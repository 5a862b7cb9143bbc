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
1 s at least (`floored_score`), in subsets (below). best.pt is the update with the highest
validation score; val_wait and val_max_wait (AWT and MWT, seconds) are logged beside it. The
reference's own AWT and MWT are said at the start.
Which window validates, and which tests, is part of the evaluation protocol (issue 17 part 4).
With `validate_also` (a second trace: the protocol's validation high-load day) the model is also
run on the whole of that period, scored whole against the same reference, and the validation score
is the lower of the two S (`PairedValidation`): on Physical, the validation day alone chose models
that serve a light day and starve the high-load test day (README, "The shipped Physical models").

The run option `init` (`--init FILE`) starts a new run from the four networks of another HeraSched
model file (`warm_start`; a slim file has the actors alone, and the critics then start new), with
new optimisers and the run's own trace and settings: to train a model on more, or other, data than
it was trained on. Its starting model is validated before the first update and may be best.pt
itself, if no update improves on it.

**Subsets** (`validate_subsets`, K, default 4). Half of S is one job's wait, so a single job held
a day longer moves S by 0.84 on average (up to 1.5) on Deeplearn's validation period, between two
updates that schedule everything else alike, and best.pt is chosen by that job. With K, the
validated jobs are dealt into K disjoint subsets, job i of the span into subset i mod K; each
subset's AWT and MWT are those of its jobs in the one run of the span (the schedule K = 1 scores:
its AWT and MWT are still val_wait and val_max_wait), each subset gets its own S against the
reference's waits on the same jobs, and the validation score is the median of the K scores. A
starved job sits in one subset and moves the median only as far as it moves that subset's rank; a
model that starves jobs in most subsets loses in the median.

Why interleaved subsets and not K consecutive windows: on the protocol's validation periods the
reference waits in one stretch only (in 4 consecutive windows its AWT is 0, 0, 0 and 318 s on
Deeplearn's, 0, 0, 925 and 0 s on CERIT-SC's), so most windows have no wait to compare with, and
a ratio against a reference that never waits (the 1 s floor) makes one job's ten minutes in the
queue move the mean of the windows' S by 0.09 and 0.16, 30 to 65 times what they move S of the
whole span. Every interleaved subset holds a share of the busy stretch, so each is a small copy
of the whole span and one job's ten minutes move the median as little as they move S. Why the
median and not the mean: S is a ratio, unbounded above, and a subset where a model happens to keep
its largest wait short scores far above 2; the mean follows that one subset, the median does not.
Why K = 4: in `benchmarks/herasched_validation_subsets.py` (the 21 heuristic cells stand in for
21 models), one random job waiting a day longer moves the score by 0.27 (Deeplearn) and 0.16
(CERIT-SC) on average with 4 subsets, against 0.84 and 0.66 for the whole span, while the score
still spreads the cells as widely (sd 0.53 and 1.12, against 0.41 and 1.16); 8 subsets move less
on Deeplearn (0.11) but more on CERIT-SC (0.43), whose 336-job subsets are small enough for a cell
to keep one subset's largest wait short (S up to 8.1). At the default 2,000 validated jobs a subset
has 500. K = 1 is the score of runs written before the option existed, which resume with it
(`runfolder.resumed_options`' legacy values). Each subset's S is logged as val_score_s1 ..
val_score_sK.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

#: `train`'s options that shape a run besides its config, with their defaults
RUN_OPTIONS = {"validate_every": 10, "validate_jobs": 2000, "validate_trace": None,
               "validate_subsets": 4, "validate_also": None, "init": None, "imitate": None}
#: the settings a warm start's file must share with the run besides the observation's layout
#: (`HeraSched.norm`: window, tail, nodes, numbers observed): the networks' family and sizes
WARM_SHARED = ("net", "hidden", "width")
#: what a run written before an option existed had in effect: the span scored whole
LEGACY_OPTIONS = {"validate_subsets": 1}
#: "every job" of a validation period (HeraValidation validates at most the period's own count)
ALL_JOBS = 10 ** 9
LOG_METRICS = ["wait", "max_wait", "episodes_ended", "selector_steps", "allocator_steps",
               "allocator_loss_pi", "allocator_loss_v", "allocator_kl", "allocator_entropy",
               "forward_share", "forward_with_fit_share", "selector_choice_share",
               "selector_valid", "selector_rewards", "allocator_rewards"]
#: the reference of the validation score: FCFS + best-fit with EASY backfilling
REFERENCE = ("fcfs", "easy")


class HeraValidation:
    """The greedy model on a fixed span of a trace, in `subsets` interleaved subsets, against the
    reference."""

    def __init__(self, config, jobs: int = 2000, trace: str | None = None, subsets: int = 1):
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
        self.subsets = int(subsets)
        if not 1 <= self.subsets <= self.jobs:
            raise ValueError(f"validate_subsets {subsets}: the {self.jobs} validated jobs of "
                             f"{trace or 'the training trace'} make 1 to {self.jobs} subsets")
        policy, backfill = REFERENCE
        result = simulate(self.prepared, get_policy(policy, profile=self.prepared.profile),
                          backfill=backfill, start=self.start, jobs=self.jobs)
        self.reference = result.metrics
        self.reference_subsets = self.split(result)

    def split(self, result) -> list[dict[str, float]]:
        """Each subset's `wait` (AWT) and `max_wait` (MWT) in `result`, a run of the validated
        span; with one subset, the run's own metrics."""
        if self.subsets == 1:
            return [result.metrics]
        return subset_waits(result.jobs.submit, result.start, self.subsets)

    def run(self, model):
        """The greedy model's run of the validated span (`sim.Result`)."""
        from hpcsched.agents.herasched_policy import as_policy
        from hpcsched.sim.run import simulate

        return simulate(self.prepared, as_policy(model), start=self.start, jobs=self.jobs)

    def metrics(self, model) -> dict[str, Any]:
        return self.run(model).metrics

    def scores(self, model) -> tuple[list[float], dict[str, Any]]:
        """S of the greedy model against the reference in each subset, and the metrics of its
        run of the whole span."""
        result = self.run(model)
        return subset_scores(self.split(result), self.reference_subsets), result.metrics

    def score(self, model) -> float:
        """The validation score: the median over the subsets of S against the reference; the
        whole span's AWT and MWT (val_wait, val_max_wait) and, with several subsets, each
        subset's S (val_score_s1, ...) join the latest update's statistics."""
        scores, m = self.scores(model)
        if model.history:
            stats = {"val_wait": float(m["wait"]), "val_max_wait": float(m["max_wait"])}
            if self.subsets > 1:
                width = len(str(self.subsets))
                stats.update({f"val_score_s{i + 1:0{width}d}": v for i, v in enumerate(scores)})
            model.history[-1].update(stats)
        return validation_score(scores)


def subset_waits(submit: np.ndarray, start: np.ndarray, subsets: int) -> list[dict[str, float]]:
    """Per subset k of a run's rows (rows k, k + K, k + 2K, ...; K = `subsets`): the mean and the
    largest wait of its jobs that started (`wait`, `max_wait`, as `sim.metrics.schedule_metrics`
    counts them), and how many started; a subset none of whose jobs started waits without end."""
    out = []
    for k in range(subsets):
        begun = np.isfinite(start[k::subsets])
        w = start[k::subsets][begun] - submit[k::subsets][begun]
        out.append({"wait": float(np.mean(w)) if w.size else math.inf,
                    "max_wait": float(np.max(w)) if w.size else math.inf,
                    "jobs": int(w.size)})
    return out


def subset_scores(subsets: list[dict], references: list[dict]) -> list[float]:
    """`floored_score` of each subset against the reference's same subset."""
    if len(subsets) != len(references):
        raise ValueError(f"{len(subsets)} subsets against {len(references)} of the reference")
    return [floored_score(w, r) for w, r in zip(subsets, references)]


class PairedValidation:
    """Validation on two periods (`validate_also`): the first as its `HeraValidation` scores it,
    the second (the protocol's validation high-load day, say) whole, in one subset, against the
    same reference; the score is the lower of the two S, so that best.pt has to hold on both. The
    second's S, AWT and MWT join the update's statistics as val_also_score, val_also_wait and
    val_also_max_wait (val_score is the lower S; val_wait and val_max_wait stay the first's)."""

    def __init__(self, first: HeraValidation, also: HeraValidation):
        self.first, self.also = first, also

    def score(self, model) -> float:
        first = self.first.score(model)
        scores, m = self.also.scores(model)
        also = validation_score(scores)
        if model.history:
            model.history[-1].update({"val_first_score": first, "val_also_score": also,
                                      "val_also_wait": float(m["wait"]),
                                      "val_also_max_wait": float(m["max_wait"])})
        return min(first, also)


def validation_score(scores: list[float]) -> float:
    """The subsets' scores as one: their median (the score itself for one subset)."""
    return float(np.median(scores))


def floored_score(metrics, reference) -> float:
    """The combined score S with every wait taken as 1 s at least: a window where the reference
    never waits (a quiet stretch of a trace) still ranks models, where S itself would be 0 for
    all of them."""
    return sum(max(float(reference[k]), 1.0) / max(float(metrics[k]), 1.0)
               for k in ("wait", "max_wait"))


def train(config, out: str | Path, epochs: int, *, resume: bool = False, plot_every: int = 10,
          progress: bool | None = None, log=None, keep_validated: bool = False, **options):
    """Train (or, with `resume`, continue) the HeraSched run in folder `out` until `epochs`
    updates are done in all; returns the model. `options`: those of `RUN_OPTIONS`
    (`validate_every=0` turns validation and best.pt off); `keep_validated`: a copy
    of model.pt at every validated update too (`runfolder.kept_path`)."""
    from hpcsched.agents.herasched import HeraSchedConfig
    from hpcsched.experiments.runfolder import locked_run

    return locked_run(_train, HeraSchedConfig, RUN_OPTIONS, config, out, epochs, resume=resume,
                      plot_every=plot_every, progress=progress, log=log, options=options,
                      keep_validated=keep_validated)


def _train(config, out: Path, epochs: int, *, resume: bool, plot_every: int,
           progress: bool | None, log, options: dict[str, Any],
           keep_validated: bool = False):
    from hpcsched.agents.herasched import HeraSched
    from hpcsched.experiments.runfolder import learn_epochs, open_run
    from hpcsched.experiments.training import LOG_FIRST, LOG_LAST
    from hpcsched.report.plots import training_curve

    say = log or (lambda text: print(text, file=sys.stderr))
    if options.get("imitate") and not resume:  # refused before the run folder is made
        from hpcsched.agents.herasched_imitation import parse_rules

        if options.get("init"):
            raise ValueError("--init FILE and --imitate RULES are two warm starts: give one")
        parse_rules(options["imitate"], config.place_with)
    model = open_run(out, config, resume=resume, load=HeraSched.load,
                     create=lambda: HeraSched(config), say=say, options=options,
                     run_options=RUN_OPTIONS, legacy_options=LEGACY_OPTIONS,
                     info=lambda c: {"epochs": epochs,
                                     "selector_steps": epochs * c.update_every})
    config, opts = model.config, model.run_options
    if opts.get("init") and not resume:  # a new run: epoch 0
        epoch, critics = warm_start(model, opts["init"])
        say(f"starting from the {'networks' if critics else 'actors'} of {opts['init']} (its "
            f"update {epoch}; {'' if critics else 'new critics, '}new optimisers)")
    if opts.get("imitate") and not resume:
        from hpcsched.agents.herasched_imitation import describe, imitate

        say(describe(imitate(model, opts["imitate"])))
    started = bool(opts.get("init") or opts.get("imitate"))
    validation = (HeraValidation(config, opts["validate_jobs"], opts.get("validate_trace"),
                                 opts["validate_subsets"])
                  if opts["validate_every"] and opts["validate_jobs"] else None)
    if validation is not None and opts.get("validate_also"):
        validation = PairedValidation(validation, HeraValidation(config, ALL_JOBS,
                                                                 opts["validate_also"], 1))
    if validation is not None and model.epoch == 0:
        say(validation_plan(validation))

    def note(stats: dict[str, Any]) -> str:
        val = stats.get("val_score")
        text = f"reward {stats['mean_reward']:.3f}"
        if "wait" in stats:
            text += f" AWT {stats['wait']:,.0f} s"
        if val is not None:
            text += (f" val S {val:.3f} (AWT {stats.get('val_wait', 0):,.0f} s, MWT "
                     f"{stats.get('val_max_wait', 0):,.0f} s")
            per = [v for k, v in stats.items() if k.startswith("val_score_s")]
            if per:
                text += f"; subsets {min(per):.2f}-{max(per):.2f}"
            text += ")"
            if "val_also_score" in stats:
                text += (f", {stats['val_first_score']:.3f} there and {stats['val_also_score']:.3f}"
                         f" on the second period (AWT {stats['val_also_wait']:,.0f} s, MWT "
                         f"{stats['val_also_max_wait']:,.0f} s)")
        return text

    learn_epochs(model, out, epochs, validation=validation, validate_every=opts["validate_every"],
                 key="val_score", improves=lambda v, best: best is None or v > best,
                 start_counts=started, started=lambda score: (
                     f"{'starting' if started else 'untrained'} greedy model: "
                     f"validation S {score:.3f}"),
                 columns=LOG_FIRST + LOG_METRICS + LOG_LAST,
                 label=f"training herasched {config.cluster} ({config.net} network)",
                 note=note,
                 curve=lambda: training_curve(
                     model.history, out / "curve.png", "mean_reward",
                     title=f"HeraSched {config.cluster}: reward per update"),
                 plot_every=plot_every, progress=progress, say=say,
                 keep_validated=keep_validated)
    return model


def warm_start(model, path) -> tuple[int, bool]:
    """Load the four networks of the HeraSched model file `path` into the new `model` (its
    optimisers, epoch and history stay new); returns the file's epoch and whether it had the
    critics (a slim file keeps the actors alone: the critics then start new). The file must
    observe as the run does (`HeraSched.norm`: window, tail, nodes and the numbers observed) and
    share `WARM_SHARED` (else `ValueError` naming what differs), since those fix the networks'
    shapes; the trace, the rewards and PPO's settings may differ: that is what a warm start is
    for."""
    from dataclasses import asdict

    from hpcsched.agents.herasched import RECIPE
    from hpcsched.agents.herasched_rollout import AGENT_NAMES
    from hpcsched.experiments.runfolder import warm_refusal
    from hpcsched.modelfile import read_model, restore_state

    ck = read_model(path, recipe=RECIPE)
    theirs = {**ck["norm"], **{k: ck["config"].get(k) for k in WARM_SHARED}}
    ours = {**model.norm, **{k: asdict(model.config)[k] for k in WARM_SHARED}}
    if theirs["hidden"] is not None:  # a list in the file's config, a tuple in the run's
        theirs["hidden"] = tuple(theirs["hidden"])
    problem = warm_refusal(path, theirs, ours)
    if problem:
        raise ValueError(problem)
    critics = all(f"{name}_value" in ck["weights"] for name in AGENT_NAMES)
    for name, ppo in zip(AGENT_NAMES, model.agents):
        restore_state(path, ppo.policy, ck["weights"], f"{name}_policy")
        if critics:
            restore_state(path, ppo.value, ck["weights"], f"{name}_value")
    return int(ck["epoch"]), critics


def validation_plan(validation: HeraValidation | PairedValidation) -> str:
    """What validates and the reference's waits there, for the start of a run."""
    if isinstance(validation, PairedValidation):
        also = validation.also
        return (validation_plan(validation.first) + f"; and the whole of {also.trace} "
                f"({also.jobs} jobs), FCFS + best-fit + EASY there: AWT "
                f"{also.reference['wait']:,.0f} s, MWT {also.reference['max_wait']:,.0f} s; the "
                f"validation score is the lower of the two S")
    ref = validation.reference
    where = validation.trace or "the trace"
    text = (f"validation: the last {validation.jobs} jobs of {where}; FCFS + best-fit + EASY "
            f"there: AWT {ref['wait']:,.0f} s, MWT {ref['max_wait']:,.0f} s (S = 2)")
    if validation.subsets > 1:
        per = validation.reference_subsets
        text += (f"; scored as the median S of {validation.subsets} subsets (job i in subset "
                 f"i mod {validation.subsets}), the reference's AWT "
                 + " / ".join(f"{w['wait']:,.0f}" for w in per) + " s and MWT "
                 + " / ".join(f"{w['max_wait']:,.0f}" for w in per) + " s there")
    return text


__all__ = ["ALL_JOBS", "HeraValidation", "LEGACY_OPTIONS", "PairedValidation", "REFERENCE",
           "RUN_OPTIONS", "WARM_SHARED", "floored_score", "subset_scores", "subset_waits", "train",
           "validation_plan", "validation_score", "warm_start"]
