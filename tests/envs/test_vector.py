"""The Gymnasium VectorEnvs (hpcsched.envs.vector): step for step what gymnasium's own
SyncVectorEnv over `gym.make(id)` does with the same arguments and seeds, across auto-resets,
masks included; and usable the way SB3-style learners use a vector env."""

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import data_equivalence
from gymnasium.vector import AutoresetMode, SyncVectorEnv

import hpcsched.envs  # noqa: F401  (registers the ids)
from hpcsched.envs.vector import InspectVectorEnv, PickJobVectorEnv

from envtraces import prepared, random_table

CASES = {
    "pickjob-tiny": ("hpcsched/PickJob-v0", dict(episode_jobs=20, slots=16)),
    "pickjob-lublin-fairness-interleave": (
        "hpcsched/PickJob-v0", dict(trace="lublin-1", episode_jobs=40, slots=16,
                                    cutoff="interleave", metric="fairness", backfill="easy")),
    "inspect-lublin": ("hpcsched/Inspect-v0", dict(trace="lublin-1", episode_jobs=16)),
    "inspect-lublin-paper-backfill": (
        "hpcsched/Inspect-v0", dict(trace="lublin-1", episode_jobs=16, features="paper",
                                    backfill="easy", profile="schedinspector-paper")),
}


def _kwargs(case):
    env_id, kwargs = CASES[case]
    kwargs = dict(kwargs)
    if "trace" not in kwargs:
        kwargs["trace"] = prepared_tiny()
    elif env_id == "hpcsched/PickJob-v0":
        kwargs["trace"] = prepared(kwargs["trace"], "rlscheduler")
    return env_id, kwargs


_TINY = []


def prepared_tiny():
    from hpcsched.sim.run import prepare

    if not _TINY:
        _TINY.append(prepare(random_table(), "rlscheduler"))
    return _TINY[0]


def sync_twin(env_id, num_envs, kwargs):
    return SyncVectorEnv([lambda: gym.make(env_id, **kwargs) for _ in range(num_envs)],
                         autoreset_mode=AutoresetMode.SAME_STEP)


def same(a, b):
    return data_equivalence(a, b, exact=True)


@pytest.mark.parametrize("case", list(CASES))
def test_steps_like_sync_vector_env_across_autoresets(case):
    env_id, kwargs = _kwargs(case)
    fast = gym.make_vec(env_id, num_envs=3, **kwargs)
    assert isinstance(fast, (PickJobVectorEnv, InspectVectorEnv))
    assert fast.metadata["autoreset_mode"] is AutoresetMode.SAME_STEP
    sync = sync_twin(env_id, 3, kwargs)
    assert fast.observation_space == sync.observation_space
    assert fast.single_observation_space == sync.single_observation_space
    assert fast.single_action_space == sync.single_action_space
    assert np.array_equal(fast.action_space.nvec, sync.action_space.nvec)

    rng = np.random.default_rng(0)
    obs, infos = fast.reset(seed=11)
    sync_obs, sync_infos = sync.reset(seed=11)
    assert same(obs, sync_obs) and same(infos, sync_infos)
    ended = 0
    for t in range(300):
        masks = fast.action_masks()
        assert same(masks, infos["action_mask"]) and same(masks, sync_infos["action_mask"])
        valid = [np.flatnonzero(m) for m in masks]
        actions = np.array([v[int(rng.integers(len(v)))] for v in valid])
        got = fast.step(actions)
        want = sync.step(actions)
        for name, a, b in zip(("obs", "rewards", "terminations", "truncations", "infos"),
                              got, want):
            assert same(a, b), f"step {t}: {name} differ"
        infos, sync_infos = got[4], want[4]
        ended += int(got[2].sum())
        if got[2].any():
            assert "final_obs" in infos and "metrics" in infos["final_info"]
    assert ended >= 6  # several auto-resets were compared

    # seeds given per env, and None (each env keeps its generator), as SyncVectorEnv takes them
    for seed in ([5, None, 7], None):
        assert same(fast.reset(seed=seed), sync.reset(seed=seed))
    fast.close()
    sync.close()


def test_reset_options_fix_windows():
    kwargs = dict(trace=prepared_tiny(), episode_jobs=10, slots=8)
    fast = PickJobVectorEnv(3, **kwargs)
    sync = sync_twin("hpcsched/PickJob-v0", 3, kwargs)
    options = {"start": 30, "jobs": 12}
    assert same(fast.reset(seed=0, options=options), sync.reset(seed=0, options=options))
    _, infos = fast.reset(options={"starts": [0, 20, 40], "jobs": 12})
    assert list(infos["window"]) == [(0, 12), (20, 12), (40, 12)]
    with pytest.raises(ValueError, match="needs 'start' or 'starts'"):
        fast.reset(options={"jobs": 5})
    with pytest.raises(ValueError, match="unknown reset options"):
        fast.reset(options={"begin": 5})
    with pytest.raises(ValueError, match="one seed per env"):
        fast.reset(seed=[1, 2])


