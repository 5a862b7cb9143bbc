"""Which of the job-trace formats a file is, from its first non-blank line.

    sniff_file("jobs.txt")     # "sacct", "hpcsim", "swf" or "" (none of them)

Three formats are told apart, and a reader given a file of another one says which it is:

* ``"sacct"``: Slurm's ``sacct -P`` (``--parsable2``) output: a header line of column names
  separated by ``|``, one of them JobID or JobIDRaw and at least one more that sacct prints;
* ``"hpcsim"``: the tab-separated Slurm accounting of HPCsim, the thesis's simulator: a header line
  of tab-separated names holding JobID, TimelimitRaw, AdminComment, AllocCPUS and Submit;
* ``"swf"``: the Standard Workload Format: a first line that is a ``;`` comment, or a job line of
  whitespace-separated numbers.

This module imports nothing of the package, so that every reader can use it.
"""

from __future__ import annotations

import gzip
import os
import re
import zlib

#: the names a format is called by in messages
NAMES = {"sacct": "Slurm sacct -P output", "hpcsim": "an HPCsim trace (tab-separated Slurm "
         "accounting)", "swf": "an SWF (Standard Workload Format) file"}
#: what to do with a file of each format, for messages
READ_WITH = {"sacct": "read_sacct, or load_trace, which recognises it",
             "hpcsim": "read_hpcsim, or load_trace, which recognises it",
             "swf": "read_swf, or load_trace, which recognises it"}

#: sacct's column names (lower case) that, beside JobID/JobIDRaw, mark a '|'-separated header
SACCT_NAMES = frozenset(n.lower() for n in (
    "JobID", "JobIDRaw", "User", "UID", "GID", "Group", "Account", "Partition", "QOS", "Submit",
    "Eligible", "Start", "End", "Elapsed", "ElapsedRaw", "Timelimit", "TimelimitRaw", "NNodes",
    "AllocNodes", "ReqNodes", "NCPUS", "AllocCPUS", "ReqCPUS", "ReqMem", "ReqTRES", "AllocTRES",
    "State", "JobName", "NodeList", "ExitCode", "Reason", "CPUTimeRAW", "AdminComment",
    "Constraints", "Reserved", "Planned", "QOSRAW", "Cluster"))
#: the header names that mark an HPCsim trace
HPCSIM_SIGNATURE = ("JobID", "TimelimitRaw", "AdminComment", "AllocCPUS", "Submit")

_NUMBER = re.compile(r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$")


def first_line(data: bytes) -> tuple[int, str]:
    """The first non-blank line of `data`: (1-based number, text without its line end); (0, "")
    when there is none."""
    pos, no = 0, 1
    while pos < len(data):
        end = data.find(b"\n", pos)
        end = len(data) if end < 0 else end
        text = data[pos:end].rstrip(b"\r").decode("utf-8", "replace")
        if text.strip():
            return no, text
        pos, no = end + 1, no + 1
    return 0, ""


def sniff(line: str) -> str:
    """The format a file whose first non-blank line is `line` is in: "sacct", "hpcsim", "swf", or
    "" for none of them."""
    if "|" in line:
        names = {n.strip().lower() for n in line.split("|")}
        if names & {"jobid", "jobidraw"} and len(names & SACCT_NAMES) >= 2:
            return "sacct"
    if "\t" in line:
        names = {n.strip() for n in line.split("\t")}
        if all(s in names for s in HPCSIM_SIGNATURE):
            return "hpcsim"
    text = line.strip()
    tokens = text.split()
    if text.startswith(";") or (len(tokens) >= 2 and all(_NUMBER.match(t) for t in tokens)):
        return "swf"
    return ""


def describe(line: str) -> str:
    """What a first line looks like, for the message of a reader that cannot read it."""
    found = sniff(line)
    if found:
        return f"it is {NAMES[found]}: {READ_WITH[found]}"
    text = line.strip()
    shown = text if len(text) <= 60 else text[:57] + "..."
    return f"its first line is {shown!r}"


def head(path: str | os.PathLike, size: int = 65536) -> bytes | None:
    """The first `size` bytes of a file, gunzipped where it is gzip; None when it cannot be read."""
    try:
        with open(path, "rb") as f:
            magic = f.read(2)
            f.seek(0)
            if magic == b"\x1f\x8b":
                with gzip.GzipFile(fileobj=f) as g:
                    return g.read(size)
            return f.read(size)
    except (OSError, EOFError, zlib.error):
        return None


def sniff_file(path: str | os.PathLike) -> str:
    """`sniff` of a file's first non-blank line ("" when it cannot be read or is empty). Reads
    only the file's beginning."""
    data = head(path)
    if not data:
        return ""
    no, line = first_line(data)
    return sniff(line) if no else ""


__all__ = ["HPCSIM_SIGNATURE", "NAMES", "describe", "first_line", "head", "sniff", "sniff_file"]
