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
oldest job its nodes (`_place`). With ``@selector=NAME`` (`order_by`) one of the grid's selectors
picks instead, with HPCsim's backfilling behind its head (`_decide_ordered`), and the allocator
agent places each job started; with both options a model runs the grid's cell exactly (tested).
With ``@work-conserving`` (`work_conserving`) the selector is not offered Forward while a job it
may pick fits now: it never leaves the machine idle on purpose (an ablation of schedule
cycling; the choices among the jobs are the model's own).

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
from hpcsched.envs.hera_observation import (HeraLayout, HeraObserver, OldestReservation,
                                            heuristic_nodes)
from hpcsched.sim.decisions import Start, Wait


class HeraSchedPolicy:
    """The selector's and the allocator's actors (torch modules of either family) as a Policy.

    `slots[i]` counts the selector's choices of window slot i since `reset` (`slots[window]`:
    Forward), one per selector decision (Fig. 4.6's histogram)."""

    #: it chooses every job's nodes itself (its allocator agent), whatever the engine's allocator
    places_jobs = True

    def __init__(self, selector, allocator, *, net: str, window: int, tail: int,
                 sample: bool = False, seed: int = 0, name: str = "herasched",
                 reserve_after: float | None = None, place_with: str | None = None,
                 order_by: str | None = None, work_conserving: bool = False) -> None:
        self.name = name
        #: ``@work-conserving``: Forward hidden while a job the selector may pick fits now;
        #: `held_forward` counts the selector decisions where it was hidden so
        self.work_conserving = bool(work_conserving)
        self.held_forward = 0
        #: ``@selector=NAME``: that heuristic of the grid's orders the jobs, with HPCsim's
        #: backfilling behind its head (the grid's cells), in place of the selector agent; each
        #: job started is placed by the allocator agent (or `place_with`); None: the agent
        self.order_by = order_by
        self._order = None
        self._call: dict | None = None  # HPCsim's backfilling call under way (order_by)
        self.unshown = 0  # placements (kept or not) of jobs the agent's window did not show
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
        if self.order_by is not None:
            from hpcsched.policies.priority import get_policy
            if view.profile != "hpcsim" or view.backfill != "easy":
                raise ValueError(f"{self.name}: @selector runs the grid's cells (HPCsim's "
                                 f"backfilling behind the head): the hpcsim profile with --backfill "
                                 f"easy, not {view.profile} with {view.backfill}")
            if self.reserve_after is not None:
                raise ValueError(f"{self.name}: @selector backfills as HPCsim does; it takes no "
                                 f"@reserve")
            if self.work_conserving:
                raise ValueError(f"{self.name}: @selector replaces the selector agent, so "
                                 f"@work-conserving has nothing to act on")
            self._order = get_policy(self.order_by, dialect="hpcsim")  # the grid's selector
            self._call = None
            self.unshown = 0
        self.held_forward = 0

    def _scores(self, agent: int) -> np.ndarray:
        """The agent's (0: selector, 1: allocator) float64 scores of the observation now."""
        return self._scorers[agent].scores(self.obs)

    def _choose(self, scores: np.ndarray, mask: np.ndarray) -> int:
        if not self.sample:
            return greedy(scores, mask)
        noisy = decision_scores(scores) + self.rng.gumbel(size=scores.shape).astype(np.float32)
        return int(np.argmax(np.where(mask, noisy, -np.inf)))

    def decide(self, view):
        if self._order is not None:
            return self._decide_ordered(view)
        observer = self.observer
        snap = observer.observe(view, self.obs)
        if not snap.fits.any():
            return Wait()
        layout = observer.layout
        mask = observer.selector_mask()
        guard = self.guard
        plan = None if guard is None else guard.narrow(view, observer, mask)
        if self.work_conserving and mask[layout.forward] and mask[:layout.forward].any():
            mask[layout.forward] = False
            self.held_forward += 1
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

    # -- @selector=NAME: a heuristic orders, HPCsim backfills, the allocator places -------------

    def _ordered_queue(self, view) -> list[int]:
        """The waiting rows by the heuristic's priority now, ties in queue order (HPCsim's)."""
        q = view.queue
        order = self._order
        keys = order.keys(view) if hasattr(order, "keys") else order.static_keys(view.jobs)[q]
        return q[np.argsort(keys, kind="stable")].tolist()

    def _decide_ordered(self, view):
        """One decision of HPCsim's pass (spec hpcsim-semantics.md sections 4 and 7): start the
        jobs in priority order while the first fits; behind the first that does not (the head),
        one backfilling call over the rest in order, each job that fits placed and kept only if
        the head's estimate is unchanged, one start a decision; after a call that started
        something, a new pass at the same instant, else wait for the next event."""
        call = self._call
        while True:
            if call is not None and call["now"] == view.now:
                if call["cursor"] is not None:
                    out = self._backfill(view, call)
                    if out is not None:
                        return out
                if not call["kept"]:
                    call["cursor"] = None  # the call ended having started nothing: wait
                    return Wait()
            order = self._ordered_queue(view)
            if not order:
                self._call = None
                return Wait()
            head = order[0]
            if view.fits(np.array([head]))[0]:
                self._call = None
                return Start(head, self._nodes_for(view, head))
            call = self._call = {"now": view.now, "head": head, "rest": order[1:], "cursor": 0,
                                 "kept": False, "target": view.hpcsim_estimate(head)}

    def _backfill(self, view, call):
        """The next job of the backfilling `call` that is kept (a `Start`), or None at its end."""
        rest = call["rest"]
        while call["cursor"] < len(rest):
            row = rest[call["cursor"]]
            call["cursor"] += 1
            if not view.fits(np.array([row]))[0]:
                continue
            nodes = self._nodes_for(view, row)
            if view.hpcsim_estimate(call["head"], row, nodes) == call["target"]:
                call["kept"] = True
                return Start(row, nodes)
        return None

    def _nodes_for(self, view, row: int) -> tuple[int, ...]:
        """`row`'s nodes now: the heuristic's (`place_with`), or the allocator agent's, on the
        observation with `row` as the selector's choice. Where the agent's window does not show
        `row` (a queue longer than the window), it is shown in the first slot, the rest of the
        queue after it (counted in `unshown`)."""
        if self.placer is not None:
            return self._place(view, row, None)
        observer = self.observer
        snap = observer.observe(view, self.obs)
        at = np.flatnonzero(snap.rows == row)
        if not at.size:
            self.unshown += 1
            snap = observer.observe(_FirstShown(view, row), self.obs)
            at = np.flatnonzero(snap.rows == row)
        slot = int(at[0])
        self.obs[-1] = observer.slot_value(slot)
        scores = self._scores(1)
        chosen: list[int] = []
        for _ in range(int(observer.count[row])):
            chosen.append(self._choose(scores, observer.allocator_mask(slot, chosen)))
            self.decisions += 1
        return tuple(chosen)

    def _place(self, view, row: int, plan) -> tuple[int, ...]:
        """`row`'s nodes from the heuristic allocator (``@allocator=NAME``; under a reservation,
        `envs.hera_observation.heuristic_nodes`'s rule)."""
        return heuristic_nodes(self.placer, view, self.observer, row, plan, self.guard)

    def summary(self) -> dict[str, Any]:
        out = {"agent_decisions": self.decisions}
        if self.guard is not None:
            out["reserving_decisions"] = self.guard.reserving
        if self._order is not None:
            out["unshown_placements"] = self.unshown
        if self.work_conserving:
            out["forward_hidden"] = self.held_forward
        return out


class _FirstShown:
    """A decision view whose queue has `row` first, then the others in their order: what the
    allocator agent observes to place a job its window would not show."""

    def __init__(self, view, row: int) -> None:
        self._view = view
        queue = view.queue
        self.queue = np.concatenate([[row], queue[queue != row]]).astype(np.int64)

    def __getattr__(self, name):
        return getattr(self._view, name)


def as_policy(model, *, sample: bool = False, seed: int = 0,
              name: str = "herasched") -> HeraSchedPolicy:
    """A `agents.herasched.HeraSched` learner (in memory) as an engine Policy, with the masks it
    was trained with (`reserve_after`)."""
    c = model.config
    return HeraSchedPolicy(model.selector_policy, model.allocator_policy, net=c.net,
                           window=model.layout.window, tail=model.layout.tail, sample=sample,
                           seed=seed, name=name, reserve_after=c.reserve_after,
                           place_with=c.place_with)


def load_herasched(path, *, sample: bool = False, seed: int = 0, name: str | None = None,
                   reserve_after: float | None = None,
                   place_with: str | None = None,
                   order_by: str | None = None,
                   work_conserving: bool = False) -> HeraSchedPolicy:
    """The model file at `path` (a full checkpoint or a slim export) as an engine Policy: its
    actors, on whatever cluster it is asked to schedule (the default network carries over; the
    thesis's MLPs need a cluster and window of their own shape). `reserve_after` (None: the
    model's own, `train herasched --reserve-after`, if it was trained so) holds EASY's
    reservation for the oldest job once it has waited that long; `place_with` (a heuristic
    allocator's name; None: the model's own, `train herasched --allocator`, if it was trained
    so) places the selector's jobs in place of the model's allocator agent;
    `order_by` (a grid selector's name) picks the jobs, with HPCsim's backfilling, in place of
    its selector agent; `work_conserving` hides Forward from the selector while a job it may
    pick fits."""
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
                           else reserve_after,
                           place_with=config.place_with if place_with is None else place_with,
                           order_by=order_by, work_conserving=work_conserving)


__all__ = ["HeraSchedPolicy", "as_policy", "load_herasched"]
