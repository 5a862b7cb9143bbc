"""Spartan as Slurm's own files describe a cluster (`tests/data/slurm_spartan/`: slurm.conf,
topology.conf, gres.conf, written by hand from the numbers of the thesis's platform folder), read
host by host against values worked out by hand, then against the platform folder's reader, then in
a simulation that must schedule job for job as on the bundled `spartan-physical`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hpcsched.cluster.load import load_cluster
from hpcsched.cluster.slurm import read_slurm_conf
from hpcsched.policies.priority import get_policy
from hpcsched.sim.factory import make_engine
from hpcsched.sim.run import prepare

DATA = Path(__file__).resolve().parents[1] / "data"
CONF = DATA / "slurm_spartan" / "slurm.conf"


def hosts(prefix: str, first: int, last: int) -> list[str]:
    return [f"{prefix}{i:03d}" for i in range(first, last + 1)]


PHYS = ("avx512", "physg5")
#: (hosts, CPUs, RealMemory MB, GPUs, features, partition, leaf switch), in the file's order.
#: CPUs: physical 4 sockets x 18 cores x 1 thread = 72 (NodeName=DEFAULT); gpgpu072-082 2 x 14 x 1 =
#: 28 (the DEFAULT's 16 cores per socket overridden); gpgpu086-088 CPUs=24; gpgpu091-143 2 x 16 = 32.
#: GPUs: 4 from Gres=gpu:TYPE:4 (the "(S:0-1)" socket binding is not a count).
EXPECTED = [
    (hosts("spartan-bm", 53, 66), 72, 1519000, 0, ("avx512", "physg4"), "physical", "le-266-q11-1-res"),
    (hosts("spartan-bm", 87, 125), 72, 710000, 0, PHYS, "physical", "le-266-q14-1-res"),
    (hosts("spartan-bm", 1, 20), 72, 710000, 0, PHYS, "physical", "le-266-r17-1-res"),
    (hosts("spartan-bm", 21, 29) + hosts("spartan-bm", 39, 43), 72, 710000, 0, PHYS, "physical",
     "le-266-r19-1-res"),
    (hosts("spartan-gpgpu", 72, 75), 28, 234000, 4, ("avx2", "dlg1"), "deeplearn", "le-266-q08-1-res"),
    (hosts("spartan-gpgpu", 78, 82), 28, 174000, 4, ("avx512", "dlg2"), "deeplearn",
     "le-266-q08-1-res"),
    (hosts("spartan-gpgpu", 86, 88), 24, 175000, 4, ("avx512", "dlg3"), "deeplearn",
     "le-266-q11-1-res"),
    (hosts("spartan-gpgpu", 91, 96), 32, 234000, 4, ("avx512", "dlg4"), "deeplearn",
     "le-266-r17-1-res"),
    (hosts("spartan-gpgpu", 132, 143), 32, 1000000, 4, ("avx512", "dlg5"), "deeplearn",
     "le-266-r21-1-res"),
]


@pytest.fixture(scope="module")
def spartan():
    return load_cluster(CONF)


def test_every_host_value_by_value(spartan):
    expected_names = [h for group in EXPECTED for h in group[0]]
    assert spartan.names == tuple(expected_names)
    assert spartan.name == "spartan"  # ClusterName=
    i = 0
    for names, cpus, memory, gpus, features, partition, switch in EXPECTED:
        for host in names:
            assert spartan.names[i] == host
            assert spartan.capacity[i].tolist() == [cpus, memory, gpus], host
            assert spartan.features[i] == features, host
            assert spartan.partitions[i] == (partition,), host
            assert spartan.switches[spartan.leaf[i]] == switch, host
            i += 1
    assert i == spartan.nodes == 117


def test_partitions_give_the_thesis_totals(spartan):
    # Table 4.1 of the thesis: Physical 86 nodes / 6,192 cores in the table, 87 / 6,264 in the
    # platform folder (which this file follows); Deeplearn 30 nodes, 900 cores, 120 GPUs
    physical, deeplearn = spartan.select("physical"), spartan.select("deeplearn")
    assert (physical.nodes, physical.total.tolist()) == (87, [87 * 72, 14 * 1519000 + 73 * 710000, 0])
    assert (deeplearn.nodes, deeplearn.total.tolist()[0::2]) == (30, [900, 120])
    assert spartan.default_partition == "physical" and not spartan.exclusive


def test_one_spine_over_six_leaves(spartan):
    leaves = ("le-266-q08-1-res", "le-266-q11-1-res", "le-266-q14-1-res", "le-266-r17-1-res",
              "le-266-r19-1-res", "le-266-r21-1-res")
    assert spartan.switches == leaves + ("sp-266-p16-1",)
    assert spartan.switch_children == ((),) * 6 + ((0, 1, 2, 3, 4, 5),)
    assert spartan.switch_level.tolist() == [0] * 6 + [1]
    # nodes per leaf: 4 + 5, 14 + 3, 39, 20 + 6, 9 + 5, 12
    assert np.bincount(spartan.leaf, minlength=7).tolist() == [9, 17, 39, 26, 14, 12, 0]


def test_gres_conf_agrees_so_nothing_is_noted(spartan):
    assert spartan.notes == ()
    # without gres.conf the counts are the same: they come from slurm.conf's Gres=
    alone = read_slurm_conf(CONF, gres=None)
    assert np.array_equal(alone.capacity, spartan.capacity)


@pytest.mark.parametrize("partition", ["physical", "deeplearn"])
def test_the_same_nodes_as_the_platform_folder(spartan, partition):
    ours = spartan.select(partition)
    platform = load_cluster(f"spartan-{partition}")
    assert ours.names == platform.names
    assert np.array_equal(ours.capacity, platform.capacity)
    assert ours.features == platform.features
    assert [ours.switches[s] for s in ours.leaf] == [platform.switches[s] for s in platform.leaf]


def test_a_simulation_on_the_slurm_files_is_the_one_on_the_platform_folder():
    """Same nodes in the same order: a best-fit run schedules every job on the same nodes at the
    same time, whichever description the cluster comes from."""
    trace = str(DATA / "hpcsim_small" / "phys2k_s11.tsv.gz")
    results = []
    for cluster, partition in ((str(CONF), "physical"), ("spartan-physical", None)):
        prepared = prepare(trace, "standard", cluster=cluster, partition=partition)
        engine = make_engine(prepared.jobs, prepared.cluster, prepared.profile, backfill="easy",
                             allocator="best-fit")
        results.append(engine.run(get_policy("sjf")).records())
    conf, platform = results
    assert len(conf["start"]) == 1997  # 2,000 jobs, 3 of run time 0 dropped by cleaning
    assert np.array_equal(conf["start"], platform["start"])
    assert list(conf["nodes"]) == list(platform["nodes"])
