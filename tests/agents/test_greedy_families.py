"""The greedy rule (`hpcsched.agents.greedy`: float64 scores, rounded to float32, the first maximum
among the allowed actions) in SchedInspector, DRAS (PG, DQL, Decima-PG) and DeepRM, at evaluation
and in the greedy validation that chooses `best.pt`.

As `test_greedy.py` does for RLScheduler: noise of 1e-13 relative on every float64 score (100x what
another BLAS or CPU changes) and another float64 arithmetic path (torch's or numpy's) change no
decision of the shipped models on windows / jobsets of their experiments; and each test is shown to
be able to fail: DRAS's scores tie exactly (identical jobs), so float32-sized noise changes its
picks; the shipped inspectors and DeepRM models have no decision closer than 7.3e-6 and 5.4e-5
relative on their experiments, so the noise that changes one of their schedules is larger (on the
windows / jobset that hold their closest decisions).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from hpcsched.agents.greedy import Float64Copy, decision_scores, torch_float64
from hpcsched.agents.inspector import InspectorPolicyNet
from hpcsched.agents.inspector_policy import InspectedPolicy, load_inspector
from hpcsched.experiments.policyspec import PRETRAINED


def _noise(eps: float, seed: int):
    """x -> x * (1 + eps * u), u uniform in [-1, 1]: what another machine's arithmetic could do."""
    rng = np.random.default_rng(seed)
    return lambda x: x * (1.0 + eps * rng.uniform(-1.0, 1.0, size=np.shape(x)))


# == SchedInspector =================================================================================


class _NoisyInspector(InspectedPolicy):
    def __init__(self, base: InspectedPolicy, eps: float, seed: int = 0):
        self.__dict__.update(base.__dict__)
        self._noisy = _noise(eps, seed)

    def logits(self, obs):
        return self._noisy(super().logits(obs))


class _TorchInspector(InspectedPolicy):
    """The same inspector scored by torch's float64 forward instead of numpy's."""

    def __init__(self, base: InspectedPolicy, net: torch.nn.Module):
        self.__dict__.update(base.__dict__)
        self._net64 = torch_float64(net)

    def logits(self, obs):
        with torch.no_grad():
            return self._net64(torch.from_numpy(np.asarray(obs, dtype=np.float64))).numpy()


# (protocol, trace, base, backfill, window indices of the protocol's 50): window 14 of Lublin-1 SJF
# (our protocol) holds the closest decision of any shipped inspector on either protocol's table
# (7.3e-6 relative, |l0 - l1| / max |l|); window 46 the closest of the authors' protocol (7.0e-5),
# window 32 of Lublin-1 F1 with backfilling the closest with backfilling (7.9e-5)
INSPECT_CASES = [("ours", "lublin-1", "sjf", "none", (0, 14)),
                 ("code", "lublin-1", "sjf", "none", (0, 46)),
                 ("code", "lublin-1", "f1", "schedgym", (0, 32))]


@pytest.fixture(scope="module")
def inspect_setups():
    from hpcsched.sim.run import estimated_trace
    from hpcsched.experiments.schedinspector import WINDOWS, model_name, protocol_windows

    out = {}
    for draw, trace, base, backfill, picks in INSPECT_CASES:
        profile = WINDOWS[draw][0]
        prep = estimated_trace(trace, None, profile)
        starts = protocol_windows(prep, draw, 50, 256)
        path = PRETRAINED / f"{model_name(trace, base, backfill)}.pt"
        policy = load_inspector(path, norm=prep.report.norm, profile=profile)
        net = InspectorPolicyNet()
        net.load_state_dict(torch.load(path, weights_only=True)["weights"]["policy"])
        out[(draw, trace, base)] = (prep, policy, net, backfill, [starts[i] for i in picks])
    return out


def _inspected(prep, policy, backfill, starts):
    from hpcsched.sim.run import simulate

    return [simulate(prep, policy, backfill=backfill, start=s, jobs=256).start.copy()
            for s in starts]


