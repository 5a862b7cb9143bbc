"""The compiled static-priority loop (`sim/kernels.py`) against the Python pass engine, job for job.

Every comparison is exact: start times bit for bit, the number of decisions, and every reservation
in order (EASY's (row, shadow time), conservative backfilling's (row, first reserved start)). The reference is the engine as a user runs it:
`make_engine(jobs, cluster, "standard", backfill).run(policy, compiled=False)`.
"""

import json
import os
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hpcsched.cluster.pool import NodePool
from hpcsched.policies.priority import get_policy
from hpcsched.sim import kernels
from hpcsched.sim.factory import make_engine
from hpcsched.sim.run import prepare
from hpcsched.workload.jobs import JobTable
from hpcsched.workload.traces import trace_names

BACKFILLS = ["none", "easy", "conservative", "schedgym"]
#: (policy name, seed): every static heuristic kind, and random priorities under several seeds
POLICIES = [("fcfs", 0), ("sjf", 0), ("f1", 0), ("saf", 0), ("random", 0), ("random", 1),
            ("random", 7)]


def python_engine(jobs, cluster, name, seed, backfill):
    engine = make_engine(jobs, cluster, "standard", backfill)
    result = engine.run(get_policy(name, seed=seed), compiled=False)
    return result.start, result.metrics["decisions"], engine.reservations


def kernel(jobs, cluster, name, seed, backfill):
    keys = get_policy(name, seed=seed).static_keys(jobs)
    return kernels.schedule_table(jobs, cluster, keys, backfill)


def assert_same(jobs, cluster, name, seed, backfill, what=""):
    start, decisions, reservations = python_engine(jobs, cluster, name, seed, backfill)
    k_start, k_rows, k_shadows, k_decisions = kernel(jobs, cluster, name, seed, backfill)
    case = f"{what} {name} (seed {seed}) + {backfill}"
    assert k_start.dtype == np.float64
    differ = np.flatnonzero(k_start != start)
    assert differ.size == 0, (f"{case}: {differ.size} start time(s) differ, first row "
                              f"{differ[0]}: kernel {k_start[differ[0]]}, engine {start[differ[0]]}")
    assert k_decisions == decisions, f"{case}: decisions {k_decisions} != {decisions}"
    assert list(zip(k_rows.tolist(), k_shadows.tolist())) == \
        [(int(r), float(s)) for r, s in reservations], f"{case}: reservations differ"


@lru_cache(maxsize=None)
def prepared(name):
    return prepare(name)


# -- windows of every bundled trace ----------------------------------------------------------------


@pytest.mark.parametrize("backfill", BACKFILLS)
@pytest.mark.parametrize("trace", trace_names())
def test_windows_of_every_bundled_trace(trace, backfill):
    prep = prepared(trace)
    n = len(prep.jobs)
    # the start of the log, and a window 60% in (the busier years of the long logs)
    for first in sorted({0, max(0, int(0.6 * n) - 1000)}):
        window = prep.jobs.window(first, min(1000, n - first))
        for name, seed in POLICIES:
            assert_same(window, prep.cluster, name, seed, backfill, f"{trace}[{first}:+1000]")


# -- random job tables -----------------------------------------------------------------------------


