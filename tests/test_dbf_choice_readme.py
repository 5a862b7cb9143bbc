"""DBF's checkpoints chosen for both metrics (README, "Choosing the checkpoint for both metrics";
benchmarks/dbf_choice.py): the saved output's arithmetic and rule, its agreement with the first
runs' logs (benchmarks/data/dbf_m32_seeds.tar.gz) and with the experiment's saved test rows
(dbf_m32_seeds_test.json), the README's numbers from it, and a bundled best.pt re-scored
on the 30 validation episodes."""

import importlib.util
import json
import re
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "data"
OUTPUT = DATA / "dbf_m32_choice.txt"
MARKER = "**Choosing the checkpoint for both metrics.**"


def load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def num(s: str) -> float:
    return float(s.replace(",", ""))


def parsed() -> dict:
    """The saved output: heuristics {label: (AWT, queue)}, runs {seed: [(update, logged AWT,
    AWT, queue, util, margin)]}, each run's two picks, and the test lines."""
    heur, runs, picks, test = {}, {}, {}, {}
    seed = None
    for line in OUTPUT.read_text().splitlines():
        if m := re.match(r"\s+(\S+)\s+AWT\s+([\d,]+) s\s+queue\s+([\d.]+)\s+util", line):
            heur[m.group(1)] = (num(m.group(2)), float(m.group(3)))
        elif m := re.match(r"k-s(\d): update", line):
            seed = int(m.group(1))
            runs[seed] = []
        elif m := re.match(r"\s+(\d+)\s+([\d,]+)\s+([\d,]+)\s+([\d.]+) ([\d.]+)\s+([\d.]+)$", line):
            u, logged, awt, q, util, mg = m.groups()
            runs[seed].append((int(u), num(logged), num(awt), float(q), float(util), float(mg)))
        elif m := re.match(r"\s+margin rule keeps update (\d+) .*best\.pt is update (\d+)", line):
            picks[seed] = (int(m.group(1)), int(m.group(2)))
        elif m := re.match(r"\s+k-s(\d)@(\d+)\s+\((margin|best\.pt)\s*\) AWT\s+([\d,]+) s\s+"
                           r"queue\s+([\d.]+)", line):
            test[int(m.group(1)), m.group(3)] = (int(m.group(2)), num(m.group(4)),
                                                 float(m.group(5)))
        elif m := re.match(r"\s+margin rule, mean over runs: AWT ([\d,]+) \+- ([\d,]+) s, "
                           r"queue ([\d.]+) \+- ([\d.]+)", line):
            test["mean"] = m.groups()
    return {"heur": heur, "runs": runs, "picks": picks, "test": test}


def section() -> str:
    text = (ROOT / "README.md").read_text()
    a = text.index(MARKER)
    b = text.find("\n#", a)
    return " ".join(text[a:b].split())


def test_the_margins_and_the_picks_follow_the_rule():
    out = parsed()
    heur = out["heur"]
    # the six heuristics of Fig. 3.4, with and without EASY (identical for sqf on one machine)
    assert sorted(heur) == sorted(["FCFS", "FCFS+EASY", "SJF", "SJF+EASY", "LCFS", "LCFS+EASY"])
    assert heur["SJF"] == heur["SJF+EASY"]
    best_w = min(w for w, _ in heur.values())
    best_q = min(q for _, q in heur.values())
    assert sorted(out["runs"]) == [0, 1, 2]
    for seed, rows in out["runs"].items():
        assert [r[0] for r in rows] == list(range(5, 61, 5))  # every validated update, 5..60
        for u, _, awt, q, _, mg in rows:
            # printed to 3 places from unrounded AWT and queue: within the roundings' reach
            assert mg == pytest.approx(max(awt / best_w, q / best_q), abs=1.2e-3), (seed, u)
        kept = min(rows, key=lambda r: (r[5], r[0]))[0]
        logged_best = min(rows, key=lambda r: (r[1], r[0]))[0]
        assert out["picks"][seed] == (kept, logged_best)


def test_the_logged_validations_are_the_first_runs():
    """The re-runs' 10-episode validation AWT is, update by update, the first runs' (archived
    in an earlier session): the runs reproduce them."""
    script = load("dbf_seeds")
    first = {r["config"]["seed"]: dict(script.run_facts(n, r)["validations"])
             for n, r in script.read_archive(script.ARCHIVE).items()}
    for seed, rows in parsed()["runs"].items():
        for u, logged, *_ in rows:
            assert logged == round(first[seed][u]), (seed, u)


