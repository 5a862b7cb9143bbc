"""`hpcsched train herasched` (`hpcsched.experiments.herasched_training`): the run folder, its
validation against FCFS + best-fit + EASY, and a resume that writes what a run that never stopped
writes."""

from __future__ import annotations

import csv

import numpy as np
import pytest
import torch

from hpcsched.agents.herasched import HeraSched
from hpcsched.cli import main
from hpcsched.experiments.herasched_training import floored_score, train

pytestmark = pytest.mark.usefixtures("one_torch_thread")

SETTINGS = dict(window=16, tail=4, episode_jobs=400, num_envs=2, update_every=128,
                selector_every=32, allocator_every=10, update_epochs=2)
TIMINGS = ("rollout_s", "update_s", "epoch_s", "selector_pi_s", "allocator_pi_s", "selector_v_s",
           "allocator_v_s")


def rows(path):
    with open(path) as f:
        return [{k: v for k, v in r.items() if k not in TIMINGS} for r in csv.DictReader(f)]


def test_a_run_folder_validates_and_resumes_as_if_it_never_stopped(tmp_path):
    options = dict(validate_every=1, validate_jobs=300, progress=False, log=lambda text: None)
    straight = train(dict(SETTINGS), tmp_path / "a", 3, **options)
    assert {p.name for p in (tmp_path / "a").iterdir()} >= {"model.pt", "best.pt", "log.csv",
                                                            "config.json", "curve.png"}
    assert all("val_score" in h and "val_wait" in h for h in straight.history if h["epoch"])
    train(dict(SETTINGS), tmp_path / "b", 1, **options)
    train(None, tmp_path / "b", 3, resume=True, **options)
    a, b = HeraSched.load(tmp_path / "a" / "model.pt"), HeraSched.load(tmp_path / "b" / "model.pt")
    for name in ("selector_policy", "allocator_policy", "allocator_value"):
        x, y = getattr(a, name).state_dict(), getattr(b, name).state_dict()
        assert all(torch.equal(x[k], y[k]) for k in x)
    assert rows(tmp_path / "a" / "log.csv") == rows(tmp_path / "b" / "log.csv")
    with pytest.raises(ValueError, match="trained with window=16, not 32"):
        train({"window": 32}, tmp_path / "b", 4, resume=True, **options)


def test_the_command_line_trains_and_the_model_schedules(tmp_path, capsys):
    out = tmp_path / "run"
    code = main(["train", "herasched", "--out", str(out), "--epochs", "1", "--window", "16",
                 "--tail", "4", "--episode-jobs", "300", "--update-every", "64",
                 "--validate-every", "0"])
    assert code == 0 and "1 updates" in capsys.readouterr().out
    code = main(["simulate", "lublin-1", "--profile", "hpcsim", "--policy", f"herasched:{out}",
                 "--jobs", "100", "--json"])
    captured = capsys.readouterr()
    assert code == 0 and '"policy": "herasched:' in captured.out  # the default net carries over


@pytest.mark.parametrize("reward", ["accrued", "squared"])
def test_the_command_line_sets_our_selector_rewards_and_a_resume_keeps_them(tmp_path, capsys,
                                                                           reward):
    out = tmp_path / "run"
    base = ["train", "herasched", "--out", str(out), "--window", "16", "--tail", "4",
            "--episode-jobs", "300", "--update-every", "64", "--validate-every", "0"]
    assert main(base + ["--epochs", "1", "--selector-reward", reward]) == 0
    model = HeraSched.load(out / "model.pt")
    assert model.config.selector_reward == reward
    assert model.config.make_env().reward_args[-1] == reward  # the training env's
    assert main(base + ["--epochs", "2", "--resume"]) == 0
    assert HeraSched.load(out / "model.pt").config.selector_reward == reward
    capsys.readouterr()
    assert main(base + ["--epochs", "3", "--resume", "--selector-reward", "average"]) != 0
    assert f"selector_reward='{reward}', not 'average'" in capsys.readouterr().err
    from hpcsched.agents.herasched import HeraSchedConfig

    assert HeraSchedConfig().selector_reward == "average"  # the default stays Eq. 4.1


