"""hpcsched's own cluster file: one row per node kind, as a paper's cluster table reads.

    # cerit-zewura.cluster: a comment runs from '#' to the end of the line
    name: cerit-zewura
    note: the CERIT-SC machine of the 2013 trace
    kind    nodes  cores  memory  gpus  partition  switch  features   hosts
    zewura  20     80     517018  0     zewura     -       cl_zewura  zewura[1-20]
    zegox   48     12     91832   0     zegox      -       cl_zegox   zegox[1-48]

The file is text. Blank lines and comments are skipped. A line `KEY: VALUE` (one word, then a colon)
sets a property of the whole cluster, anywhere in the file:

- `name:` the cluster's name (default: the file name without its extension);
- `exclusive:` `yes` (jobs get whole nodes), `no` (the default: nodes are shared), or a comma-separated
  list of the partitions that allocate whole nodes;
- `default:` the default partition;
- `switch:` `NAME > CHILD CHILD ...`, a switch above other switches (leaf switches are named in the
  rows; a tree may have any number of levels);
- `note:` a line of text kept with the cluster (`hpcsched cluster show` prints it); any number.

The first other line is the header: the names of the columns, in any order, case-insensitive.
`kind`, `nodes` and `cores` are required; the others are optional, and `-` in a row means the
column's default:

- `kind` a name for the node kind (letters, digits, `_`, `.`, `-`), unique in the file;
- `nodes` how many nodes of that kind (>= 1); `cores` cores per node (>= 1);
- `memory` per node, in MB, or with a unit as Slurm writes them: `M` (MB), `G` (1024 MB), `T`
  (1024 x 1024 MB), e.g. `512G` = 524288 MB; default 0 (memory not scheduled);
- `gpus` per node (default 0);
- `partition` the partitions the nodes are in, comma-separated (default: none);
- `switch` the leaf switch the nodes hang off (default: none);
- `features` comma-separated node features (default: none);
- `hosts` the nodes' names as a Slurm host list (`zewura[1-20]`), exactly `nodes` of them; default
  KIND1, KIND2, ... KINDn.

Every other line is a row with one value per column. Nodes are numbered in row order, which is the
order allocators break ties by. Every error names the file, the line and the key or column.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from hpcsched.cluster.hostlist import expand_hostlist, split_outside_brackets
from hpcsched.cluster.nodes import Cluster
from hpcsched.cluster.slurm import ClusterFileError

COLUMNS: tuple[str, ...] = ("kind", "nodes", "cores", "memory", "gpus", "partition", "switch",
                            "features", "hosts")
REQUIRED: tuple[str, ...] = ("kind", "nodes", "cores")
KEYS: tuple[str, ...] = ("name", "exclusive", "default", "switch", "note")

_KEY_LINE = re.compile(r"^([A-Za-z][\w-]*):(?:\s+(.*)|)$")
_NAME = re.compile(r"^[\w.-]+$")
_MEMORY = re.compile(r"^(\d+)([mMgGtT]?)$")
_UNIT_MB = {"": 1, "m": 1, "g": 1024, "t": 1024 * 1024}

#: What `looks_like_table` looks for: a header line naming these columns.
SIGNATURE = ("kind", "nodes", "cores")


def looks_like_table(path: str | Path) -> bool:
    """Whether the first line that is neither blank, a comment nor `KEY: VALUE` names the columns
    `kind`, `nodes` and `cores`."""
    try:
        with open(path, encoding="utf-8-sig", errors="replace") as f:
            for raw in f:
                line = raw.split("#", 1)[0].strip()
                if not line or _KEY_LINE.match(line):
                    continue
                names = {w.lower() for w in line.split()}
                return set(SIGNATURE) <= names
    except OSError:
        return False
    return False


def read_cluster_table(path: str | Path, name: str | None = None) -> Cluster:
    """The cluster a cluster table describes (see the module docstring)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")  # a byte-order mark is skipped
    except UnicodeDecodeError as exc:
        raise ClusterFileError(path, None, f"not a text file ({exc})") from None
    except OSError as exc:
        raise ClusterFileError(path, None, f"cannot read ({exc.strerror or exc})") from None

    props: dict[str, tuple[int, str]] = {}
    notes: list[str] = []
    upper: list[tuple[int, str, list[str]]] = []  # (line, switch, children)
    header: list[str] | None = None
    rows: list[tuple[int, dict[str, str]]] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        m = _KEY_LINE.match(line)
        if m:
            key, value = m.group(1).lower(), (m.group(2) or "").strip()
            if key not in KEYS:
                raise ClusterFileError(path, number, f"unknown key (known: {', '.join(KEYS)})",
                                       m.group(1))
            if key == "note":
                notes.append(value)
            elif key == "switch":
                parent, sep, children = value.partition(">")
                parent, children = parent.strip(), children.split()
                if not sep or not _NAME.match(parent) or not children:
                    raise ClusterFileError(path, number, f"expected 'NAME > CHILD CHILD ...', "
                                           f"got {value!r}", "switch")
                upper.append((number, parent, children))
            else:
                if key in props:
                    raise ClusterFileError(path, number, f"given twice (first on line "
                                           f"{props[key][0]})", key)
                props[key] = (number, value)
            continue
        words = line.split()
        if header is None:
            header = [w.lower() for w in words]
            _check_header(path, number, header)
            continue
        if len(words) != len(header):
            raise ClusterFileError(path, number, f"expected {len(header)} values "
                                   f"({' '.join(header)}), found {len(words)}")
        rows.append((number, dict(zip(header, words))))
    if header is None or not rows:
        raise ClusterFileError(path, None, "no node kinds: expected a header line naming the "
                               "columns kind, nodes, cores (...) and one row per node kind")

    names, capacity, features, partitions, leaves, sources = [], [], [], [], [], []
    kinds: dict[str, int] = {}
    for number, row in rows:
        kind = row["kind"]
        if not _NAME.match(kind):
            raise ClusterFileError(path, number, f"{kind!r}: use letters, digits, _ . -", "kind")
        if kind in kinds:
            raise ClusterFileError(path, number, f"kind {kind!r} is given twice (first on line "
                                   f"{kinds[kind]})", "kind")
        kinds[kind] = number
        count = _whole(path, number, row, "nodes", minimum=1)
        cores = _whole(path, number, row, "cores", minimum=1)
        memory = _memory(path, number, row.get("memory", "-"))
        gpus = _whole(path, number, row, "gpus", minimum=0, default=0)
        hosts = _hosts(path, number, row.get("hosts", "-"), kind, count)
        names += hosts
        capacity += [(cores, memory, gpus)] * count
        features += [_list(row.get("features", "-"))] * count
        partitions += [_list(row.get("partition", "-"))] * count
        switch = row.get("switch", "-")
        if switch != "-" and not _NAME.match(switch):
            raise ClusterFileError(path, number, f"{switch!r}: use letters, digits, _ . -",
                                   "switch")
        leaves += [switch] * count
        sources += [f"{path}:{number}"] * count

    switches, children, leaf = _switch_tree(path, leaves, upper)
    part_names = list(dict.fromkeys(p for ps in partitions for p in ps))
    exclusive, exclusive_parts = _exclusive(path, props.get("exclusive"), part_names)
    default = None
    if "default" in props:
        number, default = props["default"]
        if default not in part_names:
            raise ClusterFileError(path, number, f"partition {default!r} has no nodes (partitions: "
                                   f"{', '.join(part_names) or 'none'})", "default")
    return Cluster(
        names=tuple(names),
        capacity=np.array(capacity, dtype=np.int64),
        name=name or props.get("name", (0, ""))[1] or path.stem,
        features=tuple(features),
        partitions=tuple(partitions),
        leaf=leaf,
        switches=switches,
        switch_children=children,
        exclusive=exclusive,
        exclusive_partitions=exclusive_parts,
        default_partition=default,
        sources=tuple(sources),
        notes=tuple(notes),
    )