@pytest.mark.parametrize("case", INSPECT_CASES, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}-{c[3]}")
def test_inspector_schedules_do_not_depend_on_the_arithmetic(inspect_setups, case):
    prep, policy, net, backfill, starts = inspect_setups[case[:3]]
    want = _inspected(prep, policy, backfill, starts)
    for got in (*(_inspected(prep, _NoisyInspector(policy, 1e-13, seed), backfill, starts)
                  for seed in (0, 1)),
                _inspected(prep, _TorchInspector(policy, net), backfill, starts)):
        for a, b in zip(want, got):
            np.testing.assert_array_equal(a, b)


def test_inspector_scores_are_float64(inspect_setups):
    _, policy, net, _, _ = inspect_setups[("ours", "lublin-1", "sjf")]
    obs = np.random.default_rng(0).random((64, 7)).astype(np.float32)
    got = np.array([policy.logits(o) for o in obs])
    assert got.dtype == np.float64
    # float32 arithmetic would be ~1e-7 off
    np.testing.assert_allclose(got, _TorchInspector(policy, net).logits(obs), rtol=1e-12)


def test_inspector_noise_above_its_closest_decisions_does_change_a_schedule(inspect_setups):
    """The test above can fail: at 1e-4 (above the 7.3e-6 of Lublin-1 SJF's closest decision, on
    window 14) the same noise changes a schedule."""
    prep, policy, _, backfill, starts = inspect_setups[("ours", "lublin-1", "sjf")]
    want = _inspected(prep, policy, backfill, starts)
    # a flipped decision does not always move a start (a rejected job that could not start yet
    # often starts at the same time), so ten draws: two of them change a schedule
    changed = sum(not np.array_equal(a, b) for seed in range(10)
                  for a, b in zip(want, _inspected(prep, _NoisyInspector(policy, 1e-4, seed),
                                                   backfill, starts)))
    assert changed > 0


def _inspector_with_logits(logits) -> InspectedPolicy:
    policy = InspectedPolicy(InspectorPolicyNet(), None, {})
    policy.logits = lambda obs: np.asarray(logits, dtype=np.float64)
    return policy


def test_the_inspector_accepts_on_a_tie_and_ties_are_at_float32_resolution():
    both = np.array([True, True])
    assert _inspector_with_logits([0.5, 0.5]).act(np.zeros(7), both) == 0
    # 1 and 1 + 1e-9 are one float32: a tie, accepted, though reject is larger in float64
    assert _inspector_with_logits([1.0, 1.0 + 1e-9]).act(np.zeros(7), both) == 0
    assert _inspector_with_logits([1.0, 1.0 + 1e-6]).act(np.zeros(7), both) == 1
    assert _inspector_with_logits([1.0, 2.0]).act(np.zeros(7), np.array([True, False])) == 0


def test_the_inspector_trainers_greedy_predict_follows_the_rule():
    from hpcsched.agents.inspector import InspectorConfig
    from hpcsched.agents.ppo import PPO

    model = PPO(InspectorConfig(n_envs=1))
    out = model.policy.net[-1]
    with torch.no_grad():  # both logits 0.5 whatever the observation: a tie everywhere
        out.weight.zero_()
        out.bias.fill_(0.5)
    obs = np.random.default_rng(0).random((4, 7)).astype(np.float32)
    mask = np.array([[True, True], [True, True], [False, True], [True, False]])
    assert model.predict(obs, mask).tolist() == [0, 0, 1, 0]
    with torch.no_grad():
        out.bias.copy_(torch.tensor([0.5, 0.5 + 1e-6]))  # reject ahead by more than float32 rounds
    assert model.predict(obs, mask).tolist() == [1, 1, 1, 0]
    # near-ties: reject's weights one float32 step above accept's; the trainer's greedy actions are
    # the evaluation policy's, where float32 arithmetic decides otherwise on some observations
    with torch.no_grad():
        out.weight.copy_(torch.from_numpy(np.random.default_rng(2).normal(0, 1, (2, 8)).astype(np.float32)))
        out.weight[1] = torch.from_numpy(np.nextafter(out.weight[0].numpy(), np.float32(np.inf)))
        out.bias.fill_(0.1)
    obs = np.random.default_rng(1).normal(0.0, 3.0, (2000, 7)).astype(np.float32)
    mask = np.ones((2000, 2), dtype=bool)
    policy = InspectedPolicy(model.policy, None, {})
    want = np.array([policy.act(o, m) for o, m in zip(obs, mask)])
    np.testing.assert_array_equal(model.predict(obs, mask), want)
    with torch.no_grad():
        in_float32 = model.policy(torch.from_numpy(obs)).argmax(-1).numpy()
    assert np.sum(in_float32 != want) > 0


