"""Slurm accounting text read column by column: what the sacct reader (`hpcsched.workload.sacct`)
and HPCsim's reader (`hpcsched.workload.slurm`) share.

A file is one header line naming the columns, then one row per line, fields separated by one
character (``|`` for ``sacct -P``, a tab for HPCsim's traces). `read_buffer` loads it (gunzipped)
into one numpy byte array, `Fields` finds every line and every separator with numpy (no Python
object per row), and the parsers below turn a column into numbers, instants or category codes the
same way: a vectorised pass over the values of the common form, and Python only for the few
*distinct* other values (``Unknown``, ``UNLIMITED``, ``4000Mc``, a TRES string), so a few million
rows read in seconds. Work goes a block of rows at a time (`Fields.slice`, `Column.blocks`): every
temporary stays small, and a reader that takes all its columns of one block before the next reads
those rows' bytes while they are in the processor's cache.

The rules both readers share, too:

* job ids (`classify_job_ids`): ``123`` a job, ``123_4`` an array task, ``123+0`` a heterogeneous
  job's component (all three kept); ``123.batch``, ``123.extern``, ``123.0`` rows of job steps and
  ``123_[5-10]`` a pending array's unstarted tasks (both skipped and counted);
* memory sizes (`memory_mb`): a number and a unit K, M, G, T (P) (1/1024, 1, 1024, 1024**2 MB), or
  none (MB);
* instants ``YYYY-MM-DDTHH:MM:SS`` read as UTC seconds, ``Unknown`` / ``None`` / empty unknown.

Every error is a `TraceError` naming the file, and the line, column and value where there is one.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import zlib
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np
from numpy.lib.stride_tricks import as_strided

from hpcsched.workload.formats import NAMES, describe, first_line, sniff
from hpcsched.workload.jobs import TraceHeader
from hpcsched.workload.swf import _LARGEST, TraceError, _read_bytes

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


def read_buffer(where: str) -> np.ndarray:
    """A file's bytes, gunzipped where it is gzip, as a numpy array. numpy allocates large arrays
    so that the kernel may back them with huge pages: a file of hundreds of MB then costs a few
    hundred page faults, not a hundred thousand (which, where faults are dear, cost more than
    parsing)."""
    try:
        with open(where, "rb") as f:
            magic = f.read(2)
            f.seek(0)
            if magic != b"\x1f\x8b":
                buf = np.empty(os.fstat(f.fileno()).st_size, dtype=np.uint8)
                got = f.readinto(memoryview(buf))
                return buf[:got]
            raw = f.read()
    except OSError:
        _read_bytes(where)  # raises the TraceError that names the problem
        raise
    size = int.from_bytes(raw[-4:], "little") if len(raw) >= 18 else -1
    out = np.empty(max(size, 0), dtype=np.uint8)
    unzip = zlib.decompressobj(wbits=31)
    pos, step = 0, 1 << 22
    try:
        piece = unzip.decompress(raw, step)
        while piece:
            if pos + len(piece) > len(out):
                break  # not the size the trailer says (a file of several members, or > 4 GB)
            out[pos:pos + len(piece)] = np.frombuffer(piece, dtype=np.uint8)
            pos += len(piece)
            piece = unzip.decompress(unzip.unconsumed_tail, step)
    except zlib.error as exc:
        raise TraceError(f"{where}: damaged gzip file ({exc})") from None
    if pos == len(out) and unzip.eof and not unzip.unused_data:
        return out
    return np.frombuffer(_read_bytes(where), dtype=np.uint8)


def head_line(buf: np.ndarray) -> tuple[int, str]:
    """`first_line` of a file's bytes, looking at its beginning only."""
    size = 1 << 16
    while True:
        no, line = first_line(buf[:size].tobytes())
        if no or size >= len(buf):
            return no, line
        size *= 16


