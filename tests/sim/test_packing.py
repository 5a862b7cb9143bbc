"""DRAS's packing baselines, on schedules and knapsacks worked out by hand."""

import numpy as np
import pytest

from hpcsched.cluster.pool import NodePool
from hpcsched.policies.packing import BinPacking, Knapsack, RandomFit, knapsack
from hpcsched.sim.factory import make_engine
from hpcsched.workload.jobs import JobTable


def table(rows):
    return JobTable.from_columns(job_id=list(range(1, len(rows) + 1)),
                                 submit=[r[0] for r in rows], run_time=[r[1] for r in rows],
                                 req_time=[r[1] for r in rows], req_procs=[r[2] for r in rows],
                                 alloc_procs=[r[2] for r in rows], user=[1] * len(rows))


def test_knapsack_by_hand():
    # capacity 10, sizes 6, 5, 5, 4 with values 5, 3.5, 3.5, 4: {6, 4} is worth 9, {5, 5} 7,
    # {5, 4} 7.5: the first and the last
    assert knapsack(np.array([6, 5, 5, 4]), np.array([5, 3.5, 3.5, 4]), 10) == [0, 3]
    assert knapsack(np.array([11]), np.array([1.0]), 10) == []
    assert knapsack(np.array([3, 3, 3]), np.array([1.0, 1.0, 1.0]), 10) == [0, 1, 2]


# 8 nodes. A (8 nodes, 10 s) runs [0,10). At 1: B (2), C (6), D (5) arrive, 100 s each.
# At 10 all 8 nodes are free: BinPacking starts C (6), then B (2) fits, D (5) does not: D at 110.
ROWS = [(0, 10, 8), (1, 100, 2), (1, 100, 6), (1, 100, 5)]


def test_binpacking_takes_the_largest_that_fits():
    res = make_engine(table(ROWS), NodePool(8), "dras", "none").run(BinPacking())
    assert res.start.tolist() == [0, 10, 10, 110]


def test_binpacking_is_greedy_where_the_knapsack_is_not():
    # A holds all 8 nodes until 10; B (1 node), C (6), D (5), E (3) wait, 100 s each. At 10
    # BinPacking takes C (6), then B (1): 7 nodes, D and E wait until 110. Every job has waited
    # 9 s (under the 6 h floor), so the knapsack's value is about 2 n / 8 / 3: it fills the nodes,
    # {D, E} = 8 nodes, and B and C wait until 110.
    rows = [(0, 10, 8), (1, 100, 1), (1, 100, 6), (1, 100, 5), (1, 100, 3)]
    bp = make_engine(table(rows), NodePool(8), "dras", "none").run(BinPacking()).start
    ks = make_engine(table(rows), NodePool(8), "dras", "none").run(Knapsack()).start
    assert bp.tolist() == [0, 10, 10, 110, 110]
    assert ks.tolist() == [0, 110, 110, 10, 10]


def test_random_only_starts_jobs_that_fit():
    rng = np.random.default_rng(0)
    n = 200
    rows = [(float(t), float(r), int(p)) for t, r, p in zip(np.cumsum(rng.exponential(20, n)),
                                                           rng.integers(1, 500, n),
                                                           rng.integers(1, 9, n))]
    jobs = table(rows)
    res = make_engine(jobs, NodePool(8), "dras", "none").run(RandomFit(1))
    start, end = res.start, res.start + res.executed
    for t in np.unique(start):
        assert jobs.procs[(start <= t) & (end > t)].sum() <= 8
    assert np.all(res.modes == 1)  # READY only
