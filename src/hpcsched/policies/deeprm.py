"""DeepRM's baselines (HotNets'16 section 4.1; the authors' `other_agents.py` settles the details).

Each looks at the M visible slots only and picks, among the jobs that fit *now* for their whole
length, the best by its score; when none fits it answers void. So SJF, Packer and Tetris* keep
packing until nothing more fits: they are work-conserving and never reserve into the future.
Ties go to the lowest slot.

* SJF: the shortest job (score 1/T_j).
* Packer: the largest alignment <free units now, demand> (Tetris' packing score; the paper's
  "increasing order" is the code's maximum).
* Tetris*: knob * alignment / (d * units^2) + (1 - knob) / T_j. The alignment is normalised into
  [0, 1] so that both terms weigh alike; with the raw alignment any knob acts as Packer (spec
  section 6). The knob is a parameter (default 0.5, the value of the spec's reference runs).
* Random: uniform over the M+1 actions, empty slots and void included (the code's), so not
  work-conserving: a pick that is not valid ends the step.

Every policy has two faces. `act(batch)` scores the slots of a whole `DiscreteBatch` at once and
returns one action index per environment (0..M-1 a slot, M void): training, the load sweep and
`run_batch` step the batch with it. `decide(view)` is the same choice as a decision on one engine
under the deeprm profile (`Pick(row)` or `Wait()`, see `hpcsched.sim.discrete`): it runs `act` on
the view's read-only grid state and lets the view translate the action.
"""

from __future__ import annotations

import numpy as np

from hpcsched.sim.decisions import Decision
from hpcsched.sim.discrete_batch import DiscreteBatch


def decide_on_grid(policy, view) -> Decision:
    """`policy.act` on the grid state of a deeprm-profile decision, as a decision."""
    grid = getattr(view, "grid", None)
    if grid is None:
        raise ValueError(f"policy {policy.name!r} decides on DeepRM's grid: run it under the "
                         f"deeprm profile (--profile deeprm)")
    return grid.decision(int(policy.act(grid)[0]))


class GridHeuristic:
    """A baseline of the deeprm profile: `act(batch)` over many environments, `decide(view)` on one
    engine."""

    name = ""

    def act(self, batch: DiscreteBatch) -> np.ndarray:
        raise NotImplementedError

    def decide(self, view) -> Decision:
        return decide_on_grid(self, view)


def _best(batch: DiscreteBatch, score: np.ndarray) -> np.ndarray:
    """Per environment the fitting slot of highest score (lowest slot on ties), else void."""
    fits = batch.fit_now
    s = np.where(fits, score, -np.inf)
    best = np.argmax(s, axis=1)  # the first maximum: the lowest slot
    return np.where(fits.any(axis=1), best, batch.void)


def alignment(batch: DiscreteBatch) -> np.ndarray:
    """<free units at the current step, demand> per slot: (B, M)."""
    free = batch.grid.units - batch.used[:, 0, :]  # (B, d)
    return (batch.slot_demand * free[:, None, :]).sum(axis=2).astype(np.float64)


class FirstComeFirstServed(GridHeuristic):
    """The oldest fitting job (slots are not in arrival order once jobs have left them)."""

    name = "fcfs"

    def act(self, batch: DiscreteBatch) -> np.ndarray:
        return _best(batch, -batch.slot.astype(np.float64))


class ShortestJobFirst(GridHeuristic):
    name = "sjf"

    def act(self, batch: DiscreteBatch) -> np.ndarray:
        return _best(batch, 1.0 / np.maximum(batch.slot_length, 1))


class Packer(GridHeuristic):
    name = "packer"

    def act(self, batch: DiscreteBatch) -> np.ndarray:
        return _best(batch, alignment(batch))


class TetrisStar(GridHeuristic):
    """Packing blended with shortest-first: `knob` = 1 is Packer, 0 is SJF."""

    def __init__(self, knob: float = 0.5) -> None:
        if not 0 <= knob <= 1:
            raise ValueError(f"the Tetris* knob must be in [0, 1] (got {knob})")
        self.knob = knob
        self.name = "tetris" if knob == 0.5 else f"tetris:{knob:g}"

    def act(self, batch: DiscreteBatch) -> np.ndarray:
        g = batch.grid
        packing = alignment(batch) / (g.resources * g.units * g.units)
        short = 1.0 / np.maximum(batch.slot_length, 1)
        return _best(batch, self.knob * packing + (1 - self.knob) * short)


class RandomAction(GridHeuristic):
    name = "random"

    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)

    def act(self, batch: DiscreteBatch) -> np.ndarray:
        return self.rng.integers(0, batch.actions, batch.B)


HEURISTICS = ("fcfs", "sjf", "packer", "tetris", "random")
DESCRIPTIONS = {
    "fcfs": "the oldest job that fits now (ours; not among the paper's baselines)",
    "sjf": "shortest fitting job first",
    "packer": "largest alignment of demand with the free units (Tetris packing)",
    "tetris": "Tetris*: knob * normalised alignment + (1 - knob) / length (knob 0.5; tetris:K)",
    "random": "uniform over the M+1 actions (empty slots and void included)",
}


def get_grid_policy(name: str, seed: int = 0):
    """A deeprm-profile heuristic by name: fcfs, sjf, packer, tetris[:KNOB], random."""
    key = name.lower()
    if key == "sjf":
        return ShortestJobFirst()
    if key == "fcfs":
        return FirstComeFirstServed()
    if key == "packer":
        return Packer()
    if key == "random":
        return RandomAction(seed)
    if key == "tetris" or key.startswith("tetris:"):
        knob = 0.5
        if ":" in key:
            try:
                knob = float(key.split(":", 1)[1])
            except ValueError:
                raise ValueError(f"policy {name!r}: the Tetris* knob must be a number, e.g. "
                                 f"tetris:0.3") from None
        return TetrisStar(knob)
    raise ValueError(f"unknown policy {name!r} for the deeprm profile; choose one of: "
                     f"{', '.join(HEURISTICS)}, tetris:KNOB or deeprm:MODEL")


__all__ = ["DESCRIPTIONS", "FirstComeFirstServed", "GridHeuristic", "HEURISTICS", "Packer",
           "RandomAction", "ShortestJobFirst", "TetrisStar", "alignment", "decide_on_grid",
           "get_grid_policy"]
