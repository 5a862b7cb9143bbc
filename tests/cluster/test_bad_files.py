"""Every kind of cluster file, broken: `hpcsched cluster show` and `simulate --cluster` stop with
one line naming the file, the line and the field, and exit 2."""

from __future__ import annotations

import pytest

from hpcsched.cli import main

CSV_HEADER = "Features,core,memory,node_type,config,gpu,partition,gpu_number\n"

#: (what, files to write, the file named on the command line, the bad file, its line, the field)
CASES = [
    ("slurm.conf", {"slurm.conf": "NodeName=n1 CPUs=2\nNodeName=n2 CPUs=2 RealMemory=lots\n"},
     "slurm.conf", "slurm.conf", 2, "RealMemory"),
    ("slurm.conf hostlist", {"slurm.conf": "# c\nNodeName=spartan-bm[066-053] CPUs=72\n"},
     "slurm.conf", "slurm.conf", 2, "NodeName"),
    ("slurm.conf partition", {"slurm.conf": "NodeName=n1 CPUs=2\nPartitionName=p Nodes=n[1-2]\n"},
     "slurm.conf", "slurm.conf", 2, "Nodes"),
    ("topology.conf", {"slurm.conf": "NodeName=n[1-2] CPUs=2\n",
                       "topology.conf": "SwitchName=s Nodes=n1\nSwitchName=t Switches=nowhere\n"},
     "slurm.conf", "topology.conf", 2, "Switches"),
    ("gres.conf", {"slurm.conf": "NodeName=g1 CPUs=2 Gres=gpu:2\n",
                   "gres.conf": "# g1\nNodeName=g1 Name=gpu Count=2 File=/dev/nvidia0\n"},
     "slurm.conf", "gres.conf", 2, "Count"),
    ("cluster table", {"mine.cluster": "name: mine\nkind nodes cores\nx 1 4\ny 2 many\n"},
     "mine.cluster", "mine.cluster", 4, "cores"),
    ("cluster table key", {"mine.cluster": "kind nodes cores memory\nx 1 4 16GB\n"},
     "mine.cluster", "mine.cluster", 2, "memory"),
    ("cluster table header", {"mine.cluster": "# no cores\nkind nodes memory\nx 1 4\n"},
     "mine.cluster", "mine.cluster", 2, "cores"),
    ("nodes.csv", {"p_topology.txt": "SwitchName=a Nodes=h[1-2]\n",
                   "nodes.csv": CSV_HEADER + "f,4,100,h1,x,(null),p,0\nf,4,lots,h2,x,(null),p,0\n"},
     "p_topology.txt", "nodes.csv", 3, "memory"),
    ("platform topology", {"p_topology.txt": "SwitchName=a Nodes=h1\nSwitchName=a Nodes=h2\n",
                           "nodes.csv": CSV_HEADER + "f,4,100,h1,x,(null),p,0\n"},
     "p_topology.txt", "p_topology.txt", 2, "SwitchName"),
]


@pytest.mark.parametrize("what, files, named, bad, line, field", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("command", ["show", "simulate"])
def test_one_line_naming_file_line_and_field(tmp_path, capsys, what, files, named, bad, line, field,
                                             command):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    path = str(tmp_path / named)
    argv = (["cluster", "show", path] if command == "show"
            else ["simulate", "lublin-1", "--cluster", path, "--policy", "fcfs"])
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert err.startswith(f"hpcsched: error: {tmp_path / bad}:{line}: {field}: "), err
