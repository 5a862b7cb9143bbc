"""HeraSched's evaluation data (issue 17 part 4): the periods that train, validate and test it, on
each cluster of the protocol, defined once, as `dbf_starts` defines DBF's split.

    period = hera_period("spartan-deeplearn", "train")     # generated: a seed, a first day, days
    period = hera_period("cerit-zewura", "test")            # cut from the real CERIT-SC log
    jobs = period.jobs()                                   # times from its first submission
    print(period.command("test.swf"))                      # the line that writes it to a file

    hpcsched trace generate spartan-deeplearn --seed 1701 --days 56 --start 2021-09-20 \\
        -o dl-train.txt
    hpcsched trace convert cerit-2013 cerit-test.swf --from 2013-03-12 --until 2013-03-26

Both kinds of period satisfy `HeraPeriod`: the partition (the cluster the protocol runs it on), the
split, its days, its jobs as a file of it reads back (`jobs()`, times from the first submission),
the `hpcsched trace` line that writes that file (`command`), and a phrase that says what it is
(`describe`). In each partition the periods follow one another: train, then validation, then
test, then the high-load days where there are any.

**The Spartan-like partitions** (`Period`). Each period is its own draw of the generator
(`workload.spartan`), with its own seed, on its own calendar days. Separate seeds stand in for
later periods of one log rather than cuts of one long trace because the generator is stationary
apart from the weekly cycle, which the calendar days keep, and because each draw is then
calibrated to the thesis's load by itself: a cut of one trace can be much lighter or heavier than
the load the thesis's grid was calibrated at (Deeplearn seeds differ by a factor of 3 on a week).
That the test period comes after both others is then a statement about the days, not about the
jobs, which are independent anyway. Sizes: Deeplearn 56 / 14 / 28 days (about 10,300 / 2,600 /
5,100 jobs at the thesis's 183 a day), Physical 2 / 1 / 1 days (about 24,000 / 12,000 / 12,000
jobs at 12,019 a day); the high-load days have the thesis's counts (1,137 and 52,985 jobs).

**CERIT-SC** (`LogPeriod`, partition ``cerit-zewura``, the bundled cluster of the trace's
`.machines` file). The real log `cerit-2013` (jobs submitted from 2013-01-01 00:22 to 2013-03-30
23:23, Prague time) cut by submission time into whole weeks from its first day, at midnight on
the log's own wall clock (Europe/Prague): train 8 weeks (2013-01-01 to 02-26, 7,808 jobs in the
log), validation 2 weeks (02-26 to 03-12, 2,685 jobs), test 2 weeks (03-12 to 03-26, 5,145 jobs).
Here later periods are later jobs of one log, so the test period is after both others in the
jobs themselves. Whole weeks keep the same mix of weekdays in every period; train is four times
validation, as in the Deeplearn periods, and test is as long as validation because the log has
only 12 whole weeks. The periods differ in load, as a real log does: scheduled from an empty
machine under FCFS + best-fit with EASY (the hpcsim profile, on cerit-zewura), train waits 382 s
on average, validation 231 s and test 11,273 s, and the log grows from 554 jobs in its first week
to 2,845 in its 12th, so the test period is its busiest stretch. A 7 / 2 / 3 split was set aside
because its validation weeks (02-19 to 03-05) never wait under that reference, so that every model
that starts its jobs at once would score the same. The last 5 days (03-26 to the log's end, 2,262
jobs) are in no period: they are not a whole week.

There is no high-load day. The thesis's are defined by job counts, and the days of this log with
the most jobs (1,236 on 03-26, 1,138 on 03-20) never wait when scheduled alone from an empty
machine under the same reference: the waits come from days-long jobs carried over from before.
Only 5 of its 89 days wait alone (03-19 and 03-21 to 03-24, all in the test weeks); picking one of
them would choose the test by a heuristic's result, not by its load.

A period cut from the log is prepared with `drop_oversized`: the log holds one job that its own
published machine cannot hold (job 8687, in the validation weeks; `traces.TraceInfo.
known_oversized`), which a simulation drops, counted and named in the run's summary; a file of
the period names no bundled trace, so `train herasched` and `simulate` take `--drop-oversized`
for it. Cleaning drops the 2 jobs with a negative run time (in the training weeks), counted too.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import ClassVar, Protocol

import numpy as np

#: every split of a generated partition, in order of time
SPLITS = ("train", "validation", "test", "validation-high-load", "test-high-load")
#: the splits of a partition cut from a real log (no high-load days)
LOG_SPLITS = SPLITS[:3]


class HeraPeriod(Protocol):
    """What every period of the protocol gives, generated or cut from a log."""

    partition: str  # the cluster the protocol runs it on (a bundled cluster's name)
    split: str
    start: dt.date  # its first day
    days: float
    high_load_day: bool
    drop_oversized: bool  # prepare it dropping (and counting) jobs larger than the cluster

    @property
    def end(self) -> dt.date: ...

    @property
    def cluster(self) -> str: ...

    @property
    def name(self) -> str: ...

    def jobs(self): ...

    def command(self, out: str) -> str: ...

    def describe(self) -> str: ...


class _Days:
    """What both kinds of period derive from their `partition`, `start` and `days`."""

    partition: str
    start: dt.date
    days: float

    @property
    def end(self) -> dt.date:
        """The day after its last (end exclusive)."""
        return self.start + dt.timedelta(days=self.days)

    @property
    def cluster(self) -> str:
        """The bundled cluster it runs on: the partition's own."""
        return self.partition


