"""DRAS training (IPDPS'21 section III-C; spec dras.md 7.3-7.4, 15): `hpcsched train dras`.

- The trace is split chronologically (`split`): a training period, a validation period, a test
  period (days from the first submission).
- The training jobsets follow the paper's three-phase curriculum (`curriculum`), in order:
  "sampled" (jobs drawn at random from the training period, re-timed as a Poisson process with the
  period's mean inter-arrival time), "real" (runs of consecutive jobs of the training period, spread
  evenly over it) and "synthetic" (the Lublin-Feitelson model fitted to the training period,
  `hpcsched.workload.lublin.fitted`). A spec like "sampled:4,real:4,synthetic:12" gives the phases
  and their episode counts; "real:20" is the real-only ablation.
- One episode is one jobset from an empty machine; the agent updates every `update_every`
  scheduling instances (10). After every `validate_every`-th episode the greedy agent is scored on
  the validation period (its total reward, and its metrics), and the run folder gets model.pt
  (atomic, every episode; `resume` continues from it), best.pt (the best validation by `select`:
  lowest average wait, or highest reward), log.csv, curve.png, config.json, and TensorBoard events
  in tb/ when tensorboard is installed (`experiments.runlog`: the log every trainer writes, a line
  per episode where stderr is no terminal). A resumed run
  continues with its stored settings (a different one given is refused, threads excepted) and
  its random states; a DRAS-DQL model.pt also holds the replay memory (its `replay` transitions:
  tens of MB on RICC), so that a run stopped and resumed writes what one that never stopped does.
  Another training holding the folder is refused (`experiments.training.run_lock`).

The agents are `agents.dras_pg` and `agents.dql`; the episode they play in training, validation and
test is `agents.dras_episode.run_episode`; their model files and engine policy are
`agents.dras_policy` (their names stay importable from here).
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hpcsched.agents.dras_episode import run_episode
from hpcsched.agents.dras_policy import DrasPolicy, agent_from_state, checked_agent
from hpcsched.agents.dras_policy import read as load
from hpcsched.sim.run import Prepared, prepare
from hpcsched.workload.jobs import JobTable

ALGOS = ("pg", "dql", "decima")
PHASES = ("sampled", "real", "synthetic")
DAY = 86400.0


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

    @classmethod
    def from_dict(cls, d: dict) -> "DrasRunConfig":
        known = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        return cls(**known)


def parse_curriculum(spec: str) -> list[tuple[str, int]]:
    """"sampled:4,real:4,synthetic:12" -> [("sampled", 4), ...], checked."""
    phases = []
    for part in spec.split(","):
        name, _, count = part.strip().partition(":")
        if name not in PHASES or not count.isdigit() or int(count) <= 0:
            raise ValueError(f"curriculum {spec!r}: each part is PHASE:COUNT with PHASE one of "
                             f"{', '.join(PHASES)} and COUNT > 0 (got {part!r})")
        phases.append((name, int(count)))
    return phases


# -- the data --------------------------------------------------------------------------------------
def prepared_for(config: DrasRunConfig) -> Prepared:
    from hpcsched.envs.dras import with_options

    profile = with_options("dras", reserve=config.reserve, persist=config.persist,
                           backfill_runtime=config.backfill_runtime)
    return prepare(config.trace, profile)


def split(prepared: Prepared, train_days: float, validate_days: float,
          test_days: float) -> tuple[JobTable, JobTable, JobTable]:
    """Consecutive periods (days from the first submission): train, validate, test."""
    jobs = prepared.jobs
    t = (jobs.submit - jobs.submit[0]) / DAY
    a, b, c = train_days, train_days + validate_days, train_days + validate_days + test_days
    parts = (jobs.take(t < a), jobs.take((t >= a) & (t < b)), jobs.take((t >= b) & (t < c)))
    for name, part in zip(("training", "validation", "test"), parts):
        if len(part) == 0:
            raise ValueError(f"{prepared.name}: the {name} period has no job (split {train_days}/"
                             f"{validate_days}/{test_days} days; the trace spans {t[-1]:.1f} days)")
    return parts


def first_days(jobs: JobTable, days: float) -> JobTable:
    t = (jobs.submit - jobs.submit[0]) / DAY
    return jobs.take(t < days)


def sampled_jobset(train: JobTable, n: int, rng: np.random.Generator) -> JobTable:
    """n jobs drawn from the training period, arrivals re-timed as a Poisson process with the
    period's mean inter-arrival time."""
    n = min(n, len(train))
    rows = np.sort(rng.choice(len(train), n, replace=False))
    gap = (train.submit[-1] - train.submit[0]) / max(len(train) - 1, 1)
    submit = train.submit[0] + np.cumsum(rng.exponential(gap, n))
    return train.take(rows).with_columns(submit=submit)


