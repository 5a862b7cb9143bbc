"""VecPickJob: N episodes stepped together behave exactly like N PickJobEnvs."""

import numpy as np
import pytest

from hpcsched.envs.pick_job import PickJobEnv
from hpcsched.envs.vec import VecPickJob

from envtraces import prepared, random_table


def random_valid(rng, mask):
    """One random unmasked slot per env (valid slots are always the first ones)."""
    return (rng.random(len(mask)) * mask.sum(axis=1)).astype(np.int64)


CASES = {
    "tiny-none-fcfs": dict(episode_jobs=20, slots=8),
    "tiny-easy-interleave": dict(episode_jobs=20, slots=4, backfill="easy", cutoff="interleave"),
    "tiny-schedgym-fairness": dict(episode_jobs=20, slots=6, backfill="schedgym",
                                   metric="fairness"),
    "tiny-standard-conservative": dict(episode_jobs=20, slots=4, backfill="conservative",
                                       profile="standard"),
    "lublin-none": dict(trace="lublin-1", episode_jobs=96, slots=16),
    "lublin-interleave-util": dict(trace="lublin-1", episode_jobs=96, slots=16,
                                   cutoff="interleave", metric="utilization"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_episodes_equal_single_env_runs(case):
    kwargs = dict(CASES[case])
    trace = kwargs.pop("trace", None)
    profile = kwargs.pop("profile", "rlscheduler")
    prep = prepared(trace, profile) if trace else _tiny(profile)
    vec = VecPickJob(3, prep, **kwargs)
    single = PickJobEnv(prep, **kwargs)
    rng = np.random.default_rng(0)
    obs, mask = vec.reset(seed=7)
    trajectories = [[] for _ in range(3)]
    finished = 0
    crowded = False  # some queue longer than the slots: the cut-off was exercised
    while finished < 8:
        crowded |= any(len(e.queue) > vec.slots for e in vec.engines)
        actions = random_valid(rng, mask)
        for i in range(3):
            trajectories[i].append((obs[i].copy(), mask[i].copy(), int(actions[i])))
        obs, mask, reward, done, infos = vec.step(actions)
        for i in np.flatnonzero(done):
            replay(single, trajectories[i], infos[i], reward[i])
            trajectories[i] = []
            finished += 1
        for i in np.flatnonzero(~done):
            assert reward[i] == 0 and infos[i] == {}
    assert crowded


def replay(env, trajectory, info, reward):
    start, jobs = info["window"]
    obs, single_info = env.reset(options={"start": start, "jobs": jobs})
    for t, (vec_obs, vec_mask, action) in enumerate(trajectory):
        np.testing.assert_array_equal(obs, vec_obs, err_msg=f"step {t}")
        np.testing.assert_array_equal(single_info["action_mask"], vec_mask)
        obs, r, terminated, _, single_info = env.step(action)
    assert terminated
    assert r == reward
    assert single_info["metrics"] == info["metrics"]


_TINY = {}


def _tiny(profile):
    from hpcsched.sim.run import prepare

    if profile not in _TINY:
        _TINY[profile] = prepare(random_table(), profile)
    return _TINY[profile]


def test_auto_reset_starts_a_new_episode():
    vec = VecPickJob(4, _tiny("rlscheduler"), episode_jobs=10, slots=8)
    obs, mask = vec.reset(seed=1)
    rng = np.random.default_rng(1)
    steps = np.zeros(4, dtype=int)
    seen = 0
    while seen < 6:
        before = vec.windows
        obs, mask, reward, done, infos = vec.step(random_valid(rng, mask))
        steps += 1
        for i in np.flatnonzero(done):
            seen += 1
            assert infos[i]["window"] == before[i]
            assert infos[i]["metrics"]["jobs"] == 10 and reward[i] == -infos[i]["metrics"]["bsld"]
            assert steps[i] == infos[i]["metrics"]["decisions"]
            steps[i] = 0
            # the returned observation is the first decision of the new window: one job, just
            # arrived, on an idle machine
            assert vec.engines[i].decisions == 0
            assert mask[i].sum() == 1 and obs[i, 0, 0] == 0 and obs[i, 0, 7] > 0.5
    assert obs.shape == (4, 8, 8) and obs.dtype == np.float32 and mask.dtype == bool


def test_reset_options_and_seeds():
    prep = _tiny("rlscheduler")
    vec = VecPickJob(3, prep, episode_jobs=10, slots=8)
    vec.reset(seed=0, options={"starts": [0, 50, 100], "jobs": 20})
    assert vec.windows == [(0, 20), (50, 20), (100, 20)]
    vec.reset(seed=4)
    first = vec.windows
    vec.reset(seed=4)
    assert vec.windows == first
    with pytest.raises(ValueError, match="needs 3 starts"):
        vec.reset(options={"starts": [1]})
    with pytest.raises(ValueError, match="outside"):
        vec.reset(options={"starts": [0, 0, 115]})


def test_invalid_actions_raise():
    vec = VecPickJob(2, _tiny("rlscheduler"), episode_jobs=10, slots=8)
    vec.reset(seed=0)
    with pytest.raises(ValueError, match="env 1: invalid action 5"):
        vec.step(np.array([0, 5]))
    with pytest.raises(ValueError, match="not a slot"):
        vec.step(np.array([0, 8]))
    with pytest.raises(ValueError, match="2 integer slot indices"):
        vec.step(np.array([0]))
    vec.step(np.array([0, 0]))  # still usable


def test_copy_false_reuses_buffers():
    vec = VecPickJob(2, _tiny("rlscheduler"), episode_jobs=10, slots=8, copy=False)
    obs, mask = vec.reset(seed=0)
    obs2, mask2, *_ = vec.step(np.zeros(2, dtype=np.int64))
    assert obs2 is obs and mask2 is mask
    vec = VecPickJob(2, _tiny("rlscheduler"), episode_jobs=10, slots=8)
    obs, mask = vec.reset(seed=0)
    obs2, mask2, *_ = vec.step(np.zeros(2, dtype=np.int64))
    assert obs2 is not obs and mask2 is not mask


@pytest.mark.parametrize("fairness", [False, True], ids=["plain", "fairness"])
@pytest.mark.parametrize("slots,cutoff", [(128, "fcfs"), (32, "fcfs"), (32, "interleave")])
def test_observe_equals_the_batch_row_for_row_on_lublin(lublin, fairness, slots, cutoff):
    """`observe` on each env's engine (one decision, the window's own table, per-user scores counted
    afresh) gives exactly the batch's rows, decision after decision of Lublin-1 windows."""
    from hpcsched.envs.pick_job import observe

    vec = VecPickJob(6, lublin(), slots=slots, cutoff=cutoff, fairness=fairness)
    rng = np.random.default_rng(0)
    obs, mask = vec.reset(seed=0)
    decisions = crowded = 0
    while decisions < 1200:
        rows = vec.rows
        for i, engine in enumerate(vec.engines):
            one, one_mask, one_rows = observe(engine.view(), vec.norm, slots, cutoff,
                                              fairness=fairness)
            np.testing.assert_array_equal(one, obs[i], err_msg=f"decision {decisions}, env {i}")
            np.testing.assert_array_equal(one_mask, mask[i])
            np.testing.assert_array_equal(one_rows, rows[i])
            crowded += len(engine.queue) > slots
            decisions += 1
        obs, mask, *_ = vec.step(random_valid(rng, mask))
    assert crowded > 50 or slots == 128  # the cut-off was exercised where it can be
