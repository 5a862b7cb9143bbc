"""The rlscheduler profile against the RLScheduler authors' own simulator (SchedGym, run unmodified):
every job's start time and every metric, on every case of the reference fixture; and the paper's
Table V heuristic columns on its own ten windows."""

import json
from pathlib import Path

import numpy as np
import pytest

from hpcsched.policies.priority import get_policy
from hpcsched.sim.run import prepare, simulate
from hpcsched.workload.windows import paper_windows

FIXTURE = json.loads((Path(__file__).parents[1] / "data" / "schedgym_small.json").read_text())
POLICY = {"FCFS": "fcfs", "SJF": "sjf", "F1": "f1", "WFP3": "wfp3-rls", "UNICEP": "unicep-rls"}
# our metric key -> the fixture's
METRICS = {"bsld": "bsld", "wait": "wait", "turnaround": "turnaround", "slowdown": "sld",
           "utilization": "util", "max_wait": "max_wait"}

_prepared = {}


def prepared(trace_file):
    # the registry knows the bundled traces by their original file names too
    if trace_file not in _prepared:
        _prepared[trace_file] = prepare(trace_file, "rlscheduler")
    return _prepared[trace_file]


def case_id(c):
    return f"{c['trace'].split('-')[0].split('.')[0]}-{c['policy']}-{'bf' if c['backfill'] else 'nobf'}"


@pytest.mark.parametrize("case", FIXTURE["cases"], ids=case_id)
def test_matches_schedgym(case):
    prep = prepared(case["trace"])
    result = simulate(prep, get_policy(POLICY[case["policy"]]),
                      backfill="schedgym" if case["backfill"] else "none",
                      start=case["start"], jobs=case["jobs"])
    np.testing.assert_array_equal(result.start, np.array(case["start_times"], dtype=float))
    ref = case["metrics"]
    for ours, theirs in METRICS.items():
        assert result.metrics[ours] == pytest.approx(ref[theirs], rel=1e-9, abs=0), ours
    for key in ("first_job_id", "last_job_id"):
        assert result.metrics[key] == ref[key]
    assert result.metrics["jobs"] == ref["n_jobs"]


def test_fixture_trace_notes():
    for trace, note in FIXTURE["trace_notes"].items():
        prep = prepared(trace)
        assert len(prep.jobs) == note["n_loaded_jobs"]
        assert prep.cluster.nodes == note["max_nodes"]
        assert prep.cluster.total_procs == note["max_procs"]
        assert prep.report.norm["max_run_time"] == note["max_exec_time"]


# The paper's Table V (bsld, 10 windows x 1024 jobs from the first 10,000), heuristic columns.
TABLE_V = {
    ("lublin-1", "none"): (7273.77, 19753.53, 22274.74, 277.35, 258.37),
    ("lublin-1", "schedgym"): (235.82, 133.87, 307.23, 73.31, 75.07),
    ("lublin-2", "none"): (7842.47, 9523.18, 11265.31, 787.89, 698.34),
    ("lublin-2", "schedgym"): (247.61, 318.35, 379.59, 91.99, 148.25),
    ("hpc2n", "none"): (297.18, 426.99, 609.77, 157.71, 118.01),
    ("hpc2n", "schedgym"): (127.38, 97.39, 175.12, 122.04, 71.95),
}
TABLE_V_POLICIES = ("fcfs", "wfp3-rls", "unicep-rls", "sjf", "f1")


def test_paper_windows_are_the_fixtures():
    assert paper_windows() == FIXTURE["paper_windows_1024"]["starts"]


@pytest.mark.parametrize("trace, backfill", list(TABLE_V), ids=lambda x: str(x))
def test_paper_table_v(trace, backfill):
    prep = prepare(trace, "rlscheduler")
    for policy, paper in zip(TABLE_V_POLICIES, TABLE_V[(trace, backfill)]):
        ours = np.mean([simulate(prep, get_policy(policy), backfill=backfill, start=s,
                                 jobs=1024).metrics["bsld"] for s in paper_windows()])
        assert round(ours, 2) == paper, policy
