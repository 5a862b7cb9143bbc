"""HeraSched's learner (`hpcsched.agents.herasched`, `herasched_rollout`) and its engine policy
(`herasched_policy`): a model schedules through the engine as through its environment, rewards
reach the agent they are for, no decision is lost or used twice across updates, GAE with episode
ends and bootstraps, and a run stopped, saved, loaded and continued learns as one that never
stopped."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from hpcsched.agents.herasched import HeraSched, HeraSchedConfig
from hpcsched.agents.herasched_policy import as_policy, load_herasched
from hpcsched.agents.herasched_rollout import advantages
from hpcsched.envs.herasched import HeraSchedEnv
from hpcsched.sim.run import simulate

pytestmark = pytest.mark.usefixtures("one_torch_thread")

TIMINGS = {"rollout_s", "update_s", "epoch_s", "selector_pi_s", "allocator_pi_s",
           "selector_v_s", "allocator_v_s"}


def small(**kw) -> HeraSchedConfig:
    """Deeplearn's generated high-load day, 200-job episodes, updates every 128 selector steps."""
    settings = dict(window=16, tail=4, episode_jobs=200, num_envs=2, update_every=128,
                    selector_every=32, allocator_every=10, minibatch=64, update_epochs=2,
                    pi_lr=3e-3, vf_lr=3e-3)
    settings.update(kw)
    return HeraSchedConfig(**settings)


@pytest.fixture(scope="module")
def trained():
    model = HeraSched(small())
    model.learn(2)
    return model


def test_gae_stops_at_episode_ends_and_bootstraps_the_last():
    r = np.array([1.0, 0.0, 2.0, 0.0])
    v = np.array([0.5, 0.2, 0.1, 0.3])
    dones = np.array([False, True, False, False])
    adv, ret = advantages(r, v, dones, bootstrap=0.7, gamma=0.9, lam=0.5)
    # episode 1: t=1 ends it (no value after), t=0 bootstraps from t=1
    d1 = 0.0 + 0.0 - 0.2
    d0 = 1.0 + 0.9 * 0.2 - 0.5
    # episode 2: t=3 bootstraps from the held-back decision's value 0.7
    d3 = 0.0 + 0.9 * 0.7 - 0.3
    d2 = 2.0 + 0.9 * 0.3 - 0.1
    np.testing.assert_allclose(adv, [d0 + 0.45 * d1, d1, d2 + 0.45 * d3, d3])
    np.testing.assert_allclose(ret, adv + v)


def test_a_model_schedules_on_the_engine_as_in_its_environment(trained):
    env = HeraSchedEnv(trained.config.prepared(), trained.config.cluster,
                       **{**trained.config.env_kwargs(), "episode_jobs": 300})
    obs, info = env.reset(options={"start": 100})
    terminated = False
    while not terminated:
        obs, _, terminated, _, info = env.step(trained.predict(obs, info["action_mask"]))
    ours = env.engine.result()
    policy = as_policy(trained, name="herasched")
    theirs = simulate(env.prepared, policy, start=100, jobs=300)
    np.testing.assert_array_equal(ours.start, theirs.start)
    assert [a.tolist() for a in ours.allocations] == [a.tolist() for a in theirs.allocations]
    # under EASY the engine's backfilling never acts: HeraSched only starts jobs that fit
    easy = simulate(env.prepared, as_policy(trained), backfill="easy", start=100, jobs=300)
    np.testing.assert_array_equal(easy.start, theirs.start)


def test_the_file_schedules_as_the_learner_and_refuses_what_it_cannot(trained, tmp_path):
    trained.save(tmp_path / "m.pt")
    prepared = trained.config.prepared()
    a = simulate(prepared, load_herasched(tmp_path / "m.pt"), start=0, jobs=150)
    b = simulate(prepared, as_policy(trained), start=0, jobs=150)
    np.testing.assert_array_equal(a.start, b.start)
    with pytest.raises(ValueError, match="no separate backfiller.*not conservative"):
        simulate(prepared, load_herasched(tmp_path / "m.pt"), backfill="conservative", jobs=50)


def test_rewards_reach_their_agent_and_no_decision_is_lost_or_used_twice():
    model = HeraSched(small(num_envs=1, episode_jobs=60))
    rollout = model.rollout()
    act = model._act_fn(torch.Generator().manual_seed(0))
    env = rollout.envs[0]
    total = [0.0, 0.0]
    used = [0, 0]
    seen_steps = [0, 0]
    original = env.step

    def step(action):  # every reward the env pays, per agent
        out = original(action)
        total[0] += out[4]["rewards"][0]
        total[1] += out[4]["rewards"][1]
        return out

    env.step = step
    for _ in range(4):
        data, seen = rollout.collect(act, 128)
        seen_steps[0] += seen["selector_steps"]
        seen_steps[1] += seen["allocator_steps"]
        for agent in (0, 1):
            used[agent] += data[agent].size
            total[agent] -= data[agent].rewards.sum()
            assert all(len(s) == 3 for s in data[agent].streams)
    held = [sum(h[agent] is not None for h in rollout.held) for agent in (0, 1)]
    held_rewards = [sum(h[agent].reward for h in rollout.held if h[agent] is not None)
                    for agent in (0, 1)]
    assert [u + h for u, h in zip(used, held)] == seen_steps  # each decision once
    np.testing.assert_allclose(total, held_rewards, atol=1e-9)  # each reward once, to its agent
    assert seen["episodes_ended"] >= 0 and rollout.episodes[0] >= 1  # episodes did end


def strip(history):
    return [{k: v for k, v in h.items() if k not in TIMINGS} for h in history]


def test_a_run_saved_and_loaded_mid_episode_learns_as_one_that_never_stopped(tmp_path):
    config = small(episode_jobs=1000)  # episodes far longer than a rollout
    straight = HeraSched(config)
    straight.learn(3)
    stopped = HeraSched(small(episode_jobs=1000))
    stopped.learn(1)
    assert stopped.rollout().episodes == [0, 0]  # mid-episode
    stopped.save(tmp_path / "model.pt")
    resumed = HeraSched.load(tmp_path / "model.pt")
    resumed.learn(2)
    for name in ("selector_policy", "selector_value", "allocator_policy", "allocator_value"):
        a, b = getattr(straight, name).state_dict(), getattr(resumed, name).state_dict()
        assert all(torch.equal(a[k], b[k]) for k in a), name
    assert strip(straight.history) == strip(resumed.history)


def test_the_thesis_networks_train_too():
    model = HeraSched(small(net="thesis", hidden=(64, 32)))
    before = {k: v.clone() for k, v in model.allocator_policy.state_dict().items()}
    model.learn(1)
    after = model.allocator_policy.state_dict()
    assert any(not torch.equal(before[k], after[k]) for k in before)
    assert model.history[0]["selector_steps"] >= 128


def test_selector_choice_counts_choices_and_forwards():
    from types import SimpleNamespace

    import numpy as np

    from hpcsched.agents.herasched import selector_choice

    # W = 3 slots + Forward (column 3); rows: two jobs fit, one fits, one fits, two fit
    mask = np.array([[1, 1, 0, 1], [1, 0, 0, 1], [0, 0, 1, 1], [0, 1, 1, 1]], dtype=bool)
    d = SimpleNamespace(size=4, mask=mask, actions=np.array([3, 0, 3, 1]))
    c = selector_choice(d, 3)
    assert c == {"selector_valid": 2.5, "selector_choice_share": 0.5, "forward_share": 0.5,
                 "forward_with_fit_share": 0.5}
    assert selector_choice(SimpleNamespace(size=0), 3) == {}
