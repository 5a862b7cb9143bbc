"""`experiment herasched --baselines`: learned baselines (rl:, dras: models seeing jobs as total
cores) as rows beside the grid's cells, each the run of its own period with best-fit under the
grid's simulation, HeraSched's S against them, and the refusals, before any run."""

from __future__ import annotations

import json
from dataclasses import asdict, replace

import numpy as np
import pytest

from hpcsched.experiments import herasched_eval as he
from hpcsched.experiments import herasched_grid as hg
from tests.test_cli import assert_one_line_error, run_cli

pytestmark = pytest.mark.usefixtures("one_torch_thread")

JOBS = 3000  # the first jobs of each Physical period: enough for the allocators to differ
RL = "rl:pretrained/lublin-1-bsld"  # any RLScheduler model schedules a pool of cores


def dras_model(path, algo="pg", cores=6264, window=10):
    """An untrained DRAS agent (small per-job network) observing `cores` nodes, saved as a run's
    model file is."""
    from hpcsched.experiments.dras_training import DrasRunConfig, make_agent

    config = DrasRunConfig(algo=algo, window=window,
                           agent=dict(fc1=16, fc2=8, net="per_job") if algo != "dql"
                           else dict(fc1=16, fc2=8))
    make_agent(config, 2 * window + cores).save(path, config=asdict(config))
    return str(path)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    folder = tmp_path_factory.mktemp("baselines")
    return {"dras": dras_model(folder / "dras.pt"),
            "decima": dras_model(folder / "decima.pt", algo="decima"),
            "dras-small": dras_model(folder / "dras-small.pt", cores=1024)}


# ---- on hand numbers ----------------------------------------------------------------------------

def test_baseline_rows_and_herasched_s_against_them_on_hand_numbers():
    grid = hg.Grid("hand", "spartan-physical", "hpcsim", "easy", 10, ("fcfs", "sjf"),
                   ("topology", "best-fit"))
    cells = {("fcfs", "topology"): (100.0, 1000.0), ("fcfs", "best-fit"): (50.0, 4000.0),
             ("sjf", "topology"): (200.0, 500.0), ("sjf", "best-fit"): (80.0, 2000.0)}
    for cell, (awt, mwt) in cells.items():
        grid.metrics[cell] = {"wait": awt, "max_wait": mwt}
    base = [he.BaselineRun("rl:a", "best-fit", {"wait": 60.0, "max_wait": 800.0}),
            he.BaselineRun("dras:b", "best-fit", {"wait": 300.0, "max_wait": 5000.0})]
    slots = np.zeros(5, dtype=np.int64)
    runs = [he.ModelRun("m0", {"wait": 50.0, "max_wait": 500.0}, slots, 4, 1, []),
            he.ModelRun("m1", {"wait": 100.0, "max_wait": 2000.0}, slots, 4, 1, [])]
    alone = he.Evaluation("spartan-physical", "test", grid, [], baselines=base)
    rows = alone.rows()
    assert [r["kind"] for r in rows] == ["cell"] * 4 + ["baseline"] * 2
    a = rows[4]
    assert (a["policy"], a["allocator"], a["seeds"]) == ("rl:a", "best-fit", ["rl:a"])
    assert (a["wait"], a["max_wait"], a["period"], a["cluster"]) == (60.0, 800.0, "test",
                                                                     "spartan-physical")
    # cells with a longer AWT than 60 s: 100, 200, 80; a longer MWT than 800 s: 1000, 4000, 2000
    assert (a["cells_awt_above"], a["cells_mwt_above"]) == (3, 3)
    # the best cell (the highest S against the ideal point 50 s / 500 s): fcfs + topology
    # (50/100 + 500/1000 = 1.0) against fcfs + best-fit 1.125, sjf + topology 1.25, sjf + best-fit
    # 0.875 -> sjf + topology; the baseline's S against it: 200/60 + 500/800
    assert a["best_cell"] == "sjf + topology"
    assert a["score_vs_best_cell"] == pytest.approx(200 / 60 + 500 / 800)
    assert "score" not in a  # no HeraSched model: nothing scores against it
    ev = he.Evaluation("spartan-physical", "test", grid, runs, baselines=base)
    rows = {(r["kind"], r["policy"]): r for r in ev.rows()}
    b = rows["baseline", "dras:b"]
    s = [300 / 50 + 5000 / 500, 300 / 100 + 5000 / 2000]  # HeraSched m0, m1 against it
    assert b["score"] == pytest.approx(np.mean(s))
    assert b["score_sd"] == pytest.approx(np.std(s, ddof=1))
    assert b["awt_rel"] == pytest.approx((300 - 75) / 75)
    assert b["mwt_rel"] == pytest.approx((5000 - 1250) / 1250)
    # m0 (50 s, 500 s) against rl:a (60, 800): 1.2 + 1.6 = 2.8 > 2; m1: 0.6 + 0.4 = 1.0
    assert rows["herasched", "herasched:m0"]["baselines_s_above_2"] == 2
    assert rows["herasched", "herasched:m1"]["baselines_s_above_2"] == 1
    mean = rows["herasched", "herasched"]
    assert mean["baselines_s_above_2"] == 1  # rl:a's mean S is 1.9, dras:b's 10.75
    assert mean["baselines_mwt_above"] == 1  # the mean MWT 1,250 s is below dras:b's only
    facts = ev.criteria()
    assert facts[-1].startswith("against the 2 learned baseline(s): MWT below 1 of 2; S > 2 "
                                "against 1 of 2")
    assert "rl:a+best-fit 1.90" in facts[-1]


