"""HPCsim's platform format: the bundled Spartan partitions (facts from specs/hpcsim-semantics.md §2
and the files themselves), the toy platform, and the errors."""

from pathlib import Path

import numpy as np
import pytest

from hpcsched.cluster.load import BUNDLED_CLUSTERS, bundled_path, load_cluster
from hpcsched.cluster.platform import platform_partition, read_hpcsim_platform
from hpcsched.cluster.pool import ClusterError
from hpcsched.cluster.slurm import ClusterFileError

DATA = Path(__file__).parents[1] / "data"


def test_spartan_physical_as_the_spec_lists_it():
    c = load_cluster("spartan-physical")
    assert c.name == "spartan-physical" and c.nodes == 87 and c.resources == ("cores", "memory", "gpus")
    assert (c.capacity[:, 0] == 72).all() and (c.capacity[:, 2] == 0).all()
    assert (c.capacity[:14, 1] == 1519000).all() and (c.capacity[14:, 1] == 710000).all()
    # n0-13 on the first leaf (s1), n14-52 s2, n53-72 s3, n73-86 s4 (the spec's HPCsim ids)
    expected_leaf = [1] * 14 + [2] * 39 + [3] * 20 + [4] * 14
    assert c.leaf.tolist() == expected_leaf
    assert c.switches[0] == "sp-266-p16-1" and c.switch_children[0] == (1, 2, 3, 4)
    assert c.switch_level.tolist() == [1, 0, 0, 0, 0]
    # cluster order is the topology file's: bm053-066 first, then bm087-125, bm001-020, bm021-029,
    # bm039-043
    order = ([f"spartan-bm{i:03d}" for i in range(53, 67)] + [f"spartan-bm{i:03d}" for i in range(87, 126)]
             + [f"spartan-bm{i:03d}" for i in range(1, 21)] + [f"spartan-bm{i:03d}" for i in range(21, 30)]
             + [f"spartan-bm{i:03d}" for i in range(39, 44)])
    assert c.names == tuple(order)
    assert c.partitions == (("physical",),) * 87 and c.default_partition == "physical"
    assert not c.exclusive
    assert sorted(c.kind_counts.tolist()) == [14, 73]


def test_spartan_deeplearn_as_the_spec_lists_it():
    c = load_cluster("spartan-deeplearn")
    assert c.nodes == 30 and (c.capacity[:, 2] == 4).all()
    cores, memory = c.capacity[:, 0].tolist(), c.capacity[:, 1].tolist()
    # n0-3 28c/234000, n4-8 28c/174000 (s1); n9-11 24c/175000 (s2); n12-17 32c/234000 (s3);
    # n18-29 32c/1000000 (s4)
    assert cores == [28] * 9 + [24] * 3 + [32] * 6 + [32] * 12
    assert memory == [234000] * 4 + [174000] * 5 + [175000] * 3 + [234000] * 6 + [1000000] * 12
    assert c.leaf.tolist() == [1] * 9 + [2] * 3 + [3] * 6 + [4] * 12
    assert len(c.kinds) == 5
    # the partition column of nodes.csv is not used: gpgpu099 (gpu-a100 there) is not in the file's
    # topology, and every node is in `deeplearn`
    assert "spartan-gpgpu099" not in c.names
    assert set(c.partition_names) == {"deeplearn"}


def test_gpus_follow_the_gpu_column_not_only_gpu_number(tmp_path):
    (tmp_path / "x_topology.txt").write_text("SwitchName=a Nodes=h[1-2]\n")
    (tmp_path / "nodes.csv").write_text(
        "Features,core,memory,node_type,config,gpu,partition,gpu_number\n"
        "f,4,100,h1,1:4:1,(null),p,8\n"      # gpu (null): no GPUs whatever gpu_number says
        "f,4,100,h2,1:4:1,gpu:v100:2,p,2\n")
    c = load_cluster(tmp_path / "x_topology.txt")
    assert c.capacity[:, 2].tolist() == [0, 2]
    assert c.name == "x" and c.partitions == (("x",), ("x",))


