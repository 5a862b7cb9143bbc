"""SchedInspector's networks, PPO run on disk, the `inspect:` policy and its commands."""

import json

import numpy as np
import pytest
import torch

from hpcsched.agents.batch import Batch
from hpcsched.agents.inspector import (InspectorConfig, InspectorPolicyNet, InspectorValueNet,
                                       bias_toward_accept, fit_rule)
from hpcsched.agents.inspector_policy import load_inspector
from hpcsched.agents.nets import MaskedPolicy, count_parameters
from hpcsched.agents.ppo import PPO
from hpcsched.cli import main
from hpcsched.experiments import schedinspector as si
from hpcsched.experiments.compare import MEAN_KEYS
from hpcsched.experiments.inspector_training import train

TINY = dict(trace="lublin-1", base="sjf", episode_jobs=32, trajectories_per_epoch=4, n_envs=4,
            train_pi_iters=5, train_v_iters=5, threads=1)


def test_the_networks_have_the_papers_parameter_counts():
    # 7-32-16-8-2: 7*32+32 + 32*16+16 + 16*8+8 + 8*2+2 = 938; the critic ends in 1 output: 929
    assert count_parameters(InspectorPolicyNet(7)) == 938
    assert count_parameters(InspectorValueNet(7)) == 929
    # the paper's 8 features add one input column: 32 weights more each
    assert count_parameters(InspectorPolicyNet(8)) == 970
    assert count_parameters(InspectorValueNet(8)) == 961


def test_a_masked_reject_gets_no_probability():
    net = InspectorPolicyNet(7)
    obs = torch.rand(3, 7)
    mask = torch.tensor([[True, True], [True, False], [True, False]])
    p = torch.softmax(net(obs, mask), -1)
    assert torch.all(p[1:, 1] == 0)
    assert torch.all(p[0] > 0)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs") / "inspect-lublin-1-sjf"
    model = train(InspectorConfig(**TINY), out, 2, validate_every=1, validate_windows=2,
                  validate_jobs=64, progress=False, log=lambda text: None)
    return out, model


def test_a_run_writes_its_checkpoints_log_and_curve(run):
    out, model = run
    for name in ("model.pt", "best.pt", "log.csv", "curve.png", "config.json"):
        assert (out / name).exists(), name
    rows = (out / "log.csv").read_text().splitlines()
    assert len(rows) == 3 and "rejection_ratio" in rows[0]
    assert json.loads((out / "config.json").read_text())["base"] == "sjf"
    assert model.epoch == 2


def test_resuming_gives_the_same_weights_as_training_straight_on(run, tmp_path):
    out, straight = run
    half = tmp_path / "half"
    train(InspectorConfig(**TINY), half, 1, validate_every=0, progress=False, log=lambda t: None)
    resumed = train(InspectorConfig(**TINY), half, 2, resume=True, validate_every=0,
                    progress=False, log=lambda t: None)
    for a, b in zip(straight.policy.parameters(), resumed.policy.parameters()):
        torch.testing.assert_close(a, b)


def test_a_saved_inspector_loads_as_a_policy_around_its_base(run):
    out, _ = run
    policy = load_inspector(out / "model.pt")
    assert policy.base.name == "sjf"
    assert load_inspector(out / "model.pt", base="f1").base.name == "f1"
    with pytest.raises(ValueError, match="not a SchedInspector model"):
        from hpcsched.experiments.policyspec import PRETRAINED
        load_inspector(PRETRAINED / "hpc2n-bsld.pt")


def test_the_table4_rows_follow_the_row_convention(run):
    out, _ = run
    rows = si.table4(["lublin-1"], ["sjf"], count=2, jobs=64, models=out.parent)
    ours = [r for r in rows if r["source"] == "ours"]
    assert [r["policy"] for r in ours] == ["sjf", f"inspect:{out / 'best.pt'}"]
    for r in ours:
        assert {"trace", "policy", "backfill", "rejection_ratio", *MEAN_KEYS} <= set(r)
    assert ours[0]["rejection_ratio"] == 0.0
    paper = [r for r in rows if r["source"] == "paper"]
    assert [r["bsld"] for r in paper] == [333.19, 27.97]  # Table 4, Lublin, SJF
    line = next(x for x in si.side_by_side(rows) if x["source"] == "paper")
    assert line["bsld_gain_%"] == 91.6  # the paper's quoted gain, from its own table


