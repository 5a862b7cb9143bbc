"""The seed study of DRAS's shipped recipe (`experiment dras-seeds`), with shipped models standing
in for seeds, on the test period's first day (the whole 21 days take minutes a model)."""

from __future__ import annotations

import math
import shutil

import numpy as np
import pytest

from hpcsched.modelfile import slim
from hpcsched.experiments import dras_seeds as S
from hpcsched.experiments.dras_training import load
from hpcsched.experiments.policyspec import PRETRAINED

NAME = "dras-dql-ricc"
#: three different shipped models standing in for seeds 0, 1, 2 of dras-dql-ricc; all validated
#: on the validation period's first 4 days (one FCFS+EASY reference for the three), s1 the lowest
STAND_INS = ("dras-pg-ricc-capacity", "dras-dql-ricc-capacity", "dras-pg-ricc")
DAYS = 1.0


@pytest.fixture(scope="module")
def seeds_folder(tmp_path_factory):
    """s0 and s1 as slim seed files, s2 as a run folder (its best.pt)."""
    d = tmp_path_factory.mktemp("dseeds")
    for s, name in enumerate(STAND_INS[:2]):
        slim(PRETRAINED / f"{name}.pt", d / f"{NAME}-s{s}.pt")
    (d / f"{NAME}-s2").mkdir()
    shutil.copyfile(PRETRAINED / f"{STAND_INS[2]}.pt", d / f"{NAME}-s2" / "best.pt")
    return d


@pytest.fixture(scope="module")
def row(seeds_folder):
    (r,) = S.seed_study(S.SEED_ROWS[:1], models=seeds_folder, test_days=DAYS)
    return r


def own_entry(name):
    ck = load(PRETRAINED / f"{name}.pt")
    (entry,) = [h for h in ck["history"] if h["episode"] == ck["epoch"]]
    return entry


def own_validation(name):
    ck = load(PRETRAINED / f"{name}.pt")
    (entry,) = [h for h in ck["history"] if h["episode"] == ck["epoch"]]
    return ck["epoch"], entry["val_wait"]


def test_each_seed_is_scored_as_experiment_dras_scores_its_model(row, seeds_folder, tmp_path):
    from hpcsched.experiments.dras import evaluate

    shutil.copyfile(seeds_folder / f"{NAME}-s1.pt", tmp_path / f"{NAME}.pt")
    fcfs, dql = evaluate("ricc", methods=("fcfs-easy", "dras-dql"), models=tmp_path,
                         test_days=DAYS)[0]
    assert row["jobs"] == fcfs["jobs"] and row["fcfs_wait"] == fcfs["wait"]
    assert row["wait_s1"] == dql["wait"]
    for k in S.RATIOS:
        assert row[f"{k}_ratio_s1"] == pytest.approx(dql[k] / fcfs[k], rel=1e-12)
    assert len({row[f"wait_s{s}"] for s in range(3)}) == 3  # three models, three schedules


def test_the_aggregates_are_those_of_the_per_seed_ratios(row):
    ratios = [row[f"wait_s{s}"] / row["fcfs_wait"] for s in range(3)]
    assert [row[f"wait_ratio_s{s}"] for s in range(3)] == pytest.approx(ratios, rel=1e-12)
    assert row["mean_wait_ratio"] == pytest.approx(np.mean(ratios), rel=1e-12)
    assert row["sd_wait_ratio"] == pytest.approx(np.std(ratios, ddof=1), rel=1e-12)
    assert row["beats"] == f"{sum(round(r, 3) < 1 for r in ratios)}/3"


