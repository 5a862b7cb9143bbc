"""Read and write the Parallel Workloads Archive's Standard Workload Format (SWF v2.2).

An SWF file is a header of comment lines starting with ";" (the "; Key: value" ones describe the
machine and the log) followed by one line per job of 18 whitespace-separated numbers, -1 meaning
"unknown". Files may be gzip-compressed; compression is recognised by its magic bytes, so a gzipped
file without a ".gz" extension reads too, and so does a file that starts with a UTF-8 byte-order mark
or ends its lines Windows's way (CR LF) or old Mac OS's (CR alone).

    jobs = read_swf("HPC2N-2002-2.2-cln.swf.gz")
    write_swf(jobs.window(0, 1024), "first-1024.swf")

Reading is vectorised: the whole file is tokenised and converted with numpy in a few passes (the
HPC2N log, 202,871 jobs and 19 MB, reads in about 0.3 s on two slow cores). Only a file that
the fast path declines is scanned line by line, to name the first bad line and field in a
`TraceError` (or to read numbers written unusually, such as "1.5e3").
"""

from __future__ import annotations

import gzip
import os
import re
import tempfile
import zlib
from pathlib import Path

import numpy as np

from hpcsched._files import make_readable
from hpcsched.workload.jobs import LINE, PROCS, SWF_FIELDS, JobTable, TraceHeader

N_FIELDS = len(SWF_FIELDS)  # 18

#: header keys read into TraceHeader attributes (as ints)
_INT_KEYS = {"MaxNodes": "max_nodes", "MaxProcs": "max_procs", "UnixStartTime": "unix_start_time"}