def real_jobsets(train: JobTable, n: int, count: int) -> list[JobTable]:
    """`count` runs of n consecutive jobs, their starts spread evenly over the training period."""
    n = min(n, len(train))
    starts = np.linspace(0, len(train) - n, count).astype(int)
    return [train.window(int(s), n) for s in starts]


def curriculum_jobsets(config: DrasRunConfig, train: JobTable, cluster) -> list[tuple[str, JobTable]]:
    """Every training episode's (phase, jobset), in order."""
    from hpcsched.workload import lublin

    rng = np.random.default_rng(config.seed + 1)
    out = []
    for phase, count in parse_curriculum(config.curriculum):
        if phase == "real":
            out += [("real", j) for j in real_jobsets(train, config.jobset_jobs, count)]
            continue
        for _ in range(count):
            if phase == "sampled":
                jobs = sampled_jobset(train, config.jobset_jobs, rng)
            else:
                jobs = lublin.fitted(train, cluster.nodes, config.jobset_jobs,
                                     seed=int(rng.integers(2**31)),
                                     procs_per_node=cluster.procs_per_node)
            out.append((phase, jobs))
    return out


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


# -- checkpoints -----------------------------------------------------------------------------------
def save(path: Path, agent, config: DrasRunConfig, episode: int, history: list, norm: dict, *,
         resumable: bool = False) -> None:
    """Write a checkpoint; `resumable` adds what only continuing the training needs (the agent's
    random state, DQL's replay memory), for model.pt."""
    run = {"config": asdict(config), "episode": episode, "history": history, "norm": norm}
    if resumable:
        run["training"] = agent.training_state()
    agent.save(path, **run)


def restore_training_state(path: Path, agent, state: dict | None, say) -> None:
    """Put `training_state`'s values back into a freshly built agent."""
    if not state:
        say(f"{path} does not hold the agent's random state (an older run): the resumed run "
            f"draws differently from one that never stopped")
        return
    try:
        agent.restore_training_state(state)
    except (KeyError, TypeError, ValueError, IndexError) as e:
        from hpcsched.agents.checkpoint import ModelFileError

        raise ModelFileError(f"{path}: its training state does not fit its agent ({e})") from None


def export(src: str | Path, dest: str | Path) -> Path:
    """A slim export of the model file `src` at `dest` (`agents.checkpoint.slim`: the weights that
    decide, no training state), as the shipped files are."""
    from hpcsched.agents.checkpoint import slim

    return slim(src, dest)


def load_agent(path: str | Path):
    """(agent, run config) of a DRAS checkpoint; one whose agent does not fit its own settings is
    refused in one line."""
    from hpcsched.agents.checkpoint import config_of

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
    """Train (or continue) the run in `out` through the whole curriculum. Returns the history.
    With `resume`, `config` may be None (the stored one), a config or a dict of the settings given
    (its "agent" overrides added to the stored ones); a given setting must repeat the stored value
    (threads excepted). Another training holding `out` is refused."""
    from hpcsched.experiments.training import run_lock

    if not resume and not isinstance(config, DrasRunConfig):
        config = DrasRunConfig(**(config or {}))
    if not resume and config.select not in ("reward", "wait"):
        raise ValueError(f"select {config.select!r}: choose reward or wait")
    with run_lock(Path(out), resume=resume):
        return _train(config, Path(out), resume=resume, progress=progress, log=log)


