"""The README's two CERIT-SC paragraphs of issue 17's session 40 against their data: the
squared-reward runs (benchmarks/data/herasched_cerit_squared/: log.csv, config.json, best.pt)
and "Which half fails on CERIT-SC" (benchmarks/data/herasched_cerit_halves/: the outputs and
rows of `benchmarks/herasched_halves.py`, and the flat selector of `benchmarks/herasched_flat.py`):
each output is what its rows print, the flat model is the script's, and every number of the
table and the bullets is recomputed from the rows."""

import csv
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.experiments.test_readme_herasched_physical import flat, num

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "benchmarks" / "data"
HALVES = DATA / "herasched_cerit_halves"
SQUARED = DATA / "herasched_cerit_squared"
WC = "@work-conserving"
MODELS = [f"benchmarks/data/{m}{WC}" for m in (
    "herasched_cerit_s0/best.pt", "herasched_cerit_ej1000/model.pt",
    "herasched_cerit_squared/s0/best.pt", "herasched_cerit_squared/s1/best.pt")]
FLAT = ["benchmarks/data/herasched_cerit_halves/flat.pt"]
RUNS = {"models-validation": ([m[:-len(WC)] for m in MODELS], "validation"),
        "wc-validation": (MODELS, "validation"), "wc-test": (MODELS, "test"),
        "flat-validation": (FLAT, "validation"), "flat-test": (FLAT, "test")}


def readme() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index("**Two CERIT-SC runs with the squared-wait reward")
    return text[start:text.index("**The shipped Deeplearn models: three seeds", start)]


def rows(name: str) -> list[dict]:
    return json.loads((HALVES / f"cerit-{name}.json").read_text())


def cells(name: str):
    """The heuristic cells {(selector, allocator): row} and the agent cells {cell: [rows]}."""
    grid, agents = {}, {}
    for r in rows(name):
        if r["model"]:
            agents.setdefault((r["selector"], r["allocator"]), []).append(r)
        else:
            grid[r["selector"], r["allocator"]] = r
    return grid, agents


def log(seed: int) -> list[dict]:
    with open(SQUARED / f"s{seed}" / "log.csv", newline="") as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("name", sorted(RUNS))
def test_each_output_is_what_its_rows_print(name):
    models, period = RUNS[name]
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "herasched_halves.py"), "--cluster",
         "cerit-zewura", "--periods", period, "--selectors", "none", "--models",
         ",".join(models), "--from-json", str(HALVES / f"cerit-{name}.json")],
        capture_output=True, text=True, check=True, cwd=ROOT).stdout
    stored = (HALVES / f"cerit-{name}.txt").read_text()
    assert out.rsplit("\nmodels=", 1)[0] == stored.rsplit("\nmodels=", 1)[0]


def test_the_flat_model_is_the_script_s(tmp_path):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from herasched_flat import flatten

    flatten(DATA / "herasched_cerit_s0" / "best.pt", tmp_path / "flat.pt")
    assert (tmp_path / "flat.pt").read_bytes() == (HALVES / "flat.pt").read_bytes()


def test_the_flat_selector_starts_the_first_job_of_its_window_that_fits():
    """Its selector's scores are all equal, so greedy takes the first allowed slot."""
    from hpcsched.agents.herasched_policy import load_herasched
    from hpcsched.experiments.herasched_eval import period_prepared
    from hpcsched.sim.run import simulate

    prepared = period_prepared("cerit-zewura", "validation", jobs=300)
    policy = load_herasched(HALVES / "flat.pt", place_with="best-fit")
    picked = []
    decide = policy.decide

    def watched(view):
        out = decide(view)
        if hasattr(out, "row"):
            snap = policy.observer.snapshot
            first = int(snap.rows[np.flatnonzero(snap.fits)[0]])
            picked.append(out.row == first)
        return out
    policy.decide = watched
    simulate(prepared, policy, backfill="easy")
    assert picked and all(picked)


def test_without_the_option_two_models_stall_on_the_validation_weeks():
    _, agents = cells("models-validation")
    mwt = {r["model"]: r["max_wait"] for r in agents["agent", "agent"]}
    stalled = sorted(m for m, v in mwt.items() if v > 1e8)
    assert stalled == ["benchmarks/data/herasched_cerit_ej1000/model.pt",
                       "benchmarks/data/herasched_cerit_squared/s1/best.pt"]
    assert "the second run's model and seed 1's stall on the validation" in flat(readme())


