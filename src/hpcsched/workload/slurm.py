"""Read job traces in the tab-separated Slurm-accounting format of HPCsim, the simulator behind
Wang's thesis, exactly as HPCsim reads them (spec `hpcsim-semantics.md` section 1).

    jobs = read_hpcsim("phys2k_s11.tsv.gz", partition="physical")
    jobs, report = read_hpcsim_with_report("jobs.tsv", partition="physical", drop_unbalanced=True)
    print(report.summary())

The file is one header line naming the columns, then one job per line, fields separated by tabs,
plain or gzipped. Columns are found by name, in any order. What each one becomes:

* the request: HPCsim replaces a Req* column by its Alloc* counterpart wherever the two differ, so
  the job asks for AllocNodes nodes, AllocCPUS cores, Allgpu GPUs and Allmem memory in all (job
  totals); per node that is ``int(cores/nodes)`` cores (truncated: 10 cores on 3 nodes is 3 per
  node), ``memory/nodes`` MB (a float, kept as it is) and ``int(gpus/nodes)`` GPUs;
* memory: a number with a last-character unit K (1/1024 MB), M, G (1024 MB) or T (1024**2 MB), or no
  unit (a whole number of MB), case-insensitive, converted as ``int(value * unit)`` MB. Any other
  suffix (Slurm's old per-CPU ``4000Mc`` and per-node ``4000Mn``) is an error: HPCsim crashes on it;
* TimelimitRaw is in minutes: ``req_time = int(TimelimitRaw * 60)`` s; the run time is
  ``min(ElapsedRaw, req_time)`` s;
* Submit (``%Y-%m-%dT%H:%M:%S``, other ISO 8601 forms also read) gives the order: jobs are sorted by
  submit time, ties in file order, and `submit` is whole seconds since the earliest kept Submit
  (HPCsim's clock); that instant, read as UTC, is the header's `unix_start_time`;
* AdminComment (``|host|cpu ranges|gres|;`` per node, trailing ``;`` needed) is read for one thing:
  HPCsim schedules only jobs whose nodes all have the same CPU count there, and crashes on any other
  (and on one with no node entry). Such rows are an error naming their lines, or are dropped and
  counted with ``drop_unbalanced=True``. A malformed entry, or a gres given in the ``(IDX:...)`` form,
  is an error (HPCsim crashes on it while reading);
* Partition: with `partition` given, only rows whose Partition is exactly that are kept (the others
  are counted); the table's `partition` column indexes `header.partitions`;
* JobID (a number, counted in the report where it repeats; array tasks ``123_4`` and
  heterogeneous-job components ``123+0`` are not read yet and are an error listing them), UID and
  GID (-1 where not a number), Start (``wait`` = Start - Submit where both parse, else
  -1) and State (SWF status: 1 COMPLETED, 0 FAILED / TIMEOUT / NODE_FAIL / OUT_OF_MEMORY /
  PREEMPTED / BOOT_FAIL / DEADLINE, 5 CANCELLED, else -1).

Required columns: JobID, AllocCPUS, AllocNodes, Allgpu, Allmem, ReqCPUS, ReqNodes, Reqgpu, ReqMem,
TimelimitRaw, AdminComment, ElapsedRaw, Submit (and Partition when a partition is given). HPCsim
itself also insists on UID, GID, Account, Constraints, CPUTimeRAW, Eligible, Start, End, State,
NodeList, Reserved, QOS, QOSRAW, Reason and difference, which do not change its schedule; this
reader reads UID, GID, Start and State where present and needs none of them.

Where this reader is kinder than HPCsim, it says so here rather than crash: rows of other partitions
are dropped before they are checked (HPCsim parses every row first); an unparseable Start, End or
Eligible is not an error (HPCsim crashes); a memory column with no unit anywhere reads as MB (pandas
gives HPCsim numbers there, and it crashes on `.upper()`); a UID or GID that is not a number is -1.
Where it is stricter: negative or non-integer counts and negative memory, limits or run times are
errors (HPCsim would schedule them, meaninglessly, or crash later). As in HPCsim, a TimelimitRaw that
is not a number (``UNLIMITED``) and a requested node count below 1 are errors. Repeated JobIDs are
read and counted (HPCsim keys running jobs by id and crashes when two such jobs run at once).

Every error is a `TraceError` naming the file, and the line, column and value where there is one.
A file that is another format (``sacct -P`` output, SWF) is an error saying which.

The fields are found and parsed by the machinery the sacct reader uses too
(`hpcsched.workload.accounting`: columnar, one Python parse per distinct value of an unusual
field); what differs is only what HPCsim makes of them. The job ids, users (UID), states, accounts,
QOS and partitions as the file spells them are kept in the header's `source` (`SlurmHeader`), for
`hpcsched trace jobs`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

import numpy as np

from hpcsched.workload.accounting import (
    Column, Fields, ReadReport, SlurmHeader, SourceText, bad, check_format, check_rows, count,
    instants, memory_mb, numbers, parse_by_value, read_buffer, repeated,
)
from hpcsched.workload.formats import HPCSIM_SIGNATURE, sniff_file
from hpcsched.workload.jobs import LINE, PROCS, SWF_FIELDS, JobTable
from hpcsched.workload.swf import _LARGEST, TraceError

#: Columns without which the schedule cannot be known.
REQUIRED: tuple[str, ...] = (
    "JobID", "AllocCPUS", "AllocNodes", "Allgpu", "Allmem", "ReqCPUS", "ReqNodes", "Reqgpu",
    "ReqMem", "TimelimitRaw", "AdminComment", "ElapsedRaw", "Submit",
)
#: Header names that identify a file of this format (see `looks_like_hpcsim`).
SIGNATURE: tuple[str, ...] = HPCSIM_SIGNATURE

# what the report calls each thing it counts
DROP_PARTITION = "other partition"
DROP_UNBALANCED = "unequal CPU counts per node in AdminComment, or no node (HPCsim crashes)"
ALLOC_RULE = "request replaced by the allocation (Alloc* differs from Req*)"
CAP_RULE = "run time capped at the time limit"
CORES_TRUNCATED = "cores not a multiple of the node count (per node truncated)"
GPUS_TRUNCATED = "GPUs not a multiple of the node count (per node truncated)"
MEMORY_FRACTIONAL = "memory not a multiple of the node count (per node fractional)"
REORDERED = "reordered by submit time"
WAIT_UNKNOWN = "Start unreadable (wait -1)"
ZERO_LIMIT = "time limit 0 (HPCsim's WFP3 and UNICEP divide by it)"
REPEATED_ID = "JobID repeated (HPCsim confuses such jobs when they run at once, and crashes)"

_GPU = re.compile(r"gpu:[^:]+:(\d+(-\d+)?|\(IDX:\d+(-\d+)?\))")
STATUS = {"COMPLETED": 1, "CANCELLED": 5, "FAILED": 0, "TIMEOUT": 0, "NODE_FAIL": 0,
          "OUT_OF_MEMORY": 0, "PREEMPTED": 0, "BOOT_FAIL": 0, "DEADLINE": 0}


@dataclass(frozen=True)
class HpcsimReport(ReadReport):
    """What reading did (`ReadReport`); `unbalanced_lines` are the file's line numbers of the rows
    dropped for their AdminComment."""

    unbalanced_lines: tuple[int, ...] = ()


def read_hpcsim(path: str | os.PathLike, partition: str | None = None, *,
                drop_unbalanced: bool = False, name: str | None = None) -> JobTable:
    """The jobs of an HPCsim trace as a JobTable (see the module's docstring for every rule).

    `partition`: keep only the rows of that partition (HPCsim's `partition` argument).
    `drop_unbalanced`: drop, and count, the jobs HPCsim would crash on for their AdminComment,
    instead of raising. `name` defaults to the file name without ".gz", ".tsv", ".txt", ".csv".
    """
    return read_hpcsim_with_report(path, partition, drop_unbalanced=drop_unbalanced, name=name)[0]


def read_hpcsim_with_report(path: str | os.PathLike, partition: str | None = None, *,
                            drop_unbalanced: bool = False,
                            name: str | None = None) -> tuple[JobTable, HpcsimReport]:
    """`read_hpcsim`, and the report of what was dropped or changed (also ``header.report``)."""
    where = os.fspath(path)
    data = read_buffer(where)
    check_format(data, where, "hpcsim")
    fields = Fields(data, "\t", where, "HPCsim trace")
    col = {c: i for i, c in enumerate(fields.columns)}
    missing = [c for c in REQUIRED + (("Partition",) if partition is not None else ())
               if c not in col]
    if missing:
        raise TraceError(f"{where}: not an HPCsim trace, or one without the column(s) "
                         f"{', '.join(missing)} (header on line {fields.header_line})")
    if len(fields) == 0:
        raise TraceError(f"{where}: a header and no job")
    n_read = len(fields)
    dropped: dict[str, int] = {}
    changed: dict[str, int] = {}
    rows = np.arange(n_read)

    # 1. the partition filter, first: rows of other partitions are not checked further
    if partition is not None:
        codes, values = fields.column(col["Partition"]).categories()
        keep = codes == values.index(partition) if partition in values else \
            np.zeros(n_read, dtype=bool)
        count(dropped, DROP_PARTITION, ~keep)
        if not keep.any():
            raise TraceError(f"{where}: no job of partition {partition!r} "
                             f"(partitions in the file: {', '.join(sorted(values))})")
        rows = rows[keep]
    line_no = fields.line[rows]
    n = len(rows)

    def column(c: str) -> Column:
        return fields.column(col[c], rows)

    # 2. job ids: numbers only, for now
    ids = column("JobID")
    job_id, plain = ids.naturals()
    if not plain.all():
        _unread_job_ids(ids, np.flatnonzero(~plain), where)

    # 3. the request: Alloc* wins where it differs from Req*
    counts = {c: _counts(column(c)) for c in ("AllocCPUS", "AllocNodes", "Allgpu")}
    mem_alloc = _memory(column("Allmem"))
    mem_req = _memory(column("ReqMem"))
    differs = mem_req != mem_alloc
    for req, alloc in (("ReqCPUS", "AllocCPUS"), ("ReqNodes", "AllocNodes"), ("Reqgpu", "Allgpu")):
        r = numbers(column(req), empty=True)
        differs |= ~(r == counts[alloc])  # an empty Req* (NaN) differs too, as in pandas
    cores, nodes, gpus = counts["AllocCPUS"], counts["AllocNodes"], counts["Allgpu"]
    low = np.flatnonzero(nodes < 1)
    if low.size:
        i = int(low[0])
        raise TraceError(f"{where}, line {int(line_no[i])}: AllocNodes "
                         f"{column('AllocNodes').text(i)!r}: a job needs at least 1 node "
                         f"({low.size} such row(s))")
    cores_per_node = np.trunc(cores / nodes)
    gpus_per_node = np.trunc(gpus / nodes)
    mem_per_node = mem_alloc / nodes
    changes = {  # counted at the end, over the rows kept
        ALLOC_RULE: differs,
        CORES_TRUNCATED: cores_per_node * nodes != cores,
        GPUS_TRUNCATED: gpus_per_node * nodes != gpus,
        MEMORY_FRACTIONAL: np.trunc(mem_per_node) != mem_per_node,
    }

    # 4. times
    limit = column("TimelimitRaw")
    limit_min = numbers(limit)
    check_rows(limit, limit_min < 0, "is negative")
    req_time = np.trunc(limit_min * 60)
    elapsed_col = column("ElapsedRaw")
    elapsed = numbers(elapsed_col)
    check_rows(elapsed_col, elapsed < 0, "is negative")
    run_time = np.minimum(elapsed, req_time)
    changes[CAP_RULE] = elapsed > req_time
    changes[ZERO_LIMIT] = req_time == 0
    submit_abs = instants(column("Submit"), unknown=False,
                          fraction_why="has a fraction of a second (HPCsim's clock is whole "
                                       "seconds)")

    # 5. AdminComment: HPCsim schedules only balanced jobs
    balanced = _admin_comments(column("AdminComment"))
    unbalanced = np.flatnonzero(~balanced)
    if unbalanced.size and not drop_unbalanced:
        id_text = ids.texts() if n <= 100_000 else None
        shown = ", ".join(
            f"line {int(line_no[i])} (job {id_text[i] if id_text else ids.text(i)})"
            for i in unbalanced[:10])
        more = f" and {unbalanced.size - 10} more" if unbalanced.size > 10 else ""
        raise TraceError(
            f"{where}: {unbalanced.size} job(s) whose AdminComment gives their nodes unequal CPU "
            f"counts, or no node at all; HPCsim cannot schedule them (it crashes): {shown}{more}. "
            f"Pass drop_unbalanced=True to drop them (counted)")

    # 6. optional columns
    def optional(c: str) -> np.ndarray:
        """UID, GID: -1 where absent, empty or not a number."""
        return numbers(column(c), otherwise=-1.0) if c in col else np.full(n, -1.0)

    uid, gid = optional("UID"), optional("GID")
    if "Start" in col:
        start_abs = instants(column("Start"), unknown=True, garbage=True)
        wait = np.where(np.isnan(start_abs), -1.0, start_abs - submit_abs)
        changes[WAIT_UNKNOWN] = np.isnan(start_abs)
    else:
        wait = np.full(n, -1.0)
    text: dict[str, np.ndarray] = {"job_id": ids.strings().astype(str)}
    status = np.full(n, -1.0)
    if "State" in col:
        codes, values = column("State").categories()
        names = [v.split(" ")[0].upper() for v in values]
        status = np.array([STATUS.get(s, -1) for s in names], dtype=np.float64)[codes]
        text["state"] = np.array([s.rstrip("+") for s in names], dtype=object)[codes]
    part_index = np.full(n, -1.0)
    part_names: tuple[str, ...] = ()
    if "Partition" in col:
        codes, values = column("Partition").categories()
        part_index = codes.astype(np.float64)  # categories are numbered in order of appearance
        part_names = tuple(values)
        text["partition"] = np.array(values, dtype=object)[codes]
    for c, key in (("UID", "user"), ("Account", "account"), ("QOS", "qos")):
        if c in col:
            codes, values = column(c).categories()
            text[key] = np.array(values, dtype=object)[codes]

    # 7. drop the unbalanced, order by (submit, row), HPCsim's clock
    keep = balanced
    count(dropped, DROP_UNBALANCED, ~balanced)
    changes[REPEATED_ID] = np.zeros(n, dtype=bool)
    changes[REPEATED_ID][keep] = repeated(job_id[keep])
    for rule, mask in changes.items():
        count(changed, rule, mask & keep)
    kept = np.flatnonzero(keep)
    order = kept[np.argsort(submit_abs[kept], kind="stable")]
    count(changed, REORDERED, order != kept)
    if order.size == 0:
        raise TraceError(f"{where}: no job left to read ({'; '.join(dropped)})")
    t0 = submit_abs[order[0]]
    cols = {f: np.full(order.size, -1.0) for f in SWF_FIELDS}
    cols.update(
        job_id=job_id[order], submit=submit_abs[order] - t0, wait=wait[order],
        run_time=run_time[order], alloc_procs=cores[order], req_procs=cores[order],
        req_time=req_time[order], status=status[order], user=uid[order], group=gid[order],
        partition=part_index[order],
    )
    cols[PROCS] = cores[order]
    cols[LINE] = line_no[order].astype(np.float64)
    cols.update(nodes=nodes[order], cores_per_node=cores_per_node[order],
                mem_per_node=mem_per_node[order], gpus_per_node=gpus_per_node[order])
    base = os.path.basename(where)
    for suffix in (".gz", ".tsv", ".txt", ".csv"):
        base = base.removesuffix(suffix)
    report = HpcsimReport(where, n_read, int(order.size), dropped, changed,
                          unbalanced_lines=tuple(int(line_no[i]) for i in unbalanced))
    header = SlurmHeader(name=name or base, path=where, unix_start_time=int(t0),
                         fields={"Format": "HPCsim (tab-separated Slurm accounting)"},
                         partitions=part_names,
                         source=SourceText(line_no[kept], {k: v[kept] for k, v in text.items()}),
                         report=report)
    return JobTable(cols, header), report


def looks_like_hpcsim(path: str | os.PathLike) -> bool:
    """Whether the file's first non-blank line is a tab-separated header naming HPCsim's columns
    (JobID, TimelimitRaw, AdminComment, AllocCPUS, Submit). Reads only the file's beginning."""
    return sniff_file(path) == "hpcsim"


# -- fields, as HPCsim reads them -----------------------------------------------------------------


def _counts(c: Column) -> np.ndarray:
    """AllocCPUS, AllocNodes, Allgpu: whole, non-negative numbers."""
    values = numbers(c)
    check_rows(c, values != np.trunc(values), "is not a whole number")
    check_rows(c, values < 0, "is negative")
    return values


def _memory(c: Column) -> np.ndarray:
    """HPCsim's convert_to_mb: the last character is the unit (K, M, G, T; none = MB), the rest a
    number; the result is int(value * unit) MB."""
    def parse(text: str, i: int) -> float:
        got = memory_mb(text, per_suffix=False, units="KMGT", unitless_fraction=False)
        if got is None:
            raise bad(c.fields.where, int(c.line[i]), c.name, text,
                      "is not a memory size (a number with one of the units K, M, G, T, or none "
                      "for a whole number of MB; Slurm's per-CPU/per-node suffixes such as 4000Mc "
                      "or 4000Mn are not read: HPCsim crashes on them)")
        if not abs(got[0]) <= _LARGEST:
            raise bad(c.fields.where, int(c.line[i]), c.name, text,
                      f"is too large (at most {_LARGEST} MB)")
        return float(int(got[0]))

    out = np.empty(len(c))
    parse_by_value(c, np.arange(len(c)), parse, out)
    return out


def _admin_comments(c: Column) -> np.ndarray:
    """Whether each AdminComment gives every node the same CPU count (HPCsim's `balanced`)."""
    def parse(text: str, i: int) -> float:
        try:
            per_node = _cpu_counts(text)
        except ValueError as exc:
            raise bad(c.fields.where, int(c.line[i]), c.name, text,
                      f"cannot be read ({exc}; HPCsim crashes on it)") from None
        return float(len(set(per_node)) == 1)

    out = np.empty(len(c))
    parse_by_value(c, np.arange(len(c)), parse, out)
    return out.astype(bool)


def _cpu_counts(text: str) -> list[int]:
    """CPU count per distinct host of `|host|0-3,8|gres|;` entries (a later entry for a host
    replaces an earlier one, as HPCsim's dict does). Raises ValueError where HPCsim crashes."""
    per_host: dict[str, int] = {}
    for entry in text.split(";")[:-1]:
        parts = entry.split("|")[1:-1]
        if len(parts) < 2:
            raise ValueError(f"entry {entry!r} is not |host|cpus|...|")
        n = 0
        for item in parts[1].split(","):
            if "-" in item:
                lo, hi = item.split("-", 1)
                n += int(hi) - int(lo) + 1  # int() raises on what HPCsim's int() does
            else:
                n += 1
        if len(parts) > 2:
            m = _GPU.search(parts[2])
            if m and m.group(1).startswith("("):
                raise ValueError(f"gres {parts[2]!r} in the (IDX:...) form")
        per_host[parts[0]] = n
    return list(per_host.values())


def _unread_job_ids(ids: Column, odd: np.ndarray, where: str) -> None:
    kinds = []
    for i in odd[:5]:
        t = ids.text(int(i))
        kind = ("an array task" if "_" in t else "a heterogeneous-job component" if "+" in t
                else "a job step" if "." in t else "not a number")
        kinds.append(f"line {int(ids.line[i])}: {t!r} ({kind})")
    more = f" and {odd.size - 5} more" if odd.size > 5 else ""
    raise TraceError(f"{where}: {odd.size} JobID(s) that are not plain job numbers, which this "
                     f"reader does not take yet (HPCsim's own reader would treat a job step as a "
                     f"job): {'; '.join(kinds)}{more}")


__all__ = ["HpcsimReport", "REQUIRED", "looks_like_hpcsim", "read_hpcsim",
           "read_hpcsim_with_report"]
