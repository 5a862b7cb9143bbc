"""Every job of a table as one flat row, as `hpcsched trace jobs` prints it.

    columns = job_columns(load_trace("jobs.txt"))     # name -> list, JSON-ready (None = null)
    rows = job_rows(load_trace("jobs.txt"))           # the same as one dict per job

The keys, for any trace (SWF, ``sacct -P``, HPCsim):

``job_id`` the job's id as the source names it (``1004_2`` an array task, ``1011+0`` a
heterogeneous job's component; SWF's job number); ``submit`` seconds since the first submit;
``wait`` (s, null where unknown); ``run`` the run time (s); ``limit`` the requested time (s, null
where there is none or it is unknown); ``procs``; ``nodes``, ``cores_per_node``, ``mem_per_node``
(MB), ``gpus_per_node`` (null where the trace is silent: SWF); ``partition`` (its name where the
trace names it, else SWF's partition number); ``user`` (the name, or the number); ``state`` (Slurm's
state, or SWF's status as a word: COMPLETED, FAILED, CANCELLED, PARTIAL...); ``account`` and ``qos``
where the source has them; ``line`` the job's line in the file.
"""

from __future__ import annotations

import numpy as np

from hpcsched.workload.jobs import JobTable

FIELDS: tuple[str, ...] = (
    "job_id", "submit", "wait", "run", "limit", "procs", "nodes", "cores_per_node",
    "mem_per_node", "gpus_per_node", "partition", "user", "state", "account", "qos", "line")

#: SWF's status codes (field 11) in words
SWF_STATUS = {0: "FAILED", 1: "COMPLETED", 2: "PARTIAL", 3: "PARTIAL_COMPLETED",
              4: "PARTIAL_FAILED", 5: "CANCELLED"}


def job_columns(jobs: JobTable) -> dict[str, list]:
    """The table's jobs as columns of Python values (see the module's docstring), in its order."""
    source = getattr(jobs.header, "source", None)
    lines = jobs.line.astype(np.int64)

    def text(name: str) -> np.ndarray | None:
        return source.take(name, lines) if source is not None else None

    ids = text("job_id")
    out: dict[str, list] = {
        "job_id": ids.tolist() if ids is not None else _numbers(jobs.job_id, as_text=True),
        "submit": _numbers(jobs.submit),
        "wait": _numbers(jobs.wait, missing=jobs.wait < 0),
        "run": _numbers(jobs.run_time, missing=jobs.run_time < 0),
        "limit": _numbers(jobs.req_time, missing=jobs.req_time < 0),
        "procs": _numbers(jobs.procs, missing=jobs.procs < 0),
    }
    for name in ("nodes", "cores_per_node", "mem_per_node", "gpus_per_node"):
        out[name] = _numbers(jobs[name], missing=jobs[name] < 0)
    names = jobs.header.partitions
    if names:
        index = jobs.partition.astype(np.int64)
        known = (index >= 0) & (index < len(names))
        table = np.array(list(names) + [None], dtype=object)
        out["partition"] = table[np.where(known, index, len(names))].tolist()
    else:
        out["partition"] = _numbers(jobs.partition, missing=jobs.partition < 0)
    user = text("user")
    out["user"] = user.tolist() if user is not None else _numbers(jobs.user,
                                                                   missing=jobs.user < 0)
    state = text("state")
    if state is not None:
        out["state"] = state.tolist()
    else:
        out["state"] = [SWF_STATUS.get(int(s)) if s >= 0 else None for s in jobs.status.tolist()]
    for name in ("account", "qos"):
        values = text(name)
        if values is not None:
            out[name] = values.tolist()
    out["line"] = lines.tolist()
    return out


def job_rows(jobs: JobTable) -> list[dict]:
    """`job_columns` as one flat dict per job."""
    cols = job_columns(jobs)
    keys = list(cols)
    return [dict(zip(keys, values)) for values in zip(*cols.values())]


def _numbers(values: np.ndarray, missing: np.ndarray | None = None, *,
             as_text: bool = False) -> list:
    """A float column as Python ints where every value is whole (floats otherwise), None where
    `missing`; as strings with `as_text`."""
    finite = np.isfinite(values)
    whole = bool(np.all(values[finite] == np.trunc(values[finite])))
    out = values.astype(np.int64).tolist() if whole and finite.all() else values.tolist()
    if as_text:
        out = [str(v) for v in out]
    if missing is not None and missing.any():
        for i in np.flatnonzero(missing | ~finite).tolist():
            out[i] = None
    return out


__all__ = ["FIELDS", "SWF_STATUS", "job_columns", "job_rows"]
