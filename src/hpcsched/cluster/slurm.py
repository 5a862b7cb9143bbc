"""Read a cluster from Slurm's own files: `slurm.conf` (nodes and partitions) and `topology.conf`
(switches, as the topology/tree plugin reads it).

What is read, and how it maps to a `Cluster`:

- `NodeName=` lines (host lists such as `node[01-16]`; `NodeName=DEFAULT` sets the defaults of the
  lines after it). Cores = `CPUs` when given, else sockets x `CoresPerSocket` x `ThreadsPerCore`
  with sockets = `Sockets`, or `Boards` x `SocketsPerBoard`: the CPUs Slurm schedules, less those
  kept for the system (`CoreSpecCount` cores of `ThreadsPerCore` CPUs each, or the CPUs listed in
  `CpuSpecList`). Memory = `RealMemory` less `MemSpecLimit` (MB; the memory jobs may use; absent
  means 0, and memory is then not scheduled). GPUs = the sum of the `gpu` entries of `Gres`
  (`gpu:4`, `gpu:a100:4`, `gpu:a100:2,gpu:v100:2`; other GRES are ignored). Features =
  `Feature`/`Features`.
- `PartitionName=` lines (`PartitionName=DEFAULT` likewise): `Nodes=` (host lists, `ALL`, or
  `NodeSet` names), `Default=YES`, and `OverSubscribe=EXCLUSIVE` (or the older `Shared=EXCLUSIVE`)
  for a partition that allocates whole nodes. `SelectType=select/linear` makes every partition
  exclusive, as that plugin allocates whole nodes.
- `NodeSet=` lines with `Nodes=` or `Feature=`; `ClusterName=` names the cluster.
- Everything else (daemons, plugins, limits) does not change which nodes exist and is skipped.
  `Include` is refused: we read one file. A key that slurm.conf(5) does not define for a NodeName,
  PartitionName or NodeSet line (a misspelt `RealMem=`, say) is not an error, as Slurm versions add
  keys, but it is written to the cluster's `notes` with its line: nothing is dropped unsaid.

Keys are case-insensitive, as in Slurm. `#` starts a comment; a line ending in `\\` continues on
the next. Every error names the file, the line and the key.

A `gres.conf` beside the file (or given) is read for the GPUs of each node, and reconciled with
`Gres=` as Slurm does: slurm.conf's count wins, a lower count in gres.conf is an error (Slurm drains
the node) unless `SlurmdParameters=config_overrides`; see `gres.py`. Disagreements and unsupported
`AutoDetect=` lines go to the cluster's `notes`.

`topology.conf` lines are `SwitchName=NAME Nodes=HOSTLIST` (a leaf switch) or
`SwitchName=NAME Switches=LIST` (a switch above others); `LinkSpeed` is ignored and `Level=` (as
`scontrol show topology` prints it) is checked against the tree. Nodes of slurm.conf that no switch
lists are kept, without a leaf, and noted. The same reader serves HPCsim's
platform files (`platform.py`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import numpy as np

from hpcsched.cluster.hostlist import compress_hostlist, expand_hostlist, split_outside_brackets
from hpcsched.cluster.nodes import Cluster
from hpcsched.cluster.pool import ClusterError


class ClusterFileError(ClusterError):
    """A cluster description file that cannot be read: names the file, line and key."""

    def __init__(self, path, line: int | None, message: str, key: str | None = None):
        self.path, self.line, self.key = str(path), line, key
        where = f"{path}:{line}" if line else str(path)
        super().__init__(f"{where}: {key + ': ' if key else ''}{message}")


# -- lines and tokens ------------------------------------------------------------------------------

def conf_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """(line number, text) of each logical line of a Slurm-style file: comments removed,
    continuation lines (ending in a backslash) joined, blank lines skipped. The number is that of
    the line the logical line starts on."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")  # a byte-order mark is skipped
    except UnicodeDecodeError as exc:
        raise ClusterFileError(path, None, f"not a text file ({exc})") from None
    start, pending = 0, ""
    for number, raw in enumerate(text.splitlines(), start=1):
        line = re.sub(r"(?<!\\)#.*", "", raw).replace("\\#", "#").rstrip()
        if not pending:
            start = number
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line, pending = pending + line, ""
        if line.strip():
            yield start, line.strip()
    if pending.strip():
        yield start, pending.strip()