# == DRAS ===========================================================================================
def _leaky(x):
    return np.where(x > 0, x, 0.01 * x)


class _NumpyQNet:
    """`dras_nets.QNet`'s forward written again in numpy float64 (another order of additions)."""

    def __init__(self, net):
        p = {k: v.detach().numpy().astype(np.float64) for k, v in net.state_dict().items()}
        self.p, self.nodes = p, net.nodes

    def __call__(self, obs, mask):
        p = self.p
        c = np.asarray(obs, dtype=np.float64) @ p["conv.weight"][0] + p["conv.bias"][0]
        w = (c.size - self.nodes) // 2
        x = np.concatenate([c[: 2 * w].reshape(w, 2),
                            np.broadcast_to(c[2 * w:], (w, self.nodes))], axis=1)  # [W, 2 + N]
        h = _leaky(x @ p["fc1.weight"].T)
        q = (_leaky(h @ p["fc2.weight"].T) @ p["out.weight"].T)[:, 0] + p["out.bias"][0]
        return np.where(mask, q, -np.inf)


# (model, trace, reward, jobs from the start of the test period)
DRAS_CASES = [("dras-dql-hpc2n-capacity", "hpc2n", "capacity", 400),
              ("dras-pg-hpc2n-capacity", "hpc2n", "capacity", 400),
              ("dras-dql-ricc", "ricc", "capability", 300),
              ("decima-pg-ricc", "ricc", "capability", 300)]


@pytest.fixture(scope="module")
def dras_setups():
    from hpcsched.experiments.dras_training import DrasRunConfig, load_agent, make_env, prepared_for
    from hpcsched.workload.jobsets import split

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as the experiment runs them
    prepared, out = {}, {}
    for name, trace, reward, jobs in DRAS_CASES:
        agent, rc = load_agent(PRETRAINED / f"{name}.pt")
        config = DrasRunConfig(algo=rc.algo, trace=trace, reward=reward, window=rc.window)
        if trace not in prepared:
            prepared[trace] = prepared_for(config)
        test = split(prepared[trace].jobs, config.train_days, config.validate_days,
                     config.test_days)[2]
        out[name] = (agent, make_env(config, prepared[trace]), test.window(0, jobs))
    yield out
    torch.set_num_threads(threads)


def _dras_picks(agent, env, jobs, scores=None):
    """(the slots picked, the start times) of a greedy, frozen episode; `scores(obs, mask)`, when
    given, replaces the agent's float64 scores. Also the rounded scores of every pick."""
    from hpcsched.agents.dras_episode import run_episode

    picks, seen = [], []
    own_scores, predict = agent.greedy_scores, agent.predict

    def recording(obs, mask, deterministic=True):
        assert deterministic
        a = predict(obs, mask, deterministic)
        picks.append(a)
        seen.append((np.where(mask, decision_scores(own_scores(obs, mask)), -np.inf)))
        return a

    agent.predict = recording
    if scores is not None:
        agent.greedy_scores = scores
    try:
        result = run_episode(agent, env, jobs, learn=False, explore=False)["result"]
    finally:
        del agent.predict
        if scores is not None:
            del agent.greedy_scores
    return picks, result.start.copy(), seen


@pytest.mark.parametrize("name", [c[0] for c in DRAS_CASES])
def test_dras_picks_do_not_depend_on_the_arithmetic(dras_setups, name):
    agent, env, jobs = dras_setups[name]
    want, start, _ = _dras_picks(agent, env, jobs)
    own = agent.greedy_scores
    for scores in (*(lambda o, m, f=_noise(1e-13, s): f(own(o, m)) for s in (0, 1)),
                   _NumpyQNet(agent.net)):
        picks, got_start, _ = _dras_picks(agent, env, jobs, scores)
        assert picks == want
        np.testing.assert_array_equal(got_start, start)


