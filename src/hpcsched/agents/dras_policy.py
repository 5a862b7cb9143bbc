"""A trained DRAS-family agent in use: its model file read (`read`, `checked_agent`; the agent
writes it, `DrasAgent.save`; its slim export is `modelfile.slim`'s, as every learner's) and
the engine policy that runs it (`dras:PATH` in `hpcsched simulate` and `compare`).

A model file (`hpcsched.modelfile`, recipe "dras") holds the agent's entries (`state()`: learner,
learner_config, learner_state, weights, optimiser state) and the run's: its config, the episodes
done (`epoch`), history, the observation's normalisation and, in a run's model.pt, the learner's
generator and DRAS-DQL's replay memory (`training["learner"]`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

#: a model file's learner -> the agent class
AGENTS = {"reinforce": ("hpcsched.agents.dras_pg", "DrasPG"),
          "dqn": ("hpcsched.agents.dql", "DrasDQL")}


def read(path: str | Path) -> dict:
    """The DRAS model file at `path` (`modelfile.read_model`)."""
    from hpcsched.modelfile import read_model

    return read_model(path, recipe="dras")


def checked_agent(path: str | Path, ck: dict):
    """The DRAS-PG or DRAS-DQL agent (by its learner) of model file `ck` (read from `path`); a
    config it cannot build or weights that do not fit it are refused in one line (a ValueError
    naming the file)."""
    from importlib import import_module

    from hpcsched.modelfile import ModelFileError, one_line

    module, name = AGENTS[ck["learner"]]
    try:
        return getattr(import_module(module), name).from_state(ck)
    except (RuntimeError, KeyError, TypeError, ValueError, IndexError, AttributeError) as e:
        raise ModelFileError(f"{path}: its weights do not match its config "
                             f"({one_line(e)})") from None


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


__all__ = ["AGENTS", "DrasPolicy", "checked_agent", "read"]