_TOKEN = re.compile(r'(?:[^\s"]|"[^"]*")+')


@dataclass
class ConfLine:
    """One `Key=Value Key=Value ...` line: keys lower-cased (Slurm's are case-insensitive), values as
    written (quotes removed), the first key saying what the line defines."""

    path: str
    line: int
    values: dict[str, str]
    kind: str  # the first key, lower-cased: nodename, partitionname, switchname, ...
    label: dict[str, str] = field(default_factory=dict)  # lower-cased key -> key as written

    def error(self, message: str, key: str | None = None) -> ClusterFileError:
        return ClusterFileError(self.path, self.line, message,
                                self.label.get(key, key) if key else None)

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.values.get(key, default)

    def integer(self, key: str, default: int | None = None, values: dict | None = None) -> int | None:
        text = (values if values is not None else self.values).get(key)
        if text is None:
            return default
        try:
            number = int(text)
        except ValueError:
            raise self.error(f"expected a whole number, got {text!r}", key) from None
        if number < 0:
            raise self.error(f"must not be negative, got {number}", key)
        return number


def parse_line(path: str | Path, number: int, text: str) -> ConfLine:
    values, label = {}, {}
    for token in _TOKEN.findall(text):
        key, eq, value = token.partition("=")
        if not eq or not key:
            if not values and key.lower() == "include":
                raise ClusterFileError(path, number, "'Include' is not supported: put the "
                                       "included lines in this file", key)
            raise ClusterFileError(path, number, f"expected KEY=VALUE, got {token!r}")
        lower = key.lower()
        if lower in values:
            raise ClusterFileError(path, number, "given twice on this line", key)
        values[lower] = value.replace('"', "")
        label[lower] = key
    kind = next(iter(values))
    return ConfLine(str(path), number, values, kind, label)


def expand(line: ConfLine, key: str, text: str | None = None) -> list[str]:
    """The host list under `key`, expanded; a malformed list names the line and key."""
    try:
        return expand_hostlist(line.values[key] if text is None else text)
    except ValueError as exc:
        raise line.error(str(exc), key) from None


# -- topology.conf ---------------------------------------------------------------------------------

@dataclass
class SwitchTree:
    """The switches of a topology file, in file order, and each node's leaf switch."""

    names: tuple[str, ...]
    children: tuple[tuple[int, ...], ...]
    leaf_of: dict[str, int]  # hostname -> index of the switch listing it
    node_order: list[str]  # hosts in order of appearance
    node_line: dict[str, int]  # hostname -> the line listing it
    path: str


def read_topology(path: str | Path) -> SwitchTree:
    """Parse a Slurm `topology.conf` (or HPCsim's copy of `scontrol show topology`)."""
    lines = []
    for number, text in conf_lines(path):
        line = parse_line(path, number, text)
        if line.kind != "switchname":
            raise line.error("expected a SwitchName=... line", line.label[line.kind])
        lines.append(line)
    if not lines:
        raise ClusterFileError(path, None, "no SwitchName lines")
    index: dict[str, int] = {}
    for i, line in enumerate(lines):
        name = line.values["switchname"]
        if not name:
            raise line.error("empty switch name", "switchname")
        if name in index:
            raise line.error(f"switch {name!r} is defined twice (first on line "
                             f"{lines[index[name]].line})", "switchname")
        index[name] = i
    children, leaf_of, node_order, node_line = [], {}, [], {}
    parent_line: dict[int, ConfLine] = {}
    for i, line in enumerate(lines):
        below = []
        if "switches" in line.values:
            for child in expand(line, "switches"):
                if child not in index:
                    raise line.error(f"unknown switch {child!r}", "switches")
                c = index[child]
                if c in parent_line:
                    raise line.error(f"switch {child!r} is already under "
                                     f"{parent_line[c].values['switchname']!r} (line "
                                     f"{parent_line[c].line})", "switches")
                parent_line[c] = line
                below.append(c)
        children.append(tuple(below))
        if "nodes" in line.values:
            for host in expand(line, "nodes"):
                if host in leaf_of:
                    raise line.error(f"node {host!r} is already under switch "
                                     f"{lines[leaf_of[host]].values['switchname']!r} (line "
                                     f"{node_line[host]})", "nodes")
                leaf_of[host] = i
                node_order.append(host)
                node_line[host] = line.line
    tree = SwitchTree(tuple(lines[i].values["switchname"] for i in range(len(lines))),
                      tuple(children), leaf_of, node_order, node_line, str(path))
    _check_levels(lines, tree)
    return tree


