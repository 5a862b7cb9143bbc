"""The networks of the PPO learners (spec rlscheduler.md section 5, schedinspector.md section 5):
sizes, the kernel policy's permutation equivariance, masking, the numpy forward, and every path PPO
takes (rollout logits, packed distributions and values, float64 greedy scores) against forward."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from hpcsched.agents.batch import Batch
from hpcsched.agents.nets import (
    FlatValue,
    InspectorPolicyNet,
    InspectorValueNet,
    KernelPolicy,
    KernelValue,
    LeNetPolicy,
    MLPPolicy,
    count_parameters,
    kernel_logits,
    make_policy,
    make_value,
)
from hpcsched.agents.packed import gather


def dense_parameters(sizes) -> int:
    """Weights and biases of fully connected layers of the given sizes."""
    return sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:]))


def random_batch(batch=5, slots=16, features=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    obs = torch.rand(batch, slots, features, generator=g)
    counts = torch.randint(1, slots + 1, (batch,), generator=g)
    counts[0] = slots  # one full queue
    counts[1] = 1  # one single job
    mask = torch.arange(slots)[None, :] < counts[:, None]
    return obs, mask


# -- sizes ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name, kind, expected, layers", [
    # the spec's [derived] numbers, and the layer sizes they come from
    ("kernel", "policy", 961, [8, 32, 16, 8, 1]),
    ("mlp-v1", "policy", 180_736, [1024, 128, 128, 128, 128]),
    ("mlp-v2", "policy", 34_616, [1024, 32, 16, 8, 128]),
    ("mlp-v3", "policy", 41_248, [1024, 32, 32, 32, 32, 32, 128]),
    ("flat", "value", 33_473, [1024, 32, 16, 8, 1]),
])
def test_parameter_counts_are_the_specs(name, kind, expected, layers):
    net = make_policy(name, 8, 128) if kind == "policy" else make_value(name, 8, 128)
    assert dense_parameters(layers) == expected  # the spec's arithmetic
    assert count_parameters(net) == expected


def test_kernel_value_parameters_are_the_specs():
    # a kernel 8-32-16-8-1 (961) and a head 128-64-32-8-1 (10,609)
    assert dense_parameters([8, 32, 16, 8, 1]) + dense_parameters([128, 64, 32, 8, 1]) == 11_570
    assert count_parameters(KernelValue(8, 128)) == 11_570


def test_kernel_policy_size_does_not_depend_on_the_slots():
    assert count_parameters(KernelPolicy(8, 16)) == count_parameters(KernelPolicy(8, 256)) == 961
    assert count_parameters(KernelPolicy(9, 128)) == 961 + 32  # the fairness feature: 32 weights


def test_lenet_refuses_a_queue_that_is_not_square():
    with pytest.raises(ValueError, match=r"128 slots are not a square.*121 or 144"):
        LeNetPolicy(8, 128)
    with pytest.raises(ValueError, match="at least 16 slots"):
        LeNetPolicy(8, 9)
    net = LeNetPolicy(8, 64)
    obs, mask = random_batch(3, 64)
    assert net(obs, mask).shape == (3, 64)


def test_unknown_network_names_are_refused():
    with pytest.raises(ValueError, match="unknown policy network 'transformer'"):
        make_policy("transformer")
    with pytest.raises(ValueError, match="unknown value network 'big'"):
        make_value("big")


# -- masking and equivariance --------------------------------------------------------------------
@pytest.mark.parametrize("name", ["kernel", "mlp-v1", "mlp-v2", "mlp-v3", "lenet"])
def test_masked_slots_get_exactly_zero_probability(name):
    torch.manual_seed(1)
    net = make_policy(name, 8, 16)
    obs, mask = random_batch(6, 16)
    p = torch.softmax(net(obs, mask), -1)
    assert (p[~mask] == 0).all()
    assert (p[mask] > 0).all()
    torch.testing.assert_close(p.sum(-1), torch.ones(6))
    assert (p[1, 0] == 1).all()  # a single waiting job is chosen for sure


def test_kernel_policy_is_permutation_equivariant():
    torch.manual_seed(2)
    net = KernelPolicy(8, 16)
    obs, mask = random_batch(4, 16)
    perm = torch.randperm(16, generator=torch.Generator().manual_seed(3))
    p = torch.softmax(net(obs, mask), -1)
    p_perm = torch.softmax(net(obs[:, perm], mask[:, perm]), -1)
    torch.testing.assert_close(p_perm, p[:, perm], rtol=1e-5, atol=1e-7)


def test_mlp_policy_is_not_permutation_equivariant():
    torch.manual_seed(2)
    net = MLPPolicy(8, 16, (32, 16, 8))
    obs, mask = random_batch(4, 16)
    mask[:] = True  # every slot real: a permutation changes only where each job sits
    perm = torch.randperm(16, generator=torch.Generator().manual_seed(3))
    p = torch.softmax(net(obs, mask), -1)
    p_perm = torch.softmax(net(obs[:, perm], mask[:, perm]), -1)
    assert (p_perm - p[:, perm]).abs().max() > 1e-3


def test_numpy_kernel_logits_equal_the_torch_forward():
    torch.manual_seed(4)
    net = KernelPolicy(8, 32)
    obs, mask = random_batch(7, 32, seed=5)
    with torch.no_grad():
        expected = net(obs, mask).numpy()
    got = kernel_logits(net.numpy_weights(), obs.numpy(), mask.numpy())
    m = mask.numpy()
    assert got.dtype == np.float32
    np.testing.assert_allclose(got[m], expected[m], rtol=1e-5, atol=1e-5)
    assert (got[~m] <= -1e6 + 1).all() and (expected[~m] < -1e6 + 100).all()
    # one decision at a time, as RLPolicy calls it
    one = kernel_logits(net.numpy_weights(), obs[2].numpy(), mask[2].numpy())
    np.testing.assert_allclose(one[m[2]], expected[2][m[2]], rtol=1e-5, atol=1e-5)
    assert one[m[2]].argmax() == expected[2].argmax()


def test_numpy_weights_are_a_snapshot():
    net = KernelPolicy()
    weights = net.numpy_weights()
    before = weights[0][0].copy()
    with torch.no_grad():
        net.kernel[0].weight.add_(1.0)
    np.testing.assert_array_equal(weights[0][0], before)


# -- the packed paths ----------------------------------------------------------------------------
def test_gather_forward_and_gradient_equal_plain_indexing():
    g = torch.Generator().manual_seed(6)
    src = torch.randn(7, dtype=torch.float64, generator=g, requires_grad=True)
    index = torch.randint(0, 7, (5, 9), generator=g)  # many repeats
    index[0, :3] = 6  # and the last entry, as the padding score is used
    torch.testing.assert_close(gather(src, index), src[index], rtol=0, atol=0)

    weights = torch.randn(5, 9, dtype=torch.float64, generator=g)
    (gather(src, index) * weights).sum().backward()
    ours = src.grad.clone()
    src.grad = None
    (src[index] * weights).sum().backward()
    torch.testing.assert_close(ours, src.grad)
    # entries never gathered get no gradient; entry 6 gets the sum over its uses
    unused = torch.ones(7, dtype=torch.bool)
    unused[index.unique()] = False
    assert (ours[unused] == 0).all()
    assert float(ours[6]) == pytest.approx(float(weights[index == 6].sum()), rel=1e-12)
    assert torch.autograd.gradcheck(lambda s: gather(s, index), (src.detach().requires_grad_(),))


def test_kernel_value_packed_equals_dense():
    torch.manual_seed(7)
    slots, features = 16, 8
    net = KernelValue(features, slots)
    g = torch.Generator().manual_seed(8)
    unique_rows = torch.rand(10, features, generator=g)
    pad_row = torch.tensor([0, 1, 1, 1, 1, 1, 1, 0], dtype=torch.float32)
    slot_index = torch.randint(0, 10, (6, slots), generator=g)
    counts = torch.tensor([16, 1, 5, 9, 12, 3])
    slot_index[torch.arange(slots)[None, :] >= counts[:, None]] = 10  # padding slots
    obs = torch.cat([unique_rows, pad_row[None]])[slot_index]  # (6, slots, F) as an env shows it

    dense = net(obs)
    packed = net.forward_packed(unique_rows, slot_index, pad_row)
    assert packed.shape == (6,)
    torch.testing.assert_close(packed, dense, rtol=1e-5, atol=1e-6)
    # and the same gradient
    dense.sum().backward()
    g_dense = [p.grad.clone() for p in net.parameters()]
    net.zero_grad()
    net.forward_packed(unique_rows, slot_index, pad_row).sum().backward()
    for a, b in zip(g_dense, [p.grad for p in net.parameters()]):
        torch.testing.assert_close(b, a, rtol=1e-4, atol=1e-6)


def test_flat_value_sees_the_whole_observation():
    torch.manual_seed(9)
    net = FlatValue(8, 16)
    obs, _ = random_batch(3, 16)
    v = net(obs)
    assert v.shape == (3,)
    changed = obs.clone()
    changed[:, 15, 3] += 1.0  # the last slot matters
    assert not torch.allclose(net(changed), v)


# -- the paths PPO takes, against forward ------------------------------------------------------------
def policy_cases():
    """(name, network, obs, mask) for every policy network, the padding rows as the envs fill
    them (RLScheduler's padding row; the inspector has no padding)."""
    torch.manual_seed(11)
    out = []
    for name in ["kernel", "mlp-v1", "mlp-v2", "mlp-v3", "lenet"]:
        obs, mask = random_batch(9, 16, seed=12)
        obs[~mask] = torch.tensor([0, 1, 1, 1, 1, 1, 1, 0], dtype=torch.float32)
        out.append((name, make_policy(name, 8, 16), obs, mask))
    g = torch.Generator().manual_seed(13)
    mask = torch.ones(9, 2, dtype=torch.bool)
    mask[::3, 1] = False  # reject not allowed there
    out.append(("inspector", InspectorPolicyNet(7), torch.rand(9, 7, generator=g), mask))
    return out


@pytest.mark.parametrize("case", policy_cases(), ids=lambda c: c[0])
def test_every_policy_path_gives_forwards_distribution(case):
    name, net, obs, mask = case
    with torch.no_grad():
        plain = torch.log_softmax(net(obs, mask), -1)
        act = torch.log_softmax(net.act_logits(obs.numpy(), mask.numpy()), -1)
    # the rollout's logits: the same probabilities (padding exactly 0 either way)
    torch.testing.assert_close(act[mask], plain[mask], rtol=1e-5, atol=1e-5)
    assert (act[~mask].exp() == 0).all()
    # the update's: each decision's action, log-probability (with gradient) and entropy
    actions = torch.tensor([int(torch.multinomial(m.float(), 1)) for m in mask])
    b = Batch(obs.numpy(), mask.numpy(), actions.numpy())
    assert net.reads_packed(b) == (name == "kernel")
    dist = net.distribution(b)
    logp = dist.log_prob()
    torch.testing.assert_close(logp, plain.gather(1, actions[:, None]).squeeze(1), rtol=1e-5,
                               atol=1e-5)
    logp.sum().backward()
    assert any(p.grad is not None and float(p.grad.abs().sum()) > 0 for p in net.parameters())
    p = plain.exp()
    entropy = -torch.where(mask, p * plain, 0.0).sum(-1)
    torch.testing.assert_close(dist.entropy().float(), entropy, rtol=1e-4, atol=1e-6)
    assert dist.entropy_sum() == pytest.approx(float(entropy.sum()), rel=1e-4)
    torch.testing.assert_close(net.logits(b)[mask], net(obs, mask)[mask], rtol=1e-5, atol=1e-5)
    # greedy decisions' float64 scores: forward's to float32 precision
    scores = net.scores64(obs.numpy(), mask.numpy())
    assert scores.dtype == np.float64
    np.testing.assert_allclose(scores[mask.numpy()], net(obs, mask).detach().numpy()[mask.numpy()],
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["kernel", "flat", "inspector"])
def test_every_value_path_gives_forwards_values(name):
    torch.manual_seed(14)
    if name == "inspector":
        net = InspectorValueNet(7)
        obs, mask = torch.rand(9, 7), torch.ones(9, 2, dtype=torch.bool)
    else:
        net = make_value(name, 8, 16)
        obs, mask = random_batch(9, 16, seed=15)
        obs[~mask] = torch.tensor([0, 1, 1, 1, 1, 1, 1, 0], dtype=torch.float32)
    b = Batch(obs.numpy(), mask.numpy(), np.zeros(9, np.int64))
    assert net.reads_packed(b) == (name == "kernel")
    torch.testing.assert_close(net.values(b), net(obs), rtol=1e-5, atol=1e-5)
    if name == "kernel":  # padding rows that differ: no packed path, the plain one instead
        obs[~mask] = torch.rand(int((~mask).sum()), 8)
        b = Batch(obs.numpy(), mask.numpy(), np.zeros(9, np.int64))
        assert not net.reads_packed(b)
        torch.testing.assert_close(net.values(b), net(obs), rtol=0, atol=0)
