"""The `hpcsim` profile against HPCsim's own schedules, job by job.

`tests/data/hpcsim_small/<trace>.json.gz` holds what HPCsim (the thesis's simulator, run unmodified;
see that folder's README) did on two synthetic traces in its own format: for 7 selectors x 3
allocators x backfilling on/off (42 cases per trace), every job's start time, its nodes (hostnames
in allocation order) and whether HPCsim started it by backfilling, and HPCsim's own metrics. Every
expected value here is read from those files; nothing is copied from our output.

A representative subset runs by default (14 cases: every selector once, every allocator with and
without backfilling, on both traces); the other 70 cases of the grid are `slow` (`pytest -m slow`;
all 84 with `pytest -m "slow or not slow"`).

Whether a job was backfilled is read from `engine.mode` (BACKFILLED): the pass loop does not fill
`Result.modes` (only CQSim's loop does).
"""

from __future__ import annotations

import gzip
import json
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

from hpcsched.cluster.allocate import BestFit, HpcsimBestFit, fitting_nodes
from hpcsched.cluster.load import load_cluster
from hpcsched.policies.priority import get_policy
from hpcsched.sim.engine import BACKFILLED
from hpcsched.sim.factory import make_engine
from hpcsched.workload.cleaning import clean
from hpcsched.workload.slurm import read_hpcsim

from hetero_helpers import deadline

DATA = Path(__file__).parents[1] / "data" / "hpcsim_small"
TRACES = {"phys2k_s11": "physical", "dl1k_s55": "deeplearn"}
SELECTORS = ("fcfs", "lcfs", "sjf", "wfp3", "unicep", "f_1", "f_2")
#: HPCsim's names -> ours (under the hpcsim dialect)
POLICY = {"f_1": "f1", "f_2": "f2"}
ALLOCATOR = {"first_available": "first-available", "best_fit": "best-fit",
             "topology_aware": "topology"}

#: The cases run by default. Per trace: each selector once, each allocator with and without
#: backfilling. Backfilling on `physical` (87 nodes) is the costliest part of the grid, so three
#: of its cases run by default, with few and many backfilled jobs.
DEFAULT = {
    "phys2k_s11": [
        ("wfp3", "first_available", True),   # 1205 jobs backfilled
        ("f_1", "best_fit", True),           # 56
        ("sjf", "topology_aware", True),     # 320
        ("fcfs", "first_available", False),
        ("lcfs", "best_fit", False),
        ("unicep", "topology_aware", False),
        ("f_2", "best_fit", False),
    ],
    "dl1k_s55": [
        ("fcfs", "best_fit", True),
        ("unicep", "first_available", True),
        ("f_2", "topology_aware", True),
        ("lcfs", "topology_aware", True),
        ("sjf", "first_available", False),
        ("wfp3", "best_fit", False),
        ("f_1", "topology_aware", False),
    ],
}


def case_key(selector: str, allocator: str, backfill: bool) -> str:
    return f"{selector}+{allocator}+{'bf' if backfill else 'nobf'}"


def grid():
    for trace in TRACES:
        default = {case_key(*c) for c in DEFAULT[trace]}
        for selector in SELECTORS:
            for allocator in ALLOCATOR:
                for backfill in (True, False):
                    key = case_key(selector, allocator, backfill)
                    marks = () if key in default else (pytest.mark.slow,)
                    yield pytest.param(trace, key, id=f"{trace}-{key}", marks=marks)


@lru_cache(maxsize=None)
def reference(trace: str) -> dict:
    return json.loads(gzip.decompress((DATA / f"{trace}.json.gz").read_bytes()))


@lru_cache(maxsize=None)
def jobs_of(trace: str):
    return clean(read_hpcsim(DATA / f"{trace}.tsv.gz", TRACES[trace]), "hpcsim")[0]


@lru_cache(maxsize=None)
def cluster_of(trace: str):
    return load_cluster("spartan-" + TRACES[trace])


def run_case(trace: str, key: str, allocator=None):
    """(engine, result) of one case of the grid; `allocator` replaces the case's (mutants)."""
    case = reference(trace)["cases"][key]
    with deadline(300):  # 1-20 s a case; a loop that stops advancing its clock fails here
        return _run(trace, case, allocator)


def _run(trace, case, allocator):
    engine = make_engine(jobs_of(trace), cluster_of(trace), "hpcsim",
                         "easy" if case["backfill"] else "none",
                         allocator=allocator or ALLOCATOR[case["allocator"]])
    result = engine.run(get_policy(POLICY.get(case["selector"], case["selector"]),
                                   dialect="hpcsim"))
    return engine, result


def first_difference(trace: str, key: str, engine, result) -> str | None:
    """None if every job's start, nodes and backfilled flag equal HPCsim's; else the first job
    (in start order) that differs, described."""
    rows = reference(trace)["cases"][key]["jobs"]
    names = cluster_of(trace).names
    jobs = jobs_of(trace)
    assert jobs.job_id.astype(int).tolist() == [r[0] for r in rows]  # same jobs, same order
    wrong = []
    for i, (job_id, _, start, _, nodes, backfilled) in enumerate(rows):
        ours_nodes = None if result.allocations[i] is None else \
            [names[n] for n in result.allocations[i]]
        ours = (result.start[i], ours_nodes, bool(engine.mode[i] == BACKFILLED))
        if ours != (start, nodes, backfilled):
            wrong.append((start, job_id, ours, (start, nodes, backfilled)))
    if not wrong:
        return None
    start, job_id, ours, theirs = min(wrong, key=lambda w: (w[0], w[1]))
    return (f"{len(wrong)} job(s) differ; first (by HPCsim's start) job {job_id}: ours "
            f"(start, nodes, backfilled) = {ours}, HPCsim {theirs}")


