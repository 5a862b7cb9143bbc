"""gres.conf beside slurm.conf: GPU counts by Count and File ranges, lines for every node, AutoDetect
reported as unsupported, and slurm.conf's Gres= winning as in Slurm (the lower count an error)."""

import pytest

from hpcsched.cluster.gres import read_gres_conf
from hpcsched.cluster.load import load_cluster
from hpcsched.cluster.slurm import ClusterFileError, read_slurm_conf

SLURM_CONF = """\
NodeName=cpu[1-2] CPUs=8 RealMemory=1000
NodeName=gpu[01-04] CPUs=32 RealMemory=64000 Gres=gpu:a100:4
NodeName=mix1 CPUs=16 Gres=gpu:a100:2,gpu:v100:2
NodeName=big1 CPUs=64 Gres=gpu:8
PartitionName=all Nodes=ALL Default=YES
"""

GRES_CONF = """\
AutoDetect=off
NodeName=gpu[01-04] Name=gpu Type=a100 File=/dev/nvidia[0-3] Cores=0-15
NodeName=mix1 Name=gpu Type=a100 File=/dev/nvidia0,/dev/nvidia1
NodeName=mix1 Name=gpu Type=v100 File=/dev/nvidia[2-3]
NodeName=mix1 Name=mps Count=200
NodeName=big1 Name=gpu Count=8
NodeName=other[1-9] Name=gpu Count=2    # a node of another cluster
"""


@pytest.fixture
def conf(tmp_path):
    (tmp_path / "slurm.conf").write_text(SLURM_CONF)
    (tmp_path / "gres.conf").write_text(GRES_CONF)
    return tmp_path / "slurm.conf"


def test_counts_from_file_ranges_count_and_several_lines(conf):
    hosts = ["cpu1", "cpu2", "gpu01", "gpu02", "gpu03", "gpu04", "mix1", "big1"]
    found = read_gres_conf(conf.parent / "gres.conf", hosts)
    assert found.gpus == {"gpu01": 4, "gpu02": 4, "gpu03": 4, "gpu04": 4, "mix1": 4, "big1": 8}
    assert found.line_of["mix1"] == 3
    assert any("gres.conf:7: 9 host(s) of other[1-9] are not in slurm.conf" in n for n in found.notes)
    assert not any("AutoDetect" in n for n in found.notes)  # off: nothing probed, nothing to say


def test_agreeing_files_change_nothing(conf):
    c = load_cluster(conf)  # gres.conf beside slurm.conf is read
    gpus = dict(zip(c.names, c.capacity[:, 2].tolist()))
    assert gpus == {"cpu1": 0, "cpu2": 0, "gpu01": 4, "gpu02": 4, "gpu03": 4, "gpu04": 4, "mix1": 4,
                    "big1": 8}
    assert not [n for n in c.notes if "GPU(s) per node here" in n]


@pytest.mark.parametrize("line, count", [
    ("Name=gpu Count=2", 2),
    ("Name=gpu", 1),                                   # neither Count nor File: one
    ("Name=gpu File=/dev/nvidia[0-1],/dev/nvidia7", 3),
    ("Name=gpu Count=2K", 2048),                       # Slurm's suffixes: powers of 1024
    ("Name=gpu MultipleFiles=/dev/dri/card0,/dev/dri/renderD128", 1),
    ("name=GPU count=3", 3),                           # keys and the name are case-insensitive
])
def test_count_forms_on_a_line_for_every_node(tmp_path, line, count):
    (tmp_path / "gres.conf").write_text(line + "\n")
    found = read_gres_conf(tmp_path / "gres.conf", ["a", "b"])
    assert found.gpus == {"a": count, "b": count}  # no NodeName: every node


def test_excess_in_gres_conf_is_ignored_as_slurm_does(tmp_path):
    (tmp_path / "slurm.conf").write_text("NodeName=g[1-3] CPUs=8 Gres=gpu:2\nNodeName=c1 CPUs=8\n")
    (tmp_path / "gres.conf").write_text("NodeName=g[1-3] Name=gpu Count=4\nNodeName=c1 Name=gpu "
                                        "File=/dev/nvidia0\n")
    c = read_slurm_conf(tmp_path / "slurm.conf")
    assert c.capacity[:, 2].tolist() == [2, 2, 2, 0]
    assert c.notes == (
        f"{tmp_path}/gres.conf:1: g[1-3]: 4 GPU(s) per node here; slurm.conf "
        f"({tmp_path}/slurm.conf:1) configures 2: Slurm ignores the excess; 2 used",
        f"{tmp_path}/gres.conf:2: c1: 1 GPU(s) per node here; slurm.conf configures none (Slurm "
        f"ignores GPUs slurm.conf does not configure); 0 used")


