"""Cleaning rules of the profiles, every count checked by hand or against SchedGym's fixture."""

import numpy as np
import pytest

from hpcsched.workload.cleaning import RULES, CleaningReport, clean
from hpcsched.workload.jobs import SWF_FIELDS, JobTable
from hpcsched.workload.swf import read_swf

# Six jobs, each exercising a rule (fields not listed are -1):
#
#   row  id submit  run alloc req_procs req_time req_mem user exe
#   r1    1     0   100    4      2       200       -     3    -   ordinary
#   r2    2    10    -1    2     -1        -1       -     1    -   run and request unknown
#   r3    3     5     0    1      1        50    2048     7    -   run time 0
#   r4    5    20    -1   -1     -1        60       -     2    9   procs unknown, run unknown
#   r5    4    15    40    8      8        -1       -     1    -   request unknown; id < r4's
#   r6    6    12    70    0      3         0       -     4    -   request 0
ROWS = [
    dict(job_id=1, submit=0, run_time=100, alloc_procs=4, req_procs=2, req_time=200, user=3),
    dict(job_id=2, submit=10, run_time=-1, alloc_procs=2, req_procs=-1, req_time=-1, user=1),
    dict(job_id=3, submit=5, run_time=0, alloc_procs=1, req_procs=1, req_time=50, req_mem=2048,
         user=7),
    dict(job_id=5, submit=20, run_time=-1, alloc_procs=-1, req_procs=-1, req_time=60, user=2,
         executable=9),
    dict(job_id=4, submit=15, run_time=40, alloc_procs=8, req_procs=8, req_time=-1, user=1),
    dict(job_id=6, submit=12, run_time=70, alloc_procs=0, req_procs=3, req_time=0, user=4),
]


@pytest.fixture
def six(tmp_path) -> JobTable:
    lines = ["; MaxNodes: 16"]
    for row in ROWS:
        lines.append(" ".join(str(row.get(f, -1)) for f in SWF_FIELDS))
    path = tmp_path / "six.swf"
    path.write_text("\n".join(lines) + "\n")
    return read_swf(path)


def test_rlscheduler_rules_by_hand(six):
    jobs, report = clean(six, "rlscheduler")
    # r3 dropped (run 0). Requests of -1 take the RAW run time: r2 -> -1, r5 -> 40. Run times < 0
    # become 10: r2, r4. Kept ids 1 2 5 4 6 sorted by id: r4 and r5 swap places (2 rows moved).
    # r4 keeps procs -1: SchedGym never looks at it.
    assert jobs.job_id.tolist() == [1, 2, 4, 5, 6]
    assert jobs.run_time.tolist() == [100, 10, 40, 10, 70]
    assert jobs.req_time.tolist() == [200, -1, 40, 60, 0]
    assert jobs.procs.tolist() == [4, 2, 8, -1, 3]
    assert jobs.line.tolist() == [2, 3, 6, 5, 7]  # rows still name their file line
    assert report == CleaningReport(
        rules="rlscheduler",
        rows_read=6,
        rows_kept=5,
        dropped={"run time 0": 1},
        changed={"requested time unknown -> run time": 2, "run time unknown -> 10 s": 2,
                 "reordered by job id": 2},
        # over all six rows, the dropped r3 included; -1 everywhere gives 0 (SchedGym starts at 0)
        norm={"max_run_time": 100, "max_procs": 16, "max_req_mem": 2048, "max_user": 7,
              "max_group": 0, "max_executable": 9},
    )


def test_standard_rules_by_hand(six):
    jobs, report = clean(six, "standard")
    # r4 dropped for its procs (first reason; its run time is unknown too), r2 for its run time,
    # r3 for its run time of 0. Requests <= 0 take the run time: r5 (-1 -> 40), r6 (0 -> 70).
    # Kept submits 0 15 12, sorted: r5 and r6 swap places (2 rows moved).
    assert jobs.job_id.tolist() == [1, 6, 4]
    assert jobs.submit.tolist() == [0, 12, 15]
    assert jobs.run_time.tolist() == [100, 70, 40]
    assert jobs.req_time.tolist() == [200, 70, 40]
    assert jobs.procs.tolist() == [4, 3, 8]
    assert report.rows_read == 6 and report.rows_kept == 3
    assert report.dropped == {"processors unknown": 1, "run time unknown": 1, "run time 0": 1}
    assert report.changed == {"requested time unknown -> run time": 2,
                              "reordered by submit time": 2}
    assert report.norm["max_run_time"] == 100 and report.norm["max_procs"] == 16


def test_every_row_is_accounted_for(six):
    for rules in RULES:
        _, report = clean(six, rules)
        assert report.rows_read == report.rows_kept + sum(report.dropped.values())