def test_dras_numpy_and_torch_float64_scores_agree_to_float64_precision(dras_setups):
    agent, env, jobs = dras_setups["dras-dql-ricc"]
    obs, info = env.reset(options={"jobs": jobs})
    mask = info["action_mask"]
    a, b = agent.greedy_scores(obs, mask), _NumpyQNet(agent.net)(obs, mask)
    assert a.dtype == np.float64
    np.testing.assert_allclose(a[mask], b[mask], rtol=1e-12)


def test_dras_ties_go_to_the_first_slot_and_float32_noise_breaks_them(dras_setups):
    """The shipped models' scores tie exactly (identical jobs in the window): every such pick is
    the first of the tied slots (the oldest job), and float32-sized noise, which breaks the ties
    at random, changes the picks, so the test above can fail."""
    ties = changed = 0
    for name in ("dras-dql-hpc2n-capacity", "dras-pg-hpc2n-capacity", "dras-dql-ricc"):
        agent, env, jobs = dras_setups[name]
        picks, _, seen = _dras_picks(agent, env, jobs)
        for a, s in zip(picks, seen):
            top = np.flatnonzero(s == s.max())
            assert a == top[0]
            ties += top.size > 1
        own = agent.greedy_scores
        noisy, _, _ = _dras_picks(agent, env, jobs,
                                  lambda o, m, f=_noise(3e-7, 0): f(own(o, m)))
        changed += noisy != picks
    assert ties > 50 and changed > 0


def _dras_agents(rows: int = 2 * 50 + 8):
    from hpcsched.agents.dql import DQLConfig, DrasDQL
    from hpcsched.agents.dras_pg import DrasPG, PGConfig

    return [DrasDQL(DQLConfig(fc1=16, fc2=8), rows),
            DrasPG(PGConfig(net="per_job", fc1=16, fc2=8), rows),
            DrasPG(PGConfig(fc1=16, fc2=8), rows)]


def test_dras_equal_scores_for_two_slots_the_first_wins():
    rng = np.random.default_rng(0)
    obs = rng.random((2 * 50 + 8, 2)).astype(np.float32)
    for agent in _dras_agents():
        with torch.no_grad():  # every slot scores the output bias alone: all equal
            agent.net.out.weight.zero_()
        mask = np.zeros(50, dtype=bool)
        mask[[7, 3, 30]] = True
        assert agent.predict(obs, mask) == 3
        with torch.no_grad():  # now slot k scores 0.25 + 1e-10 k: one float32, still a tie
            agent.net.out.bias.fill_(0.25)
        base = agent.greedy_scores
        agent.greedy_scores = lambda o, m: base(o, m) + 1e-10 * np.arange(50)
        assert agent.predict(obs, mask) == 3
        agent.greedy_scores = lambda o, m: base(o, m) + 1e-6 * np.arange(50)
        assert agent.predict(obs, mask) == 30


def test_dras_greedy_scores_follow_training_and_loading():
    """The float64 copy the greedy picks use is made again when the weights change: an optimiser
    step between two validations, or `load_state_dict`."""
    rng = np.random.default_rng(1)
    rows = 2 * 50 + 8
    obs = rng.random((rows, 2)).astype(np.float32)
    mask = np.ones(50, dtype=bool)
    for agent, other in zip(_dras_agents(rows), _dras_agents(rows)):
        before = agent.greedy_scores(obs, mask)
        with torch.no_grad():
            for p in other.net.parameters():
                p.add_(torch.from_numpy(rng.normal(0, 0.5, tuple(p.shape)).astype(np.float32)))
        agent.net.load_state_dict(other.net.state_dict())
        after = agent.greedy_scores(obs, mask)
        want = torch_float64(other.net)(torch.from_numpy(obs.astype(np.float64))[None],
                                        torch.from_numpy(mask)[None])[0].detach().numpy()
        assert not np.allclose(before, after)
        np.testing.assert_array_equal(after, want)
        for _ in range(40):  # remember picks and learn from them (DQL: enough for a batch)
            a = agent.predict(obs, mask, deterministic=False)
            agent.observe(obs, mask, a, 1.0, obs, mask, False)
        assert agent.update()
        np.testing.assert_array_equal(
            agent.greedy_scores(obs, mask),
            torch_float64(agent.net)(torch.from_numpy(obs.astype(np.float64))[None],
                                     torch.from_numpy(mask)[None])[0].detach().numpy())


