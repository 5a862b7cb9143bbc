"""A trained HeraSched model as an engine `Policy` (``herasched:PATH`` in `simulate`, `compare`):
at every decision instant it observes the engine exactly as `envs.herasched.HeraSchedEnv` does,
and

- when no job of the window fits now, it waits for the next event (`Wait()`), as the env moves
  time on;
- else the selector decides: Forward is `Wait()`; a slot's job gets its nodes from the allocator,
  one pick after another on the same observation (the chosen job's slot appended), each among the
  nodes still allowed, and starts there (`Start(row, nodes)`); the engine then asks again at the
  same instant.

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
from hpcsched.envs.hera_observation import HeraLayout, HeraObserver
from hpcsched.sim.decisions import Start, Wait


class HeraSchedPolicy:
    """The selector's and the allocator's actors (torch modules of either family) as a Policy.

    `slots[i]` counts the selector's choices of window slot i since `reset` (`slots[window]`:
    Forward), one per selector decision (Fig. 4.6's histogram)."""

    #: it chooses every job's nodes itself (its allocator agent), whatever the engine's allocator
    places_jobs = True

    def __init__(self, selector, allocator, *, net: str, window: int, tail: int,
                 sample: bool = False, seed: int = 0, name: str = "herasched",
                 reserve_after: float | None = None) -> None:
        self.name = name
        if reserve_after is not None and not reserve_after >= 0:
            raise ValueError(f"{name}: reserve_after must be a wait in seconds >= 0, not "
                             f"{reserve_after!r}")
        self.reserve_after = reserve_after
        self.reserving = 0  # selector decisions under the reservation since `reset`
        self.req = np.zeros(0)
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
        self.reserving = 0
        self.req = np.asarray(view.jobs.req_time, dtype=np.float64)

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
        plan = None
        if self.reserve_after is not None:
            plan = self._reserve(view, snap, mask)
        slot = self._choose(self._scores(0), mask)
        self.decisions += 1
        self.slots[slot] += 1
        if slot == layout.forward:
            return Wait()
        row = int(snap.rows[slot])
        self.obs[-1] = observer.slot_value(slot)
        scores = self._scores(1)
        chosen: list[int] = []
        for _ in range(int(observer.count[row])):
            allowed = self._placeable(plan, view.now, row, observer.allocator_mask(slot, chosen),
                                      chosen)
            chosen.append(self._choose(scores, allowed))
            self.decisions += 1
        return Start(row, tuple(chosen))

    def _reserve(self, view, snap, mask: np.ndarray):
        """Narrow the selector's `mask` once the oldest waiting job has waited `reserve_after`,
        as EASY would behind it: it alone if it fits now; else Forward and the jobs that either
        end (at their requested time) by its reservation or can be placed past it without taking
        its nodes (`sim.backfill_nodes.Reservation`). Returns the reservation held (None: none)
        for the allocator's picks."""
        queue = view.queue
        submit = self.observer.submit[queue]
        i = int(np.argmin(submit))
        if view.now - submit[i] < self.reserve_after:
            return None
        head = int(queue[i])
        window = self.observer.layout.window
        rows = snap.rows
        at = np.flatnonzero(rows == head)
        if at.size and snap.fits[at[0]]:
            self.reserving += 1
            mask[:] = False
            mask[at[0]] = True
            return None
        plan = view.reservation(head)
        if plan.shadow <= view.now or not np.isfinite(plan.shadow):
            return None  # it fits but is not shown, or it can never start: nothing to hold
        self.reserving += 1
        shown = np.flatnonzero(mask[:window])  # the slots whose jobs fit now
        if shown.size:
            jobs = rows[shown]
            past = view.now + self.req[jobs] > plan.shadow
            if past.any():
                # per request class of the window (`snap.node_fits`' rows): the nodes that fit
                # now and leave the oldest job its share, and those that would take it
                classes = snap.class_of_slot[shown]
                demand = np.zeros((snap.node_fits.shape[0], plan.at_shadow.shape[1]),
                                  dtype=plan.at_shadow.dtype)
                demand[classes] = self.observer.demand[jobs]
                safe = plan.harmless_each(demand) & snap.node_fits
                n_safe = safe.sum(axis=1)
                n_other = snap.node_fits.sum(axis=1) - n_safe
                room = n_safe + np.minimum(plan.spare, n_other)
                held = past & (room[classes] < self.observer.count[jobs])
                mask[shown[held]] = False
        mask[window] = True
        return plan

    def _placeable(self, plan, now: float, row: int, mask: np.ndarray,
                   chosen: list[int]) -> np.ndarray:
        """The allocator's `mask` for `row` under `plan`: a job running past the reservation takes
        the head's nodes only while spare ones are left."""
        if plan is None or now + self.req[row] <= plan.shadow:
            return mask
        safe = plan.harmless(self.observer.demand[row])
        if sum(1 for i in chosen if not safe[i]) >= plan.spare:
            mask &= safe
        return mask

    def summary(self) -> dict[str, Any]:
        out = {"agent_decisions": self.decisions}
        if self.reserve_after is not None:
            out["reserving_decisions"] = self.reserving
        return out


def as_policy(model, *, sample: bool = False, seed: int = 0,
              name: str = "herasched") -> HeraSchedPolicy:
    """A `agents.herasched.HeraSched` learner (in memory) as an engine Policy."""
    c = model.config
    return HeraSchedPolicy(model.selector_policy, model.allocator_policy, net=c.net,
                           window=model.layout.window, tail=model.layout.tail, sample=sample,
                           seed=seed, name=name)


def load_herasched(path, *, sample: bool = False, seed: int = 0, name: str | None = None,
                   reserve_after: float | None = None) -> HeraSchedPolicy:
    """The model file at `path` (a full checkpoint or a slim export) as an engine Policy: its
    actors, on whatever cluster it is asked to schedule (the default network carries over; the
    thesis's MLPs need a cluster and window of their own shape)."""
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
                           name=name or f"herasched:{path}", reserve_after=reserve_after)


__all__ = ["HeraSchedPolicy", "as_policy", "load_herasched"]
