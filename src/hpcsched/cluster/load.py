"""`load_cluster`: a cluster by bundled name or by file, whatever its format."""

from __future__ import annotations

from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path

import numpy as np

from hpcsched.cluster.nodes import Cluster
from hpcsched.cluster.platform import read_hpcsim_platform
from hpcsched.cluster.pool import ClusterError
from hpcsched.cluster.slurm import read_slurm_conf
from hpcsched.cluster.table import looks_like_table, read_cluster_table


@dataclass(frozen=True)
class Reference:
    """Totals a published source gives for a cluster, to print beside ours (None: not given)."""

    source: str
    nodes: int | None = None
    cores: int | None = None
    gpus: int | None = None
    leaf_switches: int | None = None

    def totals(self) -> dict[str, int]:
        return {k: v for k, v in (("nodes", self.nodes), ("cores", self.cores),
                                  ("gpus", self.gpus), ("leaf switches", self.leaf_switches))
                if v is not None}


def cluster_totals(cluster: Cluster) -> dict[str, int]:
    """Nodes, cores, GPUs and leaf switches of a cluster, as `Reference.totals` names them."""
    out = {"nodes": cluster.nodes, "cores": int(cluster.total[cluster.resources.index("cores")])}
    g = cluster.resource_index("gpus")
    out["gpus"] = int(cluster.total[g]) if g is not None else 0
    out["leaf switches"] = len(np.unique(cluster.leaf[cluster.leaf >= 0]))
    return out


def compare(cluster: Cluster, reference: Reference) -> list[str]:
    """Lines saying where the cluster's totals differ from the reference's ("" list: they agree)."""
    ours = cluster_totals(cluster)
    return [f"{key} {ours[key]:,} vs {theirs:,} ({ours[key] - theirs:+,d})"
            for key, theirs in reference.totals().items() if ours[key] != theirs]


@dataclass(frozen=True)
class BundledCluster:
    """A cluster that comes with the package: its file in hpcsched/data/clusters, the reader that
    reads it, a one-line description, the published totals it is checked against and notes on where
    the two differ and where each number comes from (PROVENANCE.md there says more)."""

    file: str
    format: str  # "hpcsim" (a topology file with nodes.csv beside it) or "table" (table.py)
    description: str
    reference: Reference
    notes: tuple[str, ...] = ()


_THESIS = "Wang (2025) thesis, Table 4.1"

#: Bundled clusters by short name.
BUNDLED_CLUSTERS: dict[str, BundledCluster] = {
    "spartan-physical": BundledCluster(
        "physical_topology.txt", "hpcsim",
        "Spartan (Univ. of Melbourne) CPU partition: 87 nodes x 72 cores, 4 leaf switches "
        "(HPCsim's platform)",
        Reference(_THESIS, nodes=86, cores=6192, gpus=0, leaf_switches=4),
        (
            "The platform folder (HPCsim's nodes.csv and physical_topology.txt, the files the "
            "thesis's code reads) lists 87 nodes: 73 of 72 cores / 710,000 MB and 14 of 72 cores / "
            "1,519,000 MB, 6,264 cores. Table 4.1 says 72 + 14 = 86 nodes, 6,192 cores: one "
            "710,000 MB node fewer. We load the 87 of the platform folder, as HPCsim does; the "
            "thesis's Physical selector input (35,340) is one node block (365) more than 86 nodes "
            "give, so its runs used 87 too.",
            "The thesis's GB are 1,000 MB of nodes.csv (710 GB = 710,000 MB; 1519 GB = 1,519,000 "
            "MB, which Ch. 5 gives as 1510 GB); kind names here count G as 1,024 MB (693G, 1483G).",
            "4 leaf switches under one spine, as in Table 4.1; which node hangs off which leaf is "
            "the platform folder's (the thesis does not say).",
        )),
    "spartan-deeplearn": BundledCluster(
        "deeplearn_topology.txt", "hpcsim",
        "Spartan GPU partition: 30 nodes x 4 GPUs, 24-32 cores, 4 leaf switches (HPCsim's platform)",
        Reference(_THESIS, nodes=30, cores=900, gpus=120, leaf_switches=4),
        (
            "The platform folder agrees with Table 4.1 on every total and every node type: 4 x 28 "
            "cores / 234,000 MB, 5 x 28 / 174,000, 3 x 24 / 175,000, 6 x 32 / 234,000 and 12 x 32 / "
            "1,000,000, 4 GPUs each. The table's garbled core row decodes to 28, 28, 24, 32, 32 "
            "(the only order that gives 900 cores), which is what nodes.csv holds.",
            "GPU models (V100, V100-SXM2, A100) are in nodes.csv, not in Table 4.1; the engine "
            "counts GPUs, whatever their model.",
        )),
    "spartan-sapphire": BundledCluster(
        "spartan-sapphire.cluster", "table",
        "Spartan's Sapphire partition as the thesis describes it: 52 nodes x 128 cores x 977,000 "
        "MB, one switch",
        Reference("Wang (2025) thesis, Ch. 6 (6,656 cores of 128 per node)", nodes=52,
                  cores=6656, gpus=0),
        (
            "Ch. 6 gives 128 cores and 977 GB per node and 6,656 cores in all: 52 nodes. Table 6.1's "
            "'234 GB/node, 12 nodes' is a column shifted from Deeplearn.",
            "977 GB is 977,000 MB here, the thesis's GB being 1,000 MB (as for Physical and "
            "Deeplearn). 977 is also 1,000,000 MB / 1,024: if the thesis converted a Slurm "
            "RealMemory of 1,000,000 MB, the nodes hold 2.4% more than this.",
            "The thesis gives no topology for Sapphire: one switch holds every node (one level). "
            "The host names sapphire1..sapphire52 are ours.",
        )),
    "cerit-zewura": BundledCluster(
        "cerit-zewura.cluster", "table",
        "CERIT-SC zewura (20 x 80 cores x 517,018 MB) + zegox (48 x 12 cores x 91,832 MB), the "
        "machine of the cerit-2013 trace",
        Reference("Alea's wagap-2013.swf.machines", nodes=68, cores=2176, gpus=0),
        (
            "From Alea's wagap-2013.swf.machines: zewura 20 nodes x 80 CPUs x 529,426,432 KB, zegox "
            "48 x 12 x 94,035,968 KB, KB being 1,024 bytes (Alea reads the trace's bytes / 1,024): "
            "517,018 MB (504.9 GiB) and 91,832 MB (89.7 GiB) per node.",
            "One job of cerit-2013 (8687: 80 cores, 512 GiB = 524,288 MB on one node) asks more "
            "memory than a zewura node has here, though it ran on one in 2013: a simulation of "
            "the bundled trace drops it, names it and counts it (the trace lists it as known); "
            "any other job too large still stops the run unless --drop-oversized.",
            "No switches: neither the trace nor the .machines file describes the network. "
            "Partitions zewura and zegox are ours (PBS had queues); the features cl_zewura and "
            "cl_zegox are the PBS node properties the trace's jobs ask for, which the engine does "
            "not enforce.",
        )),
}