# ---- the command --------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def command_rows(models):
    import io
    from contextlib import redirect_stderr, redirect_stdout

    from hpcsched.cli import main

    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        code = main(["experiment", "herasched", "--cluster", "spartan-physical", "--periods",
                     "test,test-high-load", "--jobs", str(JOBS), "--baselines",
                     f"{RL},dras:{models['dras']}", "--json"])
    assert code == 0
    return json.loads(out.getvalue())


@pytest.fixture(scope="module")
def periods():
    return {split: he.period_prepared("spartan-physical", split, JOBS)
            for split in ("test", "test-high-load")}


def direct(prepared, spec, allocator):
    """The spec's run on `prepared` by the path `simulate` takes, independently of the
    experiment's: the trace's allocator set, EASY, the period's own profile (hpcsim)."""
    from hpcsched.experiments.policyspec import resolve_policy
    from hpcsched.sim.run import simulate

    policy = resolve_policy(spec, prepared)
    return simulate(replace(prepared, allocator=allocator), policy, backfill="easy").metrics


def test_each_baseline_row_is_its_own_periods_run_placed_by_best_fit(command_rows, periods,
                                                                     models):
    rows = [r for r in command_rows if r["kind"] == "baseline"]
    assert len(rows) == 4 and len([r for r in command_rows if r["kind"] == "cell"]) == 42
    got = {(r["period"], r["policy"]): r for r in rows}
    for split, prepared in periods.items():
        assert prepared.profile.name == "hpcsim"
        for spec in (RL, f"dras:{models['dras']}"):
            row = got[split, spec]
            assert row["allocator"] == "best-fit" and row["backfill"] == "easy"
            assert {"cluster", "period", "policy", "allocator", "wait", "max_wait",
                    "seeds"} <= set(row)
            m = direct(prepared, spec, "best-fit")
            assert (row["wait"], row["max_wait"]) == (m["wait"], m["max_wait"]), (split, spec)
            assert row["jobs"] == JOBS
    # the two periods' runs differ, so a row scored on the wrong period would show
    assert got["test", RL]["wait"] != got["test-high-load", RL]["wait"]
    # and the allocator matters here: first-available would give another row
    other = direct(periods["test"], RL, "first-available")
    assert (other["wait"], other["max_wait"]) != (got["test", RL]["wait"],
                                                 got["test", RL]["max_wait"])
    # the baseline's facts against its own period's cells
    for r in rows:
        cells = [c for c in command_rows if c["kind"] == "cell" and c["period"] == r["period"]]
        assert r["cells_mwt_above"] == sum(c["max_wait"] > r["max_wait"] for c in cells)
        assert r["cells_awt_above"] == sum(c["wait"] > r["wait"] for c in cells)


