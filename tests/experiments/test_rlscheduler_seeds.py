"""The seed study of RLScheduler's shipped recipes (`experiment rlscheduler-seeds`)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hpcsched.modelfile import SLIM_KEYS, load_checkpoint, slim
from hpcsched.agents.rlscheduler_policy import load_policy
from hpcsched.experiments import rlscheduler_seeds as S
from hpcsched.experiments.policyspec import PRETRAINED
from hpcsched.sim.run import prepare, simulate
from hpcsched.workload.windows import paper_windows

ROW = ("hpc2n", "bsld", True)
#: three different models standing in for three seeds of the HPC2N backfilling row
STAND_INS = ("hpc2n-bsld-backfill", "lublin-1-bsld-backfill", "ctc-sp2-bsld-backfill")


@pytest.fixture(scope="module")
def seeds_folder(tmp_path_factory):
    d = tmp_path_factory.mktemp("seeds")
    for s, name in enumerate(STAND_INS):
        slim(PRETRAINED / f"{name}.pt", d / f"hpc2n-bsld-backfill-s{s}.pt")
    return d


def test_a_slim_seed_file_decides_as_its_source(seeds_folder):
    prep = prepare("hpc2n", profile="rlscheduler")
    start = paper_windows(count=1, length=512)[0]
    full = simulate(prep, load_policy(PRETRAINED / "hpc2n-bsld-backfill.pt"), backfill="schedgym",
                    start=start, jobs=512).start
    slim = simulate(prep, load_policy(seeds_folder / "hpc2n-bsld-backfill-s0.pt"),
                    backfill="schedgym", start=start, jobs=512).start
    np.testing.assert_array_equal(full, slim)
    ck = load_checkpoint(seeds_folder / "hpc2n-bsld-backfill-s0.pt")
    assert set(ck) == set(SLIM_KEYS) and set(ck["weights"]) == {"policy"}  # no value, no training


def test_seed_study_aggregates_each_seed_scored_on_its_own(seeds_folder):
    (row,) = S.seed_study(rows=[ROW], models=seeds_folder, windows=3, jobs=512)
    prep = prepare("hpc2n", profile="rlscheduler")
    starts = paper_windows(count=3, length=512)

    def score(policy):
        return float(np.mean([simulate(prep, policy, backfill="schedgym", start=s, jobs=512)
                              .metrics["bsld"] for s in starts]))

    from hpcsched.experiments.policyspec import resolve_policy

    # as the tables do, a model observes the trace it schedules with that trace's constants
    each = [score(resolve_policy(f"rl:{PRETRAINED / n}.pt", prep)) for n in STAND_INS]
    heur = {h: score(resolve_policy(h, prep)) for h in ("fcfs", "wfp3-rls", "unicep-rls", "sjf",
                                                         "f1")}
    best = min(heur.values())
    assert [row["s0"], row["s1"], row["s2"]] == pytest.approx(each, rel=1e-12)
    assert row["best"] == pytest.approx(best, rel=1e-12)
    assert row["best_heuristic"] == min(heur, key=heur.get)
    assert row["mean"] == pytest.approx(np.mean(each))
    assert row["sd"] == pytest.approx(np.std(each, ddof=1))
    assert row["beats"] == f"{sum(e < best for e in each)}/3"
    assert len(set(each)) == 3  # three different stand-ins: the aggregation is not vacuous
    # the chosen seed is the best on validation, read from each file's own history
    vals = [S.best_validation(load_checkpoint(PRETRAINED / f"{n}.pt"), "bsld") for n in STAND_INS]
    assert [row[f"val_s{s}"] for s in range(3)] == pytest.approx(vals)
    assert row["chosen_seed"] == int(np.argmin(vals))


def test_best_validation_reads_the_checkpoints_own_epoch():
    ck = {"epoch": 4, "history": [{"epoch": 0, "val_bsld": 1.0}, {"epoch": 2, "val_bsld": 9.0},
                                  {"epoch": 4, "val_bsld": 5.0}, {"epoch": 6, "val_bsld": 2.0}]}
    assert S.best_validation(ck, "bsld") == 5.0  # not the smallest in the history (1.0, 2.0)
    assert math.isnan(S.best_validation({"epoch": 3, "history": ck["history"]}, "bsld"))


def test_a_missing_seed_is_named():
    with pytest.raises(ValueError, match="hpc2n-bsld seed 7"):
        S.seed_path("hpc2n-bsld", 7, PRETRAINED)
