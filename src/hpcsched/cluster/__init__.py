"""What the machine is, and which nodes a job gets.

- `NodePool`: identical nodes, counted (the fast path every published simulator uses);
  `grid.ResourceGrid`: DeepRM's discrete resource bins.
- `Cluster`: named nodes with capacity vectors (cores, memory in MB, GPUs), node kinds, partitions
  and a switch tree; read by `load_cluster` from a bundled name, a `slurm.conf` (+ `topology.conf`)
  or HPCsim's platform format (a topology file + `nodes.csv`).
- Allocators (`get_allocator(name)`, `ALLOCATORS`): which `count` nodes a job gets, given the free
  matrix; `fitting_nodes` says which nodes can take a request now.
- `job_requests`: each job as a node count and a per-node request; `never_fits`: the jobs that
  cannot run even on an empty cluster.

Nothing here knows a clock: what is free at a given moment is an (N, R) matrix the simulator keeps.
"""

from hpcsched.cluster.pool import ClusterError, NodePool
from hpcsched.cluster.nodes import RESOURCES, Cluster
from hpcsched.cluster.slurm import ClusterFileError, read_slurm_conf
from hpcsched.cluster.platform import read_hpcsim_platform
from hpcsched.cluster.load import BUNDLED_CLUSTERS, load_cluster
from hpcsched.cluster.allocate import (ALLOCATORS, Allocator, BestFit, FirstAvailable,
                                       HpcsimBestFit, HpcsimFirstAvailable, HpcsimTopology,
                                       TopologyAware, fitting_nodes, get_allocator)
from hpcsched.cluster.request import job_requests, never_fits, why_never_fits

__all__ = [
    "ALLOCATORS", "Allocator", "BUNDLED_CLUSTERS", "BestFit", "Cluster", "ClusterError",
    "ClusterFileError", "FirstAvailable", "HpcsimBestFit", "HpcsimFirstAvailable", "HpcsimTopology",
    "NodePool", "RESOURCES", "TopologyAware", "fitting_nodes", "get_allocator", "job_requests",
    "load_cluster", "never_fits", "read_hpcsim_platform", "read_slurm_conf", "why_never_fits",
]
