"""`experiment herasched` (`hpcsched.experiments.herasched_eval`): the rows and their fields, S and
the seeds' mean and spread on hand numbers and from the rows of a run, Table 4.3 against a
computation of its own on hand-placed jobs, Fig. 4.6's counts against the selector's decisions
counted where they happen, the figures, and the refusals."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from hpcsched.agents.herasched import HeraSched, HeraSchedConfig
from hpcsched.agents.herasched_policy import load_herasched
from hpcsched.experiments import herasched_eval as he
from hpcsched.experiments import herasched_grid as hg
from hpcsched.sim.run import simulate
from tests.test_cli import assert_one_line_error, run_cli

pytestmark = pytest.mark.usefixtures("one_torch_thread")

JOBS = 400  # of the Deeplearn test high-load day: its first jobs wait, so the runs differ


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """Two untrained models of our network (two seeds), window 16, tail 4, saved."""
    folder = tmp_path_factory.mktemp("models")
    paths = []
    for seed in (0, 1):
        model = HeraSched(HeraSchedConfig(window=16, tail=4, episode_jobs=100, num_envs=1,
                                          seed=seed))
        model.save(folder / f"s{seed}.pt")
        paths.append(str(folder / f"s{seed}.pt"))
    return paths


@pytest.fixture(scope="module")
def day():
    return he.period_prepared("spartan-deeplearn", "test-high-load", JOBS)


# ---- on hand numbers ----------------------------------------------------------------------------

def hand_evaluation() -> he.Evaluation:
    grid = hg.Grid("hand", "spartan-deeplearn", "hpcsim", "easy", 10, ("fcfs", "sjf"),
                   ("topology", "best-fit"))
    cells = {("fcfs", "topology"): (100.0, 1000.0), ("fcfs", "best-fit"): (50.0, 4000.0),
             ("sjf", "topology"): (200.0, 500.0), ("sjf", "best-fit"): (80.0, 2000.0)}
    for cell, (awt, mwt) in cells.items():
        grid.metrics[cell] = {"wait": awt, "max_wait": mwt}
    slots = np.zeros(5, dtype=np.int64)
    runs = [he.ModelRun("a", {"wait": 50.0, "max_wait": 500.0}, slots, 4, 1, []),
            he.ModelRun("b", {"wait": 100.0, "max_wait": 2000.0}, slots, 4, 1, [])]
    return he.Evaluation("spartan-deeplearn", "test", grid, runs)


def test_s_and_the_seeds_spread_on_hand_numbers():
    ev = hand_evaluation()
    rows = {(r["policy"], r.get("allocator")): r for r in ev.rows()}
    # S = AWT_cell / AWT_H + MWT_cell / MWT_H: model a (50, 500), model b (100, 2000)
    fcfs_topo = rows["fcfs", "topology"]
    a, b = 100 / 50 + 1000 / 500, 100 / 100 + 1000 / 2000  # 4.0 and 1.5
    assert fcfs_topo["score"] == pytest.approx((a + b) / 2)
    assert fcfs_topo["score_sd"] == pytest.approx(abs(a - b) / math.sqrt(2))
    # Fig. 4.5 against the models' mean (75, 1250)
    assert fcfs_topo["awt_rel"] == pytest.approx((100 - 75) / 75)
    assert fcfs_topo["mwt_rel"] == pytest.approx((1000 - 1250) / 1250)
    mean = rows["herasched", "agent"]
    assert (mean["wait"], mean["max_wait"]) == (75.0, 1250.0)
    assert mean["wait_sd"] == pytest.approx(50 / math.sqrt(2))
    assert mean["seeds"] == ["a", "b"] and rows["herasched:a", "agent"]["seeds"] == ["a"]
    # mean S per cell: fcfs+topo 2.75, fcfs+bf (1 + 8) / 2 + ... , so count them by hand
    s = {c: ((c_awt / 50 + c_mwt / 500) + (c_awt / 100 + c_mwt / 2000)) / 2
         for c, (c_awt, c_mwt) in [(k, (v["wait"], v["max_wait"]))
                                   for k, v in ev.grid.metrics.items()]}
    assert mean["cells_s_above_2"] == sum(v > 2 for v in s.values())
    # MWT 1,250 s: below fcfs+best-fit's 4,000 and sjf+best-fit's 2,000, not the others
    assert mean["cells_mwt_above"] == 2
    facts = ev.criteria()
    assert facts[0].startswith("HeraSched's MWT below every cell's: no (1,250 s")
    assert "below 2 of 4 cells" in facts[0]
    assert facts[1].startswith(f"S > 2 against {sum(v > 2 for v in s.values())} of 4 cells")
    # a tie is not below: sjf+topology's MWT is 500 s too
    assert "a: AWT 50.0 s, MWT 500 s; MWT below every cell's: no (below 3 of 4)" in facts[2]


def test_table_4_3_against_its_own_computation(day):
    cluster = day.cluster
    jobs = day.jobs.window(0, 5)
    kind = cluster.kind
    k0 = int(np.flatnonzero(kind == 0)[0])
    big = np.flatnonzero(kind == len(cluster.kinds) - 1)
    # job 0 on a kind-0 node; job 1 on kind 0 and the last kind; job 2 on two nodes of the last
    # kind (counted once there); job 3 never started; job 4 on the last kind
    allocations = [[k0], [k0, int(big[0])], [int(big[0]), int(big[1])], None, [int(big[2])]]
    got = {k.kind: k for k in he.kind_requests(jobs, allocations, cluster)}
    cores = jobs.cores_per_node.astype(float)
    mem = jobs.mem_per_node.astype(float) / 1024
    gpus = jobs.gpus_per_node.astype(float)
    assert (cores >= 1).all() and (gpus >= 0).all()

    def expect(rows):
        return cores[rows].mean(), mem[rows].mean(), gpus[rows].mean()

    first, last = cluster.kinds[0], cluster.kinds[-1]
    assert got[first].jobs == 2 and got[last].jobs == 3
    assert (got[first].cores, got[first].memory, got[first].gpus) == pytest.approx(expect([0, 1]))
    assert (got[last].cores, got[last].memory, got[last].gpus) == \
        pytest.approx(expect([1, 2, 4]))
    assert got["all jobs"].jobs == 4
    assert got["all jobs"].cores == pytest.approx(cores[[0, 1, 2, 4]].mean())
    middle = cluster.kinds[1]
    assert got[middle].jobs == 0 and math.isnan(got[middle].cores)
    assert got[first].nodes == int(np.sum(kind == 0))


def test_slot_bins_keep_every_decision_and_label_the_split_window():
    slots = np.arange(101)  # W = 100 and Forward
    bins = he.slot_bins(slots, 100, 10)
    assert sum(c for _, c in bins) == slots.sum()
    assert bins[0] == ("0", 0) and bins[-1] == ("Forward", 100)
    assert bins[-2] == ("90-99 (tail)", sum(range(90, 100)))
    assert bins[1][0] == "1-11"
    with pytest.raises(ValueError, match="expected 101 slot counts"):
        he.slot_bins(slots[:-1], 100, 10)


def test_the_histogram_counts_every_selector_decision(models, day):
    policy = load_herasched(models[0])
    calls = []
    scores = policy._scores

    def counted(agent):
        calls.append(agent)
        out = scores(agent)
        if agent == 0 and len(calls) % 3 == 0:  # an untrained model never waits: make it
            out = out.copy()
            out[16] = out.max() + 1.0  # Forward, where the mask allows it
        return out

    policy._scores = counted
    result = simulate(day, policy, backfill="easy")
    decisions = calls.count(0)  # one selector scoring per selector decision
    assert decisions > len(day.jobs) and policy.slots[16] > 0  # some Forwards: a real check
    assert policy.slots.sum() == decisions
    assert sum(c for _, c in he.slot_bins(policy.slots, 16, 4)) == decisions
    assert policy.slots[:16].sum() == np.isfinite(result.start).sum() == len(day.jobs)


# ---- the command --------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def command_rows(models, tmp_path_factory):
    import io
    from contextlib import redirect_stderr, redirect_stdout

    from hpcsched.cli import main

    figs = tmp_path_factory.mktemp("figs")
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        code = main(["experiment", "herasched", "--models", ",".join(models), "--periods",
                     "test-high-load", "--jobs", str(JOBS), "--plot", str(figs), "--json"])
    assert code == 0
    return json.loads(out.getvalue()), figs


def test_the_rows_carry_the_fields_and_the_two_seeds(command_rows, models):
    rows, _ = command_rows
    cells = [r for r in rows if r["allocator"] != "agent"]
    own = [r for r in rows if r["policy"].startswith("herasched:")]
    mean = [r for r in rows if r["policy"] == "herasched"]
    assert len(cells) == 21 and len(own) == 2 and len(mean) == 1
    for r in rows:
        assert {"cluster", "period", "policy", "allocator", "wait", "max_wait", "seeds"} <= set(r)
        assert r["cluster"] == "spartan-deeplearn" and r["period"] == "test-high-load"
    assert {(r["policy"], r["allocator"]) for r in cells} == \
        {(s, a) for s in hg.SELECTORS for a in hg.ALLOCATORS}
    assert mean[0]["seeds"] == models and [r["seeds"] for r in own] == [[m] for m in models]
    waits = [r["wait"] for r in own]
    assert waits[0] != waits[1]  # two different models: the spread is a real one
    assert mean[0]["wait"] == pytest.approx(np.mean(waits))
    assert mean[0]["wait_sd"] == pytest.approx(np.std(waits, ddof=1))
    assert mean[0]["max_wait"] == pytest.approx(np.mean([r["max_wait"] for r in own]))
    # S of every cell from the rows themselves
    for c in cells:
        s = [c["wait"] / r["wait"] + c["max_wait"] / r["max_wait"] for r in own]
        assert c["score"] == pytest.approx(np.mean(s))
        assert c["awt_rel"] == pytest.approx((c["wait"] - mean[0]["wait"]) / mean[0]["wait"])
    assert mean[0]["cells_s_above_2"] == sum(c["score"] > 2 for c in cells)
    for r in own:
        assert sum(r["selector_slots"]) == r["selector_decisions"]
        assert sum(r[k] for k in r if k.startswith("slots_")) == r["selector_decisions"]
        assert r["jobs_all_jobs"] == JOBS


def test_the_cells_are_the_grids_and_the_figures_are_written(command_rows, day):
    rows, figs = command_rows
    grid = hg.run_grid(day, selectors=("fcfs",), allocators=("first-available",))
    cell = next(r for r in rows if (r["policy"], r["allocator"]) == ("fcfs", "first-available"))
    assert (cell["wait"], cell["max_wait"]) == (grid.awt(("fcfs", "first-available")),
                                                grid.mwt(("fcfs", "first-available")))
    for name in ("heatmap", "scores", "slots"):
        path = figs / f"spartan-deeplearn-test-high-load-{name}.png"
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_printed_report_states_the_criteria(models, capsys):
    code, out, err = run_cli(capsys, "experiment", "herasched", "--models", models[0],
                             "--periods", "test-high-load", "--jobs", str(JOBS))
    assert code == 0, err
    assert "HeraSched's MWT below every cell's: " in out and " of 21 cells" in out
    assert "S > 2 against " in out and "Table 4.3" in out and "Fig. 4.6" in out


@pytest.mark.parametrize("argv, needles", [
    (["--models", "nowhere.pt"], ["no model file at nowhere.pt"]),
    (["--cluster", "spartan-physical,spartan-deeplearn", "--models", "a.pt"],
     ["with several --cluster, name the partition"]),
    (["--models", "spartan-sapphire=a.pt"], ["'spartan-sapphire' is not one of --cluster"]),
    (["--cluster", "spartan-sapphire", "--models", "a.pt"],
     ["has periods for spartan-deeplearn", "cerit-zewura"]),
    (["--periods", "later", "--models", "a.pt"], ["--periods 'later'", "test-high-load"]),
    (["--cluster", "spartan-deeplearn,cerit-zewura", "--periods", "test,test-high-load"],
     ["--periods test-high-load: cerit-zewura has no such period", "train, validation, test"]),
])
def test_bad_input_is_one_line(capsys, argv, needles):
    code, _, err = run_cli(capsys, "experiment", "herasched", *argv)
    assert_one_line_error(code, err, *needles)


# ---- CERIT-SC: the real log's periods on its own cluster ----------------------------------------

CERIT_JOBS = 600


def test_the_cerit_test_period_runs_the_grid_alone_on_its_cluster(tmp_path, capsys):
    import shlex

    from hpcsched.cli import main
    from hpcsched.sim.run import prepare
    from hpcsched.workload.hera_periods import hera_period

    code, out, err = run_cli(capsys, "experiment", "herasched", "--cluster", "cerit-zewura",
                             "--json")
    assert code == 0, err
    rows = json.loads(out)
    assert len(rows) == 21 and all(r["allocator"] != "agent" for r in rows)  # no model: no row
    assert {(r["cluster"], r["period"], r["trace"]) for r in rows} == {
        ("cerit-zewura", "test", "cerit-2013-test")}
    assert not any("score" in r for r in rows) and all(r["jobs"] == 5145 for r in rows)
    # the same cells from the period written by its command and read back as a user would
    path = tmp_path / "cerit-test.swf"
    assert main(shlex.split(hera_period("cerit-zewura", "test").command(str(path)))[1:]) == 0
    capsys.readouterr()
    prepared = prepare(str(path), "hpcsim", cluster="cerit-zewura", drop_oversized=True)
    cells = (("unicep", "topology"), ("fcfs", "best-fit"))
    grid = hg.run_grid(prepared, selectors=("unicep", "fcfs"), allocators=("topology", "best-fit"))
    for cell in cells:
        row = next(r for r in rows if (r["policy"], r["allocator"]) == cell)
        assert row["wait"] > 0  # the period waits: the comparison means something
        assert (row["wait"], row["max_wait"]) == (grid.awt(cell), grid.mwt(cell))


def test_the_printed_grid_names_its_lowest_cells_and_what_was_dropped(capsys):
    code, out, err = run_cli(capsys, "experiment", "herasched", "--cluster", "cerit-zewura",
                             "--periods", "validation", "--jobs", str(CERIT_JOBS))
    assert code == 0, err
    assert "cerit-zewura's validation period, 14 days (2 weeks) from 2013-02-26" in out
    # the log's one job larger than its machine lies in these weeks: dropped, named, counted
    assert "1 job(s) larger than the cluster dropped" in out and "job 8687" in out
    assert "no HeraSched model given for cerit-zewura (--models): the grid alone" in out
    code, js, _ = run_cli(capsys, "experiment", "herasched", "--cluster", "cerit-zewura",
                          "--periods", "validation", "--jobs", str(CERIT_JOBS), "--json")
    rows = json.loads(js)
    low = min(rows, key=lambda r: r["wait"])
    assert f"lowest AWT {low['wait']:,.1f} s ({hg.cell_name((low['policy'], low['allocator']))})" \
        in out


def test_a_model_schedules_the_cerit_period_and_a_thesis_model_of_another_shape_is_refused(
        models, tmp_path, capsys):
    code, out, err = run_cli(capsys, "experiment", "herasched", "--cluster", "cerit-zewura",
                             "--models", models[0], "--jobs", "200", "--json")
    assert code == 0, err
    own = [r for r in json.loads(out) if r["policy"] == f"herasched:{models[0]}"]
    assert len(own) == 1 and own[0]["cluster"] == "cerit-zewura" and own[0]["jobs"] == 200
    thesis = HeraSched(HeraSchedConfig(window=16, tail=4, episode_jobs=100, num_envs=1,
                                       net="thesis", hidden=(8,)))  # Deeplearn's 30 nodes
    thesis.save(tmp_path / "thesis.pt")
    code, _, err = run_cli(capsys, "experiment", "herasched", "--cluster", "cerit-zewura",
                           "--models", str(tmp_path / "thesis.pt"), "--jobs", "200")
    assert_one_line_error(code, err, f"herasched:{tmp_path / 'thesis.pt'} cannot schedule "
                                     f"cerit-zewura", "30 nodes", "68 nodes")


def test_each_partition_takes_its_shipped_models_unless_told_none():
    from hpcsched.cli.herasched_eval import models_by_cluster

    got = models_by_cluster(None, ["spartan-physical", "spartan-deeplearn", "cerit-zewura"])
    assert got == {"spartan-physical": [f"pretrained/herasched-physical-s{s}" for s in range(3)],
                   "spartan-deeplearn": [f"pretrained/herasched-deeplearn-s{s}" for s in range(3)],
                   "cerit-zewura": []}
    # none: that partition alone runs the grid; the other still takes its own
    got = models_by_cluster(["spartan-physical=none"], ["spartan-physical", "spartan-deeplearn"])
    assert got["spartan-physical"] == [] and len(got["spartan-deeplearn"]) == 3
    assert models_by_cluster(["none"], ["spartan-physical"]) == {"spartan-physical": []}
    with pytest.raises(ValueError, match="'none' .* cannot go with models"):
        models_by_cluster(["none,pretrained/herasched-physical-s0"], ["spartan-physical"])


def test_models_none_runs_the_grid_alone(capsys):
    code, out, err = run_cli(capsys, "experiment", "herasched", "--cluster", "spartan-physical",
                             "--periods", "validation", "--jobs", "300", "--models", "none")
    assert code == 0, err
    assert "no HeraSched model given for spartan-physical (--models): the grid alone" in out
    assert "herasched:" not in out


def test_a_row_names_the_heuristic_that_placed_a_model_s_jobs(capsys):
    model = "pretrained/herasched-deeplearn-s0"
    code, out, err = run_cli(capsys, "experiment", "herasched", "--periods", "test-high-load",
                             "--jobs", str(JOBS), "--json", "--models",
                             f"{model}@allocator=best-fit,{model}@selector=fcfs")
    assert code == 0, err
    rows = [r for r in json.loads(out) if r.get("kind") == "herasched"]
    assert [(r["policy"], r["allocator"]) for r in rows] == [
        (f"herasched:{model}@allocator=best-fit", "best-fit"),
        (f"herasched:{model}@selector=fcfs", "agent"), ("herasched", "agent,best-fit")]
    assert he.run_model(he.period_prepared("spartan-deeplearn", "test", jobs=JOBS),
                        f"{model}@reserve=1:00:00@allocator=topology").placed == "topology"