def table() -> dict[tuple[str, str, str], list[str]]:
    out = {}
    for line in readme().splitlines():
        c = [x.strip() for x in line.strip("|").split("|")]
        if len(c) == 7 and c[0] in ("validation", "test"):
            out[c[0], c[1], c[2]] = c[3:]
    return out


def cell_row(name: str, cell) -> list[str]:
    from hpcsched.sim.metrics import combined_score

    grid, agents = cells(name)
    runs = agents[cell]
    awt = np.mean([r["wait"] for r in runs])
    mwt = np.mean([r["max_wait"] for r in runs])
    below = sum(g["max_wait"] > mwt for g in grid.values())
    s2 = sum(np.mean([combined_score(r, g) for r in runs]) > 2 for g in grid.values())
    return [f"{awt:,.1f}", f"{mwt:,.0f}", str(below), str(s2)]


def test_the_table_is_the_rows():
    got = table()
    assert len(got) == 6
    for period in ("validation", "test"):
        agents = "the agents (4 models, mean)"
        assert got[period, agents, "the agent"] == cell_row(f"wc-{period}", ("agent", "agent"))
        assert got[period, agents, "best-fit"] == cell_row(f"wc-{period}", ("agent", "best-fit"))
        assert got[period, "flat", "best-fit"] == cell_row(f"flat-{period}", ("agent", "best-fit"))


def test_the_bullets_are_the_table():
    text = flat(readme())
    t = table()
    a = "the agents (4 models, mean)"

    def mwt(period, sel, alloc):
        return num(t[period, sel, alloc][1])

    for period, lowest, where in (("validation", 31300, "(four cells)"),
                                  ("test", 141824, "(FCFS + best-fit)")):
        grid, _ = cells(f"wc-{period}")
        low = min(g["max_wait"] for g in grid.values())
        assert low == lowest
        at = [c for c, g in grid.items() if g["max_wait"] == low]
        assert len(at) == 4 if period == "validation" else at == [("fcfs", "best-fit")]
        assert f"{lowest:,} s on the {period} weeks {where}" in text
    v, s = "validation", "test"
    assert (f"falls from {mwt(v, a, 'the agent'):,.0f} to {mwt(v, a, 'best-fit'):,.0f} s on the "
            f"validation weeks, and from {mwt(s, a, 'the agent'):,.0f} to "
            f"{mwt(s, a, 'best-fit'):,.0f} s on the test weeks") in text
    assert (f"{mwt(v, a, 'best-fit'):,.0f} against {mwt(v, 'flat', 'best-fit'):,.0f} s on the "
            f"validation weeks, {mwt(s, a, 'best-fit'):,.0f} against "
            f"{mwt(s, 'flat', 'best-fit'):,.0f} s on the test weeks") in text
    assert "(15 against 9)" in text
    assert t[s, "flat", "best-fit"][3] == "15" and t[s, a, "best-fit"][3] == "9"
    assert "(141,824 s)" in text and mwt(s, "flat", "best-fit") > 141824


def test_the_squared_runs_as_the_readme_says():
    text = flat(readme())
    for seed, updates, first_zero in ((0, 30, 20), (1, 31, 10)):
        rows_ = log(seed)
        assert len(rows_) == updates
        cfg = json.loads((SQUARED / f"s{seed}" / "config.json").read_text())
        assert (cfg["seed"], cfg["selector_reward"], cfg["episode_jobs"], cfg["ent_coef"]) == \
            (seed, "squared", 1000, 0.01)
        scores = {int(r["epoch"]): float(r["val_score"]) for r in rows_ if r["val_score"]}
        assert all(v < 0.001 for e, v in scores.items() if e >= first_zero)
        assert all(v >= 0.001 for e, v in scores.items() if e < first_zero)
        best = max(scores.values())
        assert min(e for e, v in scores.items() if v == best) == 10  # best.pt is update 10
        share = [100 * float(r["forward_with_fit_share"]) for r in rows_[-10:]]
        lo, hi = round(min(share)), round(max(share))
        assert f"{lo}-{hi} % of seed {seed}'s" in text or f"{lo}-{hi} % of seed {seed}" in text
    assert f"S 0.000** from update 20 on for seed 0 ({log(0)[9]['val_score'][:5]} at update 10)" \
        in text
    secs = [float(r["epoch_s"]) for s in (0, 1) for r in log(s)]
    assert f"{int(min(secs))}-{int(max(secs))} s an update" in text
    from hpcsched.modelfile import read_model
    for seed in (0, 1):
        assert read_model(SQUARED / f"s{seed}" / "best.pt")["epoch"] == 10