def _check_header(path: Path, number: int, header: list[str]) -> None:
    for i, column in enumerate(header):
        if column not in COLUMNS:
            raise ClusterFileError(path, number, f"unknown column (known: {', '.join(COLUMNS)})",
                                   column)
        if column in header[:i]:
            raise ClusterFileError(path, number, "column given twice", column)
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise ClusterFileError(path, number, f"the header lacks the column(s) {', '.join(missing)} "
                               f"(a header names at least {', '.join(REQUIRED)})", missing[0])


def _whole(path: Path, number: int, row: dict[str, str], column: str, minimum: int,
           default: int | None = None) -> int:
    text = row.get(column, "-")
    if text == "-" and default is not None:
        return default
    if not text.isdigit() or int(text) < minimum:
        raise ClusterFileError(path, number, f"expected a whole number >= {minimum}, got {text!r}",
                               column)
    return int(text)


def _memory(path: Path, number: int, text: str) -> int:
    if text == "-":
        return 0
    m = _MEMORY.match(text)
    if m is None:
        raise ClusterFileError(path, number, f"expected MB as a whole number, or with a unit M, G "
                               f"(1024 MB) or T (1024 G), got {text!r}", "memory")
    return int(m.group(1)) * _UNIT_MB[m.group(2).lower()]


