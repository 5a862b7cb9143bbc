"""DRAS's training data and loop: the chronological split, the curriculum's jobsets, a short
training run with its files and resume, and the checkpoint round trip."""

import csv

import numpy as np
import pytest

from hpcsched.experiments import dras_training as dt
from hpcsched.workload import jobsets
from hpcsched.sim.run import prepare
from hpcsched.workload.jobs import JobTable, TraceHeader

DAY = 86400.0


def trace(days=10, per_day=60, nodes=16, seed=0):
    rng = np.random.default_rng(seed)
    n = days * per_day
    run = rng.integers(30, 3000, n).astype(float)
    procs = np.minimum(rng.geometric(0.3, n), nodes)
    return JobTable.from_columns(
        TraceHeader(name="toy", max_nodes=nodes, max_procs=nodes),
        job_id=np.arange(1, n + 1), submit=np.sort(rng.uniform(0, days * DAY, n)), run_time=run,
        req_time=run * rng.uniform(1, 4, n), req_procs=procs, alloc_procs=procs, user=np.ones(n))


def test_split_is_chronological_and_complete():
    p = prepare(trace(), "dras")
    tr, va, te = jobsets.split(p.jobs, 5, 2, 3)
    t0 = p.jobs.submit[0]
    assert tr.submit.max() < t0 + 5 * DAY <= va.submit.min()
    assert va.submit.max() < t0 + 7 * DAY <= te.submit.min()
    assert len(tr) + len(va) + len(te) == len(p.jobs)


def test_split_names_an_empty_period():
    with pytest.raises(ValueError, match="test period has no job"):
        jobsets.split(prepare(trace(days=3), "dras").jobs, 2, 1, 5)


def test_sampled_jobset_is_poisson_at_the_period_rate():
    p = prepare(trace(days=20, per_day=200), "dras")
    rng = np.random.default_rng(0)
    js = jobsets.sampled_jobset(p.jobs, 3000, rng)
    gaps = np.diff(js.submit)
    mean_gap = (p.jobs.submit[-1] - p.jobs.submit[0]) / (len(p.jobs) - 1)
    assert np.mean(gaps) == pytest.approx(mean_gap, rel=0.06)
    # exponential gaps: the coefficient of variation is 1
    assert np.std(gaps) / np.mean(gaps) == pytest.approx(1.0, abs=0.08)
    assert len(np.unique(js.job_id)) == 3000  # drawn without replacement


def test_real_jobsets_are_consecutive_runs_spread_over_the_period():
    p = prepare(trace(), "dras")
    sets = jobsets.real_jobsets(p.jobs, 100, 4)
    assert [s.job_id[0] for s in sets][0] == p.jobs.job_id[0]
    assert sets[-1].job_id[-1] == p.jobs.job_id[-1]
    for s in sets:
        assert len(s) == 100 and np.all(np.diff(s.submit) >= 0)


def test_curriculum_order_and_errors():
    assert jobsets.parse_curriculum("sampled:2,real:1,synthetic:3") == [
        ("sampled", 2), ("real", 1), ("synthetic", 3)]
    for bad in ("sampled", "sampled:0", "weekly:2"):
        with pytest.raises(ValueError, match="PHASE:COUNT"):
            jobsets.parse_curriculum(bad)


def test_training_writes_its_files_and_resumes(tmp_path, monkeypatch):
    p = prepare(trace(), "dras")
    monkeypatch.setattr(dt, "prepared_for", lambda config: p)
    config = dt.DrasRunConfig(algo="pg", trace="toy", curriculum="sampled:1,real:1",
                              jobset_jobs=80, train_days=5, validate_days=2, test_days=3,
                              validate_first_days=0.5, agent={"fc1": 32, "fc2": 16})
    out = tmp_path / "run"
    history = dt.train(config, out, progress=False)
    assert [h["phase"] for h in history] == ["sampled", "real"]
    for name in ("model.pt", "best.pt", "log.csv", "curve.png", "config.json"):
        assert (out / name).exists()
    with open(out / "log.csv") as f:
        assert len(list(csv.DictReader(f))) == 2
    with pytest.raises(FileExistsError):
        dt.train(config, out, progress=False)
    agent, cfg = dt.load_agent(out / "model.pt")
    assert cfg.curriculum == "sampled:1,real:1" and agent.updates > 0
    ck = dt.load(out / "model.pt")
    assert ck["epoch"] == 2 and ck["recipe"] == "dras" and ck["learner"] == "reinforce"
    # the slim copy for shipping picks as the full model does
    from hpcsched.modelfile import slim as export

    export(out / "model.pt", tmp_path / "slim.pt")
    slim, _ = dt.load_agent(tmp_path / "slim.pt")
    assert (tmp_path / "slim.pt").stat().st_size < (out / "model.pt").stat().st_size / 2

    env = dt.make_env(config, p)
    obs, info = env.reset(options={"jobs": p.jobs.window(0, 60)})
    for _ in range(20):
        assert slim.predict(obs, info["action_mask"]) == agent.predict(obs, info["action_mask"])
        obs, _, term, _, info = env.step(agent.predict(obs, info["action_mask"]))
        if term:
            break


def test_select_wait_keeps_the_validation_with_the_lowest_wait(tmp_path, monkeypatch):
    p = prepare(trace(), "dras")
    monkeypatch.setattr(dt, "prepared_for", lambda config: p)
    config = dt.DrasRunConfig(algo="pg", trace="toy", curriculum="sampled:2,real:1",
                              jobset_jobs=80, train_days=5, validate_days=2, test_days=3,
                              validate_first_days=0.5, validate_every=1, select="wait",
                              agent={"fc1": 32, "fc2": 16, "lr": 0.05})
    history = dt.train(config, tmp_path / "run", progress=False)
    waits = [h["val_wait"] for h in history]
    assert dt.load(tmp_path / "run" / "best.pt")["epoch"] == 1 + waits.index(min(waits))
    with pytest.raises(ValueError, match="select"):
        dt.train(dt.DrasRunConfig(select="slowest"), tmp_path / "bad", progress=False)


