"""`hpcsched cluster show | list`: what a cluster description holds."""

from __future__ import annotations

import argparse
import textwrap

EPILOG_CLUSTER = """examples:
  hpcsched cluster list
  hpcsched cluster show spartan-physical
  hpcsched cluster show spartan-deeplearn --json          # one flat row per node kind
  hpcsched cluster show /etc/slurm/slurm.conf --partition gpu   # gres.conf, topology.conf beside it
  hpcsched cluster show my-platform/physical_topology.txt  # HPCsim's format, nodes.csv beside it
  hpcsched cluster show my-cluster.cluster                 # hpcsched's own table (one row per kind)
"""

#: the columns of a node-kind row, in print order
KIND_COLUMNS = ("cluster", "kind", "nodes", "cores", "memory_mb", "gpus", "features", "partitions",
                "switches", "hosts")


def register(sub, fmt) -> None:
    """Add `cluster show` and `cluster list` to the top-level subparsers."""
    raw = argparse.RawDescriptionHelpFormatter
    p = sub.add_parser("cluster", help="inspect cluster descriptions (nodes, kinds, switches)",
                       description="Read a cluster: a bundled name, a slurm.conf (with the "
                                   "topology.conf and gres.conf beside it), hpcsched's own cluster "
                                   "table, or HPCsim's platform format (a topology file with "
                                   "nodes.csv beside it).",
                       epilog=EPILOG_CLUSTER, formatter_class=raw)
    csub = p.add_subparsers(dest="cluster_command", metavar="ACTION")
    s = csub.add_parser("show", parents=[fmt], help="node kinds, switches, partitions and totals",
                        epilog=EPILOG_CLUSTER, formatter_class=raw)
    s.add_argument("cluster", metavar="NAME_OR_PATH",
                   help="a bundled cluster (see `hpcsched cluster list`), a slurm.conf, a "
                        "cluster table, or a topology file with nodes.csv beside it")
    s.add_argument("--partition", help="only this partition's nodes")
    s.set_defaults(func=cmd_show)
    ls = csub.add_parser("list", help="the bundled clusters and the allocators")
    ls.set_defaults(func=cmd_list)

    def needs_action(args) -> int:
        p.print_help()
        return 2

    p.set_defaults(func=needs_action)


def kind_rows(cluster) -> list[dict]:
    """One flat row per node kind: counts, capacity per node, features, partitions, the leaf
    switches its nodes hang off and their host list."""
    import numpy as np

    rows = []
    for k, kind in enumerate(cluster.kinds):
        members = np.flatnonzero(cluster.kind == k)
        cap = dict(zip(cluster.resources, cluster.kind_capacity[k].tolist()))
        leaves = dict.fromkeys(int(s) for s in cluster.leaf[members] if s >= 0)
        row = {"cluster": cluster.name, "kind": kind, "nodes": len(members),
               "cores": cap.get("cores", 0), "memory_mb": cap.get("memory", 0),
               "gpus": cap.get("gpus", 0)}
        row.update({r: v for r, v in cap.items() if r not in ("cores", "memory", "gpus")})
        row.update({
            "features": ",".join(cluster.kind_features[k]),
            "partitions": ",".join(dict.fromkeys(p for i in members for p in cluster.partitions[i])),
            "switches": ",".join(cluster.switches[s] for s in leaves),
            "hosts": cluster.hosts(members),
        })
        rows.append(row)
    return rows


def _switch_lines(cluster) -> list[str]:
    import numpy as np

    members = cluster.switch_members
    lines = []

    def show(s: int, depth: int) -> None:
        under = np.flatnonzero(members[s])
        own = np.flatnonzero(cluster.leaf == s)
        hosts = f"  {cluster.hosts(own)}" if len(own) else ""
        lines.append(f"{'  ' * depth}{cluster.switches[s]}  level {cluster.switch_level[s]}  "
                     f"{len(under)} nodes{hosts}")
        for child in cluster.switch_children[s]:
            show(child, depth + 1)

    for s in np.flatnonzero(cluster.switch_parent < 0):
        show(int(s), 1)
    loose = np.flatnonzero(cluster.leaf < 0)
    if len(loose):
        lines.append(f"  (no switch)  {len(loose)} nodes  {cluster.hosts(loose)}")
    return lines


def cmd_show(args) -> int:
    import numpy as np

    from hpcsched.cluster.load import BUNDLED_CLUSTERS, load_cluster
    from hpcsched.report.table import format_rows

    cluster = load_cluster(args.cluster, partition=args.partition)
    rows = kind_rows(cluster)
    if args.fmt is not None:
        print(format_rows(rows, args.fmt, KIND_COLUMNS))
        return 0
    print(cluster.describe())
    print("\nnode kinds")
    print(format_rows(rows, "table", [c for c in KIND_COLUMNS if c != "cluster"]))
    if cluster.partition_names:
        print("\npartitions")
        for part in cluster.partition_names:
            inside = np.array([part in ps for ps in cluster.partitions])
            total = cluster.capacity[inside].sum(axis=0)
            flags = [f for f, on in (("default", part == cluster.default_partition),
                                     ("exclusive", part in cluster.exclusive_partitions)) if on]
            amounts = ", ".join(f"{v} {'MB memory' if r == 'memory' else r}"
                                for r, v in zip(cluster.resources, total.tolist()))
            print(f"  {part}{' (' + ', '.join(flags) + ')' if flags else ''}: "
                  f"{int(inside.sum())} nodes, {amounts}")
    if cluster.switches:
        print("\nswitches")
        print("\n".join(_switch_lines(cluster)))
    total = ", ".join(f"{v} {'MB memory' if r == 'memory' else r}"
                      for r, v in zip(cluster.resources, cluster.total.tolist()))
    print(f"\ntotal: {cluster.nodes} nodes, {total}")
    info = BUNDLED_CLUSTERS.get(args.cluster)
    if info is not None and cluster.name == args.cluster:  # the whole bundled cluster
        print("\n" + "\n".join(_reference_lines(cluster, info.reference)))
    if cluster.notes:
        print("\nnotes")
        for note in cluster.notes:
            print(textwrap.fill(note, width=100, initial_indent="  - ", subsequent_indent="    "))
    return 0


def _reference_lines(cluster, reference) -> list[str]:
    """The published totals beside ours, and where they differ."""
    from hpcsched.cluster.load import cluster_totals, compare

    theirs = reference.totals()
    ours = {k: v for k, v in cluster_totals(cluster).items() if k in theirs}
    label = f"{reference.source}:"
    width = max(len(label), len("this description:"))
    text = lambda totals: ", ".join(f"{v:,} {k}" for k, v in totals.items())  # noqa: E731
    differs = compare(cluster, reference)
    return [f"{label.ljust(width)}  {text(theirs)}",
            f"{'this description:'.ljust(width)}  {text(ours)}",
            f"differs: {'; '.join(differs)}" if differs else
            f"agrees on {', '.join(theirs)}"]


def cmd_list(args) -> int:
    from hpcsched.cluster.allocate import ALLOCATORS
    from hpcsched.cluster.load import BUNDLED_CLUSTERS

    print("bundled clusters")
    width = max(map(len, BUNDLED_CLUSTERS))
    for name, info in BUNDLED_CLUSTERS.items():
        print(f"  {name.ljust(width)}  {info.description}")
    print("\nallocators")
    width = max(map(len, ALLOCATORS))
    for name, text in ALLOCATORS.items():
        print(f"  {name.ljust(width)}  {text}")
    return 0
