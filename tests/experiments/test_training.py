"""Training runs on disk: checkpoints every epoch, resume after a crash, the CLI's train/evaluate,
and `rl:` policies wherever a heuristic is accepted. Tiny runs (a few seconds)."""

from __future__ import annotations

import csv
import json

import pytest
import torch

from hpcsched.modelfile import load_checkpoint
from hpcsched.agents.ppo import PPO
from hpcsched.agents.rlscheduler import RLSchedulerConfig
from hpcsched.cli import main
from hpcsched.experiments.training import train

TINY = dict(trace="lublin-1", episode_jobs=48, n_envs=6, trajectories_per_epoch=6,
            train_pi_iters=5, train_v_iters=5, seed=3, threads=1)
VALIDATE = dict(validate_every=1, validate_windows=1, validate_jobs=128, progress=False,
                log=lambda text: None)


def weights(path):
    return load_checkpoint(path)["weights"]["policy"]


def same(a, b) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_crash_loses_only_the_epoch_in_progress_and_resume_matches(tmp_path, monkeypatch):
    straight = tmp_path / "straight"
    train(RLSchedulerConfig(**TINY), straight, 3, **VALIDATE)

    crashed = tmp_path / "crashed"
    real = PPO._one_epoch
    calls = {"n": 0}

    def flaky(self):
        calls["n"] += 1
        if calls["n"] == 3:
            raise RuntimeError("power cut")
        return real(self)

    monkeypatch.setattr(PPO, "_one_epoch", flaky)
    with pytest.raises(RuntimeError, match="power cut"):
        train(RLSchedulerConfig(**TINY), crashed, 3, **VALIDATE)
    monkeypatch.setattr(PPO, "_one_epoch", real)
    assert load_checkpoint(crashed / "model.pt")["epoch"] == 2  # the two finished epochs survive

    train(RLSchedulerConfig(**TINY), crashed, 3, resume=True, **VALIDATE)
    assert load_checkpoint(crashed / "model.pt")["epoch"] == 3
    # resuming gives exactly the weights of the run that never stopped
    assert same(weights(crashed / "model.pt"), weights(straight / "model.pt"))
    rows = list(csv.DictReader(open(crashed / "log.csv")))
    assert [int(r["epoch"]) for r in rows] == [1, 2, 3]
    assert all(float(r["mean_reward"]) == -float(r["bsld"]) for r in rows)
    assert (crashed / "curve.png").stat().st_size > 1000
    # and the same best.pt, chosen on the real validation scores
    best, best_straight = load_checkpoint(crashed / "best.pt"), load_checkpoint(straight / "best.pt")
    assert best["epoch"] == best_straight["epoch"] >= 1
    assert same(best["weights"]["policy"], best_straight["weights"]["policy"])


def test_best_checkpoint_holds_the_best_validation_score(tmp_path):
    out = tmp_path / "run"
    model = train(RLSchedulerConfig(**TINY), out, 3, **VALIDATE)
    scores = {h["epoch"]: h["val_bsld"] for h in model.history if "val_bsld" in h and h["epoch"]}
    best_epoch = min(scores, key=scores.get)
    assert load_checkpoint(out / "best.pt")["epoch"] == best_epoch


def test_cli_train_evaluate_and_rl_policies(tmp_path, capsys):
    out = tmp_path / "run"
    args = ["train", "rlscheduler", "--trace", "lublin-1", "--epochs", "1", "--out", str(out),
            "--episode-jobs", "48", "--trajectories", "4", "--pi-iters", "3", "--v-iters", "3",
            "--validate-every", "0", "--threads", "1"]
    assert main(args) == 0
    config = json.loads((out / "config.json").read_text())
    assert config["trace"] == "lublin-1" and config["trajectories_per_epoch"] == 4
    # the same run again is refused rather than overwritten
    capsys.readouterr()
    assert main(args) == 2
    assert "--resume" in capsys.readouterr().err

    assert main(["evaluate", str(out / "model.pt"), "--starts", "0,500", "--jobs", "128",
                 "--against", "sjf", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["policy"] for r in rows] == [f"rl:{out / 'model.pt'}", "sjf"]
    assert all(r["trace"] == "lublin-1" and r["backfill"] == "none" and r["bsld"] >= 1
               for r in rows)

    # a model is a policy anywhere a heuristic is: compare and simulate take rl:PATH
    assert main(["compare", "lublin-1", "--profile", "rlscheduler", "--policies",
                 f"fcfs,rl:{out}", "--backfill", "none", "--starts", "0", "--jobs", "128",
                 "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[1]["policy"] == f"rl:{out}" and rows[1]["jobs"] == 128
    assert main(["simulate", "lublin-1", "--profile", "rlscheduler", "--policy", f"rl:{out}",
                 "--start", "0", "--jobs", "128", "--json"]) == 0
    single = json.loads(capsys.readouterr().out)
    assert single["bsld"] == pytest.approx(rows[1]["bsld"], rel=1e-12)


@pytest.mark.parametrize("spec, message", [
    ("rl:pretrained/no-such-model", "no pretrained model 'no-such-model'"),
    ("rl:/nowhere/model.pt", "no model file at /nowhere/model.pt"),
])
def test_unknown_models_are_named(spec, message, capsys):
    assert main(["compare", "lublin-1", "--policies", spec, "--starts", "0",
                 "--jobs", "64"]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_experiment_with_a_folder_missing_a_model(tmp_path, capsys):
    assert main(["experiment", "rlscheduler-table8", "--models", str(tmp_path)]) == 2
    assert "no model 'hpc2n-fairness'" in capsys.readouterr().err
