"""job_requests and never_fits: SWF jobs (processors only) and Slurm-like jobs (per-node requests)."""

import numpy as np
import pytest
from hypothesis import given, strategies as st

from hpcsched.cluster.nodes import Cluster
from hpcsched.cluster.pool import NodePool
from hpcsched.cluster.request import job_requests, never_fits, why_never_fits
from hpcsched.workload.jobs import JobTable


def mixed() -> Cluster:
    """two 72-core nodes with 710,000 MB, one 28-core GPU node with 4 GPUs and 234,000 MB"""
    return Cluster(names=("c0", "c1", "g0"),
                   capacity=[[72, 710000, 0], [72, 710000, 0], [28, 234000, 4]])


def test_swf_jobs_take_whole_nodes_of_the_smallest_core_count():
    """C = 28 (the smallest node): 1 proc -> 1 x 1; 28 -> 1 x 28; 29 -> 2 x 15; 72 -> 3 x 24;
    0 procs -> 0 nodes."""
    jobs = JobTable.from_columns(procs=[1, 28, 29, 72, 0])
    count, per_node = job_requests(jobs, mixed())
    assert count.tolist() == [1, 1, 2, 3, 0]
    assert per_node.tolist() == [[1, 0, 0], [28, 0, 0], [15, 0, 0], [24, 0, 0], [0, 0, 0]]
    assert count.dtype == per_node.dtype == np.int64


def test_swf_memory_is_kb_per_processor_times_cores_rounded_up():
    """req_mem 1024 KB/proc x 15 cores = 15 MB; 1000 KB x 3 cores = 2.93 MB -> 3 MB; -1: none."""
    jobs = JobTable.from_columns(procs=[29, 3, 3], req_mem=[1024, 1000, -1])
    _, per_node = job_requests(jobs, mixed())
    assert per_node[:, 1].tolist() == [15, 3, 0]


def test_memory_is_not_scheduled_on_a_cluster_without_memory():
    jobs = JobTable.from_columns(procs=[3], req_mem=[1024], nodes=[1], cores_per_node=[3],
                                 mem_per_node=[500])
    _, per_node = job_requests(jobs, Cluster.identical(2, cores=4))
    assert per_node.tolist() == [[3, 0, 0]]


@given(st.lists(st.integers(0, 2000), min_size=1, max_size=50), st.integers(1, 64))
def test_swf_mapping_agrees_with_the_identical_node_pool(procs, per_node_procs):
    jobs = JobTable.from_columns(procs=procs)
    count, per_node = job_requests(jobs, Cluster.identical(8, cores=per_node_procs))
    assert count.tolist() == NodePool(8, per_node_procs).nodes_needed(np.array(procs)).tolist()
    # the per-node share covers the job and fits a node
    assert (count * per_node[:, 0] >= np.array(procs)).all()
    assert (per_node[:, 0] <= per_node_procs).all()


def test_slurm_like_rows_use_their_own_request():
    """Row 0: all given; memory 1000.5 MB -> 1001. Row 1: cores unknown -> ceil(10 / 2) = 5;
    GPUs unknown -> 0; memory unknown and no req_mem -> 0. Row 2: a 3000.0000000004 total share
    (float noise) stays 3000."""
    jobs = JobTable.from_columns(procs=[8, 10, 6], nodes=[2, 2, 3], cores_per_node=[4, -1, 2],
                                 mem_per_node=[1000.5, -1, 9000.0000000012 / 3],
                                 gpus_per_node=[2, -1, 0])
    count, per_node = job_requests(jobs, mixed())
    assert count.tolist() == [2, 2, 3]
    assert per_node.tolist() == [[4, 1001, 2], [5, 0, 0], [2, 3000, 0]]


def test_never_fits():
    c = mixed()
    count = np.array([1, 2, 3, 1, 2, 3, 0])
    per_node = np.array([[28, 234000, 4],   # exactly g0
                         [72, 0, 0],        # exactly the two 72-core nodes
                         [72, 0, 0],        # one node short
                         [29, 0, 1],        # GPUs only on a 28-core node
                         [1, 710001, 0],    # memory: no node has it
                         [1, 0, 0],         # every node
                         [0, 0, 0]])        # an empty job
    assert never_fits(count, per_node, c).tolist() == [False, False, True, True, True, False, False]
    exclusive = Cluster(names=c.names, capacity=c.capacity, exclusive=True)
    assert never_fits(count, per_node, exclusive).tolist() == never_fits(count, per_node, c).tolist()


def test_why_never_fits_says_what_is_missing():
    c = mixed()
    assert "no node has enough gpus (largest node: 4)" in why_never_fits(1, np.array([1, 0, 5]), c)
    assert "only 2 node(s)" in why_never_fits(3, np.array([72, 0, 0]), c)
    assert "no single node has all of it" in why_never_fits(1, np.array([72, 0, 1]), c)
