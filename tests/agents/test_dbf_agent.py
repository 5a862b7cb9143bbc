"""DBF's agent (Wang's thesis Ch. 3): the thesis's PPO settings in the config, the split of episode
starts, the minibatch PPO update with per-step rewards, and the trained actor on the engine giving
exactly the environment's schedule (schedule cycling), with and without EASY after its Fwd."""

import numpy as np
import pytest
import torch

from hpcsched.agents.dbf import DBFConfig, DbfActor, DbfCritic, as_policy
from hpcsched.agents.greedy import greedy
from hpcsched.agents.ppo import PPO, advantages_and_returns
from hpcsched.envs.dbf import DBFEnv, DbfScale, as_dbf_trace
from hpcsched.envs.dbf_vec import VecDBF
from hpcsched.experiments.dbf_episodes import run_episode
from hpcsched.sim.run import prepare
from hpcsched.workload.jobs import JobTable, TraceHeader
from hpcsched.workload.windows import DBF_SEEDS, dbf_start_range, dbf_starts


def test_the_thesis_settings_and_the_stated_choices():
    c = DBFConfig()
    assert (c.pi_lr, c.vf_lr, c.clip_ratio, c.gamma, c.minibatch) == (3e-4, 3e-4, 0.2, 0.99, 128)
    assert c.hidden == (1024, 512, 256) and c.episode_jobs == 1000 and not c.mask
    assert c.trajectories_per_epoch == c.num_envs  # one episode per env, then the update
    p = c.ppo_params()
    assert (p.minibatch, p.update_epochs, p.lam, p.ent_coef, p.max_grad_norm) == (
        128, 2, 0.95, 0.01, 0.5)
    assert p.step_rewards and p.target_kl == 0.0
    actor, critic = DBFConfig(window=10).networks()
    assert isinstance(actor, DbfActor) and isinstance(critic, DbfCritic)
    sizes = [m.out_features for m in actor.net if isinstance(m, torch.nn.Linear)]
    assert sizes == [1024, 512, 256, 11] and actor.net[0].in_features == 256 + 30
    assert isinstance(actor.net[1], torch.nn.Tanh)
    # separate networks: no parameter shared
    assert not {id(q) for q in actor.parameters()} & {id(q) for q in critic.parameters()}


def test_the_split_of_episode_starts_is_disjoint_and_fixed():
    n, e = 10_000, 1000
    train, val, test = (dbf_start_range(n, s, e) for s in ("train", "validation", "test"))
    assert train == (0, 4800) and val == (6000, 6300) and test == (7500, 9000)
    # an episode's first e jobs (and a fifth of an episode after them) stay in its block
    assert train[1] + e + e // 5 <= val[0] and val[1] + e + e // 5 <= test[0]
    v, t = dbf_starts(n, "validation"), dbf_starts(n, "test")
    assert len(v) == 10 and len(t) == 100 and len(set(t)) == 100
    assert all(val[0] <= s <= val[1] for s in v) and all(test[0] <= s <= test[1] for s in t)
    assert dbf_starts(n, "test") == t and dbf_starts(n, "train") == [0, 4800]
    prepared = as_dbf_trace("lublin-1")
    assert dbf_starts(prepared, "test") == dbf_starts(len(prepared.jobs), "test")
    with pytest.raises(ValueError, match="too short"):
        dbf_starts(1500, "validation")


def test_draws_of_starts_nest_and_the_default_draws_stay():
    n = 10_000
    t10, t100, t1000 = (dbf_starts(n, "test", k) for k in (10, 100, 1000))
    assert len(set(t1000)) == 1000 and all(7500 <= s <= 9000 for s in t1000)
    assert set(t10) < set(t100) < set(t1000)  # Fig. 3.7's 1,000 episodes hold the tables' 100
    assert len(dbf_starts(n, "test", 1501)) == 1501  # the whole block
    with pytest.raises(ValueError, match="fewer than 1502"):
        dbf_starts(n, "test", 1502)
    # the default draws are one plain choice with the split's seed, as before the nesting
    for split, k, (lo, hi) in (("test", 100, (7500, 9000)), ("validation", 10, (6000, 6300))):
        rng = np.random.default_rng(DBF_SEEDS[split])
        assert dbf_starts(n, split) == sorted(lo + rng.choice(hi - lo + 1, size=k, replace=False))


