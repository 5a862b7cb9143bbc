"""DRAS's analysis helpers: the starvation count against FCFS+EASY and the weekly waits (Fig. 9),
on hand-made results."""

import numpy as np
import pytest

from hpcsched.experiments import dras
from hpcsched.sim.engine import Result
from hpcsched.workload.jobs import JobTable

DAY = 86400.0


def result(submit, start, procs, run):
    jobs = JobTable.from_columns(job_id=np.arange(1, len(submit) + 1), submit=submit,
                                 run_time=run, procs=procs, req_time=np.asarray(run) * 2,
                                 req_procs=procs)
    start = np.asarray(start, dtype=float)
    return Result(jobs=jobs, start=start, end=start + np.asarray(run, dtype=float),
                  executed=np.asarray(run, dtype=float), metrics={}, profile="dras",
                  backfill="none")


def test_weekly_waits_by_hand():
    # week 0: waits 10 and 30 s, work 2*100 + 1*50; week 1 empty; week 2: wait 5 s, work 4*10
    r = result(submit=[0.0, 3 * DAY, 15 * DAY], start=[10.0, 3 * DAY + 30, 15 * DAY + 5],
               procs=[2, 1, 4], run=[100.0, 50.0, 10.0])
    mean, work = dras.weekly_waits(r, origin=0.0)
    assert mean[0] == pytest.approx(20.0) and np.isnan(mean[1]) and mean[2] == pytest.approx(5.0)
    assert work.tolist() == [250.0, 0.0, 40.0]
    with pytest.raises(ValueError, match="before the origin"):
        dras.weekly_waits(r, origin=DAY)


def test_verdicts_count_the_jobs_that_wait_longer_than_fcfs_ever_did():
    fcfs = result([0.0, 0.0], [0.0, 100.0], [1, 1], [100.0, 100.0])     # max wait 100
    packing = result([0.0, 0.0], [0.0, 500.0], [1, 1], [100.0, 100.0])  # one job waits 500
    rows = [{"policy": "fcfs-easy", "wait": 50.0, "slowdown": 1.5, "max_wait": 100.0},
            {"policy": "binpacking", "wait": 250.0, "slowdown": 3.5, "max_wait": 500.0}]
    v = dras.verdicts(rows, {"fcfs-easy": fcfs, "binpacking": packing})
    assert v == [{"policy": "binpacking", "wait_vs_fcfs": 5.0, "slowdown_vs_fcfs": 3.5 / 1.5,
                  "max_wait_vs_fcfs": 5.0, "jobs_over_fcfs_max": 1}]
    assert "jobs_over_fcfs_max" not in dras.verdicts(rows)[0]


def test_a_dras_policy_in_the_engine_schedules_as_the_experiment_does():
    from hpcsched.agents import dras_episode
    from hpcsched.experiments import dras_training as dt
    from hpcsched.experiments.policyspec import model_profiles, resolve_policy
    from hpcsched.sim.factory import make_engine
    from hpcsched.sim.run import prepare

    spec = "dras:pretrained/dras-pg-ricc"
    assert model_profiles([spec, "fcfs"]) == {spec: "dras"}
    p = prepare("ricc", "dras")
    jobs = p.jobs.window(30000, 300)
    res = make_engine(jobs, p.cluster, p.profile, "easy").run(resolve_policy(spec, p))
    agent, config = dt.load_agent(dras.model_file("dras-pg", "ricc", "capability", None))
    env = dt.make_env(dt.DrasRunConfig(algo=config.algo, trace="ricc", window=config.window), p)
    ref = dras_episode.run_episode(agent, env, jobs, learn=False)["result"]
    assert np.array_equal(res.start, ref.start) and np.array_equal(res.modes, ref.modes)
    with pytest.raises(ValueError, match="--backfill easy"):
        make_engine(jobs, p.cluster, p.profile, "none").run(resolve_policy(spec, p))
    std = prepare("ricc", "standard")
    with pytest.raises(ValueError, match="dras"):
        make_engine(jobs, std.cluster, std.profile, "easy").run(resolve_policy(spec, std))
