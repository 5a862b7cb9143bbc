"""A pool of identical nodes: the fast path of every published simulator this project reproduces.

A job asks for processors; it is given whole nodes, ceil(procs / procs_per_node) of them. Which nodes
it gets does not matter on identical nodes, so the pool only counts them. Heterogeneous nodes (cores,
memory, GPUs, switches) live in `nodes.py` and answer the same two questions: how much of the machine a
job needs, and whether it can ever fit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hpcsched.workload.jobs import JobTable, TraceHeader


class ClusterError(ValueError):
    """A cluster that cannot be built, or a job that can never run on it."""


@dataclass(frozen=True)
class NodePool:
    """`nodes` identical nodes with `procs_per_node` processors each."""

    nodes: int
    procs_per_node: int = 1

    def __post_init__(self) -> None:
        if self.nodes <= 0 or self.procs_per_node <= 0:
            raise ClusterError(
                f"a cluster needs at least one node and one processor per node "
                f"(got nodes={self.nodes}, procs_per_node={self.procs_per_node})"
            )

    @property
    def total_procs(self) -> int:
        return self.nodes * self.procs_per_node

    @classmethod
    def from_header(
        cls, header: TraceHeader, nodes: int | None = None, procs_per_node: int | None = None
    ) -> "NodePool":
        """Size the pool as SchedGym does: MaxNodes nodes of MaxProcs/MaxNodes processors (MaxProcs
        defaults to MaxNodes). Explicit arguments win over the header."""
        if nodes is not None and nodes <= 0:
            raise ClusterError(f"a cluster needs at least one node (got nodes={nodes})")
        for key, value in (("MaxNodes", header.max_nodes if nodes is None else None),
                           ("MaxProcs", header.max_procs if procs_per_node is None else None)):
            if value is not None and value <= 0:
                line = header.key_lines.get(key)
                where = header.path or header.name or "the trace"
                raise ClusterError(
                    f"{where}{f', line {line}' if line else ''}: header {key}: {value} is not a "
                    f"size; give the cluster size (--nodes N [--procs-per-node P])")
        max_nodes = nodes if nodes is not None else header.max_nodes
        max_procs = header.max_procs
        if max_nodes is None:
            if max_procs is None:
                raise ClusterError(
                    f"{header.path or header.name or 'the trace'}: the header gives neither MaxNodes "
                    f"nor MaxProcs; give the cluster size (--nodes N [--procs-per-node P])"
                )
            max_nodes = max_procs
        if procs_per_node is None:
            procs_per_node = max(1, (max_procs or max_nodes) // max_nodes)
        return cls(int(max_nodes), int(procs_per_node))

    @classmethod
    def processors_as_nodes(
        cls, header: TraceHeader, nodes: int | None = None, procs_per_node: int | None = None
    ) -> "NodePool":
        """Size the pool as CQSim does: one single-processor node per processor of the header's
        MaxProcs (a job asks for processors, so it takes exactly that many). Explicit arguments win
        over the header."""
        if nodes is None:
            nodes = header.max_procs
            if nodes is None:
                raise ClusterError(
                    f"{header.path or header.name or 'the trace'}: the header gives no MaxProcs, "
                    f"which CQSim sizes the machine by (one node per processor); give the cluster "
                    f"size (--nodes N)"
                )
        return cls(int(nodes), int(procs_per_node) if procs_per_node is not None else 1)

    def nodes_needed(self, procs: np.ndarray) -> np.ndarray:
        """Whole nodes each job takes: ceil(procs / procs_per_node), as int64."""
        procs = np.asarray(procs, dtype=np.float64)
        return np.ceil(procs / self.procs_per_node).astype(np.int64)

    def oversized(self, jobs: JobTable) -> np.ndarray:
        """Rows of the jobs that ask for more nodes than the whole pool has."""
        return np.flatnonzero(self.nodes_needed(jobs.procs) > self.nodes)

    def describe(self) -> str:
        return f"{self.nodes} nodes x {self.procs_per_node} procs"
