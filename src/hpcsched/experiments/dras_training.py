"""DRAS training (IPDPS'21 section III-C; spec dras.md 7.3-7.4, 15): `hpcsched train dras`.

- The trace is split chronologically: a training period, a validation period, a test period
  (days from the first submission); the training jobsets follow the paper's three-phase
  curriculum (`workload.jobsets`: sampled, real, synthetic).
- One episode is one jobset from an empty machine; the agent updates every `update_every`
  scheduling instances (10). After every `validate_every`-th episode the greedy agent is scored on
  the validation period (its total reward, and its metrics). The run folder is
  `experiments.runfolder`'s, an episode for an epoch: best.pt holds the best validation by `select`
  (lowest average wait, or highest reward); model.pt also holds the agent's random state and
  DRAS-DQL's replay memory (its `replay` transitions: tens of MB on RICC), so that a run stopped
  and resumed writes what one that never stopped does.

The agents are `agents.dras_pg` and `agents.dql`; the episode they play in training, validation and
test is `agents.dras_episode.run_episode`; their model files and engine policy are
`agents.dras_policy`.
"""

from __future__ import annotations

import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hpcsched.agents.dras_episode import run_episode
from hpcsched.agents.dras_policy import checked_agent
from hpcsched.agents.dras_policy import read as load
from hpcsched.sim.run import Prepared, prepare
from hpcsched.workload.jobsets import curriculum, first_days, split

ALGOS = ("pg", "dql", "decima")


@dataclass
class DrasRunConfig:
    algo: str = "pg"
    trace: str = "ricc"
    reward: str = "capability"
    curriculum: str = "sampled:4,real:4,synthetic:12"
    jobset_jobs: int = 2000
    train_days: float = 28.0
    validate_days: float = 7.0
    test_days: float = 21.0
    #: validation during training uses the first days of the validation period (less is faster;
    #: RICC's first four days differ from its week: a surge of 8,778 jobs in one day)
    validate_first_days: float = 7.0
    #: validate on this trace (its first `validate_first_days` days) instead of the days after
    #: `train_days`: training then takes the first `train_days` of `trace`, and there is no test
    #: period (a protocol whose periods are files of their own, as HeraSched's)
    validate_trace: str | None = None
    #: validate after every k-th episode (and the last)
    validate_every: int = 2
    #: what best.pt maximises on validation: "wait" (the lowest average wait) or "reward" (the
    #: agent's objective; its sum moves little with the wait on RICC's busy days)
    select: str = "wait"
    #: also keep every validated episode's checkpoint as validated/epNNN.pt (to choose again later
    #: on another validation criterion without retraining)
    keep_validated: bool = False
    reserve: str = "agent_pick"
    persist: bool = False
    backfill_runtime: str = "estimate"
    window: int = 50
    seed: int = 0
    threads: int = 1
    agent: dict[str, Any] = field(default_factory=dict)  # PGConfig / DQLConfig overrides

    def __post_init__(self) -> None:
        if self.select not in ("reward", "wait"):
            raise ValueError(f"select {self.select!r}: choose reward or wait")

    @classmethod
    def from_dict(cls, d: dict) -> "DrasRunConfig":
        known = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        return cls(**known)


# -- the data --------------------------------------------------------------------------------------
def prepared_for(config: DrasRunConfig) -> Prepared:
    from hpcsched.envs.dras import with_options

    profile = with_options("dras", reserve=config.reserve, persist=config.persist,
                           backfill_runtime=config.backfill_runtime)
    return prepare(config.trace, profile)


def validation_trace(config: DrasRunConfig, prepared: Prepared):
    """The jobs of `config.validate_trace`, prepared as the training trace `prepared` is; it must
    give the same machine (the agent observes its nodes)."""
    val = prepare(config.validate_trace, prepared.profile)
    if val.cluster != prepared.cluster:
        raise ValueError(f"--validate-trace {config.validate_trace}: its machine "
                         f"({val.cluster.nodes} nodes) is not the training trace's "
                         f"({prepared.cluster.nodes} nodes, {config.trace})")
    return val.jobs


