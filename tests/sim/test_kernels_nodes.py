"""The compiled pass loop of heterogeneous clusters (`sim/kernels_nodes.py`) against the Python
engine, job for job, and against HPCsim's own schedules.

The reference is always the engine stepped decision by decision (`next_decision` / `apply`), never
`engine.run`, which may itself call the kernel. What must agree: every job's start time, its nodes
in allocation order, its mode (ready, backfilled), the decision count, the EASY reservations
(row, shadow time), and the metrics of the result.
"""

from __future__ import annotations

import gzip
import json
import math
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hpcsched.cluster.allocate import ALLOCATORS
from hpcsched.cluster.load import load_cluster
from hpcsched.cluster.nodes import Cluster
from hpcsched.policies import hpcsim as hpcsim_policies
from hpcsched.policies.priority import get_policy
from hpcsched.sim import kernels_nodes
from hpcsched.sim.engine import BACKFILLED, READY
from hpcsched.sim.factory import make_engine
from hpcsched.workload.cleaning import clean
from hpcsched.workload.jobs import JobTable
from hpcsched.workload.slurm import read_hpcsim

pytestmark = pytest.mark.skipif(not kernels_nodes.HAVE_NUMBA,
                                reason="run_compiled steps aside without numba")

DATA = Path(__file__).parents[1] / "data" / "hpcsim_small"
SCRATCH = Path("/work/scratch/hpcsim/cases")
#: HPCsim on the whole 84,000-job trace of SCRATCH (fcfs + best_fit + backfilling, 17 CPU minutes),
#: run for this module's benchmark (benchmarks/spartan_speed.py)
SCRATCH_MORE = Path("/work/scratch/hetero-kernel")
HPCSIM_SELECTORS = ("fcfs", "lcfs", "sjf", "wfp3", "unicep", "f_1", "f_2")
HPCSIM_ALLOCATOR = {"first_available": "first-available", "best_fit": "best-fit",
                    "topology_aware": "topology"}
#: our heuristics with static keys (the kernel takes them all) and with keys that move with the
#: clock (ours are computed by numpy, whose power and log2 the kernel does not reproduce)
STATIC = ("fcfs", "lcfs", "sjf", "saf", "srf", "sqf", "f1", "f2", "f3", "f4", "random",
          "wfp3-rls", "unicep-rls", "smallest", "largest", "lpf", "laf", "lrf")
DYNAMIC = ("wfp3", "unicep", "sexp", "lexp", "multifactor")


def stepped(engine, policy):
    """The Python engine, one decision at a time."""
    while (view := engine.next_decision()) is not None:
        engine.apply(engine.choose(policy, view))
    return engine.result(policy.name)


def same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return a == b


def assert_same_run(py, py_result, ker, ker_result):
    assert py_result.start.tolist() == ker_result.start.tolist()
    assert [a.tolist() for a in py_result.allocations] == \
        [a.tolist() for a in ker_result.allocations]
    assert py.mode.tolist() == ker.mode.tolist()
    assert py.decisions == ker.decisions
    assert py.reservations == ker.reservations
    assert py.instances == ker.instances
    assert py.now == ker.now
    assert py_result.metrics.keys() == ker_result.metrics.keys()
    differ = [k for k in py_result.metrics if not same(py_result.metrics[k], ker_result.metrics[k])]
    assert not differ, differ


def compare(jobs, cluster, profile, backfill, allocator, policy):
    """Run both and compare: True. False if the kernel declined the engine and policy at once.
    "raises" if the kernel began and gave up (a key or an allocation the Python loop does not
    give either): then the Python loop must raise. The engine the kernel declined is untouched."""
    ker = make_engine(jobs, cluster, profile, backfill, allocator=allocator)
    ran = kernels_nodes.run_compiled(ker, policy)
    py = make_engine(jobs, cluster, profile, backfill, allocator=allocator)
    if not ran:
        assert ker.started == 0 and ker.decisions == 0 and not ker.done
        if kernels_nodes.plan(ker, policy) is None:
            return False
        with pytest.raises((ValueError, AttributeError)):
            stepped(py, policy)
        return "raises"
    assert_same_run(py, stepped(py, policy), ker, ker.result(policy.name))
    return True


# -- HPCsim's clock-dependent keys, bit for bit ----------------------------------------------------