def test_the_floored_score_ranks_where_the_reference_never_waits():
    ref = {"wait": 0.0, "max_wait": 0.0}
    assert floored_score({"wait": 0.0, "max_wait": 0.0}, ref) == 2.0
    assert floored_score({"wait": 10.0, "max_wait": 100.0}, ref) > \
        floored_score({"wait": 20.0, "max_wait": 100.0}, ref)
    assert floored_score({"wait": 50.0, "max_wait": 400.0},
                         {"wait": 100.0, "max_wait": 200.0}) == pytest.approx(2.5)


def test_validation_can_run_on_another_trace(tmp_path):
    from hpcsched.agents.herasched import HeraSchedConfig
    from hpcsched.experiments.herasched_training import HeraValidation
    from hpcsched.workload.spartan import generate
    from hpcsched.workload.spartan_format import write_trace

    path = tmp_path / "later.txt"
    later = generate("spartan-deeplearn", 2, seed=5)
    write_trace(later, path)
    config = HeraSchedConfig(**SETTINGS)  # trains on the generated high-load day
    own, other = HeraValidation(config, 300), HeraValidation(config, 300, str(path))
    assert len(own.prepared.jobs) == 1137 and len(other.prepared.jobs) != 1137
    assert other.start == len(other.prepared.jobs) - 300
    assert len(other.prepared.jobs) == len(later.jobs)


def test_the_command_line_sets_the_reward_intervals(tmp_path):
    out = tmp_path / "run"
    assert main(["train", "herasched", "--out", str(out), "--epochs", "1", "--window", "16",
                 "--tail", "4", "--episode-jobs", "300", "--update-every", "64",
                 "--selector-every", "1", "--allocator-every", "3", "--gamma", "0.99",
                 "--validate-every", "0"]) == 0
    c = HeraSched.load(out / "model.pt").config
    assert (c.selector_every, c.allocator_every, c.gamma) == (1, 3, 0.99)
    h = HeraSched.load(out / "model.pt").history[-1]
    # every selector action is paid (bar those at a zero wait), and the choice is logged
    assert h["selector_rewards"] > 0.5 * h["selector_steps"] and 0 <= h["forward_share"] <= 1


def test_the_command_line_sets_both_agents_ppo_and_a_resume_keeps_them(tmp_path, capsys):
    import json

    out = tmp_path / "run"
    base = ["train", "herasched", "--out", str(out), "--window", "16", "--tail", "4",
            "--episode-jobs", "300", "--update-every", "64", "--validate-every", "0"]
    assert main(base + ["--epochs", "1", "--pi-lr", "1e-4", "--vf-lr", "2e-4", "--target-kl",
                        "0.015", "--update-epochs", "3", "--minibatch", "32", "--clip-ratio",
                        "0.1", "--ent-coef", "0.01"]) == 0
    want = dict(pi_lr=1e-4, vf_lr=2e-4, target_kl=0.015, update_epochs=3, minibatch=32,
                clip_ratio=0.1, ent_coef=0.01)
    model = HeraSched.load(out / "model.pt")
    for agent in model.agents:  # the selector's PPO and the allocator's
        assert {k: getattr(agent.params, k) for k in want} == want
        assert agent.pi_optimizer.param_groups[0]["lr"] == 1e-4
        assert agent.v_optimizer.param_groups[0]["lr"] == 2e-4
    saved = json.loads((out / "config.json").read_text())
    assert {k: saved[k] for k in want} == want
    assert model.history[-1]["pi_iters"] <= 3
    # a resume takes them from the run, and refuses a different one
    assert main(base + ["--epochs", "2", "--resume"]) == 0
    assert HeraSched.load(out / "model.pt").config.pi_lr == 1e-4
    assert main(base + ["--epochs", "3", "--resume", "--pi-lr", "3e-4"]) != 0
    assert "trained with pi_lr=0.0001, not 0.0003" in capsys.readouterr().err
    assert HeraSched.load(out / "model.pt").epoch == 2


# ---- validation in interleaved subsets (validate_subsets) ---------------------------------------

SPAN = 400  # the last jobs of the generated Deeplearn high-load day: the reference waits there


def own_score(metrics, reference):
    """S as the validation scored it before subsets existed, written out again here."""
    return (max(reference["wait"], 1.0) / max(metrics["wait"], 1.0)
            + max(reference["max_wait"], 1.0) / max(metrics["max_wait"], 1.0))


