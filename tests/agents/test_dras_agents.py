"""DRAS's networks and agents: the paper's parameter counts (Table III, spec section 17), the DQL
network's shared-node arithmetic against the paper's one-job-at-a-time form, and learning checks on
a bandit whose best slot is known; their model files."""

import numpy as np
import pytest
import torch

from hpcsched.agents.dql import DQLConfig, DrasDQL
from hpcsched.agents.dras_nets import PolicyNet, QNet, paper_parameter_counts, scaled_sizes
from hpcsched.agents.nets import count_parameters
from hpcsched.agents.dras_pg import DrasPG, PGConfig


def test_paper_parameter_counts():
    counts = paper_parameter_counts()
    assert counts["theta_pg"] == 21_890_053
    assert counts["theta_dql"] == 21_449_004
    assert counts["cori_pg"] == 161_960_053
    # the paper prints 161,764,004 for Cori DQL, which is the count of a 12,176-row input
    assert counts["cori_dql"] == 160_784_004
    with torch.device("meta"):
        assert count_parameters(QNet(12176 - 2, 10000, 4000)) == 161_764_004


def test_scaled_sizes_give_thetas_layers():
    assert scaled_sizes(4460) == (4000, 1000)


def test_qnet_window_equals_one_job_at_a_time():
    torch.manual_seed(0)
    w, nodes = 5, 7
    net = QNet(nodes, 16, 8)
    obs = torch.rand(3, 2 * w + nodes, 2)
    q = net(obs)
    for b in range(3):
        for i in range(w):
            one = torch.cat([obs[b, 2 * i:2 * i + 2], obs[b, 2 * w:]])[None]
            assert q[b, i].item() == pytest.approx(net.score_one(one).item(), abs=1e-5)


def test_qnet_scores_one_slot_like_the_window():
    torch.manual_seed(1)
    net = QNet(7, 16, 8)
    obs = torch.rand(4, 2 * 5 + 7, 2)
    slots = torch.tensor([0, 3, 4, 1])
    torch.testing.assert_close(net.score_slots(obs, slots),
                               net(obs).gather(1, slots[:, None]).squeeze(1))


def test_policy_masks_invalid_slots():
    net = PolicyNet(2 * 4 + 3, 8, 4, 4)
    mask = torch.tensor([[True, False, True, False]])
    logits = net(torch.rand(1, 11, 2), mask)
    assert torch.isinf(logits[0, 1]) and torch.isinf(logits[0, 3])


def bandit(agent, steps, w=4, nodes=3, best=2, rng=None):
    """Slot `best` pays 1, the others 0; every decision is its own episode."""
    rng = rng or np.random.default_rng(0)
    mask = np.ones(w, dtype=bool)
    for k in range(steps):
        obs = rng.random((2 * w + nodes, 2)).astype(np.float32)
        a = agent.predict(obs, mask, deterministic=False)
        agent.observe(obs, mask, a, float(a == best), obs, mask, True)
        if k % 10 == 9:
            agent.update()
    obs = rng.random((2 * w + nodes, 2)).astype(np.float32)
    return [agent.predict(rng.random((2 * w + nodes, 2)).astype(np.float32), mask)
            for _ in range(20)]


def test_pg_learns_the_paying_slot():
    agent = DrasPG(PGConfig(window=4, fc1=16, fc2=8, lr=1e-2), rows=11, seed=0)
    assert bandit(agent, 600) == [2] * 20