def test_hpcsim_keys_are_pythons_bit_for_bit():
    """wfp3 and unicep computed in compiled code equal HPCsim's Python float arithmetic on random
    inputs (whole seconds as in HPCsim's traces, and arbitrary floats); numba's own `x ** 3`
    (repeated multiplication) would not, which is why the kernel calls math.pow(x, 3.0)."""
    from numba import njit

    key = kernels_nodes._hpcsim_key

    @njit
    def all_keys(mode, t, s, r, n, out):
        for i in range(t.shape[0]):
            out[i] = key(mode, t[i], s[i], r[i], n[i])[0]

    @njit
    def cubes(x, out):
        for i in range(x.shape[0]):
            out[i] = x[i] ** 3

    rng = np.random.default_rng(12)
    m = 100_000
    s = rng.integers(0, 3e7, m).astype(float)
    ints = (s + rng.integers(0, 3e6, m), s, rng.integers(1, 3e6, m).astype(float),
            rng.integers(1, 7000, m).astype(float))
    s = rng.random(m) * 1e7
    floats = (s + rng.random(m) * 1e6, s, rng.random(m) * 1e5 + 1e-3, np.exp(rng.random(m) * 9))
    for t, s, r, n in (ints, floats):
        for mode, fn in ((kernels_nodes.KEYS_HPCSIM_WFP3, hpcsim_policies._wfp3),
                         (kernels_nodes.KEYS_HPCSIM_UNICEP, hpcsim_policies._unicep)):
            out = np.empty(m)
            all_keys(mode, t, s, r, n, out)
            want = np.array([fn(*args) for args in zip(t.tolist(), s.tolist(), r.tolist(),
                                                       n.tolist())])
            assert np.array_equal(out.view(np.int64), want.view(np.int64)), fn.__name__
        x = (t - s) / r
        out = np.empty(m)
        cubes(x, out)
        assert not np.array_equal(out, np.array([v ** 3 for v in x.tolist()]))


def test_hpcsim_key_refuses_what_python_refuses():
    key = kernels_nodes._hpcsim_key
    wfp3, unicep = kernels_nodes.KEYS_HPCSIM_WFP3, kernels_nodes.KEYS_HPCSIM_UNICEP
    assert not key(wfp3, 5.0, 0.0, 0.0, 4.0)[1]  # ZeroDivisionError
    assert not key(wfp3, 1e200, 0.0, 1.0, 4.0)[1]  # OverflowError in x ** 3
    assert key(wfp3, 1e300, 0.0, 1e-10, 4.0) == (-math.inf, True)  # inf ** 3 is no error
    assert not key(unicep, 5.0, 0.0, 1.0, -2.0)[1]  # log2 of a negative number
    assert not key(unicep, 5.0, 0.0, 0.0, 4.0)[1]  # ZeroDivisionError
    assert key(wfp3, 0.0, 0.0, 60.0, 1.0) == (-0.0, True)


# -- random heterogeneous clusters and jobs --------------------------------------------------------


@st.composite
def clusters(draw) -> Cluster:
    n = draw(st.integers(1, 7))
    with_memory = draw(st.booleans())
    memory = st.sampled_from([1000, 2000, 4000]) if with_memory else st.just(0)
    cap = [[draw(st.integers(1, 8)), draw(memory), draw(st.sampled_from([0, 0, 1, 2]))]
           for _ in range(n)]
    exclusive = draw(st.booleans())
    names = tuple(f"n{i}" for i in range(n))
    shape = draw(st.sampled_from(["none", "leaves", "tree"]))
    if shape == "none":
        return Cluster(names=names, capacity=cap, exclusive=exclusive, name="random")
    if shape == "leaves":  # a spine over 1-3 leaves
        leaves = draw(st.integers(1, 3))
        switches = ("spine",) + tuple(f"leaf{j}" for j in range(leaves))
        children = (tuple(range(1, leaves + 1)),) + ((),) * leaves
        leaf = [draw(st.integers(1, leaves)) for _ in range(n)]
    else:  # three levels, switches listed child before parent, one node maybe off the tree
        switches = ("l0", "l1", "l2", "mid", "top")
        children = ((), (), (), (0, 1), (3, 2))
        leaf = [draw(st.sampled_from([0, 1, 2, 2, -1])) for _ in range(n)]
    return Cluster(names=names, capacity=cap, leaf=leaf, switches=switches,
                   switch_children=children, exclusive=exclusive, name="random")


