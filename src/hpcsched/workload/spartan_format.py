"""Writing a generated Spartan-like trace (`hpcsched.workload.spartan.Generated`) as a file.

Two formats:

* ``sacct`` (the default): what ``sacct -X -P --format=`` + `SACCT_COLUMNS` prints: a header line,
  then one ``|``-separated line per job, no trailing ``|`` (``--parsable2``). The columns as the
  Slurm manual describes them (sacct(1), "Job Accounting Fields"): JobIDRaw is the job's unique
  number; JobID is ``<array job>_<task>`` for an array's tasks (the array job being its first
  task's JobIDRaw) and the number otherwise; Submit, Eligible, Start and End in local time
  ``YYYY-MM-DDTHH:MM:SS``; ElapsedRaw in seconds; TimelimitRaw in minutes; NNodes, NCPUS
  (allocated) and ReqCPUS, ReqNodes (requested: the same here); ReqMem per node with the per-node
  suffix ``n`` of Slurm before 21.08 (``4Gn``, ``500Mn``: it says what it counts); ReqTRES and
  AllocTRES as ``cpu=N,mem=M,node=N,billing=N[,gres/gpu=G]`` with job totals; State
  ``COMPLETED``, ``FAILED``, ``TIMEOUT`` or ``CANCELLED by <uid>``. Eligible and Start are the
  Submit time and End is Submit + ElapsedRaw: the generator has no scheduler, so a reader must not
  take Start - Submit for a wait (a simulator schedules the jobs itself).
* ``hpcsim``: the tab-separated column set of HPCsim's traces (`hpcsched.workload.slurm`):
  memory as job totals (``16G``, ``4000M``), one AdminComment entry ``|host|cpus|gres|;`` per node
  (every node the same CPU count), JobID the JobIDRaw (HPCsim reads numbers only).

Both are written gzipped when the name ends in ``.gz`` (the same trace gives the same bytes), in
chunks of `CHUNK` jobs, so that a year of Physical (4.6 million jobs) never sits in memory as text.
"""

from __future__ import annotations

import os
from typing import Callable, Iterator

import numpy as np

from hpcsched.workload.slurm_write import (
    HPCSIM_COLUMNS, SACCT_COLUMNS, admin_comment, memory_text, node_list, write_lines,
)
from hpcsched.workload.spartan import Generated

FORMATS = ("sacct", "hpcsim")
FIRST_UID = 10_000
CHUNK = 50_000
HOST_PREFIX = {"physical": "spartan-bm", "deeplearn": "spartan-gpgpu"}


def _times(trace: Generated, seconds: np.ndarray) -> list[str]:
    base = np.datetime64(trace.start.replace(microsecond=0), "s")
    return np.datetime_as_string(base + seconds.astype("timedelta64[s]"), unit="s").tolist()


