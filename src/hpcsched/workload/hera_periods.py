"""HeraSched's evaluation data (issue 17 part 4): the Spartan-like periods that train, validate and
test it, defined once, as `dbf_starts` defines DBF's split.

    period = hera_period("spartan-deeplearn", "train")     # a Period: seed, first day, days
    jobs = period.generate()                               # `workload.spartan.generate(...)`

    hpcsched trace generate spartan-deeplearn --seed 1701 --days 56 --start 2021-09-20 \\
        -o dl-train.txt

Each period is its own draw of the generator (`workload.spartan`), with its own seed, on its own
calendar days, the periods following one another: train, then validation, then test, then the
high-load days. Separate seeds stand in for later periods of one log rather than cuts of one long
trace because the generator is stationary apart from the weekly cycle, which the calendar days
keep, and because each draw is then calibrated to the thesis's load by itself: a cut of one trace
can be much lighter or heavier than the load the thesis's grid was calibrated at (Deeplearn seeds
differ by a factor of 3 on a week). That the test period comes after both others is then a
statement about the days, not about the jobs, which are independent anyway.

The thesis trains and evaluates on one and the same workload (spec §6.11) and tests out of sample
only on its high-load days; issue 17 asks for held-out test periods, so HeraSched is trained on
`train`, its run chooses best.pt on `validation`, and is reported on `test` and `test-high-load`.
Sizes: Deeplearn 56 / 14 / 28 days (about 10,300 / 2,600 / 5,100 jobs at the thesis's 183 a day),
Physical 2 / 1 / 1 days (about 24,000 / 12,000 / 12,000 jobs at 12,019 a day); the high-load
days have the thesis's counts (1,137 and 52,985 jobs).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

SPLITS = ("train", "validation", "test", "validation-high-load", "test-high-load")


@dataclass(frozen=True)
class Period:
    """One period of the protocol: the generator's arguments."""

    partition: str
    split: str
    seed: int
    start: dt.date
    days: float
    high_load_day: bool = False

    @property
    def end(self) -> dt.date:
        """The day after its last (end exclusive)."""
        return self.start + dt.timedelta(days=self.days)

    def generate(self):
        """The period's jobs (`workload.spartan.Generated`); the same every call."""
        from hpcsched.workload.spartan import generate

        if self.high_load_day:
            return generate(self.partition, seed=self.seed, high_load_day=True, start=self.start)
        return generate(self.partition, self.days, seed=self.seed, start=self.start)

    def command(self, out: str) -> str:
        """The `hpcsched trace generate` line that writes it to `out`."""
        when = "--high-load-day" if self.high_load_day else f"--days {self.days:g}"
        return (f"hpcsched trace generate {self.partition} --seed {self.seed} {when} "
                f"--start {self.start:%Y-%m-%d} -o {out}")


def _periods(partition: str, first: dt.date, seed: int, days: tuple[float, float, float]
             ) -> dict[str, Period]:
    out: dict[str, Period] = {}
    day = first
    for i, split in enumerate(SPLITS):
        length = days[i] if i < len(days) else 1.0
        out[split] = Period(partition, split, seed + i, day, length, high_load_day=i >= len(days))
        day = out[split].end
    return out


#: seeds 1701.. (Deeplearn) and 1711.. (Physical): none of them used by any other experiment
PERIODS = {
    "spartan-deeplearn": _periods("spartan-deeplearn", dt.date(2021, 9, 20), 1701, (56, 14, 28)),
    "spartan-physical": _periods("spartan-physical", dt.date(2022, 9, 23), 1711, (2, 1, 1)),
}


def hera_periods(partition: str) -> dict[str, Period]:
    """Every period of `partition` (``spartan-deeplearn`` or ``spartan-physical``), by split."""
    if partition not in PERIODS:
        raise ValueError(f"HeraSched's protocol has periods for {', '.join(PERIODS)}, not "
                         f"{partition!r}")
    return dict(PERIODS[partition])


def hera_period(partition: str, split: str) -> Period:
    """The period `split` (one of `SPLITS`) of `partition`."""
    periods = hera_periods(partition)
    if split not in periods:
        raise ValueError(f"split {split!r}: choose one of {', '.join(SPLITS)}")
    return periods[split]


__all__ = ["PERIODS", "Period", "SPLITS", "hera_period", "hera_periods"]
