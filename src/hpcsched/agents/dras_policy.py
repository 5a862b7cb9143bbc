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


def check_named(rows: int, config, cluster, profile, backfill: str | None = None,
                name: str = "this DRAS agent") -> None:
    """Refuse, in one line, a DRAS agent of `rows` observation rows and run `config` that cannot
    schedule the cluster of named nodes `cluster` (seen as its total cores, `envs.cores_view`)
    under `profile` with `backfill` (None: not known yet). See `DrasPolicy` for why a pass."""
    from hpcsched.cluster.cores import check_shared, total_cores

    check_shared(cluster)
    if profile.loop != "pass" or profile.commit or profile.discrete:
        raise ValueError(f"{name} on the named nodes of {cluster.name} runs as the selector of a "
                         f"pass profile (--profile hpcsim, the heuristic grid's, or standard), "
                         f"not {profile.name}: the cqsim loop it was trained on counts identical "
                         f"nodes")
    nodes, cores = rows - 2 * config.window, total_cores(cluster)
    if nodes != cores:
        raise ValueError(f"{name} observes {nodes} nodes; {cluster.name} has {cores} cores (a "
                         f"model for it is trained on its jobs seen as cores: trace convert "
                         f"--cores-of {cluster.name})")
    want = "easy" if config.algo != "decima" else "none"
    if backfill is not None and backfill != want:
        what = ("reserves for its pick, so it runs with EASY backfilling" if want == "easy" else
                "(Decima-PG) neither reserves nor backfills: it runs with --backfill none")
        raise ValueError(f"{name} {what}, not --backfill {backfill}")


class DrasPolicy:
    """A trained DRAS-family agent as a policy of `hpcsched simulate` and `compare` (`dras:PATH`,
    `dras:pretrained/NAME`): level-1 picks and reservation, then level-2 backfill picks, greedy and
    frozen. It observes with the time scale of the trace it schedules (`prepared`), as the
    experiment does, through the env's own `DrasObserver`. `config` is the run's (its `algo`:
    Decima-PG has one level; its `window`).

    On a cluster of named nodes (`prepared.cluster` a `Cluster`: the heuristic grid's
    simulation, `experiment herasched --baselines`) the agent sees jobs as total cores and the
    machine as the pool of the cluster's cores (`envs.cores_view`), and is the selector of the
    profile's pass (hpcsim, standard), its jobs placed by the run's allocator. Its level 1
    carries over exactly: the pass starts its pick if the pick fits the nodes, and otherwise
    gives the pick the backfilling's reservation, which is what level 1 does on the cqsim loop.
    Its level 2 does not: the backfill starts are the profile's EASY backfilling (the engine's,
    in queue order, with the allocator), not picks of the agent, because the pass that the grid's
    cells run has no backfill decisions to ask for, and a cqsim loop on named nodes would be a
    simulation other than the one the baseline is compared on. Decima-PG (one level) picks only
    jobs that fit the nodes and runs without backfilling, as on the pool. The observation's node
    rows are the cluster's cores (free ones first, then busy ones by their job's estimated end),
    so a model trained on the cluster's jobs seen as cores (`trace convert --cores-of`) sees the
    state it would on that pool."""

    def __init__(self, agent, config, prepared, name: str) -> None:
        from hpcsched.cluster.nodes import Cluster
        from hpcsched.envs.dras import DrasObserver

        self.agent, self.config, self.prepared, self.name = agent, config, prepared, name
        hierarchy = config.algo != "decima"
        self.named = isinstance(prepared.cluster, Cluster)
        if self.named:
            check_named(agent.rows, config, prepared.cluster, prepared.profile, name=name)
        self.decides_backfill = hierarchy and not self.named
        time_scale = float(np.max(prepared.jobs.req_time))
        nodes = agent.rows - 2 * config.window
        self.observer = DrasObserver(nodes, config.window, time_scale, hierarchy)
        self._obs = np.zeros(self.observer.rows_shape, dtype=np.float32)
        self._mask = np.zeros(config.window, dtype=bool)

    def _view(self, view):
        if not self.named:
            return view
        from hpcsched.envs.cores_view import cores_view

        return cores_view(view)

    def reset(self, view) -> None:
        if self.named:  # the cluster and profile were checked when built; now the backfilling
            check_named(self.agent.rows, self.config, self.prepared.cluster, self.prepared.profile,
                        view.backfill, self.name)
        else:
            self.observer.check(view, self.name)

    def decide(self, view):
        from hpcsched.sim.decisions import Wait

        view = self._view(view)
        offer = self.observer.offer(view)
        if offer is None:
            return Wait()
        rows, mask = offer
        self.observer.observe(view, rows, self._obs)
        self._mask[:] = False
        self._mask[: rows.size] = mask
        slot = self.agent.predict(self._obs.copy(), self._mask.copy())
        return self.observer.decision(view, int(rows[slot]))


__all__ = ["AGENTS", "DrasPolicy", "check_named", "checked_agent", "read"]