def check_format(data: bytes | np.ndarray, where: str, expected: str) -> int:
    """The 1-based number of the header line of a file that should be in the `expected` format
    ("sacct" or "hpcsim", see `hpcsched.workload.formats`). A file whose first line is another of
    the formats is an error saying which (an SWF file given as sacct, sacct given as HPCsim, ...);
    a first line that is none of them is left to the reader, whose column check names what lacks."""
    no, line = head_line(data) if isinstance(data, np.ndarray) else first_line(data)
    if not no:
        raise TraceError(f"{where}: empty file")
    found = sniff(line)
    if found and found != expected:
        raise TraceError(f"{where}: not {NAMES[expected]}: {describe(line)}")
    return no


# -- the fields of a delimited file ---------------------------------------------------------------

#: rows (or, for the file's bytes, 2**23 bytes) worked on at a time
BLOCK = 1 << 16


def _scan(buf: np.ndarray, sep: int,
          crlf: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(newlines, separators, before): the offsets of every line end and every separator in
    `buf`, and for each line end the number of separators before it; None where there is a
    carriage return and `crlf` (CRLF line ends, to be made LF first). Found a few MB at a time, so that every search is in a small,
    cached piece (int32 where the file is under 2 GB: half the memory of a table that has an entry
    per field)."""
    dtype = np.int32 if len(buf) < 2 ** 31 - 1 else np.int64
    newlines, seps, before = [], [], []
    step, n_seps = 1 << 23, 0
    for a in range(0, len(buf), step):
        piece = buf[a:a + step]
        if crlf and (piece == ord("\r")).any():
            return None
        nl = np.flatnonzero(piece == ord("\n"))
        sp = np.flatnonzero(piece == sep)
        before.append(np.searchsorted(sp, nl) + n_seps)
        newlines.append((nl + a).astype(dtype))
        seps.append((sp + a).astype(dtype))
        n_seps += len(sp)
    if not newlines:
        empty = np.zeros(0, dtype=dtype)
        return empty, empty, np.zeros(0, dtype=np.int64)
    return np.concatenate(newlines), np.concatenate(seps), np.concatenate(before)


class Fields:
    """A delimited file's header and the byte span of every field, found with numpy.

    `columns` are the header's names; `line` the 1-based line number of each row. Blank (and
    whitespace-only) lines are skipped. A row must have one field per column; a row ending with an
    extra separator (``sacct --parsable``) is read as if it had none.
    """

    def __init__(self, data: bytes | np.ndarray, sep: str, where: str, what: str) -> None:
        self.where = where
        buf = np.frombuffer(data, dtype=np.uint8) if isinstance(data, bytes) else data
        scan = _scan(buf, sep_byte := ord(sep))
        if scan is None:  # CRLF line ends: read as LF
            buf = np.frombuffer(buf.tobytes().replace(b"\r\n", b"\n"), dtype=np.uint8)
            scan = _scan(buf, sep_byte, crlf=False)
        self.buf = buf
        sep_name = "tab" if sep == "\t" else repr(sep)
        newlines, delims, before = scan
        if len(buf) and buf[-1] == ord("\n"):
            ends = newlines
        else:  # a last line without a line end
            ends, before = np.append(newlines, len(buf)), np.append(before, len(delims))
        starts = np.concatenate(([0], newlines + 1))[: len(ends)]
        line_first = np.concatenate(([0], before))[: len(ends)]  # a line's first separator
        nonblank = np.flatnonzero(ends > starts)
        header = None
        for i in nonblank:  # the header: the first line with anything but blanks on it
            text = decode(self.bytes(starts[i], ends[i]), where)
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
        first = line_first[rows]
        count = before[rows] - first
        last_is_sep = np.zeros(len(rows), dtype=bool)
        if len(rows):
            last_is_sep = buf[ends - 1] == sep_byte
        ok = (count == ncols - 1) | ((count == ncols) & last_is_sep)
        if not ok.all():
            keep = np.ones(len(rows), dtype=bool)
            for i in np.flatnonzero(~ok):
                if not self.bytes(starts[i], ends[i]).strip():
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

    def slice(self, a: int, b: int) -> "Fields":
        """The same file's rows a..b-1 (a view: nothing is copied but the rows' offsets)."""
        part = object.__new__(Fields)
        part.__dict__.update(self.__dict__)
        part.line = self.line[a:b]
        part._starts, part._ends = self._starts[a:b], self._ends[a:b]
        part._first, part._count = self._first[a:b], self._count[a:b]
        return part

    def bytes(self, begin: int, end: int) -> bytes:
        """The file's bytes from offset `begin` to `end`."""
        return self.buf[int(begin):int(end)].tobytes()

    def text(self, begin: int, end: int) -> str:
        return self.bytes(begin, end).decode("utf-8", "replace")

    def span(self, j: int) -> tuple[np.ndarray, np.ndarray]:
        """Start and end byte offsets of column `j` in every row."""
        if j == 0:
            begin = self._starts
        else:
            begin = self._delims[self._first + j - 1].astype(np.int64) + 1
        if j < len(self.columns) - 1:
            end = self._delims[self._first + j].astype(np.int64)
        else:
            # the last field ends at the line's end, or at a trailing separator
            at = np.minimum(self._first + j, max(len(self._delims) - 1, 0))
            end = np.where(self._count > j, self._delims[at] if len(self._delims) else 0,
                           self._ends).astype(np.int64)
        return begin.astype(np.int64, copy=False), end

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

    def blocks(self):
        """The column in consecutive pieces of at most BLOCK rows: (first row, piece). Work on a
        piece keeps its temporaries small (a big temporary costs more to map than to compute)."""
        for a in range(0, len(self), BLOCK):
            b = a + BLOCK
            yield a, Column(self.fields, self.name, self.begin[a:b], self.end[a:b],
                            self.line[a:b])

    def text(self, i: int) -> str:
        return self.fields.text(self.begin[i], self.end[i])

    def matrix(self, width: int | None = None, *, multiple: int = 1,
               clean: bool = True) -> np.ndarray:
        """(n, w) uint8: each field's bytes, left-aligned, 0 past its end (cut at `width`; w
        rounded up to a `multiple`); without `clean`, the bytes past a field's end are whatever
        follows it in the file (cheaper, for readers that look at the length themselves)."""
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
        if not clean:
            return out
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
        text = self.fields.text
        return [text(b, e) for b, e in zip(self.begin.tolist(), self.end.tolist())]

    def categories(self) -> tuple[np.ndarray, list[str]]:
        """(codes, values): each field as an index into its column's distinct values, numbered in
        the order they first appear.

        The distinct values are found by a vectorised hash of the bytes, checked for collisions,
        so the cost is a few passes over the column, not a Python object per row."""
        codes, values = self._categories()
        if len(values) < 2:
            return codes, values
        first = first_rows(codes)
        by_appearance = np.argsort(first, kind="stable")
        renumber = np.empty(len(values), dtype=np.int64)
        renumber[by_appearance] = np.arange(len(values))
        return renumber[codes], [values[k] for k in by_appearance]

    def _categories(self) -> tuple[np.ndarray, list[str]]:
        n = len(self)
        if n == 0:
            return np.zeros(0, dtype=np.int64), []
        if int(self.length.max()) > 512:  # absurdly wide fields: let numpy sort the strings
            return self._categories_by_sort()
        h, check = np.empty(n, dtype=np.uint64), np.empty(n, dtype=np.uint64)
        for a, piece in self.blocks():
            b = a + len(piece)
            h[a:b], check[a:b] = piece._hashes()
        codes = _group(h)
        first = first_rows(codes)
        rep = first[codes]
        # two fields with the same first hash are taken as equal when their second, independent
        # hash and their lengths agree too (else the column is sorted instead)
        if not (np.array_equal(check, check[rep]) and np.array_equal(self.length,
                                                                     self.length[rep])):
            return self._categories_by_sort()
        values = [self.fields.text(self.begin[i], self.end[i]) for i in first]
        return codes.astype(np.int64), values

    def _hashes(self) -> tuple[np.ndarray, np.ndarray]:
        """Two independent 64-bit hashes of each field's bytes and length (FNV-like, 8 bytes a
        step, different seeds and multipliers)."""
        words = self.matrix(multiple=8).view(np.uint64)
        length = self.length.astype(np.uint64)
        h = length + np.uint64(1469598103934665603)
        g = length ^ np.uint64(0x9E3779B97F4A7C15)
        with np.errstate(over="ignore"):
            for k in range(words.shape[1]):
                word = words[:, k]
                h ^= word
                h *= np.uint64(1099511628211)
                h ^= h >> np.uint64(29)
                g += word
                g *= np.uint64(0xBF58476D1CE4E5B9)
                g ^= g >> np.uint64(31)
        return h, g

    def _categories_by_sort(self) -> tuple[np.ndarray, list[str]]:
        uniq, codes = np.unique(self.strings(), return_inverse=True)
        return codes.astype(np.int64), [u.decode("utf-8", "replace") for u in uniq]

    def naturals(self) -> tuple[np.ndarray, np.ndarray]:
        """(values float64, ok bool): the fields that are plain digits (at most 15), as numbers;
        NaN and False elsewhere."""
        n = len(self)
        value, ok = np.empty(n), np.empty(n, dtype=bool)
        for a, piece in self.blocks():
            b = a + len(piece)
            value[a:b], ok[a:b] = piece._naturals()
        return value, ok

    def _naturals(self) -> tuple[np.ndarray, np.ndarray]:
        n = len(self)
        length = self.length
        w = min(int(length.max()) if n else 0, 15)
        if w == 0:
            return np.full(n, np.nan), np.zeros(n, dtype=bool)
        # one row per character position: each step reads one contiguous row
        digits = np.ascontiguousarray(self.matrix(w, clean=False).T) - np.uint8(_DIGIT0)
        ok = (length > 0) & (length <= 15)
        value = np.zeros(n, dtype=np.int64)
        for k in range(w):
            inside = length > k
            d = digits[k]
            ok &= (d <= 9) | ~inside  # a non-digit wrapped around past 9
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


