"""The README's "Against a flat selector" against benchmarks/data/herasched_halves/: the flat
selectors' outputs are what their rows print, the heuristic cells are those of the trained
selectors' runs, and the table and every number of the bullets are recomputed from the rows
(the trained selectors' from the rows "Which half does what" and "Two more Physical seeds" read)."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.experiments.test_readme_herasched_physical import flat, num
from tests.experiments.test_readme_herasched_physical_more import halves

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "benchmarks" / "data" / "herasched_halves"
ALLOCATORS = ("agent", "topology", "best-fit", "first-available")
#: (label, cluster, period, the trained selectors' rows, the flat selector's rows, the flat
#: models read (None: all five))
SETS = [
    ("Deeplearn, test", "spartan-deeplearn", "test", ["deeplearn-squared"], "deeplearn-flat",
     None),
    ("Deeplearn, high-load day", "spartan-deeplearn", "test-high-load", ["deeplearn-squared"],
     "deeplearn-flat", None),
    ("Physical, test", "spartan-physical", "test",
     ["physical-shipped-test", "physical-shipped", "physical-more-test"], "physical-flat-test",
     None),
    # the trained selectors' rows there are the three shipped seeds': their three flat copies
    ("Physical, high-load day", "spartan-physical", "test-high-load", ["physical-shipped"],
     "physical-flat-high", ("flat-ph0.pt", "flat-ph1.pt", "flat-ph2.pt")),
]


def readme() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index("**Against a flat selector")
    return text[start:text.index("**The two networks on Physical", start)]


def load(names, period):
    return halves([f"{name}.json" for name in names], period)


def computed():
    """{(label, allocator): (trained MWT, below, flat MWT, below)} and the lowest cells."""
    out, lowest = {}, {}
    for label, _, period, trained, flat_rows, keep in SETS:
        grid, t = load(trained, period)
        grid2, f = load([flat_rows], period)
        if keep is not None:
            f = {c: {m: r for m, r in runs.items() if m in keep} for c, runs in f.items()}
        assert {c: g["max_wait"] for c, g in grid.items()} == \
            {c: g["max_wait"] for c, g in grid2.items()}  # the same 21 cells
        lowest[label] = min(g["max_wait"] for g in grid.values())
        for a in ALLOCATORS:
            n = 5 if keep is None else len(keep)
            assert len(t["agent", a]) == n and len(f["agent", a]) == n
            tm = np.mean([r["max_wait"] for r in t["agent", a].values()])
            fm = np.mean([r["max_wait"] for r in f["agent", a].values()])
            out[label, a] = (tm, sum(g["max_wait"] > tm for g in grid.values()),
                             fm, sum(g["max_wait"] > fm for g in grid.values()))
    return out, lowest


def test_the_table_is_the_rows():
    got = {}
    for line in readme().splitlines():
        c = [x.strip() for x in line.strip("|").split("|")]
        if len(c) == 6 and c[0] in {s[0] for s in SETS}:
            got[c[0], "agent" if c[1] == "its own agent" else c[1]] = c[2:]
    rows, _ = computed()
    assert set(got) == set(rows)
    for key, (tm, tb, fm, fb) in rows.items():
        assert got[key] == [f"{tm:,.0f}", str(tb), f"{fm:,.0f}", str(fb)], key


def test_the_bullets_are_the_rows():
    text = flat(readme())
    rows, lowest = computed()
    assert (f"{lowest['Deeplearn, test']:,.0f} s (Deeplearn, test), "
            f"{lowest['Deeplearn, high-load day']:,.0f} s (its high-load day), "
            f"{lowest['Physical, test']:,.0f} s (Physical, test) and "
            f"{lowest['Physical, high-load day']:,.0f} s (its high-load day)") in text
    ph = {a: rows["Physical, high-load day", a] for a in ALLOCATORS}
    assert (f"({ph['agent'][2]:,.0f} against {ph['agent'][0]:,.0f} s)" in text
            and ph["agent"][2] < ph["agent"][0])
    assert [a for a in ALLOCATORS if ph[a][0] < ph[a][2]] == ["topology", "best-fit"]
    assert min(min(v[0], v[2]) for v in ph.values()) > lowest["Physical, high-load day"]
    high = [rows["Deeplearn, high-load day", a] for a in ALLOCATORS]
    gaps = [f - t for t, _, f, _ in high]
    assert min(gaps) > 0 and f"it is {min(gaps):,.0f}-{max(gaps):,.0f} s below the flat" in text
    assert [a for a in ALLOCATORS if rows["Deeplearn, high-load day", a][1] == 21] == \
        ["agent", "best-fit", "first-available"]
    assert all(f[3] < 21 for f in high)  # the flat rule is never below every cell there
    test = {a: rows["Deeplearn, test", a] for a in ALLOCATORS}
    assert [a for a in ALLOCATORS if test[a][0] < test[a][2]] == ["agent", "best-fit"]
    own = rows["Physical, test", "agent"]
    assert f"({own[0]:,.0f} against {own[2]:,.0f} s, both below {own[1]} cells)" in text
    assert own[1] == own[3]
    bf = rows["Physical, test", "best-fit"]
    assert bf[3] == 21 and bf[2] < lowest["Physical, test"]
    assert f"every cell on Physical's test period** ({bf[2]:,.0f} s)" in text
    out = (DATA / "physical-flat-test.txt").read_text()
    s2 = next(ln for ln in out.splitlines() if ln.startswith("agent + best-fit"))
    assert s2.split()[-3] == "19/21" and "S > 2 against 19 of the 21 cells" in text


def test_the_flat_cells_with_a_heuristic_allocator_do_not_depend_on_the_model():
    """The flat selector's schedule is the model's only through its allocator agent."""
    for _, _, period, _, flat_rows, _ in SETS:
        _, f = load([flat_rows], period)
        for a in ALLOCATORS[1:]:
            assert len({(r["wait"], r["max_wait"]) for r in f["agent", a].values()}) == 1


@pytest.mark.parametrize("name, cluster, periods", [
    ("deeplearn-flat", "spartan-deeplearn", "test,test-high-load"),
    ("physical-flat-test", "spartan-physical", "test"),
    ("physical-flat-high", "spartan-physical", "test-high-load")])
def test_each_output_is_what_its_rows_print(name, cluster, periods):
    prefix = "flat-dqm" if cluster == "spartan-deeplearn" else "flat-ph"
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "herasched_halves.py"), "--cluster", cluster,
         "--periods", periods, "--selectors", "none",
         "--models", ",".join(f"{prefix}{s}.pt" for s in range(5)),
         "--from-json", str(DATA / f"{name}.json")],
        capture_output=True, text=True, check=True, cwd=ROOT).stdout
    stored = (DATA / f"{name}.txt").read_text()
    assert out.rsplit("\nmodels=", 1)[0] == stored.rsplit("\nmodels=", 1)[0]


@pytest.mark.slow
def test_a_flat_deeplearn_model_made_again_runs_its_cells(tmp_path):
    """The script's flat copy of dqm-s0, run again: its own-allocator and best-fit cells on the
    test period are the rows'."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from herasched_flat import flatten
    from hpcsched.experiments.herasched_eval import period_prepared
    from hpcsched.experiments.policyspec import resolve_policy
    from hpcsched.sim.run import simulate

    path = tmp_path / "flat-dqm0.pt"
    flatten(ROOT / "benchmarks/data/herasched_deeplearn_squared/m0/best.pt", path)
    prepared = period_prepared("spartan-deeplearn", "test")
    _, f = load(["deeplearn-flat"], "test")
    for option, alloc in (("", "agent"), ("@allocator=best-fit", "best-fit")):
        run = simulate(prepared, resolve_policy(f"herasched:{path}{option}", prepared),
                       backfill="easy")
        row = f["agent", alloc]["flat-dqm0.pt"]
        assert (run.metrics["wait"], run.metrics["max_wait"]) == \
            pytest.approx((row["wait"], row["max_wait"]), rel=1e-12)


