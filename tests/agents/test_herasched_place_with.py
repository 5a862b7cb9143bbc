"""`train herasched --allocator NAME` (`HeraSchedConfig.place_with`, `HeraSchedEnv(place_with=)`):
a heuristic allocator places each job the selector picks, as ``herasched:MODEL@allocator=NAME``
does, and only the selector learns. The env's schedule is the policy's, step for step; the
allocator agent never acts nor changes; the model file reads so by default."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from hpcsched.agents.herasched import HeraSched, HeraSchedConfig
from hpcsched.agents.herasched_policy import load_herasched
from hpcsched.envs.herasched import HEURISTIC_ALLOCATORS, SELECTOR, HeraSchedEnv
from tests.agents.test_herasched_reserve import same_in_env_and_engine

SMALL = dict(window=16, tail=4, episode_jobs=200, num_envs=2, update_every=128,
             selector_every=32, allocator_every=10, minibatch=64, update_epochs=1, pi_lr=3e-3,
             vf_lr=3e-3)


def test_the_names_are_the_reading_option_s():
    from hpcsched.recipes.herasched import ALLOCATOR_OPTIONS

    assert HEURISTIC_ALLOCATORS == ALLOCATOR_OPTIONS


def test_every_step_is_the_selector_s_and_every_job_starts():
    env = HeraSchedEnv(None, "spartan-deeplearn", window=16, tail=4, episode_jobs=150,
                       place_with="best-fit")
    obs, info = env.reset(options={"start": 0})
    steps = 0
    terminated = False
    while not terminated:
        assert info["agent"] == SELECTOR
        mask = info["action_mask"]
        obs, _, terminated, _, info = env.step(int(np.flatnonzero(mask)[0]))
        steps += 1
    assert info["started"] == 150 and steps >= 150
    with pytest.raises(ValueError, match="place_with must be one of topology, best-fit, "
                                         "first-available"):
        HeraSchedEnv(None, "spartan-deeplearn", place_with="hpcsim-best-fit")


@pytest.mark.parametrize("place_with", ["best-fit", "first-available"])
def test_a_model_trained_so_schedules_on_the_engine_as_in_its_env(tmp_path, place_with):
    torch.manual_seed(0)
    config = HeraSchedConfig(**SMALL, place_with=place_with)
    model = HeraSched(config)
    before = {k: v.clone() for k, v in model.allocator_policy.state_dict().items()}
    model.learn(2)
    # the allocator agent never acted, so it never changed; the selector did
    assert all(torch.equal(v, model.allocator_policy.state_dict()[k]) for k, v in before.items())
    assert model.history[-1]["allocator_steps"] == 0
    assert not any(k.startswith("allocator_loss") for k in model.history[-1])
    _, _, policy = same_in_env_and_engine(model, config)
    assert policy.place_with == place_with
    # the file keeps it: read so by default; @allocator=NAME (load_herasched's) overrides it
    model.save(tmp_path / "m.pt")
    assert load_herasched(tmp_path / "m.pt").place_with == place_with
    assert load_herasched(tmp_path / "m.pt", place_with="topology").place_with == "topology"
    # and its rows in `experiment herasched` name the heuristic, not the agent
    from hpcsched.experiments.herasched_eval import period_prepared, run_model
    prepared = period_prepared("spartan-deeplearn", "test", jobs=100)
    assert run_model(prepared, str(tmp_path / "m.pt")).placed == place_with
    assert run_model(prepared, f"{tmp_path / 'm.pt'}@allocator=topology").placed == "topology"
    assert run_model(prepared, "pretrained/herasched-deeplearn-s0").placed == "agent"


def test_the_command_line_option():
    from hpcsched.cli import UsageError, build_parser

    p = build_parser()
    args = p.parse_args(["train", "herasched", "--out", "x", "--allocator", "best-fit"])
    assert args.place_with == "best-fit"
    with pytest.raises(UsageError, match="--allocator"):
        p.parse_args(["train", "herasched", "--out", "x", "--allocator", "hpcsim-best-fit"])
