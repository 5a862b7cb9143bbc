"""Allocators on hand-drawn states: each answer worked out by hand from the allocator's rule."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from hpcsched.cluster.allocate import (ALLOCATORS, BestFit, FirstAvailable, HpcsimBestFit,
                                       HpcsimTopology, TopologyAware, fitting_nodes, get_allocator)
from hpcsched.cluster.nodes import Cluster
from hpcsched.cluster.pool import ClusterError

ALL = list(ALLOCATORS)


def five_nodes() -> Cluster:
    """
                     spine
                  /         \\
             leafA            leafB
           n0     n1      n2     n3     n4
    cap    16c    16c     16c    16c    16c      64 GB each; n2 has 4 GPUs
    """
    return Cluster(names=("n0", "n1", "n2", "n3", "n4"),
                   capacity=[[16, 64000, 0], [16, 64000, 0], [16, 64000, 4], [16, 64000, 0],
                             [16, 64000, 0]],
                   leaf=[1, 1, 2, 2, 2], switches=("spine", "leafA", "leafB"),
                   switch_children=((1, 2), (), ()), name="five")


def test_each_allocator_answers_differently():
    """
             leafA             leafB
           n0     n1      n2      n3     n4
    free   16c    10c     1c      10c    2c        cores
           64G    60G     64G     8G     64G       memory
           -      -       4 GPUs  -      -
    job: 2 nodes x (2 cores, 0 MB, 0 GPUs); n2 does not fit (1 core).

    first-available:  n0, n1 (cluster order)
    best-fit:         cores left n4 0, n1 8, n3 8, n0 14; n1/n3 tie, memory left 56/64 vs 6/64 -> n4, n3
    hpcsim-best-fit:  free cores n4 2, n1 10, n3 10, n0 16; memory ignored, tie by name -> n4, n1
    topology:         both leaves hold 2 fitting nodes (tie: leafA, first), best fit there -> n1, n0
    hpcsim-topology:  start n0 or n1 -> {n0, n1} = 26 free cores; start n3 -> n3, n4 = 12; n4 -> n4, n3 = 12;
                      least 12, first start n3 -> n3, n4
    """
    c = five_nodes()
    free = np.array([[16, 64000, 0], [10, 60000, 0], [1, 64000, 4], [10, 8000, 0], [2, 64000, 0]])
    request = np.array([2, 0, 0])
    answers = {name: get_allocator(name).allocate(c, free, request, 2).tolist() for name in ALL}
    assert answers == {
        "first-available": [0, 1],
        "best-fit": [4, 3],
        "topology": [1, 0],
        "hpcsim-first-available": [0, 1],
        "hpcsim-best-fit": [4, 1],
        "hpcsim-topology": [3, 4],
    }


def test_best_fit_keeps_gpu_nodes_for_gpu_jobs():
    """
           n0 (CPU)   n2 (GPU)
    free   6c         4c, 4 GPUs
    A 4-core CPU job leaves 2 cores on n0 but 4 idle GPUs on n2: it goes to n0, although n2 is
    the tighter fit on cores. A GPU job can only go to n2.
    """
    c = five_nodes()
    free = np.array([[6, 64000, 0], [0, 0, 0], [4, 64000, 4], [0, 0, 0], [0, 0, 0]])
    assert BestFit().allocate(c, free, np.array([4, 0, 0]), 1).tolist() == [0]
    assert BestFit().allocate(c, free, np.array([4, 0, 1]), 1).tolist() == [2]
    assert BestFit().allocate(c, free, np.array([4, 0, 1]), 2) is None


def test_topology_prefers_one_leaf_over_best_fit_across_leaves():
    """
             leafA             leafB
           n0     n1      n2     n3     n4
    free   2c     2c      16c    16c    16c
    job: 2 nodes x 8 cores. Fitting: n2, n3, n4, all under leafB. Best fit would take them too;
    ask for 1 core instead, and everything fits: best-fit takes n0, n1 (least left), and so does
    topology, since leafA holds 2 and is the tighter leaf (2 fitting vs 3).
    """
    c = five_nodes()
    free = np.array([[2, 64000, 0], [2, 64000, 0], [16, 64000, 4], [16, 64000, 0], [16, 64000, 0]])
    assert TopologyAware().allocate(c, free, np.array([8, 0, 0]), 2).tolist() == [3, 4]
    assert TopologyAware().allocate(c, free, np.array([1, 0, 0]), 2).tolist() == [0, 1]
    # 3 nodes of 1 core: only leafB holds 3 (leafA has 2), so leafB, best fit: n3, n4 then the
    # GPU node n2 last
    assert TopologyAware().allocate(c, free, np.array([1, 0, 0]), 3).tolist() == [3, 4, 2]
    # best fit would mix leaves
    assert BestFit().allocate(c, free, np.array([1, 0, 0]), 3).tolist() == [0, 1, 3]


def three_leaves() -> Cluster:
    """
                       spine
              /          |          \\
          leafA        leafB        leafC
        a0 a1 a2       b0 b1         c0
    all 8 cores, no memory, no GPUs
    """
    return Cluster(names=("a0", "a1", "a2", "b0", "b1", "c0"), capacity=[[8, 0, 0]] * 6,
                   leaf=[1, 1, 1, 2, 2, 3], switches=("spine", "leafA", "leafB", "leafC"),
                   switch_children=((1, 2, 3), (), (), ()))


def test_topology_fills_leaves_like_slurm():
    """
    4 nodes: no leaf holds 4, so the spine; the largest leaf first (leafA: a0 a1 a2), then 1 more:
    leafB (2) and leafC (1) both suffice, the tightest is leafC -> a0 a1 a2 c0.
    5 nodes: leafA (3), then 2 more: only leafB suffices -> a0 a1 a2 b0 b1.
    With a1 busy (4 nodes): leafA 2, leafB 2, leafC 1; no leaf holds 4; largest first, tie -> leafA
    (a0 a2); 2 more: leafB suffices -> b0 b1.
    """
    c = three_leaves()
    free = c.capacity.copy()
    assert TopologyAware().allocate(c, free, np.array([8, 0, 0]), 4).tolist() == [0, 1, 2, 5]
    assert TopologyAware().allocate(c, free, np.array([8, 0, 0]), 5).tolist() == [0, 1, 2, 3, 4]
    free[1, 0] = 0
    assert TopologyAware().allocate(c, free, np.array([8, 0, 0]), 4).tolist() == [0, 2, 3, 4]
    # 1 node: the lowest level, the tightest leaf holding it: leafC
    assert TopologyAware().allocate(c, free, np.array([8, 0, 0]), 1).tolist() == [5]


def test_topology_without_switches():
    """
           n0    n1    n2       (no switches)
    free   8c    3c    5c       job: 2 nodes x 2 cores
    topology = best fit: n1, n2. hpcsim-topology sees one group in cluster order: start n0 ->
    n0, n1 (11 free cores); start n1 -> n1, n0 (11); start n2 -> n2, n0 (13); first least: n0, n1.
    """
    c = Cluster.identical(3, cores=8)
    free = np.array([[8, 0, 0], [3, 0, 0], [5, 0, 0]])
    assert TopologyAware().allocate(c, free, np.array([2, 0, 0]), 2).tolist() == [1, 2]
    assert HpcsimTopology().allocate(c, free, np.array([2, 0, 0]), 2).tolist() == [0, 1]


def test_hpcsim_best_fit_breaks_ties_by_name_string():
    """12 identical idle nodes n0..n11: every key ties, and HPCsim's heap orders 'n0' < 'n1' <
    'n10' < 'n11' < 'n2'; its topology allocator ties by cluster order instead."""
    c = Cluster.identical(12, cores=4)
    free = c.capacity.copy()
    req = np.array([1, 0, 0])
    assert HpcsimBestFit().allocate(c, free, req, 4).tolist() == [0, 1, 10, 11]
    assert BestFit().allocate(c, free, req, 4).tolist() == [0, 1, 2, 3]
    assert HpcsimTopology().allocate(c, free, req, 4).tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize("name", ALL)
def test_boundaries(name):
    """Exactly `count` fitting nodes: those; one short: None; a request equal to a node's free
    vector fits; 0 nodes: an empty allocation."""
    c = five_nodes()
    alloc = get_allocator(name)
    free = np.array([[4, 1000, 0], [3, 1000, 0], [4, 999, 4], [4, 1000, 0], [16, 64000, 0]])
    req = np.array([4, 1000, 0])
    got = alloc.allocate(c, free, req, 3)
    assert got.dtype == np.int64 and sorted(got.tolist()) == [0, 3, 4]
    assert alloc.allocate(c, free, req, 4) is None
    assert alloc.allocate(c, free, np.array([4, 999, 4]), 1).tolist() == [2]
    assert alloc.allocate(c, free, req, 0).tolist() == []


@pytest.mark.parametrize("name", ALL)
def test_given_fits_mask_is_trusted(name):
    c = five_nodes()
    free = c.capacity.copy()
    fits = np.array([False, True, False, True, False])
    got = get_allocator(name).allocate(c, free, np.array([1, 0, 0]), 2, fits=fits)
    assert sorted(got.tolist()) == [1, 3]
    assert get_allocator(name).allocate(c, free, np.array([1, 0, 0]), 3, fits=fits) is None


def test_exclusive_cluster_only_takes_idle_nodes():
    c = Cluster.identical(3, cores=8, exclusive=True)
    free = np.array([[7, 0, 0], [8, 0, 0], [8, 0, 0]])
    assert fitting_nodes(c, free, np.array([1, 0, 0])).tolist() == [False, True, True]
    assert FirstAvailable().allocate(c, free, np.array([1, 0, 0]), 1).tolist() == [1]
    shared = Cluster.identical(3, cores=8)
    assert FirstAvailable().allocate(shared, free, np.array([1, 0, 0]), 1).tolist() == [0]


def test_get_allocator():
    assert isinstance(get_allocator("best-fit"), BestFit)
    mine = TopologyAware()
    assert get_allocator(mine) is mine
    with pytest.raises(ClusterError) as err:
        get_allocator("worst-fit")
    for name in ALL:
        assert name in str(err.value)


@st.composite
def states(draw):
    n = draw(st.integers(1, 9))
    leaves = draw(st.integers(0, 3))
    cap = np.array([[draw(st.integers(1, 8)), draw(st.integers(0, 4)), draw(st.integers(0, 2))]
                    for _ in range(n)])
    if leaves:
        leaf = [draw(st.integers(1, leaves)) for _ in range(n)]
        cluster = Cluster(names=tuple(f"h{i}" for i in range(n)), capacity=cap, leaf=leaf,
                          switches=("top",) + tuple(f"l{j}" for j in range(leaves)),
                          switch_children=(tuple(range(1, leaves + 1)),) + ((),) * leaves)
    else:
        cluster = Cluster(names=tuple(f"h{i}" for i in range(n)), capacity=cap)
    free = np.array([[draw(st.integers(0, v)) for v in row] for row in cap.tolist()])
    request = np.array([draw(st.integers(0, 4)), draw(st.integers(0, 2)), draw(st.integers(0, 1))])
    return cluster, free, request, draw(st.integers(0, n + 1))


@settings(max_examples=300, deadline=None)
@given(states())
def test_every_allocator_gives_count_distinct_fitting_nodes(state):
    cluster, free, request, count = state
    fits = np.all(free >= request, axis=1)
    for name in ALL:
        got = get_allocator(name).allocate(cluster, free, request, count)
        if fits.sum() < count:
            assert got is None, name
            continue
        assert len(got) == count and len(set(got.tolist())) == count, name
        assert fits[got].all(), name
    first = FirstAvailable().allocate(cluster, free, request, count)
    if first is not None:
        assert first.tolist() == np.flatnonzero(fits)[:count].tolist()