def test_training_episodes_draw_only_from_their_block():
    vec = VecDBF(4, "lublin-1", window=4, episode_jobs=50, start_range=(100, 120))
    vec.reset(seed=3)
    seen = [w[0] for w in vec.windows]
    for _ in range(400):
        _, _, _, done, infos = vec.step(np.full(4, 4))
        seen += [infos[i]["window"][0] for i in np.flatnonzero(done)]
    assert len(seen) > 8 and all(100 <= s <= 120 for s in seen)
    with pytest.raises(ValueError, match="start_range"):
        DBFEnv("lublin-1", start_range=(5, 2))


def test_gae_with_rewards_along_the_episode():
    values = np.array([0.5, 0.2, 0.1, 0.3, 0.4])
    lengths, step = np.array([3, 2]), np.array([1.0, 0.0, 2.0, -1.0, 3.0])
    g, lam = 0.9, 0.8
    adv, ret = advantages_and_returns(values, lengths, step[[2, 4]], g, lam, step)
    # by hand, the first trajectory: deltas, then lambda-discounted sums
    d = [1 + g * 0.2 - 0.5, 0 + g * 0.1 - 0.2, 2 - 0.1]
    assert adv[:3] == pytest.approx([d[0] + g * lam * (d[1] + g * lam * d[2]),
                                     d[1] + g * lam * d[2], d[2]])
    assert ret[:3] == pytest.approx([1 + g * 2 * g, g * 2, 2])
    assert ret[3:] == pytest.approx([-1 + g * 3, 3])
    # only a last reward: the same as the terminal-reward form
    last = np.array([0, 0, 2.0, 0, 3.0])
    a1, r1 = advantages_and_returns(values, lengths, last[[2, 4]], g, lam, last)
    a2, r2 = advantages_and_returns(values, lengths, last[[2, 4]], g, lam)
    np.testing.assert_array_equal(a1, a2)
    np.testing.assert_array_equal(r1, r2)


def tiny_config(**kw):
    return DBFConfig(window=4, tail=1, episode_jobs=40, num_envs=2, trajectories_per_epoch=2,
                     hidden=(16,), minibatch=32, **kw)


def test_a_minibatch_update_learns_and_resumes_identically(tmp_path):
    a = PPO(tiny_config())
    a.learn(2)
    h = a.history[-1]
    assert h["pi_iters"] == 2 and h["trajectories"] == 2 and np.isfinite(h["loss_v"])
    # the mean reward is an episode's return: the sum of its (negative) cycle rewards
    assert h["mean_reward"] < -1
    b = PPO(tiny_config())
    b.learn(1)
    b.save(tmp_path / "m.pt")
    b = PPO.load(tmp_path / "m.pt")
    assert isinstance(b.config, DBFConfig)
    b.learn(1)
    for x, y in zip(a.policy.parameters(), b.policy.parameters()):
        torch.testing.assert_close(x, y, rtol=0, atol=0)


# -- the actor on the engine ------------------------------------------------------------------------
def table(rows, nodes):
    header = TraceHeader(name="hand", max_nodes=nodes, max_procs=nodes)
    return JobTable.from_columns(header, submit=[r[0] for r in rows],
                                 run_time=[r[1] for r in rows], req_procs=[r[2] for r in rows],
                                 alloc_procs=[r[2] for r in rows], req_time=[r[3] for r in rows])


def biased_actor(n_in, window, seed=0, pick=2.0):
    torch.manual_seed(seed)
    actor = DbfActor(n_in, window + 1, (32,))
    with torch.no_grad():
        actor.net[-1].bias[:window] += pick  # picks more often than Fwd
    return actor


def env_episode(env, actor, start):
    """The greedy actor through DBFEnv: (its metrics, the start time of every job it placed)."""
    obs, info = env.reset(options={"start": start})
    while True:
        a = greedy(actor.scores64(obs[None], info["action_mask"][None])[0], info["action_mask"])
        obs, _, done, _, info = env.step(a)
        if done:
            v = env.engine.view()
            return info["metrics"], np.asarray(v.start_time)


