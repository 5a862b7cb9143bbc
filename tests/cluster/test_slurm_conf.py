"""slurm.conf and topology.conf: hand-written files, every value worked out from Slurm's rules."""

import textwrap

import numpy as np
import pytest

from hpcsched.cluster.load import load_cluster
from hpcsched.cluster.pool import ClusterError
from hpcsched.cluster.slurm import ClusterFileError, read_slurm_conf, read_topology

SLURM_CONF = r"""
# a small mixed cluster
ClusterName=toy
SlurmctldHost=ctl(10.0.0.1)
SelectType=select/cons_tres
NodeName=DEFAULT CPUs=8 RealMemory=32000 State=UNKNOWN
NodeName=cpu[01-04] Feature=intel
NodeName=big[1-2] Sockets=2 CoresPerSocket=16 \
    ThreadsPerCore=2 RealMemory=512000   # 2 x 16 x 2 = 64 CPUs
NodeName=gpu[1-2] Boards=1 SocketsPerBoard=2 CoresPerSocket=8 ThreadsPerCore=1 Gres=gpu:a100:2,gpu:v100:2(S:0-1),mps:100 Features=a100,v100
nodename=odd0 cpus=4 realmemory=1000 gres=gpu:1
PartitionName=DEFAULT MaxTime=INFINITE State=UP
PartitionName=batch Nodes=cpu[01-04],big[1-2] Default=YES
PartitionName=gpu Nodes=gpu[1-2] OverSubscribe=EXCLUSIVE
PartitionName=all Nodes=ALL Shared=EXCLUSIVE
"""

TOPOLOGY = """
SwitchName=s0 Nodes=cpu[01-04]
SwitchName=s1 Nodes=big[1-2],gpu[1-2]
SwitchName=top Switches=s[0-1]
"""


@pytest.fixture
def conf(tmp_path):
    (tmp_path / "slurm.conf").write_text(SLURM_CONF)
    (tmp_path / "topology.conf").write_text(TOPOLOGY)
    return tmp_path / "slurm.conf"


def test_nodes_defaults_ranges_continuations_and_gres(conf):
    c = load_cluster(conf)
    assert c.name == "toy"
    assert c.names == ("cpu01", "cpu02", "cpu03", "cpu04", "big1", "big2", "gpu1", "gpu2", "odd0")
    assert c.capacity.tolist() == (
        [[8, 32000, 0]] * 4          # DEFAULT CPUs and RealMemory
        + [[64, 512000, 0]] * 2      # sockets x cores x threads; the line's topology beats DEFAULT CPUs
        + [[16, 32000, 4]] * 2       # boards x sockets/board x cores x threads; 2 + 2 GPUs, mps ignored
        + [[4, 1000, 1]])            # lower-case keys
    assert c.features[0] == ("intel",) and c.features[6] == ("a100", "v100")
    assert c.sources[5].endswith("slurm.conf:8")  # a continued line is named by its first line


def test_partitions_default_and_exclusivity(conf):
    c = load_cluster(conf)
    assert c.partitions[0] == ("batch", "all")
    assert c.partitions[6] == ("gpu", "all")
    assert c.partitions[8] == ("all",)
    assert c.default_partition == "batch"
    assert c.exclusive_partitions == ("gpu", "all")
    assert not c.exclusive  # batch shares nodes
    assert c.select("gpu").exclusive and not c.select("batch").exclusive
    assert load_cluster(conf, partition="gpu").names == ("gpu1", "gpu2")


def test_topology_beside_the_file(conf):
    c = load_cluster(conf)
    assert c.switches == ("s0", "s1", "top")
    assert c.leaf.tolist() == [0, 0, 0, 0, 1, 1, 1, 1, -1]
    assert c.switch_level.tolist() == [0, 0, 1]
    assert c.switch_children == ((), (), (0, 1))
    batch = c.select("batch")  # s1 keeps big[1-2]; the tree is kept
    assert batch.switches == ("s0", "s1", "top") and batch.leaf.tolist() == [0, 0, 0, 0, 1, 1]


def test_without_topology(tmp_path):
    (tmp_path / "slurm.conf").write_text(SLURM_CONF)
    c = read_slurm_conf(tmp_path / "slurm.conf")
    assert c.switches == () and (c.leaf == -1).all()