def test_the_test_lines_are_the_experiments_rows():
    """The chosen checkpoints on the 100 test episodes give, seed by seed, the experiment's saved
    rows for the three bundled best.pt files (a separate run of `experiment dbf-baselines`)."""
    saved = {r["method"]: r for r in json.loads((DATA / "dbf_m32_seeds_test.json").read_text())}
    model = saved["M32-4@masked-3s"]
    test = parsed()["test"]
    for seed in (0, 1, 2):
        for which in ("margin", "best.pt"):
            _, awt, q = test[seed, which]
            assert awt == round(model["wait_per_seed"][seed])
            assert q == pytest.approx(model["queue_length_per_seed"][seed], abs=0.005)


def test_the_readme_numbers_come_from_the_output():
    readme = section()
    out = parsed()
    heur, runs = out["heur"], out["runs"]
    best_w = min(w for w, _ in heur.values())
    best_q = min(q for _, q in heur.values())
    assert heur["LCFS"][0] == best_w and f"LCFS's without backfilling ({best_w:,.0f} s)" in readme
    assert heur["SJF"][1] == best_q and f"(`sqf`, {best_q:.2f} jobs)" in readme
    rows = [r for rs in runs.values() for r in rs]
    assert len(rows) == 36 and "No checkpoint of the 36" in readme
    qs, ws = [r[3] for r in rows], [r[2] for r in rows]
    assert min(qs) > best_q and min(ws) > best_w  # the README's "no checkpoint ... nor"
    assert f"({min(qs):.2f}-{max(qs):.2f})" in readme
    assert f"({min(ws):,.0f}-{max(ws):,.0f} s)" in readme
    assert f"({min(qs) / best_q:.2f}-{max(qs) / best_q:.2f})" in readme
    assert f"({min(ws) / best_w:.2f}-{max(ws) / best_w:.2f})" in readme
    pct = f"{round(100 * (min(qs) / best_q - 1))}-{round(100 * (max(qs) / best_q - 1))} %"
    assert pct in readme
    kept = [out["picks"][s][0] for s in (0, 1, 2)]
    assert f"kept updates {kept[0]}, {kept[1]} and {kept[2]}" in readme
    w, w_sd, q, q_sd = out["test"]["mean"]  # the script's, from the unrounded values
    assert f"{w} ± {w_sd} s and {q} ± {q_sd} jobs" in readme
    test = [out["test"][s, "margin"] for s in (0, 1, 2)]
    assert num(w) == pytest.approx(np.mean([t[1] for t in test]), abs=1)
    assert float(q) == pytest.approx(np.mean([t[2] for t in test]), abs=0.005)


def test_the_margin_is_below_one_only_below_every_heuristic():
    """The rule's score on its own: above 1 as soon as either metric is above the lowest."""
    margin = load("dbf_choice").margin
    assert margin({"wait": 90.0, "queue_length": 9.0}, 100.0, 10.0) == pytest.approx(0.9)
    assert margin({"wait": 90.0, "queue_length": 11.0}, 100.0, 10.0) == pytest.approx(1.1)
    assert margin({"wait": 120.0, "queue_length": 9.0}, 100.0, 10.0) == pytest.approx(1.2)


def test_a_bundled_best_pt_scores_its_row():
    """Seed 0's bundled best.pt (update 15) on the 30 validation episodes, through the mask, and
    LCFS and SJF there: the saved output's rows (about 15 s on 2 cores)."""
    from hpcsched.experiments.dbf import Method
    from hpcsched.workload.windows import dbf_starts

    script = load("dbf_choice")
    starts = dbf_starts(10000, "validation", 30)
    path = DATA / "dbf_m32_seeds" / "s0.pt"
    got = script.score([Method("LCFS", "lcfs"), Method("SJF", "sqf"),
                        Method("s0", f"dbf:{path}@masked", kind="model")], starts, 2)
    out = parsed()
    row = next(r for r in out["runs"][0] if r[0] == 15)
    assert round(got[2]["wait"]) == row[2] and round(got[2]["queue_length"], 2) == row[3]
    assert round(got[0]["wait"]) == out["heur"]["LCFS"][0]
    assert round(got[1]["queue_length"], 2) == out["heur"]["SJF"][1]
