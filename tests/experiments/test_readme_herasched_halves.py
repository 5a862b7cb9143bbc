"""The README's "Which half does what" against benchmarks/data/herasched_halves/: the output and
the rows (`--json`) of `benchmarks/herasched_halves.py` on Deeplearn's five squared-reward models
(benchmarks/data/herasched_deeplearn_squared/m0-m4), the grid's cells in them against the grid run
now, one model's runs made again, and every number the paragraph quotes recomputed from the
rows."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.experiments.test_readme_herasched_physical import flat, num

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "benchmarks" / "data" / "herasched_halves"
MODELS = ROOT / "benchmarks" / "data" / "herasched_deeplearn_squared"
SELECTORS = ("fcfs", "lcfs", "sjf", "wfp3", "unicep", "f1", "f2")
ALLOCATORS = ("topology", "best-fit", "first-available")
NAMES = {"fcfs": "FCFS", "lcfs": "LCFS", "sjf": "SJF", "wfp3": "WFP3", "unicep": "UNICEP",
         "f1": "F1", "f2": "F2"}
PERIODS = {"test": "test", "test-high-load": "test high-load day"}


def readme() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index("**Which half does what")
    return text[start:text.index("**Two more Physical seeds", start)]


def rows(name: str = "deeplearn-squared") -> list[dict]:
    return json.loads((DATA / f"{name}.json").read_text())


def split(period: str, name: str = "deeplearn-squared"):
    """The period's heuristic cells {(selector, allocator): row} and agent cells {cell: [rows]}
    in the rows `name`.json."""
    grid, agents = {}, {}
    for r in rows(name):
        if r["period"] != period:
            continue
        if r["model"]:
            agents.setdefault((r["selector"], r["allocator"]), []).append(r)
        else:
            grid[r["selector"], r["allocator"]] = r
    return grid, agents


def label(cell) -> str:
    if cell == ("agent", "agent"):
        return "both agents (HeraSched)"
    if cell[0] == "agent":
        return f"selector agent + {cell[1]}"
    return f"{NAMES[cell[0]]} + allocator agent"


def table(which: int = 0) -> dict[tuple[str, str], list[str]]:
    """The paragraph's table `which` (0: Deeplearn's, 1: Physical's) by (period, cell)."""
    out = {}
    text = readme().split("On Physical, the shipped models")[which]
    for line in text.splitlines():
        cols = [c.strip() for c in line.strip("|").split("|")]
        if line.startswith("| test") and len(cols) == 7:
            out[cols[0], cols[1]] = cols[2:]
    return out


def lowest_beside(grid, cell) -> str:
    """The lowest MWT of the heuristic cells in the agent cell's row, column or whole grid."""
    if cell[0] in SELECTORS:
        near = {a: grid[cell[0], a]["max_wait"] for a in ALLOCATORS}
        best = min(near, key=near.get)
        return f"{near[best]:,.0f} ({best})"
    if cell[1] in ALLOCATORS:
        near = {s: grid[s, cell[1]]["max_wait"] for s in SELECTORS}
        best = min(near, key=near.get)
        return f"{near[best]:,.0f} ({NAMES[best]})"
    best = min(grid, key=lambda c: grid[c]["max_wait"])
    return f"{grid[best]['max_wait']:,.0f} ({NAMES[best[0]]} + {best[1]})"


def test_the_rows_are_every_cell_of_both_periods_and_every_model():
    models = {f"benchmarks/data/herasched_deeplearn_squared/m{s}/best.pt" for s in range(5)}
    for period in PERIODS:
        grid, agents = split(period)
        assert set(grid) == {(s, a) for s in SELECTORS for a in ALLOCATORS}
        assert set(agents) == {("agent", a) for a in ALLOCATORS + ("agent",)} | \
            {(s, "agent") for s in SELECTORS}
        for cell, runs in agents.items():
            assert {r["model"] for r in runs} == models, cell


def test_the_grid_cells_are_the_grid_run_now():
    from hpcsched.experiments.herasched_eval import period_prepared
    from hpcsched.experiments.herasched_grid import run_grid

    for period in PERIODS:
        grid, _ = split(period)
        now = run_grid(period_prepared("spartan-deeplearn", period))
        for cell, row in grid.items():
            assert (row["wait"], row["max_wait"]) == pytest.approx(
                (now.metrics[cell]["wait"], now.metrics[cell]["max_wait"]), rel=1e-12), cell


