"""Every registered `hpcsched/*` environment, built by `gymnasium.make(id)` with its defaults,
passes gymnasium's checker and trains with sb3-contrib's MaskablePPO (DESIGN decisions 4 and 5).
The ids come from gymnasium's registry, so a new environment is covered as soon as it is
registered."""

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import hpcsched.envs  # noqa: F401  (registers the ids)

ENV_IDS = sorted(i for i in gym.registry if i.startswith("hpcsched/"))


def test_the_known_envs_are_registered():
    assert {"hpcsched/PickJob-v0", "hpcsched/Inspect-v0", "hpcsched/DeepRM-v0",
            "hpcsched/DRAS-v0", "hpcsched/DBF-v0"} <= set(ENV_IDS)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_defaults_pass_the_checker_and_train_with_maskable_ppo(env_id, one_torch_thread):
    sb3_contrib = pytest.importorskip("sb3_contrib")
    env = gym.make(env_id)
    check_env(env.unwrapped)
    model = sb3_contrib.MaskablePPO("MlpPolicy", env, n_steps=64, batch_size=32, seed=0,
                                    device="cpu")
    model.learn(128)
    obs, info = env.reset(seed=1)
    masks = env.unwrapped.action_masks()
    np.testing.assert_array_equal(masks, info["action_mask"])
    for deterministic in (True, False):
        action, _ = model.predict(obs, action_masks=masks, deterministic=deterministic)
        assert env.action_space.contains(action) and masks[int(action)]
    env.close()