@dataclass(frozen=True)
class Period(_Days):
    """One generated period of the protocol: the generator's arguments."""

    partition: str
    split: str
    seed: int
    start: dt.date
    days: float
    high_load_day: bool = False
    drop_oversized: ClassVar[bool] = False

    @property
    def name(self) -> str:
        """The name of its trace: deeplearn-test, physical-train, ..."""
        return f"{self.partition.removeprefix('spartan-')}-{self.split}"

    def generate(self):
        """The period's jobs (`workload.spartan.Generated`); the same every call."""
        from hpcsched.workload.spartan import generate

        if self.high_load_day:
            return generate(self.partition, seed=self.seed, high_load_day=True, start=self.start)
        return generate(self.partition, self.days, seed=self.seed, start=self.start)

    def jobs(self):
        """The period's jobs, times counted from the first submission (as a file of them reads
        back), named `name`."""
        from hpcsched.workload.timecut import from_first_submission

        return from_first_submission(self.generate().jobs, self.name)

    def command(self, out: str) -> str:
        """The `hpcsched trace generate` line that writes it to `out`."""
        when = "--high-load-day" if self.high_load_day else f"--days {self.days:g}"
        return (f"hpcsched trace generate {self.partition} --seed {self.seed} {when} "
                f"--start {self.start:%Y-%m-%d} -o {out}")

    def describe(self) -> str:
        """What it is, in a phrase: '28 days from 2021-11-29, seed 1703'."""
        span = "one high-load day" if self.high_load_day else f"{self.days:g} days"
        return f"{span} from {self.start}, generated with seed {self.seed}"