def numbers(col: Column, *, empty: bool = False, otherwise: float | None = None,
            why: str = "is not a number") -> np.ndarray:
    """A column of decimal numbers (``12``, ``-3``, ``1.5``, ``2e3``) as float64: plain digits
    vectorised, the other distinct texts one Python parse each. An empty field is NaN where
    `empty` allows it; any other text that is not a number is `otherwise` where that is given,
    else an error naming the line and field."""
    def slow(text: str, i: int) -> float:
        t = text.strip()
        if NUMBER.match(t):
            return float(t)
        if empty and not t:
            return np.nan
        if otherwise is not None:
            return otherwise
        raise bad(col.fields.where, int(col.line[i]), col.name, text, why)
    out = naturals_or(col, slow)
    huge = ~(np.abs(out) <= _LARGEST) & ~np.isnan(out)  # infinities and beyond 2^53: not exact
    if huge.any():
        if otherwise is not None:
            out[huge] = otherwise
        else:
            check_rows(col, huge, f"is too large (at most {_LARGEST})")
    return out


def check_rows(col: Column, wrong: np.ndarray, why: str) -> None:
    """Raise naming the first row where `wrong` holds (and how many there are)."""
    rows = np.flatnonzero(wrong)
    if rows.size:
        i = int(rows[0])
        more = f" ({rows.size} such rows)" if rows.size > 1 else ""
        raise bad(col.fields.where, int(col.line[i]), col.name, col.text(i), why + more)


