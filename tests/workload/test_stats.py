"""Trace statistics against the RLScheduler paper's Table II (spec section 10)."""

import math

import pytest

from hpcsched.workload.cleaning import clean
from hpcsched.workload.jobs import JobTable
from hpcsched.workload.stats import trace_stats


@pytest.mark.parametrize("name, interarrival, req_time, procs, span_days, load", [
    # the spec's values from these very files (the paper prints 771/4862/22 and 460/1695/39)
    ("lublin-1", 770.7, 4862.8, 22.1, 89.2, 1.06),
    ("lublin-2", 460.3, 1696.0, 39.0, 53.3, 0.62),
])
def test_table_ii_lublin(raw_trace, name, interarrival, req_time, procs, span_days, load):
    for rules in ("rlscheduler", "standard"):  # the same here: nothing to drop, request = run time
        jobs, _ = clean(raw_trace(name), rules)
        s = trace_stats(jobs, 256)
        assert s["jobs"] == 10000 and s["procs"] == 256
        assert round(s["mean_interarrival_s"], 1) == interarrival
        assert round(s["mean_req_time_s"], 1) == req_time
        assert round(s["mean_procs"], 1) == procs
        assert round(s["span_days"], 1) == span_days
        assert round(s["offered_load"], 2) == load
        assert s["exact_estimates"] == 1.0 and s["users"] == 0


def test_table_ii_hpc2n(raw_trace):
    # The paper's HPC2N row (240 procs, it 538 s, rt 17024 s, nt 6) comes from the WHOLE trace
    # (202,871 jobs; the first 10K give 1220 s / 13071 s / 14.1 procs), under either cleaning
    # (nothing is dropped from HPC2N). Its "mean requested time" of 17024 s is in fact the mean
    # RUN time: HPC2N's requested times average 44899 s. (On the Lublin files the two are equal,
    # which hides the slip.) The paper prints the whole part: 538.48 -> 538, 17024.25 -> 17024,
    # 6.36 -> 6. (Its Lublin integers are not all truncated, e.g. 770.74 -> 771, so the Lublin
    # test checks the spec's one-decimal values instead.)
    jobs, report = clean(raw_trace("hpc2n"), "rlscheduler")
    assert not report.dropped
    s = trace_stats(jobs, 240)
    assert s["jobs"] == 202871 and s["procs"] == 240
    assert math.floor(s["mean_interarrival_s"]) == 538
    assert math.floor(s["mean_run_time_s"]) == 17024
    assert math.floor(s["mean_procs"]) == 6
    assert math.floor(s["mean_req_time_s"]) == 44899  # not the paper's "rt"
    assert s["users"] == 257
    assert round(s["offered_load"], 2) == 0.60
    first_10k = trace_stats(jobs.window(0, 10000), 240)
    assert math.floor(first_10k["mean_interarrival_s"]) == 1220


def test_small_table_by_hand():
    jobs = JobTable.from_columns(submit=[0, 100, 400], run_time=[100, 50, 10],
                                 req_time=[100, 60, 10], req_procs=[2, 4, 1], user=[1, 1, -1])
    s = trace_stats(jobs, 4)
    assert s["span_days"] == 400 / 86400
    assert s["mean_interarrival_s"] == 200  # 400 s over 2 gaps
    assert s["mean_req_time_s"] == pytest.approx(170 / 3)
    assert s["mean_procs"] == pytest.approx(7 / 3)
    assert s["offered_load"] == (200 + 200 + 10) / (400 * 4)
    assert s["users"] == 1  # -1 is unknown
    assert s["exact_estimates"] == pytest.approx(2 / 3)
    assert s["jobs_alike"] == 0  # three different submit times
    twins = JobTable.from_columns(submit=[0, 0, 0, 400], run_time=[100, 50, 10, 5],
                                  req_time=[100, 100, 10, 10], req_procs=[2, 2, 2, 2])
    assert trace_stats(twins, 4)["jobs_alike"] == 0.5  # rows 0 and 1; row 2 asks less time


def test_degenerate_tables():
    one = JobTable.from_columns(submit=[5], run_time=[1], req_procs=[1])
    s = trace_stats(one, 4)
    assert math.isnan(s["mean_interarrival_s"]) and math.isnan(s["offered_load"])
    with pytest.raises(ValueError, match="no jobs"):
        trace_stats(one.take(slice(0, 0)), 4)
    with pytest.raises(ValueError, match="max_procs must be positive"):
        trace_stats(one, 0)
