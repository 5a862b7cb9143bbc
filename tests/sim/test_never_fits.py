"""A job that can never run on a heterogeneous cluster stops `make_engine` with a `ClusterError`
naming the job and why, under every profile and backfilling, and never makes a run hang.

The cluster is `hetero_helpers.mixed_cluster`: A 8c/32000 MB, B 4c/64000 MB, C 4c/16000 MB/2 GPUs.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from hetero_helpers import Job, deadline, mixed_cluster, table
from hpcsched.cluster.pool import ClusterError
from hpcsched.policies.priority import get_policy
from hpcsched.sim.factory import make_engine
from hpcsched.workload.jobs import JobTable


def with_ids(rows, ids, lines):
    jobs = table(rows)
    return jobs.with_columns(job_id=np.asarray(ids, dtype=float), line=np.asarray(lines, float))


#: (the impossible job, what the message must say). Each is worked out from the three nodes.
NEVER = [
    # more nodes of its kind than exist: only C has GPUs
    (Job(0, 10, 2, 1, 1000, 1), r"asks for 2 node\(s\) with 1 cores, 1000 MB memory, 1 gpus each: "
                                r"only 1 node\(s\) of mixed can hold that"),
    # only B has more than 32000 MB
    (Job(0, 10, 2, 1, 40000), r"2 node\(s\) .*only 1 node\(s\) of mixed"),
    # more nodes than the cluster has at all
    (Job(0, 10, 4, 1), r"asks for 4 node\(s\) with 1 cores each: only 3 node\(s\)"),
    # a per-node request larger than every node, resource by resource
    (Job(0, 10, 1, 9), r"no node has enough cores \(largest node: 8\)"),
    (Job(0, 10, 1, 1, 64001), r"no node has enough memory \(largest node: 64000\)"),
    (Job(0, 10, 1, 1, 0, 3), r"no node has enough gpus \(largest node: 2\)"),
    (Job(0, 10, 1, 9, 64001, 3), r"no node has enough cores \(largest node: 8\) and memory "
                                 r"\(largest node: 64000\) and gpus \(largest node: 2\)"),
    # each resource exists somewhere, but never together: 8 cores are on A, 64000 MB on B
    (Job(0, 10, 1, 8, 64000), r"no single node has all of it"),
    # a fractional memory request is rounded up: 16000.5 MB does not fit C's 16000
    (Job(0, 10, 3, 4, 16000.5), r"3 node\(s\) with 4 cores, 16001 MB memory each: only 2"),
]


@pytest.mark.parametrize("job, why", NEVER)
@pytest.mark.parametrize("profile, backfill", [("standard", "none"), ("standard", "easy"),
                                               ("standard", "conservative"), ("hpcsim", "easy")])
@pytest.mark.parametrize("exclusive", [False, True])
def test_a_job_that_never_fits_is_named(job, why, profile, backfill, exclusive):
    """The impossible job is the second of three (job id 102, trace line 7): the error names it,
    says why, counts such jobs and says how to drop them."""
    jobs = with_ids([Job(0, 5), job, Job(2, 5)], [101, 102, 103], [6, 7, 8])
    with deadline(10), pytest.raises(ClusterError) as info:
        make_engine(jobs, mixed_cluster(exclusive=exclusive), profile, backfill)
    text = str(info.value)
    assert text.startswith("job 102 (line 7) ")
    assert re.search(why, text), text
    assert "1 such job(s) in all" in text and "--drop-oversized" in text


def test_the_first_of_several_is_named_and_all_are_counted():
    jobs = with_ids([Job(0, 5), Job(1, 5, 1, 9), Job(2, 5), Job(3, 5, 1, 1, 0, 3)],
                    [1, 2, 3, 4], [1, 2, 3, 4])
    with pytest.raises(ClusterError, match=r"^job 2 \(line 2\) .*; 2 such job\(s\) in all"):
        make_engine(jobs, mixed_cluster(), "standard", "easy")


def test_a_job_asking_for_no_processors_is_named():
    jobs = JobTable.from_columns(submit=[0, 1], run_time=[5, 5], req_time=[5, 5],
                                 req_procs=[1, 0], alloc_procs=[1, 0], job_id=[7, 8])
    with pytest.raises(ClusterError, match=r"^job 8 .*asks for no processors"):
        make_engine(jobs, mixed_cluster(), "standard", "none")


@pytest.mark.parametrize("job, start", [
    (Job(1, 10, 1, 1, 1000, 2), 1),     # both GPUs of C, exactly
    (Job(1, 10, 3, 4, 16000), 5),       # every node: C's 4 cores and 16000 MB exactly
    (Job(1, 10, 1, 8, 32000), 1),       # all of A
    (Job(1, 10, 1, 4, 64000), 5),       # all of B
    (Job(1, 10, 2, 1, 32000), 1),       # only A and B hold 32000 MB: exactly 2 nodes
])
@pytest.mark.parametrize("backfill", ["none", "easy", "conservative"])
def test_a_job_that_fits_only_just_runs(job, start, backfill):
    """The boundary: a request equal to a node's capacity, on exactly `count` nodes that hold
    it, is no error. Behind it, a 1-core job runs [0, 5) on B (best fit: B leaves 3 cores, A 7,
    C 3 cores and 2 GPUs), so a job that needs all of B's cores starts at 5, the others at 1."""
    jobs = table([Job(0, 5), job])
    with deadline(10):
        result = make_engine(jobs, mixed_cluster(), "standard", backfill,
                             allocator="best-fit").run(get_policy("fcfs"))
    assert result.start.tolist() == [0, start]
    assert result.allocations[0].tolist() == [1]


