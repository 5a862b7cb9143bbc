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

`run_episode` is the one loop every DRAS-family agent (DRAS-PG, DRAS-DQL, Decima-PG) plays, in
training, validation and test (with `learn=True` at test, the paper's online updates).
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hpcsched.sim.run import Prepared, prepare
from hpcsched.workload.jobs import JobTable

ALGOS = ("pg", "dql", "decima")
PHASES = ("sampled", "real", "synthetic")
DAY = 86400.0
FORMAT = "hpcsched.dras/1"


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


def agent_from_state(state: dict):
    if state["algo"] == "dql":
        from hpcsched.agents.dql import DrasDQL

        return DrasDQL.from_state(state)
    from hpcsched.agents.dras_pg import DrasPG

    return DrasPG.from_state(state)


def make_env(config: DrasRunConfig, prepared: Prepared):
    from hpcsched.envs.dras import DrasEnv

    return DrasEnv(prepared, reward=config.reward, window=config.window,
                   hierarchy=config.algo != "decima", profile=prepared.profile,
                   seed=config.seed)


def run_episode(agent, env, jobs: JobTable, *, learn: bool, explore: bool | None = None,
                update_every: int | None = None) -> dict[str, Any]:
    """Schedule `jobs` with the agent from an empty machine. `learn`: remember every pick and
    update every `update_every` scheduling instances (and at the end). `explore` (default: `learn`):
    sample / epsilon-greedy picks instead of greedy ones. Returns the run's metrics, total reward,
    picks and updates."""
    explore = learn if explore is None else explore
    every = update_every or agent.config.update_every
    obs, info = env.reset(options={"jobs": jobs})
    total, picks, updates, last = 0.0, 0, 0, info["instances"]
    losses = []
    while True:
        mask = info["action_mask"]
        a = agent.act(obs, mask, explore)
        obs2, r, term, _, info = env.step(a)
        total += r
        picks += 1
        if learn:
            agent.observe(obs, mask, a, r, obs2, info["action_mask"], term)
            if term or info["instances"] - last >= every:
                stats = agent.update()
                if "loss" in stats:
                    losses.append(stats["loss"])
                updates += 1
                last = info["instances"]
        obs = obs2
        if term:
            break
    if learn:
        agent.forget()
    result = env.result(agent.algo)
    return {"result": result, "reward": total, "picks": picks, "updates": updates,
            "loss": float(np.mean(losses)) if losses else float("nan")}


# -- checkpoints -----------------------------------------------------------------------------------
def save(path: Path, agent, config: DrasRunConfig, episode: int, history: list, norm: dict, *,
         resumable: bool = False) -> None:
    """Write a checkpoint; `resumable` adds what only continuing the training needs (the agent's
    random state, DQL's replay memory), for model.pt."""
    from hpcsched.agents.checkpoint import save_checkpoint

    state = {"agent": agent.state(), "config": asdict(config), "episode": episode,
             "history": history, "norm": norm}
    if resumable:
        state["training"] = training_state(agent)
    save_checkpoint(path, state, fmt=FORMAT)


_REPLAY = ("obs", "next_obs", "mask", "next_mask", "action", "reward", "done")


def training_state(agent) -> dict:
    """What an agent carries from one episode to the next besides its weights: its random
    generator's state and, for DRAS-DQL, the replay memory (the filled part)."""
    import torch

    out: dict = {"rng": agent.rng.bit_generator.state}
    replay = getattr(agent, "replay", None)
    if replay is not None:
        n = replay.size
        out["replay"] = {"size": n, "at": replay.at,
                         **{k: torch.from_numpy(getattr(replay, k)[:n].copy()) for k in _REPLAY}}
    return out


def restore_training_state(path: Path, agent, state: dict | None, say) -> None:
    """Put `training_state`'s values back into a freshly built agent."""
    if not state:
        say(f"{path} does not hold the agent's random state (an older run): the resumed run "
            f"draws differently from one that never stopped")
        return
    try:
        agent.rng.bit_generator.state = state["rng"]
        replay = getattr(agent, "replay", None)
        if replay is not None:
            saved = state["replay"]
            n = int(saved["size"])
            for k in _REPLAY:
                getattr(replay, k)[:n] = saved[k].numpy()
            replay.size, replay.at = n, int(saved["at"])
    except (KeyError, TypeError, ValueError, IndexError) as e:
        from hpcsched.agents.checkpoint import ModelFileError

        raise ModelFileError(f"{path}: its training state does not fit its agent ({e})") from None


def load(path: str | Path) -> dict:
    from hpcsched.agents.checkpoint import load_checkpoint

    return load_checkpoint(path, fmt=FORMAT)


def load_agent(path: str | Path):
    """(agent, run config) of a DRAS checkpoint; one whose agent does not fit its own settings is
    refused in one line."""
    from hpcsched.agents.checkpoint import config_of

    ck = load(path)
    return checked_agent(path, ck), config_of(path, lambda: DrasRunConfig.from_dict(ck["config"]))


def checked_agent(path: str | Path, ck: dict):
    """The agent of checkpoint `ck` (read from `path`); a config it cannot build or weights that
    do not fit it are refused in one line (a ValueError naming the file)."""
    from hpcsched.agents.checkpoint import ModelFileError, one_line

    try:
        return agent_from_state(ck["agent"])
    except (RuntimeError, KeyError, TypeError, ValueError, IndexError, AttributeError) as e:
        raise ModelFileError(f"{path}: its weights do not match its config "
                             f"({one_line(e)})") from None


class DrasPolicy:
    """A trained DRAS-family agent as a policy of `hpcsched simulate` and `compare` (`dras:PATH`,
    `dras:pretrained/NAME`): level-1 picks and reservation, then level-2 backfill picks, greedy and
    frozen. It observes with the time scale of the trace it schedules (`prepared`), as the
    experiment does, through the env's own `DrasObserver`."""

    def __init__(self, agent, config: DrasRunConfig, prepared: Prepared, name: str) -> None:
        from hpcsched.envs.dras import DrasObserver

        self.agent, self.config, self.prepared, self.name = agent, config, prepared, name
        hierarchy = config.algo != "decima"
        self.decides_backfill = hierarchy
        time_scale = float(np.max(prepared.jobs.req_time))
        nodes = agent.rows - 2 * config.window
        self.observer = DrasObserver(nodes, config.window, time_scale, hierarchy)
        self._obs = np.zeros(self.observer.rows_shape, dtype=np.float32)
        self._mask = np.zeros(config.window, dtype=bool)

    def reset(self, view) -> None:
        self.observer.check(view, self.name)

    def decide(self, view):
        from hpcsched.sim.decisions import Wait

        offer = self.observer.offer(view)
        if offer is None:
            return Wait()
        rows, mask = offer
        self.observer.observe(view, rows, self._obs)
        self._mask[:] = False
        self._mask[: rows.size] = mask
        slot = self.agent.act(self._obs.copy(), self._mask.copy(), False)
        return self.observer.decision(view, int(rows[slot]))


def export(src: str | Path, dest: str | Path) -> Path:
    """A slim copy of a checkpoint for shipping: the network's weights (float32, unchanged: over a
    three-week test, float16 rounding changed enough picks to move the average wait by 10 %),
    without optimiser state or target network, with the run's config and history. It loads like any
    checkpoint and schedules exactly as the original; training cannot resume from it."""
    ck = load(src)
    agent = {k: v for k, v in ck["agent"].items() if k not in ("optimizer", "target")}
    agent["slim"] = True
    from hpcsched.agents.checkpoint import save_checkpoint

    slim = {k: v for k, v in ck.items() if k != "training"}  # no replay memory either
    return save_checkpoint(dest, dict(slim, agent=agent), fmt=FORMAT)


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

    from hpcsched.agents.checkpoint import config_of, restore_rng_states
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
        history, done = ck["history"], ck["episode"]
        restore_training_state(model_path, agent, ck.get("training"), say)
        restore_rng_states(ck.get("rng"))
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
        for episode in range(done + 1, len(jobsets) + 1):
            phase, jobs = jobsets[episode - 1]
            t0 = time.monotonic()
            ep = run_episode(agent, env, jobs, learn=True)
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
            row["episode_s"] = time.monotonic() - t0
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
    return history


__all__ = ["ALGOS", "DrasPolicy", "DrasRunConfig", "FORMAT", "checked_agent", "curriculum_jobsets",
           "effective_settings", "export", "first_days", "load", "load_agent", "make_agent",
           "make_env", "parse_curriculum", "prepared_for", "real_jobsets",
           "restore_training_state", "run_episode", "sampled_jobset", "split", "train",
           "training_state"]
