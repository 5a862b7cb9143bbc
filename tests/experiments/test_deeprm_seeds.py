"""The seed study of DeepRM's shipped models (`experiment deeprm-seeds`), with stand-ins: the three
shipped slowdown models written as seeds 0, 1, 2 of the 70% load, scored on a few jobsets."""

from __future__ import annotations

import json
import math
import shutil

import numpy as np
import pytest

from hpcsched.modelfile import SLIM_KEYS, ModelFileError, load_checkpoint, slim
from hpcsched.agents.deeprm import DeepRM
from hpcsched.agents.deeprm_policy import load_deeprm_policy
from hpcsched.experiments import deeprm_seeds as S
from hpcsched.experiments.deeprm import evaluate, resolve_grid_policy
from hpcsched.experiments.policyspec import PRETRAINED
from hpcsched.policies.deeprm import get_grid_policy

LOAD = 0.7
JOBSETS = 4
#: three different models standing in for three seeds of the 70% row
STAND_INS = ("deeprm-load-70", "deeprm-load-110", "deeprm-load-150")


@pytest.fixture(scope="module")
def seeds_folder(tmp_path_factory):
    d = tmp_path_factory.mktemp("dseeds")
    for s, name in enumerate(STAND_INS):
        slim(PRETRAINED / f"{name}.pt", d / f"deeprm-load-70-s{s}.pt")
    return d


def _own_validation(path) -> float:
    ck = load_checkpoint(path)
    (entry,) = [h for h in ck["history"] if h["epoch"] == ck["epoch"]]
    return entry["val_slowdown"]


def test_seed_study_aggregates_each_seed_scored_on_its_own(seeds_folder):
    (row,) = S.seed_study([LOAD], models=seeds_folder, jobsets=JOBSETS)

    def score(policy):
        return evaluate(policy, LOAD, jobsets=JOBSETS).metrics()["slowdown"]

    each = [score(load_deeprm_policy(PRETRAINED / f"{n}.pt")) for n in STAND_INS]
    heur = {h: score(get_grid_policy(h)) for h in ("sjf", "packer", "tetris:0.1")}
    best = min(heur.values())
    assert len(set(each)) == 3  # three different stand-ins: the aggregation is not vacuous
    assert [row["s0"], row["s1"], row["s2"]] == pytest.approx(each, rel=1e-12)
    assert {h: row[h] for h in heur} == pytest.approx(heur, rel=1e-12)
    assert row["best"] == pytest.approx(best, rel=1e-12)
    assert row["best_heuristic"] == min(heur, key=heur.get)
    assert row["mean"] == pytest.approx(np.mean(each))
    assert row["sd"] == pytest.approx(np.std(each, ddof=1))
    assert row["beats"] == f"{sum(round(e, 2) < round(best, 2) for e in each)}/3"
    # each seed's best.pt: its epoch and the validation it was chosen with, from its own history
    vals = [_own_validation(PRETRAINED / f"{n}.pt") for n in STAND_INS]
    assert [row[f"val_s{s}"] for s in range(3)] == pytest.approx(vals)
    assert [row[f"epoch_s{s}"] for s in range(3)] == [
        load_checkpoint(PRETRAINED / f"{n}.pt")["epoch"] for n in STAND_INS]
    assert row["chosen_seed"] == int(np.argmin(vals))
    # the file shipped now: its training seed, and its score (the sweep's DeepRM number)
    assert row["shipped_seed"] == load_checkpoint(PRETRAINED / "deeprm-load-70.pt")[
        "config"]["seed"]
    assert row["shipped"] == pytest.approx(each[0], rel=1e-12)


def test_the_seeds_are_scored_as_the_load_sweep_scores_deeprm(seeds_folder, tmp_path):
    from hpcsched.experiments.deeprm import load_sweep

    shutil.copyfile(PRETRAINED / "deeprm-load-110.pt", tmp_path / "deeprm-load-110.pt")
    sweep = {r["policy"]: r["slowdown"] for r in
             load_sweep([LOAD], models=tmp_path, jobsets=JOBSETS)}
    (row,) = S.seed_study([LOAD], models=seeds_folder, jobsets=JOBSETS)
    assert row["s1"] == sweep["deeprm"]  # the sweep's only model is the seed 1 stand-in
    for h in ("sjf", "packer", "tetris:0.1"):
        assert row[h] == sweep[h]


