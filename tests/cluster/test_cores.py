"""Jobs seen as total cores (`hpcsched.cluster.cores`, `trace convert --cores-of`): each job's
cores from its node count and cores per node, what the view leaves out counted, the refusals, and
the written trace read back as the pool every profile builds of it."""

from __future__ import annotations

import numpy as np
import pytest

from hpcsched.cluster.cores import (check_shared, cores_norm, cores_report, cores_table,
                                    job_cores, total_cores)
from hpcsched.cluster.nodes import Cluster
from hpcsched.cluster.pool import ClusterError, NodePool
from hpcsched.workload.cleaning import clean
from hpcsched.workload.jobs import JobTable, TraceHeader
from tests.sim.hetero_helpers import mixed_cluster
from tests.test_cli import assert_one_line_error, run_cli

SACCT = "tests/data/sacct_small/jobs.txt"
SLURM = "tests/data/sacct_small/slurm.conf"


def hand_jobs() -> JobTable:
    """On `mixed_cluster` (A: 8 cores, 32000 MB; B: 4 cores, 64000 MB; C: 4 cores, 16000 MB and
    2 GPUs; 16 cores in all):

    0: 2 nodes x 3 cores, 1000 MB each, its NCPUS 5 (so 3 per node is rounded up from 2.5)
    1: 1 node x 4 cores, no memory
    2: 1 node x 2 cores and 1 GPU
    3: an SWF job of 10 processors (no request columns): ceil(10 / 4) = 3 nodes of the smallest
       node's 4 cores, ceil(10 / 3) = 4 cores on each"""
    return JobTable.from_columns(
        TraceHeader(name="hand", max_procs=99, max_nodes=7),
        submit=[0, 5, 9, 12], run_time=[10, 20, 30, 40], req_time=[60, 60, 60, 60],
        req_procs=[5, 4, 2, 10], alloc_procs=[5, 4, 2, 10], user=[3, 1, 2, 7],
        nodes=[2, 1, 1, -1], cores_per_node=[3, 4, 2, -1], mem_per_node=[1000, 0, 0, -1],
        gpus_per_node=[0, 0, 1, -1])


def test_a_jobs_cores_are_its_nodes_times_its_cores_per_node():
    cluster = mixed_cluster()
    assert total_cores(cluster) == 8 + 4 + 4
    # by the docstring's arithmetic, not by job_requests: 2 x 3, 1 x 4, 1 x 2, 3 x 4
    assert job_cores(hand_jobs(), cluster).tolist() == [6, 4, 2, 12]


def test_the_cores_table_and_what_it_left_out():
    cluster = mixed_cluster()
    jobs = hand_jobs()
    table, report = cores_table(jobs, cluster)
    expected = [6, 4, 2, 12]
    for col in ("procs", "req_procs", "alloc_procs"):
        assert table[col].tolist() == expected
    for col in ("nodes", "cores_per_node", "mem_per_node", "gpus_per_node", "req_mem",
                "used_mem"):
        assert (table[col] == -1).all()
    for col in ("submit", "run_time", "req_time", "user", "job_id"):
        assert table[col].tolist() == jobs[col].tolist()
    h = table.header
    assert (h.max_procs, h.max_nodes) == (16, 16) and h.name == "hand-cores"
    assert "MaxProcs: 16" in "\n".join(h.comments)
    # memory: job 0 only (an SWF job without a memory field asks none); GPUs: job 2; several
    # nodes: jobs 0 and 3; rounded: job 0 (6 > 5) and job 3 (12 > 10)
    assert (report.memory, report.gpus, report.multi_node, report.rounded) == (1, 1, 2, 2)
    assert (report.jobs, report.cores, report.largest) == (4, 16, 12)
    assert "memory requests ignored: 1 job(s)" in report.summary()
    assert cores_report(jobs, cluster) == report


