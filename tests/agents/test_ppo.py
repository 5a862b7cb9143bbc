"""PPO on a fake environment whose best policy is known (tests/agents/fakes.py): it learns, it is
deterministic across save and load, and its fast paths (distinct rows scored once, chunked
gradients, policy and value updated side by side) compute what the plain formulas compute."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fakes import FakeVecPickJob, padding_row
from hpcsched.agents import rollout
from hpcsched.agents.batch import Batch
from hpcsched.agents.greedy import decision_scores, torch_float64
from hpcsched.agents.ppo import PPO, PPOParams
from hpcsched.agents.rlscheduler import RLSchedulerConfig

SLOTS = 16


def fake(n_envs=8, **kw):
    return FakeVecPickJob(n_envs=n_envs, slots=SLOTS, episode_jobs=8, **kw)


def config(**kw):
    base = dict(n_envs=8, trajectories_per_epoch=8, slots=SLOTS, pi_lr=1e-3, train_pi_iters=40,
                train_v_iters=40, seed=0, threads=1)
    return RLSchedulerConfig(**{**base, **kw})


def greedy_mean_reward(model, seed=123, episodes=32) -> float:
    """The model's greedy mean reward on a fixed set of fake episodes."""
    def act(obs, mask):
        return np.asarray(model.predict(obs, mask)), np.zeros(len(mask), np.float32)

    return float(rollout.collect(fake(), act, episodes, seed=seed).rewards.mean())


