"""What a scheduler learned on processor counts (RLScheduler, DRAS) observes on a cluster of named
nodes: the engine's decision view as the pool of single cores of `cluster.cores` (jobs seen as
total cores).

    view = cores_view(view)        # on named nodes a CoresView; on a pool, the view itself

A `CoresView` answers what those observations read as they would be answered on the pool of the
cluster's total cores running the same jobs on the same schedule: `jobs` is the cores table
(`cluster.cores.cores_table`: each job's processors are its nodes x cores per node, no memory),
`nodes_needed` those cores, `total_nodes` the cluster's cores, `free_nodes` the cores free now
(summed over the nodes). Everything else (the clock, the queue, the running jobs and their
estimated ends, `fits`) is the engine's own: `fits` says whether a job fits the named nodes now,
which may be false where the free cores would hold it (they are spread over nodes, or its memory
is not free), so a policy that asks it is told the truth of the cluster.
"""

from __future__ import annotations

import weakref

import numpy as np

from hpcsched.cluster.cores import cores_norm, cores_table, total_cores
from hpcsched.cluster.nodes import Cluster


class CoresView:
    """A named-node engine's `DecisionView` seen as the pool of single cores (module docstring)."""

    __slots__ = ("_view", "jobs", "nodes_needed", "total_nodes", "free_nodes")

    def __init__(self, view, jobs, cores: np.ndarray, total: int, core_column: int) -> None:
        self._view = view
        self.jobs = jobs
        self.nodes_needed = cores
        self.total_nodes = total
        self.free_nodes = int(view.free[:, core_column].sum())

    def __getattr__(self, name):
        return getattr(self._view, name)

    @property
    def view(self):
        """The engine's own view behind this one."""
        return self._view


# one cores table per job table an engine runs (a run's window is a table of its own)
_TABLES: dict[int, tuple[weakref.ref, Cluster, object, np.ndarray]] = {}


def _table_of(jobs, cluster: Cluster):
    hit = _TABLES.get(id(jobs))
    if hit is not None and hit[0]() is jobs and hit[1] is cluster:
        return hit[2], hit[3]
    table, _ = cores_table(jobs, cluster)
    cores = np.asarray(table.procs, dtype=np.int64)
    cores.flags.writeable = False
    if len(_TABLES) > 32:
        _TABLES.clear()
    _TABLES[id(jobs)] = (weakref.ref(jobs), cluster, table, cores)
    return table, cores


def cores_view(view):
    """`view` as a learned scheduler of processor counts sees it: a `CoresView` on a cluster of
    named nodes, the view itself on a pool of identical nodes."""
    cluster = view.cluster
    if not isinstance(cluster, Cluster) or isinstance(view, CoresView):
        return view
    table, cores = _table_of(view.jobs, cluster)
    return CoresView(view, table, cores, total_cores(cluster), cluster.resources.index("cores"))


def observed_norm(prepared) -> dict[str, float]:
    """RLScheduler's normalisation constants of the trace `prepared` as its models observe it: its
    own (`CleaningReport.norm`), and on a cluster of named nodes those of its cores view
    (`cluster.cores.cores_norm`: processors over the cluster's total cores, no memory), which is
    what a model trained on a `trace convert --cores-of` file saw."""
    norm = prepared.report.norm
    if isinstance(prepared.cluster, Cluster):
        return cores_norm(norm, prepared.cluster)
    return norm


__all__ = ["CoresView", "cores_view", "observed_norm"]