@st.composite
def job_tables(draw):
    """Small clusters and the corners of the rules: many jobs submitted at once, equal keys and
    equal estimated ends (few distinct durations and sizes), jobs that need the whole machine,
    zero-length requests and run times (a job that ends the instant it starts), half-second times
    (a running job whose estimate falls within one second of now), and jobs killed at their
    request."""
    nodes = draw(st.integers(1, 10))
    ppn = draw(st.sampled_from([1, 2, 3]))
    n = draw(st.integers(1, 50))
    gaps = draw(st.lists(st.one_of(st.just(0.0), st.sampled_from([0.5, 1.0, 2.0, 5.0]),
                                   st.integers(0, 30).map(float)), min_size=n, max_size=n))
    submit = np.cumsum(gaps)
    times = st.one_of(st.just(0.0), st.sampled_from([0.5, 1.0, 2.0, 3.0, 5.0, 10.0]),
                      st.integers(1, 60).map(float), st.integers(1, 60).map(lambda k: k + 0.5))
    run = np.array(draw(st.lists(times, min_size=n, max_size=n)))
    req = np.array(draw(st.lists(times, min_size=n, max_size=n)))
    whole = nodes * ppn
    procs = np.array(draw(st.lists(st.one_of(st.just(whole), st.integers(1, whole),
                                             st.integers(1, max(1, whole // 3))),
                                   min_size=n, max_size=n)), dtype=float)
    jobs = JobTable.from_columns(submit=submit, run_time=run, req_time=req, req_procs=procs,
                                 alloc_procs=procs, user=np.arange(n) % 3)
    return jobs, NodePool(nodes, ppn)


@st.composite
def crowded_tables(draw):
    """A burst of small jobs with two or three distinct requests on a few nodes, some ending early:
    running jobs share estimated ends, so the order among equal estimates, the extra nodes of an
    EASY reservation and the completion of one of several equal estimates all come into play."""
    nodes = draw(st.integers(3, 10))
    n = draw(st.integers(5, 40))
    submit = np.cumsum(draw(st.lists(st.sampled_from([0.0, 0.0, 0.0, 1.0, 3.0]), min_size=n,
                                     max_size=n)))
    req = np.array(draw(st.lists(st.sampled_from(draw(st.lists(
        st.sampled_from([1.0, 2.0, 4.0, 5.0, 8.0, 10.0]), min_size=2, max_size=3))),
        min_size=n, max_size=n)))
    early = np.array(draw(st.lists(st.sampled_from([1.0, 1.0, 0.5, 0.2]), min_size=n, max_size=n)))
    procs = np.array(draw(st.lists(st.one_of(st.integers(1, 3), st.just(nodes)), min_size=n,
                                   max_size=n)), dtype=float)
    jobs = JobTable.from_columns(submit=submit, run_time=np.round(req * early), req_time=req,
                                 req_procs=procs, alloc_procs=procs)
    return jobs, NodePool(nodes)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(job_tables(), crowded_tables()), st.sampled_from(["fcfs", "sjf", "saf", "srf", "sqf", "lcfs", "f1", "random"]),
       st.integers(0, 3), st.sampled_from(BACKFILLS))
def test_random_job_tables(table, name, seed, backfill):
    jobs, cluster = table
    assert_same(jobs, cluster, name, seed, backfill, "random table")


@pytest.mark.parametrize("backfill", BACKFILLS)
def test_seeded_random_tables(backfill):
    """Volume where hypothesis gives variety: 150 crowded tables of 150 jobs on 4-16 nodes, with
    few distinct durations (ties everywhere) and mostly small jobs (many backfilling chances)."""
    for seed in range(150):
        rng = np.random.default_rng(seed)
        nodes = int(rng.integers(4, 17))
        n = 150
        submit = np.cumsum(rng.choice([0.0, 0.0, 1.0, 2.0, 5.0, 20.0], n))
        req = rng.choice([0.0, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 100.0], n)
        run = np.minimum(req, rng.choice([0.0, 1.0, 5.0, 10.0, 30.0, 100.0], n))
        procs = np.where(rng.random(n) < 0.1, nodes, rng.integers(1, max(2, nodes // 2), n))
        jobs = JobTable.from_columns(submit=submit, run_time=run, req_time=req,
                                     req_procs=procs.astype(float), alloc_procs=procs.astype(float))
        name, policy_seed = POLICIES[seed % len(POLICIES)]
        assert_same(jobs, NodePool(nodes), name, policy_seed, backfill, f"table {seed}")


def test_running_estimate_within_a_second_of_now():
    """Conservative backfilling maps a running job whose estimate is not after now to now + 1 s,
    after sorting by the estimate, so a profile can step back in time:

        3 nodes, t = 0:  A (1 node, request 0.5) starts; B (1 node, request 0) starts, its
                         estimate 0 becomes 1 s; C needs 3 nodes and is reserved for;
                         profile breakpoints 0, 1, 0.5 (sic) with 1, 2, 3 nodes free
                         D (1 node, request 0.7) is then tested against that profile.
    """
    jobs = JobTable.from_columns(submit=[0.0, 0.0, 0.0, 0.0], run_time=[0.5, 0.0, 5.0, 0.7],
                                 req_time=[0.5, 0.0, 5.0, 0.7], req_procs=[1, 1, 3, 1],
                                 alloc_procs=[1, 1, 3, 1])
    for backfill in BACKFILLS:
        assert_same(jobs, NodePool(3), "fcfs", 0, backfill, "hand case")


def test_backfill_ending_exactly_at_the_shadow_time():
    """EASY starts a job that ends exactly at the shadow time, SchedGym's rule does not (it wants
    strictly before), and conservative backfilling lets it run up to the reservation:

        nodes  |AAAAAAAAAA|BBBBBBBBBB      A: 1 node, 10 s, starts at 0
               |CCCCCCCCCC|BBBBBBBBBB      B: 2 nodes (the whole machine), reserved at 10
               0          10               C: 1 node, 10 s: ends at the shadow time
    """
    jobs = JobTable.from_columns(submit=[0.0, 0.0, 0.0], run_time=[10.0, 10.0, 10.0],
                                 req_time=[10.0, 10.0, 10.0], req_procs=[1, 2, 1],
                                 alloc_procs=[1, 2, 1])
    starts = {}
    for backfill in BACKFILLS:
        assert_same(jobs, NodePool(2), "fcfs", 0, backfill, "shadow time")
        starts[backfill] = kernel(jobs, NodePool(2), "fcfs", 0, backfill)[0].tolist()
    assert starts["easy"] == starts["conservative"] == [0.0, 10.0, 0.0]
    assert starts["schedgym"] == starts["none"] == [0.0, 10.0, 20.0]


# -- the contract ----------------------------------------------------------------------------------


def test_contract_types_and_empty_table():
    start, rows, shadows, decisions = kernels.schedule_static(
        [0.0, 1.0], [5.0, 5.0], [5.0, 5.0], [2, 2], [0, 1], 2, "easy")
    # row 1 is decided twice: reserved for at t = 1 (shadow 5), started at t = 5
    assert start.tolist() == [0.0, 5.0] and decisions == 3 and isinstance(decisions, int)
    assert rows.dtype == np.int64 and shadows.dtype == np.float64
    assert rows.tolist() == [1] and shadows.tolist() == [5.0]
    start, rows, shadows, decisions = kernels.schedule_static([], [], [], [], [], 4, "none")
    assert start.size == rows.size == shadows.size == decisions == 0


def test_static_rank_orders_by_key_then_row():
    """The engine's rule under the textbook profile: key, then row; NaN keys last."""
    keys = np.array([3.0, 1.0, 3.0, np.nan, 1.0, -2.0])
    # in order: row 5 (-2), rows 1 and 4 (1), rows 0 and 2 (3), row 3 (NaN)
    assert kernels.static_rank(keys).tolist() == [3, 1, 4, 5, 2, 0]


@pytest.mark.parametrize("change, message", [
    (dict(backfill="fancy"), "unknown backfilling"),
    (dict(submit=[1.0, 0.0, 2.0]), "must not decrease"),
    (dict(need=[1, 3, 1]), "need must lie in"),
    (dict(need=[1, 0, 1]), "need must lie in"),
    (dict(need=[1.5, 1, 1]), "whole numbers"),
    (dict(rank=[0, 0, 2]), "permutation"),
    (dict(rank=[0, 1]), "one value per job"),
    (dict(req=[1.0, -1.0, 1.0]), "req must be finite and >= 0"),
    (dict(executed=[1.0, np.nan, 1.0]), "executed must be finite"),
    (dict(backfill="schedgym"), "needs each job's processors"),
])
def test_bad_input_is_named(change, message):
    args = dict(submit=[0.0, 0.0, 2.0], req=[1.0, 1.0, 1.0], executed=[1.0, 1.0, 1.0],
                need=[1, 2, 1], rank=[0, 1, 2], total_nodes=2, backfill="easy")
    args.update(change)
    with pytest.raises(ValueError, match=message):
        kernels.schedule_static(**args)


def test_without_numba_the_same_functions_run_as_python():
    """Hide numba from a fresh interpreter: the module falls back to plain Python, and gives the
    same schedules as the compiled functions here."""
    prep = prepared("kth-sp2")
    window = prep.jobs.window(2000, 250)
    code = f"""
import json, sys
sys.modules["numba"] = None  # import numba now raises ImportError
from hpcsched.sim import kernels
from hpcsched.sim.run import prepare
from hpcsched.policies.priority import get_policy
assert not kernels.HAVE_NUMBA
prep = prepare("kth-sp2")
window = prep.jobs.window(2000, 250)
out = {{}}
for backfill in {BACKFILLS!r}:
    s, rows, shadows, d = kernels.schedule_table(window, prep.cluster,
                                                 get_policy("sjf").static_keys(window), backfill)
    out[backfill] = [s.tolist(), rows.tolist(), shadows.tolist(), d]
print(json.dumps(out))
"""
    env = dict(os.environ, NUMBA_DISABLE_JIT="0")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    plain = json.loads(proc.stdout)
    for backfill in BACKFILLS:
        s, rows, shadows, d = kernels.schedule_table(window, prep.cluster,
                                                     get_policy("sjf").static_keys(window), backfill)
        assert plain[backfill] == [s.tolist(), rows.tolist(), shadows.tolist(), d], backfill


# -- whole traces (slow: the Python engine takes minutes on them) ----------------------------------


def shared_trace(file_name):
    """A trace in the project's shared folder (`../shared/traces/` of a checkout or worktree), or
    None where this machine has only the repository."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        path = parent / "shared" / "traces" / file_name
        if path.exists():
            return path
    return None


@pytest.mark.slow
@pytest.mark.parametrize("name, backfill", [("sjf", "easy"), ("fcfs", "easy"),
                                            ("fcfs", "conservative")])
def test_whole_hpc2n(name, backfill):
    prep = prepared("hpc2n")
    assert len(prep.jobs) == 202_871
    assert_same(prep.jobs, prep.cluster, name, 0, backfill, "whole HPC2N")


@pytest.mark.slow
def test_whole_ricc():
    path = shared_trace("RICC-2010-2.swf.gz")
    if path is None:
        pytest.skip("the whole RICC trace is not on this machine (../shared/traces/)")
    prep = prepare(str(path))
    assert len(prep.jobs) > 440_000
    assert_same(prep.jobs, prep.cluster, "sjf", 0, "easy", "whole RICC")