def test_a_baseline_spec_may_name_its_allocator(periods, capsys):
    code, out, err = run_cli(capsys, "experiment", "herasched", "--cluster", "spartan-physical",
                             "--periods", "test", "--jobs", str(JOBS), "--baselines",
                             f"{RL}+first-available", "--json")
    assert code == 0, err
    row = next(r for r in json.loads(out) if r["kind"] == "baseline")
    m = direct(periods["test"], RL, "first-available")
    assert row["allocator"] == "first-available" and row["policy"] == RL
    assert (row["wait"], row["max_wait"]) == (m["wait"], m["max_wait"])


def test_the_printed_report_lists_the_baselines_and_herasched_against_them(models, tmp_path,
                                                                           capsys):
    from hpcsched.agents.herasched import HeraSched, HeraSchedConfig

    model = HeraSched(HeraSchedConfig(window=16, tail=4, episode_jobs=100, num_envs=1))
    model.save(tmp_path / "hs.pt")
    code, out, err = run_cli(capsys, "experiment", "herasched", "--cluster", "spartan-physical",
                             "--periods", "test", "--jobs", "600", "--models",
                             str(tmp_path / "hs.pt"), "--baselines", f"dras:{models['dras']}")
    assert code == 0, err
    assert "learned baselines: jobs seen as total cores" in out
    # what the view leaves out, counted: every generated Physical job asks for memory
    assert "600 jobs seen as total cores of spartan-physical" in out
    assert "memory requests ignored: 600 job(s)" in out
    assert f"dras:{models['dras']}" in out and " of 21 " in out
    assert "S of HeraSched against each learned baseline" in out
    assert f"dras:{models['dras']}+best-fit" in out
    assert "against the 1 learned baseline(s): MWT below " in out


@pytest.mark.parametrize("spec, needles", [
    ("fcfs", ["--baselines fcfs: not a learned scheduler's model"]),
    ("herasched:x.pt", ["herasched model is given with --models"]),
    ("inspect:pretrained/inspect-lublin-1-sjf", ["does not see jobs as the cores"]),
    ("rl:nowhere.pt", ["--baselines rl:nowhere.pt", "no model file at nowhere.pt"]),
    ("rl:pretrained/dras-pg-ricc", ["is a dras model, not a rlscheduler one"]),
    ("dras:pretrained/dras-pg-ricc", ["observes 1024 nodes; spartan-physical has 6264 cores",
                                      "trace convert --cores-of spartan-physical"]),
    ("rl:pretrained/lublin-1-bsld+nearest", ["unknown allocator 'nearest'"]),
    ("DECIMA", ["(Decima-PG) neither reserves nor backfills", "not --backfill easy"]),
    ("SMALL", ["observes 1024 nodes; spartan-physical has 6264 cores"]),
])
def test_a_baseline_that_cannot_run_is_refused_before_any_run(models, spec, needles, capsys,
                                                              monkeypatch):
    spec = {"DECIMA": f"dras:{models['decima']}",
            "SMALL": f"dras:{models['dras-small']}"}.get(spec, spec)

    def no_run(*args, **kwargs):
        raise AssertionError("a run started before the refusal")

    monkeypatch.setattr(hg, "run_grid", no_run)
    code, _, err = run_cli(capsys, "experiment", "herasched", "--cluster", "spartan-physical",
                           "--periods", "test", "--baselines", spec)
    assert_one_line_error(code, err, *needles)


def test_several_partitions_name_theirs(capsys):
    code, _, err = run_cli(capsys, "experiment", "herasched", "--cluster",
                           "spartan-physical,spartan-deeplearn", "--baselines", RL)
    assert_one_line_error(code, err, "--baselines", "with several --cluster, name the partition",
                          "spartan-physical=SPEC")
    code, _, err = run_cli(capsys, "experiment", "herasched", "--cluster", "spartan-physical",
                           "--baselines", f"{RL},{RL}")
    assert_one_line_error(code, err, "--baselines for spartan-physical: one is named twice")


def test_dras_on_named_nodes_outside_a_pass_is_refused(models, capsys):
    code, _, err = run_cli(capsys, "compare", "tests/data/hpcsim_small/phys2k_s11.tsv.gz",
                           "--cluster", "spartan-physical", "--profile", "dras", "--policies",
                           f"dras:{models['dras']}+best-fit", "--backfill", "easy")
    assert_one_line_error(code, err, "runs as the selector of a pass profile", "not dras")