@st.composite
def workloads(draw, cluster: Cluster) -> JobTable:
    n = draw(st.integers(1, 30))
    max_gap = draw(st.sampled_from([0, 2, 10, 40]))  # 0: every job submitted at once
    submit = np.cumsum(draw(st.lists(st.integers(0, max_gap), min_size=n, max_size=n)))
    run = np.array(draw(st.lists(st.integers(0, 60), min_size=n, max_size=n)), dtype=float)
    factor = np.array(draw(st.lists(st.sampled_from([0.5, 1.0, 1.0, 2.0, 4.0]), min_size=n,
                                    max_size=n)))
    req = np.maximum(1.0, np.round(run * factor))
    # tenths of seconds: sums that round, so equal estimated ends whose remaining times differ in
    # the last bit (HPCsim's rule reads the latter; the engine orders a node's jobs by the former)
    scale = draw(st.sampled_from([1.0, 1.0, 0.1]))
    submit, run, req = submit * scale, run * scale, req * scale
    cap = cluster.capacity
    count, cores, memory, gpus = [], [], [], []
    for _ in range(n):
        j = draw(st.integers(0, cluster.nodes - 1))  # a node the request is cut for
        want = np.array([draw(st.integers(1, int(cap[j, 0]))),
                         draw(st.integers(0, int(cap[j, 1]))) if cap[j, 1] else 0,
                         draw(st.integers(0, int(cap[j, 2])))])
        if draw(st.integers(0, 9)) == 0:
            want = np.array([1, 0, 0])  # fits every node: may ask for all of them
        holders = int(np.all(cap >= want, axis=1).sum())
        count.append(draw(st.sampled_from([1, 1, holders, draw(st.integers(1, holders))])))
        cores.append(want[0])
        memory.append(want[1])
        gpus.append(want[2])
    count = np.array(count)
    procs = count * np.array(cores)
    return JobTable.from_columns(submit=submit, run_time=run, req_time=req, req_procs=procs,
                                 alloc_procs=procs, nodes=count, cores_per_node=cores,
                                 mem_per_node=memory, gpus_per_node=gpus, user=np.arange(n) % 3)


@st.composite
def cases(draw):
    cluster = draw(clusters())
    return cluster, draw(workloads(cluster))


EVERY_ALLOCATOR = st.sampled_from(list(ALLOCATORS))


def detached(cluster: Cluster) -> bool:
    """Some nodes hang off switches and some off none: HPCsim's topology search from one group
    never reaches the other, and may find no answer for a job that fits (HPCsim would crash)."""
    return bool(cluster.switches) and bool(np.any(cluster.leaf < 0))


def agrees(result, cluster: Cluster, allocator: str) -> bool:
    """The kernel ran and agreed, or gave up where only HPCsim's topology search can fail."""
    return result is True or (result == "raises" and allocator == "hpcsim-topology" and
                              detached(cluster))
HEALTH = [HealthCheck.too_slow, HealthCheck.data_too_large]


@settings(max_examples=250, deadline=None, suppress_health_check=HEALTH)
@given(cases(), st.sampled_from(STATIC), st.sampled_from(["none", "easy"]), EVERY_ALLOCATOR)
def test_standard_profile_matches_the_engine(case, policy, backfill, allocator):
    cluster, jobs = case
    result = compare(jobs, cluster, "standard", backfill, allocator, get_policy(policy, seed=4))
    assert agrees(result, cluster, allocator)


@settings(max_examples=250, deadline=None, suppress_health_check=HEALTH)
@given(cases(), st.sampled_from(("fcfs", "lcfs", "sjf", "wfp3", "unicep", "f1", "f2")),
       st.sampled_from(["none", "easy"]), EVERY_ALLOCATOR)
def test_hpcsim_profile_matches_the_engine(case, policy, backfill, allocator):
    cluster, jobs = case
    result = compare(jobs, cluster, "hpcsim", backfill, allocator,
                     get_policy(policy, dialect="hpcsim"))
    assert agrees(result, cluster, "hpcsim-" + allocator.removeprefix("hpcsim-"))


@settings(max_examples=60, deadline=None, suppress_health_check=HEALTH)
@given(cases(), st.sampled_from(STATIC[:6]), EVERY_ALLOCATOR)
def test_our_static_policies_under_the_hpcsim_profile(case, policy, allocator):
    cluster, jobs = case
    result = compare(jobs, cluster, "hpcsim", "easy", allocator, get_policy(policy))
    assert agrees(result, cluster, "hpcsim-" + allocator.removeprefix("hpcsim-"))


@settings(max_examples=30, deadline=None, suppress_health_check=HEALTH)
@given(cases(), st.sampled_from(DYNAMIC))
def test_our_clock_dependent_policies_are_left_to_the_engine(case, policy):
    cluster, jobs = case
    assert not compare(jobs, cluster, "standard", "easy", "best-fit", get_policy(policy))