# -- agents ----------------------------------------------------------------------------------------
def make_agent(config: DrasRunConfig, rows: int):
    if config.algo not in ALGOS:
        raise ValueError(f"unknown DRAS algorithm {config.algo!r}; choose one of: {', '.join(ALGOS)}")
    if config.algo == "dql":
        from hpcsched.agents.dql import DQLConfig, DrasDQL

        return DrasDQL(DQLConfig(window=config.window, **config.agent), rows, seed=config.seed)
    from hpcsched.agents.dras_pg import DrasPG, PGConfig

    return DrasPG(PGConfig(window=config.window, **config.agent), rows, seed=config.seed)


def make_env(config: DrasRunConfig, prepared: Prepared):
    from hpcsched.envs.dras import DrasEnv

    return DrasEnv(prepared, reward=config.reward, window=config.window,
                   hierarchy=config.algo != "decima", profile=prepared.profile,
                   seed=config.seed)


# -- the run ----------------------------------------------------------------------------------------
class DrasRun:
    """A DRAS training run as `runfolder.learn_epochs` drives a model: its config, the episodes
    played (`epoch`) and their `history`; `learn(n, callback)` plays the next n episodes of the
    curriculum, the greedy validation after every `validate_every`-th and the last; `save` writes
    a checkpoint (model.pt with what only continuing needs: the agent's random state, DQL's
    replay memory)."""

    def __init__(self, config: DrasRunConfig, out: Path, agent=None, history=(),
                 episode: int = 0) -> None:
        self.config, self.out, self.history, self.epoch = config, out, list(history), episode
        prepared = prepared_for(config)
        if config.validate_trace:
            train_jobs = first_days(prepared.jobs, config.train_days)
            validate_jobs = validation_trace(config, prepared)
        else:
            train_jobs, validate_jobs, _ = split(prepared.jobs, config.train_days,
                                                 config.validate_days, config.test_days)
        self.validate_jobs = first_days(validate_jobs, config.validate_first_days)
        self.env = make_env(config, prepared)
        self.agent = agent if agent is not None else make_agent(config, self.env.rows_shape[0])
        self.norm = {"time_scale": self.env.time_scale, "nodes": self.env.nodes}
        self.jobsets = curriculum(config.curriculum, train_jobs, config.jobset_jobs, config.seed + 1,
                                  prepared.cluster.nodes, prepared.cluster.procs_per_node)

    @classmethod
    def load(cls, path: Path, say) -> "DrasRun":
        """The run of model file `path`, its agent's training state and the random states put
        back (a slim export is refused: it has none)."""
        from hpcsched.modelfile import (ModelFileError, config_of, restore_rng_states,
                                                training_of)

        ck = load(path)
        training = training_of(path, ck)
        config = config_of(path, lambda: DrasRunConfig.from_dict(ck["config"]))
        run = cls(config, path.parent, checked_agent(path, ck), ck["history"], ck["epoch"])
        if not training.get("learner"):
            say(f"{path} does not hold the agent's random state (an older run): the resumed run "
                f"draws differently from one that never stopped")
        else:
            try:
                run.agent.restore_training_state(training["learner"])
            except (KeyError, TypeError, ValueError, IndexError) as e:
                raise ModelFileError(f"{path}: its training state does not fit its agent "
                                     f"({e})") from None
        restore_rng_states(training.get("rng"))
        return run

    def learn(self, n: int, callback) -> None:
        c = self.config
        started = time.monotonic()

        def after_episode(ep: dict[str, Any]) -> None:
            nonlocal started
            self.epoch += 1
            phase, jobs = self.jobsets[self.epoch - 1]
            m = ep["result"].metrics
            row = {"episode": self.epoch, "phase": phase, "jobs": len(jobs),
                   "mean_reward": ep["reward"] / max(ep["picks"], 1), "reward": ep["reward"],
                   "picks": ep["picks"], "updates": ep["updates"], "loss": ep["loss"],
                   "wait": m["wait"], "max_wait": m["max_wait"]}
            validate = self.epoch % max(c.validate_every, 1) == 0 or self.epoch == len(self.jobsets)
            if validate:
                val = run_episode(self.agent, self.env, self.validate_jobs, learn=False)
                vm = val["result"].metrics
                row.update(val_reward=val["reward"],
                           val_mean_reward=val["reward"] / max(val["picks"], 1),
                           val_wait=vm["wait"], val_max_wait=vm["max_wait"],
                           val_slowdown=vm["slowdown"])
            row["episode_s"] = time.monotonic() - started
            self.history.append(row)
            if validate and c.keep_validated:
                self.save(self.out / "validated" / f"ep{self.epoch:03d}.pt")
            callback(row)
            started = time.monotonic()

        self.agent.learn(self.env, [jobs for _, jobs in self.jobsets[self.epoch:self.epoch + n]],
                         callback=after_episode)

    def save(self, path: Path) -> None:
        """The agent's model file (`DrasAgent.save`) with the run's entries."""
        config = asdict(self.config)
        if config["validate_trace"] is None:  # a run without one writes the files it always did
            del config["validate_trace"]
        run = {"config": config, "episode": self.epoch, "history": self.history,
               "norm": self.norm}
        if path.name == "model.pt":  # what only continuing the training needs
            run["training"] = self.agent.training_state()
        self.agent.save(path, **run)


