"""The README's DBF numbers (Fig. 3.4 on Lublin-1) are recomputed: every row of its table must
equal what `hpcsched experiment dbf-baselines` prints now, to the README's printed precision. When
the DBF models ship, their rows join the table and are checked the same way.

The default suite recomputes Ch. 3's SJF row (a few seconds); `pytest -m slow` every row.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hpcsched.experiments import dbf

README = Path(__file__).resolve().parents[2] / "README.md"
TITLE = "#### Fig. 3.4 on Lublin-1"
COLUMNS = ("utilization", "wait", "queue_length", "job_load", "bsld", "rejection_ratio")


def _table(title: str = TITLE) -> tuple[list[str], list[list[str]]]:
    lines = README.read_text().splitlines()
    start = lines.index(title)
    rows = []
    for line in lines[start + 1:]:
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not set(cells[0]) <= set("-: "):
                rows.append(cells)
        elif rows:
            break
    return rows[0], rows[1:]


def _same(printed: str, value) -> bool:
    if printed in ("", "-"):
        return value is None
    m = re.fullmatch(r"-?[\d,]+(?:\.(\d+))?", printed)
    assert m, f"no number in README cell {printed!r}"
    d = len(m.group(1) or "")
    return round(value, d) == pytest.approx(float(printed.replace(",", "")),
                                             abs=0.51 * 10 ** -d)


def _check(methods: list[str]) -> None:
    header, body = _table()
    assert header[:4] == ["method", "policy", "backfill", "protocol"], header
    printed = {r[0]: dict(zip(header, r)) for r in body}
    chosen, notes = dbf.baseline_methods(models=[("", n) for n in dbf.shipped_models()[0]])
    chosen = [m for m in dbf.resolve_windows(chosen, "lublin-1") if m.label in methods]
    assert {m.label for m in chosen} == set(methods), "a README row no command prints"
    rows = dbf.baselines("lublin-1", chosen, episodes=100, workers=dbf.default_workers())
    for row in rows:
        want = printed[row["method"]]
        assert want["policy"] == row["policy"] and want["backfill"] == row["backfill"]
        for k in COLUMNS:
            assert _same(want[k], row.get(k)), (row["method"], k, want[k], row.get(k))


def test_the_readme_sjf_row():
    _check(["SJF"])


@pytest.mark.slow
def test_every_readme_row():
    _, body = _table()
    _check([r[0] for r in body])


SWEEP = "#### Fig. 3.5 to 3.7: the two shipped models beside the heuristics"
SWEEP_COLUMNS = ("wait", "queue_length", "utilization", "invisible", "partial", "cycles")


def test_the_readme_sweep_sjf_rows():
    """Fig. 3.5/3.6's table: Ch. 3's SJF seen through windows of 10 and 32 (the models' M), as
    `hpcsched experiment dbf-window-sweep --reference ...,sqf,...` prints it."""
    from hpcsched.experiments.dbf_window import window_sweep

    header, body = _table(SWEEP)
    assert header[:4] == ["method", "policy", "window", "tail"], header
    printed = {(r[0], r[2]): dict(zip(header, r)) for r in body}
    sweep = window_sweep("lublin-1", references=("sqf",), windows=(10, 32), episodes=100,
                         heatmap_episodes=0, workers=dbf.default_workers())
    assert [(r["method"], r["window"]) for r in sweep.rows] == [("SJF", 10), ("SJF", 32)]
    for row in sweep.rows:
        want = printed[row["method"], str(row["window"])]
        for k in SWEEP_COLUMNS:
            assert _same(want[k], row.get(k)), (row["method"], row["window"], k, want[k],
                                                 row.get(k))
