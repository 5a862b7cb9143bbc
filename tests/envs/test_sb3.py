"""The environment works with sb3-contrib's MaskablePPO (DESIGN decision 5), and the masks keep
every action it takes, in training and in prediction, on a waiting job."""

import gymnasium as gym
import numpy as np
import pytest

from hpcsched.envs.pick_job import PickJobEnv

sb3_contrib = pytest.importorskip("sb3_contrib")
torch = pytest.importorskip("torch")


class MaskAudit(gym.Wrapper):
    """Counts the actions taken and checks each against the mask of its decision."""

    def __init__(self, env):
        super().__init__(env)
        self.actions = 0
        self.invalid = 0

    def step(self, action):
        if not self.env.unwrapped.action_masks()[int(action)]:
            self.invalid += 1
        self.actions += 1
        return self.env.step(action)

    def action_masks(self):
        return self.env.unwrapped.action_masks()


def test_maskable_ppo_learns_and_acts_validly(tiny_random, one_torch_thread):
    env = MaskAudit(PickJobEnv(tiny_random, episode_jobs=12, slots=16, metric="bsld"))
    model = sb3_contrib.MaskablePPO("MlpPolicy", env, n_steps=64, batch_size=32, n_epochs=2,
                                    seed=0, device="cpu")
    model.learn(total_timesteps=320)
    assert env.actions >= 320 and env.invalid == 0

    env.invalid = env.actions = 0
    for deterministic in (True, False):
        obs, info = env.reset(seed=1)
        done = False
        while not done:
            action, _ = model.predict(obs, action_masks=env.action_masks(),
                                      deterministic=deterministic)
            assert info["action_mask"][int(action)]
            obs, reward, done, _, info = env.step(action)
        assert np.isfinite(reward) and "metrics" in info
    assert env.actions > 0 and env.invalid == 0


def test_maskable_ppo_runs_on_the_inspector_env_and_respects_its_cap(one_torch_thread):
    import hpcsched.envs  # noqa: F401  (registers hpcsched/Inspect-v0)
    from envtraces import prepared

    env = MaskAudit(gym.make("hpcsched/Inspect-v0", trace=prepared("lublin-1", "schedinspector"),
                             base="sjf", episode_jobs=16).unwrapped)
    model = sb3_contrib.MaskablePPO("MlpPolicy", env, n_steps=64, batch_size=32, n_epochs=2,
                                    seed=0, device="cpu")
    model.learn(total_timesteps=192)
    assert env.actions >= 192 and env.invalid == 0