_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}(?::\d{2})*(?:[.,]\d+)?)?"
                       r"(?:Z|[+-]\d{2}(?::?\d{2})?)?$")
_DAYS = np.array([31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31], dtype=np.int64)
_ISO_SEPARATOR_AT = np.array([4, 7, 10, 13, 16])
_ISO_SEPARATOR_BYTES = np.frombuffer(b"--T::", dtype=np.uint8)
_ISO_DIGIT_AT = np.array([k for k in range(19) if k not in (4, 7, 10, 13, 16)])


def _iso_seconds(col: Column) -> tuple[np.ndarray, np.ndarray]:
    """(UTC seconds, ok) of the fields of the form YYYY-MM-DDTHH:MM:SS; NaN and False elsewhere."""
    n = len(col)
    out = np.full(n, np.nan)
    fast = col.length == 19
    m = col.matrix(19, clean=False)
    if m.shape[1] < 19 or not fast.any():
        return out, np.zeros(n, dtype=bool)
    fast &= (m[:, _ISO_SEPARATOR_AT] == _ISO_SEPARATOR_BYTES).all(axis=1)
    digits = m[:, _ISO_DIGIT_AT] - np.uint8(_DIGIT0)  # a non-digit wraps around past 9
    fast &= digits.max(axis=1) <= 9
    d = np.ascontiguousarray(digits.T).astype(np.int64)  # one row per digit position

    def number(a: int, places: int) -> np.ndarray:
        v = d[a]
        for k in range(a + 1, a + places):
            v = v * 10 + d[k]
        return v

    y, mo, day = number(0, 4), number(4, 2), number(6, 2)
    hh, mi, ss = number(8, 2), number(10, 2), number(12, 2)
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
    return out, fast


