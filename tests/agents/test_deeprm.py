"""DeepRM's learner: the network's size, its verbs, a run on disk and its resume."""

from __future__ import annotations

import numpy as np
import pytest

from hpcsched.agents.deeprm import DeepRM, DeepRMConfig, policy_network
from hpcsched.agents.nets import count_parameters


def test_the_paper_network_has_89451_parameters():
    # the paper's count: 20 x 223 inputs -> 20 -> 11 = 4460*20 + 20 + 20*11 + 11
    assert count_parameters(policy_network(20 * 223, 20, 11)) == 89_451
    model = DeepRM(DeepRMConfig(jobsets=2, validate_jobsets=0))
    assert count_parameters(model.net) == 89_451


def test_predict_is_the_engine_policys_pick():
    from hpcsched.workload.deeprm import generate, rate_for_load

    model = DeepRM(small_config())
    batch = model.config.batch()
    batch.reset(generate(6, rate_for_load(1.3), 10, seed=1))
    policy = model.policy()
    for _ in range(15):
        live = np.flatnonzero(~batch.done)
        images = batch.images(live, np.float32)
        masks = batch.action_mask()[live]
        want = policy.act(batch)
        np.testing.assert_array_equal(model.predict(images, masks), want[live])
        assert model.predict(images, masks, deterministic=False).shape == (len(live),)
        batch.step(want)


def small_config(**kw) -> DeepRMConfig:
    return DeepRMConfig(load=0.5, steps=10, jobsets=4, rollouts=3, jobsets_per_update=2,
                           validate_jobsets=3, **kw)


def test_train_writes_every_epoch_and_resumes(tmp_path):
    from hpcsched.experiments.deeprm import train

    out = tmp_path / "run"
    model = train(small_config(), out, 1, progress=False, log=lambda t: None)
    assert model.epoch == 1
    for name in ("model.pt", "best.pt", "log.csv", "curve.png", "config.json"):
        assert (out / name).exists(), name
    with pytest.raises(FileExistsError):
        train(small_config(), out, 2, progress=False, log=lambda t: None)
    first = DeepRM.load(out / "model.pt")
    model = train(small_config(), out, 2, resume=True, progress=False, log=lambda t: None)
    assert model.epoch == 2 and [h["epoch"] for h in model.history] == [1, 2]
    assert len((out / "log.csv").read_text().strip().splitlines()) == 3
    # the update changed the weights it resumed from
    assert not np.allclose(first.net[0].weight.detach().numpy(),
                           model.net[0].weight.detach().numpy())


def _rng_fingerprint(model) -> tuple:
    import random

    import torch

    return (repr(model.rng.bit_generator.state), torch.get_rng_state().numpy().tobytes(),
            repr(np.random.get_state(legacy=False)), repr(random.getstate()))


def _seed_globals(seed: int) -> None:
    import random

    import torch

    np.random.seed(seed)
    random.seed(seed)
    torch.manual_seed(seed)


def test_resume_restores_every_random_state_and_continues_as_if_never_stopped(tmp_path):
    """Two epochs in one go and one epoch + a resumed one give the same model, optimiser state,
    history and random states: the learner's numpy generator (which orders the jobsets and samples
    the actions) and the global torch, numpy and Python ones."""
    from hpcsched.experiments.deeprm import train

    quiet = {"progress": False, "log": lambda t: None}
    _seed_globals(7)
    straight = train(small_config(), tmp_path / "a", 2, **quiet)
    after_straight = _rng_fingerprint(straight)
    _seed_globals(7)
    train(small_config(), tmp_path / "b", 1, **quiet)
    _seed_globals(12345)  # a new process: nothing of the first run's random states survives
    resumed = train(small_config(), tmp_path / "b", 2, resume=True, **quiet)
    for a, b in zip(straight.net.state_dict().values(), resumed.net.state_dict().values()):
        assert np.array_equal(a.numpy(), b.numpy())
    opt_a, opt_b = straight.optimizer.state_dict(), resumed.optimizer.state_dict()
    for k in opt_a["state"]:
        for name, value in opt_a["state"][k].items():
            assert np.array_equal(np.asarray(value), np.asarray(opt_b["state"][k][name])), name
    timing = {"rollout_s", "update_s", "epoch_s"}
    assert [{k: v for k, v in h.items() if k not in timing} for h in straight.history] == \
        [{k: v for k, v in h.items() if k not in timing} for h in resumed.history]
    assert _rng_fingerprint(resumed) == after_straight
    # the saved files agree too
    again = DeepRM.load(tmp_path / "b" / "model.pt")
    assert repr(again.rng.bit_generator.state) == repr(straight.rng.bit_generator.state)


def test_a_warm_starts_best_pt_holds_its_own_validation_entry(tmp_path, monkeypatch):
    from hpcsched.modelfile import read_model
    from hpcsched.experiments.deeprm import train

    # the warm start only: its best.pt is the one checked
    monkeypatch.setattr(DeepRM, "learn", lambda self, epochs, callback=None: None)
    train(small_config(init="sjf", init_passes=1), tmp_path / "run", 1, progress=False,
          log=lambda t: None)
    ck = read_model(tmp_path / "run" / "best.pt", recipe="deeprm")
    assert ck["epoch"] == 0 and [h["epoch"] for h in ck["history"]] == [0]
    assert "val_slowdown" in ck["history"][0]
