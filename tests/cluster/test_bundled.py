"""The bundled clusters: each one's numbers against its source, and `cluster show` printing the
published totals beside ours with the notes on where they differ."""

import json
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from hpcsched.cli import main
from hpcsched.cluster.load import BUNDLED_CLUSTERS, Reference, bundled_path, compare, load_cluster
from hpcsched.workload.cerit import read_machines


def test_registry():
    assert list(BUNDLED_CLUSTERS) == ["spartan-physical", "spartan-deeplearn", "spartan-sapphire",
                                      "cerit-zewura"]
    for name, info in BUNDLED_CLUSTERS.items():
        assert bundled_path(name).is_file()
        cluster = load_cluster(name)
        assert cluster.name == name
        assert cluster.notes[-len(info.notes):] == info.notes  # the notes travel with the cluster


def test_sapphire_is_the_thesis_text():
    c = load_cluster("spartan-sapphire")
    # Ch. 6: 6,656 cores of 128 per node, 977 GB (the thesis's GB: 1,000 MB) per node
    assert c.nodes == 6656 // 128 == 52
    assert c.kind_capacity.tolist() == [[128, 977 * 1000, 0]]
    assert c.switches == ("sapphire-switch",) and c.switch_level.tolist() == [0]  # one level
    assert set(c.leaf.tolist()) == {0}
    assert c.partition_names == ("sapphire",) and c.default_partition == "sapphire"
    assert not c.exclusive


def test_cerit_zewura_is_the_machines_file():
    machines = read_machines(Path(str(resources.files("hpcsched") / "data" / "traces"
                                      / "wagap-2013.swf.machines")))
    c = load_cluster("cerit-zewura")
    # Alea's KB are 1,024 bytes: RAM per node in MB = KB / 1024, exactly
    assert [(m.name, m.nodes, m.cpus, m.ram_kb / 1024) for m in machines] == \
        [("zewura", 20, 80, 517018), ("zegox", 48, 12, 91832)]
    assert c.kind_counts.tolist() == [m.nodes for m in machines]
    assert c.kind_capacity.tolist() == [[m.cpus, m.ram_kb // 1024, 0] for m in machines]
    assert c.names[:2] == ("zewura1", "zewura2") and c.names[-1] == "zegox48"
    assert c.kind_features == (("cl_zewura",), ("cl_zegox",))
    assert load_cluster("cerit-zewura", partition="zegox").nodes == 48
    assert c.switches == ()


@pytest.mark.parametrize("name, differs", [
    ("spartan-physical", ["nodes 87 vs 86 (+1)", "cores 6,264 vs 6,192 (+72)"]),
    ("spartan-deeplearn", []),
    ("spartan-sapphire", []),
    ("cerit-zewura", []),
])
def test_published_totals(name, differs):
    assert compare(load_cluster(name), BUNDLED_CLUSTERS[name].reference) == differs


def test_compare_names_every_total():
    c = load_cluster("spartan-deeplearn")
    ref = Reference("x", nodes=29, cores=901, gpus=116, leaf_switches=3)
    assert compare(c, ref) == ["nodes 30 vs 29 (+1)", "cores 900 vs 901 (-1)", "gpus 120 vs 116 (+4)",
                               "leaf switches 4 vs 3 (+1)"]


def test_show_physical_gives_the_thesis_totals_and_the_difference(capsys):
    assert main(["cluster", "show", "spartan-physical"]) == 0
    out = capsys.readouterr().out
    assert "Wang (2025) thesis, Table 4.1:  86 nodes, 6,192 cores, 0 gpus, 4 leaf switches" in out
    assert "this description:               87 nodes, 6,264 cores, 0 gpus, 4 leaf switches" in out
    assert "differs: nodes 87 vs 86 (+1); cores 6,264 vs 6,192 (+72)" in out
    assert "\nnotes\n  - The platform folder" in out and "73 of 72 cores / 710,000 MB" in out


def test_show_deeplearn_agrees(capsys):
    assert main(["cluster", "show", "spartan-deeplearn"]) == 0
    out = capsys.readouterr().out
    assert "Wang (2025) thesis, Table 4.1:  30 nodes, 900 cores, 120 gpus, 4 leaf switches" in out
    assert "agrees on nodes, cores, gpus, leaf switches" in out


def test_show_part_of_a_bundled_cluster_has_no_reference(capsys):
    assert main(["cluster", "show", "cerit-zewura", "--partition", "zegox"]) == 0
    out = capsys.readouterr().out
    assert "cerit-zewura/zegox: 48 nodes" in out
    assert "this description" not in out  # the published totals are the whole machine's
    assert "\nnotes\n" in out


def test_show_json_is_unchanged_by_notes(capsys):
    assert main(["cluster", "show", "spartan-sapphire", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows == [{"cluster": "spartan-sapphire", "kind": "128c/954G", "nodes": 52, "cores": 128,
                     "memory_mb": 977000, "gpus": 0, "features": "", "partitions": "sapphire",
                     "switches": "sapphire-switch", "hosts": "sapphire[1-52]"}]


def test_list_describes_all_four(capsys):
    assert main(["cluster", "list"]) == 0
    out = capsys.readouterr().out
    for name, info in BUNDLED_CLUSTERS.items():
        assert f"  {name.ljust(17)}  {info.description}" in out


def test_notes_of_a_user_file_are_shown(tmp_path, capsys):
    (tmp_path / "mine.cluster").write_text("note: racks 1-3 only\nkind nodes cores\nx 2 4\n")
    assert main(["cluster", "show", str(tmp_path / "mine.cluster")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("mine: 2 nodes (2 x 4c)") and "\nnotes\n  - racks 1-3 only" in out
    assert np.all(load_cluster(tmp_path / "mine.cluster").capacity == [[4, 0, 0]] * 2)
