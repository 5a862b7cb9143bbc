"""A trained HeraSched model as an engine `Policy` (``herasched:PATH`` in `simulate`, `compare`):
at every decision instant it observes the engine exactly as `envs.herasched.HeraSchedEnv` does,
and

- when no job of the window fits now, it waits for the next event (`Wait()`), as the env moves
  time on;
- else the selector decides: Forward is `Wait()`; a slot's job gets its nodes from the allocator,
  one pick after another on the same observation (the chosen job's slot appended), each among the
  nodes still allowed, and starts there (`Start(row, nodes)`); the engine then asks again at the
  same instant.

With ``@allocator=NAME`` (`place_with`) a heuristic allocator of the grid's (in the run's profile
dialect) places each job the selector picks, in place of the allocator agent: an ablation of the
hierarchy (which half does what). Under a reservation a job running past it still leaves the
oldest job its nodes (`_place`).

So a model schedules a trace through `simulate` exactly as through its environment (tested), and
nothing else starts a job: under ``--backfill easy`` the engine's backfilling is never called (it
runs behind a job that could not start, and HeraSched only starts jobs that fit); conservative
backfilling, whose plan places every job itself, is refused.

Greedy by default: each agent's scores in float64 from float32 weights (in numpy,
`agents.herasched_numpy`), rounded to float32, the first maximum among the allowed actions
(`agents.greedy`); `sample=True` draws from the softmax of
the same scores (Gumbel-max, seeded).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hpcsched.agents.greedy import decision_scores, greedy
from hpcsched.agents.herasched_nets import fits_layout
from hpcsched.agents.herasched_numpy import numpy_scores
from hpcsched.cluster.allocate import fitting_nodes
from hpcsched.envs.hera_observation import HeraLayout, HeraObserver, OldestReservation
from hpcsched.sim.decisions import Start, Wait


class HeraSchedPolicy:
    """The selector's and the allocator's actors (torch modules of either family) as a Policy.

    `slots[i]` counts the selector's choices of window slot i since `reset` (`slots[window]`:
    Forward), one per selector decision (Fig. 4.6's histogram)."""

    #: it chooses every job's nodes itself (its allocator agent), whatever the engine's allocator
    places_jobs = True

    def __init__(self, selector, allocator, *, net: str, window: int, tail: int,
                 sample: bool = False, seed: int = 0, name: str = "herasched",
                 reserve_after: float | None = None, place_with: str | None = None) -> None:
        self.name = name
        #: ``@allocator=NAME``: that heuristic (in the run's profile dialect, made at `reset`)
        #: places the selector's jobs in place of the allocator agent; None: the agent
        self.place_with = place_with
        self.placer = None
        self.reserve_after = None if reserve_after is None else \
            OldestReservation.check(reserve_after, f"{name}: ")
        self.guard: OldestReservation | None = None  # made at `reset`, for the jobs it reads
        self.net = net
        self.window, self.tail = int(window), int(tail)
        self.sample = bool(sample)
        self.rng = np.random.default_rng(seed)
        self.selector = selector
        self.allocator = allocator
        self._scorers = None
        self.observer: HeraObserver | None = None
        self.obs = np.zeros(0, dtype=np.float32)
        self.decisions = 0
        self.slots = np.zeros(self.window + 1, dtype=np.int64)

    def reset(self, view) -> None:
        if view.profile_loop != "pass":
            raise ValueError(f"{self.name} decides at every arrival and completion and starts "
                             f"jobs where it chose (the pass loop: the hpcsim or standard "
                             f"profile), not under the {view.profile} profile")
        if view.backfill == "conservative":
            raise ValueError(f"{self.name} places its jobs itself and has no separate backfiller: "
                             f"run it with --backfill none (or easy, which then never acts), not "
                             f"conservative, whose plan places every job")
        layout = HeraLayout.of(view.cluster, self.window, self.tail)
        fits_layout(self.net, {"selector_policy": self.selector,
                               "allocator_policy": self.allocator}, layout)
        self.observer = HeraObserver(layout, view.cluster, view.jobs)
        self.obs = np.zeros(layout.n_allocator, dtype=np.float32)
        self._scorers = (numpy_scores(self.selector, layout), numpy_scores(self.allocator, layout))
        self.decisions = 0
        self.slots = np.zeros(layout.forward + 1, dtype=np.int64)
        self.guard = None if self.reserve_after is None else \
            OldestReservation(self.reserve_after, view.jobs.req_time)
        if self.place_with is not None:
            from hpcsched.sim.factory import resolve_allocator
            self.placer = resolve_allocator(self.place_with, view.profile)

    def _scores(self, agent: int) -> np.ndarray:
        """The agent's (0: selector, 1: allocator) float64 scores of the observation now."""
        return self._scorers[agent].scores(self.obs)

    def _choose(self, scores: np.ndarray, mask: np.ndarray) -> int:
        if not self.sample:
            return greedy(scores, mask)
        noisy = decision_scores(scores) + self.rng.gumbel(size=scores.shape).astype(np.float32)
        return int(np.argmax(np.where(mask, noisy, -np.inf)))

    def decide(self, view):
        observer = self.observer
        snap = observer.observe(view, self.obs)
        if not snap.fits.any():
            return Wait()
        layout = observer.layout
        mask = observer.selector_mask()
        guard = self.guard
        plan = None if guard is None else guard.narrow(view, observer, mask)
        slot = self._choose(self._scores(0), mask)
        self.decisions += 1
        self.slots[slot] += 1
        if slot == layout.forward:
            return Wait()
        row = int(snap.rows[slot])
        if self.placer is not None:
            return Start(row, self._place(view, row, plan))
        self.obs[-1] = observer.slot_value(slot)
        scores = self._scores(1)
        chosen: list[int] = []
        for _ in range(int(observer.count[row])):
            allowed = observer.allocator_mask(slot, chosen)
            if plan is not None:
                allowed = guard.placeable(plan, view.now, observer, row, allowed, chosen)
            chosen.append(self._choose(scores, allowed))
            self.decisions += 1
        return Start(row, tuple(chosen))

    def _place(self, view, row: int, plan) -> tuple[int, ...]:
        """`row`'s nodes from the heuristic allocator (``@allocator=NAME``). Under a reservation
        (`plan`), a job running past it gets the nodes that leave the oldest job its share if
        they are enough, else all of those and the allocator's pick of the rest among the others
        (no more than the reservation spares: `OldestReservation.narrow` let it through so)."""
        observer = self.observer
        cluster, free = view.cluster, view.free
        demand, count = observer.demand[row], int(observer.count[row])
        fits = fitting_nodes(cluster, free, demand)
        if plan is None or view.now + self.guard.req[row] <= plan.shadow:
            nodes = self.placer.allocate(cluster, free, demand, count, fits=fits)
        else:
            safe = plan.harmless(demand) & fits
            n_safe = int(np.count_nonzero(safe))
            if n_safe >= count:
                nodes = self.placer.allocate(cluster, free, demand, count, fits=safe)
            else:
                rest = self.placer.allocate(cluster, free, demand, count - n_safe,
                                            fits=fits & ~safe)
                nodes = np.concatenate([np.flatnonzero(safe), rest])
        return tuple(int(i) for i in nodes)

    def summary(self) -> dict[str, Any]:
        out = {"agent_decisions": self.decisions}
        if self.guard is not None:
            out["reserving_decisions"] = self.guard.reserving
        return out


def as_policy(model, *, sample: bool = False, seed: int = 0,
              name: str = "herasched") -> HeraSchedPolicy:
    """A `agents.herasched.HeraSched` learner (in memory) as an engine Policy, with the masks it
    was trained with (`reserve_after`)."""
    c = model.config
    return HeraSchedPolicy(model.selector_policy, model.allocator_policy, net=c.net,
                           window=model.layout.window, tail=model.layout.tail, sample=sample,
                           seed=seed, name=name, reserve_after=c.reserve_after)


def load_herasched(path, *, sample: bool = False, seed: int = 0, name: str | None = None,
                   reserve_after: float | None = None,
                   place_with: str | None = None) -> HeraSchedPolicy:
    """The model file at `path` (a full checkpoint or a slim export) as an engine Policy: its
    actors, on whatever cluster it is asked to schedule (the default network carries over; the
    thesis's MLPs need a cluster and window of their own shape). `reserve_after` (None: the
    model's own, `train herasched --reserve-after`, if it was trained so) holds EASY's
    reservation for the oldest job once it has waited that long; `place_with` (a heuristic
    allocator's name) places the selector's jobs in place of the model's allocator agent."""
    from hpcsched.agents.herasched import RECIPE, HeraSchedConfig
    from hpcsched.agents.herasched_nets import ModelShape, agent_networks
    from hpcsched.modelfile import config_of, read_model, restore_state

    ck = read_model(path, recipe=RECIPE)
    config = config_of(path, lambda: HeraSchedConfig.from_dict(ck["config"]))
    norm = ck["norm"]
    # the thesis's MLPs are sized by the training layout; ours gets the cluster's at reset()
    layout = config_of(path, lambda: ModelShape(int(norm["n_selector"]), int(norm["window"]),
                                                int(norm["nodes"]))) \
        if config.net == "thesis" else None
    actors = []
    for agent in ("selector", "allocator"):
        actor = config_of(path, lambda: agent_networks(config.net, layout, agent, config.hidden,
                                                       config.width)[0])
        restore_state(path, actor, ck["weights"], f"{agent}_policy")
        actors.append(actor)
    return HeraSchedPolicy(actors[0], actors[1], net=config.net, window=norm["window"],
                           tail=norm["tail"], sample=sample, seed=seed,
                           name=name or f"herasched:{path}",
                           reserve_after=config.reserve_after if reserve_after is None
                           else reserve_after, place_with=place_with)


__all__ = ["HeraSchedPolicy", "as_policy", "load_herasched"]
