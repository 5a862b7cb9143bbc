"""The README's "Two more Physical seeds" against benchmarks/data/herasched_physical_more/: the runs
of seeds 3 and 4 (the shipped Physical command: log.csv, config.json, printed output, best.pt
slim) and `experiment herasched` on the five seeds (experiment-5.txt), whose first three are the
shipped models as benchmarks/data/herasched_physical/experiment.txt has them."""

import csv
import json
import re
from pathlib import Path

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
