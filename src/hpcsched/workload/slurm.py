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
  unit (MB), case-insensitive, converted as ``int(value * unit)`` MB. Any other suffix (Slurm's old
  per-CPU ``4000Mc`` and per-node ``4000Mn``) is an error: HPCsim crashes on it;
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
"""

from __future__ import annotations

import datetime as dt
import os
import re
from dataclasses import dataclass, field

import numpy as np

from hpcsched.workload.jobs import LINE, PROCS, SWF_FIELDS, JobTable, TraceHeader
from hpcsched.workload.swf import _LARGEST, TraceError, _read_bytes

#: Columns without which the schedule cannot be known.
REQUIRED: tuple[str, ...] = (
    "JobID", "AllocCPUS", "AllocNodes", "Allgpu", "Allmem", "ReqCPUS", "ReqNodes", "Reqgpu",
    "ReqMem", "TimelimitRaw", "AdminComment", "ElapsedRaw", "Submit",
)
#: Header names that identify a file of this format (see `looks_like_hpcsim`).
SIGNATURE: tuple[str, ...] = ("JobID", "TimelimitRaw", "AdminComment", "AllocCPUS", "Submit")

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

_MEMORY_UNITS = {"K": 1.0 / 1024, "M": 1.0, "G": 1024.0, "T": 1024.0 * 1024}
_NUMBER = re.compile(r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$")
_NUMBER_CHARS = frozenset("0123456789.+-eE")
_ISO = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$")
_GPU = re.compile(r"gpu:[^:]+:(\d+(-\d+)?|\(IDX:\d+(-\d+)?\))")
_STATUS = {"COMPLETED": 1, "CANCELLED": 5, "FAILED": 0, "TIMEOUT": 0, "NODE_FAIL": 0,
           "OUT_OF_MEMORY": 0, "PREEMPTED": 0, "BOOT_FAIL": 0, "DEADLINE": 0}


@dataclass(frozen=True)
class HpcsimReport:
    """What reading did: rows read and kept, rows dropped by reason, values changed by rule.

    `dropped` and `changed` leave out what did not happen. `unbalanced_lines` are the file's line
    numbers of the rows dropped for their AdminComment.
    """

    path: str
    rows_read: int
    rows_kept: int
    dropped: dict[str, int] = field(default_factory=dict)
    changed: dict[str, int] = field(default_factory=dict)
    unbalanced_lines: tuple[int, ...] = ()

    def summary(self) -> str:
        """One line for a human: "2000 jobs read, 2000 kept; run time capped at the time limit: 164"."""
        parts = [f"{self.rows_read} jobs read, {self.rows_kept} kept"]
        parts += [f"dropped, {reason}: {n}" for reason, n in self.dropped.items()]
        parts += [f"{rule}: {n}" for rule, n in self.changed.items()]
        return "; ".join(parts)


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
    """`read_hpcsim`, and the report of what was dropped or changed."""
    where = os.fspath(path)
    text = _decode(_read_bytes(where), where)
    header_no, columns, rows, line_no = _split(text, where)
    col = {c: i for i, c in enumerate(columns)}
    missing = [c for c in REQUIRED + (("Partition",) if partition is not None else ())
               if c not in col]
    if missing:
        raise TraceError(f"{where}: not an HPCsim trace, or one without the column(s) "
                         f"{', '.join(missing)} (header on line {header_no})")

    def column(c: str) -> list[str]:
        i = col[c]
        return [r[i] for r in rows]

    n_read = len(rows)
    dropped: dict[str, int] = {}
    changed: dict[str, int] = {}

    # 1. the partition filter, first: rows of other partitions are not checked further
    partitions_raw = column("Partition") if "Partition" in col else None
    if partition is not None:
        keep = [p == partition for p in partitions_raw]
        n_other = n_read - sum(keep)
        if n_other:
            dropped[DROP_PARTITION] = n_other
        rows = [r for r, k in zip(rows, keep) if k]
        line_no = line_no[np.asarray(keep, dtype=bool)] if n_read else line_no
        partitions_raw = [partition] * len(rows)
        if not rows:
            raise TraceError(f"{where}: no job of partition {partition!r} "
                             f"(partitions in the file: {', '.join(sorted(set(column('Partition'))))})")

    def values(c: str) -> list[str]:
        i = col[c]
        return [r[i] for r in rows]

    # 2. job ids: numbers only, for now
    ids = values("JobID")
    _check_job_ids(ids, line_no, where)
    job_id = _numbers(ids, "JobID", line_no, where)

    # 3. the request: Alloc* wins where it differs from Req*
    counts = {}
    for c in ("AllocCPUS", "AllocNodes", "Allgpu"):
        counts[c] = _numbers(values(c), c, line_no, where, whole=True, nonnegative=True)
    mem_alloc = _memory(values("Allmem"), "Allmem", line_no, where)
    mem_req = _memory(values("ReqMem"), "ReqMem", line_no, where)
    differs = mem_req != mem_alloc
    for req, alloc in (("ReqCPUS", "AllocCPUS"), ("ReqNodes", "AllocNodes"), ("Reqgpu", "Allgpu")):
        r = _numbers(values(req), req, line_no, where, allow_empty=True)
        differs |= ~(r == counts[alloc])  # an empty Req* (NaN) differs too, as in pandas
    cores, nodes, gpus = counts["AllocCPUS"], counts["AllocNodes"], counts["Allgpu"]
    low = np.flatnonzero(nodes < 1)
    if low.size:
        i = int(low[0])
        raise TraceError(f"{where}, line {int(line_no[i])}: AllocNodes {values('AllocNodes')[i]!r}: a "
                         f"job needs at least 1 node ({low.size} such row(s))")
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
    limit_min = _numbers(values("TimelimitRaw"), "TimelimitRaw", line_no, where, nonnegative=True)
    req_time = np.trunc(limit_min * 60)
    elapsed = _numbers(values("ElapsedRaw"), "ElapsedRaw", line_no, where, nonnegative=True)
    run_time = np.minimum(elapsed, req_time)
    changes[CAP_RULE] = elapsed > req_time
    changes[ZERO_LIMIT] = req_time == 0
    submit_abs = _datetimes(values("Submit"), "Submit", line_no, where)

    # 5. AdminComment: HPCsim schedules only balanced jobs
    balanced = _admin_comments(values("AdminComment"), line_no, where)
    bad = np.flatnonzero(~balanced)
    if bad.size and not drop_unbalanced:
        shown = ", ".join(f"line {int(line_no[i])} (job {ids[i]})" for i in bad[:10])
        more = f" and {bad.size - 10} more" if bad.size > 10 else ""
        raise TraceError(
            f"{where}: {bad.size} job(s) whose AdminComment gives their nodes unequal CPU counts, or "
            f"no node at all; HPCsim cannot schedule them (it crashes): {shown}{more}. "
            f"Pass drop_unbalanced=True to drop them (counted)")

    # 6. optional columns
    n = len(rows)
    uid = _optional_numbers(values, col, "UID", line_no, where, n)
    gid = _optional_numbers(values, col, "GID", line_no, where, n)
    if "Start" in col:
        start_abs = _datetimes(values("Start"), "Start", line_no, where, strict=False)
        wait = np.where(np.isnan(start_abs), -1.0, start_abs - submit_abs)
        changes[WAIT_UNKNOWN] = np.isnan(start_abs)
    else:
        wait = np.full(n, -1.0)
    if "State" in col:
        status = np.array([_STATUS.get(s.split(" ")[0].upper(), -1) for s in values("State")],
                          dtype=np.float64)
    else:
        status = np.full(n, -1.0)
    names: list[str] = []
    part_index = np.full(n, -1.0)
    if partitions_raw is not None:
        lookup: dict[str, int] = {}
        for i, p in enumerate(partitions_raw):
            if p not in lookup:
                lookup[p] = len(names)
                names.append(p)
            part_index[i] = lookup[p]

    # 7. drop the unbalanced, order by (submit, row), HPCsim's clock
    keep = balanced
    if bad.size:
        dropped[DROP_UNBALANCED] = int(bad.size)
    _, first = np.unique(job_id[keep], return_index=True)
    repeated = np.ones(int(keep.sum()), dtype=bool)
    repeated[first] = False
    changes[REPEATED_ID] = np.zeros(n, dtype=bool)
    changes[REPEATED_ID][np.flatnonzero(keep)[repeated]] = True
    for rule, mask in changes.items():
        _count(changed, rule, mask & keep)
    order = np.flatnonzero(keep)
    order = order[np.argsort(submit_abs[order], kind="stable")]
    _count(changed, REORDERED, order != np.flatnonzero(keep))
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
    header = TraceHeader(name=name or base, path=where, unix_start_time=int(t0),
                         fields={"Format": "HPCsim (tab-separated Slurm accounting)"},
                         partitions=tuple(names))
    report = HpcsimReport(where, n_read, int(order.size), dropped, changed,
                          tuple(int(line_no[i]) for i in bad))
    return JobTable(cols, header), report


def looks_like_hpcsim(path: str | os.PathLike) -> bool:
    """Whether the file's first non-blank line is a tab-separated header naming HPCsim's columns
    (JobID, TimelimitRaw, AdminComment, AllocCPUS, Submit). Reads only the file's beginning."""
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
        return False
    for line in data.split(b"\n"):
        if line.strip():
            names = set(line.rstrip(b"\r").decode("utf-8", "replace").split("\t"))
            return all(s in names for s in SIGNATURE)
    return False


