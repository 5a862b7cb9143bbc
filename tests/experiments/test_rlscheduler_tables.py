"""The RLScheduler protocol's tables: row conventions, pivots, verdicts, and the shipped models."""

from __future__ import annotations

import pytest

from hpcsched.modelfile import load_checkpoint
from hpcsched.experiments import rlscheduler as rls
from hpcsched.experiments.policyspec import PRETRAINED, pretrained_models
from hpcsched.experiments.compare import MEAN_KEYS

SHIPPED = [rls.model_name(t, "bsld", b) for t in rls.CROSS_TRACES for b in (False, True)]
SHIPPED += ["hpc2n-fairness", "hpc2n-fairness-backfill", "lublin-1-utilization"]


def test_every_model_the_experiments_need_is_shipped_and_documented():
    assert set(SHIPPED) <= set(pretrained_models())
    listed = (PRETRAINED / "MODELS.md").read_text()
    every_file = sorted(p.stem for p in PRETRAINED.glob("*.pt"))  # every scheduler's models
    assert len(every_file) > len(pretrained_models())
    for name in every_file:
        assert f"| {name} |" in listed, f"{name} has no row (and training command) in MODELS.md"


@pytest.mark.parametrize("name", SHIPPED)
def test_a_shipped_model_was_trained_as_its_name_says(name):
    config = load_checkpoint(PRETRAINED / f"{name}.pt")["config"]
    trace, rest = next((t, name[len(t) + 1:]) for t in ("lublin-1", "lublin-2", "hpc2n", "ctc-sp2")
                       if name.startswith(t + "-"))
    metric = rest.removesuffix("-backfill")
    assert config["trace"] == trace
    assert config["metric"] == metric
    assert config["profile"] == "rlscheduler"
    assert config["backfill"] == ("schedgym" if rest.endswith("-backfill") else "none")


def test_table5_rows_follow_the_row_convention():
    rows = rls.table5(["hpc2n"], windows=1, jobs=256)
    ours = [r for r in rows if r["source"] != "paper"]
    assert {r["source"] for r in ours} == {"rlscheduler", "standard"}
    for r in ours:
        assert {"trace", "policy", "backfill", *MEAN_KEYS} <= set(r)
    learned = [r["policy"] for r in ours if r["policy"].startswith("rl:")]
    assert learned == ["rl:pretrained/hpc2n-bsld", "rl:pretrained/hpc2n-bsld-backfill"]
    table = rls.pivot(rows)
    paper = next(t for t in table if t["source"] == "paper" and t["backfilling"] == "no")
    assert (paper["F1"], paper["RL"]) == (118.01, 117.01)  # the paper's Table V
    assert all("RL" in t for t in table if t["source"] == "rlscheduler")


def test_verdicts_compare_with_the_best_and_worst_heuristic_by_hand():
    rows = [
        {"trace": "t", "backfill": "none", "source": "rlscheduler", "policy": "sjf", "bsld": 10.0},
        {"trace": "t", "backfill": "none", "source": "rlscheduler", "policy": "fcfs", "bsld": 40.0},
        {"trace": "t", "backfill": "none", "source": "rlscheduler", "policy": "rl:a", "bsld": 8.0},
        {"trace": "t", "backfill": "none", "source": "rlscheduler", "policy": "rl:b", "bsld": 50.0},
        {"trace": "t", "backfill": "none", "source": "paper", "policy": "rl:a", "bsld": 1.0},
    ]
    v = {r["policy"]: r for r in rls.verdicts(rows)}
    assert set(v) == {"rl:a", "rl:b"}  # the paper's row is not ours
    assert v["rl:a"]["ratio_to_best"] == pytest.approx(0.8) and v["rl:a"]["beats_best"]
    assert v["rl:a"]["best_heuristic"] == "sjf" and v["rl:a"]["worst_heuristic"] == "fcfs"
    assert not v["rl:b"]["beats_best"] and v["rl:b"]["worse_than_worst"]


def test_model_spec_finds_run_folders(tmp_path):
    (tmp_path / "hpc2n-bsld").mkdir()
    (tmp_path / "hpc2n-bsld" / "best.pt").write_bytes(b"")
    assert rls.model_spec("hpc2n-bsld", tmp_path) == f"rl:{tmp_path / 'hpc2n-bsld' / 'best.pt'}"
    assert rls.model_spec("hpc2n-bsld") == "rl:pretrained/hpc2n-bsld"
    with pytest.raises(ValueError, match="no model 'lublin-1-bsld'"):
        rls.model_spec("lublin-1-bsld", tmp_path)
