"""Cutting a trace by submission time (`hpcsched.workload.timecut`) and `trace convert --from
--until`: times on the trace's wall clock, half-open cuts, a CERIT-SC source kept as its lines."""

from __future__ import annotations

import numpy as np
import pytest

from hpcsched.workload.jobs import JobTable, TraceHeader
from hpcsched.workload.timecut import from_first_submission, submit_clock, submitted_between
from tests.test_cli import assert_one_line_error, run_cli

#: 2013-01-01 00:22:27 in Prague (CET, UTC+1): 2013-01-01T00:00Z is 1356998400
START = 1356996147
PRAGUE = TraceHeader(name="t", unix_start_time=START, fields={"TimeZoneString": "Europe/Prague"})


def test_a_date_is_midnight_on_the_traces_wall_clock():
    # 2013-01-01 00:00 CET is 2012-12-31 23:00 UTC = 1356998400 - 3600
    assert submit_clock("2013-01-01", PRAGUE) == 1356998400 - 3600 - START
    assert submit_clock("2013-01-01T06:30", PRAGUE) == 1356998400 - 3600 + 6.5 * 3600 - START
    utc = TraceHeader(name="t", unix_start_time=START)  # no zone named: UTC
    assert submit_clock("2013-01-01", utc) == 1356998400 - START
    assert submit_clock("2013-01-01T00:00+01:00", utc) == 1356998400 - 3600 - START
    assert submit_clock("1234.5", PRAGUE) == 1234.5  # seconds: the submit clock as it is
    with pytest.raises(ValueError, match="names no start time"):
        submit_clock("2013-01-01", TraceHeader(name="t"))
    with pytest.raises(ValueError, match=r"--from '2013-13-01': neither a date"):
        submit_clock("2013-13-01", PRAGUE, what="--from")
    with pytest.raises(ValueError, match="not in this system's time zone database"):
        submit_clock("2013-01-01", TraceHeader(name="t", unix_start_time=0,
                                               fields={"TimeZoneString": "Mars/Olympus"}))


def test_consecutive_cuts_share_no_job_and_miss_none():
    submit = np.array([0.0, 5.0, 10.0, 10.0, 15.0, 20.0])
    jobs = JobTable.from_columns(submit=submit, run_time=np.ones(6), req_procs=np.ones(6))
    a, b = submitted_between(jobs, None, 10.0), submitted_between(jobs, 10.0, None)
    assert list(a) == [0, 1] and list(b) == [2, 3, 4, 5]  # a job at the boundary is the later's
    part = from_first_submission(jobs.take(b), "later")
    assert list(part.submit) == [0.0, 0.0, 5.0, 10.0] and part.header.name == "later"


def test_convert_cuts_a_cerit_trace_by_date_as_its_own_lines(tmp_path, capsys):
    from hpcsched.workload.traces import load_trace

    out = tmp_path / "march.swf.gz"
    code, _, err = run_cli(capsys, "trace", "convert", "cerit-2013", str(out), "--from",
                           "2013-03-26")
    assert code == 0 and (tmp_path / "march.swf.gz.machines").is_file(), err
    part, log = load_trace(str(out)), load_trace("cerit-2013")
    lo = submit_clock("2013-03-26", log.header)
    keep = log.submit >= lo
    assert len(part) == int(keep.sum()) > 0 and f"wrote {len(part)} jobs" in err
    np.testing.assert_array_equal(part.cores_per_node, log.cores_per_node[keep])
    np.testing.assert_array_equal(part.mem_per_node, log.mem_per_node[keep])
    assert part.header.fields["MaxNodes"] == "68"  # the .machines beside it was read


def test_convert_cuts_an_swf_trace_by_seconds(tmp_path, capsys):
    from hpcsched.workload.traces import load_trace

    log = load_trace("lublin-1")
    lo, hi = float(log.submit[100]), float(log.submit[300])
    out = tmp_path / "part.swf"
    code, _, err = run_cli(capsys, "trace", "convert", "lublin-1", str(out), "--from", str(lo),
                           "--until", str(hi))
    assert code == 0, err
    part = load_trace(str(out))
    expected = log.job_id[(log.submit >= lo) & (log.submit < hi)]
    np.testing.assert_array_equal(part.job_id, expected)


@pytest.mark.parametrize("argv, needles", [
    (["cerit-2013", "OUT", "--clean", "hpcsim"], ["written as its own lines", "--clean"]),
    (["cerit-2013", "OUT", "--from", "2013-02-01", "--first", "5"],
     ["by position (--start, --first) or by submission time"]),
    (["cerit-2013", "OUT", "--from", "2014-01-01"], ["no job was submitted from 2014-01-01"]),
    (["lublin-1", "OUT", "--from", "2013-01-01"], ["names no start time"]),
])
def test_convert_refusals_are_one_line(tmp_path, capsys, argv, needles):
    argv = [str(tmp_path / "x.swf") if a == "OUT" else a for a in argv]
    code, _, err = run_cli(capsys, "trace", "convert", *argv)
    assert_one_line_error(code, err, *needles)
    assert not (tmp_path / "x.swf").exists()