def engine_starts(prepared, policy, start, jobs, backfill="none"):
    from hpcsched.sim.factory import make_engine

    engine = make_engine(prepared.jobs.window(start, 2 * jobs), prepared.cluster,
                         prepared.profile, backfill)
    engine.run(policy)
    return np.asarray(engine.view().start_time)


@pytest.mark.parametrize("mask", [False, True])
def test_the_policy_on_the_engine_is_the_envs_schedule_on_a_hand_built_trace(mask):
    # 4 cores: big and small jobs arriving together and one by one
    rows = [(0, 100, 2, 200), (0, 50, 3, 60), (10, 20, 1, 40), (10, 30, 4, 80), (15, 5, 1, 10),
            (40, 70, 2, 90), (41, 10, 1, 10), (60, 200, 4, 200), (61, 30, 2, 30), (62, 1, 1, 5)]
    prepared = prepare(table(rows, 4), "standard")
    config = DBFConfig(window=3, tail=1, mask=mask, hidden=(32,))
    env = DBFEnv(prepared, window=3, tail=1, episode_jobs=7, mask=mask)
    scale = DbfScale.of(prepared)
    for seed in range(4):
        actor = biased_actor(4 + 9, 3, seed, pick=0.5)
        metrics, env_start = env_episode(env, actor, 0)
        policy = as_policy(actor, config, scale)
        assert run_episode(prepared, policy, 0, episode_jobs=7) == metrics
        eng = engine_starts(prepared, policy, 0, 5)
        placed = np.isfinite(env_start)
        assert placed.sum() == 7
        np.testing.assert_array_equal(eng[:len(env_start)][placed], env_start[placed])


def test_the_policy_on_the_engine_is_the_envs_schedule_on_lublin():
    prepared = as_dbf_trace("lublin-1")
    config = DBFConfig(window=10, tail=1, hidden=(32,))
    env = DBFEnv(prepared, window=10, tail=1, episode_jobs=300)
    actor = biased_actor(256 + 30, 10)
    policy = as_policy(actor, config, DbfScale.of(prepared))
    for start in dbf_starts(prepared, "test", 2, episode_jobs=300):
        metrics, env_start = env_episode(env, actor, start)
        assert metrics["placed"] == 300
        assert run_episode(prepared, policy, start, episode_jobs=300) == metrics


@pytest.mark.parametrize("backfill", ["none", "easy"])
def test_an_actor_that_always_picks_the_head_is_fcfs(backfill):
    """Slot 0 shows the oldest waiting job: picking it is a start when it fits and a Fwd when it
    does not, so the actor is FCFS without backfilling; with EASY after its Fwd (the oldest job
    that does not fit holds the reservation) it is FCFS with EASY."""
    from hpcsched.policies.priority import get_policy

    prepared = as_dbf_trace("lublin-1")
    actor = DbfActor(256 + 30, 11, (8,))
    with torch.no_grad():
        actor.net[-1].bias[0] += 100.0  # slot 0 always
    policy = as_policy(actor, DBFConfig(window=10, hidden=(8,)), DbfScale.of(prepared))
    for start in (7500, 8000):
        ours = run_episode(prepared, policy, start, episode_jobs=300, backfill=backfill)
        fcfs = run_episode(prepared, get_policy("fcfs"), start, episode_jobs=300,
                           backfill=backfill)
        assert ours == fcfs


def test_an_actor_that_always_answers_fwd_starts_nothing_even_with_easy():
    """EASY after a Fwd backfills around a job that does not fit; while every waiting job fits
    there is none, and the agent's choice to wait stands: on an empty machine nothing starts."""
    prepared = as_dbf_trace("lublin-1")
    actor = DbfActor(256 + 30, 11, (8,))
    with torch.no_grad():
        actor.net[-1].bias[10] += 100.0  # Fwd always
    policy = as_policy(actor, DBFConfig(window=10, hidden=(8,)), DbfScale.of(prepared))
    assert run_episode(prepared, policy, 7500, episode_jobs=200, backfill="easy")["placed"] == 0