def instants(col: Column, *, unknown: bool, garbage: bool = False,
             fraction_why: str = "has a fraction of a second") -> np.ndarray:
    """UTC seconds since 1970 (float64) of ``YYYY-MM-DDTHH:MM:SS`` fields (vectorised), and of any
    other ISO 8601 form (one Python parse per distinct text). ``Unknown``, ``None`` and empty fields
    are NaN where `unknown` allows them, and any other unreadable text where `garbage` does;
    otherwise they are an error naming the line."""
    n = len(col)
    out = np.empty(n)
    fast = np.empty(n, dtype=bool)
    for a, piece in col.blocks():
        b = a + len(piece)
        out[a:b], fast[a:b] = _iso_seconds(piece)

    def slow(text: str, i: int) -> float:
        t = text.strip()
        if t.lower() in UNKNOWN_TIMES and unknown:
            return np.nan
        value = None
        if _ISO_DATE.match(t):  # Python's fromisoformat also takes any letter between the two
            try:
                value = dt.datetime.fromisoformat(t)
            except ValueError:
                pass
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


def memory_mb(text: str, *, per_suffix: bool, units: str = "KMGTP",
              unitless_fraction: bool = True) -> tuple[float, str] | None:
    """A memory size in MB and how it counts: ``"n"`` per node, ``"c"`` per CPU, ``""`` no suffix.

    A number with a unit among `units` (K, M, G, T, P: 1/1024, 1, 1024, 1024**2, 1024**3 MB), or
    none (MB; a whole number only unless `unitless_fraction`), as Slurm prints it; with
    `per_suffix`, also old Slurm's per-CPU ``c`` and per-node ``n`` after the unit (``4000Mc``,
    ``16Gn``, ``0n``). None when the text is not such a size (signs included)."""
    t = text.strip().upper()
    kind = ""
    if per_suffix and t[-1:] in ("C", "N"):
        kind, t = t[-1].lower(), t[:-1]
    if not t:
        return None
    unit = t[-1]
    if unit.isdigit() or unit == ".":
        number, factor = t, 1.0
        if not unitless_fraction and not t.isdigit():
            return None
    elif unit in MEMORY_UNITS and unit in units:
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
    step, array_range = np.empty(n, dtype=bool), np.empty(n, dtype=bool)
    kind, wrong = np.empty(n, dtype=np.int64), np.empty(n, dtype=bool)
    for a, piece in col.blocks():
        b = a + len(piece)
        step[a:b], array_range[a:b], kind[a:b], wrong[a:b] = _classify(piece)
    wrong = np.flatnonzero(wrong)
    if wrong.size:
        i = int(wrong[0])
        raise bad(col.fields.where, int(col.line[i]), col.name, col.text(i),
                  "is not a Slurm job id (123, 123_4 for an array task, 123+0 for a "
                  "heterogeneous job's component, 123.batch for a step)"
                  + (f"; {wrong.size} such rows" if wrong.size > 1 else ""))
    return step, array_range, kind