def test_a_byte_order_mark_and_old_mac_line_endings_are_read(tmp_path, conf):
    """The same slurm.conf and topology.conf saved by a Windows editor (a UTF-8 byte-order mark)
    and with CR alone ending each line: the same cluster."""
    want = load_cluster(conf)
    for name in ("slurm.conf", "topology.conf"):
        text = (conf.parent / name).read_text()
        (tmp_path / "mac").mkdir(exist_ok=True)
        (tmp_path / "mac" / name).write_bytes(b"\xef\xbb\xbf" + text.replace("\n", "\r").encode())
    got = load_cluster(tmp_path / "mac" / "slurm.conf")
    assert got.names == want.names and got.capacity.tolist() == want.capacity.tolist()
    assert got.switches == want.switches and got.leaf.tolist() == want.leaf.tolist()


def test_select_linear_makes_every_partition_exclusive(tmp_path):
    path = tmp_path / "slurm.conf"
    path.write_text("SelectType=select/linear\nNodeName=n[1-2] CPUs=4\nPartitionName=p Nodes=ALL\n")
    c = load_cluster(path)
    assert c.exclusive and c.select("p").exclusive


def test_memory_absent_is_zero_and_nodes_in_no_partition(tmp_path):
    path = tmp_path / "slurm.conf"
    path.write_text("NodeName=n1 CPUs=2\nNodeName=n2 CPUs=2\nPartitionName=p Nodes=n1\n")
    c = load_cluster(path)
    assert c.capacity[:, 1].tolist() == [0, 0]
    assert c.partitions == (("p",), ())


def test_nodeset_by_feature(tmp_path):
    path = tmp_path / "slurm.conf"
    path.write_text("NodeName=a[1-2] CPUs=2 Feature=x\nNodeName=b1 CPUs=2\n"
                    "NodeSet=xs Feature=x\nPartitionName=p Nodes=xs,b1\n")
    assert load_cluster(path).partitions == (("p",), ("p",), ("p",))


@pytest.mark.parametrize("text, line, pattern", [
    ("NodeName=n1 CPUs=2\nNodeName=n[2-3] CPUs=eight\n", 2, r"CPUs: expected a whole number, got 'eight'"),
    ("NodeName=n1 CPUs=2\nInclude /etc/slurm/nodes.conf\n", 2, r"Include: 'Include' is not supported"),
    ("NodeName=n1 CPUs=2\nPartitionName=p Nodes=n[1-2]\n", 2, r"Nodes: node 'n2' is not defined"),
    ("NodeName=n[1-2] CPUs=2\nNodeName=n2 CPUs=4\n", 2, r"NodeName: node 'n2' is already defined at .*:1"),
    ("NodeName=n1 CPUs=2 junk\n", 1, r"expected KEY=VALUE, got 'junk'"),
    ("NodeName=n[3-1] CPUs=2\n", 1, r"NodeName: range '3-1' .* runs backwards"),
    ("NodeName=n1 CPUs=2 Gres=gpu:a100:x2\n", 1, r"Gres: bad GPU count"),
    ("NodeName=n1 CPUs=-2\n", 1, r"CPUs: must not be negative"),
    ("# c\n\nNodeName=n1 CPUs=2 \\\n  RealMemory=lots\n", 3, r"RealMemory: expected a whole number"),
    ("NodeName=n1 CPUs=2\nPartitionName=p Nodes=n1\nPartitionName=p Nodes=n1\n", 3,
     r"PartitionName: partition 'p' is defined twice"),
])
def test_bad_lines_name_file_line_and_key(tmp_path, text, line, pattern):
    path = tmp_path / "slurm.conf"
    path.write_text(text)
    with pytest.raises(ClusterFileError, match=rf"slurm.conf:{line}: {pattern}") as err:
        load_cluster(path)
    assert err.value.line == line and err.value.path == str(path)


def test_node_with_no_cores_names_its_line(tmp_path):
    path = tmp_path / "slurm.conf"
    path.write_text("NodeName=n1 CPUs=2\nNodeName=n2 CPUs=0\n")
    with pytest.raises(ClusterError, match=r"slurm.conf:2: node 'n2': the node has no cores"):
        load_cluster(path)


def test_no_nodes(tmp_path):
    path = tmp_path / "slurm.conf"
    path.write_text("ClusterName=empty\n")
    with pytest.raises(ClusterFileError, match="no NodeName"):
        load_cluster(path)


