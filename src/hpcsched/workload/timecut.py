"""Cutting a trace by submission time: the jobs submitted in [from, until), and a cut's times
counted from its own first submission.

    lo = submit_clock("2013-03-12", jobs.header)        # seconds on the trace's submit clock
    rows = submitted_between(jobs, lo, submit_clock("2013-03-26", jobs.header))
    part = from_first_submission(jobs.take(rows), "cerit-2013-test")

    hpcsched trace convert cerit-2013 test.swf --from 2013-03-12 --until 2013-03-26

A time is a date (``2013-03-12``) or a date and time (``2013-03-12T06:00``) on the trace's own
wall clock, the time zone its header names (``TimeZoneString``; UTC where it names none), so that
a cut by whole days starts at its local midnight and keeps the daily cycle of the people who
submitted the jobs; or a number, seconds on the trace's submit clock (the `submit` column, as
`hpcsched trace jobs` prints it). A date needs the header's ``UnixStartTime``: a trace without
one is cut by seconds only.

A cut is half open, so that consecutive cuts (train until D, validation from D) share no job and
miss none.
"""

from __future__ import annotations

import datetime as dt

import numpy as np

from hpcsched.workload.jobs import JobTable, TraceHeader

#: the header key of an SWF trace's time zone (PWA's, and the CERIT-SC reader's)
ZONE_KEY = "TimeZoneString"


def trace_zone(header: TraceHeader):
    """The time zone of the trace's wall clock (a `tzinfo`): its header's ``TimeZoneString``,
    else UTC."""
    name = (header.fields or {}).get(ZONE_KEY, "").strip()
    if not name:
        return dt.timezone.utc
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"{header.name or 'the trace'}: its time zone {name!r} "
                         f"({ZONE_KEY}) is not in this system's time zone database") from None


def submit_clock(when: str | float, header: TraceHeader, *, what: str = "the time") -> float:
    """`when` (a date, a date and time, or seconds; see the module docstring) as seconds on the
    submit clock of the trace whose header is `header`. `what` names the value in errors
    (``--from``)."""
    if isinstance(when, (int, float)):
        return float(when)
    text = str(when).strip()
    try:
        return float(text)
    except ValueError:
        pass
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"{what} {text!r}: neither a date (YYYY-MM-DD, or YYYY-MM-DDTHH:MM[:SS]) "
                         f"nor seconds of the trace's submit clock") from None
    if header.unix_start_time is None:
        raise ValueError(f"{what} {text!r}: {header.name or 'the trace'} names no start time "
                         f"(UnixStartTime) in its header; give seconds of its submit clock")
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=trace_zone(header))
    return moment.timestamp() - float(header.unix_start_time)


def submitted_between(jobs: JobTable, start: float | None = None,
                      end: float | None = None) -> np.ndarray:
    """The rows (in order) of the jobs submitted at or after `start` and before `end`, both on
    the submit clock (None: no bound)."""
    keep = np.ones(len(jobs), dtype=bool)
    if start is not None:
        keep &= jobs.submit >= start
    if end is not None:
        keep &= jobs.submit < end
    return np.flatnonzero(keep)


def from_first_submission(jobs: JobTable, name: str) -> JobTable:
    """`jobs` with times counted from their first submission, as the trace readers count a
    file's, named `name`: the same jobs as written out and read back."""
    first = float(jobs.submit.min())
    start = jobs.header.unix_start_time
    return jobs.with_columns(submit=jobs.submit - first).with_header(
        name=name, path="", unix_start_time=None if start is None else int(start + first))


__all__ = ["ZONE_KEY", "from_first_submission", "submit_clock", "submitted_between",
           "trace_zone"]