@pytest.fixture(scope="module")
def spans():
    """An untrained model, and its run and the reference's of the last SPAN jobs, each run here
    through the engine directly."""
    from hpcsched.agents.herasched import HeraSchedConfig
    from hpcsched.agents.herasched_policy import as_policy
    from hpcsched.policies.priority import get_policy
    from hpcsched.sim.run import simulate

    torch.set_num_threads(1)
    config = HeraSchedConfig(**SETTINGS)
    model = HeraSched(config)
    prepared = config.prepared()
    start = len(prepared.jobs) - SPAN
    ref = simulate(prepared, get_policy("fcfs", profile=prepared.profile), backfill="easy",
                   start=start, jobs=SPAN)
    own = simulate(prepared, as_policy(model), start=start, jobs=SPAN)
    return config, model, ref, own


def test_one_subset_is_the_score_of_runs_from_before_the_option_exactly(spans):
    from hpcsched.experiments.herasched_training import HeraValidation

    config, model, ref, own = spans
    v = HeraValidation(config, SPAN)  # the class's default: one subset
    assert v.subsets == 1 and v.score(model) == own_score(own.metrics, ref.metrics)
    assert HeraValidation(config, SPAN, subsets=1).score(model) == v.score(model)


def test_k_subsets_score_is_the_median_of_a_recomputation_from_the_runs(spans):
    from hpcsched.experiments.herasched_training import HeraValidation

    config, model, ref, own = spans
    v = HeraValidation(config, SPAN, subsets=4)
    scores, metrics = v.scores(model)
    assert metrics["wait"] == own.metrics["wait"]  # the same one run of the span

    def waits(result):
        return result.start - result.jobs.submit

    expected = []
    for k in range(4):
        rows = np.arange(k, SPAN, 4)  # jobs k, k + 4, ...: dealt, not cut
        mine, theirs = waits(own)[rows], waits(ref)[rows]
        expected.append(own_score({"wait": mine.mean(), "max_wait": mine.max()},
                                  {"wait": theirs.mean(), "max_wait": theirs.max()}))
    assert scores == pytest.approx(expected, rel=1e-12)
    assert v.score(model) == pytest.approx(float(np.median(expected)), rel=1e-12)
    # the subsets are a partition of the span: their waits add up to the run's own metrics
    subsets = v.split(own)
    assert sum(s["jobs"] for s in subsets) == SPAN
    assert sum(s["wait"] * s["jobs"] for s in subsets) / SPAN == pytest.approx(own.metrics["wait"])
    assert max(s["max_wait"] for s in subsets) == own.metrics["max_wait"]
    assert all(r["max_wait"] > 0 for r in v.reference_subsets)  # every subset has waits to compare


def test_subsets_are_dealt_job_by_job_and_the_median_ignores_one_starved_job():
    from hpcsched.experiments.herasched_training import (floored_score, subset_scores,
                                                         subset_waits, validation_score)

    submit = np.zeros(8)
    start = np.array([10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, np.nan])
    got = subset_waits(submit, start, 2)
    # subset 0: jobs 0, 2, 4, 6 (10, 30, 50, 70 s); subset 1: jobs 1, 3, 5 (20, 40, 60 s) and one
    # that never started
    assert got == [{"wait": 40.0, "max_wait": 70.0, "jobs": 4},
                   {"wait": 40.0, "max_wait": 60.0, "jobs": 3}]
    # a model as good as the reference everywhere, then one of its jobs held a day longer
    reference = np.tile([100.0, 200.0, 3000.0, 50.0], 25)  # 100 jobs, every subset alike
    late = reference.copy()
    late[42] += 86_400
    whole = floored_score({"wait": late.mean(), "max_wait": late.max()},
                          {"wait": reference.mean(), "max_wait": reference.max()})
    ref4 = subset_waits(np.zeros(100), reference, 4)
    s4 = subset_scores(subset_waits(np.zeros(100), late, 4), ref4)
    assert whole < 1.2 and sorted(s4)[1:] == [2.0, 2.0, 2.0]  # one subset pays, three are even
    assert validation_score(s4) == 2.0  # the median: one starved job changes nothing
    assert np.mean(s4) < 1.8  # where the mean of the subsets would still follow it
    # starving jobs in three of the four subsets is seen
    later = late.copy()
    later[[43, 44]] += 86_400
    assert validation_score(subset_scores(subset_waits(np.zeros(100), later, 4), ref4)) < 1.2


