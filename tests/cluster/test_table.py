"""hpcsched's cluster table format: a hand-written file read node by node, every key and column,
every error naming file, line and key."""

import re
import textwrap

import numpy as np
import pytest

from hpcsched.cluster import table
from hpcsched.cluster.load import load_cluster
from hpcsched.cluster.pool import ClusterError
from hpcsched.cluster.slurm import ClusterFileError
from hpcsched.cluster.table import looks_like_table, read_cluster_table

TABLE = """\
# a toy machine
name: toy
note: written for the tests
default: cpu
exclusive: gpu
switch: spine > leaf-a leaf-b       # above the two leaves
note: a second note

KIND  Nodes  cores  memory  gpus  partition  switch  features  hosts
small 3      8      16G     -     cpu        leaf-a  -         n[01-03]
big   1      64     1T      0     cpu,all    leaf-b  avx,big   -
gpu   2      32     512000  4     gpu,all    leaf-b  a100      g[7-8]
"""


@pytest.fixture
def path(tmp_path):
    p = tmp_path / "toy.cluster"
    p.write_text(TABLE)
    return p


def test_nodes_in_row_order(path):
    c = read_cluster_table(path)
    assert c.name == "toy"
    assert c.names == ("n01", "n02", "n03", "big1", "g7", "g8")  # hosts default to KIND1..KINDn
    assert c.capacity.tolist() == ([[8, 16 * 1024, 0]] * 3 + [[64, 1024 * 1024, 0]]
                                   + [[32, 512000, 4]] * 2)
    assert c.features == ((),) * 3 + (("avx", "big"),) + (("a100",),) * 2
    assert c.partitions == (("cpu",),) * 3 + (("cpu", "all"),) + (("gpu", "all"),) * 2
    assert c.sources[0].endswith("toy.cluster:10") and c.sources[5].endswith("toy.cluster:12")
    assert c.notes == ("written for the tests", "a second note")


def test_switches_partitions_exclusivity(path):
    c = read_cluster_table(path)
    assert c.switches == ("leaf-a", "leaf-b", "spine")
    assert c.leaf.tolist() == [0, 0, 0, 1, 1, 1]
    assert c.switch_children == ((), (), (0, 1))
    assert c.switch_level.tolist() == [0, 0, 1]
    assert c.default_partition == "cpu"
    assert c.exclusive_partitions == ("gpu",) and not c.exclusive
    assert c.select("gpu").exclusive and not c.select("cpu").exclusive
    assert load_cluster(path, partition="all").names == ("big1", "g7", "g8")


def test_load_cluster_recognises_the_format(path):
    assert looks_like_table(path)
    c = load_cluster(path)
    assert c.names == read_cluster_table(path).names
    (path.parent / "slurm.conf").write_text("NodeName=a CPUs=2\n")
    assert not looks_like_table(path.parent / "slurm.conf")


def test_the_module_docstring_example(tmp_path):
    example = re.search(r"\n\n(    # cerit-zewura.cluster.*?)\n\n", table.__doc__, re.S).group(1)
    p = tmp_path / "cerit-zewura.cluster"
    p.write_text(textwrap.dedent(example))
    c = read_cluster_table(p)
    assert c.name == "cerit-zewura" and c.nodes == 68
    assert c.kind_counts.tolist() == [20, 48]
    assert c.kind_capacity.tolist() == [[80, 517018, 0], [12, 91832, 0]]
    assert c.names[0] == "zewura1" and c.names[-1] == "zegox48"
    assert c.notes == ("the CERIT-SC machine of the 2013 trace",)


def _write(tmp_path, text):
    p = tmp_path / "c.cluster"
    p.write_text(text)
    return p


@pytest.mark.parametrize("memory, mb", [("2048", 2048), ("2048M", 2048), ("2048m", 2048),
                                        ("2G", 2048), ("3t", 3 * 1024 * 1024), ("-", 0)])
def test_memory_units(tmp_path, memory, mb):
    c = read_cluster_table(_write(tmp_path, f"kind nodes cores memory\na 1 4 {memory}\n"))
    assert c.capacity[0].tolist() == [4, mb, 0]


def test_minimal_file_defaults(tmp_path):
    c = read_cluster_table(_write(tmp_path, "kind nodes cores\nx 2 4\n"))
    assert c.name == "c" and c.names == ("x1", "x2")
    assert c.capacity.tolist() == [[4, 0, 0]] * 2
    assert c.switches == () and c.leaf.tolist() == [-1, -1]
    assert c.partitions == ((), ()) and not c.exclusive and c.default_partition is None
    assert read_cluster_table(_write(tmp_path, "exclusive: yes\nkind nodes cores\nx 2 4\n")).exclusive
    yes = read_cluster_table(_write(tmp_path, "exclusive: yes\nkind nodes cores partition\nx 2 4 p\n"))
    assert yes.exclusive and yes.select("p").exclusive
    assert not read_cluster_table(_write(tmp_path, "exclusive: no\nkind nodes cores\nx 1 4\n")).exclusive