@pytest.mark.parametrize("text, line, pattern", [
    ("SwitchName=s0 Nodes=a[1-2]\nSwitchName=s1 Switches=s0,s9\n", 2, r"Switches: unknown switch 's9'"),
    ("SwitchName=s0 Nodes=a[1-2]\nSwitchName=s1 Nodes=a2\n", 2, r"Nodes: node 'a2' is already under switch 's0'"),
    ("SwitchName=s0 Nodes=a1\nSwitchName=s0 Nodes=a2\n", 2, r"SwitchName: switch 's0' is defined twice"),
    ("SwitchName=s0 Nodes=a1\nSwitchName=t1 Switches=s0\nSwitchName=t2 Switches=s0\n", 3,
     r"Switches: switch 's0' is already under 't1'"),
    ("SwitchName=s0 Nodes=a1\nNodeName=a1\n", 2, r"NodeName: expected a SwitchName"),
])
def test_bad_topology_lines(tmp_path, text, line, pattern):
    path = tmp_path / "topology.conf"
    path.write_text(text)
    with pytest.raises(ClusterFileError, match=rf"topology.conf:{line}: {pattern}"):
        read_topology(path)


def test_topology_node_unknown_to_slurm_conf(tmp_path):
    (tmp_path / "slurm.conf").write_text("NodeName=n1 CPUs=2\n")
    (tmp_path / "topology.conf").write_text("SwitchName=s Nodes=n[1-2]\n")
    with pytest.raises(ClusterFileError, match=r"topology.conf:1: Nodes: node 'n2' is not defined"):
        load_cluster(tmp_path / "slurm.conf")


def test_named_topology_and_folder(tmp_path):
    (tmp_path / "slurm.conf").write_text("NodeName=n[1-2] CPUs=2\n")
    (tmp_path / "net.conf").write_text("SwitchName=s Nodes=n2\n")
    c = read_slurm_conf(tmp_path / "slurm.conf", topology=tmp_path / "net.conf")
    assert c.leaf.tolist() == [-1, 0]
    assert c.notes == (f"{tmp_path}/net.conf: 1 node(s) of {tmp_path}/slurm.conf under no switch: "
                       f"n1 (the topology allocator uses them only for jobs that no switch can hold)",)
    assert load_cluster(tmp_path).names == ("n1", "n2")  # a folder holding slurm.conf


def test_resources_kept_for_the_system_are_not_given_to_jobs(tmp_path):
    path = tmp_path / "slurm.conf"
    path.write_text(
        "NodeName=a1 CPUs=16 RealMemory=64000 MemSpecLimit=4000\n"          # 60,000 MB for jobs
        "NodeName=b1 Sockets=2 CoresPerSocket=8 ThreadsPerCore=2 CoreSpecCount=2\n"  # 32 - 2 x 2
        "NodeName=c1 CPUs=16 CpuSpecList=0-1,8\n"                              # 16 - 3 listed
        "NodeName=d1 Procs=12 RealMemory=1000\n")                              # Procs: old CPUs
    c = load_cluster(path)
    assert c.capacity.tolist() == [[16, 60000, 0], [28, 0, 0], [13, 0, 0], [12, 1000, 0]]
    assert c.notes == ()


@pytest.mark.parametrize("line, key, message", [
    ("NodeName=n1 CPUs=4 CoreSpecCount=4", "CoreSpecCount", "keeps 4 of the node's 4 CPUs"),
    ("NodeName=n1 CPUs=4 CoreSpecCount=1 CpuSpecList=0", "CoreSpecCount", "not both"),
    ("NodeName=n1 CPUs=4 CpuSpecList=0-x", "CpuSpecList", "expected CPU ids"),
    ("NodeName=n1 CPUs=4 RealMemory=100 MemSpecLimit=100", "MemSpecLimit", "none is left"),
])
def test_resources_kept_for_the_system_errors(tmp_path, line, key, message):
    path = tmp_path / "slurm.conf"
    path.write_text("NodeName=n0 CPUs=1\n" + line + "\n")
    with pytest.raises(ClusterFileError, match=rf"slurm.conf:2: {key}: .*{message}") as err:
        load_cluster(path)
    assert (err.value.line, err.value.key) == (2, key) and "\n" not in str(err.value)


def test_unknown_keys_are_noted_not_dropped_unsaid(tmp_path):
    path = tmp_path / "slurm.conf"
    path.write_text("NodeName=DEFAULT CPUs=4 Colour=blue\n"
                    "NodeName=n[1-2] RealMem=1000 Weight=10 TmpDisk=100\n"
                    "PartitionName=p Nodes=ALL MaxTime=1:00:00 Priority=5\n"
                    "SchedulerType=sched/backfill\n")
    c = load_cluster(path)
    assert c.capacity.tolist() == [[4, 0, 0]] * 2  # RealMem is not RealMemory
    assert c.notes == (f"{path}:1: Colour: not a NodeName key of slurm.conf(5): ignored",
                       f"{path}:2: RealMem: not a NodeName key of slurm.conf(5): ignored",
                       f"{path}:3: Priority: not a PartitionName key of slurm.conf(5): ignored")
