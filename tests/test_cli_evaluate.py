"""`hpcsched evaluate` for the four families: a shipped model and a run folder (its best.pt; its
model.pt, with a note, while it has no best.pt) score the same; by default each family is scored as
its paper's experiment scores it (RLScheduler: the paper's windows; SchedInspector: table4's;
DRAS: experiment dras's test period; DeepRM: the load sweep's jobsets); bad input is one line."""

from __future__ import annotations

import json
import shutil

import pytest

from hpcsched.cli import main
from hpcsched.recipes import PRETRAINED


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def rows_of(capsys, *argv) -> list[dict]:
    code = main(["evaluate", *map(str, argv), "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def error_of(capsys, *argv) -> str:
    assert main(["evaluate", *map(str, argv)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hpcsched: error: ") and err.count("\n") == 1, err
    return err


def numbers(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "policy"} for r in rows]


#: family -> (a shipped model, options of a quick evaluation, the heuristic shown beside it)
QUICK = {
    "rl": ("hpc2n-bsld", ["--starts", "0,3000", "--jobs", "96", "--against", "sjf"]),
    "inspect": ("inspect-lublin-1-sjf", ["--starts", "3000", "--jobs", "96", "--against", "sjf"]),
    "dras": ("dras-pg-ricc", ["--jobs", "120", "--against", "fcfs"]),
    "deeprm": ("deeprm-load-70", ["--jobsets", "2", "--against", "sjf"]),
}


@pytest.mark.parametrize("prefix", QUICK)
def test_a_shipped_model_and_its_run_folder_score_the_same(prefix, capsys, tmp_path):
    name, options = QUICK[prefix]
    shipped = rows_of(capsys, f"pretrained/{name}", *options)
    assert [r["policy"] for r in shipped] == [f"{prefix}:pretrained/{name}", options[-1]]

    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(PRETRAINED / f"{name}.pt", run / "best.pt")
    (run / "model.pt").write_bytes(b"not a model: only best.pt may be read")
    rows = rows_of(capsys, run, *options)
    assert rows[0]["policy"] == f"{prefix}:{run}" and numbers(rows) == numbers(shipped)

    early = tmp_path / "early"
    early.mkdir()
    shutil.copy(PRETRAINED / f"{name}.pt", early / "model.pt")
    code = main(["evaluate", str(early), *options, "--json"])
    out, err = capsys.readouterr()
    assert code == 0 and f"{early} has no best.pt yet" in err and "model.pt" in err
    assert numbers(json.loads(out)) == numbers(shipped)


def test_an_rlscheduler_model_is_scored_on_the_papers_windows_by_default(capsys):
    rows = rows_of(capsys, "pretrained/lublin-1-bsld", "--against", "sjf")
    assert main(["compare", "lublin-1", "--profile", "rlscheduler", "--policies",
                 "rl:pretrained/lublin-1-bsld,sjf", "--backfill", "none", "--windows", "10",
                 "--jobs", "1024", "--first", "10000", "--json"]) == 0
    assert rows == json.loads(capsys.readouterr().out)  # the paper's windows, rlscheduler, none
    assert rows[0]["windows"] == 10 and rows[0]["jobs"] == 1024


def test_an_inspector_is_scored_as_table4_scores_it_by_default(capsys):
    from hpcsched.experiments.schedinspector import table4

    rows = rows_of(capsys, "pretrained/inspect-lublin-1-sjf", "--against", "sjf")
    assert [r["policy"] for r in rows] == ["inspect:pretrained/inspect-lublin-1-sjf", "sjf"]
    assert rows[0]["profile"] == "schedinspector-paper" and rows[0]["windows"] == 50
    ours = {r["policy"]: r for r in table4(["lublin-1"], ["sjf"], windows="ours", rule=False)
            if r["source"] == "ours"}
    for row in rows:
        theirs = ours[row["policy"]]
        assert (row["jobs"], row["windows"]) == (theirs["jobs"], theirs["windows"])
        for key in ("bsld", "wait", "utilization", "rejection_ratio"):
            assert row.get(key, 0.0) == theirs[key], (row["policy"], key)
    # another base, as before
    rows = rows_of(capsys, "pretrained/inspect-lublin-1-sjf", "--base", "f1", "--against", "f1",
                   "--starts", "3000", "--jobs", "64")
    assert rows[0]["policy"] == "inspect:pretrained/inspect-lublin-1-sjf@f1"


@pytest.mark.parametrize("method, name, backfill", [("dras-pg", "dras-pg-ricc", "easy"),
                                                    ("decima-pg", "decima-pg-ricc", "none")])
def test_a_dras_model_is_scored_on_its_test_period_as_experiment_dras(method, name, backfill,
                                                                       capsys):
    from hpcsched.experiments import dras

    rows = rows_of(capsys, f"pretrained/{name}", "--test-days", "0.5", "--against", "fcfs")
    assert [(r["policy"], r["backfill"], r["profile"]) for r in rows] == [
        (f"dras:pretrained/{name}", backfill, "dras"), ("fcfs", backfill, "dras")]
    theirs, _ = dras.evaluate("ricc", methods=(method,) + (("fcfs-easy",) if backfill == "easy"
                                                           else ()), test_days=0.5)
    for row, their in zip(rows, theirs):  # the model's row (and FCFS+EASY's)
        assert row["jobs"] == their["jobs"] > 50
        for key in ("wait", "max_wait", "slowdown", "turnaround"):
            assert row[key] == pytest.approx(their[key], rel=1e-12), (row["policy"], key)


def test_a_deeprm_model_is_scored_on_the_sweeps_jobsets(capsys):
    from hpcsched.experiments.deeprm import load_sweep

    rows = rows_of(capsys, "pretrained/deeprm-load-70", "--jobsets", "3")
    assert [(r["load"], r["policy"]) for r in rows] == [
        (0.7, "deeprm:pretrained/deeprm-load-70"), (0.7, "sjf"), (0.7, "packer"),
        (0.7, "tetris:0.1")]  # its training load, beside the seed study's heuristics
    rows = rows_of(capsys, "pretrained/deeprm-load-70", "--jobsets", "3", "--load", "0.7,1.1",
                   "--against", "sjf,packer,random")
    sweep = {(r["load"], r["policy"]): r for r in load_sweep((0.7, 1.1), jobsets=3)}
    for row in rows:
        policy = "deeprm" if row["policy"].startswith("deeprm:") else row["policy"]
        if policy == "deeprm" and row["load"] != 0.7:
            continue  # the sweep scores 1.1 with the 110 % model
        theirs = sweep[row["load"], policy]
        assert {k: row[k] for k in theirs if k != "policy"} == \
            {k: v for k, v in theirs.items() if k != "policy"}
    # on a trace: windows under the deeprm profile
    rows = rows_of(capsys, "pretrained/deeprm-load-70", "--trace", "lublin-1", "--starts", "0",
                   "--jobs", "40")
    assert [r["policy"] for r in rows] == ["deeprm:pretrained/deeprm-load-70", "sjf", "packer",
                                           "tetris:0.1"]
    assert {r["profile"] for r in rows} == {"deeprm"}


def test_the_human_table_says_what_was_scored(capsys):
    assert main(["evaluate", "pretrained/dras-pg-ricc", "--jobs", "50", "--against",
                 "none"]) == 0
    out = capsys.readouterr().out
    assert "DRAS-PG trained on ricc, reward capability; its test period: days 35 to 56" in out
    assert main(["evaluate", "pretrained/deeprm-load-110", "--jobsets", "1", "--against",
                 "none"]) == 0
    out = capsys.readouterr().out
    assert "DeepRM trained at load 1.1" in out and "1 unseen jobsets of 50 steps (seed 314159)" \
        in out


def test_bad_input_is_one_line(capsys, tmp_path):
    err = error_of(capsys, "pretrained/deeprm-load-70", "--jobs", "100")
    assert "--jobs: a DeepRM model is scored on synthetic jobsets" in err
    err = error_of(capsys, "pretrained/deeprm-load-70", "--trace", "lublin-1", "--load", "1")
    assert "--load: with --trace" in err
    assert "--load: load 3 needs" in error_of(capsys, "pretrained/deeprm-load-70", "--load", "3")
    assert "--sample: a DRAS model is scored greedy" in error_of(capsys, "pretrained/dras-pg-ricc",
                                                                  "--sample")
    err = error_of(capsys, "pretrained/dras-pg-ricc", "--starts", "0", "--test-days", "2")
    assert "--test-days: the test period is the default window" in err
    err = error_of(capsys, "pretrained/hpc2n-bsld", "--base", "f1")
    assert "--base: " in err and "is not a schedinspector model (inspect:)" in err
    err = error_of(capsys, "pretrained/inspect-lublin-1-sjf", "--test-days", "1")
    assert "--test-days: " in err and "not a dras model (dras:); it is schedinspector's" in err
    assert "no pretrained model 'nope'" in error_of(capsys, "pretrained/nope")
    (tmp_path / "empty").mkdir()
    assert "neither best.pt nor model.pt" in error_of(capsys, tmp_path / "empty")
    (tmp_path / "junk.pt").write_text("junk")
    assert "is not an hpcsched model checkpoint" in error_of(capsys, tmp_path / "junk.pt")
    import torch

    torch.save({"format": "someone-else/1"}, tmp_path / "other.pt")
    err = error_of(capsys, tmp_path / "other.pt")
    assert "of kind 'someone-else/1', which no registered learned scheduler evaluates" in err
    assert "dras (dras:)" in err