def test_what_the_kernel_declines():
    cluster = Cluster.identical(2, cores=4)
    jobs = JobTable.from_columns(submit=[0, 1, 2], run_time=[5, 0, 3], req_time=[5, 0, 4],
                                 req_procs=[4, 1, 2], alloc_procs=[4, 1, 2])
    fcfs = get_policy("fcfs")
    # conservative backfilling, and HPCsim's selectors dividing by a zero request (its code
    # raises; so does the engine)
    assert not compare(jobs, cluster, "standard", "conservative", "best-fit", fcfs)
    engine = make_engine(jobs, cluster, "hpcsim", "easy")
    assert not kernels_nodes.run_compiled(engine, get_policy("wfp3", dialect="hpcsim"))
    with pytest.raises(ValueError, match="asks for 0 s"):
        stepped(engine, get_policy("wfp3", dialect="hpcsim"))
    # an engine already stepped
    engine = make_engine(jobs, cluster, "standard", "easy")
    engine.next_decision()
    assert not kernels_nodes.run_compiled(engine, fcfs)
    # a policy that decides for itself, an allocator of the caller's own
    class Decides:
        name = "decides"

        def decide(self, view):
            return int(view.queue[-1])

    assert not compare(jobs, cluster, "standard", "easy", "best-fit", Decides())

    class Mine:
        name = "mine"

        def allocate(self, cluster, free, request, count, fits=None):
            return np.flatnonzero(fits)[-count:]

    assert not compare(jobs, cluster, "standard", "easy", Mine(), fcfs)
    assert compare(jobs, cluster, "standard", "easy", "best-fit", fcfs)


def test_without_numba_the_engine_runs_in_python(monkeypatch):
    """The kernel's functions would run as plain Python, slower than the engine: it declines."""
    cluster = Cluster.identical(2, cores=4)
    jobs = JobTable.from_columns(submit=[0, 1], run_time=[5, 3], req_time=[5, 4],
                                 req_procs=[4, 2], alloc_procs=[4, 2])
    monkeypatch.setattr(kernels_nodes, "HAVE_NUMBA", False)
    engine = make_engine(jobs, cluster, "standard", "easy")
    assert not kernels_nodes.run_compiled(engine, get_policy("fcfs"))
    assert engine.started == 0 and not engine.done
    assert engine.run(get_policy("fcfs")).start.tolist() == [0.0, 1.0]


def test_a_job_that_needs_every_node_waits_for_all_of_them():
    """
             n0 (4c)    n1 (4c)    n2 (4c, 1 GPU)
    t=0      A: 1 node x 4c, 10 s: n0
    t=1      B: 3 nodes x 1c (every node), 5 s: waits for A (reserved at A's end, t=10)
    t=2      C: 1 node x 1c, 20 s: runs past t=10, but leaves 3 cores of its node free for B
             then: backfilled; D: 1 node x 4c, 2 s, ends by t=10: backfilled
    t=10     B starts on all three nodes
    """
    cluster = Cluster(names=("n0", "n1", "n2"), capacity=[[4, 0, 0], [4, 0, 0], [4, 0, 1]])
    jobs = JobTable.from_columns(submit=[0, 1, 2, 2], run_time=[10, 5, 20, 2],
                                 req_time=[10, 5, 20, 2], req_procs=[4, 3, 1, 4],
                                 alloc_procs=[4, 3, 1, 4], nodes=[1, 3, 1, 1],
                                 cores_per_node=[4, 1, 1, 4], gpus_per_node=[0, 0, 0, 0])
    for allocator in ALLOCATORS:
        for profile in ("standard", "hpcsim"):
            assert compare(jobs, cluster, profile, "easy", allocator, get_policy("fcfs"))
            engine = make_engine(jobs, cluster, profile, "easy", allocator=allocator)
            assert engine.run(get_policy("fcfs")).start.tolist() == [0, 10, 2, 2]
            assert engine.mode.tolist() == [READY, READY, BACKFILLED, BACKFILLED]


# -- HPCsim's own schedules ------------------------------------------------------------------------


@lru_cache(maxsize=None)
def _reference(path: Path) -> dict:
    return json.loads(gzip.decompress(path.read_bytes()))


@lru_cache(maxsize=None)
def _jobs(trace: Path, partition: str) -> JobTable:
    return clean(read_hpcsim(trace, partition), "hpcsim")[0]