def _columns(trace: Generated, lo: int, hi: int) -> dict:
    """The values of jobs lo..hi-1 that both formats write, as Python lists."""
    jobs = trace.jobs.take(slice(lo, hi))
    submit = jobs.submit.astype(np.int64)
    run = jobs.run_time.astype(np.int64)
    nodes = jobs.nodes.astype(np.int64)
    cores = jobs.cores_per_node.astype(np.int64)
    return dict(
        raw=jobs.job_id.astype(np.int64).tolist(), nodes=nodes.tolist(),
        cpus=(nodes * cores).tolist(), cores=cores.tolist(),
        mem=jobs.mem_per_node.astype(np.int64).tolist(),
        gpus=jobs.gpus_per_node.astype(np.int64).tolist(),
        submit=_times(trace, submit), end=_times(trace, submit + run), run=run.tolist(),
        limit=(jobs.req_time.astype(np.int64) // 60).tolist(),
        user=jobs.user.astype(np.int64).tolist(), account=jobs.group.astype(np.int64).tolist(),
        state=trace.state[lo:hi].tolist(), array_id=trace.array_id[lo:hi].tolist(),
        array_index=trace.array_index[lo:hi].tolist())


def sacct_rows(trace: Generated, lo: int = 0, hi: int | None = None) -> list[str]:
    """The sacct lines of jobs lo..hi-1 (no header, no newlines)."""
    c = _columns(trace, lo, len(trace.jobs) if hi is None else hi)
    part = trace.model.partition
    lines = []
    for i, raw in enumerate(c["raw"]):
        a = c["array_id"][i]
        job_id = f"{a}_{c['array_index'][i]}" if a >= 0 else str(raw)
        n, cpus, mem, g = c["nodes"][i], c["cpus"][i], c["mem"][i], c["gpus"][i]
        tres = f"cpu={cpus},mem={memory_text(mem * n)},node={n},billing={cpus}"
        if g:
            tres += f",gres/gpu={g * n}"
        state = c["state"][i]
        if state == "CANCELLED":
            state = f"CANCELLED by {FIRST_UID + c['user'][i]}"
        t = c["submit"][i]
        lines.append("|".join((
            str(raw), job_id, f"user{c['user'][i]:04d}", f"punim{c['account'][i]:04d}", part,
            "normal", t, t, t, c["end"][i], str(c["run"][i]), str(c["limit"][i]), str(n),
            str(cpus), str(cpus), str(n), f"{memory_text(mem)}n", tres, tres, state)))
    return lines


def hpcsim_rows(trace: Generated, lo: int = 0, hi: int | None = None) -> list[str]:
    """HPCsim's tab-separated lines of jobs lo..hi-1 (no header, no newlines)."""
    c = _columns(trace, lo, len(trace.jobs) if hi is None else hi)
    part = trace.model.partition
    prefix = HOST_PREFIX.get(part, f"spartan-{part}")
    lines = []
    for i, raw in enumerate(c["raw"]):
        n, cores, mem, g = c["nodes"][i], c["cores"][i], c["mem"][i], c["gpus"][i]
        cpus = n * cores
        total = memory_text(mem * n)
        uid = str(FIRST_UID + c["user"][i])
        t = c["submit"][i]
        lines.append("\t".join((
            str(raw), uid, uid, f"punim{c['account'][i]:04d}", str(cpus), str(n), str(g * n),
            total, str(cpus), str(n), str(g * n), total, str(c["limit"][i]),
            admin_comment(prefix, n, cores, f"gpu:gpu:{g}" if g else ""), "(null)",
            str(c["run"][i] * cpus), str(c["run"][i]), t, t, t, c["end"][i], c["state"][i],
            node_list(prefix, n), part, "00:00:00", "normal", "1", "None", "0")))
    return lines


def lines(trace: Generated, fmt: str = "sacct") -> Iterator[list[str]]:
    """The file's text in chunks of lines: the header, then `CHUNK` jobs at a time."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; known: {', '.join(FORMATS)}")
    yield ["|".join(SACCT_COLUMNS) if fmt == "sacct" else "\t".join(HPCSIM_COLUMNS)]
    rows = sacct_rows if fmt == "sacct" else hpcsim_rows
    for lo in range(0, len(trace.jobs), CHUNK):
        yield rows(trace, lo, lo + CHUNK)


def write_trace(trace: Generated, path: str | os.PathLike, fmt: str = "sacct",
                progress: Callable[[int], None] | None = None) -> None:
    """Write `trace` in `fmt` (``sacct`` or ``hpcsim``), gzipped when `path` ends in ``.gz``;
    `progress(k)` is called as each chunk of k lines is written (the header counts as one)."""
    write_lines(path, lines(trace, fmt), progress)


def write_sacct(trace: Generated, path: str | os.PathLike) -> None:
    write_trace(trace, path, "sacct")


def write_hpcsim(trace: Generated, path: str | os.PathLike) -> None:
    write_trace(trace, path, "hpcsim")


__all__ = ["CHUNK", "FORMATS", "hpcsim_rows", "lines", "sacct_rows", "write_hpcsim",
           "write_sacct", "write_trace"]