def _check_levels(lines: list[ConfLine], tree: SwitchTree) -> None:
    # Build a throw-away cluster-free level computation: 0 for a switch with none below it.
    level: dict[int, int] = {}

    def level_of(s: int, path: tuple[int, ...]) -> int:
        if s in path:
            raise lines[s].error("switches form a loop: " + " -> ".join(
                tree.names[x] for x in path + (s,)), "switches")
        if s not in level:
            below = [level_of(c, path + (s,)) for c in tree.children[s]]
            level[s] = 1 + max(below) if below else 0
        return level[s]

    for s, line in enumerate(lines):
        given = line.integer("level")
        if given is not None and given != level_of(s, ()):
            raise line.error(f"says {given}, but the switches listed under it make it level "
                             f"{level_of(s, ())}", "level")
        level_of(s, ())


# -- slurm.conf ------------------------------------------------------------------------------------

_SUFFIX = {"k": 1024, "m": 1024 ** 2, "g": 1024 ** 3, "t": 1024 ** 4}


def gpu_count(line: ConfLine, gres: str, key: str = "gres") -> int:
    """GPUs in a Gres= value: `gpu:4`, `gpu:a100:4`, `gpu:a100:2(S:0-1),gpu:v100:2` ..."""
    total = 0
    for item in split_outside_brackets(gres):
        item = re.sub(r"\(.*\)$", "", item)
        parts = item.split(":")
        if parts[0].lower() != "gpu":
            continue
        count = parts[-1] if len(parts) > 1 else "1"
        m = re.fullmatch(r"(\d+)([kmgtKMGT]?)", count)
        if m is None:
            if len(parts) == 2:  # gpu:TYPE with no count means one
                total += 1
                continue
            raise line.error(f"bad GPU count {count!r} in {item!r}", key)
        total += int(m.group(1)) * _SUFFIX.get(m.group(2).lower(), 1)
    return total


_TOPOLOGY_KEYS = {"sockets", "socketsperboard", "boards", "corespersocket", "threadspercore"}

#: the keys slurm.conf(5) defines for each kind of line we read (lower case); others are noted
KNOWN_KEYS: dict[str, frozenset[str]] = {
    "nodename": frozenset({
        "nodename", "nodehostname", "nodeaddr", "bcastaddr", "boards", "corespeccount",
        "corespersocket", "cpubind", "cpus", "cpuspeclist", "feature", "features", "gres",
        "memspeclimit", "parameters", "port", "procs", "realmemory", "reason",
        "restrictedcorespergpu", "resumetimeout", "sockets", "socketsperboard", "state",
        "suspendtime", "suspendtimeout", "threadspercore", "tmpdisk", "topology", "tresweights",
        "weight", "extra", "comment"}),
    "partitionname": frozenset({
        "partitionname", "allocnodes", "allowaccounts", "allowgroups", "allowqos", "alternate",
        "cpubind", "default", "defaulttime", "defcpupergpu", "defmempercpu", "defmempergpu",
        "defmempernode", "denyaccounts", "denyqos", "disablerootjobs", "exclusivetopo",
        "exclusiveuser", "gracetime", "hidden", "lln", "maxcpuspergpu", "maxcpuspernode",
        "maxcpuspersocket", "maxmempercpu", "maxmempernode", "maxnodes", "maxtime", "minnodes",
        "nodes", "oversubscribe", "overtimelimit", "powerdownonidle", "preemptmode",
        "priorityjobfactor", "prioritytier", "qos", "reqresv", "resumetimeout", "rootonly",
        "selecttypeparameters", "shared", "state", "suspendtime", "suspendtimeout", "topology",
        "tresbillingweights"}),
    "nodeset": frozenset({"nodeset", "feature", "nodes"}),
}


def _unknown_keys(line: ConfLine, notes: list[str]) -> None:
    unknown = [line.label[k] for k in line.values if k not in KNOWN_KEYS[line.kind]]
    if unknown:
        notes.append(f"{line.path}:{line.line}: {', '.join(unknown)}: not a "
                     f"{line.label[line.kind]} key of slurm.conf(5): ignored")