def test_dbf_names_resolve_through_the_registry(tmp_path):
    from hpcsched.experiments.policyspec import resolve_policy
    from hpcsched.recipes import get, model_of

    model = PPO(tiny_config())
    model.save(tmp_path / "model.pt")
    recipe, ck = model_of(tmp_path / "model.pt")
    assert recipe.name == "dbf" and ck["learner"] == "ppo" and get("dbf") is recipe
    prepared = as_dbf_trace("lublin-1")
    policy = resolve_policy(f"dbf:{tmp_path}", prepared)
    assert policy.window == 4 and policy.tail == 1
    with pytest.raises(ValueError, match="pass loop"):
        resolve_policy(f"dbf:{tmp_path}", prepare("lublin-1", "rlscheduler"))


# -- what the command line sets, and the device ----------------------------------------------------
def test_train_dbf_sets_the_open_choices_and_keeps_the_device_out_of_the_run(tmp_path, capsys):
    import json

    from hpcsched.cli import main

    out = tmp_path / "run"
    args = ["train", "dbf", "--out", str(out), "--window", "4", "--episode-jobs", "24",
            "--num-envs", "2", "--episodes", "2", "--validate-every", "0"]
    assert main(args + ["--lr", "1e-4", "--ent-coef", "0", "--target-kl", "0.02",
                        "--minibatch", "64", "--device", "cpu"]) == 0
    saved = json.loads((out / "config.json").read_text())
    # one rate for actor and critic, as the thesis names one; the device is no setting of the run
    assert (saved["pi_lr"], saved["vf_lr"], saved["ent_coef"], saved["target_kl"],
            saved["minibatch"]) == (1e-4, 1e-4, 0.0, 0.02, 64)
    assert "device" not in saved and "lr" not in saved
    # options not given keep the config's defaults (not None)
    assert main(["train", "dbf", "--out", str(tmp_path / "plain"), "--window", "4",
                 "--episode-jobs", "24", "--num-envs", "2", "--episodes", "2",
                 "--validate-every", "0"]) == 0
    plain = json.loads((tmp_path / "plain" / "config.json").read_text())
    d = DBFConfig()
    assert (plain["pi_lr"], plain["ent_coef"], plain["target_kl"], plain["minibatch"]) == (
        d.pi_lr, d.ent_coef, d.target_kl, d.minibatch)
    # a resumed run may name another device: it is not compared with the run's settings
    assert main(["train", "dbf", "--out", str(out), "--episodes", "4", "--resume",
                 "--device", "cpu"]) == 0
    capsys.readouterr()



def test_reward_weights_reach_the_training_env_and_stay_with_the_run(tmp_path, capsys):
    import json

    from hpcsched.cli import main
    from hpcsched.envs.dbf import ALPHAS

    assert DBFConfig().reward_weights == ALPHAS == (1 / 3, 1 / 3, 1 / 3)  # the thesis's
    # an old model file's settings (no weights) read as the thesis's
    assert DBFConfig.from_dict({"window": 8}).reward_weights == ALPHAS
    out = tmp_path / "run"
    args = ["train", "dbf", "--out", str(out), "--window", "4", "--episode-jobs", "24",
            "--num-envs", "2", "--episodes", "2", "--validate-every", "0"]
    assert main(args + ["--reward-weights", "1/5, 0.6,1/5"]) == 0
    saved = json.loads((out / "config.json").read_text())
    assert saved["reward_weights"] == [0.2, 0.6, 0.2]
    model = PPO.load(out / "model.pt")
    assert model.config.reward_weights == (0.2, 0.6, 0.2)
    assert model.config.make_env(model).alphas == (0.2, 0.6, 0.2)  # in this order
    assert main(["train", "dbf", "--out", str(out), "--episodes", "4", "--resume"]) == 0
    assert PPO.load(out / "model.pt").config.reward_weights == (0.2, 0.6, 0.2)
    capsys.readouterr()
    for bad, says in [("1,2", "got 2"), ("0,0,0", "not all 0"), ("1,-1,1", "none negative"),
                      ("1/0,0,1", "division by zero"), ("a,1,1", "'a,1,1'")]:
        assert main(args[:4] + [str(tmp_path / "bad"), "--reward-weights", bad]) == 2
        err = capsys.readouterr().err
        assert "--reward-weights" in err and says in err, err
    assert not (tmp_path / "bad").exists()
    with pytest.raises(ValueError, match="three numbers"):
        DBFConfig(reward_weights=(1.0, 1.0))

