"""Slurm accounting text read column by column: what the sacct reader (`hpcsched.workload.sacct`)
and HPCsim's reader (`hpcsched.workload.slurm`) share.

A file is one header line naming the columns, then one row per line, fields separated by one
character (``|`` for ``sacct -P``, a tab for HPCsim's traces). `Fields` finds every field's bytes
with numpy (no Python object per row), and the parsers below turn a column into numbers, instants or
category codes the same way: a vectorised pass over the values of the common form, and Python only
for the few *distinct* other values (``Unknown``, ``UNLIMITED``, ``4000Mc``, a TRES string), so a
few million rows read in seconds.

The rules both readers share, too:

* job ids (`classify_job_ids`): ``123`` a job, ``123_4`` an array task, ``123+0`` a heterogeneous
  job's component (all three kept); ``123.batch``, ``123.extern``, ``123.0`` rows of job steps and
  ``123_[5-10]`` a pending array's unstarted tasks (both skipped and counted);
* the numeric `job_id` a JobTable holds (`numeric_job_ids`): the JobIDRaw column where there is one,
  else the JobID where every kept one is a plain number, else the row's position (1, 2, ...) in
  submit order; the ids as the source names them are in the header's `source` (`SlurmHeader`);
* memory sizes (`memory_mb`): a number and a unit K, M, G, T (P) (1/1024, 1, 1024, 1024**2 MB), or
  none (MB);
* instants ``YYYY-MM-DDTHH:MM:SS`` read as UTC seconds, ``Unknown`` / ``None`` / empty unknown.

Every error is a `TraceError` naming the file, and the line, column and value where there is one.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np
from numpy.lib.stride_tricks import as_strided

from hpcsched.workload.jobs import TraceHeader
from hpcsched.workload.swf import TraceError

MEMORY_UNITS = {"K": 1.0 / 1024, "M": 1.0, "G": 1024.0, "T": 1024.0 ** 2, "P": 1024.0 ** 3}
NUMBER = re.compile(r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$")
UNKNOWN_TIMES = frozenset({"", "unknown", "none"})

# what the reports call the rows the id rules skip
SKIP_STEP = "job step rows (123.batch, 123.extern, 123.0)"
SKIP_ARRAY_RANGE = "pending array ranges (123_[5-10]: tasks never started)"
REPEATED_ID = "job id repeated"

_DIGIT0, _DIGIT9 = ord("0"), ord("9")


def bad(where: str, line: int, column: str, value: str, why: str) -> TraceError:
    """The error for one bad field: file, line, column, value and why."""
    return TraceError(f"{where}, line {line}, column {column}: {value!r} {why}")


def decode(data: bytes, where: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise TraceError(f"{where}, line {line}: not UTF-8 text") from None


def first_line(data: bytes) -> tuple[int, str]:
    """The first non-blank line (1-based number, text without its line end); (0, "") if none."""
    pos, no = 0, 1
    while pos < len(data):
        end = data.find(b"\n", pos)
        end = len(data) if end < 0 else end
        text = data[pos:end].rstrip(b"\r").decode("utf-8", "replace")
        if text.strip():
            return no, text
        pos, no = end + 1, no + 1
    return 0, ""


# -- the fields of a delimited file ---------------------------------------------------------------


class Fields:
    """A delimited file's header and the byte span of every field, found with numpy.

    `columns` are the header's names; `line` the 1-based line number of each row. Blank (and
    whitespace-only) lines are skipped. A row must have one field per column; a row ending with an
    extra separator (``sacct --parsable``) is read as if it had none.
    """

    def __init__(self, data: bytes, sep: str, where: str, what: str) -> None:
        self.where = where
        if b"\r" in data:
            data = data.replace(b"\r\n", b"\n")
        self.data = data
        buf = np.frombuffer(data, dtype=np.uint8)
        self.buf = buf
        sep_byte = ord(sep)
        sep_name = "tab" if sep == "\t" else repr(sep)
        newlines = np.flatnonzero(buf == ord("\n"))
        ends = newlines if data.endswith(b"\n") else np.append(newlines, len(buf))
        starts = np.concatenate(([0], newlines + 1))[: len(ends)]
        nonblank = np.flatnonzero(ends > starts)
        header = None
        for i in nonblank:  # the header: the first line with anything but blanks on it
            text = decode(data[starts[i]:ends[i]], where)
            if text.strip():
                header = int(i)
                break
        if header is None:
            raise TraceError(f"{where}: empty file")
        self.header_line = header + 1
        names = text.split(sep)
        self.trailing = len(names) > 1 and names[-1] == ""
        if self.trailing:
            names = names[:-1]
        self.columns = [n.strip() for n in names]
        dup = sorted({c for c in self.columns if self.columns.count(c) > 1})
        if dup:
            raise TraceError(f"{where}, line {self.header_line}: column(s) {', '.join(dup)} "
                             f"named twice")
        ncols = len(self.columns)
        rows = nonblank[nonblank > header]
        starts, ends = starts[rows], ends[rows]
        delims = np.flatnonzero(buf == sep_byte)
        first = np.searchsorted(delims, starts)
        count = np.searchsorted(delims, ends) - first
        last_is_sep = np.zeros(len(rows), dtype=bool)
        if len(rows):
            last_is_sep = buf[ends - 1] == sep_byte
        ok = (count == ncols - 1) | ((count == ncols) & last_is_sep)
        if not ok.all():
            keep = np.ones(len(rows), dtype=bool)
            for i in np.flatnonzero(~ok):
                if not data[starts[i]:ends[i]].strip():
                    keep[i] = False  # whitespace only: blank
                    continue
                raise TraceError(f"{where}, line {int(rows[i]) + 1}: {int(count[i]) + 1} "
                                 f"{sep_name}-separated fields, the header (line "
                                 f"{self.header_line}) names {ncols} ({what})")
            rows, starts, ends, first, count = (a[keep] for a in (rows, starts, ends, first, count))
        self.line = rows.astype(np.int64) + 1
        self._starts, self._ends, self._first, self._count = starts, ends, first, count
        self._delims = delims

    def __len__(self) -> int:
        return len(self.line)

    def span(self, j: int) -> tuple[np.ndarray, np.ndarray]:
        """Start and end byte offsets of column `j` in every row."""
        if j == 0:
            begin = self._starts
        else:
            begin = self._delims[self._first + j - 1] + 1
        if j < len(self.columns) - 1:
            end = self._delims[self._first + j]
        else:
            # the last field ends at the line's end, or at a trailing separator
            at = np.minimum(self._first + j, max(len(self._delims) - 1, 0))
            end = np.where(self._count > j, self._delims[at] if len(self._delims) else 0,
                           self._ends)
        return begin, end

    def column(self, j: int, rows: np.ndarray | None = None) -> "Column":
        begin, end = self.span(j)
        line = self.line
        if rows is not None:
            begin, end, line = begin[rows], end[rows], line[rows]
        return Column(self, self.columns[j], begin, end, line)


class Column:
    """One column's fields (of some rows): byte spans into the file, and the rows' line numbers."""

    def __init__(self, fields: Fields, name: str, begin: np.ndarray, end: np.ndarray,
                 line: np.ndarray) -> None:
        self.fields, self.name, self.begin, self.end, self.line = fields, name, begin, end, line
        self.length = end - begin

    def __len__(self) -> int:
        return len(self.begin)

    def take(self, rows: np.ndarray) -> "Column":
        return Column(self.fields, self.name, self.begin[rows], self.end[rows], self.line[rows])

    def text(self, i: int) -> str:
        return self.fields.data[int(self.begin[i]):int(self.end[i])].decode("utf-8", "replace")

    def matrix(self, width: int | None = None, *, multiple: int = 1) -> np.ndarray:
        """(n, w) uint8: each field's bytes, left-aligned, 0 past its end (cut at `width`; w
        rounded up to a `multiple`). Filled a block of rows at a time, each row from consecutive
        bytes of the file."""
        n = len(self)
        w = int(self.length.max()) if n else 0
        w = w if width is None else min(w, width)
        w = -(-w // multiple) * multiple
        if w == 0 or n == 0:
            return np.empty((n, w), dtype=np.uint8)
        buf = self.fields.buf
        last = len(buf) - w  # the last offset a whole window of w bytes starts at
        whole = self.begin <= last
        if whole.all():
            out = as_strided(buf, shape=(last + 1, w), strides=(1, 1), writeable=False)[self.begin]
        else:  # the file's last few fields: a window would run past its end
            out = np.zeros((n, w), dtype=np.uint8)
            if last >= 0:
                window = as_strided(buf, shape=(last + 1, w), strides=(1, 1), writeable=False)
                out[whole] = window[self.begin[whole]]
            part = np.flatnonzero(~whole)
            out[part] = np.take(buf, self.begin[part, None] + np.arange(w), mode="clip")
        # zero every byte past its field's end: AND with a row of 0xff..00 chosen by length
        keep = (np.arange(w)[None, :] < np.arange(w + 1)[:, None]).astype(np.uint8) * 255
        length = np.minimum(self.length, w)
        step = max(1, 8_000_000 // w)
        for a in range(0, n, step):
            out[a:a + step] &= keep[length[a:a + step]]
        return out

    def strings(self) -> np.ndarray:
        """The fields as a numpy bytes array (dtype S)."""
        m = self.matrix()
        if m.shape[1] == 0:
            return np.zeros(len(self), dtype="S1")
        return m.view(f"S{m.shape[1]}").ravel()

    def texts(self) -> list[str]:
        """The fields as Python strings (for small files and slow paths only)."""
        data = self.fields.data
        return [data[b:e].decode("utf-8", "replace")
                for b, e in zip(self.begin.tolist(), self.end.tolist())]

    def categories(self) -> tuple[np.ndarray, list[str]]:
        """(codes, values): each field as an index into its column's distinct values.

        The distinct values are found by a vectorised hash of the bytes, checked for collisions,
        so the cost is a few passes over the column, not a Python object per row."""
        n = len(self)
        if n == 0:
            return np.zeros(0, dtype=np.int64), []
        if int(self.length.max()) > 512:  # absurdly wide fields: let numpy sort the strings
            return self._categories_by_sort()
        words = self.matrix(multiple=8).view(np.uint64)  # 8 bytes a step
        h = self.length.astype(np.uint64) + np.uint64(1469598103934665603)
        prime = np.uint64(1099511628211)
        with np.errstate(over="ignore"):
            for k in range(words.shape[1]):
                h ^= words[:, k]
                h *= prime
                h ^= h >> np.uint64(29)
        codes = _group(h)
        first = first_rows(codes)
        rep = first[codes]
        if not (np.array_equal(words, words[rep]) and np.array_equal(self.length, self.length[rep])):
            return self._categories_by_sort()
        data = self.fields.data
        values = [data[int(self.begin[i]):int(self.end[i])].decode("utf-8", "replace")
                  for i in first]
        return codes.astype(np.int64), values

    def _categories_by_sort(self) -> tuple[np.ndarray, list[str]]:
        uniq, codes = np.unique(self.strings(), return_inverse=True)
        return codes.astype(np.int64), [u.decode("utf-8", "replace") for u in uniq]

    def naturals(self) -> tuple[np.ndarray, np.ndarray]:
        """(values float64, ok bool): the fields that are plain digits (at most 15), as numbers;
        NaN and False elsewhere."""
        n = len(self)
        m = self.matrix(16)
        ok = (self.length > 0) & (self.length <= 15)
        value = np.zeros(n, dtype=np.int64)
        for k in range(m.shape[1]):
            inside = self.length > k
            d = m[:, k].astype(np.int64) - _DIGIT0
            ok &= ((d >= 0) & (d <= 9)) | ~inside
            value = np.where(inside, value * 10 + d, value)
        return np.where(ok, value.astype(np.float64), np.nan), ok


# -- parsers -------------------------------------------------------------------------------------


def _group(h: np.ndarray) -> np.ndarray:
    """Codes 0..k-1 of equal values of `h` (uint64): a sorted sample of the distinct values, the
    others added as they are met, then a binary search per row; O(n log k), not a sort of n."""
    sample = np.unique(h[:: max(1, len(h) // 4096)])
    at = np.minimum(np.searchsorted(sample, h), len(sample) - 1)
    missed = sample[at] != h
    if missed.any():
        sample = np.union1d(sample, h[missed])
        at = np.searchsorted(sample, h)
    used = np.zeros(len(sample), dtype=bool)
    used[at] = True
    if used.all():
        return at.astype(np.int64)
    return (np.cumsum(used) - 1)[at].astype(np.int64)


def first_rows(codes: np.ndarray) -> np.ndarray:
    """The first row of each code 0..k-1."""
    k = int(codes.max()) + 1 if len(codes) else 0
    first = np.full(k, len(codes), dtype=np.int64)
    np.minimum.at(first, codes, np.arange(len(codes), dtype=np.int64))
    return first


def parse_by_value(col: Column, rows: np.ndarray, parse, out: np.ndarray) -> None:
    """Fill `out[rows]` with `parse(text, i)` computed once per distinct text of those rows; `parse`
    gets the text and the index (into `col`) of its first row, for error messages."""
    if rows.size == 0:
        return
    sub = col.take(rows)
    codes, values = sub.categories()
    first = first_rows(codes)
    parsed = np.array([parse(v, int(rows[first[k]])) for k, v in enumerate(values)],
                      dtype=np.float64)
    out[rows] = parsed[codes]


def naturals_or(col: Column, slow) -> np.ndarray:
    """A numeric column: plain digits vectorised, every other distinct text through `slow(text, i)`
    (which returns a float or raises)."""
    out, ok = col.naturals()
    parse_by_value(col, np.flatnonzero(~ok), slow, out)
    return out


_DAYS = np.array([31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31], dtype=np.int64)
_ISO_SEPARATORS = {4: ord("-"), 7: ord("-"), 10: ord("T"), 13: ord(":"), 16: ord(":")}


def instants(col: Column, *, unknown: bool, garbage: bool = False,
             fraction_why: str = "has a fraction of a second") -> np.ndarray:
    """UTC seconds since 1970 (float64) of ``YYYY-MM-DDTHH:MM:SS`` fields (vectorised), and of any
    other ISO 8601 form (one Python parse per distinct text). ``Unknown``, ``None`` and empty fields
    are NaN where `unknown` allows them, and any other unreadable text where `garbage` does;
    otherwise they are an error naming the line."""
    n = len(col)
    out = np.full(n, np.nan)
    if n == 0:
        return out
    m = col.matrix(19).T  # position-major view
    fast = col.length == 19
    if m.shape[0] == 19:
        for k in range(19):
            if k in _ISO_SEPARATORS:
                fast &= m[k] == _ISO_SEPARATORS[k]
            else:
                fast &= (m[k] >= _DIGIT0) & (m[k] <= _DIGIT9)

        def num(a: int, b: int) -> np.ndarray:
            v = np.zeros(n, dtype=np.int64)
            for k in range(a, b):
                v = v * 10 + m[k] - _DIGIT0
            return v

        y, mo, day = num(0, 4), num(5, 7), num(8, 10)
        hh, mi, ss = num(11, 13), num(14, 16), num(17, 19)
        leap = (y % 4 == 0) & ((y % 100 != 0) | (y % 400 == 0))
        month_ok = (mo >= 1) & (mo <= 12)
        length = _DAYS[np.clip(mo - 1, 0, 11)] + (leap & (mo == 2))
        fast &= month_ok & (day >= 1) & (day <= length) & (hh < 24) & (mi < 60) & (ss < 60)
        # days since 1970-01-01 (H. Hinnant's days_from_civil)
        yy = y - (mo <= 2)
        era = yy // 400
        yoe = yy - era * 400
        doy = (153 * (mo + np.where(mo > 2, -3, 9)) + 2) // 5 + day - 1
        doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
        days = era * 146097 + doe - 719468
        secs = days * 86400 + hh * 3600 + mi * 60 + ss
        out[fast] = secs[fast].astype(np.float64)

    def slow(text: str, i: int) -> float:
        t = text.strip()
        if t.lower() in UNKNOWN_TIMES and unknown:
            return np.nan
        try:
            value = dt.datetime.fromisoformat(t)
        except ValueError:
            value = None
        if value is None or value.microsecond:
            if not garbage:
                why = fraction_why if value else "is not a date and time (YYYY-MM-DDTHH:MM:SS)"
                raise bad(col.fields.where, int(col.line[i]), col.name, text, why)
            return np.nan
        if value.tzinfo is not None:
            value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
        return (value - dt.datetime(1970, 1, 1)).total_seconds()

    parse_by_value(col, np.flatnonzero(~fast), slow, out)
    return out


def memory_mb(text: str, *, per_suffix: bool) -> tuple[float, str] | None:
    """A memory size in MB and how it counts: ``"n"`` per node, ``"c"`` per CPU, ``""`` no suffix.

    A number with a unit K, M, G, T or P (none: MB), as Slurm prints it; with `per_suffix`, also
    old Slurm's per-CPU ``c`` and per-node ``n`` after the unit (``4000Mc``, ``16Gn``, ``0n``).
    None when the text is not such a size."""
    t = text.strip().upper()
    kind = ""
    if per_suffix and t[-1:] in ("C", "N"):
        kind, t = t[-1].lower(), t[:-1]
    if not t:
        return None
    unit = t[-1]
    if unit.isdigit() or unit == ".":
        number, factor = t, 1.0
    elif unit in MEMORY_UNITS:
        number, factor = t[:-1].strip(), MEMORY_UNITS[unit]
    else:
        return None
    if not NUMBER.match(number) or number.startswith(("+", "-")):
        return None
    return float(number) * factor, kind


def classify_job_ids(col: Column) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(step, array_range, kind) for a JobID column: rows of job steps (``123.batch``, any id with a
    dot), of pending array ranges (``123_[5-10]``), and for the other rows the id's kind: 0 a plain
    number, 1 an array task ``123_4``, 2 a heterogeneous job's component ``123+0``. Any other form
    is an error naming the line."""
    n = len(col)
    m = col.matrix().T  # position-major view
    w = m.shape[0]
    length = col.length
    step = np.zeros(n, dtype=bool)
    bracket = np.zeros(n, dtype=bool)
    under = np.zeros(n, dtype=bool)
    plus = np.zeros(n, dtype=bool)
    n_sep = np.zeros(n, dtype=np.int64)
    only = length > 0
    for k in range(w):
        inside = length > k
        c = m[k]
        digit = (c >= _DIGIT0) & (c <= _DIGIT9)
        u, p = c == ord("_"), c == ord("+")
        step |= c == ord(".")
        bracket |= c == ord("[")
        under |= u
        plus |= p
        n_sep += u | p
        only &= digit | u | p | ~inside
    array_range = ~step & bracket
    rest = ~(step | array_range)
    # a separator neither first nor last
    rows = np.arange(n)
    first_ok = (m[0] >= _DIGIT0) & (m[0] <= _DIGIT9) if w else np.zeros(n, dtype=bool)
    last_c = m[np.clip(length - 1, 0, max(w - 1, 0)), rows] if w else np.zeros(n, np.uint8)
    last_ok = (last_c >= _DIGIT0) & (last_c <= _DIGIT9)
    good = only & (n_sep <= 1) & first_ok & last_ok
    wrong = np.flatnonzero(rest & ~good)
    if wrong.size:
        i = int(wrong[0])
        raise bad(col.fields.where, int(col.line[i]), col.name, col.text(i),
                  "is not a Slurm job id (123, 123_4 for an array task, 123+0 for a "
                  "heterogeneous job's component, 123.batch for a step)"
                  + (f"; {wrong.size} such rows" if wrong.size > 1 else ""))
    kind = np.where(under, 1, np.where(plus, 2, 0))
    return step, array_range, kind


