"""Read Slurm accounting as operators produce it: the output of ``sacct -P`` (``--parsable2``).

    sacct -X -P -S 2024-01-01 -E 2024-02-01 --format=JobIDRaw,JobID,User,Account,Partition,QOS,\\
        Submit,Eligible,Start,End,ElapsedRaw,TimelimitRaw,NNodes,NCPUS,ReqCPUS,ReqNodes,ReqMem,\\
        ReqTRES,AllocTRES,State > jobs.txt

    jobs = read_sacct("jobs.txt")                       # every job that ran
    jobs, report = read_sacct_with_report("jobs.txt", partition="gpu")
    print(report.summary())                             # what was dropped or changed, counted

The file is one header line naming the columns (in any order, as sacct prints them; the names are
matched without regard to case), then one row per line, fields separated by ``|``; a trailing ``|``
on every line (``--parsable``) is allowed, plain or gzipped. What sacct's manual says each column
holds, and what this reader makes of it:

* **JobID**: the job's id as Slurm names it: ``123`` a job, ``123_4`` task 4 of array job 123,
  ``123+0`` component 0 of heterogeneous job 123 (each component is a row with its own resources;
  the components are kept as separate jobs), ``123.batch`` / ``123.extern`` / ``123.0`` a job
  *step* (a row of its own unless ``-X``, *allocations only*, is given: skipped and counted), and
  ``123_[5-10]`` the array tasks still pending as one row (skipped and counted: they never ran).
  **JobIDRaw**: the job's own number (an array task's and a component's too). The JobTable's
  numeric `job_id` is JobIDRaw where the file has it, else the JobID where all are plain numbers,
  else the job's position 1, 2, ... in submit order (`TraceHeader.fields["JobIdSource"]` says
  which); the ids as sacct prints them are in ``header.source`` (`SlurmHeader`), and
  `hpcsched trace jobs` prints them.
* **Submit**, **Start**, **End**: when the job was submitted, began and ended, as
  ``YYYY-MM-DDTHH:MM:SS`` (sacct prints the cluster's local time without a zone; it is read as UTC,
  which changes no interval); ``Unknown`` or ``None`` where there is no such time. `submit` is
  seconds since the earliest Submit kept (that instant is the header's `unix_start_time`), `wait`
  = Start - Submit. **Eligible** (when the job could first start) is not used.
* **State**: the job's state; its first word counts (``CANCELLED by 1001`` is CANCELLED). A job
  that never started is dropped and counted by state: no Start (``Unknown``/``None``), no CPU
  allocated (NCPUS 0), or PENDING. A job still running when sacct ran (RUNNING, SUSPENDED,
  REQUEUED, ..., or no End) is dropped and counted: its run time is not known yet. A job cancelled
  while running, TIMEOUT, FAILED, NODE_FAIL, OUT_OF_MEMORY, PREEMPTED, ... keeps its real run time.
  The SWF `status` is 1 COMPLETED, 5 CANCELLED, 0 the failures, -1 other states.
* **ElapsedRaw**: the job's run time in seconds: the `run_time` (End - Start where the file has no
  ElapsedRaw; where both are given and differ, as for a job that was suspended, ElapsedRaw is used
  and the rows are counted).
* **TimelimitRaw**: the job's time limit in minutes; **Timelimit** the same as ``[D-]HH:MM:SS``,
  ``MM:SS`` (and sbatch's other forms); where both are given they must agree. ``UNLIMITED`` (no
  limit set) and ``Partition_Limit`` (none set, the partition's not yet applied) mean the job has
  no limit of its own: its requested time is the `no_limit` given (seconds, or seconds per
  partition: e.g. the partitions' MaxTime), else left unknown (-1) for the profile's cleaning to
  decide (``standard``: the run time), counted either way. `req_time` = the limit in seconds.
* **NNodes**: the nodes the job ran on (requested while pending); without it AllocNodes, then
  **ReqNodes** (the requested minimum). **NCPUS** (= AllocCPUS): the CPUs allocated; without it
  ReqCPUS. Per node: `nodes` = that node count, `cores_per_node` = NCPUS / nodes rounded *up*
  (Slurm may spread 10 CPUs over 3 nodes as 4+3+3: the job fits where its largest share does),
  counted where it is not a whole number. `procs` = NCPUS.
* Memory, as a job total, from the first that the row gives: the allocation, ``mem=`` in
  **AllocTRES** (the trackable resources allocated, e.g. ``cpu=4,mem=16G,node=1,gres/gpu=2``);
  else **ReqMem**, the memory asked for, a number with a unit K, M, G, T (none: MB), where old
  Slurm appends ``n`` (per node: times the nodes) or ``c`` (per CPU: times NCPUS) and Slurm 21.08+
  prints the job's total; else ``mem=`` in **ReqTRES** (the resources requested at submission).
  `mem_per_node` = total / nodes in MB, rounded up to a whole MB (counted where that changes it);
  rows whose allocation differs from the request are counted. -1 where the file says nothing.
* GPUs: ``gres/gpu=N`` in AllocTRES, else in ReqTRES; a typed ``gres/gpu:a100=N`` next to it is
  the same GPUs again and is not added (alone, the typed counts are summed); ``gres/gpumem`` is
  not a GPU. `gpus_per_node` = total / nodes rounded up (counted where not whole); 0 where the
  TRES columns name no GPU, -1 where the file has no TRES column.
* **Partition**: the partition the job ran in; with `partition` given only its rows are kept (the
  others counted); the table's `partition` column indexes `header.partitions`. **User** (names,
  numbered 1, 2, ... in sorted order for the `user` column unless there is a **UID** column),
  **GID**, **Account** and **QOS** are kept as given (`header.source`).

Required columns: JobID or JobIDRaw, Submit, Start, End or ElapsedRaw, State, TimelimitRaw or
Timelimit, a CPU count (NCPUS, AllocCPUS or ReqCPUS) and a node count (NNodes, AllocNodes or
ReqNodes); Partition when a partition is asked for. A file that is not sacct output (an SWF file,
HPCsim's tab-separated traces, anything else) or lacks one of these is an error saying so; a bad
field is a `TraceError` naming the file, line, column and value. Rows are checked only as far as
they are read: a dropped row is not checked past the reason it was dropped for.

Reading is columnar (`hpcsched.workload.accounting`): 2,000,000 rows of the issue's column set read
in about 10 s on one slow core.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Mapping

import numpy as np

from hpcsched.workload.accounting import (
    REPEATED_ID, SKIP_ARRAY_RANGE, SKIP_STEP, Column, Fields, ReadReport, SlurmHeader, SourceText,
    bad, classify_job_ids, count, first_line, instants, memory_mb, naturals_or, numeric_job_ids,
    parse_by_value, repeated,
)
from hpcsched.workload.jobs import LINE, PROCS, SWF_FIELDS, JobTable
from hpcsched.workload.swf import TraceError, _read_bytes

#: sacct's names for the columns this reader knows, matched without regard to case
KNOWN = ("JobID", "JobIDRaw", "User", "UID", "GID", "Group", "Account", "Partition", "QOS",
         "Submit", "Eligible", "Start", "End", "Elapsed", "ElapsedRaw", "Timelimit",
         "TimelimitRaw", "NNodes", "AllocNodes", "ReqNodes", "NCPUS", "AllocCPUS", "ReqCPUS",
         "ReqMem", "ReqTRES", "AllocTRES", "State", "JobName", "NodeList", "ExitCode", "Reason",
         "CPUTimeRAW", "AdminComment", "Constraints", "Reserved", "Planned", "QOSRAW", "Cluster")
_CANON = {k.lower(): k for k in KNOWN}
#: each needed thing and the columns that can give it, the first present wins
NEEDED: tuple[tuple[str, ...], ...] = (
    ("JobID", "JobIDRaw"), ("Submit",), ("Start",), ("ElapsedRaw", "End"), ("State",),
    ("TimelimitRaw", "Timelimit"), ("NCPUS", "AllocCPUS", "ReqCPUS"),
    ("NNodes", "AllocNodes", "ReqNodes"),
)

# what the report calls each thing it counts
DROP_PARTITION = "other partition"
NEVER_STARTED = "never started ({})"
UNFINISHED = "still running when sacct ran (RUNNING, SUSPENDED, ... or no End): run time unknown"
NO_LIMIT_UNKNOWN = ("no time limit (UNLIMITED, Partition_Limit): requested time left unknown, -1 "
                    "(the profile's cleaning decides; standard: the run time)")
NO_LIMIT_GIVEN = "no time limit (UNLIMITED, Partition_Limit): requested time from no_limit"
CORES_ROUNDED = "NCPUS not a multiple of the node count (cores per node rounded up)"
GPUS_ROUNDED = "GPUs not a multiple of the node count (GPUs per node rounded up)"
MEMORY_ROUNDED = "memory per node not a whole MB (rounded up)"
MEMORY_ALLOCATED = "memory allocated (AllocTRES mem=) differs from ReqMem (the allocation used)"
MEMORY_FROM_REQMEM_PER_CPU = "memory per CPU (ReqMem ...c): times NCPUS"
WAIT_NEGATIVE = "Start before Submit (wait unknown, -1)"
REORDERED = "reordered by submit time"
NOTE_PAST_LIMIT = "ran past its time limit (kept; the standard profile ends a job at its limit)"
NOTE_ELAPSED = "ElapsedRaw differs from End - Start (time suspended; ElapsedRaw used)"
NOTE_STATE = "state unknown to this reader (kept: it ran)"
NOTE_MEMORY_ZERO = "memory 0 (--mem=0: all of a node's memory; no allocation recorded)"

# Slurm's job states (job_state_codes); the first word of State, a trailing "+" removed
STATES = frozenset({
    "BOOT_FAIL", "CANCELLED", "COMPLETED", "CONFIGURING", "COMPLETING", "DEADLINE", "FAILED",
    "NODE_FAIL", "OUT_OF_MEMORY", "PENDING", "PREEMPTED", "RUNNING", "RESV_DEL_HOLD",
    "REQUEUE_FED", "REQUEUE_HOLD", "REQUEUED", "RESIZING", "REVOKED", "SIGNALING", "SPECIAL_EXIT",
    "STAGE_OUT", "STOPPED", "SUSPENDED", "TIMEOUT", "LAUNCH_FAILED", "POWER_UP_NODE",
    "RECONFIG_FAIL", "UPDATE_DB", "EXPEDITING"})
#: states of a job that has not ended
RUNNING_STATES = frozenset({"RUNNING", "SUSPENDED", "REQUEUED", "RESIZING", "CONFIGURING",
                            "COMPLETING", "STOPPED", "SIGNALING", "STAGE_OUT", "REQUEUE_HOLD",
                            "REQUEUE_FED", "RESV_DEL_HOLD", "POWER_UP_NODE", "EXPEDITING"})
SWF_STATUS = {"COMPLETED": 1, "CANCELLED": 5, "FAILED": 0, "TIMEOUT": 0, "NODE_FAIL": 0,
              "OUT_OF_MEMORY": 0, "PREEMPTED": 0, "BOOT_FAIL": 0, "DEADLINE": 0}
NO_LIMIT_WORDS = frozenset({"unlimited", "partition_limit"})
_DURATION = re.compile(r"^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$")


@dataclass(frozen=True)
class SacctReport(ReadReport):
    """`ReadReport` of a sacct file: `rows_read` counts every data row (steps included)."""

    def summary(self) -> str:
        return super().summary().replace(" jobs read, ", " rows read, ", 1).replace(
            " kept", " jobs kept", 1)


def read_sacct(path: str | os.PathLike, partition: str | None = None, *,
               no_limit: float | Mapping[str, float] | None = None,
               name: str | None = None) -> JobTable:
    """The jobs of a ``sacct -P`` file as a JobTable (see the module's docstring for every rule).

    `partition`: keep only that partition's jobs. `no_limit`: the requested time (s) of a job with
    no limit (``UNLIMITED``, ``Partition_Limit``), or one per partition name; None leaves it -1.
    `name` defaults to the file name without ".gz", ".txt", ".psv", ".sacct", ".csv".
    """
    return read_sacct_with_report(path, partition, no_limit=no_limit, name=name)[0]


def read_sacct_with_report(path: str | os.PathLike, partition: str | None = None, *,
                           no_limit: float | Mapping[str, float] | None = None,
                           name: str | None = None) -> tuple[JobTable, SacctReport]:
    """`read_sacct`, and the report of what was dropped or changed (also ``header.report``)."""
    where = os.fspath(path)
    data = _read_bytes(where)
    header_no, head = first_line(data)
    if not header_no:
        raise TraceError(f"{where}: empty file")
    if not is_sacct_header(head):
        raise TraceError(f"{where}: not Slurm sacct output ({describe_first_line(head)}); "
                         f"expected a first line naming sacct's columns separated by '|', as "
                         f"`sacct -P -X --format=JobIDRaw,JobID,Submit,Start,End,...` prints")
    fields = Fields(data, "|", where, "sacct -P output")
    col = {_CANON.get(c.lower(), c): j for j, c in enumerate(fields.columns)}
    missing = [" or ".join(alts) for alts in NEEDED if not any(a in col for a in alts)]
    if partition is not None and "Partition" not in col:
        missing.append("Partition")
    if missing:
        raise TraceError(f"{where}: a sacct file without the column(s) {', '.join(missing)} "
                         f"(header on line {fields.header_line}), which reading its jobs needs")
    if len(fields) == 0:
        raise TraceError(f"{where}: a header and no job")
    n_read = len(fields)
    dropped: dict[str, int] = {}
    changed: dict[str, int] = {}
    notes: dict[str, int] = {}

    def pick(*names: str) -> str | None:
        return next((c for c in names if c in col), None)

    def column(c: str, rows: np.ndarray) -> Column:
        return fields.column(col[c], rows)

    # 1. ids: steps and pending array ranges are not jobs
    rows = np.arange(n_read)
    id_name = pick("JobID", "JobIDRaw")
    step, array_range, kind = classify_job_ids(column(id_name, rows))
    count(dropped, SKIP_STEP, step)
    count(dropped, SKIP_ARRAY_RANGE, array_range)
    keep = ~(step | array_range)
    rows, kind = rows[keep], kind[keep]

    # 2. the partition
    if partition is not None:
        codes, values = column("Partition", rows).categories()
        match = codes == values.index(partition) if partition in values else \
            np.zeros(len(rows), dtype=bool)
        count(dropped, DROP_PARTITION, ~match)
        if not match.any():
            raise TraceError(f"{where}: no job of partition {partition!r} (partitions in the "
                             f"file: {', '.join(sorted(set(values))) or 'none'})")
        rows, kind = rows[match], kind[match]

    # 3. states; jobs that never started, and jobs not finished
    state_codes, state_values = column("State", rows).categories()
    state_names = [_state_name(v) for v in state_values]
    empty = [k for k, s in enumerate(state_names) if not s]
    if empty:
        i = int(np.flatnonzero(state_codes == empty[0])[0])
        raise bad(where, int(fields.line[rows[i]]), fields.columns[col["State"]], "",
                  "is not a job state")

    def state_is(names) -> np.ndarray:
        return np.array([s in names for s in state_names], dtype=bool)[state_codes]

    start = instants(column("Start", rows), unknown=True)
    cpu_name = pick("NCPUS", "AllocCPUS", "ReqCPUS")
    cpus = _counts(column(cpu_name, rows))
    never = np.isnan(start) | state_is({"PENDING"})
    if cpu_name != "ReqCPUS":
        never |= cpus == 0  # nothing allocated: it never ran
    for k, s in enumerate(state_names):
        label = "CANCELLED before it started" if s == "CANCELLED" else s
        count(dropped, NEVER_STARTED.format(label), never & (state_codes == k))
    running = state_is(RUNNING_STATES)
    end = instants(column("End", rows), unknown=True) if "End" in col else None
    unfinished = ~never & (running | (np.isnan(end) if end is not None else False))
    count(dropped, UNFINISHED, unfinished)
    keep = ~(never | unfinished)
    known_state = state_is(STATES)[keep]
    rows, kind, state_codes = rows[keep], kind[keep], state_codes[keep]
    start, cpus = start[keep], cpus[keep]
    end = end[keep] if end is not None else None
    if rows.size == 0:
        raise TraceError(f"{where}: no job left to read ({'; '.join(dropped)})")
    line_no = fields.line[rows]
    count(notes, NOTE_STATE, ~known_state)

    # 4. run time
    if end is not None:
        span = end - start
        neg = np.flatnonzero(span < 0)
        if neg.size:
            i = int(neg[0])
            raise bad(where, int(line_no[i]), fields.columns[col["End"]],
                      column("End", rows).text(i), "is before the job's Start")
    if "ElapsedRaw" in col:
        run_time = _counts(column("ElapsedRaw", rows))
        if end is not None:
            count(notes, NOTE_ELAPSED, run_time != span)
    else:
        run_time = span

    # 5. submit, wait
    submit_abs = instants(column("Submit", rows), unknown=False)
    wait = start - submit_abs
    count(changed, WAIT_NEGATIVE, wait < 0)
    wait = np.where(wait < 0, -1.0, wait)

    # 6. the time limit
    limit = _limits(column, col, fields, rows)
    unlimited = np.isinf(limit)
    part_codes, part_values = (column("Partition", rows).categories() if "Partition" in col
                               else (np.zeros(len(rows), dtype=np.int64), [""]))
    req_time = np.where(unlimited, -1.0, limit)
    if no_limit is not None and unlimited.any():
        if isinstance(no_limit, Mapping):
            given = np.array([float(no_limit.get(p, -1.0)) for p in part_values])[part_codes]
        else:
            given = np.full(len(rows), float(no_limit))
        set_ = unlimited & (given >= 0)
        req_time = np.where(set_, given, req_time)
        count(changed, NO_LIMIT_GIVEN, set_)
        count(changed, NO_LIMIT_UNKNOWN, unlimited & ~set_)
    else:
        count(changed, NO_LIMIT_UNKNOWN, unlimited)
    count(notes, NOTE_PAST_LIMIT, ~unlimited & (run_time > limit))

    # 7. nodes and cores
    node_name = pick("NNodes", "AllocNodes", "ReqNodes")
    nodes = _counts(column(node_name, rows))
    for values, c in ((nodes, node_name), (cpus, cpu_name)):
        low = np.flatnonzero(values < 1)
        if low.size:
            i = int(low[0])
            raise bad(where, int(line_no[i]), fields.columns[col[c]], column(c, rows).text(i),
                      f"is fewer than 1 for a job that ran ({low.size} such row(s))")
    cores_per_node = np.ceil(cpus / nodes)
    count(changed, CORES_ROUNDED, cores_per_node * nodes != cpus)

    # 8. memory and GPUs
    alloc_mem, alloc_gpus = _tres(column, col, "AllocTRES", rows)
    req_mem_total = np.full(len(rows), np.nan)
    if "ReqMem" in col:
        mb, per = _req_mem(column("ReqMem", rows))
        count(changed, MEMORY_FROM_REQMEM_PER_CPU, (per == 2) & np.isnan(alloc_mem))
        req_mem_total = np.where(per == 1, mb * nodes, np.where(per == 2, mb * cpus, mb))
    tres_mem, tres_gpus = _tres(column, col, "ReqTRES", rows)
    count(changed, MEMORY_ALLOCATED,
          ~np.isnan(alloc_mem) & ~np.isnan(req_mem_total)
          & ~np.isclose(alloc_mem, req_mem_total, rtol=1e-9, atol=1e-6))
    mem_total = np.where(~np.isnan(alloc_mem), alloc_mem,
                         np.where(~np.isnan(req_mem_total), req_mem_total, tres_mem))
    count(notes, NOTE_MEMORY_ZERO, np.isnan(alloc_mem) & (mem_total == 0))
    exact = np.round(mem_total / nodes, 6)
    mem_per_node = np.ceil(exact)
    count(changed, MEMORY_ROUNDED, ~np.isnan(exact) & (mem_per_node != exact))
    mem_per_node = np.where(np.isnan(mem_per_node), -1.0, mem_per_node)
    has_tres = "AllocTRES" in col or "ReqTRES" in col
    gpus = np.where(~np.isnan(alloc_gpus), alloc_gpus, tres_gpus)
    gpus = np.where(np.isnan(gpus), 0.0 if has_tres else -1.0, gpus)
    gpus_per_node = np.where(gpus >= 0, np.ceil(gpus / nodes), -1.0)
    count(changed, GPUS_ROUNDED, (gpus >= 0) & (gpus_per_node * nodes != gpus))

    # 9. who
    user_text = None
    if "User" in col:
        codes, values = column("User", rows).categories()
        rank = np.empty(len(values), dtype=np.float64)
        rank[np.argsort(values, kind="stable")] = np.arange(1, len(values) + 1)
        rank[[k for k, v in enumerate(values) if not v.strip()]] = -1.0
        user = rank[codes]
        user_text = np.array(values, dtype=object)[codes]
    else:
        user = np.full(len(rows), -1.0)
    if "UID" in col:
        user = _optional_numbers(column("UID", rows))
    group = _optional_numbers(column("GID", rows)) if "GID" in col else np.full(len(rows), -1.0)

    # 10. ids, order, partitions
    raw = column("JobIDRaw", rows) if "JobIDRaw" in col else None
    ids = column(id_name, rows)
    job_id, id_source = numeric_job_ids(ids, kind, raw)
    order = np.argsort(submit_abs, kind="stable")
    count(changed, REORDERED, order != np.arange(len(order)))
    count(changed, REPEATED_ID, repeated(job_id))
    _, first = np.unique(part_codes, return_index=True)
    first_code = np.unique(part_codes)[np.argsort(first)]  # partitions in order of appearance
    part_rank = np.empty(len(part_values), dtype=np.float64)
    part_rank[first_code] = np.arange(len(first_code))
    partitions = tuple(part_values[k] for k in first_code) if "Partition" in col else ()
    part_index = part_rank[part_codes] if "Partition" in col else np.full(len(rows), -1.0)
    if id_source == "row":
        job_id = np.empty(len(rows))
        job_id[order] = np.arange(1, len(rows) + 1)

    t0 = float(submit_abs[order[0]])
    status = np.array([SWF_STATUS.get(s, -1) for s in state_names], dtype=np.float64)[state_codes]
    o = order
    cols = {f: np.full(len(rows), -1.0) for f in SWF_FIELDS}
    req_cpus = (_counts(column("ReqCPUS", rows)) if "ReqCPUS" in col and cpu_name != "ReqCPUS"
                else cpus)
    cols.update(job_id=job_id[o], submit=submit_abs[o] - t0, wait=wait[o], run_time=run_time[o],
                alloc_procs=cpus[o], req_procs=req_cpus[o], req_time=req_time[o],
                status=status[o], user=user[o], group=group[o], partition=part_index[o])
    cols[PROCS] = cpus[o]
    cols[LINE] = line_no[o].astype(np.float64)
    cols.update(nodes=nodes[o], cores_per_node=cores_per_node[o], mem_per_node=mem_per_node[o],
                gpus_per_node=gpus_per_node[o])

    text = {"job_id": ids.strings(), "state": np.array(state_names, dtype=object)[state_codes]}
    if user_text is not None:
        text["user"] = user_text
    elif "UID" in col:
        text["user"] = column("UID", rows).strings()
    for c in ("Account", "QOS"):
        if c in col:
            codes, values = column(c, rows).categories()
            text[c.lower()] = np.array(values, dtype=object)[codes]
    if "Partition" in col:
        text["partition"] = np.array(part_values, dtype=object)[part_codes]
    report = SacctReport(where, n_read, len(rows), dropped, changed, notes)
    base = os.path.basename(where)
    for suffix in (".gz", ".txt", ".psv", ".sacct", ".csv"):
        base = base.removesuffix(suffix)
    header = SlurmHeader(
        name=name or base, path=where, unix_start_time=int(t0),
        fields={"Format": "Slurm sacct -P", "JobIdSource": id_source}, partitions=partitions,
        source=SourceText(line_no, text), report=report)
    return JobTable(cols, header), report


# -- recognising the format -----------------------------------------------------------------------


def is_sacct_header(line: str) -> bool:
    """Whether a first line is a '|'-separated header naming a job id column and another of
    sacct's columns."""
    if "|" not in line:
        return False
    names = {n.strip().lower() for n in line.split("|")}
    return bool(names & {"jobid", "jobidraw"}) and len(names & set(_CANON)) >= 2


def looks_like_sacct(path: str | os.PathLike) -> bool:
    """Whether the file's first non-blank line is a sacct -P header. Reads only its beginning."""
    head = _head(path)
    return head is not None and is_sacct_header(head)


def describe_first_line(line: str) -> str:
    """What a first line that is not a sacct header looks like, for error messages."""
    text = line.strip()
    tokens = text.split()
    if text.startswith(";") or (len(tokens) == 18 and all(_is_number(t) for t in tokens)):
        return "it looks like SWF, the Standard Workload Format: read it as SWF"
    if "\t" in line and {"JobID", "TimelimitRaw", "AllocCPUS"} <= set(line.split("\t")):
        return "it is HPCsim's tab-separated format: read it with read_hpcsim"
    shown = text if len(text) <= 60 else text[:57] + "..."
    return f"its first line is {shown!r}"


def _head(path) -> str | None:
    import gzip
    import zlib

    try:
        with open(path, "rb") as f:
            head = f.read(2)
            f.seek(0)
            if head == b"\x1f\x8b":
                with gzip.GzipFile(fileobj=f) as g:
                    data = g.read(65536)
            else:
                data = f.read(65536)
    except (OSError, EOFError, zlib.error):
        return None
    no, line = first_line(data)
    return line if no else None


def _is_number(t: str) -> bool:
    try:
        float(t)
        return True
    except ValueError:
        return False


# -- fields ---------------------------------------------------------------------------------------


def _state_name(text: str) -> str:
    words = text.split()
    return words[0].rstrip("+").upper() if words else ""


def _counts(c: Column) -> np.ndarray:
    """A column of whole non-negative numbers (NNodes, NCPUS, ElapsedRaw)."""
    def slow(t: str, i: int) -> float:
        s = t.strip()
        if s.isdigit():
            return float(s)
        raise bad(c.fields.where, int(c.line[i]), c.name, t, "is not a whole number")
    return naturals_or(c, slow)


def _optional_numbers(c: Column) -> np.ndarray:
    """UID, GID: -1 where empty or not a number."""
    def slow(t: str, i: int) -> float:
        s = t.strip()
        return float(s) if s.isdigit() else -1.0
    return naturals_or(c, slow)


def _limits(column, col, fields: Fields, rows: np.ndarray) -> np.ndarray:
    """Each row's time limit in seconds; inf where there is none."""
    raw = None
    if "TimelimitRaw" in col:
        c = column("TimelimitRaw", rows)

        def minutes(t: str, i: int) -> float:
            s = t.strip()
            if s.lower() in NO_LIMIT_WORDS:
                return np.inf
            if s and s.replace(".", "", 1).isdigit():
                return float(s)
            raise bad(c.fields.where, int(c.line[i]), c.name, t,
                      "is not a time limit (minutes, UNLIMITED or Partition_Limit)")
        raw = naturals_or(c, minutes) * 60.0
    formatted = None
    if "Timelimit" in col:
        c = column("Timelimit", rows)

        def duration(t: str, i: int) -> float:
            s = t.strip()
            if s.lower() in NO_LIMIT_WORDS:
                return np.inf
            seconds = parse_duration(s)
            if seconds is None:
                raise bad(c.fields.where, int(c.line[i]), c.name, t,
                          "is not a time limit ([D-]HH:MM:SS, MM:SS, UNLIMITED or "
                          "Partition_Limit)")
            return seconds
        formatted = np.empty(len(rows))
        parse_by_value(c, np.arange(len(rows)), duration, formatted)
    if raw is not None and formatted is not None:
        # sacct prints both from one value: rounded to minutes, they must agree
        differ = np.flatnonzero(~((raw == formatted) | (np.isfinite(raw) & np.isfinite(formatted)
                                                        & (np.abs(raw - formatted) < 60))))
        if differ.size:
            i = int(differ[0])
            a, b = column("TimelimitRaw", rows), column("Timelimit", rows)
            raise TraceError(f"{fields.where}, line {int(fields.line[rows[i]])}: columns "
                             f"{a.name} {a.text(i)!r} (minutes) and {b.name} {b.text(i)!r} "
                             f"disagree")
    return raw if raw is not None else formatted


def parse_duration(text: str) -> float | None:
    """Seconds of a Slurm duration: ``MM``, ``MM:SS``, ``HH:MM:SS``, ``D-HH``, ``D-HH:MM``,
    ``D-HH:MM:SS`` (sbatch's forms; sacct prints ``[D-[HH:]]MM:SS``). None if it is none."""
    m = _DURATION.match(text)
    if not m:
        return None
    days, *parts = m.groups()
    nums = [int(p) for p in parts if p is not None]
    if days is not None:
        d = int(days)
        h, mi, s = (nums + [0, 0])[:3]
        if h >= 24:
            return None
    else:
        d = 0
        h, mi, s = ([0] * (3 - len(nums)) + nums) if len(nums) == 3 else \
            (0, nums[0], nums[1] if len(nums) == 2 else 0)
    if s >= 60 or (mi >= 60 and (days is not None or len(nums) == 3)):
        return None
    return float(((d * 24 + h) * 60 + mi) * 60 + s)


def _req_mem(c: Column) -> tuple[np.ndarray, np.ndarray]:
    """ReqMem: (MB, how: 0 job total, 1 per node, 2 per CPU); NaN where empty."""
    kinds = {"": 0.0, "n": 1.0, "c": 2.0}

    def parse(t: str, i: int) -> tuple[float, float]:
        if not t.strip():
            return np.nan, 0.0
        got = memory_mb(t, per_suffix=True)
        if got is None:
            raise bad(c.fields.where, int(c.line[i]), c.name, t,
                      "is not a memory size (a number with a unit K, M, G or T, and old Slurm's "
                      "n per node or c per CPU: 4000M, 16Gn, 2000Mc)")
        return got[0], kinds[got[1]]

    return _pair(c, parse)


def _tres(column, col, name: str, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(memory MB, GPUs) of a TRES column, job totals; NaN where it does not say."""
    if name not in col:
        return np.full(len(rows), np.nan), np.full(len(rows), np.nan)
    c = column(name, rows)

    def parse(t: str, i: int) -> tuple[float, float]:
        if not t.strip():
            return np.nan, np.nan
        mem, untyped, typed = np.nan, None, None
        for item in t.split(","):
            key, eq, value = item.partition("=")
            key = key.strip().lower()
            if not eq or not key:
                raise bad(c.fields.where, int(c.line[i]), c.name, t,
                          f"is not a TRES list (name=count,...): {item!r}")
            if key == "mem":
                got = memory_mb(value, per_suffix=False)
                if got is None:
                    raise bad(c.fields.where, int(c.line[i]), c.name, t,
                              f"has a memory size that is not one: mem={value}")
                mem = got[0]
            elif key == "gres/gpu" or key.startswith("gres/gpu:"):
                v = value.strip()
                if not v.isdigit():
                    raise bad(c.fields.where, int(c.line[i]), c.name, t,
                              f"has a GPU count that is not a whole number: {item}")
                if key == "gres/gpu":
                    untyped = float(v)
                else:
                    typed = (typed or 0.0) + float(v)
        gpus = untyped if untyped is not None else (typed if typed is not None else 0.0)
        return mem, gpus

    return _pair(c, parse)


def _pair(c: Column, parse) -> tuple[np.ndarray, np.ndarray]:
    """Two float columns from one parse per distinct text."""
    codes, values = c.categories()
    if not values:
        return np.zeros(0), np.zeros(0)
    _, first = np.unique(codes, return_index=True)
    pairs = np.array([parse(v, int(first[k])) for k, v in enumerate(values)], dtype=np.float64)
    return pairs[codes, 0], pairs[codes, 1]


__all__ = ["SacctReport", "describe_first_line", "is_sacct_header", "looks_like_sacct",
           "parse_duration", "read_sacct", "read_sacct_with_report"]
