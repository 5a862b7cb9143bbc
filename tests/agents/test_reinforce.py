"""REINFORCE with a baseline (`agents.reinforce`): returns, the three baselines, the step's
gradient, chunks, the entropy bonus, clipping, and the settings' errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from hpcsched.agents.reinforce import (Reinforce, ReinforceSettings, advantages, make_optimizer,
                                       returns_to_go)


def test_returns_to_go_discount_and_truncate_at_the_batch_end():
    rewards = np.array([[1.0, 2.0, 4.0], [0.0, 0.0, 8.0]])
    np.testing.assert_allclose(returns_to_go(rewards, 0.5), [[1 + 1 + 1, 2 + 2, 4], [2, 4, 8]])
    np.testing.assert_array_equal(returns_to_go(rewards, 1.0),
                                  np.flip(np.cumsum(np.flip(rewards, 1), 1), 1))


def test_the_time_baseline_is_the_mean_return_to_go_at_each_decision_index_over_the_group():
    # one jobset, two rollouts of lengths 2 and 3 (zero-padded)
    rewards = np.array([[-1.0, -3.0, 0.0], [-2.0, -1.0, -1.0]])
    env = np.array([0, 0, 1, 1, 1])
    index = np.array([0, 1, 0, 1, 2])
    adv, togo = advantages(rewards, np.array([0, 0]), env, index)
    np.testing.assert_allclose(togo, [[-4, -3, 0], [-4, -2, -1]])
    # baseline: [-4, -2.5, -0.5]
    np.testing.assert_allclose(adv, [0, -0.5, 0, 0.5, -0.5])


def test_two_groups_have_their_own_time_baselines():
    rewards = np.array([[-1.0], [-3.0], [-10.0], [-20.0]])
    adv, _ = advantages(rewards, np.array([0, 0, 1, 1]), np.arange(4), np.zeros(4, int))
    np.testing.assert_allclose(adv, [1, -1, 5, -5])


def one_trajectory(update: Reinforce, rewards):
    rewards = np.asarray(rewards, dtype=float)[None]
    n = rewards.shape[1]
    return update.advantages(rewards, np.zeros(1, int), np.zeros(n, int), np.arange(n))[0]


def test_standardize_gives_zero_mean_unit_spread():
    update = Reinforce([torch.nn.Parameter(torch.zeros(1))],
                       ReinforceSettings(lr=1e-3, gamma=0.6, baseline="standardize"))
    adv = one_trajectory(update, [1.0, 0.0, 3.0, 2.0])
    assert adv.mean() == pytest.approx(0, abs=1e-12) and adv.std() == pytest.approx(1, rel=1e-6)


def test_the_running_baseline_is_the_mean_of_past_updates_returns_per_index():
    update = Reinforce([torch.nn.Parameter(torch.zeros(1))],
                       ReinforceSettings(lr=1e-3, baseline="running"))
    np.testing.assert_allclose(one_trajectory(update, [1.0, 1.0]), [2, 1])  # baseline 0 at first
    update.updates += 1
    np.testing.assert_allclose(one_trajectory(update, [3.0, 1.0, 2.0]), [6 - 2, 3 - 1, 2 - 0])
    update.updates += 1
    # index 0 has seen 2 and 6, index 2 has seen 2 (and 0 from the update it did not reach)
    np.testing.assert_allclose(update.running, [4, 2, 1])


def linear_policy(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Linear(3, 4)


def batch(n=10, seed=1):
    g = torch.Generator().manual_seed(seed)
    obs = torch.randn(n, 3, generator=g)
    masks = torch.rand(n, 4, generator=g) < 0.7
    masks[:, 0] = True
    actions = torch.stack([torch.multinomial(m.float(), 1, generator=g)[0] for m in masks])
    adv = torch.randn(n, generator=g)
    return obs, masks, actions, adv


def masked(net):
    return lambda obs, masks: net(obs).masked_fill(~masks, float("-inf"))


def test_the_step_follows_the_policy_gradient():
    net = linear_policy()
    obs, masks, actions, adv = batch()
    update = Reinforce(net.parameters(), ReinforceSettings(lr=0.1, optimizer="rmsprop"))
    update.optimizer = torch.optim.SGD(net.parameters(), lr=0.1)  # the plain gradient step
    before = [p.detach().clone() for p in net.parameters()]
    logp = torch.log_softmax(masked(net)(obs, masks), -1)
    loss = -(logp[torch.arange(10), actions] * adv).mean()
    want = torch.autograd.grad(loss, list(net.parameters()))
    stats = update.step(masked(net), obs, masks, actions, adv)
    for b, p, g in zip(before, net.parameters(), want):
        torch.testing.assert_close(p.detach(), b - 0.1 * g)
    assert update.updates == 1 and stats["entropy"] > 0


def test_chunks_sum_to_the_whole_batchs_gradient():
    obs, masks, actions, adv = batch(n=11)
    nets = [linear_policy(), linear_policy()]
    for net, chunk in zip(nets, (0, 4)):
        update = Reinforce(net.parameters(), ReinforceSettings(lr=0.1, chunk=chunk))
        update.optimizer = torch.optim.SGD(net.parameters(), lr=1.0)
        update.step(masked(net), obs, masks, actions, adv)
    for a, b in zip(*(n.parameters() for n in nets)):
        torch.testing.assert_close(a, b)


@torch.no_grad()
def entropy(net, obs, masks):
    p = torch.softmax(masked(net)(obs, masks), -1)
    return float(-(p * torch.log(p.clamp_min(1e-30))).sum(-1).mean())


def test_the_entropy_bonus_spreads_the_policy_and_clipping_bounds_the_step():
    obs, masks, actions, _ = batch()
    net = linear_policy()
    start = entropy(net, obs, masks)
    update = Reinforce(net.parameters(), ReinforceSettings(lr=0.05, entropy=1.0))
    for _ in range(20):
        update.step(masked(net), obs, masks, actions, torch.zeros(10))  # no advantage at all
    assert entropy(net, obs, masks) > start
    net = linear_policy()
    update = Reinforce(net.parameters(), ReinforceSettings(lr=1.0, max_grad_norm=1e-3))
    update.optimizer = torch.optim.SGD(net.parameters(), lr=1.0)
    before = torch.cat([p.detach().flatten().clone() for p in net.parameters()])
    update.step(masked(net), obs, masks, actions, 100 * torch.ones(10))
    after = torch.cat([p.detach().flatten() for p in net.parameters()])
    assert float((after - before).norm()) == pytest.approx(1e-3, rel=1e-4)


def test_settings_name_what_is_wrong():
    with pytest.raises(ValueError, match="baseline must be one of time, standardize, running, "
                                         "not 'mean'"):
        ReinforceSettings(lr=1e-3, baseline="mean")
    with pytest.raises(ValueError, match="optimizer must be one of rmsprop, adam, not 'sgd'"):
        ReinforceSettings(lr=1e-3, optimizer="sgd")
    p = [torch.nn.Parameter(torch.zeros(1))]
    assert isinstance(make_optimizer(p, ReinforceSettings(lr=1e-3, optimizer="rmsprop")),
                      torch.optim.RMSprop)
    assert isinstance(make_optimizer(p, ReinforceSettings(lr=1e-3)), torch.optim.Adam)
