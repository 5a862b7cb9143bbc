"""The README's RLScheduler numbers are recomputed: every learned cell of Table V, VII, VIII and of
the seed table, and the heuristic cells beside them, must equal what the experiments print now (to
the README's printed precision). A number that drifts (a new engine, a new greedy rule, a retrained
model) fails here until the README is re-measured.

The default suite recomputes one row of each table (a few seconds); `pytest -m slow` all of them.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hpcsched.experiments import rlscheduler as rls
from hpcsched.experiments import rlscheduler_seeds as seeds

README = Path(__file__).resolve().parents[2] / "README.md"


def _section(title: str) -> list[str]:
    """The markdown table rows (split into cells) of the first table after heading `title`."""
    lines = README.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == title)
    rows, seen = [], False
    for line in lines[start + 1:]:
        if line.startswith("|"):
            seen = True
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not set(cells[0]) <= set("-: "):
                rows.append(cells)
        elif seen:
            break
    return rows


def _num(cell: str) -> float:
    """A printed number: '1,234.56', '**53.60**', '262.53 (254.67)' -> its first value."""
    m = re.search(r"-?[\d,]+(?:\.\d+)?", cell.replace("*", ""))
    assert m, f"no number in README cell {cell!r}"
    return float(m.group(0).replace(",", ""))


def _decimals(cell: str) -> int:
    m = re.search(r"[\d,]+(?:\.(\d+))?", cell.replace("*", ""))
    return len(m.group(1) or "") if m else 0


def _same(printed: str, value: float) -> bool:
    d = _decimals(printed)
    return round(value, d) == pytest.approx(_num(printed), abs=0.51 * 10 ** -d)


def _table5(slow: bool):
    rows = _section("#### Table V with our models")
    header, body = rows[0], rows[1:]
    assert header[:3] == ["trace", "backfilling", "FCFS"], header
    want = body if slow else [r for r in body if r[0] == "hpc2n" and r[1] == "yes"]
    return header, want


@pytest.mark.parametrize("slow", [pytest.param(False), pytest.param(True, marks=pytest.mark.slow)])
def test_table5_cells(slow):
    header, want = _table5(slow)
    traces = list(dict.fromkeys(r[0] for r in want))
    got = rls.pivot(rls.table5(traces))
    by = {(r["trace"], r["backfilling"]): r for r in got if r["source"] == "rlscheduler"}
    for row in want:
        ours = by[(row[0], row[1])]
        for col in ("FCFS", "WFP3", "UNICEP", "SJF", "F1"):
            cell = row[header.index(col)]
            assert _same(cell, ours[col]), (row[:2], col, cell, ours[col])
        cell = row[header.index("RL (ours)")]
        assert _same(cell, ours["RL"]), (row[:2], "RL", cell, ours["RL"])


@pytest.mark.parametrize("slow", [pytest.param(False), pytest.param(True, marks=pytest.mark.slow)])
def test_seed_table_cells(slow):
    rows = _section("#### Judged over training seeds")
    header, body = rows[0], rows[1:]
    want = body if slow else [r for r in body if r[0] == "hpc2n" and r[1] == "yes"
                              and r[2] == "bsld"]
    assert want
    keys = [(r[0], "fairness" if r[2] != "bsld" else "bsld", r[1] == "yes") for r in want]
    got = {(r["trace"], r["backfilling"], r["metric"]): r for r in seeds.seed_study(rows=keys)}
    for row in want:
        ours = got[(row[0], row[1], "bsld" if row[2] == "bsld" else "max_user_bsld")]
        for col, key in (("best heuristic", "best"), ("seed 0", "s0"), ("seed 1", "s1"),
                         ("seed 2", "s2"), ("mean", "mean"), ("sd", "sd")):
            cell = row[header.index(col)]
            assert _same(cell, ours[key]), (row[:3], col, cell, ours[key])
        assert row[header.index("seeds beating it")] == ours["beats"]
        assert _num(row[header.index("shipped")]) == ours["shipped_seed"] == ours["chosen_seed"]


@pytest.mark.slow
def test_table7_cells():
    rows = _section("#### Generalisation (Table VII) and fairness (Table VIII)")
    header, body = rows[0], rows[1:]
    got = rls.table7()
    value = {(r["trace"], r["backfill"] != "none", r["policy"]): r["bsld"] for r in got
             if r["source"] == "rlscheduler"}
    for row in body:
        trace, bf = row[0], row[1] == "yes"
        for model in rls.CROSS_TRACES:
            cell = row[header.index(f"RL-{model}")]
            policy = f"rl:pretrained/{rls.model_name(model, 'bsld', bf)}"
            assert _same(cell, value[(trace, bf, policy)]), (trace, bf, model, cell)


@pytest.mark.slow
def test_table8_cells():
    lines = README.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Fairness (paper Table VIII"))
    rows = []
    for line in lines[start:]:
        if line.startswith("| no | ours") or line.startswith("| yes | ours"):
            rows.append([c.strip() for c in line.strip().strip("|").split("|")])
        if len(rows) == 2:
            break
    got = rls.pivot(rls.table8(), "max_user_bsld")
    by = {r["backfilling"]: r for r in got if r["source"] == "rlscheduler"}
    for row in rows:
        ours = by[row[0]]
        for i, col in enumerate(("FCFS", "WFP3", "UNICEP", "SJF", "F1", "RL")):
            assert _same(row[2 + i], ours[col]), (row[0], col, row[2 + i], ours[col])
