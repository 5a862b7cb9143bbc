"""The Cluster description: checks, kinds, partitions, switches, sub-clusters."""

import numpy as np
import pytest

from hpcsched.cluster.nodes import Cluster
from hpcsched.cluster.pool import ClusterError


def small(**changes):
    """n0, n1 (CPU, leaf s1), g0 (GPU, leaf s2) under spine s0; partitions cpu/gpu/all."""
    args = dict(
        names=("n0", "n1", "g0"),
        capacity=[[8, 16000, 0], [8, 16000, 0], [16, 64000, 2]],
        name="small",
        features=(("intel",), ("intel",), ("amd", "a100")),
        partitions=(("cpu", "all"), ("cpu", "all"), ("gpu", "all")),
        leaf=[1, 1, 2],
        switches=("s0", "s1", "s2"),
        switch_children=((1, 2), (), ()),
        exclusive_partitions=("gpu",),
        sources=("f.conf:1", "f.conf:1", "f.conf:2"),
    )
    args.update(changes)
    return Cluster(**args)


def test_basic_properties_and_read_only_arrays():
    c = small()
    assert len(c) == c.nodes == 3
    assert c.total.tolist() == [32, 96000, 2]
    assert c.capacity.dtype == np.int64
    with pytest.raises(ValueError):
        c.capacity[0, 0] = 1
    with pytest.raises(ValueError):
        c.leaf[0] = 0
    assert c.switch_parent.tolist() == [-1, 0, 0]
    assert c.switch_level.tolist() == [1, 0, 0]
    assert c.switch_members.tolist() == [[True, True, True], [True, True, False],
                                         [False, False, True]]
    assert c.partition_names == ("cpu", "all", "gpu")


def test_kinds_group_equal_capacity_and_features():
    c = small()
    assert c.kinds == ("8c/16G", "16c/63G/2gpu")
    assert c.kind.tolist() == [0, 0, 1]
    assert c.kind_counts.tolist() == [2, 1]
    assert c.kind_capacity.tolist() == [[8, 16000, 0], [16, 64000, 2]]
    # same capacity, other features: another kind, told apart by its features
    c = small(features=(("intel",), ("amd",), ("amd", "a100")))
    assert c.kinds == ("8c/16G[intel]", "8c/16G[amd]", "16c/63G/2gpu")


def test_identical():
    c = Cluster.identical(4, cores=8, memory=1000, gpus=1, exclusive=True)
    assert c.names == ("n0", "n1", "n2", "n3")
    assert c.capacity.tolist() == [[8, 1000, 1]] * 4
    assert c.exclusive and c.switches == () and c.leaf.tolist() == [-1] * 4
    assert "4 nodes" in c.describe() and "exclusive" in c.describe()


def test_duplicate_hostname_names_both_places():
    with pytest.raises(ClusterError, match=r"f.conf:2: node 'n0'.*defined twice.*f.conf:1"):
        small(names=("n0", "n1", "n0"))


def test_negative_capacity_names_node_and_resource():
    with pytest.raises(ClusterError, match=r"f.conf:1: node 'n1': negative memory"):
        small(capacity=[[8, 16000, 0], [8, -1, 0], [16, 64000, 2]])


def test_node_without_cores_is_refused():
    with pytest.raises(ClusterError, match=r"f.conf:2: node 'g0': the node has no cores"):
        small(capacity=[[8, 16000, 0], [8, 16000, 0], [0, 64000, 2]])


def test_fractional_capacity_and_wrong_shape_are_refused():
    with pytest.raises(ClusterError, match="whole numbers"):
        small(capacity=[[8, 16000.5, 0], [8, 16000, 0], [16, 64000, 2]])
    with pytest.raises(ClusterError, match="shape"):
        small(capacity=[[8, 16000], [8, 16000], [16, 64000]])


def test_switch_tree_errors():
    with pytest.raises(ClusterError, match="under both"):
        small(switch_children=((1, 2), (2,), ()))
    with pytest.raises(ClusterError, match="loop"):
        small(switch_children=((1,), (2,), (0,)), leaf=[1, 1, 2])
    with pytest.raises(ClusterError, match="leaf"):
        small(leaf=[1, 1, 3])


def test_select_keeps_order_prunes_switches_and_sets_exclusivity():
    c = small()
    gpu = c.select(partition="gpu")
    assert gpu.names == ("g0",) and gpu.name == "small/gpu"
    assert gpu.exclusive and gpu.default_partition == "gpu"
    assert gpu.switches == ("s0", "s2") and gpu.leaf.tolist() == [1]
    assert gpu.switch_children == ((1,), ())
    assert gpu.sources == ("f.conf:2",)
    cpu = c.select("cpu")
    assert cpu.names == ("n0", "n1") and not cpu.exclusive
    assert cpu.kinds == ("8c/16G",)
    every = c.select("all")
    assert every.name == "small" and every.names == c.names
    with pytest.raises(ClusterError, match="no partition 'nope'.*cpu, all, gpu"):
        c.select("nope")


def test_describe_is_one_line():
    text = small().describe()
    assert "\n" not in text
    assert text.startswith("small: 3 nodes (2 x 8c/16G, 1 x 16c/63G/2gpu), 32 cores")
    assert "2 leaf switches" in text and "shared" in text