def numeric_job_ids(ids: Column, kind: np.ndarray, raw: Column | None) -> tuple[np.ndarray, str]:
    """The JobTable's numeric `job_id` of the kept rows (in `ids`' order) and what it is (see the
    module's docstring)."""
    if raw is not None:
        values = naturals_or(raw, lambda t, i: _raise(bad(
            raw.fields.where, int(raw.line[i]), raw.name, t, "is not a job number")))
        return values, "JobIDRaw"
    if not np.any(kind):
        values, ok = ids.naturals()
        if ok.all():
            return values, "JobID"
    return np.arange(1, len(ids) + 1, dtype=np.float64), "row"


def _raise(exc: Exception):
    raise exc


# -- the header of a table read from Slurm accounting ----------------------------------------------


@dataclass(frozen=True)
class SourceText:
    """Text the JobTable's float columns cannot hold, for the rows a reader kept: the job id as the
    source names it (``1004_2``, ``1011+0``), the user, the state, ...; one array per name, found
    by the row's line number in the file (the `line` column, which survives cleaning)."""

    lines: np.ndarray  # (n,) int64, the file line of each row
    columns: Mapping[str, np.ndarray]  # name -> (n,) array of str (dtype U or object)

    def get(self, name: str, lines: np.ndarray) -> list[str | None]:
        """The `name` text of the rows on `lines` (None where a line is not one of them or the
        column is absent)."""
        lines = np.asarray(lines, dtype=np.int64)
        values = self.columns.get(name)
        if values is None:
            return [None] * len(lines)
        order = np.argsort(self.lines, kind="stable")
        at = np.searchsorted(self.lines[order], lines)
        at = np.minimum(at, max(len(order) - 1, 0))
        found = self.lines[order][at] == lines if len(order) else np.zeros(len(lines), bool)
        picked = values[order][at] if len(order) else np.array([], dtype=object)
        return [(v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)) if f else None
                for v, f in zip(picked.tolist(), found.tolist())]