def test_every_shipped_dras_model_has_a_row_in_models_md():
    from hpcsched.experiments.policyspec import PRETRAINED

    text = (PRETRAINED / "MODELS.md").read_text()
    for path in PRETRAINED.glob("*.pt"):
        if path.stem.startswith(("dras-", "decima-")):
            assert f"`{path.name}`" in text or f"| {path.stem} " in text, path.name


def test_keep_validated_keeps_one_checkpoint_per_validation(tmp_path, monkeypatch):
    p = prepare(trace(), "dras")
    monkeypatch.setattr(dt, "prepared_for", lambda config: p)
    config = dt.DrasRunConfig(algo="pg", trace="toy", curriculum="sampled:3", jobset_jobs=60,
                              train_days=5, validate_days=2, test_days=3,
                              validate_first_days=0.5, validate_every=2, keep_validated=True,
                              agent={"fc1": 16, "fc2": 8})
    dt.train(config, tmp_path / "run", progress=False)
    kept = sorted(f.name for f in (tmp_path / "run" / "validated").iterdir())
    assert kept == ["ep002.pt", "ep003.pt"]  # every second episode, and the last
    assert [dt.load(tmp_path / "run" / "validated" / k)["epoch"] for k in kept] == [2, 3]


def test_training_writes_a_line_per_episode_where_stderr_is_not_a_terminal(tmp_path, monkeypatch,
                                                                           capsys):
    p = prepare(trace(), "dras")
    monkeypatch.setattr(dt, "prepared_for", lambda config: p)
    config = dt.DrasRunConfig(algo="pg", trace="toy", curriculum="sampled:3", jobset_jobs=60,
                              train_days=5, validate_days=2, test_days=3,
                              validate_first_days=0.5, validate_every=2,
                              agent={"fc1": 16, "fc2": 8})
    dt.train(config, tmp_path / "run")  # progress left to the stream: capsys's is no terminal
    lines = [x for x in capsys.readouterr().err.splitlines() if x.startswith("episode ")]
    assert [x.split()[1] for x in lines] == ["1/3:", "2/3:", "3/3:"]
    # only the second and last episodes were validated
    assert "val wait nan" in lines[0] and "val wait nan" not in lines[1] + lines[2]


@pytest.mark.parametrize("algo", ["pg", "dql"])
def test_an_agent_learns_jobsets_and_its_file_schedules_as_it_does(tmp_path, algo):
    """SB3's verbs: learn, save, load, and the engine policy of the loaded agent."""
    from hpcsched.sim.factory import make_engine

    p = prepare(trace(), "dras")
    config = dt.DrasRunConfig(algo=algo, trace="toy", agent={"fc1": 32, "fc2": 16})
    env = dt.make_env(config, p)
    agent = dt.make_agent(config, env.rows_shape[0])
    seen = []
    assert agent.learn(env, [p.jobs.window(0, 80), p.jobs.window(80, 80)],
                       callback=seen.append) is agent
    assert len(seen) == 2 and all(ep["picks"] > 0 for ep in seen) and agent.updates > 0
    agent.save(tmp_path / "a.pt", config=dict(vars(config)))
    back = type(agent).load(tmp_path / "a.pt")
    jobs = p.jobs.window(200, 96)

    def starts(policy):
        return make_engine(jobs, p.cluster, p.profile, "easy").run(policy).start

    np.testing.assert_array_equal(starts(back.policy(config, p, "back")),
                                  starts(agent.policy(config, p, "agent")))


def test_a_validation_trace_of_its_own(tmp_path):
    """With validate_trace, training takes the first train_days of the trace (no period cut for
    validation or test) and validation the first validate_first_days of the other file; a file of
    another machine is refused."""
    from hpcsched.workload.swf import write_swf

    train, val = tmp_path / "train.swf", tmp_path / "val.swf"
    write_swf(trace(days=3, seed=1), train)
    other = trace(days=2, seed=2)
    write_swf(other, val)
    config = dt.DrasRunConfig(algo="pg", trace=str(train), validate_trace=str(val),
                              curriculum="real:1", jobset_jobs=50, train_days=2,
                              validate_first_days=1, agent={"fc1": 16, "fc2": 8})
    run = dt.DrasRun(config, tmp_path / "run")
    # the validation jobs are the other file's first day, as the dras profile prepares it
    want = prepare(str(val), "dras").jobs
    want = want.take((want.submit - want.submit[0]) < DAY)
    assert run.validate_jobs.job_id.tolist() == want.job_id.tolist()
    assert 0 < len(run.validate_jobs) < len(other)
    # the training jobsets come from the first two days of the training file, all of them
    first = prepare(str(train), "dras").jobs
    days = (first.submit - first.submit[0]) / DAY
    assert set(run.jobsets[0][1].job_id.tolist()) <= set(first.job_id[days < 2].tolist())
    assert run.jobsets[0][1].job_id[0] == first.job_id[0]
    # the run's file keeps it (a run without one writes no such key, as before it existed)
    run.save(tmp_path / "model.pt")
    assert dt.load(tmp_path / "model.pt")["config"]["validate_trace"] == str(val)
    write_swf(trace(days=2, nodes=32, seed=2), val)
    with pytest.raises(ValueError, match="its machine .32 nodes. is not the training trace's"):
        dt.DrasRun(config, tmp_path / "run2")