def test_validate_subsets_is_kept_logged_and_refused_if_changed_on_resume(tmp_path, capsys):
    import json

    out = tmp_path / "run"
    base = ["train", "herasched", "--out", str(out), "--window", "16", "--tail", "4",
            "--episode-jobs", "300", "--update-every", "64", "--validate-every", "1",
            "--validate-jobs", str(SPAN)]
    assert main(base + ["--epochs", "1", "--validate-subsets", "3"]) == 0
    assert json.loads((out / "config.json").read_text())["run_options"]["validate_subsets"] == 3
    row = rows(out / "log.csv")[-1]
    parts = [float(row[f"val_score_s{k}"]) for k in (1, 2, 3)]
    assert float(row["val_score"]) == pytest.approx(float(np.median(parts)))
    assert main(base + ["--epochs", "2", "--resume"]) == 0  # kept: 3 subsets again
    assert rows(out / "log.csv")[-1]["val_score_s3"] != ""
    capsys.readouterr()
    assert main(base + ["--epochs", "3", "--resume", "--validate-subsets", "4"]) != 0
    assert "trained with validate_subsets=3, not 4" in capsys.readouterr().err
    assert HeraSched.load(out / "model.pt").epoch == 2


def test_a_run_from_before_the_option_resumes_scoring_the_span_whole(tmp_path, capsys):
    options = dict(validate_every=1, validate_jobs=SPAN, progress=False, log=lambda text: None)
    train(dict(SETTINGS), tmp_path / "old", 1, validate_subsets=1, **options)
    old = HeraSched.load(tmp_path / "old" / "model.pt")
    del old.run_options["validate_subsets"]  # as a run written before the option stored it
    old.save(tmp_path / "old" / "model.pt")
    resumed = train(None, tmp_path / "old", 2, resume=True, **options)
    assert resumed.run_options["validate_subsets"] == 1  # not today's default of 4
    assert not any(k.startswith("val_score_s") for k in resumed.history[-1])
    with pytest.raises(ValueError, match="trained with validate_subsets=1, not 4"):
        train(None, tmp_path / "old", 3, resume=True, validate_subsets=4, **options)


def test_more_subsets_than_jobs_is_refused():
    from hpcsched.agents.herasched import HeraSchedConfig
    from hpcsched.experiments.herasched_training import HeraValidation

    with pytest.raises(ValueError, match="validate_subsets 11: the 10 validated jobs"):
        HeraValidation(HeraSchedConfig(**SETTINGS), 10, subsets=11)


def test_keep_validated_keeps_each_validated_model_as_it_was_scored(tmp_path, capsys):
    from hpcsched.experiments.herasched_training import HeraValidation

    out = tmp_path / "run"
    base = ["train", "herasched", "--out", str(out), "--window", "16", "--tail", "4",
            "--episode-jobs", "300", "--update-every", "64", "--validate-every", "2",
            "--validate-jobs", str(SPAN), "--validate-subsets", "1"]
    assert main(base + ["--epochs", "3", "--keep-validated"]) == 0
    kept = out / "validated"
    assert sorted(p.name for p in kept.iterdir()) == ["epoch-2.pt", "epoch-3.pt"]  # and the last
    logged = {int(r["epoch"]): float(r["val_score"]) for r in rows(out / "log.csv")
              if r["val_score"]}
    assert sorted(logged) == [2, 3]
    for n, score in logged.items():
        model = HeraSched.load(kept / f"epoch-{n}.pt")
        assert model.epoch == n
        validation = HeraValidation(model.config, SPAN, None, 1)
        assert validation.score(model) == pytest.approx(score, rel=1e-12)
    best = max(logged, key=logged.get)
    x = HeraSched.load(out / "best.pt").selector_policy.state_dict()
    y = HeraSched.load(kept / f"epoch-{best}.pt").selector_policy.state_dict()
    assert all(torch.equal(x[k], y[k]) for k in x)
    assert main(base + ["--epochs", "4", "--resume"]) == 0  # validated, not kept: not asked
    assert not (kept / "epoch-4.pt").exists()
    assert main(base + ["--epochs", "6", "--resume", "--keep-validated"]) == 0  # given again
    assert sorted(p.name for p in kept.iterdir()) == ["epoch-2.pt", "epoch-3.pt", "epoch-6.pt"]
    plain = tmp_path / "plain"
    assert main(base[:3] + [str(plain)] + base[4:] + ["--epochs", "2"]) == 0
    assert not (plain / "validated").exists()