@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error where no GPU is")
def test_a_device_torch_cannot_see_is_refused_by_name():
    model = PPO(tiny_config())
    with pytest.raises(ValueError, match="device cuda.*no CUDA device"):
        model.to("cuda")
    assert model.rollout_policy() is model.policy  # still on the CPU


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_updates_on_the_gpu_keep_the_rollout_copy_in_step_and_save_cpu_files(tmp_path):
    model = PPO(tiny_config()).to("cuda")
    model.learn(2)
    twin = model.rollout_policy()
    assert next(twin.parameters()).device.type == "cpu"
    for x, y in zip(twin.parameters(), model.policy.parameters()):
        torch.testing.assert_close(x, y.cpu(), rtol=0, atol=0)
    model.save(tmp_path / "m.pt")
    back = PPO.load(tmp_path / "m.pt")  # on the CPU, optimiser state included
    for x, y in zip(back.policy.parameters(), model.policy.parameters()):
        torch.testing.assert_close(x, y.cpu(), rtol=0, atol=0)
    back.learn(1)
    assert back.epoch == 3


def test_compare_sample_draws_the_models_actions_reproducibly(tmp_path, capsys):
    import json

    from hpcsched.cli import main

    model = PPO(tiny_config())
    model.save(tmp_path / "m.pt")
    args = ["compare", "lublin-1", "--policies", f"dbf:{tmp_path}/m.pt,lcfs", "--backfill", "none",
            "--episodes", "3", "--jobs", "40", "--json"]

    def rows(*extra):
        assert main(args + list(extra)) == 0
        return {r["policy"]: r for r in json.loads(capsys.readouterr().out)}

    greedy_rows, sampled, again, other = rows(), rows("--sample"), rows("--sample"), rows(
        "--sample", "--seed", "1")
    dbf = f"dbf:{tmp_path}/m.pt"
    assert sampled[dbf]["actions"] == "sampled" and "actions" not in greedy_rows[dbf]
    assert "actions" not in sampled["lcfs"]  # a heuristic has no distribution
    assert sampled["lcfs"]["wait"] == greedy_rows["lcfs"]["wait"]
    # the draws change the schedule, and are the same for the same seed
    assert sampled[dbf]["wait"] != greedy_rows[dbf]["wait"]
    assert again[dbf] == sampled[dbf]
    assert other[dbf]["wait"] != sampled[dbf]["wait"]


def test_the_masked_reading_of_an_unmasked_model_is_the_masked_envs_schedule(tmp_path):
    """`dbf:PATH@masked`: a model trained without the mask decides through it, exactly as the
    environment with ``mask=True`` has the same actor decide; and an actor that prefers a job
    that does not fit no longer waits behind it."""
    from hpcsched.experiments.policyspec import resolve_policy

    rows = [(0, 100, 2, 200), (0, 50, 3, 60), (10, 20, 1, 40), (10, 30, 4, 80), (15, 5, 1, 10),
            (40, 70, 2, 90), (41, 10, 1, 10), (60, 200, 4, 200), (61, 30, 2, 30), (62, 1, 1, 5)]
    prepared = prepare(table(rows, 4), "standard")
    env = DBFEnv(prepared, window=3, tail=1, episode_jobs=7, mask=True)
    differs = 0
    for seed in range(4):
        model = PPO(DBFConfig(window=3, tail=1, hidden=(32,), mask=False, seed=seed))
        actor = biased_actor(4 + 9, 3, seed, pick=0.5)
        model.policy = actor  # the hand-built cluster's 4 cores (the config's trace has 256)
        model.save(tmp_path / f"m{seed}.pt")
        metrics, env_start = env_episode(env, actor, 0)
        masked = resolve_policy(f"dbf:{tmp_path}/m{seed}.pt@masked", prepared)
        assert masked.mask and run_episode(prepared, masked, 0, episode_jobs=7) == metrics
        plain = resolve_policy(f"dbf:{tmp_path}/m{seed}.pt", prepared)
        assert not plain.mask
        differs += run_episode(prepared, plain, 0, episode_jobs=7) != metrics
    assert differs > 0  # the reading matters for some of these actors
    with pytest.raises(ValueError, match="unknown reading 'greedy'.*@masked"):
        resolve_policy(f"dbf:{tmp_path}/m0.pt@greedy", prepared)


