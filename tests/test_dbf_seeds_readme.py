"""DBF over three training seeds on the 2-core machine (README, "Three seeds on the 2-core
machine" and "Three seeds per window on the 2-core machine"; benchmarks/dbf_seeds.py): the
README's numbers are the ones the script prints from the runs' logs and the saved test rows, the
bundled files are those runs' best.pt, and (slow) each file re-scores exactly what its run's
validation recorded, and the files together the saved test rows."""

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from hpcsched.modelfile import read_model

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "data"
MODELS = DATA / "dbf_m32_seeds"
SEEDS = (0, 1, 2)


def load_script():
    spec = importlib.util.spec_from_file_location("dbf_seeds", ROOT / "benchmarks" / "dbf_seeds.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def section(marker: str = "**Three seeds on the 2-core machine.**") -> str:
    """The README from `marker` to the next heading, its whitespace as single spaces."""
    text = (ROOT / "README.md").read_text()
    a = text.index(marker)
    b = text.find("\n#", a)
    return " ".join(text[a:b if b > 0 else None].split())


def facts() -> dict[int, dict]:
    script = load_script()
    runs = script.read_archive(script.ARCHIVE)
    return {f["seed"]: f for f in (script.run_facts(n, r) for n, r in runs.items())}


def rows() -> dict[str, dict]:
    return {r["method"]: r for r in json.loads((DATA / "dbf_m32_seeds_test.json").read_text())}


def test_the_runs_are_the_setting_the_readme_names():
    script = load_script()
    runs = script.read_archive(script.ARCHIVE)
    assert sorted(r["config"]["seed"] for r in runs.values()) == list(SEEDS)
    for run in runs.values():
        cfg = run["config"]
        assert (cfg["window"], cfg["tail"], cfg["pi_lr"], cfg["ent_coef"], cfg["mask"]) == \
            (32, 4, 1e-4, 0.001, False)
        assert cfg["run_options"]["validate_masked"] is True
        assert len(run["log"]) == 120  # each stopped after update 120
    assert "fcfs 298,948 s, sqf 4,693 s, lcfs 3,244 s" in script.reference_line(runs)


def test_the_readme_training_numbers_come_from_the_logs():
    readme = section()
    got = facts()
    for seed, f in got.items():
        later = [v for e, v in f["validations"] if e >= 25]
        assert f"{min(later):,.0f}-{max(later):,.0f}" in readme, seed
        assert f"update {f['best_epoch']}, {f['best']:,.0f} s" in readme, seed
    mean = np.mean([f["best"] for f in got.values()])
    assert f"{mean:,.0f} s" in readme
    for key in ("sampled_first10", "sampled_last10"):
        assert ", ".join(f"{got[s][key]:,.0f}" for s in SEEDS) in readme, key
    minutes = [f["wall_s"] / 60 for f in got.values()]
    assert f"{min(minutes):.0f}-{max(minutes):.0f} min" in readme


def test_the_bundled_files_are_the_runs_best_pt():
    """Each slim file's own history ends at its best validation, which is the log's lowest."""
    got = facts()
    for seed in SEEDS:
        ck = read_model(MODELS / f"s{seed}.pt")
        assert "training" not in ck  # slim
        assert ck["config"]["seed"] == seed
        recorded = [h["val_wait"] for h in ck["history"] if h.get("epoch") == ck["epoch"]]
        assert (ck["epoch"], recorded) == (got[seed]["best_epoch"], [got[seed]["best"]])


def test_the_readme_test_rows_come_from_the_saved_rows():
    readme = section()
    by = rows()
    model = by["M32-4@masked-3s"]
    assert model["seeds"] == [f"dbf:benchmarks/data/dbf_m32_seeds/s{s}.pt@masked" for s in SEEDS]
    assert model["episodes"] == 100
    assert f"{model['wait']:,.0f} ± {model['wait_sd']:,.0f}" in readme
    assert ", ".join(f"{w:,.0f}" for w in model["wait_per_seed"]) in readme
    assert f"{model['queue_length']:.1f} ± {model['queue_length_sd']:.1f}" in readme
    lcfs = by["LCFS+EASY"]
    assert f"{lcfs['wait']:,.0f}" in readme and f"{lcfs['queue_length']:.1f}" in readme
    # the saved heuristic rows are today's (the README's Fig. 3.4 table, recomputed by
    # test_readme_dbf_numbers): LCFS with EASY 3,259 s, 11.7 jobs
    assert (round(lcfs["wait"]), round(lcfs["queue_length"], 1)) == (3259, 11.7)


def test_the_verdict_is_the_experiments():
    """The issue's fact as the experiment judges the saved rows, and each seed's count."""
    from hpcsched.experiments.dbf import claims

    readme = section()
    fact = next(c for c in claims(list(rows().values()))
                if c.claim == "DBF with M >= 32: lower AWT and queue length than every heuristic")
    ending = fact.ours.rsplit(";", 1)[1].strip()
    assert f"{fact.verdict.upper()}: {ending}" in readme
    model, best = rows()["M32-4@masked-3s"], rows()["LCFS+EASY"]
    below = sum(w < best["wait"] for w in model["wait_per_seed"])
    assert f"{below} of 3 seeds are below on AWT" in readme
    assert f"{below} of 3 on AWT, 0 of 3 on queue" in fact.ours


@pytest.mark.slow
@pytest.mark.parametrize("seed", SEEDS)
def test_a_bundled_file_scores_what_its_validation_recorded(seed):
    """Through the engine, read through the mask, each file gives on DBF's validation episodes
    exactly the AWT its run's validation recorded when it chose it (about a minute each)."""
    assert validation_awt(MODELS / f"s{seed}.pt") == pytest.approx(facts()[seed]["best"],
                                                                     rel=1e-12)


def validation_awt(path: Path) -> float:
    """A model file's masked reading on its run's 10 validation episodes, as training scored it."""
    from hpcsched.envs.dbf import as_dbf_trace
    from hpcsched.experiments.dbf_episodes import run_episode
    from hpcsched.experiments.policyspec import resolve_policy
    from hpcsched.workload.windows import dbf_starts

    ck = read_model(path)
    prepared = as_dbf_trace(ck["config"]["trace"])
    starts = dbf_starts(prepared, "validation", 10, episode_jobs=ck["config"]["episode_jobs"])
    policy = resolve_policy(f"dbf:{path}@masked", prepared)
    return float(np.mean([run_episode(prepared, policy, s)["wait"] for s in starts]))


@pytest.mark.slow
def test_the_three_files_give_the_saved_test_rows():
    """The three files as one method over seeds on the 100 test episodes (about 25 CPU-minutes):
    each seed's metrics and their mean and sd as saved."""
    import os

    from hpcsched.experiments import dbf

    saved = rows()["M32-4@masked-3s"]
    methods, _ = dbf.baseline_methods(heuristics=(), inspectors=(),
                                      seeds={"M32-4@masked-3s": saved["seeds"]})
    methods = dbf.resolve_windows(methods, "lublin-1")
    cwd = os.getcwd()
    os.chdir(ROOT)  # the saved policy names are relative to the repository
    try:
        (got,) = dbf.baselines("lublin-1", methods, episodes=100, workers=dbf.default_workers())
    finally:
        os.chdir(cwd)
    for k in dbf.METRICS:
        assert got[k] == pytest.approx(saved[k], rel=1e-9), k
        assert got[f"{k}_per_seed"] == pytest.approx(saved[f"{k}_per_seed"], rel=1e-9), k


# -- the split-window grid: M = 8, 10, 16 and 20 without a tail and with one slot, and 0-10 ---------
WINDOW_MARKER = "**Three seeds per window on the 2-core machine.**"
WINDOW_ARCHIVE = DATA / "dbf_window_seeds.tar.gz"
WINDOW_ROWS = DATA / "dbf_window_seeds_test.json"
WINDOW_MODELS = DATA / "dbf_window_seeds"
#: the thesis's label (head-tail) -> (M, M_t); run folders are wM-MT-sSEED
GRID = {"8-0": (8, 0), "7-1": (8, 1), "10-0": (10, 0), "9-1": (10, 1), "0-10": (10, 10),
        "16-0": (16, 0), "15-1": (16, 1), "20-0": (20, 0), "19-1": (20, 1)}


def window_facts() -> dict[tuple[str, int], dict]:
    """(label, seed) -> the run's facts (benchmarks/dbf_seeds.run_facts)."""
    script = load_script()
    by_window = {v: k for k, v in GRID.items()}
    out = {}
    for name, run in script.read_archive(WINDOW_ARCHIVE).items():
        cfg = run["config"]
        out[by_window[cfg["window"], cfg["tail"]], cfg["seed"]] = script.run_facts(name, run)
    return out


def window_rows() -> list[dict]:
    return json.loads(WINDOW_ROWS.read_text())


def test_the_window_runs_are_the_grid_the_readme_names():
    script = load_script()
    runs = script.read_archive(WINDOW_ARCHIVE)
    assert sorted((r["config"]["window"], r["config"]["tail"], r["config"]["seed"])
                  for r in runs.values()) == sorted((m, t, s) for m, t in GRID.values()
                                                    for s in SEEDS)
    updates = {len(r["log"]) for r in runs.values()}
    assert len(updates) == 1  # all stopped after the same update
    n = updates.pop()
    for run in runs.values():
        cfg = run["config"]
        assert (cfg["pi_lr"], cfg["ent_coef"], cfg["mask"], cfg["trajectories_per_epoch"]) == \
            (1e-4, 0.001, False, 16)
        assert cfg["run_options"]["validate_masked"] is True
    assert f"each stopped after update {n} ({16 * n} episodes" in section(WINDOW_MARKER)
    assert "fcfs 298,948 s, sqf 4,693 s, lcfs 3,244 s" in script.reference_line(runs)


def test_the_window_readme_training_numbers_come_from_the_logs():
    """The README's table of best.pt per run: update and masked validation AWT."""
    readme = section(WINDOW_MARKER)
    got = window_facts()
    for label in GRID:
        cells = " | ".join(f"{got[label, s]['best_epoch']}: {got[label, s]['best']:,.0f}"
                           for s in SEEDS)
        first = ", ".join(f"{got[label, s]['sampled_first10']:,.0f}" for s in SEEDS)
        last = ", ".join(f"{got[label, s]['sampled_last10']:,.0f}" for s in SEEDS)
        assert f"| {label} | {cells} | {first} | {last} |" in readme, label
    minutes = [f["wall_s"] / 60 for f in got.values()]
    assert f"{min(minutes):.0f}-{max(minutes):.0f} min of updates a run" in readme
    late = [got["10-0", s]["sampled_last10"] for s in SEEDS]  # the prose's ranges, tail 0
    eight = [got["8-0", s]["sampled_last10"] for s in SEEDS]
    assert f"({min(late):,.0f}-{max(late):,.0f} s over updates 11-20 at M = 10, " \
           f"{min(eight):,.0f}-{max(eight):,.0f} s at M = 8)" in readme


def test_the_window_files_are_the_runs_best_pt():
    got = window_facts()
    for (label, seed), f in got.items():
        ck = read_model(WINDOW_MODELS / f"{label}-s{seed}.pt")
        assert "training" not in ck
        assert (ck["config"]["window"], ck["config"]["tail"], ck["config"]["seed"]) == \
            (*GRID[label], seed)
        recorded = [h["val_wait"] for h in ck["history"] if h.get("epoch") == ck["epoch"]]
        assert (ck["epoch"], recorded) == (f["best_epoch"], [f["best"]]), (label, seed)


def test_the_window_readme_rows_and_facts_are_the_saved_rows():
    """Every configuration's AWT and queue (mean ± sd, each seed) as saved, and every fact line
    exactly as the experiment judges the saved rows."""
    from hpcsched.experiments.dbf_window import claims_of

    readme = section(WINDOW_MARKER)
    rows = window_rows()
    windows = [r for r in rows if r["table"] == "windows"]
    models = {r["method"]: r for r in windows if r.get("kind") == "model"}
    assert set(models) == set(GRID)
    for label, r in models.items():
        assert r["episodes"] == 100 and (r["window"], r["tail"]) == GRID[label]
        assert r["seeds"] == [f"dbf:benchmarks/data/dbf_window_seeds/{label}-s{s}.pt@masked"
                              for s in SEEDS]
        line = (f"| {label} | {r['wait']:,.0f} ± {r['wait_sd']:,.0f} | "
                + ", ".join(f"{w:,.0f}" for w in r["wait_per_seed"])
                + f" | {r['queue_length']:.1f} ± {r['queue_length_sd']:.1f} | "
                + ", ".join(f"{q:.1f}" for q in r["queue_length_per_seed"]) + " |")
        assert line in readme, label
    starve = {r["method"]: r for r in rows if r["table"] == "starvation"}
    for c in claims_of(windows, list(starve.values())):
        assert " ".join(c.line().split()) in readme, c.claim
    # the prose's other numbers: the one-tail window's and SJF's big jobs left, FCFS+EASY's AWT
    assert f"leaves as many ({100 * starve['9-1']['big_not_placed']:.1f} %)" in readme
    assert f"and SJF {100 * starve['SJF']['big_not_placed']:.1f} %" in readme
    lcfs = next(r for r in windows if r["method"] == "LCFS+EASY")
    one = models["19-1"]
    below = sum(w < lcfs["wait"] for w in one["wait_per_seed"])
    assert f"below LCFS with EASY's {lcfs['wait']:,.0f} s on the mean ({below} of 3 seeds; seed " \
           f"2 {one['wait_per_seed'][2]:,.0f} s)" in readme
    assert one["wait"] < lcfs["wait"] and one["queue_length"] > lcfs["queue_length"]
    fcfs = next(r for r in windows if r["method"] == "FCFS+EASY")
    assert f"worse than FCFS with EASY ({fcfs['wait']:,.0f} s)" in readme
    assert models["8-0"]["wait"] > fcfs["wait"] and models["10-0"]["wait"] > fcfs["wait"]
    # the gain of one tail slot narrows as M grows, as the invisible jobs fall
    cut = {m: models[f"{m}-0"]["wait"] / models[f"{m - 1}-1"]["wait"] for m in (8, 10, 16, 20)}
    assert cut[8] > cut[10] > cut[16] > cut[20] > 1
    assert f"{cut[8]:.0f}-fold cut of AWT at M = 8, {cut[20]:.1f}-fold at M = 20" in readme
    assert f"({models['8-0']['invisible']:.1f} at 8-0, {models['20-0']['invisible']:.1f} at " \
           f"20-0," in readme
    for m in (8, 10):
        r, one = models[f"{m}-0"], models[f"{m - 1}-1"]
        assert f"{r['wait']:,.0f} s with {r['queue_length']:.0f}" in readme
        assert f"{one['wait']:,.0f} s and {one['queue_length']:.0f}" in readme


def test_the_window_readme_greedy_facts_are_the_saved_rows():
    """The same files read as trained (no mask): every fact line as judged on those rows."""
    from hpcsched.experiments.dbf_window import claims_of

    readme = section(WINDOW_MARKER)
    rows = json.loads((DATA / "dbf_window_seeds_greedy.json").read_text())
    windows = [r for r in rows if r["table"] == "windows"]
    models = {r["method"]: r for r in windows if r.get("kind") == "model"}
    for label, r in models.items():  # the masked files' policies, without the mask
        assert r["episodes"] == 100
        assert r["seeds"] == [f"dbf:benchmarks/data/dbf_window_seeds/{label}-s{s}.pt"
                              for s in SEEDS]
    for c in claims_of(windows, [r for r in rows if r["table"] == "starvation"]):
        assert " ".join(c.line().split()) in readme, c.claim


@pytest.mark.slow
@pytest.mark.parametrize("label,seed", [(g, s) for g in GRID for s in SEEDS])
def test_a_window_file_scores_what_its_validation_recorded(label, seed):
    """As the M = 32 files above: the masked reading on the 10 validation episodes."""
    assert validation_awt(WINDOW_MODELS / f"{label}-s{seed}.pt") == pytest.approx(
        window_facts()[label, seed]["best"], rel=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("label", list(GRID))
def test_a_windows_three_files_give_the_saved_rows(label):
    """One configuration's three files on the 100 test episodes (and Fig. 3.7's, the same
    starts): its row and its jobs of more than 128 cores as saved (about 8 CPU-minutes)."""
    import os

    from hpcsched.experiments import dbf, dbf_window as dw

    saved = {(r["table"], r["method"]): r for r in window_rows()}
    models = dw.grid_methods([], {label: saved["windows", label]["seeds"]})
    models = dbf.resolve_windows(models, "lublin-1")
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        sweep = dw.window_sweep("lublin-1", models, references=(), episodes=100,
                                heatmap_episodes=100, workers=dbf.default_workers())
    finally:
        os.chdir(cwd)
    (got,) = sweep.rows
    for k in ("wait", "queue_length", "utilization", "invisible", "partial"):
        assert got[k] == pytest.approx(saved["windows", label][k], rel=1e-9), k
    for k in ("wait", "queue_length"):
        assert got[f"{k}_per_seed"] == pytest.approx(saved["windows", label][f"{k}_per_seed"],
                                                     rel=1e-9), k
    if GRID[label][0] == dw.HEATMAP_WINDOW:  # Fig. 3.7's configurations
        (big,) = sweep.starvation_rows()
        want = saved["starvation", label]
        assert (big["big_arrived"], big["big_placed"]) == (want["big_arrived"],
                                                           want["big_placed"])
        assert big["big_not_placed_per_seed"] == pytest.approx(want["big_not_placed_per_seed"])