def load_agent(path: str | Path):
    """(agent, run config) of a DRAS checkpoint; one whose agent does not fit its own settings is
    refused in one line."""
    from hpcsched.modelfile import config_of

    ck = load(path)
    return checked_agent(path, ck), config_of(path, lambda: DrasRunConfig.from_dict(ck["config"]))


LOG_COLUMNS = ["episode", "phase", "jobs", "mean_reward", "reward", "picks", "updates", "loss",
               "wait", "max_wait", "val_reward", "val_mean_reward", "val_wait", "val_max_wait",
               "val_slowdown", "episode_s"]


def effective_settings(config: DrasRunConfig) -> dict:
    """The run's settings as they act: the agent's overrides resolved into its full config (its
    defaults depend on the algorithm), one entry per agent setting ("agent.lr", ...)."""
    from hpcsched.agents.dql import DQLConfig
    from hpcsched.agents.dras_pg import PGConfig

    d = asdict(config)
    agent = d.pop("agent")
    try:
        agent = asdict((DQLConfig if config.algo == "dql" else PGConfig)(window=config.window,
                                                                          **agent))
    except TypeError:  # an unknown override: compared as it is
        pass
    d.update({f"agent.{k}": v for k, v in agent.items()})
    return d


def train(config: DrasRunConfig | dict | None, out: str | Path, *, resume: bool = False,
          progress: bool | None = None, log=None) -> list[dict]:
    """Train (or, with `resume`, continue: `runfolder.open_run`) the run in `out` through the
    whole curriculum; returns the history."""
    from hpcsched.experiments.runfolder import locked_run

    return locked_run(_train, DrasRunConfig, {}, config, out, 0, resume=resume, options={},
                      progress=progress, log=log)


def _train(config, out: Path, epochs: int, *, resume: bool, options: dict[str, Any],
           progress: bool | None, log) -> list[dict]:
    import torch

    from hpcsched.experiments.runfolder import learn_epochs, open_run
    from hpcsched.report.plots import training_curve

    say = log or (lambda text: print(text, file=sys.stderr))
    run = open_run(out, config, resume=resume, load=lambda path: DrasRun.load(path, say),
                   create=lambda: DrasRun(config, out), say=say, effective=effective_settings,
                   info=lambda c: {"algorithm": f"dras-{c.algo}"}, step="episode")
    c = run.config
    if c.threads:
        torch.set_num_threads(c.threads)
    key, sign = ("val_reward", 1.0) if c.select == "reward" else ("val_wait", -1.0)
    learn_epochs(run, out, len(run.jobsets), key=key, start_counts=True,
                 improves=lambda v, best: best is None or sign * v > sign * best,
                 columns=LOG_COLUMNS, label=f"training dras-{c.algo}", step="episode",
                 note=lambda row: (f"{row['phase']} reward/pick {row['mean_reward']:.4f} val wait "
                                   f"{row.get('val_wait', float('nan')):.0f}"),
                 curve=lambda: training_curve(
                     [dict(h, epoch=h["episode"]) for h in run.history], out / "curve.png",
                     "mean_reward", title=f"dras-{c.algo} {c.trace} {c.reward} ({c.curriculum})"),
                 plot_every=1, progress=progress, say=say)
    return run.history


__all__ = ["ALGOS", "DrasRun", "DrasRunConfig", "effective_settings", "load", "load_agent",
           "make_agent", "make_env", "prepared_for", "train"]