def _train(config, out: Path, *, resume: bool, progress: bool | None, log) -> list[dict]:
    import torch

    from hpcsched.agents.checkpoint import config_of, restore_rng_states, training_of
    from hpcsched.experiments.runlog import RunLog
    from hpcsched.experiments.training import best_so_far, resumed_config
    from hpcsched.report.plots import training_curve

    say = log or (lambda text: print(text, file=sys.stderr))
    model_path = out / "model.pt"
    if resume:
        if not model_path.exists():
            raise FileNotFoundError(f"--resume: no checkpoint at {model_path}")
        ck = load(model_path)
        stored = config_of(model_path, lambda: DrasRunConfig.from_dict(ck["config"]))
        if isinstance(config, dict) and "agent" in config:  # overrides of the stored overrides
            config = dict(config, agent={**stored.agent, **config["agent"]})
        config = resumed_config(model_path, stored, config, effective=effective_settings)
        agent = checked_agent(model_path, ck)
        history, done = ck["history"], ck["epoch"]
        training = training_of(model_path, ck)
        restore_training_state(model_path, agent, training.get("learner"), say)
        restore_rng_states(training.get("rng"))
        say(f"resumed {model_path} at episode {done}")
    else:
        if model_path.exists():
            raise FileExistsError(f"{model_path} exists: pass --resume to continue that run, or "
                                  f"choose another --out")
        agent, history, done = None, [], 0
    if config.threads:
        torch.set_num_threads(config.threads)
    prepared = prepared_for(config)
    train_jobs, validate_jobs, _ = split(prepared, config.train_days, config.validate_days,
                                         config.test_days)
    validate_jobs = first_days(validate_jobs, config.validate_first_days)
    env = make_env(config, prepared)
    if agent is None:
        agent = make_agent(config, env.rows_shape[0])
    norm = {"time_scale": env.time_scale, "nodes": env.nodes}
    jobsets = curriculum_jobsets(config, train_jobs, prepared.cluster)
    (out / "config.json").write_text(json.dumps({"algorithm": f"dras-{config.algo}",
                                                 **asdict(config)}, indent=1) + "\n")
    key, sign = ("val_reward", 1.0) if config.select == "reward" else ("val_wait", -1.0)

    def improves(v: float, best: float | None) -> bool:
        return best is None or sign * v > sign * best

    best = best_so_far(history, key, improves, True)  # a resumed run's best so far
    # episodes take minutes: where stderr is a log file, one line per episode
    with RunLog(out, LOG_COLUMNS, label=f"training dras-{config.algo}", step="episode",
                start=done, last=len(jobsets), history=history, progress=progress,
                say=say) as runlog:
        episode, started = done, time.monotonic()

        def after_episode(ep: dict[str, Any]) -> None:
            nonlocal best, episode, started
            episode += 1
            phase, jobs = jobsets[episode - 1]
            m = ep["result"].metrics
            row = {"episode": episode, "phase": phase, "jobs": len(jobs),
                   "mean_reward": ep["reward"] / max(ep["picks"], 1), "reward": ep["reward"],
                   "picks": ep["picks"], "updates": ep["updates"], "loss": ep["loss"],
                   "wait": m["wait"], "max_wait": m["max_wait"]}
            validate = episode % max(config.validate_every, 1) == 0 or episode == len(jobsets)
            if validate:
                val = run_episode(agent, env, validate_jobs, learn=False)
                vm = val["result"].metrics
                row.update(val_reward=val["reward"],
                           val_mean_reward=val["reward"] / max(val["picks"], 1),
                           val_wait=vm["wait"], val_max_wait=vm["max_wait"],
                           val_slowdown=vm["slowdown"])
            row["episode_s"] = time.monotonic() - started
            history.append(row)
            if validate and config.keep_validated:
                save(out / "validated" / f"ep{episode:03d}.pt", agent, config, episode, history,
                     norm)
            if validate and improves(row[key], best):
                best = row[key]
                save(out / "best.pt", agent, config, episode, history, norm)
            save(model_path, agent, config, episode, history, norm, resumable=True)
            runlog.epoch(row, history, f"{phase} reward/pick {row['mean_reward']:.4f} val wait "
                                       f"{row.get('val_wait', float('nan')):.0f}")
            training_curve([dict(h, epoch=h["episode"]) for h in history], out / "curve.png",
                           "mean_reward",
                           title=f"dras-{config.algo} {config.trace} {config.reward} "
                                 f"({config.curriculum})")
            started = time.monotonic()

        agent.learn(env, [jobs for _, jobs in jobsets[done:]], callback=after_episode)
    return history


__all__ = ["ALGOS", "DrasPolicy", "DrasRunConfig", "agent_from_state", "checked_agent",
           "curriculum_jobsets", "effective_settings", "export", "first_days", "load",
           "load_agent", "make_agent", "make_env", "parse_curriculum", "prepared_for",
           "real_jobsets", "restore_training_state", "run_episode", "sampled_jobset", "split",
           "train"]
