"""Read Slurm accounting as operators produce it: the output of ``sacct -P`` (``--parsable2``).

    sacct -X -P -S 2024-01-01 -E 2024-02-01 --format=JobIDRaw,JobID,User,Account,Partition,QOS,\\
        Submit,Eligible,Start,End,ElapsedRaw,TimelimitRaw,NNodes,NCPUS,ReqCPUS,ReqNodes,ReqMem,\\
        ReqTRES,AllocTRES,State > jobs.txt

    jobs = read_sacct("jobs.txt")                       # every job that ran
    jobs, report = read_sacct_with_report("jobs.txt", partition="gpu")
    print(report.summary())                             # what was dropped or changed, counted

The file is one header line naming the columns (in any order, as sacct prints them; the names are
matched without regard to case), then one row per line, fields separated by ``|``; a trailing ``|``
on every line (``--parsable``) is allowed, plain or gzipped.

What each column holds is taken from Slurm's manual page of sacct, sacct(1)
(https://slurm.schedmd.com/sacct.html: the sections "Job Accounting Fields", for JobID, JobIDRaw,
ElapsedRaw, TimelimitRaw, ReqMem, ReqTRES, AllocTRES, NNodes, NCPUS, and "JOB STATE CODES"), said
here in our own words; where the manual is silent, the note says where the reading comes from. For
each column, what it holds and what this reader makes of it:

* **JobID**: the job's id as Slurm names it: ``123`` a job, ``123_4`` task 4 of array job 123,
  ``123+0`` component 0 of heterogeneous job 123 (each component is a row with its own resources;
  the components are kept as separate jobs), ``123.batch`` / ``123.extern`` / ``123.0`` a job
  *step* (a row of its own unless ``-X``, *allocations only*, is given: skipped and counted), and
  ``123_[5-10]`` the array tasks still pending as one row (skipped and counted: they never ran).
  **JobIDRaw**: the job's own number, which the manual distinguishes from JobID for array and
  heterogeneous jobs (an array task and a component have their own). The JobTable's
  numeric `job_id` is JobIDRaw where the file has it, else the JobID where all are plain numbers,
  else the job's position 1, 2, ... in submit order (`TraceHeader.fields["JobIdSource"]` says
  which); the ids as sacct prints them are in ``header.source`` (`SlurmHeader`), and
  `hpcsched trace jobs` prints them.
* **Submit**, **Start**, **End**: when the job was submitted, began and ended, as
  ``YYYY-MM-DDTHH:MM:SS`` (sacct prints the cluster's local time without a zone; it is read as UTC,
  which changes no interval); ``Unknown`` or ``None`` where there is no such time. `submit` is
  seconds since the earliest Submit kept (that instant is the header's `unix_start_time`), `wait`
  = Start - Submit. **Eligible** (when the job could first start) is not used.
* **State**: the job's state, one of the manual's job state codes (PENDING, RUNNING, COMPLETED,
  CANCELLED, FAILED, TIMEOUT, NODE_FAIL, PREEMPTED, OUT_OF_MEMORY, BOOT_FAIL, DEADLINE, ...); its
  first word counts (``CANCELLED by 1001`` is CANCELLED; a trailing ``+``, sacct's mark of a cut
  text, is dropped). A job
  that never started is dropped and counted by state: no Start (``Unknown``/``None``), no CPU
  allocated (NCPUS 0), or PENDING. A job still running when sacct ran (RUNNING, SUSPENDED,
  REQUEUED, ..., or no End) is dropped and counted: its run time is not known yet. A job cancelled
  while running, TIMEOUT, FAILED, NODE_FAIL, OUT_OF_MEMORY, PREEMPTED, ... keeps its real run time.
  The SWF `status` is 1 COMPLETED, 5 CANCELLED, 0 the failures, -1 other states.
* **ElapsedRaw**: the job's elapsed time in seconds (the manual: Elapsed, as a number of seconds):
  the `run_time` (End - Start where the file has no
  ElapsedRaw; where both are given and differ, as for a job that was suspended, ElapsedRaw is used
  and the rows are counted).
* **TimelimitRaw**: the job's time limit as a number of minutes (the manual says so; HPCsim's own
  documentation says seconds, wrongly); **Timelimit** the same as ``[D-]HH:MM:SS``,
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
  else **ReqMem**, the memory asked for, a number with a unit K, M, G, T (none: MB), to which
  Slurm before 21.08 appends ``n`` (per node: times the nodes) or ``c`` (per CPU: times NCPUS), as
  its manual of those versions says; since 21.08 sacct prints the ``mem`` count of the job's
  requested TRES, the job's total, with no suffix (read from sacct's source, which prints ReqMem
  from the request's TRES string); else ``mem=`` in **ReqTRES** (the trackable resources asked
  for). ReqTRES is read only for the jobs whose AllocTRES and ReqMem leave something unsaid.
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

Reading is columnar (`hpcsched.workload.accounting`: numpy over whole columns, a block of rows at
a time, and Python only once per distinct unusual value); `benchmarks/sacct_load.py` times it on
millions of rows (BENCHMARKS.md).
"""