def test_the_corner_is_the_models_as_the_squared_paragraph_reads_them():
    """The agents' corner cell is each model as `experiment herasched` read it for the paragraph
    above (experiment-mixed-5.txt: per model AWT and MWT)."""
    text = (MODELS / "experiment-mixed-5.txt").read_text()
    test, high = text.split("== deeplearn-test-high-load")
    for period, part in (("test", test), ("test-high-load", high)):
        _, agents = split(period)
        for r in agents["agent", "agent"]:
            seed = re.search(r"/m(\d)/best\.pt$", r["model"])[1]  # the run folder it came from
            m = re.search(rf"runs/dqm-s{seed}: AWT ([\d,.]+) s, MWT ([\d,]+) s", part)
            assert m, r["model"]
            assert (num(m[1]), num(m[2])) == (round(r["wait"], 1), r["max_wait"])


#: each table's rows: (rows file, period, the agent cells taken from it)
DEEPLEARN = [("deeplearn-squared", p, None) for p in PERIODS]
PHYSICAL = [("physical-shipped", p, None) for p in PERIODS] + \
    [("physical-shipped-test", "test", [(s, "agent") for s in SELECTORS])]


@pytest.mark.parametrize("which, sources", [(0, DEEPLEARN), (1, PHYSICAL)])
def test_the_table_is_the_rows(which, sources):
    got = table(which)
    assert len(got) == (22 if which == 0 else 15)
    for name, period, only in sources:
        pname = PERIODS[period]
        grid, agents = split(period, name)
        assert len(agents) == (11 if name != "physical-shipped" else 4)
        if only is not None:
            agents = {c: agents[c] for c in only}
        for cell, runs in agents.items():
            awt = np.mean([r["wait"] for r in runs])
            mwt = np.mean([r["max_wait"] for r in runs])
            sd = np.std([r["max_wait"] for r in runs], ddof=1)
            score = {h: np.mean([g["wait"] / r["wait"] + g["max_wait"] / r["max_wait"]
                                 for r in runs]) for h, g in grid.items()}
            want = [f"{awt:,.1f}", f"{mwt:,.0f} ± {sd:,.0f}", lowest_beside(grid, cell),
                    str(sum(g["max_wait"] > mwt for g in grid.values())),
                    str(sum(v > 2 for v in score.values()))]
            assert got[pname, label(cell)] == want, (period, cell)


def test_the_bullets_are_the_table():
    text = flat(readme())
    t = {k: v for k, v in table().items()}

    def mwt(period, cell):
        return num(t[period, label(cell)][1].split(" ± ")[0])

    def beside(period, cell):
        return num(t[period, label(cell)][2].split(" (")[0])

    test_row = [("agent", a) for a in ALLOCATORS]
    lo, hi = min(mwt("test", c) for c in test_row), max(mwt("test", c) for c in test_row)
    assert f"from {mwt('test', ('agent', 'agent')):,.0f} s to {lo:,.0f}-{hi:,.0f} s" in text
    below = sorted(int(t["test", label(c)][3]) for c in test_row)
    assert f"above all but {below[0]}-{below[-1]} cells" in text
    # the allocator agent's column against its row's lowest, test period
    diff = {s: mwt("test", (s, "agent")) - beside("test", (s, "agent")) for s in SELECTORS}
    assert [s for s in SELECTORS if diff[s] < 0] == ["wfp3"]
    assert (f"by {diff['lcfs']:,.0f} s (LCFS), {diff['f2']:,.0f} s (F2), "
            f"{diff['fcfs']:,.0f} s (FCFS) and {diff['unicep']:,.0f}-{diff['sjf']:,.0f} s "
            f"(UNICEP, F1, SJF)") in text
    assert diff["unicep"] < diff["f1"] < diff["sjf"]
    _, agents = split("test")
    assert sum(r["max_wait"] == 28956 for r in agents["fcfs", "agent"]) == 3
    # the high-load day
    h = "test high-load day"
    grid, _ = split("test-high-load")
    lowest = min(g["max_wait"] for g in grid.values())
    for a in ("best-fit", "first-available"):
        assert mwt(h, ("agent", a)) < lowest and t[h, label(("agent", a))][3:] == ["21", "21"]
    assert mwt(h, ("agent", "topology")) > lowest
    assert (f"({mwt(h, ('agent', 'best-fit')):,.0f} s and "
            f"{mwt(h, ('agent', 'first-available')):,.0f} s)") in text
    diff = {s: mwt(h, (s, "agent")) - beside(h, (s, "agent")) for s in SELECTORS}
    lower = [s for s in SELECTORS if diff[s] < 0]
    assert lower == ["sjf", "wfp3", "unicep"]
    gains = sorted(-diff[s] for s in lower)
    losses = sorted(diff[s] for s in SELECTORS if diff[s] > 0)
    assert f"(by {gains[0]:,.0f}-{gains[-1]:,.0f} s)" in text
    assert f"(by {losses[0]:,.0f}-{losses[-1]:,.0f} s)" in text


