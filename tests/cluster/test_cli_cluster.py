"""`hpcsched cluster show | list`."""

import json

import pytest

from hpcsched.cli import main


def test_show_bundled(capsys):
    assert main(["cluster", "show", "spartan-physical"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("spartan-physical: 87 nodes (14 x 72c/1483G, 73 x 72c/693G)")
    # every leaf switch with its node count and host range (the topology file's lines)
    assert "le-266-q11-1-res  level 0  14 nodes  spartan-bm[053-066]" in out
    assert "le-266-q14-1-res  level 0  39 nodes  spartan-bm[087-125]" in out
    assert "le-266-r19-1-res  level 0  14 nodes  spartan-bm[021-029,039-043]" in out
    assert "sp-266-p16-1  level 1  87 nodes" in out
    assert "physical (default): 87 nodes, 6264 cores" in out  # 87 x 72
    assert "total: 87 nodes, 6264 cores, 73096000 MB memory, 0 gpus" in out  # 14 x 1519000 + 73 x 710000


def test_show_json_rows_are_flat_per_kind(capsys):
    assert main(["cluster", "show", "spartan-deeplearn", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 5 and sum(r["nodes"] for r in rows) == 30
    assert all(r["gpus"] == 4 for r in rows)
    assert all(not isinstance(v, (list, dict)) for r in rows for v in r.values())
    by_hosts = {r["hosts"]: (r["cores"], r["memory_mb"]) for r in rows}
    assert by_hosts["spartan-gpgpu[086-088]"] == (24, 175000)
    assert by_hosts["spartan-gpgpu[132-143]"] == (32, 1000000)


def test_show_slurm_conf_partition(tmp_path, capsys):
    (tmp_path / "slurm.conf").write_text("NodeName=a[1-3] CPUs=4 RealMemory=1000\n"
                                         "NodeName=g1 CPUs=8 Gres=gpu:2\n"
                                         "PartitionName=cpu Nodes=a[1-3] Default=YES\n"
                                         "PartitionName=gpu Nodes=g1 OverSubscribe=EXCLUSIVE\n")
    assert main(["cluster", "show", str(tmp_path / "slurm.conf"), "--partition", "gpu", "--csv"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("cluster,kind,nodes,cores,memory_mb,gpus")
    assert out[1].split(",")[2:6] == ["1", "8", "0", "2"]
    assert main(["cluster", "show", str(tmp_path / "slurm.conf")]) == 0
    out = capsys.readouterr().out
    assert "cpu (default): 3 nodes" in out and "gpu (exclusive): 1 nodes" in out


def test_errors_exit_2_with_a_message(capsys):
    assert main(["cluster", "show", "nowhere"]) == 2
    err = capsys.readouterr().err
    assert "spartan-physical" in err and "spartan-deeplearn" in err
    assert main(["cluster", "show", "spartan-physical", "--partition", "gpu"]) == 2
    assert "no partition 'gpu'" in capsys.readouterr().err


def test_list_and_help(capsys):
    assert main(["cluster", "list"]) == 0
    out = capsys.readouterr().out
    assert "spartan-deeplearn" in out and "hpcsim-topology" in out
    with pytest.raises(SystemExit):
        main(["cluster", "show", "--help"])
    assert "hpcsched cluster show spartan-physical" in capsys.readouterr().out
    assert main(["cluster"]) == 2