def _node_cores(line: ConfLine, values: dict[str, str]) -> int:
    """The CPUs jobs may use: CPUs (or their product from the topology keys) less the specialized
    ones (slurm.conf(5): CoreSpecCount cores, or the CPU ids of CpuSpecList, kept for the system)."""
    threads = line.integer("threadspercore", 1, values)
    cpus = line.integer("cpus", values=values)
    if cpus is None:
        cpus = line.integer("procs", values=values)  # the old name of CPUs
    if cpus is None:
        sockets = line.integer("sockets", values=values)
        if sockets is None:
            sockets = line.integer("boards", 1, values) * line.integer("socketsperboard", 1, values)
        cpus = sockets * line.integer("corespersocket", 1, values) * threads
    if "corespeccount" in values and "cpuspeclist" in values:
        raise line.error("give CoreSpecCount or CpuSpecList, not both (slurm.conf(5))",
                         "corespeccount")
    key, kept = None, 0
    if "corespeccount" in values:
        key, kept = "corespeccount", line.integer("corespeccount", 0, values) * threads
    elif "cpuspeclist" in values:
        key = "cpuspeclist"
        try:
            kept = len(set(expand_hostlist("[" + values[key] + "]")))
        except ValueError:
            raise line.error(f"expected CPU ids such as 0-1,8, got {values[key]!r}", key) from None
    if kept >= cpus and kept:
        raise line.error(f"keeps {kept} of the node's {cpus} CPUs for the system: none is left "
                         f"for jobs", key)
    return cpus - kept


def _node_memory(line: ConfLine, values: dict[str, str]) -> int:
    """RealMemory less MemSpecLimit (slurm.conf(5): memory kept for the system, not for jobs)."""
    real = line.integer("realmemory", 0, values)
    kept = line.integer("memspeclimit", 0, values)
    if kept and kept >= real:
        raise line.error(f"keeps {kept} MB of the node's RealMemory={real} for the system: none is "
                         f"left for jobs", "memspeclimit")
    return real - kept


