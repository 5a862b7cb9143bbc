"""Writing a generated Spartan-like trace (`hpcsched.workload.spartan.Generated`) as a file.

Two formats:

* ``sacct``: what ``sacct -X -P --format=`` + `SACCT_COLUMNS` prints: a header line, then one
  ``|``-separated line per job, no trailing ``|`` (``--parsable2``). The columns follow the Slurm
  manual's meanings (sacct(1), "Job Accounting Fields"): JobIDRaw is the unique number, JobID is
  ``<array job>_<task>`` for an array's tasks (the array job's number being its first task's
  JobIDRaw) and the number otherwise; Submit, Eligible, Start and End in local time
  ``YYYY-MM-DDTHH:MM:SS``; ElapsedRaw in seconds; TimelimitRaw in minutes; NNodes, NCPUS (allocated)
  and ReqCPUS, ReqNodes (requested, the same here); ReqMem per node, with Slurm's per-node suffix
  ``n`` (``4Gn``, ``500Mn``: the pre-21.08 spelling, which says what it counts); ReqTRES and
  AllocTRES as ``cpu=N,mem=M,node=N,billing=N[,gres/gpu=G]`` with job totals (memory in M, or G
  when a whole number of GB); State ``COMPLETED``, ``FAILED``, ``TIMEOUT`` or ``CANCELLED by UID``.
  Eligible and Start are the Submit time and End is Submit + ElapsedRaw: the generator has no
  scheduler (a reader must not take Start - Submit for a wait).
* ``hpcsim``: the tab-separated column set of HPCsim's traces, which `hpcsched.workload.slurm.
  read_hpcsim` reads: memory as job totals (``16G``, ``4000M``), AdminComment one ``|host|cpus|gres|;``
  entry per node (every node the same CPU count), JobID the JobIDRaw (HPCsim reads numbers only).

Both are written gzipped when the name ends in ``.gz`` (no name or time in the gzip header, so the
same trace gives the same bytes).
"""

from __future__ import annotations

import datetime as dt
import gzip
import os

import numpy as np

from hpcsched.workload.spartan import Generated

SACCT_COLUMNS: tuple[str, ...] = (
    "JobIDRaw", "JobID", "User", "Account", "Partition", "QOS", "Submit", "Eligible", "Start",
    "End", "ElapsedRaw", "TimelimitRaw", "NNodes", "NCPUS", "ReqCPUS", "ReqNodes", "ReqMem",
    "ReqTRES", "AllocTRES", "State")

HPCSIM_COLUMNS: tuple[str, ...] = tuple(
    "JobID UID GID Account AllocCPUS AllocNodes Allgpu Allmem ReqCPUS ReqNodes Reqgpu ReqMem "
    "TimelimitRaw AdminComment Constraints CPUTimeRAW ElapsedRaw Eligible Submit Start End State "
    "NodeList Partition Reserved QOS QOSRAW Reason difference".split())

FORMATS = ("sacct", "hpcsim")
FIRST_UID = 10_000


def _memory(mb: int) -> str:
    return f"{mb // 1024}G" if mb % 1024 == 0 else f"{mb}M"


def _times(trace: Generated, seconds: np.ndarray) -> list[str]:
    base = np.datetime64(trace.start.replace(microsecond=0), "s")
    return np.datetime_as_string(base + seconds.astype("timedelta64[s]"), unit="s").tolist()


def _common(trace: Generated) -> dict:
    jobs = trace.jobs
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
        state=trace.state.tolist())


def sacct_lines(trace: Generated) -> list[str]:
    """The sacct text, one string per line (the header first), without newlines."""
    c = _common(trace)
    part = trace.model.partition
    lines = ["|".join(SACCT_COLUMNS)]
    for i, raw in enumerate(c["raw"]):
        a = int(trace.array_id[i])
        job_id = f"{a}_{int(trace.array_index[i])}" if a >= 0 else str(raw)
        n, cpus, mem, g = c["nodes"][i], c["cpus"][i], c["mem"][i], c["gpus"][i]
        tres = f"cpu={cpus},mem={_memory(mem * n)},node={n},billing={cpus}"
        if g:
            tres += f",gres/gpu={g * n}"
        uid = FIRST_UID + c["user"][i]
        state = c["state"][i]
        if state == "CANCELLED":
            state = f"CANCELLED by {uid}"
        t = c["submit"][i]
        lines.append("|".join((
            str(raw), job_id, f"user{c['user'][i]:04d}", f"punim{c['account'][i]:04d}", part,
            "normal", t, t, t, c["end"][i], str(c["run"][i]), str(c["limit"][i]), str(n),
            str(cpus), str(cpus), str(n), f"{_memory(mem)}n", tres, tres, state)))
    return lines


def hpcsim_lines(trace: Generated) -> list[str]:
    """HPCsim's tab-separated text, one string per line (the header first)."""
    c = _common(trace)
    part = trace.model.partition
    prefix = {"physical": "spartan-bm", "deeplearn": "spartan-gpgpu"}.get(part, f"spartan-{part}")
    lines = ["\t".join(HPCSIM_COLUMNS)]
    for i, raw in enumerate(c["raw"]):
        n, cores, mem, g = c["nodes"][i], c["cores"][i], c["mem"][i], c["gpus"][i]
        cpus = n * cores
        total = _memory(mem * n)
        gres = f"gpu:gpu:{g}" if g else ""
        cpu_range = "0" if cores == 1 else f"0-{cores - 1}"
        admin = "".join(f"|{prefix}{h + 1:03d}|{cpu_range}|{gres}|;" for h in range(n))
        nodelist = f"{prefix}001" if n == 1 else f"{prefix}[001-{n:03d}]"
        uid = str(FIRST_UID + c["user"][i])
        t = c["submit"][i]
        lines.append("\t".join((
            str(raw), uid, uid, f"punim{c['account'][i]:04d}", str(cpus), str(n), str(g * n),
            total, str(cpus), str(n), str(g * n), total, str(c["limit"][i]), admin, "(null)",
            str(c["run"][i] * cpus), str(c["run"][i]), t, t, t, c["end"][i], c["state"][i],
            nodelist, part, "00:00:00", "normal", "1", "None", "0")))
    return lines


def write_trace(trace: Generated, path: str | os.PathLike, fmt: str = "sacct") -> None:
    """Write `trace` in `fmt` (``sacct`` or ``hpcsim``), gzipped when `path` ends in ``.gz``."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; known: {', '.join(FORMATS)}")
    lines = sacct_lines(trace) if fmt == "sacct" else hpcsim_lines(trace)
    data = ("\n".join(lines) + "\n").encode()
    path = os.fspath(path)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as raw:
        if path.endswith(".gz"):
            with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as f:
                f.write(data)
        else:
            raw.write(data)
    os.replace(tmp, path)


def write_sacct(trace: Generated, path: str | os.PathLike) -> None:
    write_trace(trace, path, "sacct")


def write_hpcsim(trace: Generated, path: str | os.PathLike) -> None:
    write_trace(trace, path, "hpcsim")


__all__ = ["FORMATS", "HPCSIM_COLUMNS", "SACCT_COLUMNS", "hpcsim_lines", "sacct_lines",
           "write_hpcsim", "write_sacct", "write_trace"]