from __future__ import annotations

import os
import re
from typing import Mapping

import numpy as np

from hpcsched.workload.accounting import (
    REPEATED_ID, SKIP_ARRAY_RANGE, SKIP_STEP, Column, Fields, ReadReport, SlurmHeader, SourceText,
    bad, check_format, classify_job_ids, count, head_line, instants, memory_mb, naturals_or,
    parse_by_value, read_buffer, repeated,
)
from hpcsched.workload.formats import describe, sniff, sniff_file
from hpcsched.workload.jobs import LINE, PROCS, SWF_FIELDS, JobTable
from hpcsched.workload.swf import TraceError

#: sacct's names for the columns this reader knows, matched without regard to case
KNOWN = ("JobID", "JobIDRaw", "User", "UID", "GID", "Group", "Account", "Partition", "QOS",
         "Submit", "Eligible", "Start", "End", "Elapsed", "ElapsedRaw", "Timelimit",
         "TimelimitRaw", "NNodes", "AllocNodes", "ReqNodes", "NCPUS", "AllocCPUS", "ReqCPUS",
         "ReqMem", "ReqTRES", "AllocTRES", "State")
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
UNFINISHED = "not ended when sacct ran (RUNNING, SUSPENDED, ..., or no End): run time unknown"
NO_LIMIT_UNKNOWN = "no time limit (UNLIMITED, Partition_Limit): requested time unknown, -1"
NO_LIMIT_GIVEN = "no time limit (UNLIMITED, Partition_Limit): requested time from no_limit"
CORES_ROUNDED = "NCPUS not a multiple of the node count (cores per node rounded up)"
GPUS_ROUNDED = "GPUs not a multiple of the node count (GPUs per node rounded up)"
MEMORY_ROUNDED = "memory per node not a whole MB (rounded up)"
MEMORY_ALLOCATED = "memory allocated (AllocTRES mem=) differs from ReqMem (the allocation used)"
MEMORY_FROM_REQMEM_PER_CPU = "memory per CPU (ReqMem ...c): times NCPUS"
WAIT_NEGATIVE = "Start before Submit (wait unknown, -1)"
REORDERED = "reordered by submit time"
NOTE_PAST_LIMIT = "ran past its time limit (kept as logged)"
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
                           name: str | None = None) -> tuple[JobTable, ReadReport]:
    """`read_sacct`, and the report of what was dropped or changed (also ``header.report``)."""
    where = os.fspath(path)
    data = read_buffer(where)
    check_format(data, where, "sacct")  # another format: an error saying which
    head = head_line(data)[1]
    if sniff(head) != "sacct":
        raise TraceError(f"{where}: not Slurm sacct output: its first line does not name sacct's "
                         f"columns separated by '|', as `sacct -P -X --format=JobIDRaw,JobID,"
                         f"Submit,Start,End,...` prints ({describe(head)})")
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
    # the rows are read a block at a time, every column of a block while its bytes are in the
    # processor's cache; what needs every row (numbering, order) is done on the blocks' results
    parts = [_read_block(fields.slice(a, a + BLOCK_ROWS), col, partition, no_limit)
             for a in range(0, len(fields), BLOCK_ROWS)]
    return _assemble(where, fields, col, partition, parts, name)


#: rows read at a time (about 7 MB of the issue's column set)
BLOCK_ROWS = 1 << 15


