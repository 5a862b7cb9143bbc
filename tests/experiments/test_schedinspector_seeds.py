"""The seed study of SchedInspector's shipped recipes (`experiment schedinspector-seeds`)."""

from __future__ import annotations

import numpy as np
import pytest

from hpcsched.experiments import schedinspector_seeds as S
from hpcsched.experiments.policyspec import PRETRAINED
from hpcsched.experiments.rlscheduler_seeds import slim

ROW = ("hpc2n", "f1", "none")
#: three different inspectors standing in for three seeds of the HPC2N F1 row
STAND_INS = ("inspect-hpc2n-f1", "inspect-hpc2n-sjf", "inspect-ctc-sp2-f1")


@pytest.fixture(scope="module")
def seeds_folder(tmp_path_factory):
    d = tmp_path_factory.mktemp("iseeds")
    for s, name in enumerate(STAND_INS):
        slim(PRETRAINED / f"{name}.pt", d / f"inspect-hpc2n-f1-s{s}.pt")
    return d


def test_seed_study_aggregates_each_seed_scored_on_its_own(seeds_folder):
    from hpcsched.envs.inspector import inspector_trace
    from hpcsched.experiments.schedinspector import evaluate, protocol_windows

    (row,) = S.seed_study(rows=[ROW], draws=["ours"], models=seeds_folder, count=4)
    prep = inspector_trace("hpc2n", None, "schedinspector-paper")
    starts = protocol_windows(prep, "ours", 4, 256)
    gains = []
    for name in STAND_INS:
        base, inspected = evaluate(prep, "f1", PRETRAINED / f"{name}.pt", starts, 256, "none")
        gains.append((base["bsld"] - inspected["bsld"]) / base["bsld"])
    assert [row[f"gain_s{s}"] for s in range(3)] == pytest.approx(gains, rel=1e-12)
    assert row["mean_gain"] == pytest.approx(np.mean(gains))
    assert row["sd_gain"] == pytest.approx(np.std(gains, ddof=1))
    assert row["improve"] == f"{sum(g > 0 for g in gains)}/3"
    vals = [S.best_validation(PRETRAINED / f"{n}.pt") for n in STAND_INS]
    assert [row[f"val_s{s}"] for s in range(3)] == pytest.approx(vals)
    assert row["chosen_seed"] == int(np.argmax(vals))


def test_a_slim_inspector_loads_as_an_inspector(seeds_folder):
    from hpcsched.agents.inspector import load_inspector

    policy = load_inspector(seeds_folder / "inspect-hpc2n-f1-s0.pt")
    assert policy.name.startswith("inspect:")


def test_a_missing_seed_is_named(tmp_path):
    with pytest.raises(ValueError, match="inspect-hpc2n-f1 seed 5"):
        S.seed_path("inspect-hpc2n-f1", 5, tmp_path)