# "; Key: value": a key is one word right after the ";" and its colon is followed by a blank or the
# end of the line, so continuation lines such as ";    http://..." are not taken for keys.
_KEY_LINE = re.compile(r"^\s*;\s*([A-Za-z][\w-]*)\s*:(?:\s(.*)|)$")
# a leading integer, then nothing or a blank: "338 (batch partition; 512 total)" -> 338
_LEADING_INT = re.compile(r"^\s*([+-]?\d+)(?:\s|$)")
# what a number in a job line may look like (Python's float() also takes "nan", "1_0", ...)
_NUMBER = re.compile(r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$")

_MAX_DIGITS = 15  # a mantissa of at most 15 digits is exact in float64
#: the largest magnitude a field may have: every whole number up to it is exact in float64, and
#: no larger one is told apart from its neighbours (2^53 + 1 reads as 2^53); a larger value, or one
#: that overflows to infinity, would reach the simulator as a wrong count
_LARGEST = 2**53 - 1


class TraceError(ValueError):
    """A trace file that cannot be read; the message names the file, and the line and field."""


# -- reading -------------------------------------------------------------------------------------


def read_swf(path: str | os.PathLike, name: str | None = None) -> JobTable:
    """Read an SWF file (plain or gzip) into a raw JobTable.

    Every job line becomes a row, unchanged: -1 stays -1 and nothing is dropped (cleaning is the
    business of `hpcsched.workload.cleaning`). `procs` is max(alloc_procs, req_procs) and `line` the
    1-based line number in the file. `name` defaults to the file name without ".gz" and ".swf".
    The header keeps every comment line verbatim (`comments`) and every "; Key: value" line in
    `fields` (a key given on several lines, such as Queue, gets its values joined by newlines);
    MaxNodes, MaxProcs and UnixStartTime are read as the integer their value starts with.

    Raises TraceError for a missing or unreadable file, a damaged gzip stream, a job line without
    exactly 18 fields, a field that is not a number, a header value (MaxNodes, MaxProcs,
    UnixStartTime) that does not start with an integer, and a file without job lines.
    """
    where = os.fspath(path)
    data = _read_bytes(where)
    _check_not_slurm(data, where)
    scan = _Scan(data)
    header = _parse_header(scan.comment_lines(), where, name)

    values = scan.fast_values()
    if values is None:
        values, line_no = _slow_values(data, where)
    else:
        line_no = scan.job_line_numbers()
    if len(line_no) == 0:
        raise TraceError(f"{where}: no job lines")

    cols = {f: values[:, i] for i, f in enumerate(SWF_FIELDS)}
    cols[PROCS] = np.maximum(cols["alloc_procs"], cols["req_procs"])
    cols[LINE] = line_no.astype(np.float64)
    return JobTable(cols, header)


def _check_not_slurm(data: bytes, where: str) -> None:
    """A Slurm-accounting file given as SWF is named as what it is, not failed at its first field."""
    from hpcsched.workload.formats import NAMES, describe, first_line, sniff

    no, line = first_line(data)
    if no and sniff(line) in ("sacct", "hpcsim"):
        raise TraceError(f"{where}: not {NAMES['swf']}: {describe(line)}")


def _read_bytes(where: str) -> bytes:
    """The file's bytes, gunzipped, without a byte-order mark, lines ended by LF alone."""
    try:
        with open(where, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise TraceError(f"{where}: no such file") from None
    except IsADirectoryError:
        raise TraceError(f"{where}: is a directory, not a trace file") from None
    except OSError as exc:
        raise TraceError(f"{where}: cannot read ({exc.strerror or exc})") from None
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise TraceError(f"{where}: damaged gzip file ({exc})") from None
    if data[:3] == b"\xef\xbb\xbf":  # a UTF-8 byte-order mark, as some Windows editors write
        data = data[3:]
    if b"\r" in data:  # Windows (CR LF) and old Mac (CR alone) line endings: one line each
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    return data


class _Scan:
    """The file split into lines and tokens with numpy; comment lines are blanked out."""

    def __init__(self, data: bytes) -> None:
        buf = np.frombuffer(data, dtype=np.uint8)
        self.data = data
        self.buf = buf
        newlines = np.flatnonzero(buf == ord("\n"))
        self.line_start = np.concatenate(([0], newlines + 1))
        self.line_end = np.concatenate((newlines, [buf.size]))  # exclusive, newline excluded
        # Control characters other than blanks are left to the careful scan.
        self.plain = np.count_nonzero(buf < 32) == np.count_nonzero((buf >= 9) & (buf <= 13))
        tok = buf > 32  # a fresh array, so comment lines can be blanked in place

        # A comment line has ";" as its first non-blank character. Semicolons are rare, so they
        # are examined one by one.
        self.comments: list[int] = []
        semis = np.flatnonzero(buf == ord(";"))
        for line in np.unique(np.searchsorted(self.line_start, semis, side="right") - 1):
            s, e = int(self.line_start[line]), int(self.line_end[line])
            if data[s:e].lstrip()[:1] == b";":
                self.comments.append(int(line))
                tok[s:e] = False

        edges = np.flatnonzero(tok[1:] ^ tok[:-1]) + 1
        if tok.size and tok[0]:
            edges = np.concatenate(([0], edges))
        if tok.size and tok[-1]:
            edges = np.concatenate((edges, [tok.size]))
        self.tok_start, self.tok_end = edges[0::2], edges[1::2]
        first_tok = np.searchsorted(self.tok_start, self.line_start)
        self.tokens_per_line = np.diff(np.concatenate((first_tok, [self.tok_start.size])))

    def comment_lines(self) -> list[tuple[int, str]]:
        """(1-based line number, text without the line ending) of every comment line."""
        out = []
        for line in self.comments:
            raw = self.data[self.line_start[line] : self.line_end[line]]
            out.append((line + 1, raw.decode("utf-8", errors="replace").rstrip("\r")))
        return out

    def job_line_numbers(self) -> np.ndarray:
        return np.flatnonzero(self.tokens_per_line) + 1

    def fast_values(self) -> np.ndarray | None:
        """All job fields as an (n, 18) array, or None when the file needs the careful scan
        (a line without 18 fields, a token that is not a plain decimal number, ...)."""
        counts = self.tokens_per_line[self.tokens_per_line > 0]
        if not self.plain or counts.size == 0 or np.any(counts != N_FIELDS):
            return None
        start, length = self.tok_start, self.tok_end - self.tok_start
        values = np.empty(start.size, dtype=np.float64)
        # Tokens of the same width are parsed together, one character column at a time.
        for width in np.flatnonzero(np.bincount(length)).tolist():
            sel = np.flatnonzero(length == width)
            parsed = _parse_same_width(self.buf, start[sel], width)
            if parsed is None:
                return None
            values[sel] = parsed
        return values.reshape(-1, N_FIELDS)


def _parse_same_width(buf: np.ndarray, start: np.ndarray, width: int) -> np.ndarray | None:
    """Values of the tokens of `width` characters starting at `start`, or None unless every one
    reads -?digits[.digits] (the dot anywhere; at most _MAX_DIGITS digits)."""
    columns = [buf[start + j] for j in range(width)]
    negative = columns[0] == ord("-")
    if any(np.count_nonzero(c == ord(".")) for c in columns):
        return _parse_decimals(columns, negative)
    # Digits only (after an optional "-"): Horner's rule down the columns, exact in float64 up to
    # 15 digits.
    first = columns[0] - np.uint8(ord("0"))  # a "-" wraps around to a large value
    if width > _MAX_DIGITS or (width == 1 and negative.any()):
        return None
    if not np.all((first < 10) | negative):
        return None
    acc = np.where(negative, 0.0, first)
    for c in columns[1:]:
        d = c - np.uint8(ord("0"))
        if not np.all(d < 10):
            return None
        acc = acc * 10.0 + d
    return np.where(negative, -acc, acc)


def _parse_decimals(columns: list[np.ndarray], negative: np.ndarray) -> np.ndarray | None:
    """The same for tokens of which some have a dot."""
    n = negative.size
    mantissa = np.zeros(n)
    n_digits = np.zeros(n, dtype=np.int64)
    decimals = np.zeros(n, dtype=np.int64)
    seen_dot = np.zeros(n, dtype=bool)
    for j, c in enumerate(columns):
        d = c - np.uint8(ord("0"))
        digit = d < 10
        dot = c == ord(".")
        sign = negative if j == 0 else False
        if not np.all(digit | dot | sign) or np.any(dot & seen_dot):
            return None
        # the mantissa is the integer formed by all digits, the dot skipped
        mantissa = np.where(digit, mantissa * 10.0 + d, mantissa)
        n_digits += digit
        decimals += digit & seen_dot
        seen_dot |= dot
    if np.any(n_digits == 0) or np.any(n_digits > _MAX_DIGITS):
        return None
    # Both numbers are exact in float64, so the division rounds correctly, exactly as float().
    values = mantissa / 10.0**decimals
    return np.where(negative, -values, values)


def _slow_values(data: bytes, where: str) -> tuple[np.ndarray, np.ndarray]:
    """Line-by-line reading: raises TraceError at the first bad line, or returns the values of a
    file the fast path declined (exponents, "+" signs, very long numbers...)."""
    rows: list[list[float]] = []
    line_no: list[int] = []
    for i, raw in enumerate(data.split(b"\n"), start=1):
        text = raw.decode("utf-8", errors="replace")
        tokens = text.split()
        if not tokens or tokens[0].startswith(";"):
            continue
        if len(tokens) != N_FIELDS:
            hint = "truncated line?" if len(tokens) < N_FIELDS else "extra fields?"
            raise TraceError(
                f"{where}, line {i}: expected {N_FIELDS} fields, found {len(tokens)} ({hint})"
            )
        row = []
        for k, tok in enumerate(tokens):
            if not _NUMBER.match(tok):
                raise TraceError(
                    f"{where}, line {i}, field {k + 1} ({SWF_FIELDS[k]}): {tok!r} is not a number"
                )
            value = float(tok)
            if not abs(value) <= _LARGEST:
                raise TraceError(
                    f"{where}, line {i}, field {k + 1} ({SWF_FIELDS[k]}): {tok!r} is too large "
                    f"(at most {_LARGEST} in magnitude)"
                )
            row.append(value)
        rows.append(row)
        line_no.append(i)
    values = np.array(rows, dtype=np.float64).reshape(-1, N_FIELDS)
    return values, np.array(line_no, dtype=np.int64)


def _parse_header(lines: list[tuple[int, str]], where: str, name: str | None) -> TraceHeader:
    fields: dict[str, str] = {}
    ints: dict[str, int] = {}
    key_lines: dict[str, int] = {}
    for no, text in lines:
        m = _KEY_LINE.match(text)
        if not m:
            continue
        key, value = m.group(1), (m.group(2) or "").strip()
        key_lines.setdefault(key, no)
        # a key given twice (Queue:, Information:, Note:) keeps every value, one per line
        fields[key] = f"{fields[key]}\n{value}" if key in fields else value
        if key in _INT_KEYS and _INT_KEYS[key] not in ints:
            num = _LEADING_INT.match(value)
            if num is None:
                raise TraceError(f"{where}, line {no}: header {key}: {value!r} is not a number")
            ints[_INT_KEYS[key]] = int(num.group(1))
            if abs(ints[_INT_KEYS[key]]) > _LARGEST:
                raise TraceError(f"{where}, line {no}: header {key}: {value!r} is too large "
                                 f"(at most {_LARGEST})")
    if name is None:
        name = os.path.basename(where)
        for ext in (".gz", ".swf"):
            name = name[: -len(ext)] if name.endswith(ext) else name
    return TraceHeader(
        name=name,
        path=where,
        fields=fields,
        comments=tuple(text for _, text in lines),
        key_lines=key_lines,
        **ints,
    )


# -- writing -------------------------------------------------------------------------------------


def write_swf(jobs: JobTable, path: str | os.PathLike) -> str | os.PathLike:
    """Write `jobs` as SWF to `path` (gzip-compressed when it ends with ".gz"); returns `path`.

    The header's comment lines are written verbatim; a table without any (a generated workload)
    gets a short header from what TraceHeader knows. Then one line per job with the 18 SWF fields,
    integers without ".0" and fractional values as Python's repr writes them, so that reading the
    file back gives every value exactly. (`procs` is not an SWF field: reading derives it again
    from the allocated and requested processors.) The file is replaced atomically.
    """
    where = os.fspath(path)
    header = list(jobs.header.comments) or _default_header(jobs)
    cols = [_format_column(jobs[f], f) for f in SWF_FIELDS]
    widths = [max((len(s) for s in col), default=1) for col in cols]
    row_format = " ".join(f"{{:>{w}}}" for w in widths)
    text = "\n".join(header + [row_format.format(*row) for row in zip(*cols)]) + "\n"
    data = text.encode("utf-8")
    if where.endswith(".gz"):
        data = gzip.compress(data, compresslevel=6, mtime=0)
    folder = os.path.dirname(os.path.abspath(where))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".swf")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        make_readable(tmp)
        os.replace(tmp, where)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _default_header(jobs: JobTable) -> list[str]:
    h = jobs.header
    lines = ["; Version: 2.2", "; Note: written by hpcsched", f"; MaxJobs: {len(jobs)}",
             f"; MaxRecords: {len(jobs)}"]
    for key, attr in _INT_KEYS.items():
        value = getattr(h, attr)
        if value is not None:
            lines.append(f"; {key}: {value}")
    return lines


def _format_column(values: np.ndarray, field: str) -> list[str]:
    bad = ~np.isfinite(values)
    if bad.any():
        raise ValueError(f"write_swf: column {field} has a non-finite value in row "
                         f"{int(np.flatnonzero(bad)[0])}")
    integral = (values == np.round(values)) & (np.abs(values) < 2.0**53)
    if integral.all():
        return values.astype(np.int64).astype(str).tolist()
    return [str(int(v)) if i else repr(v) for v, i in zip(values.tolist(), integral.tolist())]


__all__ = ["N_FIELDS", "TraceError", "read_swf", "write_swf"]
