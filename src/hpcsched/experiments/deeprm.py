"""DeepRM's protocols: a training run on disk, the load sweep of Fig. 4 and the analysis of Fig. 7.

    train(DeepRMConfig(load=0.7), "runs/deeprm-70", epochs=100)
    rows = load_sweep()                      # slowdown vs load: SJF, Packer, Tetris*, Random, DeepRM
    rows = what_it_learned("pretrained/deeprm-load-110", load=1.1)   # Fig. 7

A run folder is `experiments.runfolder`'s; best.pt holds the best greedy slowdown on the
validation jobsets.
Evaluation jobsets are the authors' "unseen" draw (seed 314159), 100 per load, pooled over jobs.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable

import numpy as np

from hpcsched.agents.deeprm import VALIDATION_SEED, DeepRM, DeepRMConfig
from hpcsched.agents.deeprm_policy import load_deeprm_policy
from hpcsched.experiments.policyspec import PRETRAINED, pretrained_models, resolve_policy
from hpcsched.policies.deeprm import get_grid_policy
from hpcsched.recipes import is_run, locate
from hpcsched.sim.discrete_batch import DiscreteBatch, pooled_metrics, run_batch
from hpcsched.workload.deeprm import (TEST_SEED, draw_jobsets, expected_load_per_arrival,
                                      generate, rate_for_load)

HEURISTICS = ("sjf", "packer", "tetris", "random")
#: Tetris*'s knob tuned on the training jobsets (seed 42; mean slowdown summed over 70%, 110% and
#: 150% load, knobs 0, 0.1, 0.3, 0.5, 0.7, 0.9): 0.1. The spec's reference runs used 0.5.
TUNED_KNOB = 0.1
#: the sweep's loads: 10% to the highest one arrival per step can offer (p = 1, about 185%)
SWEEP_LOADS = (0.1, 0.3, 0.5, 0.7, 0.9, 1.1, 1.3, 1.5, 1.7, 1.845)
LOG_COLUMNS = ["epoch", "slowdown", "val_slowdown", "val_completion", "val_unfinished",
               "completion", "mean_return", "max_return", "entropy", "withheld_share",
               "decisions", "unfinished", "updates", "rollout_s", "update_s", "epoch_s"]

# -- training --------------------------------------------------------------------------------------
def heuristic_levels(config: DeepRMConfig) -> dict[str, float]:
    """Greedy heuristics' slowdown on the run's validation jobsets (the curve's flat lines)."""
    model_jobs = generate(config.validate_jobsets, config.rate, config.steps,
                          seed=VALIDATION_SEED, resources=config.resources)
    return {name: run_batch(config.batch(), model_jobs, get_grid_policy(name)).metrics()["slowdown"]
            for name in ("sjf", "packer", "tetris", f"tetris:{TUNED_KNOB:g}")}


def train(config: DeepRMConfig | dict | None, out: str | Path, epochs: int, *,
          resume: bool = False, progress: bool | None = None,
          log: Callable[[str], None] | None = None) -> DeepRM:
    """Train (or, with `resume`, continue: `runfolder.open_run`) the run in `out` until `epochs`
    epochs are done in all."""
    from hpcsched.experiments.runfolder import locked_run

    return locked_run(_train, DeepRMConfig, {}, config, out, epochs, resume=resume, options={},
                      progress=progress, log=log)


def _train(config, out: Path, epochs: int, *, resume: bool, options: dict[str, Any],
           progress: bool | None, log: Callable[[str], None] | None) -> DeepRM:
    import torch

    from hpcsched.experiments.runfolder import learn_epochs, open_run
    from hpcsched.report.plots import training_curve

    say = log or (lambda text: print(text, file=sys.stderr))
    model = open_run(out, config, resume=resume, load=DeepRM.load, create=lambda: DeepRM(config),
                     say=say, info=lambda c: {"algorithm": "deeprm-reinforce", "epochs": epochs,
                                              "rate": c.rate})
    config = model.config
    if resume and config.threads and config.threads != torch.get_num_threads():
        torch.set_num_threads(config.threads)  # the threads given now (they shape nothing)
    levels = heuristic_levels(config) if config.validate_jobsets else {}
    if levels:
        say("heuristics on the validation jobsets: " +
            ", ".join(f"{k} {v:.3f}" for k, v in levels.items()))
    key = f"val_{config.reward}"  # best.pt: the best greedy validation score of the reward

    def curve() -> None:
        rows = [h for h in model.history if "slowdown" in h or "val_slowdown" in h]
        rows += [{"epoch": None, "slowdown": v, "label": k} for k, v in levels.items()]
        training_curve([h for h in rows if h["epoch"] is not None], out / "curve.png", "slowdown",
                       title=f"DeepRM load {config.load:g} (p = {config.rate:.3f}); heuristics "
                             f"(validation): " + ", ".join(f"{k} {v:.2f}"
                                                           for k, v in levels.items()))

    if config.init != "none" and model.epoch == 0 and epochs > 0:
        stats = model.warm_start(config.init)
        row = {"epoch": 0, **stats}
        if config.validate_jobsets:
            m = model.evaluate(model.validation_jobs()).metrics()
            row["val_slowdown"], row["val_completion"] = m["slowdown"], m["completion"]
        model.history.append(row)  # before best.pt, which must hold its own epoch's validation
        if config.validate_jobsets:
            model.save(out / "best.pt")
        say(f"imitated {config.init} on {stats['imitation_states']} states: the network picks "
            f"its action in {100 * stats['imitation_agreement']:.1f}% of them; validation "
            f"{key} {row.get(key, float('nan')):.3f} (greedy)")

    def note(stats: dict[str, Any]) -> str:
        v = stats.get(key)
        return (f"slowdown {stats['slowdown']:.3f} (sampled) {key} "
                f"{v if v is not None else float('nan'):.3f} (greedy)")

    # the validation is the model's own (in its epochs' stats); a warm start's epoch-0 row counts
    learn_epochs(model, out, epochs, key=key, improves=lambda v, best: best is None or v < best,
                 start_counts=True, columns=LOG_COLUMNS,
                 label=f"training deeprm load {config.load:g}", note=note, curve=curve,
                 plot_every=5, progress=progress, say=say, logged=list)
    return model


# -- evaluation ------------------------------------------------------------------------------------
def resolve_grid_policy(spec: str, seed: int = 0, sample: bool = False):
    """A deeprm-profile policy by name: a heuristic (sjf, packer, tetris[:K], random) or a model
    (`deeprm:PATH`, `deeprm:pretrained/NAME`)."""
    return resolve_policy(spec, seed=seed, sample=sample, discrete=True)


def shipped_models() -> list[str]:
    return pretrained_models("deeprm")


def model_loads(models: str | Path | None = None, reward: str = "slowdown") -> dict[float, Path]:
    """Training load -> model file of the models trained for `reward`, from a folder of
    deeprm-load-NN*.pt (or run folders: their best.pt, by `recipes.locate`) or the shipped ones."""
    from hpcsched.modelfile import OtherKindError, read_model

    folder = Path(models) if models else PRETRAINED
    found: dict[float, Path] = {}
    candidates = sorted(folder.glob("deeprm-*.pt")) + [
        locate(run) for run in sorted(folder.glob("*")) if run.is_dir() and is_run(run)]
    for path in candidates:
        try:  # a damaged file is refused; another learner's model is passed over
            ck = read_model(path, recipe="deeprm")
        except OtherKindError:
            continue
        if ck["config"].get("reward", "slowdown") == reward:
            found.setdefault(float(ck["config"]["load"]), path)
    return found


def evaluate(policy, load: float, *, jobsets: int = 100, steps: int = 50, seed: int = TEST_SEED,
             batch: DiscreteBatch | None = None) -> DiscreteBatch:
    """Run `policy` on the unseen jobsets of one load; the finished batch (metrics, records)."""
    jobs = generate(jobsets, rate_for_load(load), steps, seed=seed)
    return run_batch(batch or DiscreteBatch(), jobs, policy, max_decisions=20_000)


# -- DeepRM's Random, as its evaluation script draws it ---------------------------------------------
#: DeepRM's `job_num_cap`: every `Machine()` (one per reset) shuffles this many colours for its
#: rendering, from the global numpy stream
_COLOURS = 40


def _shuffle_colours(stream: np.random.RandomState) -> None:
    stream.shuffle(np.arange(1 / float(_COLOURS), 1, 1 / float(_COLOURS)))


class ScriptRandom:
    """DeepRM's Random baseline (`other_agents.get_random_action`: `np.random.randint(M + 1)`, empty
    slots and void included) for one episode of its evaluation script, drawing from the script's
    one global stream. DeepRM asks for an action at every time step, also where none could place a
    job; our batch skips those steps, so `act` first makes the draws DeepRM made meanwhile (one per
    skipped step), and `finish` the ones it makes after our end: its episode ends only at the first
    step >= the jobset's length at which its list of running jobs is empty, and that list drops a
    finished job late when the one before it in the list finished at the same check (its removal
    loop deletes from the list it walks)."""

    name = "random"

    def __init__(self, stream: np.random.RandomState, steps: int) -> None:
        self.stream = stream
        self.steps = steps
        self.draws = 0  # DeepRM's decisions so far in this episode
        self.last_now = 0
        self.advanced = False  # whether our last action ended its step
        self.placed: list[tuple[int, int]] = []  # (step of the pick, job), in DeepRM's list order

    def act(self, batch: DiscreteBatch) -> np.ndarray:
        now = int(batch.now[0])
        for _ in range(now - self.last_now - int(self.advanced)):
            self.stream.randint(batch.actions)  # a step DeepRM asked about and we skipped
            self.draws += 1
        action = int(self.stream.randint(batch.actions))
        self.draws += 1
        placed = action < batch.slots and bool(batch.valid[0, action])
        if placed:
            self.placed.append((now, int(batch.slot[0, action])))
        self.last_now, self.advanced = now, not placed
        return np.array([action])

    def finish(self, batch: DiscreteBatch) -> None:
        """DeepRM's draws after our episode's end, up to its own."""
        finish = batch.finish[0]
        running: list[int] = []
        placed = iter(self.placed)
        nxt = next(placed, None)
        t = 0
        while True:  # time_proceed(t) then the all_done check, as DeepRM's step does
            t += 1
            while nxt is not None and nxt[0] < t:
                running.append(nxt[1])
                nxt = next(placed, None)
            for job in running:  # DeepRM's loop, skipping the job after each one it removes
                if finish[job] <= t:
                    running.remove(job)
            if t >= self.steps and t >= batch.now[0] and not running and nxt is None:
                break
        for _ in range(len(self.placed) + t - self.draws):  # every decision: a pick, or a step
            self.stream.randint(batch.actions)


def random_as_deeprm(jobsets: int, rate: float, steps: int = 50, *, seed: int = TEST_SEED,
                     batch: Callable[[], DiscreteBatch] = DiscreteBatch) -> list[DiscreteBatch]:
    """DeepRM's Random on its own jobsets, draw for draw as its evaluation script
    (`slow_down_cdf.launch`, no trained model) runs it: one global stream seeded with `seed`
    draws the jobsets, then every `Machine()` shuffles its colours (one at the `Env`'s creation,
    one at each reset: before each episode and at its end) and Random draws its actions, the
    policies taking turns on each jobset in the script's order (Tetris, SJF, Random; the first two
    draw nothing). The jobsets are run one at a time (each episode's draws decide where the next
    begins): one finished batch per jobset. Assumes no episode reaches the script's length cap."""
    stream = np.random.RandomState(seed)
    jobs = draw_jobsets(stream, jobsets, rate, steps)
    _shuffle_colours(stream)  # the Env's Machine
    done = []
    for k in range(jobsets):
        for _ in range(5):  # Tetris's reset and end, SJF's reset and end, Random's reset
            _shuffle_colours(stream)
        b = batch()
        policy = ScriptRandom(stream, steps)
        run_batch(b, jobs.take([k]), policy, max_decisions=20_000)
        policy.finish(b)
        _shuffle_colours(stream)  # Random's end
        done.append(b)
    return done


def load_sweep(loads=SWEEP_LOADS, *, rates=None, models: str | Path | None = None,
               jobsets: int = 100, steps: int = 50, seed: int = TEST_SEED,
               queue: str = "bounded", with_model: bool = True, tetris_knob: float = TUNED_KNOB,
               sample: bool = False, progress: Callable[[int], None] | None = None,
               reward: str = "slowdown") -> list[dict[str, Any]]:
    """Fig. 4: mean slowdown (pooled over jobs) per load and policy, on `jobsets` jobsets of
    `steps` steps drawn with `seed` (DeepRM's generator) at each load (or each arrival
    probability of `rates`, which replaces `loads`). SJF, Packer and Random are DeepRM's own
    baselines and give its script's numbers exactly (Random draw for draw, `random_as_deeprm`);
    Tetris* is ours (its knob tuned). DeepRM at each load is the model trained for `reward` at
    the nearest load (its training load is in `model_load`); Fig. 5 compares the
    completion-time models (`reward="completion"`) on `completion`."""
    trained = model_loads(models, reward) if with_model else {}
    if rates is not None:
        points = [(round(float(p) * expected_load_per_arrival(), 4), float(p)) for p in rates]
        for _, p in points:
            if not 0 < p <= 1:
                raise ValueError(f"--rates: an arrival probability must be in (0, 1] (got {p:g})")
    else:
        points = [(load, rate_for_load(load)) for load in loads]
    rows = []
    for load, p in points:
        names = [*HEURISTICS[:2], tetris_name(tetris_knob), HEURISTICS[3]]
        policies: list[tuple[str, Any, float | None]] = [(n, get_grid_policy(n), None)
                                                         for n in names]
        if trained:
            near = nearest_load(load, trained)
            policies.append(("deeprm", load_deeprm_policy(trained[near], sample=sample,
                                                          name="deeprm"), near))
        rows += score_at(load, p, policies, jobsets=jobsets, steps=steps, seed=seed, queue=queue,
                         progress=progress)
    return rows


def nearest_load(load: float, loads) -> float:
    """The training load whose model scores `load`: the nearest, the lower on a tie (distances
    compared to 1e-9, so 0.9 lies exactly between 0.7 and 1.1 and is scored by the 70 % model;
    before this rule the tie went to whichever file was found first)."""
    return min(loads, key=lambda x: (round(abs(x - load), 9), x))


def tetris_name(knob: float = TUNED_KNOB) -> str:
    """Tetris* as the sweep names it: `tetris` at the spec's knob 0.5, else `tetris:KNOB`."""
    return "tetris" if knob == 0.5 else f"tetris:{knob:g}"


def score_at(load: float, rate: float, policies, *, jobsets: int = 100, steps: int = 50,
             seed: int = TEST_SEED, queue: str = "bounded",
             progress: Callable[[int], None] | None = None) -> list[dict[str, Any]]:
    """The sweep's rows at one point: each (name, policy, model_load) of `policies` run on the
    same `jobsets` jobsets of `steps` steps drawn with `seed` at arrival probability `rate`
    (`random` as DeepRM's script draws it), metrics pooled over their jobs."""
    jobs = generate(jobsets, rate, steps, seed=seed)
    offered = float(jobs.load().mean())
    rows = []
    for name, policy, model_load in policies:
        if name == "random":
            m = pooled_metrics(random_as_deeprm(jobsets, rate, steps, seed=seed,
                                                batch=lambda: DiscreteBatch(queue=queue)))
        else:
            m = run_batch(DiscreteBatch(queue=queue), jobs, policy,
                          max_decisions=20_000).metrics()
        rows.append({"load": load, "rate": round(rate, 4), "offered_load": round(offered, 4),
                     "policy": name, "slowdown": m["slowdown"], "completion": m["completion"],
                     "withheld_share": m["withheld_share"], "jobs": m["jobs"],
                     "unfinished": m["unfinished"], "dropped": m["dropped"],
                     "model_load": model_load if model_load is not None else ""})
        if progress:
            progress(1)
    return rows


def sweep_plot(rows: list[dict[str, Any]], path: str | Path) -> Path:
    from hpcsched.report.plots import _pyplot, save_figure

    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=110)
    for name in dict.fromkeys(r["policy"] for r in rows):
        pts = sorted((100 * r["offered_load"], r["slowdown"]) for r in rows if r["policy"] == name)
        ax.plot(*zip(*pts), "o-", ms=3, lw=1.4 if name == "deeprm" else 1.0,
                label="DeepRM" if name == "deeprm" else name)
    ax.set_xlabel("average cluster load (%)")
    ax.set_ylabel("average job slowdown")
    ax.set_title("DeepRM (HotNets'16) Fig. 4: 100 unseen jobsets per load", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return save_figure(fig, path)


def what_it_learned(policy, load: float, *, against: str = f"tetris:{TUNED_KNOB:g}",
                    jobsets: int = 100, steps: int = 50, seed: int = TEST_SEED,
                    queue: str = "bounded") -> list[dict[str, Any]]:
    """Fig. 7 at one load: for the policy and a heuristic, the share of time steps that end while a
    shown job would have fit now (not work-conserving), the share of held-back job-steps that are
    long jobs (>= 10 steps), and the mean slowdown of short (1-3) and long (10-15) jobs."""
    rows = []
    for name, pol in (("deeprm", policy), (against, get_grid_policy(against))):
        b = evaluate(pol, load, jobsets=jobsets, steps=steps, seed=seed,
                     batch=DiscreteBatch(queue=queue))
        rec = b.job_records()
        m = b.metrics()
        short = rec["length"] <= 3
        held = rec["withheld"]
        rows.append({
            "load": load, "policy": name,
            "withheld_share": m["withheld_share"],
            "withheld_long_share": float(held[~short].sum() / held.sum()) if held.sum() else 0.0,
            "slowdown": m["slowdown"],
            "slowdown_short": float(np.nanmean(rec["slowdown"][short])),
            "slowdown_long": float(np.nanmean(rec["slowdown"][~short])),
        })
    return rows


__all__ = ["HEURISTICS", "SWEEP_LOADS", "ScriptRandom", "evaluate",
           "expected_load_per_arrival", "load_sweep", "model_loads", "resolve_grid_policy",
           "random_as_deeprm", "score_at", "shipped_models", "sweep_plot", "tetris_name", "train",
           "what_it_learned"]
