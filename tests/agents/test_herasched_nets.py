"""HeraSched's networks (`hpcsched.agents.herasched_nets`): the thesis's MLPs at Table 4.2's sizes,
and ours, whose parameter count does not depend on the window or the node count and whose scores
follow the nodes (and the jobs) when they are permuted."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from hpcsched.agents.herasched_nets import fits_layout, make_networks, thesis_hidden
from hpcsched.agents.nets import count_parameters
from hpcsched.cluster.load import load_cluster
from hpcsched.cluster.nodes import Cluster
from hpcsched.envs.hera_observation import JOB_FEATURES, HeraLayout
from hpcsched.envs.herasched import ALLOCATOR, SELECTOR, HeraSchedEnv

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def counts(nets) -> dict[str, int]:
    return {k: count_parameters(v) for k, v in nets.items()}


def test_the_default_parameter_count_depends_on_neither_window_nor_nodes():
    small = HeraLayout.of(Cluster.identical(3, 4), 4, 1)
    deeplearn = HeraLayout.of(load_cluster("spartan-deeplearn"), 100, 10)
    physical = HeraLayout.of(load_cluster("spartan-physical"), 512, 64)
    first = counts(make_networks("default", small))
    assert counts(make_networks("default", deeplearn)) == first
    assert counts(make_networks("default", physical)) == first
    assert sum(first.values()) < 50_000  # a laptop's network
    # and one model's weights load on another cluster's layout
    torch.manual_seed(0)
    nets = make_networks("default", small)
    other = make_networks("default", physical)
    for k in nets:
        other[k].load_state_dict(nets[k].state_dict())


def test_the_thesis_networks_are_table_4_2_s():
    deeplearn = HeraLayout.of(load_cluster("spartan-deeplearn"), 100, 10)
    physical = HeraLayout.of(load_cluster("spartan-physical"), 512, 64)
    assert thesis_hidden(deeplearn) == (2048, 1024)
    assert thesis_hidden(physical) == (4096, 2048, 1024)
    nets = make_networks("thesis", deeplearn)
    sizes = [(m.in_features, m.out_features) for m in nets["selector_policy"].net
             if isinstance(m, torch.nn.Linear)]
    assert sizes == [(1451, 2048), (2048, 1024), (1024, 101)]
    sizes = [(m.in_features, m.out_features) for m in nets["allocator_value"].net
             if isinstance(m, torch.nn.Linear)]
    assert sizes == [(1452, 2048), (2048, 1024), (1024, 1)]
    assert any(isinstance(m, torch.nn.Tanh) for m in nets["allocator_policy"].net)
    other = HeraLayout.of(load_cluster("spartan-deeplearn"), 64, 8)
    with pytest.raises(ValueError, match="reads 1,451 inputs .* this cluster and window give "
                                         "1,199"):
        fits_layout("thesis", nets, other)


def observations(env: HeraSchedEnv, agent: int, n: int, seed: int = 0):
    """`n` observations (with masks) where `agent` acts, under random valid actions."""
    rng = np.random.default_rng(seed)
    obs, info = env.reset(seed=seed)
    found = []
    while len(found) < n:
        if info["agent"] == agent:
            found.append((obs.copy(), info["action_mask"].copy()))
        obs, _, terminated, _, info = env.step(int(rng.choice(np.flatnonzero(
            info["action_mask"]))))
        if terminated:
            obs, info = env.reset()
    return found


def permuted_nodes(obs: np.ndarray, layout: HeraLayout, perm: np.ndarray) -> np.ndarray:
    """The observation with node i's block where node perm[i]'s was (equal block sizes)."""
    out = obs.copy()
    size = int(layout.node_base[1] - layout.node_base[0])
    blocks = [obs[b:b + size] for b in layout.node_base]
    for i, b in enumerate(layout.node_base):
        out[b:b + size] = blocks[perm[i]]
    return out


def test_permuting_the_nodes_permutes_the_allocator_s_scores():
    env = HeraSchedEnv(episode_jobs=300)  # Deeplearn: 30 nodes of equal blocks
    lay = env.layout
    torch.manual_seed(1)
    nets = make_networks("default", lay)
    perm = np.random.default_rng(0).permutation(lay.nodes)
    for obs, mask in observations(env, ALLOCATOR, 8):
        mask = mask[:lay.nodes]
        with torch.no_grad():
            logits = nets["allocator_policy"](torch.from_numpy(obs[None]),
                                              torch.from_numpy(mask[None]))[0].numpy()
            moved = nets["allocator_policy"](
                torch.from_numpy(permuted_nodes(obs, lay, perm)[None]),
                torch.from_numpy(mask[perm][None]))[0].numpy()
            values = [nets[k](torch.from_numpy(o[None])).item() for k in
                      ("allocator_value", "selector_value")
                      for o in (obs, permuted_nodes(obs, lay, perm))]
        np.testing.assert_allclose(moved, logits[perm], rtol=1e-5, atol=1e-5)
        assert values[0] == pytest.approx(values[1], abs=1e-5)  # the critics are invariant
        assert values[2] == pytest.approx(values[3], abs=1e-5)
        assert len(set(np.round(logits[mask], 4))) > 1  # the nodes are told apart


def test_permuting_the_window_permutes_the_selector_s_scores():
    env = HeraSchedEnv(episode_jobs=300)
    lay = env.layout
    torch.manual_seed(2)
    nets = make_networks("default", lay)
    for obs, mask in observations(env, SELECTOR, 8, seed=1):
        perm = np.random.default_rng(3).permutation(lay.window)  # slots, padding included
        jobs = obs[:JOB_FEATURES * lay.window].reshape(lay.window, JOB_FEATURES)
        moved = obs.copy()
        moved[:JOB_FEATURES * lay.window] = jobs[perm].reshape(-1)
        full = np.concatenate([perm, [lay.window]])
        with torch.no_grad():
            a = nets["selector_policy"](torch.from_numpy(obs[None]),
                                        torch.from_numpy(mask[None, :lay.window + 1]))[0]
            b = nets["selector_policy"](torch.from_numpy(moved[None]),
                                        torch.from_numpy(mask[:lay.window + 1][full][None]))[0]
        np.testing.assert_allclose(b.numpy(), a.numpy()[full], rtol=1e-5, atol=1e-5)


def test_the_allocator_reads_the_chosen_slot():
    env = HeraSchedEnv(episode_jobs=300)
    lay = env.layout
    torch.manual_seed(3)
    net = make_networks("default", lay)["allocator_policy"]
    obs, mask = observations(env, ALLOCATOR, 1)[0]
    other = obs.copy()
    other[-1] = (obs[-1] * lay.window % lay.window + 1) / lay.window  # another slot's job
    with torch.no_grad():
        a, b = (net(torch.from_numpy(o[None]), torch.ones(1, lay.nodes, dtype=torch.bool))
                for o in (obs, other))
    assert not torch.allclose(a, b)


def test_both_ways_of_reading_the_node_blocks_agree():
    """Equal placeholders on every node: the blocks are read as views; else gathered."""
    env = HeraSchedEnv(episode_jobs=300)
    torch.manual_seed(4)
    nets = make_networks("default", env.layout)
    batch = [o for o, _ in observations(env, ALLOCATOR, 6)]
    obs = torch.from_numpy(np.stack(batch))
    with torch.no_grad():
        fast = nets["allocator_policy"].encoder(obs)
        nets["allocator_policy"].encoder.parser.regular = False
        slow = nets["allocator_policy"].encoder(obs)
    assert nets["allocator_policy"].encoder.parser.layout.slots.tolist() == [4] * 30
    for a, b in zip(fast, slow):
        assert torch.equal(a, b)


@pytest.mark.parametrize("net", ["default", "thesis"])
def test_the_numpy_scores_are_the_modules_in_float64(net):
    """The engine policy's numpy actors (`herasched_numpy`) against the torch modules, float64;
    on a regular layout (Deeplearn) and on a mixed one (placeholders 8, 4, 2)."""
    import sys
    from pathlib import Path

    from hpcsched.agents.greedy import torch_float64
    from hpcsched.agents.herasched_numpy import numpy_scores
    from hpcsched.sim.run import prepare

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "sim"))
    from hetero_helpers import mixed_cluster, table

    rng = np.random.default_rng(5)
    jobs = [(float(s), float(rng.integers(5, 80)), int(rng.integers(1, 3)), 1,
             int(rng.integers(0, 9000)), 0) for s in np.sort(rng.integers(0, 100, 40))]
    mixed = HeraSchedEnv(prepare(table(jobs), "hpcsim", cluster=mixed_cluster()),
                         mixed_cluster(), window=6, tail=2)
    for env in (HeraSchedEnv(episode_jobs=300), mixed):
        lay = env.layout
        torch.manual_seed(6)
        nets = make_networks(net, lay, hidden=(48, 24))
        for agent, name, width in ((SELECTOR, "selector_policy", lay.window + 1),
                                   (ALLOCATOR, "allocator_policy", lay.nodes)):
            ours = numpy_scores(nets[name], lay)
            f64 = torch_float64(nets[name])
            for obs, _ in observations(env, agent, 5, seed=2):
                with torch.no_grad():
                    theirs = f64(torch.from_numpy(obs[None].astype(np.float64)),
                                 torch.ones(1, width, dtype=torch.bool))[0].numpy()
                np.testing.assert_allclose(ours.scores(obs), theirs, rtol=1e-12, atol=1e-12)
