"""The README's learned baselines on Physical ("Learned baselines on Physical: `--baselines`")
against the runs, kept in benchmarks/data/physical_baselines/: both runs' log.csv and
config.json, and RLScheduler's best.pt (slim; DRAS-PG's, 6.5 MB slim, is not bundled, so its rows
are not re-scored here).

Fast: the training facts the paragraph gives, from the logs. Slow: the RLScheduler row of the
test day, re-run through `experiment herasched`'s evaluation, against the grid beside it."""

import csv
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "benchmarks" / "data" / "physical_baselines"


def paragraph() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index("**Learned baselines on Physical: `--baselines`")
    end = text.index("Not here: more seeds", start)
    return " ".join(text[start:end].split())


def log(name: str) -> list[dict[str, str]]:
    with open(DATA / f"{name}-log.csv", newline="") as f:
        return list(csv.DictReader(f))


def test_rlscheduler_never_had_a_choice():
    rows = log("rl-ph")
    assert "reward 0 and entropy 0 in all 100 epochs" in paragraph()
    assert len(rows) == 100
    assert all(float(r["mean_reward"]) == 0 and float(r["entropy"]) == 0 for r in rows)
    (bound,) = re.search(r"policy loss of at most ([\d.e-]+)", paragraph()).groups()
    assert max(abs(float(r["loss_pi"])) for r in rows) <= float(bound)


def test_dras_pg_waits_only_in_its_synthetic_jobsets():
    rows = log("dras-pg-ph")
    text = paragraph()
    assert "wait 0 s in episodes 1-16" in text and "only its 24 synthetic ones do" in text
    real = [r for r in rows if r["phase"] in ("sampled", "real")]
    assert [int(r["episode"]) for r in real] == list(range(1, 17))
    assert all(float(r["wait"]) == 0 for r in real)
    synthetic = [r for r in rows if r["phase"] == "synthetic"]
    assert len(synthetic) == 24
    lo, hi = (float(v) for v in re.search(r"period: ([\d.]+)-(\d+) s\)", text).groups())
    waits = [float(r["wait"]) for r in synthetic]
    assert round(min(waits), 1) == lo and round(max(waits)) == hi
    vlo, vhi = (float(v) for v in re.search(r"fifth digit \(([\d.]+)-([\d.]+)\)", text).groups())
    val = [float(r["val_reward"]) for r in rows if r["val_reward"]]
    assert round(min(val), 3) == vlo and round(max(val), 3) == vhi


@pytest.mark.slow
def test_the_rlscheduler_row_of_the_test_day(tmp_path):
    from hpcsched.experiments.herasched_eval import evaluate, period_prepared

    m = re.search(r"\| test \(12,019 jobs\) \| rl:rl-ph \| ([\d.,]+) / ([\d,]+) \| (\d+) of 21 "
                  r"\| (\d+) of 21 \| ([\d.]+) \(F1 \+ best-fit\)", paragraph())
    assert m, "README: no RLScheduler test-day row"
    awt, mwt, awt_below, mwt_below, s = (float(v.replace(",", "")) for v in m.groups())
    prepared = period_prepared("spartan-physical", "test")
    assert len(prepared.jobs) == 12019
    spec = f"rl:{DATA / 'rl-ph.pt'}"
    ev = evaluate(prepared, [], cluster="spartan-physical", period="test", baselines=[spec])
    (b,) = ev.baselines
    assert round(b.awt, 1) == awt and round(b.mwt) == mwt
    facts = ev.baseline_facts(b)
    assert facts["cells_awt_above"] == awt_below and facts["cells_mwt_above"] == mwt_below
    assert facts["best_cell"] == "f1 + best-fit" and round(facts["score_vs_best_cell"], 2) == s