def test_validate_also_scores_the_lower_of_two_periods_keeps_it_and_refuses_a_change(tmp_path,
                                                                                     capsys):
    import json

    from hpcsched.experiments.herasched_training import HeraValidation
    from hpcsched.workload.spartan import generate
    from hpcsched.workload.spartan_format import write_trace

    also = tmp_path / "busy.txt"  # a second period: 2 generated Deeplearn days
    write_trace(generate("spartan-deeplearn", 2, seed=5), also)
    out = tmp_path / "run"
    base = ["train", "herasched", "--out", str(out), "--window", "16", "--tail", "4",
            "--episode-jobs", "300", "--update-every", "64", "--validate-every", "1",
            "--validate-jobs", str(SPAN), "--validate-subsets", "1"]
    assert main(base + ["--epochs", "2", "--validate-also", str(also)]) == 0
    printed = capsys.readouterr().err
    assert f"and the whole of {also}" in printed and "the lower of the two S" in printed
    assert json.loads((out / "config.json").read_text())["run_options"]["validate_also"] == \
        str(also)
    logged = rows(out / "log.csv")
    model = HeraSched.load(out / "model.pt")
    first = HeraValidation(model.config, SPAN, None, 1)
    second = HeraValidation(model.config, 10 ** 9, str(also), 1)
    assert second.start == 0 and second.jobs == len(second.prepared.jobs)  # the whole period
    row = logged[-1]
    # each S recomputed here from its own run; the score is the lower one
    s1 = floored_score(first.run(model).metrics, first.reference)
    run2 = second.run(model)
    s2 = floored_score(run2.metrics, second.reference)
    assert s1 != s2  # two periods that score differently: the lower one is a choice
    assert float(row["val_first_score"]) == pytest.approx(s1, rel=1e-12)
    assert float(row["val_also_score"]) == pytest.approx(s2, rel=1e-12)
    assert float(row["val_score"]) == pytest.approx(min(s1, s2), rel=1e-12)
    assert float(row["val_also_wait"]) == pytest.approx(run2.metrics["wait"])
    zero = next(h for h in model.history if h["epoch"] == 0)  # the untrained model's, kept too
    assert zero["val_score"] == min(zero["val_first_score"], zero["val_also_score"])
    assert "val_also_max_wait" in zero and "mean_reward" not in zero
    for r in logged:  # at every validated update, the lower of the two
        assert float(r["val_score"]) == min(float(r["val_first_score"]),
                                            float(r["val_also_score"]))
    # best.pt: the update of the highest lower S
    best = max(logged, key=lambda r: float(r["val_score"]))
    assert HeraSched.load(out / "best.pt").epoch == int(best["epoch"])
    # kept on resume; a change refused; a run without it has no such columns
    assert main(base + ["--epochs", "3", "--resume"]) == 0
    assert rows(out / "log.csv")[-1]["val_also_score"] != ""
    capsys.readouterr()
    assert main(base + ["--epochs", "4", "--resume", "--validate-also", str(tmp_path / "x")]) != 0
    assert "validate_also" in capsys.readouterr().err
    plain = tmp_path / "plain"
    assert main(["train", "herasched", "--out", str(plain)] + base[4:] + ["--epochs", "1"]) == 0
    assert "val_also_score" not in rows(plain / "log.csv")[0]


