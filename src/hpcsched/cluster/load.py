"""`load_cluster`: a cluster by bundled name or by file, whatever its format."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from hpcsched.cluster.nodes import Cluster
from hpcsched.cluster.platform import read_hpcsim_platform
from hpcsched.cluster.pool import ClusterError
from hpcsched.cluster.slurm import read_slurm_conf

#: Bundled clusters: short name -> (topology file in hpcsched/data/clusters, description).
#: Where the files come from: hpcsched/data/clusters/PROVENANCE.md.
BUNDLED_CLUSTERS: dict[str, tuple[str, str]] = {
    "spartan-physical": ("physical_topology.txt",
                         "Spartan (Univ. of Melbourne) CPU partition: 87 nodes x 72 cores, "
                         "4 leaf switches (HPCsim's platform)"),
    "spartan-deeplearn": ("deeplearn_topology.txt",
                          "Spartan GPU partition: 30 nodes x 4 GPUs, 24-32 cores, "
                          "4 leaf switches (HPCsim's platform)"),
}


def bundled_path(name: str) -> Path:
    """The topology file of a bundled cluster."""
    return Path(str(resources.files("hpcsched") / "data" / "clusters" / BUNDLED_CLUSTERS[name][0]))


def load_cluster(spec: str | Path, partition: str | None = None) -> Cluster:
    """A cluster from `spec`:

    - a bundled name (`BUNDLED_CLUSTERS`: `spartan-physical`, `spartan-deeplearn`);
    - a `slurm.conf` (a file whose name ends in `.conf` other than `topology.conf`, or any file
      with NodeName lines), with the `topology.conf` beside it if there is one;
    - a topology file with `nodes.csv` beside it: HPCsim's platform format, whose partition is
      the file's name (`physical_topology.txt` -> `physical`) unless `partition` is given.

    For a slurm.conf, `partition` selects that partition's nodes (`Cluster.select`); without it,
    every node of the file.
    """
    text = str(spec)
    if text in BUNDLED_CLUSTERS:
        cluster = read_hpcsim_platform(bundled_path(text), name=text)
        return cluster.select(partition) if partition else cluster
    path = Path(spec)
    if not path.exists():
        raise ClusterError(f"no cluster {text!r}: not a bundled name ("
                           f"{', '.join(BUNDLED_CLUSTERS)}) nor an existing file")
    if path.is_dir():
        for candidate in ("slurm.conf",):
            if (path / candidate).exists():
                return load_cluster(path / candidate, partition)
        raise ClusterError(f"{path}: a folder without slurm.conf; name a slurm.conf, or a "
                           f"topology file with nodes.csv beside it")
    if _is_topology(path):
        if (path.parent / "nodes.csv").exists():
            return read_hpcsim_platform(path, partition=partition)
        raise ClusterError(f"{path}: a topology file needs a slurm.conf (name that instead) or, "
                           f"in HPCsim's platform format, a nodes.csv beside it")
    cluster = read_slurm_conf(path)
    return cluster.select(partition) if partition else cluster


def _is_topology(path: Path) -> bool:
    """Whether a file is a topology file: its first statement is SwitchName=..."""
    try:
        with open(path, errors="replace") as f:
            for line in f:
                line = line.split("#", 1)[0].strip()
                if line:
                    return line.lower().startswith("switchname=")
    except OSError as exc:
        raise ClusterError(f"{path}: cannot read ({exc})") from None
    return False
