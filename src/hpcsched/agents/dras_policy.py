"""A trained DRAS-family agent in use: its model file (written, read, slimmed for shipping) and the
engine policy that runs it (`dras:PATH` in `hpcsched simulate` and `compare`).

A model file (format `hpcsched.dras/1`) holds the agent's `state()` under "agent" and what the run
adds: its config, episode, history, the observation's normalisation and, in a run's model.pt, the
"training" state (the agent's random state, DRAS-DQL's replay memory).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

FORMAT = "hpcsched.dras/1"


def agent_from_state(state: dict):
    """The DRAS-PG or DRAS-DQL agent of a model file's "agent" entry."""
    if state["algo"] == "dql":
        from hpcsched.agents.dql import DrasDQL

        return DrasDQL.from_state(state)
    from hpcsched.agents.dras_pg import DrasPG

    return DrasPG.from_state(state)


def checked_agent(path: str | Path, ck: dict):
    """The agent of checkpoint `ck` (read from `path`); a config it cannot build or weights that
    do not fit it are refused in one line (a ValueError naming the file)."""
    from hpcsched.agents.checkpoint import ModelFileError, one_line

    try:
        return agent_from_state(ck["agent"])
    except (RuntimeError, KeyError, TypeError, ValueError, IndexError, AttributeError) as e:
        raise ModelFileError(f"{path}: its weights do not match its config "
                             f"({one_line(e)})") from None


def save_agent(path: str | Path, agent, **run) -> Path:
    """Write `agent`'s model file, with the entries of `run` (config, episode, history, ...)."""
    from hpcsched.agents.checkpoint import save_checkpoint

    return save_checkpoint(path, {"agent": agent.state(), **run}, fmt=FORMAT)


def load_agent_of(path: str | Path, cls):
    """The agent of the model file at `path`, which must be a `cls` (DrasPG or DrasDQL)."""
    from hpcsched.agents.checkpoint import ModelFileError, load_checkpoint

    agent = checked_agent(path, load_checkpoint(path, fmt=FORMAT))
    if not isinstance(agent, cls):
        raise ModelFileError(f"{path} holds a DRAS-{agent.algo.upper()} agent, not a "
                             f"{cls.__name__}")
    return agent


def slim(src: str | Path, dest: str | Path) -> Path:
    """A slim copy of a checkpoint for shipping: the network's weights (float32, unchanged: over a
    three-week test, float16 rounding changed enough picks to move the average wait by 10 %),
    without optimiser state or target network, with the run's config and history. It loads like any
    checkpoint and schedules exactly as the original; training cannot resume from it."""
    from hpcsched.agents.checkpoint import load_checkpoint, save_checkpoint

    ck = load_checkpoint(src, fmt=FORMAT)
    agent = {k: v for k, v in ck["agent"].items() if k not in ("optimizer", "target")}
    agent["slim"] = True
    kept = {k: v for k, v in ck.items() if k != "training"}  # no replay memory either
    return save_checkpoint(dest, dict(kept, agent=agent), fmt=FORMAT)


class DrasPolicy:
    """A trained DRAS-family agent as a policy of `hpcsched simulate` and `compare` (`dras:PATH`,
    `dras:pretrained/NAME`): level-1 picks and reservation, then level-2 backfill picks, greedy and
    frozen. It observes with the time scale of the trace it schedules (`prepared`), as the
    experiment does, through the env's own `DrasObserver`. `config` is the run's (its `algo`:
    Decima-PG has one level; its `window`)."""

    def __init__(self, agent, config, prepared, name: str) -> None:
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
        slot = self.agent.predict(self._obs.copy(), self._mask.copy())
        return self.observer.decision(view, int(rows[slot]))


__all__ = ["FORMAT", "DrasPolicy", "agent_from_state", "checked_agent", "load_agent_of",
           "save_agent", "slim"]