def same_weights(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


# -- learning ------------------------------------------------------------------------------------
def test_a_few_epochs_learn_to_pick_the_smallest_job():
    model = PPO(config(), env=fake())
    before = greedy_mean_reward(model)
    model.learn(4)
    after = greedy_mean_reward(model)
    # a uniformly random choice among k = 1..16 jobs has mean rank (k - 1) / 2, 3.75 on average;
    # the best policy scores 0
    assert after > before + 1.0
    assert after > -2.0
    assert [h["epoch"] for h in model.history] == [1, 2, 3, 4]
    assert all(h["trajectories"] == 8 and h["decisions"] == 64 for h in model.history)
    assert all(0 < h["pi_iters"] <= 40 for h in model.history)


@pytest.mark.parametrize("policy", ["kernel", "mlp-v2"])
def test_predict_is_greedy_and_sampling_respects_the_mask(policy):
    model = PPO(config(policy=policy), env=fake())
    model.learn(1)  # no longer flat scores: ties would hide the choice
    env = fake()
    obs, mask = env.reset(seed=5)
    # the greedy rule (agents/greedy.py) on logits from a float64 copy of the network
    with torch.no_grad():
        logits = torch_float64(model.policy)(torch.from_numpy(obs).double(),
                                             torch.from_numpy(mask)).numpy()
    expected = np.where(mask, decision_scores(logits), -np.inf).argmax(1)
    np.testing.assert_array_equal(model.predict(obs, mask), expected)
    assert model.predict(obs[0], mask[0]) == expected[0]  # a single observation
    g = torch.Generator().manual_seed(0)
    for _ in range(20):
        a = model.predict(obs, mask, deterministic=False, generator=g)
        assert mask[np.arange(len(a)), a].all()


# -- determinism ---------------------------------------------------------------------------------
def test_two_epochs_equal_one_epoch_saved_loaded_and_one_more(tmp_path):
    straight = PPO(config(), env=fake()).learn(2)

    first = PPO(config(), env=fake()).learn(1)
    first.save(tmp_path / "one.pt")
    assert not same_weights(first.policy, straight.policy)  # the second epoch changed something
    resumed = PPO.load(tmp_path / "one.pt", env=fake())
    assert resumed.epoch == 1 and len(resumed.history) == 1
    assert same_weights(resumed.policy, first.policy)
    resumed.learn(1)

    assert resumed.epoch == 2
    assert same_weights(resumed.policy, straight.policy)
    assert same_weights(resumed.value, straight.value)
    assert [h["mean_reward"] for h in resumed.history] == [h["mean_reward"] for h in
                                                           straight.history]


def test_the_seed_matters():
    a = PPO(config(seed=0), env=fake()).learn(1)
    b = PPO(config(seed=1), env=fake()).learn(1)
    assert not same_weights(a.policy, b.policy)


def test_parallel_and_serial_updates_agree():
    # two torch threads: policy and value iterations in one thread each, side by side. (The
    # serial run keeps one thread: two threads per tiny matrix product are not what is compared,
    # and they crawl on a busy machine.)
    serial = PPO(config(parallel_update=False, threads=1), env=fake()).learn(2)
    parallel = PPO(config(parallel_update=True, threads=2), env=fake()).learn(2)
    for a, b in [(serial.policy, parallel.policy), (serial.value, parallel.value)]:
        for (name, x), y in zip(a.state_dict().items(), b.state_dict().values()):
            torch.testing.assert_close(y, x, msg=name)
    assert [h["pi_iters"] for h in serial.history] == [h["pi_iters"] for h in parallel.history]
    assert torch.get_num_threads() == 1  # learn() gave the thread count back


# -- the fast paths compute the plain formulas ---------------------------------------------------
def duplicated_trajectories(decisions=40, pool=6, seed=0) -> rollout.Trajectories:
    """Decisions whose real rows come from a small pool (as when jobs wait through several
    decisions), padded with RLScheduler's padding row."""
    rng = np.random.default_rng(seed)
    rows = rng.random((pool, 8), dtype=np.float32)
    obs = np.broadcast_to(padding_row(8), (decisions, SLOTS, 8)).copy()
    mask = np.zeros((decisions, SLOTS), dtype=bool)
    for d in range(decisions):
        k = int(rng.integers(1, SLOTS + 1))
        obs[d, :k] = rows[rng.integers(0, pool, size=k)]
        mask[d, :k] = True
    actions = (rng.random(decisions) * mask.sum(1)).astype(np.int64)
    return rollout.Trajectories(
        obs=obs, mask=mask, actions=actions,
        logp=-np.log(mask.sum(1)).astype(np.float32), lengths=np.array([decisions // 2] * 2),
        rewards=np.array([-1.0, -2.0]))


def sampled_trajectories(model) -> rollout.Trajectories:
    g = torch.Generator().manual_seed(1)
    return rollout.collect(fake(), model._act_fn(g), 8, seed=2)


def batch_with_targets(traj, seed=0) -> Batch:
    b = Batch(traj.obs, traj.mask, traj.actions, traj.logp)
    g = torch.Generator().manual_seed(seed)
    b.adv = torch.randn(b.size, generator=g)
    b.ret = torch.randn(b.size, generator=g) * 3
    return b


def surrogate_by_formula(policy, b: Batch, clip: float) -> torch.Tensor:
    """SpinningUp's clipped surrogate from the dense forward: -mean(min(r A, clip(r) A))."""
    logp = torch.log_softmax(policy(b.obs, b.mask), -1).gather(1, b.actions[:, None]).squeeze(1)
    ratio = torch.exp(logp - b.logp_old)
    return -torch.min(ratio * b.adv, torch.clamp(ratio, 1 - clip, 1 + clip) * b.adv).mean()


def grads(net) -> list[torch.Tensor]:
    return [p.grad.clone() for p in net.parameters()]


@pytest.mark.parametrize("source", ["duplicated", "sampled"])
def test_packed_kernel_log_probs_and_gradients_equal_the_dense_forward(source):
    model = PPO(config(), env=fake())
    traj = duplicated_trajectories() if source == "duplicated" else sampled_trajectories(model)
    b = batch_with_targets(traj)
    real_rows = int(traj.mask.sum())
    if source == "duplicated":
        assert len(b.packed[0]) <= 6 < real_rows  # the kernel really ran on fewer rows
    assert b.pad_row is not None and model.policy.reads_packed(b) and model.value.reads_packed(b)

    packed = torch.log_softmax(model.policy.logits(b), -1)
    dense = torch.log_softmax(model.policy(b.obs, b.mask), -1)
    torch.testing.assert_close(packed[b.mask], dense[b.mask], rtol=1e-5, atol=1e-5)
    assert (packed[~b.mask].exp() == 0).all()
    torch.testing.assert_close(model.policy.distribution(b).log_prob(),
                               dense.gather(1, b.actions[:, None]).squeeze(1), rtol=1e-5, atol=1e-5)

    # the policy's loss and gradient
    model.policy.zero_grad()
    out = model._policy_pass(b, first=True)
    ours = grads(model.policy)
    model.policy.zero_grad()
    loss = surrogate_by_formula(model.policy, b, model.config.clip_ratio)
    loss.backward()
    loss = loss.detach()
    assert out["loss_pi"] == pytest.approx(loss.item(), rel=1e-5, abs=1e-6)
    for x, y in zip(ours, grads(model.policy)):
        torch.testing.assert_close(x, y, rtol=1e-4, atol=1e-6)
    assert any(float(g.abs().sum()) > 0 for g in ours)  # a gradient to compare
    # entropy of the dense distribution, by its definition
    dense = dense.detach()
    p = dense.exp()
    entropy = -(torch.where(b.mask, p * dense, 0.0)).sum(-1).mean()
    assert out["entropy"] == pytest.approx(float(entropy), rel=1e-4)

    # the value's loss and gradient
    model.value.zero_grad()
    loss_v = model._value_pass(b)
    ours = grads(model.value)
    model.value.zero_grad()
    dense_v = ((model.value(b.obs) - b.ret) ** 2).mean()
    dense_v.backward()
    dense_v = dense_v.detach()
    assert loss_v == pytest.approx(float(dense_v), rel=1e-5)
    for x, y in zip(ours, grads(model.value)):
        torch.testing.assert_close(x, y, rtol=1e-4, atol=1e-6)


def test_chunked_gradients_of_flat_networks_equal_the_full_batch(monkeypatch):
    monkeypatch.setattr(RLSchedulerConfig, "CHUNK", 7)  # 40 decisions in 6 chunks, the last short
    model = PPO(config(policy="mlp-v2", value="flat"), env=fake())
    b = batch_with_targets(duplicated_trajectories())
    assert [len(part.actions) for part in model._parts(model.policy, b)] == [7] * 5 + [5]
    assert not model.policy.reads_packed(b) and not model.value.reads_packed(b)

    model.policy.zero_grad()
    out = model._policy_pass(b, first=True)
    ours = grads(model.policy)
    model.policy.zero_grad()
    loss = surrogate_by_formula(model.policy, b, model.config.clip_ratio)
    loss.backward()
    loss = loss.detach()
    assert out["loss_pi"] == pytest.approx(loss.item(), rel=1e-5, abs=1e-6)
    for x, y in zip(ours, grads(model.policy)):
        torch.testing.assert_close(x, y, rtol=1e-4, atol=1e-6)

    model.value.zero_grad()
    loss_v = model._value_pass(b)
    ours = grads(model.value)
    model.value.zero_grad()
    dense_v = ((model.value(b.obs) - b.ret) ** 2).mean()
    dense_v.backward()
    dense_v = dense_v.detach()
    assert loss_v == pytest.approx(float(dense_v), rel=1e-5)
    for x, y in zip(ours, grads(model.value)):
        torch.testing.assert_close(x, y, rtol=1e-4, atol=1e-6)


def test_early_stop_on_kl():
    # with a huge learning rate the first step moves the policy far: the KL check stops the
    # iterations at once (SpinningUp: stop when KL > 1.5 * target_kl)
    model = PPO(config(pi_lr=1.0, train_pi_iters=40, train_v_iters=1), env=fake()).learn(1)
    h = model.history[0]
    assert h["pi_iters"] < 40
    assert h["kl"] > 1.5 * model.config.target_kl


def test_config_round_trips_and_refuses_unknown_settings():
    c = config(policy="mlp-v1", gamma=0.9)
    from dataclasses import asdict

    assert RLSchedulerConfig.from_dict(asdict(c)) == c
    with pytest.raises(ValueError, match="unknown setting"):
        RLSchedulerConfig.from_dict({"learning_rate": 1e-3})
    assert RLSchedulerConfig().features == 8
    assert RLSchedulerConfig(metric="fairness").features == 9


@pytest.mark.parametrize("target_kl, kls, iters", [
    (0.01, [0.0, 0.01, 0.015, 0.0151, 0.0], 3),   # 0.015 is not past 1.5 x 0.01; 0.0151 is
    (0.01, [0.0, 0.02, 0.0], 1),
    (0.1, [0.0, 0.02, 0.1, 0.149, 0.0, 0.0], 6),  # never past 0.15: every iteration steps
])
def test_kl_stop_happens_exactly_past_one_and_a_half_target(monkeypatch, target_kl, kls, iters):
    """The policy iterations stop at the first pass whose approximate KL is strictly above
    1.5 x target_kl, before that pass's step (SpinningUp's rule). Scripted KLs put the threshold
    between values a factor of 100 apart, so a threshold off by that factor (or >= for >) fails."""
    model = PPO(config(target_kl=target_kl, train_pi_iters=len(kls)), env=fake())
    script = iter(kls)
    steps = []
    monkeypatch.setattr(model, "_policy_pass", lambda b, first: {
        "loss_pi": 0.0, "entropy": 0.0, "clip_fraction": 0.0, "kl": next(script)})
    monkeypatch.setattr(model.pi_optimizer, "step", lambda: steps.append(1))
    stats = model._update_policy(None)
    assert stats["pi_iters"] == iters == len(steps)
    assert stats["kl"] == kls[min(iters, len(kls) - 1)]


def test_float32_statistics_are_the_batch_means_and_agree_with_the_float64_sums(monkeypatch):
    """SchedInspector's configuration takes KL, clip fraction and entropy as float32 means over
    the whole batch, RLScheduler's sums them in float64: the same numbers to float32's precision,
    and the same loss and gradient."""
    model = PPO(config(policy="mlp-v2", value="flat"), env=fake())
    b = batch_with_targets(duplicated_trajectories())
    model.policy.zero_grad()
    sums = model._policy_pass(b, first=True)
    g64 = grads(model.policy)
    params = PPOParams(**{**model.params.__dict__, "chunk": None, "float32_stats": True})
    monkeypatch.setattr(PPO, "params", property(lambda self: params))
    model.policy.zero_grad()
    means = model._policy_pass(b, first=True)
    for key in ("loss_pi", "kl", "clip_fraction", "entropy"):
        assert means[key] == pytest.approx(sums[key], rel=1e-5, abs=1e-7), key
    for x, y in zip(g64, grads(model.policy)):
        torch.testing.assert_close(x, y, rtol=1e-5, atol=1e-7)
    dist = model.policy.distribution(b)
    assert means["entropy"] == float(dist.entropy().mean())
    with pytest.raises(ValueError, match="chunk=None"):
        PPOParams(float32_stats=True)
    with pytest.raises(ValueError, match="sampling"):
        PPOParams(sampling="gumbel")


@pytest.mark.parametrize("sampling", ["cdf", "multinomial"])
def test_both_samplers_draw_from_the_policy(sampling):
    """Either random stream samples the masked softmax: slot frequencies over many draws match the
    probabilities, and the log-probabilities returned are the drawn slots'."""
    model = PPO(config(), env=fake())
    model.learn(1)
    obs, mask = fake(n_envs=1).reset(seed=3)
    obs, mask = np.repeat(obs, 4000, 0), np.repeat(mask, 4000, 0)
    act = model._act_fn(torch.Generator().manual_seed(0), sampling)
    a, logp = act(obs, mask)
    with torch.no_grad():
        p = torch.softmax(model.policy(torch.from_numpy(obs[:1]), torch.from_numpy(mask[:1])),
                          -1)[0].numpy()
    assert mask[0, a].all()
    freq = np.bincount(a, minlength=SLOTS) / len(a)
    assert np.abs(freq - p).max() < 0.03
    np.testing.assert_allclose(logp, np.log(p[a]), rtol=1e-4)


def _blas_threads() -> set[int]:
    from threadpoolctl import threadpool_info

    return {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}


def test_training_threads_limit_numpys_blas_pool_too():
    """`threads` bounds numpy's BLAS pool as well as torch's for the training, and both are as
    they were afterwards (a BLAS thread per core spun beside a one-thread training)."""
    from threadpoolctl import threadpool_limits
    from hpcsched.agents.ppo import torch_threads

    seen = []
    with threadpool_limits(limits=2, user_api="blas"):
        torch_before = torch.get_num_threads()
        assert _blas_threads() == {2}
        with torch_threads(1):
            assert _blas_threads() == {1} and torch.get_num_threads() == 1
        assert _blas_threads() == {2} and torch.get_num_threads() == torch_before
        with torch_threads(None):  # no limit: as they are
            assert _blas_threads() == {2}
        PPO(config(threads=1), env=fake()).learn(
            1, callback=lambda stats: seen.append((_blas_threads(), torch.get_num_threads())))
        assert _blas_threads() == {2}
    assert seen == [({1}, 1)]
