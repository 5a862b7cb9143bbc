"""Trained models are files (DESIGN decision 7): written atomically, refused clearly when they are
not checkpoints, and loaded as a Policy that decides exactly as the training environment's greedy
choice would."""

from __future__ import annotations

import os
import pickle
import stat

import numpy as np
import pytest
import torch

import hpcsched
from fakes import FakeVecPickJob
from hpcsched.modelfile import FORMAT, ModelFileError, load_checkpoint, write_model
from hpcsched.agents.rlscheduler_policy import load_policy
from hpcsched.agents.ppo import PPO
from hpcsched.agents.rlscheduler import RLSchedulerConfig
from hpcsched.envs.pick_job import PickJobEnv
from hpcsched.sim.run import as_prepared
from hpcsched.policies.priority import get_policy
from hpcsched.sim.run import simulate


def fake_model(seed=0) -> PPO:
    return PPO(RLSchedulerConfig(n_envs=4, trajectories_per_epoch=4, slots=16, train_pi_iters=3,
                         train_v_iters=3, seed=seed, threads=1),
               env=FakeVecPickJob(n_envs=4, slots=16, episode_jobs=4))


def tiny(**changes) -> dict:
    """The smallest model file's contents (what `write_model` takes)."""
    return {"recipe": "rlscheduler", "learner": "ppo", "config": {}, "learner_config": {},
            "learner_state": {}, "weights": {"policy": {"w": torch.zeros(3)}}, "norm": {},
            "epoch": 0, "history": [], **changes}


# -- writing -------------------------------------------------------------------------------------
def test_save_writes_one_file_and_it_holds_what_it_should(tmp_path):
    model = fake_model().learn(1)
    model.save(tmp_path / "sub" / "model.pt")  # the folder is made
    assert os.listdir(tmp_path / "sub") == ["model.pt"]  # no temporary file left behind
    ck = load_checkpoint(tmp_path / "sub" / "model.pt")
    assert ck["format"] == FORMAT == "hpcsched.model/2" and ck["version"] == hpcsched.__version__
    assert (ck["recipe"], ck["learner"]) == ("rlscheduler", "ppo")
    assert ck["epoch"] == 1 and len(ck["history"]) == 1
    assert RLSchedulerConfig.from_dict(ck["config"]) == model.config
    assert ck["norm"] == {"max_run_time": 1.0}  # the environment's constants
    for k, v in model.policy.state_dict().items():
        assert torch.equal(ck["weights"]["policy"][k], v)
    assert set(ck["weights"]) == {"policy", "value"}
    assert set(ck["training"]["optimizers"]) == {"policy", "value"}
    assert {"torch", "numpy", "python"} <= set(ck["training"]["rng"])


def test_a_model_file_is_readable_by_the_group(tmp_path):
    """Written through a temporary file (created 0600), the model still gets the permissions of
    any file the run writes: 0644 under the usual umask."""
    old = os.umask(0o022)
    try:
        path = write_model(tmp_path / "model.pt", tiny())
        os.umask(0o027)
        other = write_model(tmp_path / "other.pt", tiny())
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert stat.S_IMODE(other.stat().st_mode) == 0o640


def test_a_failed_save_leaves_the_old_file_intact(tmp_path, monkeypatch):
    path = tmp_path / "model.pt"
    old = fake_model(seed=0)
    old.save(path)
    before = path.read_bytes()

    def half_written(obj, f, *args, **kwargs):
        f.write(b"PK\x03\x04 half a model")  # some bytes reach the disk, then the disk is full
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(torch, "save", half_written)
    with pytest.raises(OSError, match="No space left"):
        fake_model(seed=1).learn(1).save(path)
    monkeypatch.undo()

    assert os.listdir(tmp_path) == ["model.pt"]  # the temporary file is gone too
    assert path.read_bytes() == before
    ck = load_checkpoint(path)
    assert ck["epoch"] == 0
    for k, v in old.policy.state_dict().items():
        assert torch.equal(ck["weights"]["policy"][k], v)


def test_save_replaces_an_existing_model(tmp_path):
    path = tmp_path / "model.pt"
    fake_model().save(path)
    model = fake_model().learn(1)
    model.save(path)
    assert load_checkpoint(path)["epoch"] == 1
    assert os.listdir(tmp_path) == ["model.pt"]


def test_what_the_reader_would_refuse_is_not_written(tmp_path):
    """A malformed model, or a NaN in any tensor (a training that diverged), is refused in one
    line, and the file already there is left as it was."""
    path = write_model(tmp_path / "model.pt", tiny())
    before = path.read_bytes()
    nan = {"w": torch.tensor([0.0, float("nan")])}
    for contents, says in [(tiny(weights={"policy": nan}), "policy.w holds NaN or infinite"),
                           (tiny(training={"optimizers": {"policy": {"state": {0: nan}}}}),
                            "holds NaN or infinite"),
                           ({k: v for k, v in tiny().items() if k != "norm"}, "no norm"),
                           (tiny(epoch=1.5), "its epoch is not an int"),
                           (tiny(weights={}), "it holds no network"),
                           (tiny(policy={"w": torch.zeros(3)}), "unknown entries policy")]:
        with pytest.raises(ModelFileError, match="not writing") as info:
            write_model(path, contents)
        assert says in str(info.value) and "\n" not in str(info.value)
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["model.pt"]


def test_a_malformed_model_file_is_refused_in_one_line(tmp_path):
    path = tmp_path / "model.pt"
    ck = {"format": FORMAT, "version": hpcsched.__version__, **tiny()}
    del ck["weights"]
    torch.save(ck, path)
    with pytest.raises(ModelFileError, match=r"model\.pt is not a valid hpcsched model file "
                                             r"\(no weights\)"):
        load_checkpoint(path)