def test_the_unshown_placements_are_the_output_s():
    out = (DATA / "deeplearn-squared.txt").read_text()
    test, high = out.split("spartan-deeplearn, test-high-load")
    counts = {}
    for part, name in ((test, "test"), (high, "high")):
        for s in SELECTORS:
            m = re.search(rf"^{s} \+ agent .* (\d+)$", part, re.M)
            counts[name, s] = int(m[1])
    assert all(counts["test", s] == 0 for s in SELECTORS)
    high_counts = [counts["high", s] for s in SELECTORS]
    assert f"{min(high_counts):,}-{max(high_counts):,} placements" in flat(readme())
    # and the per-model MWTs printed are the rows'
    _, agents = split("test")
    m = re.search(r"^fcfs \+ agent\s+([\d, ]+?)\s{2,}", test, re.M)
    assert [num(x) for x in m[1].split(", ")] == [r["max_wait"] for r in agents["fcfs", "agent"]]


def test_the_longest_waits_quoted_are_the_oldest_output():
    text = (DATA / "oldest-test.txt").read_text()
    blocks = {b.split(" on spartan")[0].strip(): b for b in text.split("\n\n") if " on spartan" in b}
    for seed in (0, 3):
        block = blocks[f"benchmarks/data/herasched_deeplearn_squared/m{seed}/best.pt"
                       f"@allocator=best-fit"]
        assert re.search(r"25002011\s+133,089\s+0\s+133,089", block)
    assert re.search(r"25002011\s+133,089\s+0\s+133,089", blocks["lcfs+best-fit"])
    assert re.search(r"25002011\s+34,721",
                     blocks["benchmarks/data/herasched_deeplearn_squared/m0/best.pt"])
    seed3 = (ROOT / "benchmarks/data/herasched_deeplearn_squared/oldest-s3.txt").read_text()
    assert "25002011    134,379" in seed3
    readme_text = flat(readme())
    assert "133,089 s, as under LCFS + best-fit" in readme_text and "34,721 s" in readme_text
    assert "seed 3 134,379 s" in readme_text


def test_the_job_is_eight_whole_gpu_nodes():
    from hpcsched.cluster.request import job_requests
    from hpcsched.experiments.herasched_eval import period_prepared

    prepared = period_prepared("spartan-deeplearn", "test")
    count, demand = job_requests(prepared.jobs, prepared.cluster)
    row = int(np.flatnonzero(np.asarray(prepared.jobs.job_id) == 25002011)[0])
    assert count[row] == 8 and demand[row][2] == 4 == prepared.cluster.capacity[:, 2].max()
    assert prepared.jobs.req_time[row] == 45 * 60
    assert "job 25002011 (eight nodes with all four GPUs of each, 45 min requested)" in \
        flat(readme())


def halves(tmp_path, *args) -> list[dict]:
    out = tmp_path / "rows.json"
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "herasched_halves.py"),
                    "--cluster", "spartan-deeplearn", "--workers", "1", "--json", str(out),
                    *args], cwd=ROOT, env=env, check=True, capture_output=True, text=True)
    return json.loads(out.read_text())


def same(ours: list[dict], model: str, periods) -> None:
    stored = {(r["period"], r["selector"], r["allocator"], r["model"]): r for r in rows()}
    for r in ours:
        if r["model"] or r["period"] in periods:
            key = (r["period"], r["selector"], r["allocator"], r["model"])
            assert r["model"] in ("", model)
            assert (r["wait"], r["max_wait"]) == pytest.approx(
                (stored[key]["wait"], stored[key]["max_wait"]), rel=1e-12), key


def test_one_model_s_fcfs_and_selector_cells_made_again(tmp_path):
    model = "benchmarks/data/herasched_deeplearn_squared/m2/best.pt"
    ours = halves(tmp_path, "--models", model, "--periods", "test", "--selectors", "fcfs")
    assert len([r for r in ours if r["model"]]) == 5
    same(ours, model, ("test",))


@pytest.mark.slow
def test_one_model_s_every_cell_made_again(tmp_path):
    model = "benchmarks/data/herasched_deeplearn_squared/m0/best.pt"
    ours = halves(tmp_path, "--models", model)
    assert len([r for r in ours if r["model"]]) == 2 * 11
    same(ours, model, PERIODS)