def test_fewer_in_gres_conf_is_an_error_naming_both_lines(tmp_path):
    (tmp_path / "slurm.conf").write_text("NodeName=g[1-2] CPUs=8 Gres=gpu:a100:4\n")
    (tmp_path / "gres.conf").write_text("# one GPU is gone\nNodeName=g2 Name=gpu File=/dev/nvidia[0-2]\n")
    with pytest.raises(ClusterFileError) as err:
        read_slurm_conf(tmp_path / "slurm.conf")
    assert (err.value.line, err.value.path) == (2, str(tmp_path / "gres.conf"))
    assert (f"node 'g2' has 3 GPU(s) here, but {tmp_path}/slurm.conf:1 configures 4" in str(err.value))
    assert "drains" in str(err.value) and "config_overrides" in str(err.value)


def test_config_overrides_keeps_slurm_conf(tmp_path):
    (tmp_path / "slurm.conf").write_text("SlurmdParameters=config_overrides,l3cache_as_socket\n"
                                         "NodeName=g[1-2] CPUs=8 Gres=gpu:4\n")
    (tmp_path / "gres.conf").write_text("NodeName=g2 Name=gpu Count=3\n")
    c = read_slurm_conf(tmp_path / "slurm.conf")
    assert c.capacity[:, 2].tolist() == [4, 4]
    assert c.notes == (f"{tmp_path}/gres.conf:1: g2: 3 GPU(s) per node here; slurm.conf "
                       f"({tmp_path}/slurm.conf:2) configures 4: kept "
                       f"(SlurmdParameters=config_overrides); 4 used",)


def test_autodetect_is_reported_and_slurm_conf_counts_stand(tmp_path):
    (tmp_path / "slurm.conf").write_text("NodeName=g[1-2] CPUs=8 Gres=gpu:4\n")
    (tmp_path / "gres.conf").write_text("AutoDetect=nvml\nNodeName=g2 AutoDetect=rsmi Name=gpu "
                                        "Count=4\nNodeName=g1 AutoDetect=off Name=gpu Count=4\n")
    c = load_cluster(tmp_path / "slurm.conf")
    assert c.capacity[:, 2].tolist() == [4, 4]
    assert len(c.notes) == 2
    assert c.notes[0].startswith(f"{tmp_path}/gres.conf:1: AutoDetect=nvml for every node is not "
                                 f"supported")
    assert c.notes[1].startswith(f"{tmp_path}/gres.conf:2: AutoDetect=rsmi for g2")


def test_gres_conf_given_by_path(tmp_path):
    (tmp_path / "slurm.conf").write_text("NodeName=g1 CPUs=8 Gres=gpu:4\n")
    (tmp_path / "elsewhere.conf").write_text("NodeName=g1 Name=gpu Count=1\n")
    read_slurm_conf(tmp_path / "slurm.conf")  # no gres.conf beside it: nothing to check
    with pytest.raises(ClusterFileError, match="elsewhere.conf:1"):
        read_slurm_conf(tmp_path / "slurm.conf", gres=tmp_path / "elsewhere.conf")


@pytest.mark.parametrize("text, line, key, message", [
    ("NodeName=g1 Name=gpu Count=2 File=/dev/nvidia0\n", 1, "Count",
     "2 GPUs, but File= names 1 device"),
    ("NodeName=g1 Name=gpu Count=two\n", 1, "Count", "expected a whole number"),
    ("\nNodeName=g1 Name=gpu Colour=red\n", 2, "Colour", "unknown gres.conf key"),
    ("NodeName=g1 Type=a100 Count=2\n", 1, None, "needs Name="),
    ("NodeName=g[2-1] Name=gpu\n", 1, "NodeName", "backwards"),
    ("NodeName=g1 Name=gpu File=/dev/nvidia[0-]\n", 1, "File", "bad range"),
    ("NodeName=g1 Name=gpu File=/dev/nvidia0 MultipleFiles=/dev/x\n", 1, "File", "not both"),
    ("Include /etc/slurm/gres.d\n", 1, "Include", "not supported"),
])
def test_errors_name_line_and_key(tmp_path, text, line, key, message):
    (tmp_path / "gres.conf").write_text(text)
    with pytest.raises(ClusterFileError, match=message) as err:
        read_gres_conf(tmp_path / "gres.conf", ["g1"])
    assert (err.value.line, err.value.key) == (line, key)