def bundled_path(name: str) -> Path:
    """The file of a bundled cluster."""
    return Path(str(resources.files("hpcsched") / "data" / "clusters" / BUNDLED_CLUSTERS[name].file))


def load_cluster(spec: str | Path, partition: str | None = None) -> Cluster:
    """A cluster from `spec`:

    - a bundled name (`BUNDLED_CLUSTERS`: `spartan-physical`, `spartan-deeplearn`,
      `spartan-sapphire`, `cerit-zewura`), with its notes;
    - a cluster table, hpcsched's own format (`table.py`; a file named `NAME.cluster`, or one whose
      first line that is not a comment or `KEY: VALUE` names the columns kind, nodes, cores);
    - a `slurm.conf` (a file whose name ends in `.conf` other than `topology.conf`, or any file
      with NodeName lines), with the `topology.conf` and `gres.conf` beside it if there are;
    - a topology file with `nodes.csv` beside it: HPCsim's platform format, whose partition is
      the file's name (`physical_topology.txt` -> `physical`) unless `partition` is given.

    For a slurm.conf or a table, `partition` selects that partition's nodes (`Cluster.select`);
    without it, every node of the file.
    """
    text = str(spec)
    if text in BUNDLED_CLUSTERS:
        info = BUNDLED_CLUSTERS[text]
        path = bundled_path(text)
        cluster = read_hpcsim_platform(path, name=text) if info.format == "hpcsim" \
            else read_cluster_table(path, name=text)
        cluster = replace(cluster, notes=cluster.notes + info.notes)
        return cluster.select(partition) if partition else cluster
    path = Path(spec)
    if not path.exists():
        raise ClusterError(f"no cluster {text!r}: not a bundled name ("
                           f"{', '.join(BUNDLED_CLUSTERS)}) nor an existing file")
    if path.is_dir():
        for candidate in ("slurm.conf",):
            if (path / candidate).exists():
                return load_cluster(path / candidate, partition)
        raise ClusterError(f"{path}: a folder without slurm.conf; name a slurm.conf, a cluster "
                           f"table, or a topology file with nodes.csv beside it")
    if _is_topology(path):
        if (path.parent / "nodes.csv").exists():
            return read_hpcsim_platform(path, partition=partition)
        raise ClusterError(f"{path}: a topology file needs a slurm.conf (name that instead) or, "
                           f"in HPCsim's platform format, a nodes.csv beside it")
    table = path.suffix == ".cluster" or looks_like_table(path)
    cluster = read_cluster_table(path) if table else read_slurm_conf(path)
    return cluster.select(partition) if partition else cluster


def _is_topology(path: Path) -> bool:
    """Whether a file is a topology file: its first statement is SwitchName=..."""
    try:
        with open(path, encoding="utf-8-sig", errors="replace") as f:
            for line in f:
                line = line.split("#", 1)[0].strip()
                if line:
                    return line.lower().startswith("switchname=")
    except OSError as exc:
        raise ClusterError(f"{path}: cannot read ({exc})") from None
    return False
