"""The seed study of SchedInspector's shipped recipes (`experiment schedinspector-seeds`)."""

from __future__ import annotations

import numpy as np
import pytest

from hpcsched.modelfile import slim
from hpcsched.experiments import schedinspector_seeds as S
from hpcsched.experiments.policyspec import PRETRAINED

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
    from hpcsched.sim.run import estimated_trace
    from hpcsched.experiments.schedinspector import evaluate, protocol_windows

    (row,) = S.seed_study(rows=[ROW], draws=["ours"], models=seeds_folder, count=4)
    prep = estimated_trace("hpc2n", None, "schedinspector-paper")
    starts = protocol_windows(prep, "ours", 4, 256)
    gains = []
    for name in STAND_INS:
        base, inspected = evaluate(prep, "f1", PRETRAINED / f"{name}.pt", starts, 256, "none")
        gains.append((base["bsld"] - inspected["bsld"]) / base["bsld"])
    assert [row[f"gain_s{s}"] for s in range(3)] == pytest.approx(gains, rel=1e-12)
    assert row["mean_gain"] == pytest.approx(np.mean(gains))
    assert row["sd_gain"] == pytest.approx(np.std(gains, ddof=1))
    assert row["improve"] == f"{sum(g >= 0.0005 for g in gains)}/3"
    vals = [S.best_validation(PRETRAINED / f"{n}.pt") for n in STAND_INS]
    assert [row[f"val_s{s}"] for s in range(3)] == pytest.approx(vals)
    assert row["chosen_seed"] == int(np.argmax(vals))


def test_a_slim_inspector_loads_as_an_inspector(seeds_folder):
    from hpcsched.agents.inspector_policy import load_inspector

    policy = load_inspector(seeds_folder / "inspect-hpc2n-f1-s0.pt")
    assert policy.name.startswith("inspect:")


def test_a_missing_seed_is_named(tmp_path):
    with pytest.raises(ValueError, match="inspect-hpc2n-f1 seed 5"):
        S.seed_path("inspect-hpc2n-f1", 5, tmp_path)


@pytest.mark.parametrize("row", S.SEED_ROWS, ids=lambda r: "-".join(r))
def test_the_shipped_inspector_is_the_seed_chosen_on_validation(row):
    """Each shipped `inspect-*.pt` was trained with the seed whose best.pt validated best (the
    first seed on a tie), and decides as that seed's slim file does (same weights)."""
    import torch

    from hpcsched.modelfile import load_checkpoint
    from hpcsched.experiments.schedinspector import model_name

    name = model_name(*row)
    vals = [S.best_validation(S.seed_path(name, s)) for s in S.SEEDS]
    assert not any(np.isnan(vals)), vals
    chosen = int(np.argmax(vals))
    assert S.shipped_seed(name) == chosen
    shipped = load_checkpoint(PRETRAINED / f"{name}.pt")
    seed = load_checkpoint(S.seed_path(name, chosen))
    assert shipped["epoch"] == seed["epoch"]
    assert shipped["weights"]["policy"].keys() == seed["weights"]["policy"].keys()
    for k, w in shipped["weights"]["policy"].items():
        assert torch.equal(w, seed["weights"]["policy"][k]), (name, k)


def test_a_gain_that_prints_as_zero_does_not_count_as_improving():
    assert S.improving([0.0004, 0.0, -0.2]) == 0
    assert S.improving([0.0005, 0.001, 0.3]) == 3
    assert S.improving([-0.0004, 0.00051]) == 1
