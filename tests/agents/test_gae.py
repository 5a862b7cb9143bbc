"""GAE advantages and returns of trajectories with a single, terminal reward (spec section 6/8)."""

from __future__ import annotations

import numpy as np
import pytest

from hpcsched.agents.ppo import advantages_and_returns, derived_seed


def gae_by_hand(values, reward, gamma, lam):
    """One trajectory, straight from the definitions: delta_t = r_t + gamma V_{t+1} - V_t with the
    value after the last step 0 and r_t = 0 except r_{T-1} = reward;
    A_t = sum_l (gamma lam)^l delta_{t+l}; G_t = gamma^(T-1-t) reward."""
    T = len(values)
    r = [0.0] * (T - 1) + [reward]
    v = list(values) + [0.0]
    delta = [r[t] + gamma * v[t + 1] - v[t] for t in range(T)]
    adv = [sum((gamma * lam) ** (k - t) * delta[k] for k in range(t, T)) for t in range(T)]
    ret = [gamma ** (T - 1 - t) * reward for t in range(T)]
    return adv, ret


@pytest.mark.parametrize("gamma, lam", [(1.0, 0.97), (0.9, 0.97), (0.9, 1.0), (0.99, 0.0)])
def test_two_trajectories_match_the_formula(gamma, lam):
    v1, r1 = [0.5, -1.0, 2.0], -3.0  # 3 decisions, reward -3 at the end
    v2, r2 = [0.25, 4.0], 7.0  # 2 decisions
    adv, ret = advantages_and_returns(np.array(v1 + v2), np.array([3, 2]), np.array([r1, r2]),
                                      gamma, lam)
    a1, g1 = gae_by_hand(v1, r1, gamma, lam)
    a2, g2 = gae_by_hand(v2, r2, gamma, lam)
    np.testing.assert_allclose(adv, a1 + a2, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ret, g1 + g2, rtol=1e-12, atol=1e-12)


def test_a_worked_example_with_numbers():
    # trajectory of 2 decisions, values (1, 2), reward -4, gamma = 1, lambda = 0.5:
    #   delta_1 = -4 + 0 - 2 = -6,   delta_0 = 0 + 2 - 1 = 1
    #   A_1 = -6,                    A_0 = 1 + 0.5 * (-6) = -2
    # then a trajectory of one decision, value 3, reward 5: A = 5 - 3 = 2
    adv, ret = advantages_and_returns(np.array([1.0, 2.0, 3.0]), np.array([2, 1]),
                                      np.array([-4.0, 5.0]), 1.0, 0.5)
    np.testing.assert_allclose(adv, [-2.0, -6.0, 2.0])
    np.testing.assert_allclose(ret, [-4.0, -4.0, 5.0])
    # gamma = 0.5: returns are discounted back from the end: -4 * 0.5, -4
    _, ret = advantages_and_returns(np.array([1.0, 2.0, 3.0]), np.array([2, 1]),
                                    np.array([-4.0, 5.0]), 0.5, 0.5)
    np.testing.assert_allclose(ret, [-2.0, -4.0, 5.0])


def test_with_gamma_one_every_return_is_the_terminal_reward():
    rng = np.random.default_rng(0)
    lengths = np.array([5, 1, 12, 7, 3])
    rewards = -rng.exponential(100.0, size=5)
    values = rng.normal(size=lengths.sum())
    _, ret = advantages_and_returns(values, lengths, rewards, 1.0, 0.97)
    np.testing.assert_array_equal(ret, np.repeat(rewards, lengths))


def test_with_lambda_one_and_gamma_one_the_advantage_is_return_minus_value():
    rng = np.random.default_rng(1)
    lengths = np.array([4, 9, 2])
    rewards = rng.normal(size=3)
    values = rng.normal(size=lengths.sum())
    adv, ret = advantages_and_returns(values, lengths, rewards, 1.0, 1.0)
    np.testing.assert_allclose(adv, ret - values, rtol=1e-12, atol=1e-12)


def test_many_random_trajectories_match_the_formula():
    rng = np.random.default_rng(2)
    lengths = rng.integers(1, 15, size=20)
    rewards = rng.normal(size=20) * 10
    values = rng.normal(size=lengths.sum())
    adv, ret = advantages_and_returns(values, lengths, rewards, 0.95, 0.9)
    start = 0
    for n, r in zip(lengths, rewards):
        a, g = gae_by_hand(values[start:start + n], r, 0.95, 0.9)
        np.testing.assert_allclose(adv[start:start + n], a, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(ret[start:start + n], g, rtol=1e-10, atol=1e-10)
        start += n


def test_derived_seeds_differ_by_epoch_and_stream_and_repeat():
    seeds = {derived_seed(0, e, s) for e in range(5) for s in range(3)}
    assert len(seeds) == 15
    assert derived_seed(3, 2, 1) == derived_seed(3, 2, 1)
    assert all(0 <= s < 2**63 for s in seeds)
