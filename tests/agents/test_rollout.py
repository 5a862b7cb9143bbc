"""Batched rollouts: which episodes count, and that every trajectory comes back whole, in time
order, with the reward its environment reported."""

from __future__ import annotations

import numpy as np
import pytest

from fakes import FakeVecPickJob
from hpcsched.agents.rollout import collect, quotas

ENV, EPISODE, STEP = 2, 3, 4  # features of the first slot that TaggedEnv overwrites


class TaggedEnv:
    """FakeVecPickJob whose observations say where they come from: the first slot's features 2, 3
    and 4 hold the env, its episode number and the step within the episode. It keeps what the fake
    reported at the end of every (env, episode): its reward, its length and its metrics."""

    def __init__(self, **kw):
        self.fake = FakeVecPickJob(**kw)
        self.n_envs = self.fake.n_envs
        self.ended: dict[tuple[int, int], tuple[float, int, dict]] = {}

    def _tag(self, obs):
        obs = obs.copy()
        obs[:, 0, ENV] = np.arange(self.n_envs)
        obs[:, 0, EPISODE] = self.episode
        obs[:, 0, STEP] = self.t
        return obs

    def reset(self, seed=None):
        obs, mask = self.fake.reset(seed)
        self.episode = np.zeros(self.n_envs, dtype=np.int64)
        self.t = np.zeros(self.n_envs, dtype=np.int64)
        return self._tag(obs), mask

    def step(self, actions):
        obs, mask, reward, done, infos = self.fake.step(actions)
        self.t += 1
        for i in np.flatnonzero(done):
            self.ended[(int(i), int(self.episode[i]))] = (float(reward[i]), int(self.t[i]),
                                                         infos[i]["metrics"])
            self.episode[i] += 1
            self.t[i] = 0
        assert (reward[~done] == 0).all()
        return self._tag(obs), mask, reward, done, infos


def random_actor(seed):
    """A uniformly random valid slot; remembers what it did at each tagged step."""
    rng = np.random.default_rng(seed)
    log: dict[tuple[int, int, int], tuple[int, float]] = {}

    def act(obs, mask):
        counts = mask.sum(1)
        a = (rng.random(len(mask)) * counts).astype(np.int64)  # real slots come first
        logp = -np.log(counts).astype(np.float32) - rng.random(len(mask)).astype(np.float32)
        for i in range(len(mask)):
            key = tuple(int(x) for x in obs[i, 0, [ENV, EPISODE, STEP]])
            log[key] = (int(a[i]), float(logp[i]))
        return a, logp

    return act, log


@pytest.mark.parametrize("n, n_envs, expected", [
    (10, 4, [3, 3, 2, 2]),
    (8, 4, [2, 2, 2, 2]),
    (2, 4, [1, 1, 0, 0]),
    (100, 100, [1] * 100),
    (0, 3, [0, 0, 0]),
])
def test_quotas_spread_the_episodes_evenly(n, n_envs, expected):
    q = quotas(n, n_envs)
    assert q.tolist() == expected
    assert q.sum() == n and q.max() - q.min() <= 1


@pytest.mark.parametrize("n, n_envs, variable", [(7, 3, True), (6, 3, False), (2, 5, True)])
def test_collect_returns_whole_trajectories_in_time_order(n, n_envs, variable):
    env = TaggedEnv(n_envs=n_envs, slots=16, episode_jobs=10, variable_length=variable)
    act, log = random_actor(1)
    traj = collect(env, act, n, seed=3)

    assert len(traj.lengths) == len(traj.rewards) == len(traj.metrics) == n
    M = int(traj.lengths.sum())
    assert len(traj.obs) == len(traj.mask) == len(traj.actions) == len(traj.logp) == M
    np.testing.assert_array_equal(traj.starts, np.concatenate([[0], np.cumsum(traj.lengths)[:-1]]))

    # trajectory k is env e's episode j, (e, j) in order, with env e giving its quota's episodes
    q = quotas(n, n_envs)
    expected_keys = [(e, j) for e in range(n_envs) for j in range(q[e])]
    for k, (start, length) in enumerate(zip(traj.starts, traj.lengths)):
        tags = traj.obs[start:start + length, 0][:, [ENV, EPISODE, STEP]].astype(int)
        e, j = expected_keys[k]
        assert (tags[:, 0] == e).all() and (tags[:, 1] == j).all()  # one episode, whole ...
        assert tags[:, 2].tolist() == list(range(length))  # ... and in time order
        reward, true_length, metrics = env.ended[(e, j)]
        assert length == true_length
        assert traj.rewards[k] == reward
        assert traj.metrics[k] == metrics
        assert traj.windows[k] is None  # the fake reports no window
        for d in range(start, start + length):  # each decision's action and logp as taken
            a, logp = log[tuple(int(x) for x in traj.obs[d, 0, [ENV, EPISODE, STEP]])]
            assert traj.actions[d] == a and traj.logp[d] == np.float32(logp)
            assert traj.mask[d, traj.actions[d]]
    if variable:
        assert len(set(traj.lengths.tolist())) > 1  # the lengths did vary
    else:
        assert (traj.lengths == 10).all()