def test_toy_platform_three_levels():
    c = read_hpcsim_platform(DATA / "hpcsim_toy" / "toy_topology.txt")
    assert c.name == "toy" and c.nodes == 17
    assert c.switches == ("leafA", "top", "leafB", "midA", "leafC", "midB", "leafD")
    # Switches= order kept as written (midB before midA), not file order
    assert c.switch_children[1] == (5, 3)
    assert c.switch_level.tolist() == [0, 2, 0, 1, 0, 1, 0]
    assert c.switch_parent.tolist() == [3, -1, 3, 1, 5, 1, 5]
    assert c.names[:5] == ("mx001", "mx002", "mx003", "mx004", "mx005")
    assert "unused001" not in c.names


def test_partition_from_file_name_or_argument():
    assert platform_partition("a/physical_topology.txt") == "physical"
    assert platform_partition("gpu.txt") == "gpu"
    c = load_cluster(bundled_path("spartan-physical"))
    assert c.name == "physical" and c.partitions[0] == ("physical",)
    c = read_hpcsim_platform(bundled_path("spartan-physical"), partition="cpu")
    assert c.partitions[0] == ("cpu",)


def _platform(tmp_path, topology: str, rows: list[str]):
    (tmp_path / "p_topology.txt").write_text(topology)
    (tmp_path / "nodes.csv").write_text(
        "Features,core,memory,node_type,config,gpu,partition,gpu_number\n" + "\n".join(rows) + "\n")
    return tmp_path / "p_topology.txt"


def test_host_missing_from_nodes_csv_names_topology_line(tmp_path):
    path = _platform(tmp_path, "SwitchName=top Switches=a\n\nSwitchName=a Nodes=h[1-2]\n",
                     ["f,4,100,h1,x,(null),p,0"])
    with pytest.raises(ClusterFileError, match=r"p_topology.txt:3: Nodes: node 'h2' has no row"):
        load_cluster(path)


def test_bad_number_names_csv_line_and_column(tmp_path):
    path = _platform(tmp_path, "SwitchName=a Nodes=h[1-2]\n",
                     ["f,4,100,h1,x,(null),p,0", "f,four,100,h2,x,(null),p,0"])
    with pytest.raises(ClusterFileError, match=r"nodes.csv:3: core: expected a number, got 'four'"):
        load_cluster(path)


def test_duplicate_row_for_a_used_host(tmp_path):
    path = _platform(tmp_path, "SwitchName=a Nodes=h1\n",
                     ["f,4,100,h1,x,(null),p,0", "f,8,100,h1,x,(null),p,0"])
    with pytest.raises(ClusterFileError, match=r"nodes.csv:3: node_type: node 'h1' has several "
                                               r"rows \(lines 2, 3\)"):
        load_cluster(path)


def test_missing_column(tmp_path):
    (tmp_path / "p_topology.txt").write_text("SwitchName=a Nodes=h1\n")
    (tmp_path / "nodes.csv").write_text("node_type,core,memory\nh1,4,100\n")
    with pytest.raises(ClusterFileError, match=r"nodes.csv:1: missing column\(s\) gpu, gpu_number"):
        load_cluster(tmp_path / "p_topology.txt")


def test_level_that_contradicts_the_tree(tmp_path):
    path = _platform(tmp_path, "SwitchName=top Level=2 Switches=a\nSwitchName=a Level=0 Nodes=h1\n",
                     ["f,4,100,h1,x,(null),p,0"])
    with pytest.raises(ClusterFileError, match=r"p_topology.txt:1: Level: says 2.*level 1"):
        load_cluster(path)


def test_unknown_spec_lists_bundled_names():
    with pytest.raises(ClusterError) as err:
        load_cluster("spartan-nope")
    for name in BUNDLED_CLUSTERS:
        assert name in str(err.value)


def test_topology_without_nodes_csv(tmp_path):
    (tmp_path / "p_topology.txt").write_text("SwitchName=a Nodes=h1\n")
    with pytest.raises(ClusterError, match="nodes.csv"):
        load_cluster(tmp_path / "p_topology.txt")


def test_node_without_cores_names_both_files(tmp_path):
    path = _platform(tmp_path, "SwitchName=a Nodes=h[1-2]\n",
                     ["f,4,100,h1,x,(null),p,0", "f,0,100,h2,x,(null),p,0"])
    with pytest.raises(ClusterError, match=r"nodes.csv:3 \(p_topology.txt:1\): node 'h2': the node "
                                           r"has no cores"):
        load_cluster(path)