def _classify(col: Column) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """`classify_job_ids` of a piece, and which of its rows are none of the forms."""
    n = len(col)
    m = np.ascontiguousarray(col.matrix().T)  # one row per character position
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
    first_ok = (m[0] >= _DIGIT0) & (m[0] <= _DIGIT9) if w else np.zeros(n, dtype=bool)
    last_c = m[np.clip(length - 1, 0, max(w - 1, 0)), np.arange(n)] if w else \
        np.zeros(n, np.uint8)
    last_ok = (last_c >= _DIGIT0) & (last_c <= _DIGIT9)
    good = only & (n_sep <= 1) & first_ok & last_ok
    kind = np.where(under, 1, np.where(plus, 2, 0))
    return step, array_range, kind, rest & ~good


# -- the header of a table read from Slurm accounting ----------------------------------------------


@dataclass(frozen=True)
class SourceText:
    """Text the JobTable's float columns cannot hold, for the rows a reader kept: the job id as the
    source names it (``1004_2``, ``1011+0``), the user, the state, ...; one array per name, found
    by the row's line number in the file (the `line` column, which survives cleaning)."""

    lines: np.ndarray  # (n,) int64, the file line of each row
    columns: Mapping[str, np.ndarray]  # name -> (n,) array of str (dtype U or object)

    def take(self, name: str, lines: np.ndarray) -> np.ndarray | None:
        """The `name` text of the rows on `lines`, as an object array of str (None where a line is
        not one of the rows); None when the source has no such column."""
        values = self.columns.get(name)
        if values is None:
            return None
        lines = np.asarray(lines, dtype=np.int64)
        out = np.full(len(lines), None, dtype=object)
        if len(self.lines) == 0:
            return out
        order = np.argsort(self.lines, kind="stable")
        known = self.lines[order]
        at = np.minimum(np.searchsorted(known, lines), len(known) - 1)
        found = known[at] == lines
        out[found] = np.asarray(values)[order][at[found]].astype(object)
        return out


@dataclass(frozen=True)
class SlurmHeader(TraceHeader):
    """The header of a table read from Slurm accounting (sacct or HPCsim's TSV): a `TraceHeader`
    that also carries the source's text columns (`source`) and the reading report (`report`). Both
    travel with the table through `take`, cleaning and windows."""

    source: SourceText | None = field(default=None, compare=False, repr=False)
    report: object = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class ReadReport:
    """What reading a Slurm-accounting file did: rows read, jobs kept, rows dropped by reason,
    values changed by rule.

    `dropped` and `changed` leave out what did not happen; `notes` counts facts worth knowing that
    change nothing (kept jobs that ran past their limit, ...)."""

    path: str
    rows_read: int
    rows_kept: int
    dropped: dict[str, int] = field(default_factory=dict)
    changed: dict[str, int] = field(default_factory=dict)
    notes: dict[str, int] = field(default_factory=dict)

    def summary(self) -> str:
        """One line for a human: "2000 rows read, 1990 jobs kept; dropped, job step rows: 10"."""
        parts = [f"{self.rows_read} rows read, {self.rows_kept} jobs kept"]
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


__all__ = ["Column", "Fields", "ReadReport", "SlurmHeader", "SourceText", "bad", "check_format",
           "check_rows", "classify_job_ids", "count", "instants", "memory_mb", "naturals_or",
           "numbers", "parse_by_value", "repeated"]
