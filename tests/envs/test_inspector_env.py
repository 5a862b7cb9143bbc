"""SchedInspector's environment on hand-drawn cases: when a rejection lets time pass, the cap of 72
rejections, the sign and size of the terminal reward, and that an inspector that always accepts is
exactly its base heuristic."""

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from envtraces import prepared, table
from hpcsched.agents.inspector_policy import InspectedPolicy
from hpcsched.envs.inspection import ACCEPT, REJECT
from hpcsched.envs.inspector import InspectEnv
from hpcsched.sim.run import estimated_trace
from hpcsched.workload.windows import evaluation_windows, split_point
from hpcsched.policies.priority import get_policy
from hpcsched.sim.run import prepare, simulate


def env_of(rows, nodes=4, metric="bsld", reward="paper", profile="schedinspector", **kw):
    # rows with a request of their own need schedinspector-paper: the schedinspector profile's
    # loader sets every request to the run time
    jobs = prepare(table(rows, nodes=nodes), profile)
    env = InspectEnv(jobs, base="sjf", metric=metric, episode_jobs=len(rows), train_fraction=1.0,
                     reward=reward, **kw)
    env.reset(options={"start": 0, "jobs": len(rows)})
    return env


def starts(env):
    return env.engine.start


def test_a_rejection_waits_for_the_next_arrival_600_s_or_the_next_completion():
    # J0 (1000 s, 2 nodes) at 0; J1 (500 s, 1 node) at 100; J2 (100 s, 1 node) at 2000
    env = env_of([(0, 1000, 2), (100, 500, 1), (2000, 100, 1)])
    engine = env.engine
    assert env.inspection.row == 0 and engine.now == 0
    env.step(REJECT)  # the arrival at 100 comes before 0 + 600
    assert engine.now == 100 and env.inspection.row == 1  # SJF now proposes J1
    env.step(REJECT)  # nothing runs, next arrival at 2000: 600 s pass
    assert engine.now == 700 and env.inspection.row == 1
    env.step(ACCEPT)  # J1 runs 700-1200; SJF proposes J0
    assert starts(env)[1] == 700 and env.inspection.row == 0
    env.step(REJECT)  # J1 ends at 1200, before 700 + 600 and before the arrival at 2000
    assert engine.now == 1200 and engine.free_nodes == 4
    env.step(ACCEPT)
    _, reward, done, _, info = env.step(ACCEPT)  # J2, once it arrives
    assert done
    assert starts(env) == [1200, 700, 2000]
    assert info["metrics"]["rejections"] == 3 and info["metrics"]["inspections"] == 6


def test_an_arrival_and_a_completion_at_the_same_time_the_arrival_goes_first():
    # J0 runs 0-300 on 2 nodes; J1 (4 nodes) is proposed at 0 and rejected; J2 arrives at 300
    env = env_of([(0, 300, 2), (0, 100, 4, 5000), (300, 50, 2)])
    env.step(ACCEPT)  # J0 starts at 0; the queue holds J1
    engine = env.engine
    assert env.inspection.row == 1 and engine.now == 0
    env.step(REJECT)
    assert engine.now == 300 and len(engine.running) == 1  # J2 arrived, J0 not yet released
    assert env.inspection.row == 2  # SJF prefers J2 (50 s) to J1 (5000 s)


def test_a_job_is_rejected_72_times_at_most_and_a_masked_reject_is_counted():
    env = env_of([(0, 100, 1), (10**7, 100, 1)])
    masks = []
    for _ in range(72):
        masks.append(env.action_masks()[REJECT])
        env.step(REJECT)
    assert all(masks)
    assert env.engine.now == 72 * 600
    assert not env.action_masks()[REJECT]
    assert env.inspection.observe()[5] == 1.0  # the rejected-time feature is full
    env.step(REJECT)  # masked: carried out as an accept, and counted
    assert starts(env)[0] == 72 * 600
    _, _, done, _, info = env.step(ACCEPT)
    assert done and info["forced_accepts"] == 1 and info["metrics"]["rejections"] == 72


def test_reject_is_masked_when_nothing_can_happen_while_waiting():
    env = env_of([(0, 100, 1)])
    assert list(env.action_masks()) == [True, False]


def test_the_reward_is_positive_when_rejecting_helps():
    # SJF starts the 10,000 s job at once; a 10 s job arriving at 60 then waits 10,000 s
    env = env_of([(0, 10000, 4), (60, 10, 4)])
    env.step(REJECT)  # wait for the short job
    env.step(ACCEPT)  # SJF proposes it: it runs 60-70
    _, reward, done, _, info = env.step(ACCEPT)  # the long one starts at 70
    assert done
    base = ((0 + 10000) / 10000 + (9940 + 10) / 10) / 2
    inspected = ((70 + 10000) / 10000 + 1) / 2
    assert info["metrics"]["base_bsld"] == pytest.approx(base)
    assert info["metrics"]["bsld"] == pytest.approx(inspected)
    assert reward == pytest.approx((base - inspected) / base) and reward > 0