def test_a_slim_export_decides_as_its_source_and_cannot_resume(tmp_path):
    from hpcsched.modelfile import SLIM_KEYS, read_model, slim
    from hpcsched.recipes import load_learner

    model = fake_model().learn(1)
    model.save(tmp_path / "model.pt")
    slim(tmp_path / "model.pt", tmp_path / "slim.pt")
    ck = read_model(tmp_path / "slim.pt")
    assert tuple(ck) == SLIM_KEYS and set(ck["weights"]) == {"policy"}
    for k, v in model.policy.state_dict().items():
        assert torch.equal(ck["weights"]["policy"][k], v)
    assert isinstance(load_learner(tmp_path / "model.pt"), PPO)
    with pytest.raises(ModelFileError, match="slim.pt is a slim export .* training cannot resume"):
        load_learner(tmp_path / "slim.pt")


def test_a_model_of_another_recipe_is_refused_by_its_loader(tmp_path):
    from hpcsched.modelfile import OtherKindError
    from hpcsched.agents.deeprm_policy import load_deeprm_policy

    fake_model().save(tmp_path / "model.pt")
    with pytest.raises(OtherKindError, match="is a rlscheduler model \\(ppo\\), not a deeprm one"):
        load_deeprm_policy(tmp_path / "model.pt")


# -- reading -------------------------------------------------------------------------------------
def test_a_file_that_is_not_a_checkpoint_is_refused_clearly(tmp_path):
    text = tmp_path / "notes.pt"
    text.write_text("this is not a model\n")
    with pytest.raises(ValueError, match=r"notes\.pt is not an hpcsched model checkpoint"):
        load_checkpoint(text)
    with pytest.raises(ValueError, match="not an hpcsched model checkpoint"):
        load_policy(text)

    other = tmp_path / "other.pt"
    torch.save({"state_dict": {"w": torch.zeros(3)}}, other)  # a torch file, but not ours
    with pytest.raises(ValueError, match=r"expected format 'hpcsched\.model/2'"):
        load_checkpoint(other)

    with pytest.raises(FileNotFoundError, match="no model file at"):
        load_checkpoint(tmp_path / "missing.pt")


class Payload:
    def __reduce__(self):
        return (os.system, ("echo should never run",))


def test_loading_never_runs_code_from_the_file(tmp_path):
    path = tmp_path / "evil.pt"
    with open(path, "wb") as f:
        pickle.dump({"format": FORMAT, "x": Payload()}, f, protocol=2)
    with pytest.raises(ValueError, match="not an hpcsched model checkpoint"):
        load_checkpoint(path)


def test_a_checkpoint_of_another_version_loads_with_a_warning(tmp_path):
    path = tmp_path / "model.pt"
    write_model(path, fake_model().state())
    ck = torch.load(path, weights_only=True)
    ck["version"] = "0.0.1"  # write_model writes the current version: forge an old one
    torch.save(ck, path)
    with pytest.warns(UserWarning, match="written by hpcsched 0.0.1"):
        assert load_checkpoint(path)["epoch"] == 0


# -- the loaded policy decides as the environment's greedy choice ----------------------------------
@pytest.mark.parametrize("backfill", ["none", "easy"])
def test_load_policy_schedules_as_the_greedy_env_does(tmp_path, backfill):
    start, jobs, slots = 3000, 200, 16
    model = PPO(RLSchedulerConfig(trace="lublin-1", backfill=backfill, episode_jobs=64, slots=slots,
                          n_envs=2, trajectories_per_epoch=2, seed=0, threads=1))
    model.save(tmp_path / "model.pt")

    env = PickJobEnv("lublin-1", profile="rlscheduler", backfill=backfill, slots=slots)
    obs, info = env.reset(options={"start": start, "jobs": jobs})
    full_queue = False
    while True:
        full_queue |= bool(info["action_mask"].all())  # more waiting jobs than slots
        obs, reward, terminated, _, info = env.step(int(model.predict(obs, info["action_mask"])))
        if terminated:
            break
    by_env = env.engine.result()

    prepared = as_prepared("lublin-1", "rlscheduler")
    policy = load_policy(tmp_path / "model.pt")
    assert policy.name == f"rl:{tmp_path / 'model.pt'}"
    by_engine = simulate(prepared, policy, backfill=backfill, start=start, jobs=jobs)

    np.testing.assert_array_equal(by_engine.start, by_env.start)
    assert by_engine.metrics["bsld"] == -reward
    # not a vacuous comparison: the cut-off was exercised and the order is not the trace's
    assert full_queue
    fcfs = simulate(prepared, get_policy("fcfs"), backfill=backfill, start=start, jobs=jobs)
    assert not np.array_equal(fcfs.start, by_env.start)


def test_sampling_policy_is_seeded_and_differs_from_greedy(tmp_path):
    model = PPO(RLSchedulerConfig(trace="lublin-1", episode_jobs=64, slots=16, n_envs=2,
                          trajectories_per_epoch=2, seed=0, threads=1))
    model.save(tmp_path / "model.pt")
    prepared = as_prepared("lublin-1", "rlscheduler")

    def starts(**kw):
        return simulate(prepared, load_policy(tmp_path / "model.pt", **kw), start=3000,
                        jobs=200).start

    np.testing.assert_array_equal(starts(sample=True, seed=1), starts(sample=True, seed=1))
    assert not np.array_equal(starts(sample=True, seed=1), starts(sample=True, seed=2))
    assert not np.array_equal(starts(sample=True, seed=1), starts())