# -- helpers -------------------------------------------------------------------------------------


def _decode(data: bytes, where: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise TraceError(f"{where}, line {line}: not UTF-8 text") from None


def _split(text: str, where: str) -> tuple[int, list[str], list[list[str]], np.ndarray]:
    """Header line number, column names, rows of fields, and each row's 1-based line number.
    Blank lines are skipped (pandas does too) but counted."""
    lines = text.split("\n")
    header_no = 0
    columns: list[str] = []
    rows: list[list[str]] = []
    numbers: list[int] = []
    for no, raw in enumerate(lines, start=1):
        line = raw[:-1] if raw.endswith("\r") else raw
        if not line.strip():
            continue
        fields = line.split("\t")
        if not header_no:
            header_no, columns = no, fields
            dup = sorted({c for c in columns if columns.count(c) > 1})
            if dup:
                raise TraceError(f"{where}, line {no}: column(s) {', '.join(dup)} named twice")
            if len(columns) < 2:
                raise TraceError(f"{where}, line {no}: not an HPCsim trace (its first line is not "
                                 f"a tab-separated header naming {', '.join(SIGNATURE)}, ...)")
            continue
        if len(fields) != len(columns):
            raise TraceError(f"{where}, line {no}: {len(fields)} tab-separated fields, the header "
                             f"(line {header_no}) names {len(columns)}")
        rows.append(fields)
        numbers.append(no)
    if not header_no:
        raise TraceError(f"{where}: empty file")
    if not rows:
        raise TraceError(f"{where}: a header and no job")
    return header_no, columns, rows, np.asarray(numbers, dtype=np.int64)


def _bad(where: str, line: int, column: str, value: str, why: str) -> TraceError:
    return TraceError(f"{where}, line {line}, column {column}: {value!r} {why}")


def _numbers(texts: list[str], column: str, line_no: np.ndarray, where: str, *,
             whole: bool = False, nonnegative: bool = False, allow_empty: bool = False) -> np.ndarray:
    """A column of decimal numbers as float64 (an empty cell is NaN where `allow_empty`)."""
    texts = [t.strip() for t in texts]
    if not set("".join(texts)) <= _NUMBER_CHARS or not all(texts):
        for i, t in enumerate(texts):
            if not _NUMBER.match(t) and not (allow_empty and t == ""):
                raise _bad(where, int(line_no[i]), column, t, "is not a number")
    out = np.array([float(t) if t else np.nan for t in texts], dtype=np.float64)
    checks = [(~(np.abs(out) <= _LARGEST), f"is too large (at most {_LARGEST})")]
    if whole:
        checks.append((out != np.trunc(out), "is not a whole number"))
    if nonnegative:
        checks.append((out < 0, "is negative"))
    for wrong, why in checks:
        wrong &= ~np.isnan(out)
        if wrong.any():
            i = int(np.flatnonzero(wrong)[0])
            raise _bad(where, int(line_no[i]), column, texts[i], why)
    return out


def _optional_numbers(values, col, column, line_no, where, n) -> np.ndarray:
    """A column the schedule does not depend on (UID, GID): -1 where absent, empty, not a number
    or too large to be an id (beyond 2^53 - 1)."""
    if column not in col:
        return np.full(n, -1.0)
    out = np.array([float(t) if _NUMBER.match(t := raw.strip()) else -1.0
                    for raw in values(column)], dtype=np.float64)
    out[~(np.abs(out) <= _LARGEST)] = -1.0
    return out


def _memory(texts: list[str], column: str, line_no: np.ndarray, where: str) -> np.ndarray:
    """HPCsim's convert_to_mb: the last character is the unit (K, M, G, T; none = MB), the rest a
    number; the result is int(value * unit) MB."""
    cache: dict[str, float] = {}
    out = np.empty(len(texts), dtype=np.float64)
    for i, raw in enumerate(texts):
        mb = cache.get(raw)
        if mb is None:
            mb = _to_mb(raw)
            if mb is None:
                raise _bad(where, int(line_no[i]), column, raw,
                           "is not a memory size (a number with one of the units K, M, G, T, or "
                           "none for MB; Slurm's per-CPU/per-node suffixes such as 4000Mc or 4000Mn "
                           "are not read: HPCsim crashes on them)")
            if mb < 0:
                raise _bad(where, int(line_no[i]), column, raw, "is negative")
            if mb > _LARGEST:
                raise _bad(where, int(line_no[i]), column, raw, "is too large")
            cache[raw] = mb
        out[i] = mb
    return out


def _to_mb(raw: str) -> float | None:
    text = raw.strip().upper()
    if not text:
        return None
    unit = text[-1]
    try:
        if unit.isdigit():
            return float(int(text)) if text.lstrip("+-").isdigit() else None
        number = text[:-1].strip()
        if unit not in _MEMORY_UNITS or not _NUMBER.match(number):
            return None
        return float(int(float(number) * _MEMORY_UNITS[unit]))
    except OverflowError:  # beyond float64 (or an infinity): too large, which the caller says
        return float("inf")


def _datetimes(texts: list[str], column: str, line_no: np.ndarray, where: str, *,
               strict: bool = True) -> np.ndarray:
    """Seconds since 1970-01-01 (the text read as UTC) as float64; NaN where unreadable unless
    `strict`, which raises naming the line."""
    out = np.full(len(texts), np.nan)
    fast = np.array([bool(_ISO.match(t)) for t in texts], dtype=bool)
    if fast.any():
        stamps = np.array([t for t, f in zip(texts, fast) if f], dtype="datetime64[s]")
        out[fast] = stamps.astype(np.int64).astype(np.float64)
    for i in np.flatnonzero(~fast):
        t = texts[i].strip()
        value = None
        for parse in (lambda s: dt.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S"),
                      dt.datetime.fromisoformat):
            try:
                value = parse(t)
                break
            except ValueError:
                continue
        if value is None or value.microsecond:
            if strict:
                why = ("has a fraction of a second (HPCsim's clock is whole seconds)" if value
                       else "is not a date and time (YYYY-MM-DDTHH:MM:SS)")
                raise _bad(where, int(line_no[i]), column, texts[i], why)
            continue
        if value.tzinfo is not None:
            value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
        out[i] = (value - dt.datetime(1970, 1, 1)).total_seconds()
    return out


def _admin_comments(texts: list[str], line_no: np.ndarray, where: str) -> np.ndarray:
    """Whether each AdminComment gives every node the same CPU count (HPCsim's `balanced`)."""
    cache: dict[str, bool] = {}
    out = np.empty(len(texts), dtype=bool)
    for i, text in enumerate(texts):
        ok = cache.get(text)
        if ok is None:
            try:
                counts = _cpu_counts(text)
            except ValueError as exc:
                raise _bad(where, int(line_no[i]), "AdminComment", text,
                           f"cannot be read ({exc}; HPCsim crashes on it)") from None
            ok = len(set(counts)) == 1
            cache[text] = ok
        out[i] = ok
    return out


def _cpu_counts(text: str) -> list[int]:
    """CPU count per distinct host of `|host|0-3,8|gres|;` entries (a later entry for a host
    replaces an earlier one, as HPCsim's dict does). Raises ValueError where HPCsim crashes."""
    per_host: dict[str, int] = {}
    for entry in text.split(";")[:-1]:
        parts = entry.split("|")[1:-1]
        if len(parts) < 2:
            raise ValueError(f"entry {entry!r} is not |host|cpus|...|")
        count = 0
        for item in parts[1].split(","):
            if "-" in item:
                lo, hi = item.split("-", 1)
                count += int(hi) - int(lo) + 1  # int() raises on what HPCsim's int() does
            else:
                count += 1
        if len(parts) > 2:
            m = _GPU.search(parts[2])
            if m and m.group(1).startswith("("):
                raise ValueError(f"gres {parts[2]!r} in the (IDX:...) form")
        per_host[parts[0]] = count
    return list(per_host.values())


def _check_job_ids(ids: list[str], line_no: np.ndarray, where: str) -> None:
    odd = [i for i, t in enumerate(ids) if not t.strip().isdigit()]
    if not odd:
        return
    kinds = []
    for i in odd[:5]:
        t = ids[i]
        kind = ("an array task" if "_" in t else "a heterogeneous-job component" if "+" in t
                else "a job step" if "." in t else "not a number")
        kinds.append(f"line {int(line_no[i])}: {t!r} ({kind})")
    more = f" and {len(odd) - 5} more" if len(odd) > 5 else ""
    raise TraceError(f"{where}: {len(odd)} JobID(s) that are not plain job numbers, which this "
                     f"reader does not take yet: {'; '.join(kinds)}{more}")


def _count(log: dict[str, int], rule: str, mask: np.ndarray) -> None:
    n = int(np.count_nonzero(mask))
    if n:
        log[rule] = n


__all__ = ["HpcsimReport", "REQUIRED", "looks_like_hpcsim", "read_hpcsim",
           "read_hpcsim_with_report"]