def test_validating_through_the_mask_scores_the_masked_reading(tmp_path, capsys):
    """`train dbf --validate-masked`: best.pt is chosen on the reading `dbf:PATH@masked` uses; the
    validation's score is exactly that reading's mean AWT on the validation episodes, and for an
    actor that prefers slots whether or not their job fits it differs from the unmasked score."""
    import json

    from hpcsched.cli import main
    from hpcsched.experiments.dbf_training import DbfValidation
    from hpcsched.experiments.policyspec import resolve_policy

    config = DBFConfig(window=4, tail=1, episode_jobs=40, hidden=(32,))
    model = PPO(config)
    model.policy = biased_actor(256 + 3 * 4, 4, seed=1, pick=3.0)  # Lublin-1's 256 cores
    model.save(tmp_path / "m.pt")
    masked, plain = DbfValidation(config, 3, masked=True), DbfValidation(config, 3)
    assert masked.mask and not plain.mask and masked.starts == plain.starts
    prepared = masked.prepared
    for validation, suffix in ((masked, "@masked"), (plain, "")):
        policy = resolve_policy(f"dbf:{tmp_path}/m.pt{suffix}", prepared)
        engine = np.mean([run_episode(prepared, policy, s, episode_jobs=40)["wait"]
                          for s in validation.starts])
        assert validation.score(model) == pytest.approx(engine, rel=1e-12)
    assert masked.score(model) != plain.score(model)
    # a masked run is validated through its mask whatever the option says
    assert DbfValidation(tiny_config(mask=True), 3).mask

    out = tmp_path / "run"
    assert main(["train", "dbf", "--out", str(out), "--window", "4", "--tail", "1",
                 "--episode-jobs", "40", "--num-envs", "2", "--episodes", "2",
                 "--validate-every", "1", "--validate-episodes", "2", "--validate-masked"]) == 0
    assert json.loads((out / "config.json").read_text())["run_options"]["validate_masked"] is True
    assert "through the mask" in capsys.readouterr().err
    # resuming keeps it, and refuses to change it
    assert main(["train", "dbf", "--out", str(out), "--episodes", "4", "--resume"]) == 0
    assert "through the mask" not in capsys.readouterr().err  # said once, at the start
    assert json.loads((out / "config.json").read_text())["run_options"]["validate_masked"] is True


def test_keep_validated_keeps_the_models_of_the_logged_validations(tmp_path):
    """`train dbf --keep-validated`: validated/epoch-N.pt is the model its log's val_wait scored."""
    import csv

    from hpcsched.cli import main
    from hpcsched.experiments.dbf_training import DbfValidation

    out = tmp_path / "run"
    args = ["train", "dbf", "--out", str(out), "--window", "4", "--tail", "1", "--episode-jobs",
            "40", "--num-envs", "2", "--validate-every", "2",
            "--validate-episodes", "2"]
    assert main(args + ["--episodes", "6", "--keep-validated"]) == 0  # 3 updates
    with open(out / "log.csv") as f:
        logged = {int(r["epoch"]): float(r["val_wait"]) for r in csv.DictReader(f)
                  if r["val_wait"]}
    assert sorted(logged) == [2, 3]
    assert sorted(p.name for p in (out / "validated").iterdir()) == ["epoch-2.pt", "epoch-3.pt"]
    for n, wait in logged.items():
        model = PPO.load(out / "validated" / f"epoch-{n}.pt")
        assert model.epoch == n
        assert DbfValidation(model.config, 2).score(model) == pytest.approx(wait, rel=1e-12)