def read_slurm_conf(path: str | Path, topology: str | Path | None = None,
                    name: str | None = None, gres: str | Path | None = None) -> Cluster:
    """The cluster a `slurm.conf` describes, with the switches of `topology` (default: a
    `topology.conf` beside it, if there is one) and the GPUs of `gres` (default: a `gres.conf`
    beside it, if there is one). Every node of the file, in file order; select a partition with
    `Cluster.select`. The whole cluster allocates whole nodes only if every one of its partitions
    does."""
    path = Path(path)
    node_defaults: dict[str, str] = {}
    part_defaults: dict[str, str] = {}
    hosts: list[str] = []
    node_source: dict[str, str] = {}
    rows, features = [], []
    partitions: list[tuple[str, ConfLine, dict[str, str]]] = []
    nodesets: dict[str, list[str]] = {}
    nodeset_lines: list[ConfLine] = []
    cluster_name, linear, overrides = None, False, False
    notes: list[str] = []
    for number, text in conf_lines(path):
        line = parse_line(path, number, text)
        head = line.values[line.kind]
        if line.kind in KNOWN_KEYS:
            _unknown_keys(line, notes)
        if line.kind == "nodename":
            if head.upper() == "DEFAULT":
                node_defaults.update({k: v for k, v in line.values.items() if k != "nodename"})
                continue
            values = {**node_defaults, **line.values}
            if "cpus" not in line.values and _TOPOLOGY_KEYS & set(line.values):
                values.pop("cpus", None)  # the line's own sockets/cores win over a default CPUs=
            if "cpus" not in line.values and "procs" not in line.values \
                    and _TOPOLOGY_KEYS & set(line.values):
                values.pop("procs", None)
            cores = _node_cores(line, values)
            memory = _node_memory(line, values)
            gpus = gpu_count(line, values["gres"]) if values.get("gres") else 0
            feats = values.get("features", values.get("feature", ""))
            feats = tuple(f for f in feats.split(",") if f and f != "(null)")
            for host in expand(line, "nodename"):
                if host in node_source:
                    raise line.error(f"node {host!r} is already defined at {node_source[host]}",
                                     "nodename")
                node_source[host] = f"{path}:{number}"
                hosts.append(host)
                rows.append((cores, memory, gpus))
                features.append(feats)
        elif line.kind == "partitionname":
            if head.upper() == "DEFAULT":
                part_defaults.update({k: v for k, v in line.values.items() if k != "partitionname"})
                continue
            if any(p == head for p, _, _ in partitions):
                raise line.error(f"partition {head!r} is defined twice", "partitionname")
            partitions.append((head, line, {**part_defaults, **line.values}))
        elif line.kind == "nodeset":
            nodeset_lines.append(line)
        elif line.kind == "clustername":
            cluster_name = head
        elif line.kind == "selecttype":
            linear = head.lower() == "select/linear"
        elif line.kind == "slurmdparameters":
            overrides = "config_overrides" in head.lower().split(",")
    if not hosts:
        raise ClusterFileError(path, None, "no NodeName lines define a node")

    feature_of = dict(zip(hosts, features))
    for line in nodeset_lines:
        members = []
        if "nodes" in line.values:
            members += _known_hosts(line, "nodes", node_source, nodesets, hosts)
        if "feature" in line.values:
            members += [h for h in hosts if line.values["feature"] in feature_of[h]]
        nodesets[line.values["nodeset"]] = members

    membership: dict[str, list[str]] = {h: [] for h in hosts}
    exclusive_parts, default = [], None
    for part, line, values in partitions:
        for host in dict.fromkeys(_known_hosts(line, "nodes", node_source, nodesets, hosts,
                                               values)):
            membership[host].append(part)
        sharing = values.get("oversubscribe", values.get("shared", "NO")).upper()
        if linear or sharing.startswith("EXCLUSIVE"):
            exclusive_parts.append(part)
        if values.get("default", "NO").upper() == "YES":
            default = part

    if topology is None and (path.parent / "topology.conf").exists():
        topology = path.parent / "topology.conf"
    switches, children, leaf = (), (), None
    if topology is not None:
        tree = read_topology(topology)
        for host in tree.node_order:
            if host not in node_source:
                raise ClusterFileError(tree.path, tree.node_line[host],
                                       f"node {host!r} is not defined in {path}", "Nodes")
        switches, children = tree.names, tree.children
        leaf = np.array([tree.leaf_of.get(h, -1) for h in hosts], dtype=np.int64)
        loose = [h for h in hosts if h not in tree.leaf_of]
        if loose:
            notes.append(f"{tree.path}: {len(loose)} node(s) of {path} under no switch: "
                         f"{compress_hostlist(loose)} (the topology allocator uses them only for "
                         f"jobs that no switch can hold)")

    if gres is None and (path.parent / "gres.conf").exists():
        gres = path.parent / "gres.conf"
    if gres is not None:
        from hpcsched.cluster.gres import read_gres_conf, reconcile

        found = read_gres_conf(gres, hosts)
        # slurm.conf's counts stand (as in Slurm); this checks gres.conf against them
        reconcile(found, hosts, [r[2] for r in rows], [node_source[h] for h in hosts], overrides)
        notes += found.notes

    used_parts = {p for ps in membership.values() for p in ps}
    return Cluster(
        names=tuple(hosts),
        capacity=np.array(rows, dtype=np.int64),
        name=name or cluster_name or path.stem,
        features=tuple(features),
        partitions=tuple(tuple(membership[h]) for h in hosts),
        leaf=leaf,
        switches=switches,
        switch_children=children,
        exclusive=bool(used_parts) and used_parts <= set(exclusive_parts),
        exclusive_partitions=tuple(exclusive_parts),
        default_partition=default if default in used_parts else None,
        sources=tuple(node_source[h] for h in hosts),
        notes=tuple(notes),
    )


def _known_hosts(line: ConfLine, key: str, defined: dict, nodesets: dict, hosts: list[str],
                 values: dict[str, str] | None = None) -> list[str]:
    text = (values or line.values).get(key, "")
    out = []
    for item in split_outside_brackets(text):
        if item.upper() == "ALL":
            out.extend(hosts)
        elif item in nodesets:
            out.extend(nodesets[item])
        else:
            for host in expand(line, key, item):
                if host not in defined:
                    raise line.error(f"node {host!r} is not defined by any NodeName line", key)
                out.append(host)
    return out