@dataclass(frozen=True)
class SlurmHeader(TraceHeader):
    """The header of a table read from Slurm accounting (sacct or HPCsim's TSV): a `TraceHeader`
    that also carries the source's text columns (`source`) and the reading report (`report`). Both
    travel with the table through `take`, cleaning and windows."""

    source: SourceText | None = field(default=None, compare=False, repr=False)
    report: object = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class ReadReport:
    """What reading did: rows read and kept, rows dropped by reason, values changed by rule.

    `dropped` and `changed` leave out what did not happen; `notes` counts facts worth knowing that
    change nothing (kept rows that ran past their limit, ...)."""

    path: str
    rows_read: int
    rows_kept: int
    dropped: dict[str, int] = field(default_factory=dict)
    changed: dict[str, int] = field(default_factory=dict)
    notes: dict[str, int] = field(default_factory=dict)

    def summary(self) -> str:
        """One line for a human: "2000 jobs read, 2000 kept; run time capped at the time limit: 164"."""
        parts = [f"{self.rows_read} jobs read, {self.rows_kept} kept"]
        parts += [f"dropped, {reason}: {n}" for reason, n in self.dropped.items()]
        parts += [f"{rule}: {n}" for rule, n in self.changed.items()]
        parts += [f"{note}: {n}" for note, n in self.notes.items()]
        return "; ".join(parts)

    def lines(self) -> list[str]:
        """The same, one item a line, for `hpcsched trace stats`."""
        out = [f"{self.path}: {self.rows_read} rows read, {self.rows_kept} jobs kept"]
        out += [f"  dropped  {n:>9}  {reason}" for reason, n in self.dropped.items()]
        out += [f"  changed  {n:>9}  {rule}" for rule, n in self.changed.items()]
        out += [f"  note     {n:>9}  {note}" for note, n in self.notes.items()]
        return out


def count(log: dict[str, int], rule: str, mask: np.ndarray) -> None:
    n = int(np.count_nonzero(mask))
    if n:
        log[rule] = log.get(rule, 0) + n


def repeated(values: np.ndarray) -> np.ndarray:
    """Which values repeat an earlier one (the first of each is not counted)."""
    rep = np.ones(len(values), dtype=bool)
    if len(values):
        _, first = np.unique(values, return_index=True)
        rep[first] = False
    return rep


__all__ = ["Column", "Fields", "ReadReport", "SlurmHeader", "SourceText", "classify_job_ids",
           "instants", "memory_mb", "numeric_job_ids"]
