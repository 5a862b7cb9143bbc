"""Trajectory filtering (spec rlscheduler.md section 7): the band, the filter, its statistics, and
RLScheduler's two stages (`envs.wrappers.FilterStages` in `agents.rlscheduler`'s environments)."""

from __future__ import annotations

import numpy as np
import pytest

from hpcsched.agents.ppo import PPO
from hpcsched.agents.rlscheduler import RLSchedulerConfig
from hpcsched.envs.filtering import (
    FIXED_BAND,
    WindowFilter,
    band,
    heuristic_score,
    make_window_filter,
    sjf_score,
)
from hpcsched.sim.run import as_prepared
from hpcsched.workload.windows import WindowSampler
from hpcsched.policies.priority import get_policy
from hpcsched.sim.run import simulate


@pytest.fixture(scope="module")
def lublin():
    return as_prepared("lublin-1", "rlscheduler")


# -- the band ------------------------------------------------------------------------------------
def test_paper_band_is_median_to_twice_the_mean():
    scores = [1.0, 1.0, 2.0, 6.0, 90.0]  # median 2, mean 100 / 5 = 20
    assert band(scores, "paper") == (2.0, 40.0)
    assert band([3.0, 1.0, 8.0, 4.0]) == (3.5, 8.0)  # even count: the middle two averaged; mean 4


def test_paper_band_of_the_papers_pik_iplex_numbers():
    # the spec: median 1, mean 730 -> R = (1, 1460); a list with exactly those statistics
    scores = [1.0, 1.0, 1.0, 1.0, 3646.0]
    assert np.mean(scores) == 730.0
    assert band(scores) == (1.0, 1460.0)


def test_fixed_band_ignores_the_scores_and_bad_rules_are_refused():
    assert band([1.0, 2.0, 3.0], "fixed") == FIXED_BAND == (10.0, 150.0)
    assert band([], "fixed") == (10.0, 150.0)
    with pytest.raises(ValueError, match="unknown filter rule 'median'"):
        band([1.0], "median")
    with pytest.raises(ValueError, match="no SJF scores"):
        band([], "paper")


# -- the filter ----------------------------------------------------------------------------------
def test_window_filter_accepts_strictly_inside_only(lublin):
    scores = {100: 10.0, 101: 10.000001, 102: 149.9, 103: 150.0, 104: 1.0, 105: 1e4}
    f = WindowFilter(lublin, (10.0, 150.0), scores=scores)
    assert [f(s) for s in sorted(scores)] == [False, True, True, False, False, False]
    with pytest.raises(ValueError, match="empty filter band"):
        WindowFilter(lublin, (5.0, 5.0))


def test_window_filter_scores_unknown_windows_with_sjf_and_remembers(lublin):
    f = WindowFilter(lublin, (10.0, 150.0), episode_jobs=32)
    start = 2000
    expected = simulate(lublin, get_policy("sjf"), start=start, jobs=32).metrics["bsld"]
    assert f.score(start) == expected
    assert f(start) == (10.0 < expected < 150.0)
    assert f.scores == {start: expected}


def test_scores_are_the_heuristics_metric_on_the_window(lublin):
    for start, metric, key in [(1500, "bsld", "bsld"), (4000, "wait", "wait")]:
        for name in ["sjf", "fcfs"]:
            direct = simulate(lublin, get_policy(name), backfill="easy", start=start, jobs=48)
            assert heuristic_score(lublin, start, 48, "easy", metric, name) == direct.metrics[key]
        assert sjf_score(lublin, start, 48, "easy", metric) == heuristic_score(
            lublin, start, 48, "easy", metric, "sjf")


@pytest.mark.parametrize("rule", ["paper", "fixed"])
def test_make_window_filter_statistics_are_consistent(lublin, rule):
    jobs, windows, seed = 32, 40, 3
    f = make_window_filter(lublin, rule=rule, windows=windows, episode_jobs=jobs, seed=seed)
    # the windows as the environment draws them: uniform in [jobs, N - jobs - 1)
    sampler = WindowSampler(len(lublin.jobs), jobs, 10000)
    rng = np.random.default_rng(seed)
    starts = [sampler.sample(rng) for _ in range(windows)]
    assert all(jobs <= s < 10000 - jobs - 1 for s in starts)
    assert set(f.scores) == set(starts)
    # SJF's bsld on each, recomputed through the engine
    values = np.array([simulate(lublin, get_policy("sjf"), start=s, jobs=jobs).metrics["bsld"]
                       for s in starts])
    low, high = (np.median(values), 2 * np.mean(values)) if rule == "paper" else (10.0, 150.0)
    assert f.band == pytest.approx((low, high), rel=1e-12)
    info = f.info()
    assert info["rule"] == rule and info["metric"] == "bsld" and info["windows"] == windows
    assert info["median"] == pytest.approx(np.median(values), rel=1e-12)
    assert info["mean"] == pytest.approx(np.mean(values), rel=1e-12)
    kept = np.mean((values > low) & (values < high))
    assert info["kept_fraction"] == pytest.approx(kept, rel=1e-12)
    assert 0 < kept < 1  # the band does cut something on this trace, and keeps something
    if rule == "paper":
        assert kept <= 0.5  # nothing at or below the median survives


# -- RLScheduler's two stages --------------------------------------------------------------------
def stage_config(**kw) -> RLSchedulerConfig:
    return RLSchedulerConfig(**{**dict(
        trace="lublin-1", episode_jobs=32, slots=16, n_envs=4, trajectories_per_epoch=4,
        filter="fixed", filter_windows=30, filter_epochs=1, train_pi_iters=1, train_v_iters=1,
        seed=2, threads=1), **kw})


def test_rlscheduler_trains_on_filtered_windows_then_on_all(lublin):
    model = PPO(stage_config())
    env = model.env()
    assert model.extra["filter"] is None  # the band is made when stage 1 first needs it
    env.reset(seed=0)
    assert model.extra["filter"]["band"] == (10.0, 150.0) and model.extra["filter"]["windows"] == 30
    for start, jobs in env.windows:  # every stage-1 window's SJF bsld is inside the band
        assert 10.0 < sjf_score(lublin, start, jobs) < 150.0
    model.learn(1)
    assert model.history[0]["filtered"] is True
    env.reset(seed=0)  # stage 2 (epoch 1): every window
    assert env.unwrapped.sampler.accept is None and env.rollout_info() == {"filtered": False}
    model.learn(1)
    assert model.history[1]["filtered"] is False
    assert model.env() is env  # the same environments throughout: the stage is a reset option


def test_a_resumed_run_filters_with_its_band_and_none_after_stage_1(tmp_path):
    model = PPO(stage_config(filter="paper", filter_epochs=2)).learn(1)
    model.save(tmp_path / "one.pt")
    band_made = tuple(model.extra["filter"]["band"])
    resumed = PPO.load(tmp_path / "one.pt")
    assert resumed.extra["filter"] == model.extra["filter"]
    resumed.env().reset(seed=1)
    f = resumed.env().window_filter
    assert f.band == band_made and not f.stats  # from the kept band: no windows sampled again
    resumed.learn(2)
    assert [h["filtered"] for h in resumed.history] == [True, True, False]
    # with no filter at all, nothing is filtered and no band is made
    plain = PPO(stage_config(filter="none")).learn(1)
    assert plain.history[0]["filtered"] is False and plain.extra["filter"] is None