def mean_mwt(runs) -> float:
    return float(np.mean([r["max_wait"] for r in runs]))


def test_the_shipped_deeplearn_bullet_is_its_rows():
    text = flat(readme())
    grid, agents = split("test", "deeplearn-shipped")
    assert len(agents) == 11 and all(len(r) == 3 for r in agents.values())
    row = sorted(mean_mwt(agents["agent", a]) for a in ALLOCATORS)
    own = mean_mwt(agents["agent", "agent"])
    assert f"waits {row[0]:,.0f}-{row[-1]:,.0f} s (mean MWT) with a heuristic allocator and " \
           f"{own:,.0f} s with its own" in text and row[0] > own
    below = [s for s in SELECTORS
             if mean_mwt(agents[s, "agent"]) < min(grid[s, a]["max_wait"] for a in ALLOCATORS)]
    assert below == ["lcfs", "wfp3"]
    grid, agents = split("test-high-load", "deeplearn-shipped")
    below = [s for s in SELECTORS
             if mean_mwt(agents[s, "agent"]) < min(grid[s, a]["max_wait"] for a in ALLOCATORS)]
    assert below == ["sjf", "wfp3", "unicep"]
    row = sorted(mean_mwt(agents["agent", a]) for a in ALLOCATORS)
    own = mean_mwt(agents["agent", "agent"])
    assert f"({row[0]:,.0f}-{row[-1]:,.0f} s with a heuristic, {own:,.0f} s with its own)" in text
    assert row[0] > own


def test_the_physical_bullets_are_its_rows():
    text = flat(readme())
    got = table(1)
    test = [got["test", label(("agent", a))] for a in ALLOCATORS]
    mwts = sorted(num(t[1].split(" ± ")[0]) for t in test)
    scores = sorted(int(t[4]) for t in test)
    assert f"({mwts[0]:,.0f}-{mwts[-1]:,.0f} s, S > 2 against {scores[0]}-{scores[-1]} cells)" \
        in text
    assert got["test", label(("agent", "agent"))][3:] == ["21", "21"]
    high = {a: got["test high-load day", label(("agent", a))] for a in ALLOCATORS + ("agent",)}
    own = num(high["agent"][1].split(" ± ")[0])
    assert all(num(high[a][1].split(" ± ")[0]) < own for a in ALLOCATORS)
    quoted = ", ".join(f"{a} {high[a][1].split(' ± ')[0]} s" for a in
                       ("topology", "first-available", "best-fit"))
    assert f"({quoted}, against {own:,.0f} s)" in text
    assert max(int(high[a][4]) for a in ALLOCATORS) == 2
    grid, _ = split("test-high-load", "physical-shipped")
    assert min(g["max_wait"] for g in grid.values()) == 183611


def test_physical_s_two_runs_agree_and_its_column_bullet_is_the_rows():
    """The test period's grid and agent row are the same in both Physical files; the column."""
    grid, row = split("test", "physical-shipped")
    grid2, agents = split("test", "physical-shipped-test")
    assert grid == grid2
    for cell, runs in row.items():
        assert [(r["wait"], r["max_wait"]) for r in runs] == \
            [(r["wait"], r["max_wait"]) for r in agents[cell]]
    text = flat(readme())
    col = {s: mean_mwt(agents[s, "agent"]) for s in SELECTORS}
    assert all(col[s] < min(grid[s, a]["max_wait"] for a in ALLOCATORS) for s in SELECTORS)
    assert f"({min(col.values()):,.0f}-{max(col.values()):,.0f} s)" in text
    below = [sum(g["max_wait"] > col[s] for g in grid.values()) for s in SELECTORS]
    assert f"below {min(below)}-{max(below)} of the 21 cells" in text
    own = mean_mwt(agents["agent", "agent"])
    assert [s for s in SELECTORS if col[s] < own] == ["wfp3", "unicep", "f1", "f2"]
    seed2 = [r["max_wait"] for s in SELECTORS for r in agents[s, "agent"]
             if "physical-s2" in r["model"]]
    assert f"seed 2's allocator agent waits {min(seed2):,.0f}-{max(seed2):,.0f} s" in text
    m = re.search(r"^fcfs \+ agent .* (\d+)$",
                  (DATA / "physical-shipped-test.txt").read_text(), re.M)
    assert f"Under FCFS {int(m[1]):,} of the placements" in text
