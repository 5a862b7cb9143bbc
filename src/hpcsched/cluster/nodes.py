"""A real cluster: named nodes, each with a capacity vector (cores, memory, GPUs, ...), a node kind,
the partitions it belongs to and the leaf switch it hangs off.

`Cluster` is a description, not a state: it knows no clock and no job. What is free at a given
moment is an (N, R) int64 matrix that the simulator keeps beside it, row i for node i, column r for
`resources[r]`. Allocators (`allocate.py`) read both.

Partitions are stored per node, as a tuple of partition names (`partitions[i]`), because a Slurm
node may be in several partitions and most clusters have few; `select(partition)` gives the
sub-cluster of one of them. Switches form a tree: `switches` names them, `switch_children[s]` lists
the switches directly under switch s in the order the topology file lists them (HPCsim's topology
allocator depends on that order), and `leaf[i]` is the switch node i hangs off (-1: none).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np

from hpcsched.cluster.hostlist import compress_hostlist
from hpcsched.cluster.pool import ClusterError

#: The resources every cluster reader fills in, in this column order. Memory is in MB.
RESOURCES: tuple[str, ...] = ("cores", "memory", "gpus")


def _frozen(array: np.ndarray) -> np.ndarray:
    array = np.array(array, copy=True)
    array.flags.writeable = False
    return array


def _int64(values, what: str) -> np.ndarray:
    array = np.asarray(values)
    if array.dtype.kind == "f":
        if not np.all(np.isfinite(array)) or np.any(array != np.round(array)):
            raise ClusterError(f"{what} must be whole numbers")
    elif array.dtype.kind not in "iub":
        raise ClusterError(f"{what} must be integers, got dtype {array.dtype}")
    return array.astype(np.int64)


def _memory_label(mb: int) -> str:
    if mb >= 1024:
        return f"{int(mb / 1024 + 0.5)}G"  # half up, not Python's half-to-even
    return f"{mb}M"


@dataclass(frozen=True, eq=False)
class Cluster:
    """N named nodes with a capacity vector each. Arrays are read-only; equality is identity.

    Inputs (the readers in `slurm.py` and `platform.py` fill them; `identical()` makes the simple case):

    - `names` hostname per node, in cluster order (the order allocators break ties by);
    - `capacity` (N, R) int64, column r for `resources[r]` (memory in MB);
    - `features` per node, a tuple of Slurm feature names (empty tuple: none; `()` for every node);
    - `partitions` per node, the partitions it is in (`()` for every node: none);
    - `leaf` (N,) index into `switches` of each node's leaf switch, -1 where it has none;
    - `switches` switch names, and `switch_children[s]` the switches right under switch s;
    - `exclusive`: jobs take whole nodes (no sharing); `exclusive_partitions`: the partitions that
      allocate whole nodes, so that `select()` sets `exclusive` for them;
    - `sources` per node, where it was defined ("file:line"), for error messages;
    - `notes` lines of text kept with the description (what a reader noticed, such as a gres.conf
      that disagrees with slurm.conf, or a bundled cluster's provenance); `cluster show` prints them.

    Derived (computed here, so they cannot disagree with the inputs): `kind` (N,) index into
    `kinds`, the node kinds (nodes with the same capacity vector and features) named readably, e.g.
    `72c/693G` or `32c/977G/4gpu`; `kind_features`; `switch_parent`, `switch_level` (0 for a switch
    with no switch below it, else one more than the highest below).
    """

    names: tuple[str, ...]
    capacity: np.ndarray
    resources: tuple[str, ...] = RESOURCES
    name: str = "cluster"
    features: tuple[tuple[str, ...], ...] = ()
    partitions: tuple[tuple[str, ...], ...] = ()
    leaf: np.ndarray | None = None
    switches: tuple[str, ...] = ()
    switch_children: tuple[tuple[int, ...], ...] = ()
    exclusive: bool = False
    exclusive_partitions: tuple[str, ...] = ()
    default_partition: str | None = None
    sources: tuple[str, ...] = field(default=(), repr=False)
    notes: tuple[str, ...] = field(default=(), repr=False)

    kind: np.ndarray = field(init=False, repr=False)
    kinds: tuple[str, ...] = field(init=False)
    kind_features: tuple[tuple[str, ...], ...] = field(init=False, repr=False)
    switch_parent: np.ndarray = field(init=False, repr=False)
    switch_level: np.ndarray = field(init=False, repr=False)

    # -- construction and checks --------------------------------------------------------------------
    def __post_init__(self) -> None:
        set_ = lambda key, value: object.__setattr__(self, key, value)  # noqa: E731 (frozen)
        names = tuple(str(n) for n in self.names)
        set_("names", names)
        n = len(names)
        if n == 0:
            raise ClusterError(f"cluster {self.name!r} has no nodes")
        set_("resources", tuple(self.resources))
        if "cores" not in self.resources or len(set(self.resources)) != len(self.resources):
            raise ClusterError(f"cluster {self.name!r}: resources {self.resources} must name "
                               f"'cores' and no resource twice")
        if self.sources and len(self.sources) != n:
            raise ClusterError(f"cluster {self.name!r}: {len(self.sources)} sources for {n} nodes")
        set_("sources", tuple(self.sources))
        set_("notes", tuple(str(x) for x in self.notes))
        capacity = _int64(self.capacity, f"cluster {self.name!r}: capacities")
        if capacity.shape != (n, len(self.resources)):
            raise ClusterError(f"cluster {self.name!r}: capacity has shape {capacity.shape}, "
                               f"expected ({n}, {len(self.resources)}) for {n} nodes x "
                               f"{self.resources}")
        set_("capacity", _frozen(capacity))

        seen: dict[str, int] = {}
        for i, host in enumerate(names):
            if host in seen:
                raise ClusterError(f"{self.where(i)}: hostname {host!r} is defined twice "
                                   f"(first {self.where(seen[host])})")
            seen[host] = i
        negative = np.argwhere(capacity < 0)
        if len(negative):
            i, r = negative[0]
            raise ClusterError(f"{self.where(i)}: negative {self.resources[r]} "
                               f"({capacity[i, r]})")
        cores = capacity[:, self.resources.index("cores")]
        if np.any(cores == 0):
            raise ClusterError(f"{self.where(int(np.argmax(cores == 0)))}: the node has no cores")

        for key in ("features", "partitions"):
            value = getattr(self, key)
            if not value:
                value = ((),) * n
            elif len(value) != n:
                raise ClusterError(f"cluster {self.name!r}: {len(value)} {key} for {n} nodes")
            set_(key, tuple(tuple(str(x) for x in v) for v in value))

        self._check_switches(n)
        self._find_kinds()
        if self.default_partition is not None and self.default_partition not in self.partition_names:
            raise ClusterError(f"cluster {self.name!r}: default partition "
                               f"{self.default_partition!r} has no nodes")

    def _check_switches(self, n: int) -> None:
        s = len(self.switches)
        object.__setattr__(self, "switches", tuple(self.switches))
        leaf = np.full(n, -1, dtype=np.int64) if self.leaf is None else _int64(self.leaf, "leaf")
        if leaf.shape != (n,) or np.any(leaf < -1) or np.any(leaf >= s):
            raise ClusterError(f"cluster {self.name!r}: leaf must be (N,) indices into the "
                               f"{s} switches, or -1")
        object.__setattr__(self, "leaf", _frozen(leaf))
        children = tuple(tuple(int(c) for c in cs) for cs in self.switch_children) or ((),) * s
        if len(children) != s:
            raise ClusterError(f"cluster {self.name!r}: {len(children)} switch_children for "
                               f"{s} switches")
        object.__setattr__(self, "switch_children", children)
        parent = np.full(s, -1, dtype=np.int64)
        for p, cs in enumerate(children):
            for c in cs:
                if not 0 <= c < s or c == p:
                    raise ClusterError(f"switch {self.switches[p]!r}: bad child switch index {c}")
                if parent[c] != -1:
                    raise ClusterError(f"switch {self.switches[c]!r} is under both "
                                       f"{self.switches[parent[c]]!r} and {self.switches[p]!r}")
                parent[c] = p
        level = np.full(s, -1, dtype=np.int64)

        def level_of(sw: int, path: tuple[int, ...]) -> int:
            if level[sw] >= 0:
                return int(level[sw])
            if sw in path:
                raise ClusterError(f"switches form a loop: "
                                   f"{' -> '.join(self.switches[x] for x in path + (sw,))}")
            below = [level_of(c, path + (sw,)) for c in children[sw]]
            level[sw] = 1 + max(below) if below else 0
            return int(level[sw])

        for sw in range(s):
            level_of(sw, ())
        object.__setattr__(self, "switch_parent", _frozen(parent))
        object.__setattr__(self, "switch_level", _frozen(level))

    def _find_kinds(self) -> None:
        keys: dict[tuple, int] = {}
        kind = np.empty(len(self.names), dtype=np.int64)
        for i in range(len(self.names)):
            key = (tuple(self.capacity[i].tolist()), self.features[i])
            kind[i] = keys.setdefault(key, len(keys))
        labels = [self._capacity_label(np.array(cap)) for cap, _ in keys]
        names = []
        for (cap, feats), label in zip(keys, labels):
            if labels.count(label) > 1 and feats:
                label = f"{label}[{','.join(feats)}]"
            base, k = label, 2
            while label in names:
                label, k = f"{base}-{k}", k + 1
            names.append(label)
        object.__setattr__(self, "kind", _frozen(kind))
        object.__setattr__(self, "kinds", tuple(names))
        object.__setattr__(self, "kind_features", tuple(feats for _, feats in keys))

    def _capacity_label(self, cap: np.ndarray) -> str:
        parts = []
        for r, amount in zip(self.resources, cap.tolist()):
            if r == "cores":
                parts.append(f"{amount}c")
            elif r == "memory":
                if amount:
                    parts.append(_memory_label(amount))
            elif amount:
                parts.append(f"{amount}{'gpu' if r == 'gpus' else r}")
        return "/".join(parts)

    def where(self, i: int) -> str:
        """Node i by name, with the file and line it came from when known (for errors)."""
        i = int(i)
        return f"{self.sources[i]}: node {self.names[i]!r}" if self.sources else \
            f"cluster {self.name!r}: node {self.names[i]!r}"

    @classmethod
    def identical(cls, nodes: int, cores: int, memory: int = 0, gpus: int = 0,
                  exclusive: bool = False) -> "Cluster":
        """`nodes` identical nodes `n0`, `n1`, ... with `cores` cores, `memory` MB and `gpus` GPUs
        each, no switches, no partitions. Memory 0 means memory is not scheduled."""
        if nodes <= 0:
            raise ClusterError(f"a cluster needs at least one node (got nodes={nodes})")
        capacity = np.tile(np.array([[cores, memory, gpus]], dtype=np.int64), (nodes, 1))
        return cls(names=tuple(f"n{i}" for i in range(nodes)), capacity=capacity,
                   name=f"identical-{nodes}x{cores}c", exclusive=exclusive)

    # -- questions -----------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.names)

    @property
    def nodes(self) -> int:
        return len(self.names)

    @property
    def total(self) -> np.ndarray:
        """(R,) the sum of every node's capacity."""
        return self.capacity.sum(axis=0)

    def resource_index(self, resource: str) -> int | None:
        """The column of `resource` in `capacity` and the free matrix, None if the cluster lacks it."""
        return self.resources.index(resource) if resource in self.resources else None

    @cached_property
    def kind_capacity(self) -> np.ndarray:
        """(K, R) the capacity of each node kind."""
        first = np.array([int(np.argmax(self.kind == k)) for k in range(len(self.kinds))])
        return _frozen(self.capacity[first])

    @cached_property
    def kind_counts(self) -> np.ndarray:
        """(K,) how many nodes of each kind."""
        return _frozen(np.bincount(self.kind, minlength=len(self.kinds)))

    @cached_property
    def partition_names(self) -> tuple[str, ...]:
        """Every partition that has a node, in order of first appearance."""
        return tuple(dict.fromkeys(p for ps in self.partitions for p in ps))

    @cached_property
    def switch_members(self) -> np.ndarray:
        """(S, N) bool: node i is under switch s (directly or through switches below it)."""
        s = len(self.switches)
        members = np.zeros((s, len(self.names)), dtype=bool)
        has_leaf = self.leaf >= 0
        members[self.leaf[has_leaf], np.flatnonzero(has_leaf)] = True
        for sw in np.argsort(self.switch_level, kind="stable"):  # lower switches first
            for child in self.switch_children[sw]:
                members[sw] |= members[child]
        return _frozen(members)

    def describe(self) -> str:
        """One line: name, nodes by kind, totals, switches, sharing."""
        kinds = ", ".join(f"{c} x {k}" for k, c in zip(self.kinds, self.kind_counts.tolist()))
        totals = []
        for r, amount in zip(self.resources, self.total.tolist()):
            if r == "memory":
                if amount:
                    totals.append(f"{amount / 1024 ** 2:.1f} TB memory" if amount >= 1024 ** 2
                                  else f"{_memory_label(amount)}B memory")
            elif r == "cores" or amount:
                totals.append(f"{amount} {r}")
        leaves = int(np.count_nonzero(np.isin(np.arange(len(self.switches)), self.leaf)))
        switches = f", {leaves} leaf switches" if self.switches else ""
        return (f"{self.name}: {self.nodes} nodes ({kinds}), {', '.join(totals)}{switches}, "
                f"{'exclusive' if self.exclusive else 'shared'} nodes")

    def hosts(self, nodes) -> str:
        """A Slurm host list of the given node indices (for printing)."""
        return compress_hostlist([self.names[i] for i in nodes])

    # -- sub-clusters ----------------------------------------------------------------------------------
    def select(self, partition: str) -> "Cluster":
        """The nodes of one partition, in cluster order, with the switches above them. The result
        allocates whole nodes iff the partition does (`exclusive_partitions`); it keeps this
        cluster's name when it holds every node, else it is named `NAME/PARTITION`."""
        if partition not in self.partition_names:
            raise ClusterError(f"cluster {self.name!r} has no partition {partition!r}; its "
                               f"partitions: {', '.join(self.partition_names) or '(none)'}")
        keep = np.array([partition in ps for ps in self.partitions])
        exclusive = partition in self.exclusive_partitions or (
            self.exclusive and not self.exclusive_partitions)
        name = self.name if keep.all() else f"{self.name}/{partition}"
        return self._subset(keep, name=name, exclusive=exclusive, default_partition=partition)

    def _subset(self, keep: np.ndarray, **changes) -> "Cluster":
        rows = np.flatnonzero(keep)
        used = self.switch_members[:, rows].any(axis=1) if self.switches else np.zeros(0, bool)
        new_index = np.cumsum(used) - 1
        leaf = self.leaf[rows]
        leaf = np.where(leaf >= 0, new_index[np.maximum(leaf, 0)] if len(used) else -1, -1)
        children = tuple(tuple(int(new_index[c]) for c in cs if used[c])
                         for s, cs in enumerate(self.switch_children) if used[s])
        return replace(
            self,
            names=tuple(self.names[i] for i in rows),
            capacity=self.capacity[rows],
            features=tuple(self.features[i] for i in rows),
            partitions=tuple(self.partitions[i] for i in rows),
            leaf=leaf,
            switches=tuple(s for s, u in zip(self.switches, used) if u),
            switch_children=children,
            sources=tuple(self.sources[i] for i in rows) if self.sources else (),
            **changes,
        )