def test_procs_rule_counts_a_table_whose_procs_differ():
    table = JobTable.from_columns(submit=[0, 1], run_time=[5, 5], req_time=[9, 9],
                                  alloc_procs=[2, 4], req_procs=[3, 1], procs=[2, 4])
    for rules in RULES:
        jobs, report = clean(table, rules)
        if rules == "cqsim":  # CQSim reads the requested count only
            assert jobs.procs.tolist() == [3, 1]
            assert report.changed == {"procs = requested": 2}
            continue
        assert jobs.procs.tolist() == [3, 4]
        expected = {"procs = max(allocated, requested)": 1}
        if rules == "schedinspector":  # its loader also sets both requests to the run times
            expected["requested time -> run time (perfect estimates)"] = 2
        assert report.changed == expected


def test_requests_shorter_than_the_run_are_kept():
    table = JobTable.from_columns(submit=[0], run_time=[100], req_time=[50], req_procs=[1])
    for rules in ("rlscheduler", "standard"):
        jobs, report = clean(table, rules)
        assert jobs.req_time.tolist() == [50] and not report.changed and not report.dropped
    # CQSim's filter clamps the run time to the request instead, and counts it
    for rules in ("cqsim", "dras"):
        jobs, report = clean(table, rules)
        assert jobs.run_time.tolist() == [50] and jobs.req_time.tolist() == [50]
        assert report.changed == {"run time clamped to the request": 1}


def test_an_unknown_submit_time_is_dropped_and_counted_or_kept_as_schedgym_does():
    """SWF's -1 (unknown) submit time: the standard and hpcsim rules drop the job and count it
    (after the other reasons: row 2 has no run time either); CQSim's filter drops any negative
    submit; SchedGym's loader keeps it, and the engine then schedules it (test_cli)."""
    table = JobTable.from_columns(submit=[0, -1, -1, 5], run_time=[5, -1, 5, 5],
                                  req_time=[9, 9, 9, 9], req_procs=[1, 1, 1, 1])
    for rules in ("standard", "hpcsim"):
        jobs, report = clean(table, rules)
        assert jobs.submit.tolist() == [0, 5]
        assert report.dropped == {"run time unknown": 1, "submit time unknown": 1}
    jobs, report = clean(table, "cqsim")
    assert jobs.submit.tolist() == [0, 5] and report.dropped == {"submit time negative": 2}
    jobs, report = clean(table, "rlscheduler")
    assert jobs.submit.tolist() == [0, -1, -1, 5] and not report.dropped


def test_input_table_is_left_alone(six):
    before = {k: v.copy() for k, v in six.columns.items()}
    clean(six, "standard")
    clean(six, "rlscheduler")
    for k, v in six.columns.items():
        np.testing.assert_array_equal(v, before[k])


def test_unknown_rules():
    table = JobTable.from_columns(submit=[0], run_time=[1])
    msg = "unknown cleaning rules 'sched'; valid: rlscheduler, schedinspector, standard"
    with pytest.raises(ValueError, match=msg):
        clean(table, "sched")


def test_summary_text(raw_trace):
    _, report = clean(raw_trace("lublin-1"), "rlscheduler")
    assert report.summary() == (
        "10000 jobs read, 10000 kept; requested time unknown -> run time: 10000"
    )


def test_ctc_sp2_drops_17_under_rlscheduler(raw_trace, schedgym_fixture):
    expected = schedgym_fixture["job_loading"]["dropped_in_these_traces"]["CTC-SP2-1996-3.1-cln"]
    jobs, report = clean(raw_trace("ctc-sp2"), "rlscheduler")
    assert expected == 17
    assert report.dropped == {"run time 0": 17}
    assert len(jobs) == 77205 == schedgym_fixture["trace_notes"]["CTC-SP2-1996-3.1-cln.swf.gz"][
        "n_loaded_jobs"]
    assert report.summary() == (
        "77222 jobs read, 77205 kept; dropped, run time 0: 17; "
        "requested time unknown -> run time: 6"
    )


@pytest.mark.parametrize("name, key, fixture_name", [
    ("lublin-1", "lublin_256.swf", "lublin_256"),
    ("lublin-2", None, "lublin_256_new2"),
    ("hpc2n", "HPC2N-2002-2.2-cln.swf.gz", "HPC2N-2002-2.2-cln"),
    ("ctc-sp2", "CTC-SP2-1996-3.1-cln.swf.gz", "CTC-SP2-1996-3.1-cln"),
])
def test_schedgym_loading_facts(raw_trace, schedgym_fixture, name, key, fixture_name):
    jobs, report = clean(raw_trace(name), "rlscheduler")
    dropped = schedgym_fixture["job_loading"]["dropped_in_these_traces"][fixture_name]
    assert sum(report.dropped.values()) == dropped
    assert "reordered by job id" not in report.changed  # ids already increase in these files
    if key is not None:
        notes = schedgym_fixture["trace_notes"][key]
        assert report.norm["max_run_time"] == notes["max_exec_time"]
        assert report.norm["max_procs"] == notes["max_procs"]
        assert len(jobs) == notes["n_loaded_jobs"]