def _list(text: str) -> tuple[str, ...]:
    return () if text == "-" else tuple(x for x in text.split(",") if x)


def _hosts(path: Path, number: int, text: str, kind: str, count: int) -> list[str]:
    if text == "-":
        return [f"{kind}{i}" for i in range(1, count + 1)]
    try:
        hosts = expand_hostlist(text)
    except ValueError as exc:
        raise ClusterFileError(path, number, str(exc), "hosts") from None
    if len(hosts) != count:
        raise ClusterFileError(path, number, f"{text} names {len(hosts)} hosts, but nodes is "
                               f"{count}", "hosts")
    return hosts


def _switch_tree(path: Path, leaves: list[str], upper: list[tuple[int, str, list[str]]]):
    """Switch names (leaves in order of first use, then the upper switches in file order), their
    children, and each node's leaf index (-1: none)."""
    order = list(dict.fromkeys(s for s in leaves if s != "-"))
    for number, parent, _ in upper:
        if parent in order and parent not in leaves:
            raise ClusterFileError(path, number, f"switch {parent!r} is defined twice", "switch")
        if parent in leaves:
            raise ClusterFileError(path, number, f"switch {parent!r} has nodes (a leaf switch) "
                                   f"and switches below it", "switch")
        order.append(parent)
    index = {s: i for i, s in enumerate(order)}
    children: list[tuple[int, ...]] = [()] * len(order)
    parent_of: dict[str, str] = {}
    for number, parent, kids in upper:
        below = []
        for kid in kids:
            if kid not in index:
                raise ClusterFileError(path, number, f"unknown switch {kid!r} (not a row's switch "
                                       f"nor defined by a switch: line)", "switch")
            if kid in parent_of:
                raise ClusterFileError(path, number, f"switch {kid!r} is already under "
                                       f"{parent_of[kid]!r}", "switch")
            parent_of[kid] = parent
            below.append(index[kid])
        children[index[parent]] = tuple(below)
    for number, parent, _ in upper:
        seen, above = [parent], parent_of.get(parent)
        while above is not None:
            if above in seen:
                raise ClusterFileError(path, number, "switches form a loop: " + " > ".join(
                    reversed(seen + [above])), "switch")
            seen.append(above)
            above = parent_of.get(above)
    leaf = np.array([index[s] if s != "-" else -1 for s in leaves], dtype=np.int64)
    return tuple(order), tuple(children), leaf


def _exclusive(path: Path, given: tuple[int, str] | None, part_names: list[str]):
    if given is None:
        return False, ()
    number, value = given
    if value.lower() in ("yes", "no"):
        return value.lower() == "yes", tuple(part_names) if value.lower() == "yes" else ()
    parts = tuple(split_outside_brackets(value))
    for p in parts:
        if p not in part_names:
            raise ClusterFileError(path, number, f"partition {p!r} has no nodes (expected yes, no "
                                   f"or partitions among {', '.join(part_names) or 'none'})",
                                   "exclusive")
    return bool(part_names) and set(part_names) <= set(parts), parts