# -- the selector trained behind best-fit (`--allocator best-fit`) -----------------------------
BESTFIT = DATA / "herasched_cerit_bestfit"


def bestfit_log(seed: int) -> list[dict]:
    with open(BESTFIT / f"s{seed}" / "log.csv", newline="") as f:
        return list(csv.DictReader(f))


def test_the_runs_behind_best_fit_as_the_readme_says():
    import re

    text = flat(readme())
    secs = []
    for seed, best_update in ((0, 20), (1, 10)):
        rows_ = bestfit_log(seed)
        cfg = json.loads((BESTFIT / f"s{seed}" / "config.json").read_text())
        assert (cfg["seed"], cfg["place_with"], cfg["selector_reward"]) == \
            (seed, "best-fit", "accrued")
        assert len(rows_) == 60 and sum(int(r["selector_steps"]) for r in rows_) == 122880
        assert all(int(r["allocator_steps"]) == 0 for r in rows_)  # the agent never acted
        vals = [r for r in rows_ if r["val_score"]]
        assert [int(r["epoch"]) for r in vals] == [10, 20, 30, 40, 50, 60]
        # as the flat rule waits on the validation weeks (its row: cerit-flat-validation.json)
        _, flat_agents = cells("flat-validation")
        ref = flat_agents["agent", "best-fit"][0]
        assert all(float(r["val_max_wait"]) == ref["max_wait"] for r in vals)
        assert {round(float(r["val_wait"])) for r in vals} <= {127, 128}
        top = max(float(r["val_score"]) for r in vals)
        assert next(int(r["epoch"]) for r in vals if float(r["val_score"]) == top) == best_update
        assert f"{top:.3f}" in text
        untrained = re.search(r"untrained greedy model: validation S ([\d.]+)",
                              (BESTFIT / f"s{seed}" / "output.txt").read_text())[1]
        assert untrained in text
        secs += [float(r["epoch_s"]) for r in rows_]
        from hpcsched.modelfile import read_model
        assert read_model(BESTFIT / f"s{seed}" / "best.pt")["epoch"] == best_update
    assert f"{int(min(secs))}-{int(max(secs))} s an update" in text


def test_the_test_weeks_as_the_readme_says():
    import re

    text = flat(readme())
    out = (BESTFIT / "experiment-test.txt").read_text()
    per = re.findall(r"runs/cb-s(\d): AWT ([\d,.]+) s, MWT ([\d,]+) s", out)
    assert [p[0] for p in per] == ["0", "1"]
    mean = re.search(r"\| mean ± sd of 2 models \| ([\d,.]+) ± [\d,.]+ \| ([\d,]+) ± ", out)
    assert num(mean[2]) == pytest.approx(np.mean([num(p[2]) for p in per]), abs=1)
    assert (f"Mean AWT {mean[1]} s and MWT {mean[2]} s (per seed {per[0][2]} and {per[1][2]} "
            f"s)") in text
    grid, fl = cells("flat-test")
    f = fl["agent", "best-fit"][0]
    fb = grid["fcfs", "best-fit"]
    assert (f"the flat rule with best-fit's {f['wait']:,.1f} s and {f['max_wait']:,.0f} s and "
            f"FCFS + best-fit's {fb['wait']:,.1f} s and {fb['max_wait']:,.0f} s") in text
    assert num(mean[2]) > f["max_wait"] and num(mean[1]) > f["wait"]  # worse than the flat rule
    crit = re.search(r"below (\d+) of 21 cells\)\n- S > 2 against (\d+) of 21", out)
    assert f"The MWT is below {crit[1]} of the 21 cells, and S > 2 against {crit[2]}" in text


@pytest.mark.slow
def test_each_best_pt_rescored_on_the_test_weeks():
    import re

    from hpcsched.experiments.herasched_eval import period_prepared, run_model

    out = (BESTFIT / "experiment-test.txt").read_text()
    prepared = period_prepared("cerit-zewura", "test")
    for seed in (0, 1):
        run = run_model(prepared, str(BESTFIT / f"s{seed}" / "best.pt"))
        m = re.search(rf"runs/cb-s{seed}: AWT ([\d,.]+) s, MWT ([\d,]+) s", out)
        assert (f"{run.awt:,.1f}", f"{run.mwt:,.0f}") == (m[1], m[2])