# -- the Physical selector trained behind best-fit ------------------------------------------------
BESTFIT = ROOT / "benchmarks" / "data" / "herasched_physical_bestfit"


def bestfit_readme() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index("**A Physical selector trained behind best-fit")
    return flat(text[start:text.index("**The two networks on Physical", start)])


def test_the_physical_runs_behind_best_fit_as_the_readme_says():
    import csv
    import re

    from hpcsched.modelfile import read_model

    text = bestfit_readme()
    secs = []
    for seed, best in ((0, 20), (1, 10), (2, 10)):
        with open(BESTFIT / f"s{seed}" / "log.csv", newline="") as fh:
            rows = list(csv.DictReader(fh))
        cfg = json.loads((BESTFIT / f"s{seed}" / "config.json").read_text())
        assert (cfg["seed"], cfg["place_with"], cfg["cluster"]) == \
            (seed, "best-fit", "spartan-physical")
        assert len(rows) == 30 and sum(int(r["selector_steps"]) for r in rows) == 61440
        assert all(int(r["allocator_steps"]) == 0 for r in rows)
        scores = [(int(r["epoch"]), float(r["val_score"])) for r in rows if r["val_score"]]
        top = max(v for _, v in scores)
        assert next(e for e, v in scores if v == top) == best
        assert read_model(BESTFIT / f"s{seed}" / "best.pt")["epoch"] == best
        secs += [float(r["epoch_s"]) for r in rows]
        if seed == 0:
            assert "S 1.550, 2.120 and 1.895 at updates 10, 20 and 30" in text
            assert [e for e, _ in scores] == [10, 20, 30]
            assert [f"{v:.3f}" for _, v in scores] == ["1.550", "2.120", "1.895"]
        else:
            assert {f"{v:.3f}" for _, v in scores} == {"2.005"}
    assert f"{int(min(secs))}-{int(max(secs))} s an update" in text
    out = (BESTFIT / "experiment-test.txt").read_text()
    per = re.findall(r"runs/pb-s\d: AWT [\d,.]+ s, MWT ([\d,]+) s", out)
    mean = re.search(r"\| mean ± sd of 3 models \| [\d,.]+ ± [\d,.]+ \| ([\d,]+) ± ", out)[1]
    crit = re.search(r"below (\d+) of 21 cells\)\n- S > 2 against (\d+) of 21", out)
    assert (f"Mean MWT {mean} s (per seed {per[0]}, {per[1]} and {per[2]} s)") in text
    assert f"below {crit[1]} of the 21 cells, with S > 2 against {crit[2]}" in text
    rows_, lowest = computed()
    flat_bf = rows_["Physical, test", "best-fit"][2]
    assert f"flat rule with best-fit's {flat_bf:,.0f} s" in text
    assert min(num(p) for p in per) > flat_bf  # worse on every seed


@pytest.mark.slow
def test_the_physical_best_pt_files_rescored_on_the_test_period():
    import re

    from hpcsched.experiments.herasched_eval import period_prepared, run_model

    out = (BESTFIT / "experiment-test.txt").read_text()
    prepared = period_prepared("spartan-physical", "test")
    for seed in range(3):
        run = run_model(prepared, str(BESTFIT / f"s{seed}" / "best.pt"))
        m = re.search(rf"runs/pb-s{seed}: AWT ([\d,.]+) s, MWT ([\d,]+) s", out)
        assert (f"{run.awt:,.1f}", f"{run.mwt:,.0f}") == (m[1], m[2])
        assert run.placed == "best-fit"