def hpcsim_differences(trace: Path, partition: str, case: dict) -> str | None:
    """Run the kernel on one of HPCsim's cases; None if every job's start, nodes and backfilled
    flag are HPCsim's, else the first difference."""
    jobs = _jobs(trace, partition)
    cluster = load_cluster(f"spartan-{partition}")
    engine = make_engine(jobs, cluster, "hpcsim", "easy" if case["backfill"] else "none",
                         allocator=HPCSIM_ALLOCATOR[case["allocator"]])
    policy = get_policy(case["selector"].replace("_", ""), dialect="hpcsim")
    assert kernels_nodes.run_compiled(engine, policy)
    result = engine.result(policy.name)
    rows = case["jobs"]  # in the trace's row order; ours are in submit order
    row_of = {int(j): i for i, j in enumerate(jobs.job_id.tolist())}
    assert len(row_of) == len(jobs) and sorted(row_of) == sorted(r[0] for r in rows)
    names = cluster.names
    for job_id, _, start, _, nodes, backfilled in rows:
        i = row_of[job_id]
        ours = (result.start[i], [names[n] for n in result.allocations[i]],
                bool(engine.mode[i] == BACKFILLED))
        if ours != (start, nodes, backfilled):
            return f"job {job_id}: ours {ours}, HPCsim's {(start, nodes, backfilled)}"
    return None


FIXTURES = {"phys2k_s11": "physical", "dl1k_s55": "deeplearn"}


@pytest.mark.parametrize("trace", list(FIXTURES))
@pytest.mark.parametrize("selector", HPCSIM_SELECTORS)
def test_hpcsim_fixture_schedules(trace, selector):
    """All 7 selectors x 3 allocators x backfilling on/off of the fixture, against HPCsim's own
    schedules (`tests/data/hpcsim_small`, HPCsim's code run unmodified)."""
    cases = _reference(DATA / f"{trace}.json.gz")["cases"]
    wrong = {}
    for allocator in HPCSIM_ALLOCATOR:
        for bf in ("bf", "nobf"):
            key = f"{selector}+{allocator}+{bf}"
            diff = hpcsim_differences(DATA / f"{trace}.tsv.gz", FIXTURES[trace], cases[key])
            if diff:
                wrong[key] = diff
    assert not wrong


def _scratch_cases():
    if not SCRATCH.is_dir():
        return [pytest.param(None, None, marks=pytest.mark.skip(reason=f"no {SCRATCH}"))]
    out = []
    more = sorted(SCRATCH_MORE.glob("*.json.gz")) if SCRATCH_MORE.is_dir() else []
    for path in sorted(SCRATCH.glob("*.json.gz")) + more:
        out.append(pytest.param(path, None, id=path.name, marks=pytest.mark.slow))
    return out


@pytest.mark.parametrize("path, _", _scratch_cases())
def test_generated_traces_against_hpcsim(path, _):
    """The traces of /work/scratch/hpcsim/cases (made by benchmarks/hpcsim_traces.py, run through
    HPCsim's code by /work/scratch/hpcsim/run_case.py): every case HPCsim ran, job by job (start,
    nodes in order, backfilled)."""
    ref = _reference(path)
    trace = SCRATCH / ref["trace_file"]
    if not trace.exists():
        trace = SCRATCH / (ref["trace_file"] + ".gz")
    wrong = {}
    for key, case in ref["cases"].items():
        diff = hpcsim_differences(trace, ref["partition"], case)
        if diff:
            wrong[key] = diff
    assert not wrong


def test_hpcsim_topology_without_an_answer_is_left_to_the_engine():
    """
          s0             (no switch)
        n0    n1             n2          4 cores each
    A (1 node x 4 cores) takes n0 (the cheapest start). B (3 nodes) waits. C (2 nodes x 1 core)
    fits on n1 and n2, but HPCsim's search from n1 reaches only s0's nodes and from n2 only n2:
    its topology allocator has no answer. The kernel hands the run back; the Python loop stops
    with an error (HPCsim itself would crash).
    """
    cluster = Cluster(names=("n0", "n1", "n2"), capacity=[[4, 0, 0]] * 3, leaf=[0, 0, -1],
                      switches=("s0",), switch_children=((),))
    jobs = JobTable.from_columns(submit=[0, 1, 2], run_time=[10, 5, 5], req_time=[10, 5, 5],
                                 req_procs=[4, 12, 2], alloc_procs=[4, 12, 2], nodes=[1, 3, 2],
                                 cores_per_node=[4, 4, 1])
    assert compare(jobs, cluster, "hpcsim", "easy", "topology",
                   get_policy("fcfs", dialect="hpcsim")) == "raises"
    assert compare(jobs, cluster, "hpcsim", "none", "topology",
                   get_policy("fcfs", dialect="hpcsim")) == "raises"
    assert compare(jobs, cluster, "hpcsim", "easy", "best-fit",
                   get_policy("fcfs", dialect="hpcsim")) is True