def test_dras_exploring_picks_draw_from_the_float32_network_as_before():
    """Training's sampled (PG) and epsilon-greedy (DQL) picks are unchanged: float32 scores."""
    rng = np.random.default_rng(2)
    rows = 2 * 50 + 8
    obs = rng.random((rows, 2)).astype(np.float32)
    mask = rng.random(50) < 0.5
    mask[0] = True
    dql, pg, _ = _dras_agents(rows)
    with torch.no_grad():
        q = dql.net(torch.from_numpy(obs)[None], torch.from_numpy(mask)[None])[0].numpy()
    dql.epsilon = 0.0  # exploit: the argmax of the float32 Q-values
    assert q.dtype == np.float32
    assert dql.predict(obs, mask, deterministic=False) == int(np.argmax(q))
    with torch.no_grad():
        logits = pg.net(torch.from_numpy(obs)[None], torch.from_numpy(mask)[None])[0].numpy()
    p = np.exp(logits - logits.max())
    p /= p.sum()
    pg.rng, ref = np.random.default_rng(5), np.random.default_rng(5)
    draws = [pg.predict(obs, mask, deterministic=False) for _ in range(20)]
    assert draws == [int(ref.choice(p.size, p=p)) for _ in range(20)]
    assert len(set(draws)) > 1
    # training never scores in float64: no float64 copy of the network was made
    assert dql._net64._net is None and pg._net64._net is None


def test_float64_copy_is_kept_until_the_weights_change():
    net = torch.nn.Linear(3, 2)
    copy = Float64Copy()
    first = copy(net)
    assert copy(net) is first and first.weight.dtype == torch.float64
    with torch.no_grad():
        net.weight.mul_(2.0)
    second = copy(net)
    assert second is not first
    torch.testing.assert_close(second.weight, net.weight.double())


# == DeepRM =========================================================================================
class _NoisyForward:
    def __init__(self, forward, eps: float, seed: int = 0):
        self.forward, self._noisy = forward, _noise(eps, seed)

    def logits(self, images):
        return self._noisy(self.forward.logits(images))


class _TorchForward:
    def __init__(self, net):
        self.net = torch_float64(net)

    def logits(self, images):
        with torch.no_grad():
            return self.net(torch.from_numpy(np.asarray(images, dtype=np.float64))).numpy()


# (model, load, jobsets of the sweep's 100 unseen ones at that load): jobset 84 at 170% holds the
# closest decision of any shipped DeepRM model on the sweep (5.4e-5 relative, between the two
# best allowed logits)
DEEPRM_CASES = [("deeprm-load-70", 0.7, list(range(10))),
                ("deeprm-load-110", 1.1, list(range(10))),
                ("deeprm-load-150", 1.7, [84])]


def _deeprm(name, load, picks):
    from hpcsched.agents.deeprm import DeepRM
    from hpcsched.agents.deeprm_policy import load_deeprm_policy
    from hpcsched.workload.deeprm import TEST_SEED, generate, rate_for_load

    jobs = generate(100, rate_for_load(load), 50, seed=TEST_SEED).take(picks)
    path = PRETRAINED / f"{name}.pt"
    return load_deeprm_policy(path), DeepRM.load(path).net, jobs


def _grid_starts(policy, jobs, forward=None):
    from hpcsched.sim.discrete_batch import DiscreteBatch, run_batch

    own = policy.forward
    policy.forward = forward or own
    try:
        return run_batch(DiscreteBatch(), jobs, policy, max_decisions=20_000).start.copy()
    finally:
        policy.forward = own


