"""The README's "Two more Physical seeds" against benchmarks/data/herasched_physical_more/: the runs
of seeds 3 and 4 (the shipped Physical command: log.csv, config.json, printed output, best.pt
slim) and `experiment herasched` on the five seeds (experiment-5.txt), whose first three are the
shipped models as benchmarks/data/herasched_physical/experiment.txt has them."""

import csv
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.experiments.test_readme_herasched_physical import flat, num

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "benchmarks" / "data" / "herasched_physical_more"
SHIPPED = ROOT / "benchmarks" / "data" / "herasched_physical"
SEEDS = (3, 4)
MODEL = r"(?:pretrained/herasched-physical-s|runs/ph-s)(\d)"


def readme() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index("**Two more Physical seeds")
    return text[start:text.index("**The two networks on Physical", start)]


def rows(seed: int) -> list[dict]:
    with open(DATA / f"s{seed}" / "log.csv", newline="") as f:
        return list(csv.DictReader(f))


def best(seed: int) -> tuple[int, float]:
    """best.pt's update and S: the first update of the highest validation S (the untrained
    model's score is no candidate)."""
    logged = [(int(r["epoch"]), float(r["val_score"])) for r in rows(seed) if r["val_score"]]
    top = max(s for _, s in logged)
    return next(e for e, s in logged if s == top), top


def parts(path: Path) -> list[str]:
    test, high = path.read_text().split("== physical-test-high-load")
    return [test, high]


def models(part: str) -> dict[int, tuple[str, str, str, str]]:
    """Each model's line of one period: seed -> (AWT, MWT, cells below, cells S > 2)."""
    found = re.findall(MODEL + r": AWT ([\d,.]+) s, MWT ([\d,]+) s;.*?\(below (\d+) of 21\); "
                               r"S > 2 against (\d+) of 21", part)
    return {int(m[0]): m[1:] for m in found}


def table() -> dict[str, list[str]]:
    out = {}
    for line in readme().splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if line.startswith("| test") and len(cells) == 5:
            out[cells[0]] = cells[1:]
    return out


@pytest.mark.parametrize("seed", SEEDS)
def test_each_run_is_the_shipped_command_with_its_seed_stopped_after_update_60(seed):
    ours = json.loads((DATA / f"s{seed}" / "config.json").read_text())
    shipped = json.loads((SHIPPED / "s0" / "config.json").read_text())
    assert ours["seed"] == seed
    # options added since the shipped runs, at their defaults (none of them used)
    assert ours.pop("reserve_after") is None
    options = ours["run_options"]
    assert options.pop("validate_also") is None and options.pop("init") is None
    assert {k: v for k, v in ours.items() if k != "seed"} == \
        {k: v for k, v in shipped.items() if k != "seed"}
    assert [int(r["epoch"]) for r in rows(seed)] == list(range(1, 61))


def test_best_pt_as_the_readme_says():
    text = flat(readme())
    (u3, s3), (u4, s4) = best(3), best(4)
    assert f"best.pt came at update {u3} (validation S {s3:.3f}) and {u4} ({s4:.3f})" in text
    for seed in SEEDS:
        out = (DATA / f"s{seed}" / "output.txt").read_text()
        assert "the last 5000 jobs of ph-validation.txt; FCFS + best-fit + EASY there: AWT 15 s" \
            in out


def test_the_first_three_models_are_the_shipped_models_as_read_before():
    for ours, theirs in zip(parts(DATA / "experiment-5.txt"), parts(SHIPPED / "experiment.txt")):
        five, three = models(ours), models(theirs)
        assert sorted(five) == [0, 1, 2, 3, 4] and sorted(three) == [0, 1, 2]
        for seed in (0, 1, 2):
            assert five[seed][:2] == three[seed][:2]


def test_the_table_is_the_experiment_s_output():
    got = table()
    for key, part in zip(("test, five seeds", "test high-load day, five seeds"),
                         parts(DATA / "experiment-5.txt")):
        found = models(part)
        mean = re.search(r"\| mean ± sd of 5 models \| ([\d,.]+) ± ([\d,.]+) \| "
                         r"([\d,]+) ± ([\d,]+) \|", part)
        crit = re.search(r"MWT below every cell's: (yes|no) \([\d,]+ s, mean of 5 models; the "
                         r"lowest cell's ([\d,]+) s, .*?; below (\d+) of 21 cells\)", part)
        s2 = re.search(r"- S > 2 against (\d+) of 21 cells \(mean S over the models", part)
        seeds = range(5)
        assert got[key] == [
            ", ".join(found[s][0] for s in seeds) + f"; {mean[1]} ± {mean[2]}",
            ", ".join(found[s][1] for s in seeds) + f"; {mean[3]} ± {mean[4]}",
            f"{crit[1]} (lowest cell {crit[2]} s; below {crit[3]} of 21)",
            f"{s2[1]} of 21 ({', '.join(found[s][3] for s in seeds)})"]
        assert num(mean[3]) == pytest.approx(sum(num(found[s][1]) for s in seeds) / 5, abs=1)


@pytest.mark.slow
@pytest.mark.parametrize("seed", SEEDS)
def test_each_best_pt_rescored_on_both_periods(seed):
    from hpcsched.experiments.herasched_eval import period_prepared, run_model

    path = str(DATA / f"s{seed}" / "best.pt")
    for split, part in zip(("test", "test-high-load"), parts(DATA / "experiment-5.txt")):
        run = run_model(period_prepared("spartan-physical", split), path)
        awt, mwt = models(part)[seed][:2]
        assert (f"{run.awt:,.1f}", f"{run.mwt:,.0f}") == (awt, mwt)