# -- the data can tell cases apart ---------------------------------------------------------------


def test_reference_has_the_whole_grid():
    for trace in TRACES:
        cases = reference(trace)["cases"]
        assert set(cases) == {case_key(s, a, b) for s in SELECTORS for a in ALLOCATOR
                              for b in (True, False)}
        for key, case in cases.items():
            assert case_key(case["selector"], case["allocator"], case["backfill"]) == key
            assert len(case["jobs"]) == len(jobs_of(trace))
            # without backfilling HPCsim flags no job as backfilled; with it, some are
            assert any(r[5] for r in case["jobs"]) == case["backfill"]


def test_cases_differ_from_each_other():
    """A test that compares schedules is only as strong as the schedules are different: every
    selector, allocator and backfilling setting must change some job's start time. One pair of
    HPCsim's schedules happens to coincide (on physical with best fit and backfilling, WFP3 and
    UNICEP start every job at the same time on the same nodes); every other pair differs."""
    coincide = {("phys2k_s11", frozenset({"wfp3+best_fit+bf", "unicep+best_fit+bf"}))}
    for trace in TRACES:
        groups: dict[str, list[str]] = {}
        for key, case in reference(trace)["cases"].items():
            groups.setdefault(json.dumps([r[2] for r in case["jobs"]]), []).append(key)
        same = {(trace, frozenset(keys)) for keys in groups.values() if len(keys) > 1}
        assert same == {c for c in coincide if c[0] == trace}


# -- the schedules ---------------------------------------------------------------------------------


@pytest.mark.parametrize("trace, key", list(grid()))
def test_schedule_and_metrics_equal_hpcsims(trace, key):
    """Every job's start time and nodes (hostnames, in allocation order) and whether it was
    backfilled are HPCsim's; so are HPCsim's metrics.

    Metric tolerances: wait and turnaround are integer seconds, so their maxima are exact and
    their means equal up to the order of a float sum (rel 1e-12). Bounded slowdown is a mean of
    ratios (rel 1e-12). HPCsim divides utilization by `total * final_time + 1e-6`; the 1e-6 moves
    it by under 1e-15 relative here (total * final_time > 1e8), so rel 1e-9 is ample and still
    far tighter than any real difference (one core-second in 6264 cores x 1e5 s is 1.6e-9
    relative)."""
    engine, result = run_case(trace, key)
    diff = first_difference(trace, key, engine, result)
    assert diff is None, f"{trace} {key}: {diff}"

    want = reference(trace)["cases"][key]["metrics"]
    got = result.metrics
    assert got["max_wait"] == want["max_waiting"]
    assert got["wait"] == pytest.approx(want["avg_waiting"], rel=1e-12)
    assert got["max_bsld"] == pytest.approx(want["max_slowdown"], rel=1e-12)
    assert got["bsld"] == pytest.approx(want["avg_slowdown"], rel=1e-12)
    assert got["turnaround"] == pytest.approx(want["avg_turnaround"], rel=1e-12)
    assert got["utilization_cores"] == pytest.approx(want["cpu_utilization"], rel=1e-9)
    # physical has no GPUs: HPCsim divides 0 by 0 + 1e-6 and reports 0
    assert got["utilization_gpus"] == pytest.approx(want["gpu_utilization"], rel=1e-9, abs=1e-12)


# -- the comparison catches wrong allocators -------------------------------------------------------


class BestFitTiesInClusterOrder(HpcsimBestFit):
    """HPCsim's best fit with one thing wrong: ties go in cluster order (n2 before n10), not in
    the string order of node ids ('n10' < 'n2')."""

    name = "mutant-best-fit"

    def allocate(self, cluster, free, request, count, fits=None):
        if fits is None:
            fits = fitting_nodes(cluster, free, np.asarray(request))
        nodes = np.flatnonzero(fits)
        if len(nodes) < count:
            return None
        cores, gpus = cluster.resource_index("cores"), cluster.resource_index("gpus")
        waste = free[nodes, cores] + free[nodes, gpus] * 100
        return nodes[np.argsort(waste, kind="stable")[:count]].astype(np.int64)


def test_both_clusters_have_names_whose_string_order_is_not_cluster_order():
    """HPCsim's ids n0..nN sort as strings differently from their index once N >= 10."""
    for trace in TRACES:
        n = cluster_of(trace).nodes
        assert n >= 11
        assert sorted(f"n{i}" for i in range(n)) != [f"n{i}" for i in range(n)]


@pytest.mark.parametrize("trace", list(TRACES))
def test_best_fit_ties_in_cluster_order_would_be_caught(trace):
    """The fixture has a best-fit allocation where ties in cluster order give other nodes than
    HPCsim's string order, so a best fit that got this wrong fails the schedule test. (Without
    backfilling, the cheapest case.)"""
    key = case_key("fcfs", "best_fit", False)
    engine, result = run_case(trace, key, allocator=BestFitTiesInClusterOrder())
    assert first_difference(trace, key, engine, result) is not None
    # and the mutant is otherwise HPCsim's: with the real tie rule it agrees
    engine, result = run_case(trace, key, allocator=HpcsimBestFit())
    assert first_difference(trace, key, engine, result) is None


def test_our_best_fit_is_not_hpcsims():
    """Our own best fit (GPUs left, then cores, then memory; ties in cluster order) is not
    HPCsim's, and the comparison sees it: the hpcsim profile must use HPCsim's."""
    trace, key = "dl1k_s55", case_key("fcfs", "best_fit", False)
    engine, result = run_case(trace, key, allocator=BestFit())
    assert first_difference(trace, key, engine, result) is not None
