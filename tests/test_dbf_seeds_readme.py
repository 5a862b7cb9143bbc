"""DBF over three training seeds on the 2-core machine (README, "Three seeds on the 2-core
machine"; benchmarks/dbf_seeds.py): the README's numbers are the ones the script prints from the
runs' logs and the saved test rows, the bundled files are those runs' best.pt, and (slow) each
file re-scores exactly what its run's validation recorded, and the three together the saved test
rows."""

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


def section() -> str:
    text = (ROOT / "README.md").read_text()
    a = text.index("**Three seeds on the 2-core machine.**")
    return " ".join(text[a:text.index("### ", a)].split())


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
    from hpcsched.envs.dbf import as_dbf_trace
    from hpcsched.experiments.dbf_episodes import run_episode
    from hpcsched.experiments.policyspec import resolve_policy
    from hpcsched.workload.windows import dbf_starts

    path = MODELS / f"s{seed}.pt"
    ck = read_model(path)
    prepared = as_dbf_trace(ck["config"]["trace"])
    starts = dbf_starts(prepared, "validation", 10, episode_jobs=ck["config"]["episode_jobs"])
    policy = resolve_policy(f"dbf:{path}@masked", prepared)
    awt = np.mean([run_episode(prepared, policy, s)["wait"] for s in starts])
    assert awt == pytest.approx(facts()[seed]["best"], rel=1e-12)


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