def test_init_starts_a_new_run_from_another_models_networks(tmp_path, capsys):
    """`train dbf --init FILE`: the new run's networks start as the file's (actor and critic from
    a full file, the actor alone from a slim one), with its own settings (here the mask and a
    rate the file was not trained with), epoch 0 and new optimisers; the starting actor is
    validated and counts for best.pt; the option is kept with the run and another one refused on
    resume; a file whose networks read another window is refused by name."""
    import json
    from dataclasses import replace

    from hpcsched.cli import main
    from hpcsched.experiments.dbf_training import warm_start
    from hpcsched.modelfile import read_model, slim

    small = ["--window", "4", "--tail", "1", "--episode-jobs", "30", "--num-envs", "2"]
    first = tmp_path / "first" / "model.pt"
    assert main(["train", "dbf", "--out", str(first.parent), *small, "--episodes", "4",
                 "--validate-every", "0", "--seed", "3"]) == 0
    source = read_model(first)
    trained = PPO.load(first).config
    # the loading itself: weights equal, optimisers and epoch new, the run's own settings kept
    model = PPO(replace(trained, mask=True, pi_lr=3e-5))
    assert warm_start(model, first) == (2, True)
    for part in ("policy", "value"):
        mine = getattr(model, part).state_dict()
        assert all(torch.equal(mine[k], v) for k, v in source["weights"][part].items()), part
    assert model.epoch == 0 and model.pi_optimizer.state_dict()["state"] == {}
    assert model.config.mask and model.config.pi_lr == 3e-5
    slim(first, tmp_path / "slim.pt")  # the actor alone
    fresh = PPO(trained)
    assert warm_start(fresh, tmp_path / "slim.pt") == (2, False)
    mine = fresh.policy.state_dict()
    assert all(torch.equal(mine[k], v) for k, v in source["weights"]["policy"].items())
    assert not all(torch.equal(fresh.value.state_dict()[k], v)
                   for k, v in source["weights"]["value"].items())
    with pytest.raises(ValueError, match=r"window \(4 there, 6 here\)"):
        warm_start(PPO(replace(trained, window=6)), first)
    # the command: said, validated before the first update, kept with the run
    out = tmp_path / "tuned"
    args = ["train", "dbf", "--out", str(out), *small, "--mask", "--lr", "3e-5",
            "--validate-every", "1", "--validate-episodes", "2", "--init", str(first)]
    assert main(args + ["--episodes", "2"]) == 0  # one update
    err = capsys.readouterr().err
    assert f"starting from the networks of {first} (its update 2; new optimisers)" in err
    assert "starting greedy actor: validation AWT" in err
    run = PPO.load(out / "model.pt")
    start = next(h["val_wait"] for h in run.history if h["epoch"] == 0)  # before any update
    assert run.epoch == 1 and run.config.mask and run.config.pi_lr == 3e-5
    assert json.loads((out / "config.json").read_text())["run_options"]["init"] == str(first)
    after = next(h["val_wait"] for h in run.history if h["epoch"] == 1)
    best = read_model(out / "best.pt")
    if after < start:  # the update improved on the start: best.pt is it
        assert best["epoch"] == 1
    else:  # else the starting actor, the file's own weights, stays best.pt
        assert best["epoch"] == 0
        assert all(torch.equal(best["weights"]["policy"][k], v)
                   for k, v in source["weights"]["policy"].items())
    assert main(["train", "dbf", "--out", str(out), "--resume", "--episodes", "4",
                 "--init", str(tmp_path / "slim.pt")]) != 0
    assert "init" in capsys.readouterr().err
    assert main(["train", "dbf", "--out", str(out), "--resume", "--episodes", "4"]) == 0
    assert "starting from" not in capsys.readouterr().err  # a resumed run's networks are its own
    assert main(["train", "dbf", "--out", str(tmp_path / "bad"), "--window", "6", "--tail", "1",
                 "--episode-jobs", "30", "--num-envs", "2", "--episodes", "2",
                 "--init", str(first)]) != 0
    assert "window (4 there, 6 here)" in capsys.readouterr().err