def test_the_bullets_are_the_experiment_s_output():
    text = flat(readme())
    test, high = parts(DATA / "experiment-5.txt")
    crit = re.search(r"MWT below every cell's: no \(([\d,]+) s, mean of 5 models; the lowest "
                     r"cell's ([\d,]+) s, lcfs \+ best-fit; below (\d+) of 21 cells\)", test)
    low = re.search(r"lowest S ([\d.]+) against f1 \+ best-fit", test)
    assert (f"the mean MWT, {crit[1]} s, is above the lowest cell's {crit[2]} s** (LCFS + "
            f"best-fit) and below {crit[3]} cells' only") in text
    assert f"(lowest {low[1]}, against F1 + best-fit)" in text
    found = models(test)
    assert f"seeds 3 and 4 alone beat {found[3][3]} and {found[4][3]} cells by S" in text
    hcrit = re.search(r"MWT below every cell's: no \(([\d,]+) s, mean of 5 models; the lowest "
                      r"cell's ([\d,]+) s", high)
    hlow = re.search(r"- S > 2 against 0 of 21 cells \(mean S over the models; lowest S ([\d.]+)",
                     high)
    assert (f"mean MWT {hcrit[1]} s against the lowest cell's {hcrit[2]} s, S > 2 against none "
            f"(lowest mean S {hlow[1]})") in text


# -- which half does what, on five seeds ---------------------------------------------------------
HALVES = ROOT / "benchmarks" / "data" / "herasched_halves"
HALF_FILES = ("physical-shipped-test.json", "physical-shipped.json", "physical-more-test.json")
SELECTORS = ("fcfs", "lcfs", "sjf", "wfp3", "unicep", "f1", "f2")
ALLOCATORS = ("topology", "best-fit", "first-available")
MORE = tuple(f"benchmarks/data/herasched_physical_more/s{s}/best.pt" for s in SEEDS)


def halves(names=HALF_FILES, period: str = "test"):
    """The period's heuristic cells {cell: row} and agent runs {cell: {model: row}} of halves
    files (`herasched_halves.py --json`) together; a heuristic cell two files give differently
    fails here."""
    grid, agents = {}, {}
    for name in names:
        for r in json.loads((HALVES / name).read_text()):
            if r["period"] != period:
                continue
            cell = (r["selector"], r["allocator"])
            if r["model"]:
                agents.setdefault(cell, {})[r["model"]] = r
            else:
                assert grid.setdefault(cell, r)["max_wait"] == r["max_wait"], (name, cell)
    return grid, agents


def test_the_halves_of_seeds_3_and_4_agree_with_the_experiment():
    """The corner of the halves runs is each model as `experiment herasched` read it."""
    _, agents = halves()
    found = models(parts(DATA / "experiment-5.txt")[0])
    for seed, model in zip(SEEDS, MORE):
        r = agents["agent", "agent"][model]
        assert (f"{r['wait']:,.1f}", f"{r['max_wait']:,.0f}") == found[seed][:2]
    assert all(len(runs) == 5 for runs in agents.values())


def test_the_five_seed_halves_bullet_is_the_runs():
    from hpcsched.sim.metrics import combined_score

    text = flat(readme())
    grid, agents = halves()
    lowest = min(g["max_wait"] for g in grid.values())

    def mean(cell, which=None):
        runs = [r for m, r in agents[cell].items() if which is None or m in which]
        return float(np.mean([r["max_wait"] for r in runs]))

    column = [(s, "agent") for s in SELECTORS]
    two = {c[0]: mean(c, MORE) for c in column}
    row_low = {s: min(grid[s, a]["max_wait"] for a in ALLOCATORS) for s in SELECTORS}
    assert [s for s in SELECTORS if two[s] < row_low[s]] == ["unicep"]
    most = max(sum(g["max_wait"] > v for g in grid.values()) for v in two.values())
    assert (f"behind the seven is {min(two.values()):,.0f}-{max(two.values()):,.0f} s, against "
            f"{mean(('agent', 'agent'), MORE):,.0f} s with its own selector") in text
    assert f"below at most {most} of the 21 cells" in text
    five = {c: mean(c) for c in agents}
    best = min(column, key=five.get)
    assert best == ("wfp3", "agent") and five[best] > lowest
    below = sum(g["max_wait"] > five[best] for g in grid.values())
    assert (f"lowest mean MWT is {five[best]:,.0f} s (WFP3 + allocator agent), above the lowest "
            f"cell's {lowest:,.0f} s and below {below} of 21 cells") in text
    assert not any(five[c] < lowest for c in agents)  # no agent cell meets the MWT criterion
    for c in column:  # mean S > 2 against every cell, in every row of the column
        assert all(np.mean([combined_score(r, g) for r in agents[c].values()]) > 2
                   for g in grid.values()), c
    sel = [five["agent", a] for a in ALLOCATORS]
    assert f"(mean MWT {min(sel):,.0f}-{max(sel):,.0f} s)" in text


def test_the_halves_report_from_json_is_the_stored_output():
    """`herasched_halves.py --from-json` over the three files prints physical-five-test.txt (the
    last line, with its timings, aside)."""
    shipped = ",".join(f"pretrained/herasched-physical-s{s}" for s in range(3))
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "herasched_halves.py"), "--cluster",
         "spartan-physical", "--periods", "test", "--models", ",".join((shipped,) + MORE),
         "--from-json", ",".join(str(HALVES / f) for f in HALF_FILES)],
        capture_output=True, text=True, check=True, cwd=ROOT).stdout
    stored = (HALVES / "physical-five-test.txt").read_text()
    assert out.rsplit("\nmodels=", 1)[0] == stored.rsplit("\nmodels=", 1)[0]