def test_dql_learns_the_paying_job():
    # the Q-network scores a job from its own rows and the nodes, whatever its slot: here the job
    # with the largest first feature pays 1
    w, nodes = 4, 3
    agent = DrasDQL(DQLConfig(window=w, fc1=32, fc2=16, lr=3e-3, batch=32, replay=2000,
                              epsilon_decay=0.97, gamma=0.0, gradient_steps=2),
                   rows=2 * w + nodes, seed=0)
    rng = np.random.default_rng(0)
    mask = np.ones(w, dtype=bool)

    def state():
        return rng.random((2 * w + nodes, 2)).astype(np.float32)

    for k in range(1500):
        obs = state()
        a = agent.predict(obs, mask, deterministic=False)
        best = int(np.argmax(obs[0:2 * w:2, 0]))
        agent.observe(obs, mask, a, float(a == best), obs, mask, True)
        if k % 10 == 9:
            agent.update()
    hits = 0
    for _ in range(50):
        obs = state()
        hits += agent.predict(obs, mask) == int(np.argmax(obs[0:2 * w:2, 0]))
    assert hits >= 40  # chance: 12.5 of 50
    assert agent.epsilon < 0.1


def test_state_round_trip():
    agent = DrasPG(PGConfig(window=4, fc1=16, fc2=8), rows=11, seed=0)
    bandit(agent, 30)
    again = DrasPG.from_state(agent.state())
    x = torch.rand(2, 11, 2)
    torch.testing.assert_close(agent.net(x), again.net(x))
    dql = DrasDQL(DQLConfig(window=4, fc1=16, fc2=8, batch=8), rows=11, seed=0)
    bandit(dql, 30)
    back = DrasDQL.from_state(dql.state())
    torch.testing.assert_close(dql.net(x), back.net(x))
    assert back.epsilon == dql.epsilon


def test_per_job_pg_learns_the_paying_job():
    # the per-job network follows a job's features whatever its slot (the paper's positional one
    # cannot): the job with the largest first feature pays 1
    w, nodes = 4, 3
    agent = DrasPG(PGConfig(window=w, fc1=32, fc2=16, lr=3e-3, net="per_job", gamma=0.0),
                   rows=2 * w + nodes, seed=0)
    rng = np.random.default_rng(0)
    mask = np.ones(w, dtype=bool)
    for k in range(3000):
        obs = rng.random((2 * w + nodes, 2)).astype(np.float32)
        a = agent.predict(obs, mask, deterministic=False)
        agent.observe(obs, mask, a, float(a == int(np.argmax(obs[0:2 * w:2, 0]))), obs, mask, True)
        if k % 20 == 19:
            agent.update()
    hits = 0
    for _ in range(50):
        obs = rng.random((2 * w + nodes, 2)).astype(np.float32)
        hits += agent.predict(obs, mask) == int(np.argmax(obs[0:2 * w:2, 0]))
    assert hits >= 35  # chance: 12.5 of 50


@pytest.mark.parametrize("cls, config", [(DrasPG, PGConfig(window=4, fc1=16, fc2=8)),
                                         (DrasDQL, DQLConfig(window=4, fc1=16, fc2=8, batch=8))])
def test_save_and_load_give_the_same_agent_and_refuse_another_kind(tmp_path, cls, config):
    from hpcsched.modelfile import ModelFileError

    agent = cls(config, rows=11, seed=0)
    bandit(agent, 30)
    agent.save(tmp_path / "a.pt", config={"algo": agent.algo}, episode=1)
    back = cls.load(tmp_path / "a.pt")
    assert back.updates == agent.updates > 0
    x = torch.rand(3, 11, 2)
    torch.testing.assert_close(agent.net(x), back.net(x))
    other = DrasDQL if cls is DrasPG else DrasPG
    with pytest.raises(ModelFileError, match=f"holds a DRAS-{agent.algo.upper()} agent, not a "
                                             f"{other.__name__}"):
        other.load(tmp_path / "a.pt")


def test_training_state_carries_the_random_state_and_the_replay():
    dql = DrasDQL(DQLConfig(window=4, fc1=16, fc2=8, batch=8, replay=50), rows=11, seed=0)
    bandit(dql, 30)
    again = DrasDQL.from_state(dql.state())
    again.restore_training_state(dql.training_state())
    assert again.replay.size == dql.replay.size == 30 and again.replay.at == dql.replay.at
    np.testing.assert_array_equal(again.replay.obs, dql.replay.obs)
    assert again.rng.random() == dql.rng.random()