@pytest.mark.parametrize("form", ["paper", "code"])
def test_the_reward_is_negative_when_rejecting_hurts(form):
    # a 10 s job alone, rejected: it waits for the next arrival, at 500
    env = env_of([(0, 10, 4), (500, 10000, 4)], reward=form)
    env.step(REJECT)
    env.step(ACCEPT)
    _, reward, done, _, info = env.step(ACCEPT)
    assert done
    inspected = ((500 + 10) / 10 + (10 + 10000) / 10000) / 2
    assert info["metrics"]["bsld"] == pytest.approx(inspected)
    expected = (1 - inspected) / (1 if form == "paper" else inspected)
    assert reward == pytest.approx(expected) and reward < 0


def test_utilization_reward_is_positive_when_utilization_rises():
    env = env_of([(0, 10000, 4), (60, 10, 4)], metric="utilization")
    for a in (REJECT, ACCEPT):
        env.step(a)
    _, reward, _, _, info = env.step(ACCEPT)
    m = info["metrics"]
    assert np.sign(reward) == np.sign(m["utilization"] - m["base_utilization"])


@pytest.mark.parametrize("backfill", ["none", "schedgym", "easy"])
@pytest.mark.parametrize("base", ["sjf", "f1", "fcfs"])
def test_an_always_accepting_inspector_is_its_base_heuristic_exactly(backfill, base):
    prep = estimated_trace("lublin-1")
    heuristic = get_policy(base)
    accept = InspectedPolicy(None, heuristic, prep.report.norm, decide=lambda obs, mask: ACCEPT)
    for start in (1000, 6000):
        a = simulate(prep, heuristic, backfill=backfill, start=start, jobs=256)
        b = simulate(prep, accept, backfill=backfill, start=start, jobs=256)
        np.testing.assert_array_equal(a.start, b.start)
        # one inspection per committed pick (backfilled jobs start without one)
        assert b.metrics["rejections"] == 0
        assert b.metrics["inspections"] == a.metrics["decisions"] == b.metrics["decisions"]


def test_observation_features_on_a_hand_drawn_state():
    env = env_of([(0, 300, 2), (0, 100, 4, 5000), (300, 50, 2)], profile="schedinspector-paper")
    env.step(ACCEPT)  # J0 runs on 2 of 4 nodes; J1 (4 nodes, 5000 s request) is proposed
    obs = env.inspection.observe()
    norm = env.norm
    assert obs[0] == 0.0  # no wait yet
    assert obs[1] == pytest.approx(5000 / norm["max_run_time"], rel=1e-6) or obs[1] == \
        pytest.approx(1 - 1e-5)
    assert obs[2] == pytest.approx(4 / 4 - 1e-5, abs=1e-5)
    assert obs[3] == pytest.approx(0.5)
    assert obs[4] == pytest.approx(1e-5)  # 4 nodes needed, 2 free
    assert obs[5] == 0.0
    assert obs[6] == pytest.approx((600 / 5000) / 7680, rel=1e-5)


def test_both_feature_sets_pass_gymnasiums_checker():
    for features in ("code", "paper"):
        env = InspectEnv(prepared("lublin-1", "schedinspector"), base="sjf", features=features,
                         backfill="schedgym" if features == "paper" else "none")
        check_env(env, skip_render_check=True)
        assert env.observation_space.shape == ({"code": 7, "paper": 8}[features],)


def test_training_windows_come_from_the_first_fifth_and_test_windows_from_the_rest():
    prep = estimated_trace("lublin-1")
    cut = split_point(len(prep.jobs))
    assert cut == len(prep.jobs) // 5
    env = InspectEnv(prep, base="sjf")
    for seed in range(30):
        env.reset(seed=seed)
        s, n = env.window
        assert 0 <= s and s + n <= cut
    for s in evaluation_windows(len(prep.jobs), 50, 256, seed=3):
        assert cut <= s and s + 256 <= len(prep.jobs)


def test_perfect_estimates_replace_requests_by_run_times():
    raw = table([(0, 100, 1, 900), (5, 50, 2, 60)])
    user = estimated_trace(raw, profile="schedinspector-paper")
    perfect = estimated_trace(raw, "perfect", profile="schedinspector-paper")
    assert user.jobs.req_time.tolist() == [900, 60]
    assert perfect.jobs.req_time.tolist() == [100, 50]
    # the authors' code (the schedinspector profile) always schedules with the run times
    assert estimated_trace(raw).jobs.req_time.tolist() == [100, 50]
    assert estimated_trace(raw, "perfect").jobs.req_time.tolist() == [100, 50]
    with pytest.raises(ValueError, match="schedinspector-paper"):
        estimated_trace(raw, "user")


def test_the_reject_unfit_rule_rejects_exactly_the_jobs_that_do_not_fit():
    from hpcsched.agents.inspector_policy import reject_unfit

    env = env_of([(0, 300, 2), (0, 100, 4, 5000), (300, 50, 2)])
    insp = env.inspection
    assert reject_unfit(insp.observe(), insp.mask()) == ACCEPT  # J0 fits an idle cluster
    env.step(ACCEPT)
    assert reject_unfit(insp.observe(), insp.mask()) == REJECT  # J1 needs 4 nodes, 2 are free