def test_collect_records_the_environments_reward():
    # the fake's reward is minus the mean rank of the chosen jobs: always choosing the smallest
    # feature 1 scores exactly 0, always the largest scores -(jobs - 1) on average
    env = FakeVecPickJob(n_envs=3, slots=8, episode_jobs=5)

    def smallest(obs, mask):
        return np.where(mask, obs[:, :, 1], np.inf).argmin(1), np.zeros(len(mask), np.float32)

    def largest(obs, mask):
        return np.where(mask, obs[:, :, 1], -np.inf).argmax(1), np.zeros(len(mask), np.float32)

    best = collect(env, smallest, 6, seed=0)
    assert (best.rewards == 0).all()
    worst = collect(env, largest, 6, seed=0)
    # rank of the largest among k is k - 1: the reward is minus the mean of (jobs - 1)
    for k, (start, length) in enumerate(zip(worst.starts, worst.lengths)):
        jobs = worst.mask[start:start + length].sum(1)
        assert worst.rewards[k] == pytest.approx(-(jobs - 1).mean())


def test_collect_is_reproducible_and_gives_up_on_endless_episodes():
    def act_first(obs, mask):
        return np.zeros(len(mask), np.int64), np.zeros(len(mask), np.float32)

    a = collect(FakeVecPickJob(n_envs=2, variable_length=True), act_first, 4, seed=9)
    b = collect(FakeVecPickJob(n_envs=2, variable_length=True), act_first, 4, seed=9)
    np.testing.assert_array_equal(a.obs, b.obs)
    np.testing.assert_array_equal(a.lengths, b.lengths)
    assert a.env_steps >= a.lengths.reshape(2, 2).sum(1).max()
    with pytest.raises(RuntimeError, match="did not finish within 3 steps"):
        collect(FakeVecPickJob(n_envs=2, episode_jobs=8), act_first, 2, seed=0, max_steps=3)


@pytest.mark.parametrize("n", [0, -3, 2.5])
def test_collect_refuses_a_number_of_episodes_that_is_not_positive(n):
    with pytest.raises(ValueError, match=r"number of episodes must be a positive integer, got"):
        collect(FakeVecPickJob(n_envs=2), random_actor(0), n, seed=0)


def test_sample_categorical_draws_each_slot_with_its_probability():
    import torch

    from hpcsched.agents.rollout import sample_categorical

    probs = torch.tensor([[0.5, 0.25, 0.0, 0.25, 0.0]] * 20000)
    a = sample_categorical(probs, torch.Generator().manual_seed(0))
    freq = np.bincount(a.numpy(), minlength=5) / len(a)
    # binomial standard error at p = 0.5 over 20,000 draws: 0.0035; allow 4 of them
    np.testing.assert_allclose(freq, [0.5, 0.25, 0.0, 0.25, 0.0], atol=0.014)


def test_sample_categorical_never_draws_a_slot_of_probability_zero(monkeypatch):
    import torch

    from hpcsched.agents.rollout import sample_categorical

    # rows whose cumulative sum ends below 1 (float rounding), a single real slot last, zero
    # probability in front; uniform numbers at both ends, the top one as u * total rounds up to
    # the total itself
    probs = torch.tensor([[0.0, 0.0, 1.0 - 2**-20, 0.0], [0.0, 0.0, 0.0, 1.0], [1.0, 0.0, 0.0, 0.0]])
    drawn = []
    for u in (1.0, 0.0):
        monkeypatch.setattr(torch, "rand", lambda shape, u=u, **kw: torch.full(shape, u))
        drawn.append(sample_categorical(probs, None).tolist())
    assert drawn == [[2, 3, 0], [2, 3, 0]]