def _read_block(fields: Fields, col: dict[str, int], partition: str | None,
                no_limit: float | Mapping[str, float] | None) -> dict:
    """Steps 1-9 of the reading for some rows: what to drop and why, and every kept row's values
    (arrays, and (codes, values) for the text columns), counted in `dropped`, `changed`, `notes`."""
    where = fields.where
    out: dict = {"dropped": {}, "changed": {}, "notes": {}, "rows": 0, "partitions": [],
                 "matched": 0}
    dropped, changed, notes = out["dropped"], out["changed"], out["notes"]

    def pick(*names: str) -> str | None:
        return next((c for c in names if c in col), None)

    def column(c: str, rows: np.ndarray) -> Column:
        return fields.column(col[c], rows)

    # 1. ids: steps and pending array ranges are not jobs
    rows = np.arange(len(fields))
    id_name = pick("JobID", "JobIDRaw")
    step, array_range, kind = classify_job_ids(column(id_name, rows))
    count(dropped, SKIP_STEP, step)
    count(dropped, SKIP_ARRAY_RANGE, array_range)
    keep = ~(step | array_range)
    rows, kind = rows[keep], kind[keep]

    # 2. the partition
    if partition is not None:
        codes, values = column("Partition", rows).categories()
        out["partitions"] = values
        match = codes == values.index(partition) if partition in values else \
            np.zeros(len(rows), dtype=bool)
        count(dropped, DROP_PARTITION, ~match)
        out["matched"] = int(match.sum())
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
    out["rows"] = rows.size
    if rows.size == 0:
        return out
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
    # ReqTRES is read only where the allocation and ReqMem leave something unsaid
    tres_mem, tres_gpus = np.full(len(rows), np.nan), np.full(len(rows), np.nan)
    need = np.flatnonzero((np.isnan(alloc_mem) & np.isnan(req_mem_total)) | np.isnan(alloc_gpus))
    if need.size:
        tres_mem[need], tres_gpus[need] = _tres(column, col, "ReqTRES", rows[need])
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

    # 9. who, and the ids as the file has them
    ids = column(id_name, rows)
    values = {"line": line_no, "kind": kind, "submit": submit_abs, "wait": wait,
              "run_time": run_time, "req_time": req_time, "limit": limit, "nodes": nodes,
              "cpus": cpus, "cores_per_node": cores_per_node, "mem_per_node": mem_per_node,
              "gpus_per_node": gpus_per_node, "id_text": ids.strings().astype(str)}
    values["req_cpus"] = (_counts(column("ReqCPUS", rows))
                          if "ReqCPUS" in col and cpu_name != "ReqCPUS" else cpus)
    for c in ("UID", "GID"):
        if c in col:
            values[c] = _optional_numbers(column(c, rows))
    if "JobIDRaw" in col:
        raw = column("JobIDRaw", rows)
        values["raw_id"] = naturals_or(raw, lambda t, i: _raise(bad(
            where, int(raw.line[i]), raw.name, t, "is not a job number")))
    else:
        values["plain_id"], values["plain_ok"] = ids.naturals()
    out["values"] = values
    out["text"] = {"state": (state_codes, state_names)}
    if "Partition" in col:
        out["text"]["partition"] = (part_codes, part_values)
    for c in ("User", "UID", "Account", "QOS"):
        if c in col:
            out["text"][c.lower()] = column(c, rows).categories()
    return out