def test_a_job_the_cluster_can_never_run_and_an_exclusive_cluster_are_refused():
    cluster = mixed_cluster()
    gpus = hand_jobs().with_columns(gpus_per_node=np.array([0, 0, 3, -1.0]))  # C has 2 GPUs
    with pytest.raises(ClusterError, match=r"job 3 asks for 1 node\(s\) with 2 cores, 3 gpus"):
        cores_table(gpus, cluster)
    with pytest.raises(ClusterError, match="allocates whole nodes"):
        check_shared(mixed_cluster(exclusive=True))
    with pytest.raises(ClusterError, match="allocates whole nodes"):
        cores_table(hand_jobs(), mixed_cluster(exclusive=True))


def test_the_written_trace_is_the_pool_of_single_cores_under_every_profile(tmp_path):
    from hpcsched.sim.run import prepare
    from hpcsched.workload.swf import write_swf

    cluster = mixed_cluster()
    jobs = hand_jobs()
    table, _ = cores_table(jobs, cluster)
    path = tmp_path / "cores.swf"
    write_swf(table, path)
    for profile in ("rlscheduler", "dras", "standard"):
        p = prepare(str(path), profile)
        assert p.cluster == NodePool(16, 1), profile
        assert p.jobs.procs.tolist() == [6, 4, 2, 12]
        assert p.cluster.nodes_needed(p.jobs.procs).tolist() == [6, 4, 2, 12]
    # RLScheduler's constants of the file are those `cores_norm` derives from the source's
    _, source = clean(jobs, "standard")
    _, written = clean(prepare(str(path), "rlscheduler").jobs, "standard")
    assert source.norm["max_procs"] == 99  # the source's header: it must not leak through
    assert cores_norm(source.norm, cluster) == written.norm


def test_trace_convert_cores_of_a_slurm_partition(tmp_path, capsys):
    out = tmp_path / "gpu-cores.swf"
    code, _, err = run_cli(capsys, "trace", "convert", SACCT, str(out), "--cores-of", SLURM,
                           "--partition", "gpu")
    assert code == 0, err
    from hpcsched.workload.swf import read_swf

    got = read_swf(out)
    # the gpu partition's jobs of `trace jobs`, nodes x cores_per_node: 1004_1 1 x 2, 1004_2
    # 1 x 2, 1007+1 2 x 8, 1013 3 x 4 (its NCPUS 10 rounded up), 1016 1 x 2
    assert got.procs.tolist() == [2, 2, 16, 12, 2]
    assert (got.header.max_procs, got.header.max_nodes) == (48, 48)  # 3 nodes x 16 CPUs
    assert "5 jobs seen as total cores" in err
    assert "GPU requests ignored: 4 job(s)" in err  # 1004_1, 1004_2, 1007+1, 1013 (1016: none)
    assert "multi-node jobs as their summed cores: 2" in err
    assert "processors rounded up to whole cores per node: 1" in err


@pytest.mark.parametrize("argv, needles", [
    (["--partition", "gpu"], ["--partition goes with --cores-of CLUSTER"]),
    (["--cores-of", SLURM, "--partition", "gpu", "--start", "9"], ["--start 9 is outside"]),
    (["--cores-of", SLURM, "--partition", "nope"], ["nope"]),
])
def test_bad_convert_options_are_one_line(tmp_path, capsys, argv, needles):
    code, _, err = run_cli(capsys, "trace", "convert", SACCT, str(tmp_path / "x.swf"), *argv)
    assert_one_line_error(code, err, *needles)


def test_an_identical_cluster_and_its_pool_agree():
    cluster = Cluster.identical(3, 4)
    jobs = JobTable.from_columns(submit=[0, 1], run_time=[5, 5], req_time=[9, 9],
                                 req_procs=[7, 4], alloc_procs=[7, 4])
    # an SWF job on identical nodes takes ceil(7 / 4) = 2 nodes of ceil(7 / 2) = 4 cores
    assert job_cores(jobs, cluster).tolist() == [8, 4]
    assert total_cores(cluster) == 12
