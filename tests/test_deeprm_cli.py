"""DeepRM on the command line: a trace under the deeprm profile, the sweep's rows, clear errors."""

from __future__ import annotations

import json

import numpy as np

from hpcsched.cluster.grid import ResourceGrid
from hpcsched.workload.deeprm import map_trace
from hpcsched.workload.swf import read_swf
from tests.test_cli import assert_one_line_error, run_cli, small_swf  # noqa: F401


def test_a_trace_is_mapped_into_the_grid_by_hand(small_swf):  # noqa: F811
    jobs = read_swf(small_swf)
    # 4 processors -> 10 units (0.4 per unit); quantum 5 s; submits 0, 1, 2 -> step 1
    mapped, report = map_trace(jobs, 4, ResourceGrid(), quantum=5)
    assert mapped.length[0].tolist() == [2, 2, 4]
    assert mapped.demand[0, :, 0].tolist() == [8, 8, 3]  # ceil(3 / 0.4), ceil(1 / 0.4)
    assert mapped.arrival[0].tolist() == [1, 1, 1]
    assert not report.memory and report.never_fit == 0
    # with a 0.55 s quantum the 10 s jobs are 19 steps (they just fit a 20-step window: a job
    # must end before its last row, as in DeepRM's code), the 20 s job 37 steps: it can never
    # fit, and is counted; with 0.5 s the 10 s jobs are 20 steps and cannot fit either
    mapped, report = map_trace(jobs, 4, ResourceGrid(), quantum=0.55)
    assert report.never_fit == 1 and report.jobs == 2 and mapped.length[0].tolist() == [19, 19]
    assert map_trace(jobs, 4, ResourceGrid(), quantum=0.5)[1].never_fit == 3


def test_simulate_a_trace_under_the_deeprm_profile(capsys, small_swf):  # noqa: F811
    code, out, err = run_cli(capsys, "simulate", str(small_swf), "--profile", "deeprm",
                             "--policy", "packer", "--json")
    assert code == 0, err
    row = json.loads(out)
    assert row["profile"] == "deeprm" and row["policy"] == "packer"
    assert row["mapped_jobs"] + row["never_fit"] == 3  # nothing dropped without a count
    assert row["slowdown"] >= 1 and row["unfinished"] == 0


def test_the_sweep_prints_flat_json_rows_and_draws_a_plot(capsys, tmp_path):
    plot = tmp_path / "sweep.png"
    code, out, err = run_cli(capsys, "experiment", "deeprm-load-sweep", "--heuristics-only",
                             "--loads", "0.3,1.1", "--jobsets", "4", "--plot", str(plot), "--json")
    assert code == 0, err
    rows = json.loads(out)
    assert len(rows) == 8 and {r["policy"] for r in rows} == {"sjf", "packer", "tetris:0.1", "random"}
    assert {r["load"] for r in rows} == {0.3, 1.1}
    assert plot.exists()
    assert np.all([r["offered_load"] > 0 for r in rows])


def test_bad_deeprm_input_gives_one_clear_line(capsys, tmp_path, small_swf):  # noqa: F811
    code, _, err = run_cli(capsys, "train", "deeprm", "--load", "2", "--out", str(tmp_path / "r"))
    assert_one_line_error(code, err, "load 2", "at most")
    code, _, err = run_cli(capsys, "simulate", str(small_swf), "--profile", "deeprm",
                           "--backfill", "easy")
    assert_one_line_error(code, err, "deeprm profile has no backfilling")
    code, _, err = run_cli(capsys, "simulate", str(small_swf), "--profile", "deeprm",
                           "--policy", "wfp3")
    assert_one_line_error(code, err, "unknown policy 'wfp3' for the deeprm profile")
    code, _, err = run_cli(capsys, "train", "deeprm", "--init", "nonsense",
                           "--out", str(tmp_path / "r2"))
    assert_one_line_error(code, err, "nonsense")


def test_records_of_a_deeprm_run_list_every_job_of_the_window(capsys, tmp_path, small_swf):  # noqa: F811
    import csv

    path = tmp_path / "jobs.csv"
    code, out, err = run_cli(capsys, "simulate", str(small_swf), "--profile", "deeprm",
                             "--policy", "sjf", "--records", str(path), "--json")
    assert code == 0, err
    row = json.loads(out)
    rec = list(csv.DictReader(open(path)))
    assert len(rec) == 3 and "nodes" not in rec[0]  # the grid has no nodes
    started = [r for r in rec if r["start"]]
    assert len(started) == row["mapped_jobs"]
    # the grid decides at step boundaries after each submit: nobody starts before it is submitted
    assert all(float(r["start"]) >= float(r["submit"]) for r in started)


def test_a_crowded_trace_drops_what_deeprms_queue_cannot_hold_and_says_so(capsys, tmp_path):
    # 80 whole-machine jobs submitted together: 10 slots + 60 backlog places hold 70 of them
    swf = tmp_path / "crowd.swf"
    swf.write_text("; MaxProcs: 4\n" + "".join(
        f"{i} 0 -1 100 4 -1 -1 4 100 -1 1 1 1 -1 -1 -1 -1 -1\n" for i in range(1, 81)))
    code, out, err = run_cli(capsys, "simulate", str(swf), "--profile", "deeprm", "--policy",
                             "sjf", "--json", "--records", str(tmp_path / "jobs.csv"))
    assert code == 0, err
    row = json.loads(out)
    assert (row["mapped_jobs"], row["jobs"], row["dropped"], row["unfinished"]) == (80, 70, 10, 0)
    import csv

    rec = list(csv.DictReader(open(tmp_path / "jobs.csv")))
    assert sum(1 for r in rec if not r["start"]) == 10
    code, out, err = run_cli(capsys, "compare", str(swf), "--profile", "deeprm", "--backfill",
                             "none", "--policies", "sjf,packer")
    assert code == 0, err
    header, _, *lines = out.strip().splitlines()[-4:]
    assert "dropped" in header.split() and all(line.split()[-1] == "10" for line in lines)
    code, out, err = run_cli(capsys, "simulate", str(swf), "--profile", "deeprm-unbounded",
                             "--policy", "sjf", "--json")
    row = json.loads(out)
    assert (row["jobs"], row["dropped"]) == (80, 0)


def test_bad_sweep_options_give_one_clear_line(capsys):
    for args, needle in ((["--rates", "0.5,1.5"], "(0, 1]"), (["--rates", "a"], "--rates 'a'"),
                         (["--simu-len", "1"], "--simu-len"), (["--jobsets", "0"], "--jobsets")):
        code, _, err = run_cli(capsys, "experiment", "deeprm-load-sweep", "--heuristics-only",
                               "--plot", "", *args)
        assert_one_line_error(code, err, needle)