def test_random_actions_are_valid_and_invalid_ones_raise():
    fast = PickJobVectorEnv(4, trace=prepared_tiny(), episode_jobs=10, slots=8)
    fast.action_space.seed(0)
    with pytest.raises(RuntimeError, match="reset"):
        fast.action_masks()
    fast.reset(seed=0)
    for _ in range(60):
        actions = fast.action_space.sample()
        assert fast.action_masks()[np.arange(4), actions].all()
        fast.step(actions)
    bad = np.flatnonzero(~fast.action_masks()[0])[0]
    with pytest.raises(ValueError, match="env 0: invalid action"):
        fast.step(np.array([bad, 0, 0, 0]))


def test_gymnasium_vector_wrappers_work_on_it():
    """What a CleanRL-style loop wraps a vector env in: episode statistics at each auto-reset."""
    from gymnasium.wrappers.vector import RecordEpisodeStatistics

    envs = RecordEpisodeStatistics(PickJobVectorEnv(2, trace=prepared_tiny(), episode_jobs=10,
                                                    slots=8))
    envs.action_space.seed(1)
    envs.reset(seed=0)
    episodes = 0
    while episodes < 3:
        _, rewards, terminations, _, infos = envs.step(envs.unwrapped.action_space.sample())
        if terminations.any():
            episodes += int(terminations.sum())
            done = infos["_episode"]
            np.testing.assert_array_equal(done, terminations)
            np.testing.assert_allclose(infos["episode"]["r"][done], rewards[done])
            np.testing.assert_array_equal(infos["episode"]["l"][done], 10)


def as_sb3(venv):
    """SB3's VecEnv over a gymnasium VectorEnv that auto-resets in the same step (a few lines: SB3
    takes no gymnasium VectorEnv itself)."""
    from stable_baselines3.common.vec_env import VecEnv

    class FromGymnasium(VecEnv):
        def __init__(self):
            super().__init__(venv.num_envs, venv.single_observation_space,
                             venv.single_action_space)
            self._actions = None

        def reset(self):
            obs, _ = venv.reset(seed=self._seeds)  # SB3's seed(s): s + i for env i, as ours
            self._reset_seeds()
            return obs

        def step_async(self, actions):
            self._actions = actions

        def step_wait(self):
            obs, rewards, terminated, truncated, infos = venv.step(self._actions)
            dones = terminated | truncated
            out = [{} for _ in range(self.num_envs)]
            for i in np.flatnonzero(dones):
                out[i] = {"terminal_observation": infos["final_obs"][i],
                          "TimeLimit.truncated": bool(truncated[i] and not terminated[i])}
            return obs, rewards.astype(np.float32), dones, out

        def env_method(self, method_name, *args, indices=None, **kwargs):
            assert method_name == "action_masks"
            return list(venv.action_masks()[self._get_indices(indices)])

        def get_attr(self, attr_name, indices=None):
            if attr_name == "render_mode":
                return [None] * len(list(self._get_indices(indices)))
            raise AttributeError(attr_name)

        def has_attr(self, attr_name):
            return attr_name == "action_masks"

        def set_attr(self, attr_name, value, indices=None):
            raise AttributeError(attr_name)

        def env_is_wrapped(self, wrapper_class, indices=None):
            return [False] * len(list(self._get_indices(indices)))

        def close(self):
            venv.close()

    return FromGymnasium()


@pytest.mark.parametrize("make", [
    lambda: PickJobVectorEnv(4, trace=prepared_tiny(), episode_jobs=12, slots=16),
    lambda: InspectVectorEnv(4, trace="lublin-1", episode_jobs=16),
], ids=["pickjob", "inspect"])
def test_maskable_ppo_learns_on_it_and_acts_validly(make, one_torch_thread):
    sb3_contrib = pytest.importorskip("sb3_contrib")
    venv = make()
    model = sb3_contrib.MaskablePPO("MlpPolicy", as_sb3(venv), n_steps=32, batch_size=32,
                                    n_epochs=2, seed=0, device="cpu")
    model.learn(total_timesteps=256)
    obs, infos = venv.reset(seed=3)
    for _ in range(50):
        masks = venv.action_masks()
        actions, _ = model.predict(obs, action_masks=masks, deterministic=True)
        assert actions.shape == (4,) and masks[np.arange(4), actions].all()
        obs, *_ = venv.step(actions)


def test_the_action_space_pickles_without_the_env():
    import pickle

    fast = PickJobVectorEnv(2, trace=prepared_tiny(), episode_jobs=10, slots=8)
    fast.reset(seed=0)
    space = pickle.loads(pickle.dumps(fast.action_space))
    assert space == fast.action_space and space.sample().shape == (2,)
