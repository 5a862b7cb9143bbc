"""Read HPCsim's platform format: a Slurm topology file plus `nodes.csv`, as Wang's thesis simulator
builds its cluster (see `specs/hpcsim-semantics.md` §2).

- The nodes are exactly the hosts the topology file lists, in file order (HPCsim's ids `n0`, `n1`,
  ... follow this order; our cluster order is the same, so index i is HPCsim's `n<i>`).
- Each host's properties come from the `nodes.csv` row whose `node_type` is the hostname: `core`,
  `memory` (MB), `Features`; GPUs = `gpu_number` unless the `gpu` column is `(null)`.
- The `partition` column of nodes.csv is not used for membership: the partition is the platform's
  name (`physical_topology.txt` -> `physical`), given to every node.
- Leaf switches are the lines with `Nodes=`, the spine the line with `Switches=`.

One difference from HPCsim: a bracket range keeps the zero padding written in the file (Slurm's
rule), where HPCsim always pads to three digits; the two agree on every file HPCsim ships.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from hpcsched.cluster.nodes import Cluster
from hpcsched.cluster.slurm import ClusterFileError, read_topology

#: Columns of nodes.csv this reader needs.
NODE_COLUMNS = ("node_type", "core", "memory", "gpu", "gpu_number")


def platform_partition(topology: str | Path) -> str:
    """The partition a topology file is for, from its name: `physical_topology.txt` -> `physical`."""
    stem = Path(topology).name.split(".")[0]
    return stem[: -len("_topology")] if stem.endswith("_topology") else stem


def _read_node_rows(path: Path) -> tuple[dict[str, tuple[int, dict[str, str]]],
                                          dict[str, list[int]]]:
    """hostname -> (line number, row) of nodes.csv, and hostname -> lines for the hosts given more
    than once (an error only when the topology uses that host)."""
    rows: dict[str, tuple[int, dict[str, str]]] = {}
    duplicates: dict[str, list[int]] = {}
    with open(path, newline="", encoding="utf-8-sig") as f:
        reader = csv.DictReader(f)
        missing = [c for c in NODE_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise ClusterFileError(path, 1, f"missing column(s) {', '.join(missing)} (the header "
                                   f"has {', '.join(reader.fieldnames or [])})")
        for row in reader:
            host = (row["node_type"] or "").strip()
            if host in rows:
                duplicates.setdefault(host, [rows[host][0]]).append(reader.line_num)
            else:
                rows[host] = (reader.line_num, row)
    return rows, duplicates


def _whole(path: Path, line: int, row: dict[str, str], column: str) -> int:
    text = (row.get(column) or "").strip()
    try:
        value = float(text)
    except ValueError:
        raise ClusterFileError(path, line, f"expected a number, got {text!r}", column) from None
    if value != int(value) or value < 0:
        raise ClusterFileError(path, line, f"expected a whole number >= 0, got {text!r}", column)
    return int(value)


def read_hpcsim_platform(topology: str | Path, nodes_csv: str | Path | None = None,
                         partition: str | None = None, name: str | None = None) -> Cluster:
    """The cluster HPCsim builds from `topology` and `nodes_csv` (default: `nodes.csv` beside the
    topology file). `partition` defaults to the file's name (`physical_topology.txt` ->
    `physical`), `name` to the partition."""
    topology = Path(topology)
    nodes_csv = Path(nodes_csv) if nodes_csv is not None else topology.parent / "nodes.csv"
    if not nodes_csv.exists():
        raise ClusterFileError(nodes_csv, None, f"not found (HPCsim's platform format needs a "
                               f"nodes.csv beside {topology.name}, or name it)")
    partition = partition or platform_partition(topology)
    tree = read_topology(topology)
    if not tree.node_order:
        raise ClusterFileError(topology, None, "no switch lists any node (Nodes=...)")
    rows, duplicates = _read_node_rows(nodes_csv)
    capacity, features, sources = [], [], []
    for host in tree.node_order:
        where = tree.node_line[host]
        if host not in rows:
            raise ClusterFileError(topology, where, f"node {host!r} has no row in {nodes_csv} "
                                   f"(column node_type)", "Nodes")
        if host in duplicates:
            raise ClusterFileError(nodes_csv, duplicates[host][1],
                                   f"node {host!r} has several rows (lines "
                                   f"{', '.join(map(str, duplicates[host]))})", "node_type")
        line, row = rows[host]
        cores = _whole(nodes_csv, line, row, "core")
        memory = _whole(nodes_csv, line, row, "memory")
        gpus = 0 if (row["gpu"] or "").strip() == "(null)" else \
            _whole(nodes_csv, line, row, "gpu_number")
        capacity.append((cores, memory, gpus))
        feats = (row.get("Features") or "").strip()
        features.append(tuple(f for f in feats.split(",") if f and f != "(null)"))
        sources.append(f"{nodes_csv}:{line} ({topology.name}:{where})")
    return Cluster(
        names=tuple(tree.node_order),
        capacity=np.array(capacity, dtype=np.int64),
        name=name or partition,
        features=tuple(features),
        partitions=((partition,),) * len(tree.node_order),
        leaf=np.array([tree.leaf_of[h] for h in tree.node_order], dtype=np.int64),
        switches=tree.names,
        switch_children=tree.children,
        default_partition=partition,
        sources=tuple(sources),
    )
