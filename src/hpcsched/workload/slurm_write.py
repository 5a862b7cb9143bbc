"""Writing Slurm accounting text: the pieces that every writer of ``sacct -P`` or HPCsim files
shares (the Spartan-like generator, `hpcsched.workload.spartan_format`, and the benchmarks'
HPCsim-trace generator, `benchmarks/hpcsim_traces.py`).

* `SACCT_COLUMNS`: the column set of the issue's ``sacct -X -P --format=...`` command, in order;
* `HPCSIM_COLUMNS`: the 29 tab-separated columns HPCsim's trace reader asks for by name
  (``shared/specs/hpcsim-semantics.md`` §1);
* `memory_text`, `admin_comment`, `node_list`: memory as Slurm prints it (``16G``, ``4000M``), and
  HPCsim's per-node AdminComment (``|host|cpu ranges|gres|;`` per node, ``|host|cpu ranges|;``
  without gres) and host list;
* `write_lines`: text to a file, atomically (temporary file, then rename), gzipped when the name
  ends in ``.gz`` with no name or time in the gzip header, so the same lines give the same bytes.
"""

from __future__ import annotations

import gzip
import os
from typing import Callable, Iterable

SACCT_COLUMNS: tuple[str, ...] = (
    "JobIDRaw", "JobID", "User", "Account", "Partition", "QOS", "Submit", "Eligible", "Start",
    "End", "ElapsedRaw", "TimelimitRaw", "NNodes", "NCPUS", "ReqCPUS", "ReqNodes", "ReqMem",
    "ReqTRES", "AllocTRES", "State")

HPCSIM_COLUMNS: tuple[str, ...] = tuple(
    "JobID UID GID Account AllocCPUS AllocNodes Allgpu Allmem ReqCPUS ReqNodes Reqgpu ReqMem "
    "TimelimitRaw AdminComment Constraints CPUTimeRAW ElapsedRaw Eligible Submit Start End State "
    "NodeList Partition Reserved QOS QOSRAW Reason difference".split())


def memory_text(mb: int) -> str:
    """MB as Slurm prints memory: whole GiB as ``G`` (1024 MB), anything else as ``M``."""
    return f"{mb // 1024}G" if mb % 1024 == 0 else f"{mb}M"


def admin_comment(prefix: str, nodes: int, cores: int, gres: str = "") -> str:
    """HPCsim's AdminComment for a job on hosts ``prefix001``.. with `cores` CPUs on each (CPU ids
    ``0-(cores-1)``) and the per-node gres text `gres` (``gpu:A100:2``; empty: no gres field):
    ``|host|0-3|gpu:A100:2|;`` or ``|host|0-3|;`` per node."""
    cpus = "0" if cores == 1 else f"0-{cores - 1}"
    tail = f"{gres}|" if gres else ""
    return "".join(f"|{prefix}{h + 1:03d}|{cpus}|{tail};" for h in range(nodes))


def node_list(prefix: str, nodes: int) -> str:
    """Slurm's host list of hosts ``prefix001`` .. ``prefix<nodes>``."""
    return f"{prefix}001" if nodes == 1 else f"{prefix}[001-{nodes:03d}]"


def write_lines(path: str | os.PathLike, chunks: Iterable[Iterable[str]],
                progress: Callable[[int], None] | None = None) -> None:
    """Write `chunks` (each an iterable of lines without their newline) to `path`, one line each.

    Atomic: the text goes to a temporary file beside `path`, renamed over it at the end (a failed
    write leaves no half file). Gzipped when `path` ends in ``.gz`` (mtime 0, no file name: the
    same lines give the same bytes). `progress(k)` is called after each chunk of k lines.
    """
    path = os.fspath(path)
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with open(tmp, "wb") as raw:
            out = gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") \
                if path.endswith(".gz") else raw
            try:
                for chunk in chunks:
                    lines = list(chunk)
                    if lines:
                        out.write(("\n".join(lines) + "\n").encode())
                    if progress is not None:
                        progress(len(lines))
            finally:
                if out is not raw:
                    out.close()
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


__all__ = ["HPCSIM_COLUMNS", "SACCT_COLUMNS", "admin_comment", "memory_text", "node_list",
           "write_lines"]
