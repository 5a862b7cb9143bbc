"""Decisions: the typed values a policy hands the engine (`Engine.apply`).

A policy never drives the engine: at every decision point it looks at a read-only view and returns
one of these. What a decision means in detail is the engine's loop (chosen by the profile), so that
one policy can run under every published semantics:

- `Pick(row)`: "this job next", the classic scheduler's choice. The textbook pass starts it if it
  fits now, and otherwise gives it the backfilling's reservation and ends the pass; SchedGym's
  commit loop commits to it (it starts as soon as it fits, nothing else is decided before); CQSim's
  level 1 starts it or reserves for it; DeepRM's grid places it at its earliest offset. A plain
  `int` given to `apply` means `Pick(row)`, as a `Discrete` action does in Gymnasium.
- `Start(row, nodes=None)`: start the job now, on these node indices (in allocation order) or where
  the engine's allocator puts it. It must fit now. At CQSim's level 2 it is a backfill start.
- `Reserve(row)`: give the job the backfilling's reservation now (it starts now if it fits), let
  the backfilling start what it may around it, and end this scheduling pass.
- `Wait(until=None)`: start nothing more now; decide again at the next event, or at `until` if that
  comes first. SchedInspector's rejection is `Wait(until=now + 600)`; DeepRM's void action is
  `Wait()` (the time step ends); a one-level DRAS agent with nothing that fits ends the instance so.

Rows are 0-based positions in the job table the engine runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

import numpy as np


@dataclass(frozen=True, slots=True)
class Pick:
    row: int


@dataclass(frozen=True, slots=True)
class Start:
    row: int
    nodes: tuple[int, ...] | None = None


@dataclass(frozen=True, slots=True)
class Reserve:
    row: int


@dataclass(frozen=True, slots=True)
class Wait:
    until: float | None = None


Decision = Union[Pick, Start, Reserve, Wait]
DECISIONS = (Pick, Start, Reserve, Wait)


def as_decision(value) -> Decision:
    """A decision from what a policy returned: a Decision as is, an integer row as `Pick(row)`."""
    if isinstance(value, DECISIONS):
        return value
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return Pick(int(value))
    raise TypeError(f"a policy must return a decision (Pick, Start, Reserve, Wait) or a row "
                    f"number, not {value!r}")


__all__ = ["DECISIONS", "Decision", "Pick", "Reserve", "Start", "Wait", "as_decision"]
