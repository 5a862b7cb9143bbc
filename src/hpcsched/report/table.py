"""Rows (flat dicts) to text: an aligned table for people, Markdown, CSV or JSON for programs."""

from __future__ import annotations

import csv
import io
import json
import math
from typing import Sequence

#: how each metric is printed in a human table
_DIGITS = {"FCFS": 2, "WFP3": 2, "UNICEP": 2, "SJF": 2, "F1": 2, "bsld": 2, "max_bsld": 2, "slowdown": 2, "wait": 0, "max_wait": 0, "turnaround": 0,
           "utilization": 3, "makespan": 0, "max_user_bsld": 2, "jain_user_bsld": 3,
           "dropped": 0}

DEFAULT_COLUMNS = ("trace", "policy", "allocator", "backfill", "bsld", "max_bsld", "wait",
                   "max_wait", "turnaround", "slowdown", "dropped", "utilization", "makespan",
                   "utilization_memory",
                   "utilization_gpus", "score")


def _cell(key: str, value, digits: dict[str, int] | None = None) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if math.isnan(value):
            return "-"
        digits = (digits or {}).get(key, _DIGITS.get(key, 3))
        return f"{value:,.{digits}f}" if abs(value) >= 1e4 else f"{value:.{digits}f}"
    return str(value)


def _columns(rows: Sequence[dict], columns: Sequence[str] | None) -> list[str]:
    if columns:
        return [c for c in columns if any(c in r for r in rows)]
    return [c for c in DEFAULT_COLUMNS if any(c in r for r in rows)]


def format_table(rows: Sequence[dict], columns: Sequence[str] | None = None,
                 digits: dict[str, int] | None = None) -> str:
    cols = _columns(rows, columns)
    cells = [[_cell(c, r.get(c, ""), digits) for c in cols] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(cols)]
    numeric = [all(isinstance(r.get(c), (int, float)) for r in rows) for c in cols]

    def line(values):
        return "  ".join(v.rjust(w) if num else v.ljust(w)
                         for v, w, num in zip(values, widths, numeric)).rstrip()

    out = [line(cols), line(["-" * w for w in widths])]
    out += [line(row) for row in cells]
    return "\n".join(out)


def format_markdown(rows: Sequence[dict], columns: Sequence[str] | None = None,
                    digits: dict[str, int] | None = None) -> str:
    cols = _columns(rows, columns)
    out = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    out += ["| " + " | ".join(_cell(c, r.get(c, ""), digits) for c in cols) + " |"
            for r in rows]
    return "\n".join(out)


def format_csv(rows: Sequence[dict]) -> str:
    keys: list[str] = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=keys, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue().rstrip("\n")


def format_json(rows) -> str:
    """JSON, strictly: a value that is not a finite number (a load over no time, say) is null,
    not NaN or Infinity, which JSON does not have."""
    return json.dumps(_finite(rows), indent=1, allow_nan=False)


def _finite(value):
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def format_rows(rows: Sequence[dict], fmt: str, columns: Sequence[str] | None = None,
                digits: dict[str, int] | None = None) -> str:
    """`rows` as `fmt` (json, csv, markdown or an aligned table); `digits` overrides the decimals
    a column's floats get in a table (by default: the metric's own, else 3)."""
    if fmt == "json":
        return format_json(list(rows))
    if fmt == "csv":
        return format_csv(rows)
    if fmt == "markdown":
        return format_markdown(rows, columns, digits)
    return format_table(rows, columns, digits)