def test_validation_is_each_runs_own_against_fcfs_on_the_same_days(row):
    from hpcsched.experiments.dras import heuristic
    from hpcsched.experiments.dras_training import DrasRunConfig, prepared_for
    from hpcsched.workload.jobsets import first_days, split
    from hpcsched.sim.factory import make_engine

    config = DrasRunConfig(validate_first_days=4.0)
    prepared = prepared_for(config)
    jobs = first_days(split(prepared.jobs, 28.0, 7.0, 21.0)[1], 4.0)
    fcfs = make_engine(jobs, prepared.cluster, prepared.profile, "easy").run(heuristic("fcfs-easy"))
    vals = []
    for s, name in enumerate(STAND_INS):
        episode, val = own_validation(name)
        vals.append(val)
        assert row[f"episode_s{s}"] == episode and row[f"val_wait_s{s}"] == val
        assert row[f"val_fcfs_wait_s{s}"] == pytest.approx(fcfs.metrics["wait"], rel=1e-12)
        assert row[f"val_ratio_s{s}"] == pytest.approx(val / fcfs.metrics["wait"], rel=1e-12)
    # the stand-ins' runs chose best.pt by validation reward (the default before `--select`): the
    # seed is the highest reward of its own episode's entry, not the lowest wait
    rewards = [own_entry(name)["val_reward"] for name in STAND_INS]
    assert row["select"] == "reward"
    assert row["chosen_seed"] == int(np.argmax(rewards)) == 2 != int(np.argmin(vals))
    assert row["shipped_seed"] == load(PRETRAINED / f"{NAME}.pt")["config"]["seed"]


def test_the_choice_takes_the_first_of_a_tie_and_never_a_nan():
    assert S.chosen({0: 5.0, 1: 5.0, 2: 7.0}) == 0
    assert S.chosen({0: math.nan, 1: 3.0, 2: 2.0}) == 2
    assert S.chosen({3: 4.0, 1: 2.0, 2: 2.0}) == 1
    # runs that chose best.pt by validation reward: the highest reward
    assert S.chosen({0: -0.5, 1: -0.2, 2: -0.2}, "reward") == 1
    assert S.chosen({0: math.nan, 1: 3.0, 2: 2.0}, "reward") == 1


def test_a_missing_seed_is_named_with_the_paths_looked_at(tmp_path):
    slim(PRETRAINED / f"{NAME}.pt", tmp_path / f"{NAME}-s0.pt")
    with pytest.raises(ValueError, match=f"{NAME} seed 1") as e:
        S.seed_study(S.SEED_ROWS[:1], models=tmp_path, test_days=DAYS)  # refused before any simulation
    assert str(tmp_path / f"{NAME}-s1.pt") in str(e.value)
    assert str(tmp_path / f"{NAME}-s1" / "best.pt") in str(e.value)
    (tmp_path / f"{NAME}-s0").mkdir()
    shutil.copyfile(PRETRAINED / f"{NAME}.pt", tmp_path / f"{NAME}-s0" / "best.pt")
    assert S.seed_path(NAME, 0, tmp_path) == tmp_path / f"{NAME}-s0.pt"  # the file first


def test_the_command_names_a_missing_seed(tmp_path, capsys):
    from hpcsched.cli import main

    assert main(["experiment", "dras-seeds", "--models", str(tmp_path)]) == 2
    assert f"no model for {NAME} seed 0" in capsys.readouterr().err


def test_export_writes_slim_seeds_and_ships_the_one_chosen_on_validation(tmp_path):
    import torch

    from hpcsched.experiments.dras_training import load_agent

    runs, to = tmp_path / "runs", tmp_path / "pretrained"
    for s, name in enumerate(STAND_INS):
        (runs / f"{NAME}-s{s}").mkdir(parents=True)
        shutil.copyfile(PRETRAINED / f"{name}.pt", runs / f"{NAME}-s{s}" / "best.pt")
    (picked,) = S.export(runs, S.SEED_ROWS[:1], to=to)
    assert picked["seed"] == 2 and picked["val_wait_s1"] == own_validation(STAND_INS[1])[1]
    shipped = load(PRETRAINED / f"{NAME}.pt")
    for s, name in enumerate(STAND_INS):
        ck = load(to / "seeds" / f"{NAME}-s{s}.pt")
        assert sorted(ck) == sorted(shipped) and "training" not in ck
        load_agent(to / "seeds" / f"{NAME}-s{s}.pt")
    out, src = load(to / f"{NAME}.pt"), load(PRETRAINED / f"{STAND_INS[2]}.pt")
    assert out["config"] == src["config"] and out["epoch"] == src["epoch"]
    # the agent's counters, which learning on from it (--online) reads
    mine, theirs = out["learner_state"], src["learner_state"]
    assert mine.keys() == theirs.keys() and all(
        torch.equal(v, theirs[k]) if isinstance(v, torch.Tensor) else v == theirs[k]
        for k, v in mine.items())
    net, ref = out["weights"]["policy"], src["weights"]["policy"]
    assert list(net) == list(ref) and all(torch.equal(net[k], ref[k]) for k in ref)