@pytest.mark.parametrize("name,load,picks", DEEPRM_CASES, ids=[c[0] for c in DEEPRM_CASES])
def test_deeprm_schedules_do_not_depend_on_the_arithmetic(name, load, picks):
    policy, net, jobs = _deeprm(name, load, picks)
    images = (np.random.default_rng(0).random((8, 4460)) < 0.3).astype(np.float32)
    got = policy.forward.logits(images)
    assert got.dtype == np.float64  # float32 arithmetic would be ~1e-7 off
    np.testing.assert_allclose(got, _TorchForward(net).logits(images), rtol=1e-12, atol=1e-15)
    want = _grid_starts(policy, jobs)
    for forward in (_NoisyForward(policy.forward, 1e-13, 0), _NoisyForward(policy.forward, 1e-13, 1),
                    _TorchForward(net)):
        np.testing.assert_array_equal(_grid_starts(policy, jobs, forward), want)


def test_deeprm_noise_above_its_closest_decision_does_change_a_schedule():
    policy, _, jobs = _deeprm(*DEEPRM_CASES[2])
    want = _grid_starts(policy, jobs)
    assert any(not np.array_equal(_grid_starts(policy, jobs, _NoisyForward(policy.forward, 2e-4,
                                                                           seed)), want)
               for seed in range(4))


def test_deeprm_ties_go_to_the_lowest_action_and_void_comes_last():
    from hpcsched.agents.deeprm import DeepRM, DeepRMConfig
    from hpcsched.sim.discrete_batch import DiscreteBatch
    from hpcsched.workload.deeprm import generate, rate_for_load

    model = DeepRM(DeepRMConfig(jobsets=2, validate_jobsets=0))
    with torch.no_grad():  # every action scores 0: all tie
        model.net[2].weight.zero_()
        model.net[2].bias.zero_()
    policy = model.policy()
    batch = DiscreteBatch()
    batch.reset(generate(8, rate_for_load(1.5), 50, seed=3))
    steps = 0
    while not batch.done.all() and steps < 200:
        live = ~batch.done
        act = policy.act(batch)
        mask = batch.action_mask()
        assert mask[live][:, :-1].any(axis=1).all()  # a slot to pick, so the lowest is not void
        np.testing.assert_array_equal(act[live], np.argmax(mask[live], axis=1))
        batch.step(act)
        steps += 1
    assert steps > 20
    # near-ties: scores 1e-9 apart are one float32, a tie (the lowest wins); 1e-6 apart are not;
    # void (the last action) wins a tie only when no slot is allowed
    from hpcsched.agents.deeprm import choose

    logits = np.array([[1.0, 1.0 + 1e-9, 1.0], [1.0, 1.0 + 1e-6, 0.0]])
    assert choose(logits, None, None, True).tolist() == [0, 1]
    assert choose(logits, np.array([[False, True, True]] * 2), None, True).tolist() == [1, 1]
    assert choose(logits, np.array([[False, False, True]] * 2), None, True).tolist() == [2, 2]


def test_deeprm_greedy_validation_scores_in_float64_and_training_samples_in_float32(monkeypatch):
    """`best.pt` is chosen on `DeepRM.evaluate` (greedy: float64, the same schedules as the
    sweep's policy); the sampled rollouts of an update keep the network's float32."""
    import hpcsched.agents.deeprm as deeprm
    from hpcsched.sim.discrete_batch import DiscreteBatch, run_batch

    model = deeprm.DeepRM.load(PRETRAINED / "deeprm-load-70.pt")
    seen = []
    real = deeprm.rollout

    def spy(policy, *args, **kwargs):
        seen.append((policy.dtype, kwargs.get("greedy", False)))
        return real(policy, *args, **kwargs)

    monkeypatch.setattr(deeprm, "rollout", spy)
    jobs = model.validation_jobs().take(list(range(10)))
    validated = model.evaluate(jobs)
    assert seen == [(np.float64, True)]
    np.testing.assert_array_equal(
        validated.start, run_batch(DiscreteBatch(), jobs, model.policy(), max_decisions=4000).start)
    model.config.rollouts = 2
    model.update(np.array([0]))
    assert seen[1] == (np.float32, False)
    assert model.policy(sample=True).forward.dtype == np.float32