def test_init_starts_a_new_run_from_another_models_four_networks(tmp_path, capsys):
    """`train herasched --init FILE`: the new run's four networks start as the file's (the actors
    alone from a slim file, with new critics), with its own trace and settings, epoch 0 and new
    optimisers; the starting model is validated (its score is the file's model's own, recomputed)
    and counts for best.pt; the option is kept with the run and another one refused on resume; a
    file that observes another window, or has another network, is refused by name."""
    import json
    from dataclasses import replace

    from hpcsched.experiments.herasched_training import HeraValidation, warm_start
    from hpcsched.modelfile import read_model, slim
    from hpcsched.workload.spartan import generate
    from hpcsched.workload.spartan_format import write_trace

    small = ["--window", "16", "--tail", "4", "--episode-jobs", "300", "--update-every", "64"]
    first = tmp_path / "first" / "model.pt"
    assert main(["train", "herasched", "--out", str(first.parent), *small, "--epochs", "2",
                 "--validate-every", "0", "--seed", "3"]) == 0
    source = read_model(first)
    trained = HeraSched.load(first).config
    nets = ("selector_policy", "selector_value", "allocator_policy", "allocator_value")

    def same(model, name):
        mine = getattr(model, name).state_dict()
        return all(torch.equal(mine[k], v) for k, v in source["weights"][name].items())

    # the loading itself: weights equal, optimisers and epoch new, the run's own settings kept
    model = HeraSched(replace(trained, pi_lr=3e-5, gamma=0.9))
    assert not any(same(model, n) for n in nets)  # a new model's weights are not the file's
    assert warm_start(model, first) == (2, True)
    assert all(same(model, n) for n in nets)
    assert model.epoch == 0 and all(a.pi_optimizer.state_dict()["state"] == {}
                                    for a in model.agents)
    assert model.config.pi_lr == 3e-5 and model.config.gamma == 0.9
    slim(first, tmp_path / "slim.pt")  # the actors alone
    fresh = HeraSched(trained)
    assert warm_start(fresh, tmp_path / "slim.pt") == (2, False)
    assert same(fresh, "selector_policy") and same(fresh, "allocator_policy")
    assert not same(fresh, "selector_value") and not same(fresh, "allocator_value")
    with pytest.raises(ValueError, match=r"window \(16 there, 20 here\)"):
        warm_start(HeraSched(replace(trained, window=20)), first)
    with pytest.raises(ValueError, match=r"width \(32 there, 16 here\)"):
        warm_start(HeraSched(replace(trained, width=16)), first)
    # the command, on another trace: said, validated before the first update, kept with the run
    other = tmp_path / "other.txt"
    write_trace(generate("spartan-deeplearn", 3, seed=11), other)
    out = tmp_path / "tuned"
    args = ["train", "herasched", "--out", str(out), *small, "--trace", str(other),
            "--pi-lr", "3e-5", "--validate-every", "1", "--validate-jobs", str(SPAN),
            "--validate-subsets", "1", "--init", str(first)]
    assert main(args + ["--epochs", "1"]) == 0
    err = capsys.readouterr().err
    assert f"starting from the networks of {first} (its update 2; new optimisers)" in err
    assert "starting greedy model: validation S" in err
    run = HeraSched.load(out / "model.pt")
    assert run.epoch == 1 and run.config.trace == str(other) and run.config.pi_lr == 3e-5
    assert json.loads((out / "config.json").read_text())["run_options"]["init"] == str(first)
    zero = next(h for h in run.history if h["epoch"] == 0)  # before any update
    start = zero["val_score"]
    check = HeraValidation(run.config, SPAN, None, 1)
    metrics = check.run(HeraSched.load(first)).metrics
    assert start == pytest.approx(floored_score(metrics, check.reference), rel=1e-12)
    assert (zero["val_wait"], zero["val_max_wait"]) == (metrics["wait"], metrics["max_wait"])
    after = next(h["val_score"] for h in run.history if h["epoch"] == 1)
    best = read_model(out / "best.pt")
    if after > start:  # the update improved on the start: best.pt is it
        assert best["epoch"] == 1
    else:  # else the starting model, the file's own weights, stays best.pt
        assert best["epoch"] == 0
        assert all(torch.equal(best["weights"]["selector_policy"][k], v)
                   for k, v in source["weights"]["selector_policy"].items())
    assert main(["train", "herasched", "--out", str(out), "--resume", "--epochs", "2",
                 "--init", str(tmp_path / "slim.pt")]) != 0
    assert "init" in capsys.readouterr().err
    assert main(["train", "herasched", "--out", str(out), "--resume", "--epochs", "2"]) == 0
    assert "starting from" not in capsys.readouterr().err  # a resumed run's networks are its own