def test_a_slim_seed_file_decides_as_its_source(seeds_folder):
    src = PRETRAINED / "deeprm-load-110.pt"
    copy = seeds_folder / "deeprm-load-70-s1.pt"
    full = evaluate(load_deeprm_policy(src), 1.1, jobsets=3).job_records()
    # a slim file loads wherever a DeepRM model loads: here as deeprm:FILE
    thin = evaluate(resolve_grid_policy(f"deeprm:{copy}"), 1.1, jobsets=3).job_records()
    for key in ("start", "finish", "slowdown"):
        np.testing.assert_array_equal(full[key], thin[key])
    ck = load_checkpoint(copy)
    assert set(ck) == set(SLIM_KEYS) and "training" not in ck
    with pytest.raises(ModelFileError, match="is a slim export"):
        DeepRM.load(copy)  # it decides; training cannot resume from it


def test_the_chosen_seed_is_the_lowest_validation_first_on_a_tie():
    assert S.choose({0: 3.0, 1: 2.5, 2: 2.5}) == 1
    assert S.choose({0: math.nan, 1: 4.0, 2: 3.0}) == 2


def test_best_entry_reads_the_run_when_best_pt_lacks_its_own_epoch(tmp_path):
    run = tmp_path / "deeprm-load-70-s0"
    src = PRETRAINED / "deeprm-load-70.pt"
    slim(src, run / "best.pt", history=[])  # as a warm start's best.pt was written
    assert math.isnan(S.best_entry(run / "best.pt")[1])
    shutil.copyfile(src, run / "model.pt")
    assert S.best_entry(run / "best.pt") == (20, pytest.approx(_own_validation(src)))


def test_a_missing_seed_is_named(seeds_folder, tmp_path):
    with pytest.raises(ValueError, match="deeprm-load-110 seed 5"):
        S.seed_path(1.1, 5, tmp_path)
    with pytest.raises(ValueError, match=r"deeprm-load-70 seed 3 in .*NAME-sK/best.pt"):
        S.seed_study([LOAD], models=seeds_folder, seeds=(0, 3), jobsets=1)


def test_export_slims_every_seed_and_ships_the_one_chosen_on_validation(tmp_path):
    runs, to = tmp_path / "runs", tmp_path / "pretrained"
    for s, name in enumerate(STAND_INS):
        (runs / f"deeprm-load-70-s{s}").mkdir(parents=True)
        shutil.copyfile(PRETRAINED / f"{name}.pt", runs / f"deeprm-load-70-s{s}" / "best.pt")
    with pytest.raises(ValueError, match="deeprm-load-110 seed 0"):
        S.export(runs, loads=[0.7, 1.1], to=to)
    assert not to.exists()  # nothing written when a run is missing
    (chosen,) = S.export(runs, loads=[0.7], to=to)
    vals = [_own_validation(PRETRAINED / f"{n}.pt") for n in STAND_INS]
    assert chosen["seed"] == int(np.argmin(vals))
    shipped = to / "deeprm-load-70.pt"
    assert shipped.read_bytes() == (runs / f"deeprm-load-70-s{chosen['seed']}" /
                                    "best.pt").read_bytes()
    for s in range(3):
        ck = load_checkpoint(to / "seeds" / f"deeprm-load-70-s{s}.pt")
        assert "training" not in ck and S.best_entry(to / "seeds" /
                                                      f"deeprm-load-70-s{s}.pt")[1] == vals[s]


def test_the_command_prints_rows_and_refuses_other_loads(seeds_folder, capsys):
    from hpcsched.cli import main

    code = main(["experiment", "deeprm-seeds", "--models", str(seeds_folder), "--loads", "0.7",
                 "--jobsets", "2", "--json"])
    rows = json.loads(capsys.readouterr().out)
    assert code == 0 and [r["load"] for r in rows] == [0.7]
    assert {"s0", "s1", "s2", "mean", "sd", "beats", "chosen_seed", "shipped_seed"} <= set(rows[0])
    assert main(["experiment", "deeprm-seeds", "--loads", "0.7,2.5"]) == 2
    err = capsys.readouterr().err
    assert "--loads" in err and "2.5" in err