def test_cli_experiment_json_and_compare(run, capsys):
    out, _ = run
    code = main(["experiment", "schedinspector-table4", "--json", "--traces", "lublin-1",
                 "--bases", "sjf", "--count", "2", "--jobs", "64", "--models", str(out.parent)])
    rows = json.loads(capsys.readouterr().out)
    assert code == 0 and {"trace", "policy", "backfill", "bsld", "rejection_ratio"} <= set(rows[0])
    code = main(["compare", "lublin-1", "--profile", "schedinspector", "--backfill", "none",
                 "--policies", f"sjf,inspect:{out}", "--starts", "3000", "--jobs", "64"])
    text = capsys.readouterr().out
    assert code == 0 and "of sjf's proposals" in text and "utilization" in text
    code = main(["compare", "lublin-1", "--profile", "standard", "--policies", f"inspect:{out}",
                 "--start", "0", "--jobs", "64"])
    err = capsys.readouterr().err
    assert code == 2 and "--profile schedinspector" in err and len(err.strip().splitlines()) == 1


def test_without_profile_compare_and_simulate_take_the_models_profile(run, capsys):
    out, _ = run
    argv = ["compare", "lublin-1", "--policies", f"sjf,inspect:{out / 'model.pt'}",
            "--starts", "3000", "--jobs", "64", "--json"]
    assert main(argv) == 0
    implicit = json.loads(capsys.readouterr().out)
    assert main(argv + ["--profile", "schedinspector"]) == 0
    assert implicit == json.loads(capsys.readouterr().out)
    assert main(argv[:-1]) == 0
    assert "profile schedinspector: the one inspect:" in capsys.readouterr().out
    assert main(["simulate", "lublin-1", "--policy", f"inspect:{out}", "--start", "3000",
                 "--jobs", "64", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["profile"] == "schedinspector"
    # heuristics alone keep the standard default
    assert main(["simulate", "lublin-1", "--policy", "sjf", "--start", "3000", "--jobs", "64",
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["profile"] == "standard"


def test_init_accept_starts_the_policy_at_that_accept_probability():
    torch.manual_seed(0)
    net = InspectorPolicyNet(7)
    bias_toward_accept(net, 0.95)
    p = torch.softmax(net(torch.rand(256, 7)), dim=-1)[:, 0]
    assert torch.all((p - 0.95).abs() < 0.01)  # softmax([log .95, log .05]) = .95, weights ~0
    with pytest.raises(ValueError, match="strictly between 0 and 1"):
        bias_toward_accept(net, 1.0)


def test_an_unknown_base_is_one_clear_error(capsys, tmp_path):
    code = main(["train", "inspector", "--base", "nope", "--out", str(tmp_path / "x")])
    assert code == 2 and "unknown policy 'nope'" in capsys.readouterr().err


@pytest.mark.slow
def test_training_on_lublin_1_with_sjf_beats_sjf(tmp_path):
    model = train(InspectorConfig(trace="lublin-1", base="sjf", threads=1), tmp_path / "l1", 20,
                  validate_every=10, progress=False, log=lambda t: None)
    val = [h["val_improvement"] for h in model.history if "val_improvement" in h]
    assert max(val) > 0.3  # the greedy inspector beats SJF by over 30% on validation windows


def test_cli_evaluate_an_inspector_around_another_base(run, capsys):
    out, _ = run
    code = main(["evaluate", str(out / "model.pt"), "--base", "f1", "--against", "f1",
                 "--starts", "3000", "--jobs", "64", "--json"])
    rows = json.loads(capsys.readouterr().out)
    assert code == 0
    assert [r["policy"] for r in rows] == [f"inspect:{out / 'model.pt'}@f1", "f1"]
    assert rows[0]["profile"] == "schedinspector" and "rejection_ratio" in rows[0]


def shipped_inspectors():
    from hpcsched.experiments.policyspec import pretrained_models

    return pretrained_models("inspect-")


@pytest.mark.parametrize("name", shipped_inspectors())
def test_a_shipped_inspector_was_trained_as_its_name_says(name):
    from hpcsched.agents.inspector_policy import load_inspector_checkpoint
    from hpcsched.experiments.policyspec import PRETRAINED

    config = load_inspector_checkpoint(PRETRAINED / f"{name}.pt")["config"]
    backfill = name.endswith("-backfill")
    assert name == si.model_name(config["trace"], config["base"], config["backfill"])
    assert (config["backfill"] != "none") == backfill
    # trained before the schedinspector profile became the authors' code: read as the profile
    # of their semantics (users' requested times, SchedGym's SJF)
    assert config["profile"] == "schedinspector-paper" and config["metric"] == "bsld"


def test_configs_from_before_the_profile_change_name_its_old_semantics():
    from hpcsched.agents.inspector import trained_config
    from hpcsched.experiments.policyspec import model_profiles
    from dataclasses import asdict

    old = {**asdict(InspectorConfig()), "estimate": "user"}  # what every earlier run saved
    assert InspectorConfig.from_dict(old).profile == "schedinspector-paper"
    assert trained_config({**old, "estimate": "perfect"})["profile"] == "schedinspector-paper"
    # a config saved today reads back as it was written, under either profile
    for profile in ("schedinspector", "schedinspector-paper"):
        new = asdict(InspectorConfig(profile=profile))
        assert InspectorConfig.from_dict(new) == InspectorConfig(profile=profile)
    assert InspectorConfig(estimate="perfect").estimate is None  # the profile's loader does it
    assert InspectorConfig(profile="schedinspector-paper", estimate="perfect").estimate == \
        "perfect"
    with pytest.raises(ValueError, match="schedinspector-paper"):
        InspectorConfig(estimate="user")
    spec = "inspect:pretrained/inspect-lublin-1-sjf"
    assert model_profiles([spec]) == {spec: "schedinspector-paper"}


def test_init_rule_fits_the_policy_to_the_reject_unfit_rule():
    from hpcsched.agents import rollout
    from hpcsched.agents.inspector_policy import reject_unfit

    model = PPO(InspectorConfig(**TINY, init_rule="reject-unfit", init_episodes=8))
    assert fit_rule(model)["imitation_agreement"] > 0.99
    # on fresh episodes the greedy policy decides as the rule does
    traj = rollout.collect(model.env(), lambda o, m: (model.predict(o, m),
                                                      np.zeros(len(o), np.float32)), 4, seed=123)
    rule = np.array([reject_unfit(o, m) for o, m in zip(traj.obs, traj.mask)])
    assert 0 < rule.sum() < len(rule) and np.mean(traj.actions == rule) > 0.98
    with pytest.raises(ValueError, match="unknown rule"):
        fit_rule(PPO(InspectorConfig(**TINY, init_rule="nope")))


class ScriptedPolicy(MaskedPolicy):
    """A stand-in policy network whose i-th call gives, for every row, the log-probability
    -(128 + kls[i]) to accept and 0 to reject: exp(-128) is 0 in float32, so log_softmax gives these
    values exactly, and against a rollout log-probability of -128 the approximate KL of pass i is
    exactly kls[i] (dyadic values, exact in float32)."""

    def __init__(self, kls):
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(()))  # the loss has a gradient to step on
        self.kls = iter(kls)

    def forward(self, obs, mask=None):
        accept = -(128.0 + next(self.kls))
        logits = torch.tensor([accept, 0.0]).expand(len(obs), 2)
        return logits + 0.0 * self.w


@pytest.mark.parametrize("target_kl, kls, iters", [
    # threshold 1.5 x 1/128 = 12/1024: 12/1024 is not past it, 13/1024 is
    (1 / 128, [0.0, 8 / 1024, 12 / 1024, 13 / 1024, 0.0], 3),
    (1 / 128, [0.0, 0.5, 0.0], 1),
    # threshold 3/32: never passed, every pass steps (a threshold 100x smaller would stop at 1/32)
    (1 / 16, [0.0, 1 / 32, 3 / 32, 3 / 32, 0.0, 0.0], 6),
])
def test_inspector_kl_stop_happens_exactly_past_one_and_a_half_target(monkeypatch, target_kl,
                                                                      kls, iters):
    """PPO configured as SchedInspector's (float32 statistics over the whole batch) stops its
    policy passes at the first one whose approximate KL is strictly above 1.5 x target_kl, before
    that pass's step (SpinningUp's rule, as with RLScheduler's configuration,
    `test_kl_stop_happens_exactly_past_one_and_a_half_target`). The scripted KLs sit on both sides
    of the threshold and of thresholds 100x away, so a threshold off by 100x, >= for >, or no stop
    at all give another count."""
    model = PPO(InspectorConfig(**{**TINY, "target_kl": target_kl,
                                   "train_pi_iters": len(kls), "train_v_iters": 1}))
    assert model.params.float32_stats
    model.policy = ScriptedPolicy(kls)
    steps = []
    monkeypatch.setattr(model.pi_optimizer, "step", lambda: steps.append(1))
    n = 4  # a power of two: the mean of n equal KLs is exact
    b = Batch(np.zeros((n, 7), np.float32), np.ones((n, 2), bool), np.zeros(n, np.int64),
              np.full(n, -128.0, np.float32))
    b.adv, b.ret = torch.ones(n), torch.zeros(n)
    stats = model._update(b)
    assert stats["pi_iters"] == iters == len(steps)
    assert stats["kl"] == kls[min(iters, len(kls) - 1)]