@dataclass(frozen=True)
class LogPeriod(_Days):
    """One period of the protocol cut from a real log: the jobs of `trace` submitted from the
    midnight that starts `start` to the one that ends its `days`, on the log's wall clock
    (`workload.timecut`)."""

    partition: str
    split: str
    trace: str  # a bundled trace's name
    start: dt.date
    days: float
    high_load_day: ClassVar[bool] = False
    drop_oversized: ClassVar[bool] = True

    @property
    def name(self) -> str:
        """The name of its trace: cerit-2013-test, ..."""
        return f"{self.trace}-{self.split}"

    def bounds(self, header) -> tuple[float, float]:
        """[first, end) on the submit clock of the log whose header is `header`."""
        from hpcsched.workload.timecut import submit_clock

        return (submit_clock(f"{self.start:%Y-%m-%d}", header),
                submit_clock(f"{self.end:%Y-%m-%d}", header))

    def rows(self, log) -> np.ndarray:
        """The rows of the log's table `log` (as read, uncleaned) that the period holds."""
        from hpcsched.workload.timecut import submitted_between

        return submitted_between(log, *self.bounds(log.header))

    def jobs(self):
        """The period's jobs as read from the log (uncleaned), times counted from the period's
        first submission (as the file `command` writes reads back), named `name`."""
        from hpcsched.workload.timecut import from_first_submission
        from hpcsched.workload.traces import load_trace

        log = load_trace(self.trace)
        rows = self.rows(log)
        if rows.size == 0:
            raise ValueError(f"{self.trace}: no job was submitted from {self.start} until "
                             f"{self.end} ({self.partition}'s {self.split} period)")
        return from_first_submission(log.take(rows), self.name)

    def command(self, out: str) -> str:
        """The `hpcsched trace convert` line that writes it to `out` (with OUT.machines)."""
        return (f"hpcsched trace convert {self.trace} {out} --from {self.start:%Y-%m-%d} "
                f"--until {self.end:%Y-%m-%d}")

    def describe(self) -> str:
        """What it is, in a phrase: '14 days from 2013-03-12, cut from the cerit-2013 log'."""
        weeks = f" ({self.days / 7:g} weeks)" if self.days % 7 == 0 else ""
        return f"{self.days:g} days{weeks} from {self.start}, cut from the {self.trace} log"


def _periods(partition: str, first: dt.date, seed: int, days: tuple[float, float, float]
             ) -> dict[str, Period]:
    out: dict[str, Period] = {}
    day = first
    for i, split in enumerate(SPLITS):
        length = days[i] if i < len(days) else 1.0
        out[split] = Period(partition, split, seed + i, day, length, high_load_day=i >= len(days))
        day = out[split].end
    return out


def _log_periods(partition: str, trace: str, first: dt.date, days: tuple[float, ...]
                 ) -> dict[str, LogPeriod]:
    out: dict[str, LogPeriod] = {}
    day = first
    for split, length in zip(LOG_SPLITS, days, strict=True):
        out[split] = LogPeriod(partition, split, trace, day, length)
        day = out[split].end
    return out


#: seeds 1701.. (Deeplearn) and 1711.. (Physical): none of them used by any other experiment;
#: CERIT-SC: 8 / 2 / 2 weeks of the real log from its first day (see the module docstring)
PERIODS: dict[str, dict[str, HeraPeriod]] = {
    "spartan-deeplearn": _periods("spartan-deeplearn", dt.date(2021, 9, 20), 1701, (56, 14, 28)),
    "spartan-physical": _periods("spartan-physical", dt.date(2022, 9, 23), 1711, (2, 1, 1)),
    "cerit-zewura": _log_periods("cerit-zewura", "cerit-2013", dt.date(2013, 1, 1), (56, 14, 14)),
}


def hera_periods(partition: str) -> dict[str, HeraPeriod]:
    """Every period of `partition` (``spartan-deeplearn``, ``spartan-physical``,
    ``cerit-zewura``), by split."""
    if partition not in PERIODS:
        raise ValueError(f"HeraSched's protocol has periods for {', '.join(PERIODS)}, not "
                         f"{partition!r}")
    return dict(PERIODS[partition])


def hera_period(partition: str, split: str) -> HeraPeriod:
    """The period `split` of `partition`."""
    periods = hera_periods(partition)
    if split not in periods:
        if split in SPLITS:
            raise ValueError(f"{partition} has no {split} period (its periods: "
                             f"{', '.join(periods)})")
        raise ValueError(f"split {split!r}: choose one of {', '.join(SPLITS)}")
    return periods[split]


__all__ = ["HeraPeriod", "LOG_SPLITS", "LogPeriod", "PERIODS", "Period", "SPLITS", "hera_period",
           "hera_periods"]