def test_an_unfinished_run_is_refused(tmp_path):
    for s, name in enumerate(STAND_INS):  # run folders; seed 2's run asked for more epochs
        run = tmp_path / f"deeprm-load-70-s{s}"
        run.mkdir()
        shutil.copyfile(PRETRAINED / f"{name}.pt", run / "best.pt")
        shutil.copyfile(PRETRAINED / f"{name}.pt", run / "model.pt")
        epoch = load_checkpoint(run / "model.pt")["epoch"]
        (run / "config.json").write_text(json.dumps({"epochs": epoch + (s == 2)}))
    with pytest.raises(ValueError, match=r"unfinished.*deeprm-load-70-s2 \(epoch 21 of 22\)"):
        S.seed_paths([LOAD], (0, 1, 2), tmp_path)
    found = S.seed_paths([LOAD], (0, 1), tmp_path)  # the finished ones still serve
    assert found[LOAD, 1] == tmp_path / "deeprm-load-70-s1" / "best.pt"


def test_a_load_between_training_loads_takes_the_lower_model_on_a_tie():
    from hpcsched.experiments.deeprm import nearest_load

    loads = (1.5, 0.7, 1.1)  # the order files are found in must not matter
    assert nearest_load(0.9, loads) == 0.7  # exactly between 0.7 and 1.1 (0.2 either way)
    assert nearest_load(1.3, loads) == 1.1
    assert nearest_load(0.91, loads) == 1.1 and nearest_load(0.89, loads) == 0.7
    assert nearest_load(1.845, loads) == 1.5 and nearest_load(0.1, loads) == 0.7


def test_the_sweep_and_the_seed_study_score_an_off_training_load_with_the_same_model(
        seeds_folder):
    from hpcsched.experiments.deeprm import load_sweep

    rows = load_sweep([0.9], jobsets=2)
    (deeprm,) = [r for r in rows if r["policy"] == "deeprm"]
    assert deeprm["model_load"] == 0.7
    (row,) = S.seed_study([0.9], models=seeds_folder, jobsets=2)
    assert row["model_load"] == 0.7 and row["model"] == "deeprm-load-70"
    # seed 0's stand-in is the shipped 70% file: the sweep's DeepRM number at 0.9
    assert row["s0"] == pytest.approx(deeprm["slowdown"], rel=1e-12)
    assert row["shipped"] == pytest.approx(deeprm["slowdown"], rel=1e-12)


def test_the_completion_models_are_judged_on_completion_time():
    """Fig. 5's completion-reward recipe: its seeds (shipped in pretrained/seeds) scored on mean
    completion time, each chosen on its validation completion time, not on slowdown."""
    (row,) = S.seed_study(reward="completion", jobsets=2)
    assert row["load"] == 1.3 and row["metric"] == "completion"
    assert row["model"] == "deeprm-load-130-completion"
    jobs = 2

    def completion(policy):
        return evaluate(policy, 1.3, jobsets=jobs).metrics()

    for s in range(3):
        path = S.seed_path(1.3, s, reward="completion")
        m = completion(load_deeprm_policy(path))
        assert row[f"s{s}"] == pytest.approx(m["completion"], rel=1e-12)
        assert row[f"s{s}"] != pytest.approx(m["slowdown"])
        ck = load_checkpoint(path)
        (entry,) = [h for h in ck["history"] if h["epoch"] == ck["epoch"] and "val_completion" in h]
        assert row[f"val_s{s}"] == entry["val_completion"]
    assert row["tetris:0.1"] == pytest.approx(
        completion(get_grid_policy("tetris:0.1"))["completion"], rel=1e-12)
    vals = [row[f"val_s{s}"] for s in range(3)]
    assert row["chosen_seed"] == int(np.argmin(vals)) == row["shipped_seed"]
