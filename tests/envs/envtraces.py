"""Small hand-made traces and a cached Lublin-1 for the environment tests (a module name of its own:
test folders share one `conftest` module name)."""

from functools import lru_cache

import numpy as np

from hpcsched.sim.run import prepare
from hpcsched.workload.jobs import JobTable, TraceHeader


def table(rows, nodes=4, procs_per_node=1, **columns):
    """rows: (submit, run, procs[, req]); the request defaults to the run time. Extra columns
    (user=..., req_mem=...) are given whole."""
    submit = [r[0] for r in rows]
    run = [r[1] for r in rows]
    procs = [r[2] for r in rows]
    req = [r[3] if len(r) > 3 else r[1] for r in rows]
    header = TraceHeader(name="tiny", max_nodes=nodes, max_procs=nodes * procs_per_node)
    return JobTable.from_columns(header, submit=submit, run_time=run, req_procs=procs,
                                 alloc_procs=procs, req_time=req, **columns)


def random_table(n=120, nodes=8, seed=0):
    """A crowded random trace on `nodes` nodes, for episodes that must just run."""
    rng = np.random.default_rng(seed)
    submit = np.cumsum(rng.integers(0, 60, n))
    run = rng.integers(1, 600, n)
    procs = rng.integers(1, nodes + 1, n)
    req = run + rng.integers(0, 300, n)
    users = rng.integers(1, 6, n)
    rows = list(zip(submit.tolist(), run.tolist(), procs.tolist(), req.tolist()))
    return table(rows, nodes=nodes, user=users)


@lru_cache(maxsize=None)
def prepared(name="lublin-1", profile="rlscheduler"):
    return prepare(name, profile)