def _assemble(where: str, fields: Fields, col: dict[str, int], partition: str | None,
              parts: list[dict], name: str | None) -> tuple[JobTable, ReadReport]:
    """The blocks' rows as one table: counts summed, text columns given global codes, users and
    ids numbered, rows ordered by submit time."""
    dropped: dict[str, int] = {}
    changed: dict[str, int] = {}
    notes: dict[str, int] = {}
    for part in parts:
        for total, log in ((dropped, part["dropped"]), (changed, part["changed"]),
                           (notes, part["notes"])):
            for key, n in log.items():
                total[key] = total.get(key, 0) + n
    if partition is not None and not any(p["matched"] for p in parts):
        seen = {v for p in parts for v in p["partitions"]}
        raise TraceError(f"{where}: no job of partition {partition!r} (partitions in the "
                         f"file: {', '.join(sorted(seen)) or 'none'})")
    parts = [p for p in parts if p["rows"]]
    if not parts:
        raise TraceError(f"{where}: no job left to read ({'; '.join(dropped)})")
    text = {k: _merge([p["text"][k] for p in parts]) for k in parts[0]["text"]}
    submit_abs = np.concatenate([p["values"]["submit"] for p in parts])
    n = len(submit_abs)
    order = np.argsort(submit_abs, kind="stable")
    count(changed, REORDERED, order != np.arange(n))
    scratch = np.empty(n)

    def ordered(key: str) -> np.ndarray:
        """The blocks' values of `key` in submit order (read-only: the JobTable takes it as is)."""
        pieces = [p["values"][key] for p in parts]
        joined = np.concatenate(pieces, out=scratch) if pieces[0].dtype == np.float64 \
            else np.concatenate(pieces)
        out = joined[order]
        out.flags.writeable = False
        return out

    v = {k: ordered(k) for k in parts[0]["values"] if k not in ("id_text", "line")}
    v["submit"] = submit_abs[order]
    line_no = np.concatenate([p["values"]["line"] for p in parts])  # file order, for `source`
    id_text = np.concatenate([p["values"]["id_text"] for p in parts])
    o = order

    state_codes, state_names = text["state"]
    status = np.array([SWF_STATUS.get(s, -1) for s in state_names], dtype=np.float64)[
        state_codes[o]]
    unknown = np.full(n, -1.0)  # one read-only column of -1 serves every field sacct lacks
    unknown.flags.writeable = False
    user = unknown
    if "user" in text:  # user names numbered 1, 2, ... in sorted order
        codes, values = text["user"]
        rank = np.empty(len(values), dtype=np.float64)
        rank[np.argsort(values, kind="stable")] = np.arange(1, len(values) + 1)
        rank[[k for k, u in enumerate(values) if not u.strip()]] = -1.0
        user = rank[codes[o]]
    if "UID" in v:
        user = v["UID"]
    group = v.get("GID", unknown)

    if "raw_id" in v:
        job_id, id_source = v["raw_id"], "JobIDRaw"
    elif not v["kind"].any() and v["plain_ok"].all():
        job_id, id_source = v["plain_id"], "JobID"
    else:  # the row's position in submit order
        job_id, id_source = np.arange(1, n + 1, dtype=np.float64), "row"
    count(changed, REPEATED_ID, repeated(job_id))
    if "partition" in text:
        part_codes, part_values = text["partition"]
        partitions, part_index = tuple(part_values), part_codes[o].astype(np.float64)
    else:
        partitions, part_index = (), unknown

    t0 = float(v["submit"][0])
    cols = {f: unknown for f in SWF_FIELDS}
    cols.update(job_id=job_id, submit=v["submit"] - t0, wait=v["wait"], run_time=v["run_time"],
                alloc_procs=v["cpus"], req_procs=v["req_cpus"], req_time=v["req_time"],
                status=status, user=user, group=group, partition=part_index)
    cols[PROCS] = v["cpus"]
    cols[LINE] = line_no[o].astype(np.float64)
    for k in ("nodes", "cores_per_node", "mem_per_node", "gpus_per_node"):
        cols[k] = v[k]
    for k, column in cols.items():
        column.flags.writeable = False  # the JobTable takes read-only columns without a copy

    source = {"job_id": id_text}  # file order, found by line number
    for k, (codes, values) in text.items():
        if k != "uid" or "user" not in text:
            source["user" if k == "uid" else k] = np.array(values, dtype=object)[codes]
    source["state"] = np.array(state_names, dtype=object)[state_codes]
    report = ReadReport(where, len(fields), n, dropped, changed, notes)
    base = os.path.basename(where)
    for suffix in (".gz", ".txt", ".psv", ".sacct", ".csv"):
        base = base.removesuffix(suffix)
    header = SlurmHeader(
        name=name or base, path=where, unix_start_time=int(t0),
        fields={"Format": "Slurm sacct -P", "JobIdSource": id_source}, partitions=partitions,
        source=SourceText(line_no, source), report=report)
    return JobTable(cols, header), report


def _merge(pieces: list[tuple[np.ndarray, list[str]]]) -> tuple[np.ndarray, list[str]]:
    """(codes, values) of several blocks as one: values in the order they first appear."""
    index: dict[str, int] = {}
    codes = []
    for block_codes, block_values in pieces:
        remap = np.array([index.setdefault(x, len(index)) for x in block_values], dtype=np.int64)
        codes.append(remap[block_codes] if len(block_values) else block_codes)
    return np.concatenate(codes), list(index)


def _raise(exc: Exception):
    raise exc


# -- recognising the format -----------------------------------------------------------------------


def looks_like_sacct(path: str | os.PathLike) -> bool:
    """Whether the file's first non-blank line is a sacct -P header (a '|'-separated line naming
    JobID or JobIDRaw and another of sacct's columns). Reads only the file's beginning."""
    return sniff_file(path) == "sacct"


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


__all__ = ["looks_like_sacct",
           "parse_duration", "read_sacct", "read_sacct_with_report"]
