"""`hpcsched train herasched` (`hpcsched.experiments.herasched_training`): the run folder, its
validation against FCFS + best-fit + EASY, and a resume that writes what a run that never stopped
writes."""

from __future__ import annotations

import csv

import pytest
import torch

from hpcsched.agents.herasched import HeraSched
from hpcsched.cli import main
from hpcsched.experiments.herasched_training import floored_score, train

pytestmark = pytest.mark.usefixtures("one_torch_thread")

SETTINGS = dict(window=16, tail=4, episode_jobs=400, num_envs=2, update_every=128,
                selector_every=32, allocator_every=10, update_epochs=2)
TIMINGS = ("rollout_s", "update_s", "epoch_s", "selector_pi_s", "allocator_pi_s", "selector_v_s",
           "allocator_v_s")


def rows(path):
    with open(path) as f:
        return [{k: v for k, v in r.items() if k not in TIMINGS} for r in csv.DictReader(f)]


def test_a_run_folder_validates_and_resumes_as_if_it_never_stopped(tmp_path):
    options = dict(validate_every=1, validate_jobs=300, progress=False, log=lambda text: None)
    straight = train(dict(SETTINGS), tmp_path / "a", 3, **options)
    assert {p.name for p in (tmp_path / "a").iterdir()} >= {"model.pt", "best.pt", "log.csv",
                                                            "config.json", "curve.png"}
    assert all("val_score" in h and "val_wait" in h for h in straight.history if h["epoch"])
    train(dict(SETTINGS), tmp_path / "b", 1, **options)
    train(None, tmp_path / "b", 3, resume=True, **options)
    a, b = HeraSched.load(tmp_path / "a" / "model.pt"), HeraSched.load(tmp_path / "b" / "model.pt")
    for name in ("selector_policy", "allocator_policy", "allocator_value"):
        x, y = getattr(a, name).state_dict(), getattr(b, name).state_dict()
        assert all(torch.equal(x[k], y[k]) for k in x)
    assert rows(tmp_path / "a" / "log.csv") == rows(tmp_path / "b" / "log.csv")
    with pytest.raises(ValueError, match="trained with window=16, not 32"):
        train({"window": 32}, tmp_path / "b", 4, resume=True, **options)


def test_the_command_line_trains_and_the_model_schedules(tmp_path, capsys):
    out = tmp_path / "run"
    code = main(["train", "herasched", "--out", str(out), "--epochs", "1", "--window", "16",
                 "--tail", "4", "--episode-jobs", "300", "--update-every", "64",
                 "--validate-every", "0"])
    assert code == 0 and "1 updates" in capsys.readouterr().out
    code = main(["simulate", "lublin-1", "--profile", "hpcsim", "--policy", f"herasched:{out}",
                 "--jobs", "100", "--json"])
    captured = capsys.readouterr()
    assert code == 0 and '"policy": "herasched:' in captured.out  # the default net carries over


def test_the_floored_score_ranks_where_the_reference_never_waits():
    ref = {"wait": 0.0, "max_wait": 0.0}
    assert floored_score({"wait": 0.0, "max_wait": 0.0}, ref) == 2.0
    assert floored_score({"wait": 10.0, "max_wait": 100.0}, ref) > \
        floored_score({"wait": 20.0, "max_wait": 100.0}, ref)
    assert floored_score({"wait": 50.0, "max_wait": 400.0},
                         {"wait": 100.0, "max_wait": 200.0}) == pytest.approx(2.5)


def test_validation_can_run_on_another_trace(tmp_path):
    from hpcsched.agents.herasched import HeraSchedConfig
    from hpcsched.experiments.herasched_training import HeraValidation
    from hpcsched.workload.spartan import generate
    from hpcsched.workload.spartan_format import write_trace

    path = tmp_path / "later.txt"
    later = generate("spartan-deeplearn", 2, seed=5)
    write_trace(later, path)
    config = HeraSchedConfig(**SETTINGS)  # trains on the generated high-load day
    own, other = HeraValidation(config, 300), HeraValidation(config, 300, str(path))
    assert len(own.prepared.jobs) == 1137 and len(other.prepared.jobs) != 1137
    assert other.start == len(other.prepared.jobs) - 300
    assert len(other.prepared.jobs) == len(later.jobs)


def test_the_command_line_sets_the_reward_intervals(tmp_path):
    out = tmp_path / "run"
    assert main(["train", "herasched", "--out", str(out), "--epochs", "1", "--window", "16",
                 "--tail", "4", "--episode-jobs", "300", "--update-every", "64",
                 "--selector-every", "1", "--allocator-every", "3", "--gamma", "0.99",
                 "--validate-every", "0"]) == 0
    c = HeraSched.load(out / "model.pt").config
    assert (c.selector_every, c.allocator_every, c.gamma) == (1, 3, 0.99)
    h = HeraSched.load(out / "model.pt").history[-1]
    # every selector action is paid (bar those at a zero wait), and the choice is logged
    assert h["selector_rewards"] > 0.5 * h["selector_steps"] and 0 <= h["forward_share"] <= 1


def test_the_command_line_sets_both_agents_ppo_and_a_resume_keeps_them(tmp_path, capsys):
    import json

    out = tmp_path / "run"
    base = ["train", "herasched", "--out", str(out), "--window", "16", "--tail", "4",
            "--episode-jobs", "300", "--update-every", "64", "--validate-every", "0"]
    assert main(base + ["--epochs", "1", "--pi-lr", "1e-4", "--vf-lr", "2e-4", "--target-kl",
                        "0.015", "--update-epochs", "3", "--minibatch", "32", "--clip-ratio",
                        "0.1", "--ent-coef", "0.01"]) == 0
    want = dict(pi_lr=1e-4, vf_lr=2e-4, target_kl=0.015, update_epochs=3, minibatch=32,
                clip_ratio=0.1, ent_coef=0.01)
    model = HeraSched.load(out / "model.pt")
    for agent in model.agents:  # the selector's PPO and the allocator's
        assert {k: getattr(agent.params, k) for k in want} == want
        assert agent.pi_optimizer.param_groups[0]["lr"] == 1e-4
        assert agent.v_optimizer.param_groups[0]["lr"] == 2e-4
    saved = json.loads((out / "config.json").read_text())
    assert {k: saved[k] for k in want} == want
    assert model.history[-1]["pi_iters"] <= 3
    # a resume takes them from the run, and refuses a different one
    assert main(base + ["--epochs", "2", "--resume"]) == 0
    assert HeraSched.load(out / "model.pt").config.pi_lr == 1e-4
    assert main(base + ["--epochs", "3", "--resume", "--pi-lr", "3e-4"]) != 0
    assert "trained with pi_lr=0.0001, not 0.0003" in capsys.readouterr().err
    assert HeraSched.load(out / "model.pt").epoch == 2