@pytest.mark.parametrize("columns", [
    dict(req_procs=[8, 0], alloc_procs=[8, 0], nodes=[1, 1]),
    dict(req_procs=[8, 0], alloc_procs=[8, 0], nodes=[1, 1], cores_per_node=[8, 0]),
])
def test_a_job_with_a_node_count_but_no_processors_is_named(columns):
    """Job 1 takes A's 8 cores; job 2 asks for 1 node and 0 processors: it would hold nothing,
    and run beside anything, so it is named as on a pool."""
    jobs = JobTable.from_columns(submit=[0, 0], run_time=[5, 5], req_time=[5, 5], job_id=[1, 2],
                                 **columns)
    with pytest.raises(ClusterError, match=r"^job 2 .*no processors"):
        make_engine(jobs, mixed_cluster(), "standard", "none", allocator="first-available")


# -- prepare(): the same check, with the choice to drop ---------------------------------------------


def mixed_trace():
    """Jobs 11..14 on trace lines 3..6; 12 (1 x 9 cores) and 14 (2 x 1 GPU) can never run."""
    return with_ids([Job(0, 5), Job(1, 5, 1, 9), Job(2, 5), Job(3, 5, 2, 1, 0, 1)],
                    [11, 12, 13, 14], [3, 4, 5, 6])


@pytest.mark.parametrize("profile", ["standard", "hpcsim"])
def test_prepare_names_a_job_that_never_fits_the_cluster(profile):
    from hpcsched.sim.run import prepare

    with deadline(10), pytest.raises(ClusterError) as info:
        prepare(mixed_trace(), profile, cluster=mixed_cluster())
    text = str(info.value)
    assert re.search(r"line 4: job 12 asks for 1 node\(s\) with 9 cores each: no node has "
                     r"enough cores \(largest node: 8\); 2 such job\(s\) in all", text), text
    assert "--drop-oversized" in text


@pytest.mark.parametrize("profile", ["standard", "hpcsim"])
def test_prepare_drops_and_counts_jobs_that_never_fit(profile):
    """With drop_oversized the two impossible jobs are dropped and counted; the others run
    (best fit under both profiles puts both on B: job 11 at 0, where B leaves 3 cores, A 7, C 3
    and 2 GPUs (HPCsim's key, free cores + 100 x free GPUs: B 4 < A 8 < C 204); job 13 at 2,
    beside it, where B has 3 cores free and A 8)."""
    from hpcsched.sim.run import prepare, simulate

    prepared = prepare(mixed_trace(), profile, cluster=mixed_cluster(), drop_oversized=True)
    assert prepared.dropped_oversized == 2
    assert prepared.jobs.job_id.tolist() == [11, 13]
    assert "2 job(s) larger than the cluster dropped" in prepared.summary()
    with deadline(10):
        result = simulate(prepared, get_policy("fcfs", dialect=prepared.profile.dialect),
                          backfill="easy")
    assert result.start.tolist() == [0, 2]
    assert [a.tolist() for a in result.allocations] == [[1], [1]]