@pytest.mark.parametrize("text, line, key, message", [
    ("kind nodes cores\n", None, None, "no node kinds"),
    ("kind nodes\nx 1\n", 1, "cores", "lacks the column.*cores"),
    ("kind nodes cores colour\nx 1 4 red\n", 1, "colour", "unknown column"),
    ("kind nodes cores cores\nx 1 4 4\n", 1, "cores", "column given twice"),
    ("kind nodes cores\nx 1\n", 2, None, "expected 3 values"),
    ("kind nodes cores\nx 0 4\n", 2, "nodes", r"whole number >= 1, got '0'"),
    ("kind nodes cores\nx 1 four\n", 2, "cores", "whole number >= 1, got 'four'"),
    ("kind nodes cores gpus\nx 1 4 -2\n", 2, "gpus", "whole number >= 0"),
    ("kind nodes cores memory\nx 1 4 16GB\n", 2, "memory", "with a unit M, G"),
    ("kind nodes cores\nx 1 4\nx 2 4\n", 3, "kind", "kind 'x' is given twice .first on line 2"),
    ("kind nodes cores\nx/y 1 4\n", 2, "kind", "letters, digits"),
    ("kind nodes cores hosts\nx 2 4 h[1-3]\n", 2, "hosts", "names 3 hosts, but nodes is 2"),
    ("kind nodes cores hosts\nx 2 4 h[3-1]\n", 2, "hosts", "backwards"),
    ("colour: red\nkind nodes cores\nx 1 4\n", 1, "colour", "unknown key"),
    ("name: a\nname: b\nkind nodes cores\nx 1 4\n", 2, "name", "given twice .first on line 1"),
    ("switch: top\nkind nodes cores\nx 1 4\n", 1, "switch", "NAME > CHILD"),
    ("switch: top > nowhere\nkind nodes cores switch\nx 1 4 s\n", 1, "switch", "unknown switch"),
    ("switch: a > b\nswitch: b > a\nkind nodes cores switch\nx 1 4 s\n", 1, "switch",
     "switches form a loop: a > b > a"),
    ("switch: s > t\nswitch: t > s\nkind nodes cores switch\nx 1 4 s\n", 1, "switch",
     "has nodes .a leaf switch"),
    ("switch: a > s\nswitch: b > s\nkind nodes cores switch\nx 1 4 s\n", 2, "switch",
     "already under 'a'"),
    ("default: gpu\nkind nodes cores partition\nx 1 4 cpu\n", 1, "default", "partition 'gpu' has no"),
    ("exclusive: gpu\nkind nodes cores partition\nx 1 4 cpu\n", 1, "exclusive", "partition 'gpu'"),
])
def test_errors_name_file_line_and_key(tmp_path, text, line, key, message):
    p = _write(tmp_path, text)
    with pytest.raises(ClusterFileError, match=message) as err:
        read_cluster_table(p)
    assert (err.value.path, err.value.line, err.value.key) == (str(p), line, key)
    assert str(err.value).startswith(f"{p}:{line}: " if line else f"{p}: ")


def test_a_host_in_two_rows_names_both_lines(tmp_path):
    p = _write(tmp_path, "kind nodes cores hosts\na 2 4 n[1-2]\nb 1 8 n2\n")
    with pytest.raises(ClusterError, match=r"c.cluster:3: node 'n2': hostname 'n2' is defined twice "
                                           r"\(first .*c.cluster:2"):
        read_cluster_table(p)


def test_switch_order_is_first_use(tmp_path):
    p = _write(tmp_path, "switch: top > s2 s1\nkind nodes cores switch\na 1 4 s2\nb 1 4 s1\n"
                         "c 1 4 -\n")
    c = read_cluster_table(p)
    assert c.switches == ("s2", "s1", "top")
    assert c.switch_children == ((), (), (0, 1))
    assert c.leaf.tolist() == [0, 1, -1]
    assert np.array_equal(c.switch_members[2], [True, True, False])


def test_the_readme_example(tmp_path):
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    block = re.search(r"```\n(name: cerit-zewura\n.*?)```", readme, re.S).group(1)
    c = read_cluster_table(_write(tmp_path, block))
    assert c.name == "cerit-zewura" and c.nodes == 20 + 48
    assert c.kind_capacity.tolist() == [[80, 517018, 0], [12, 91832, 0]]
    assert c.notes == ("the CERIT-SC machine of the 2013 trace",)
