"""The fast training paths of agents/packed.py compute the plain formulas: the same values and
gradients as autograd on the obvious expression, chunk boundaries included."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from hpcsched.agents.nets import MASK_PENALTY, KernelValue, mlp
from hpcsched.agents.packed import (
    ActionPacking,
    PrefixLayout,
    action_log_probs,
    entropy,
    linear_layers,
    mlp_gathered,
    mlp_prefix,
    mlp_rows,
    pack_rows,
)
from hpcsched.envs.observation import padding_row


def net_and_rows(sizes=(8, 32, 16, 8, 1), n=53, seed=0):
    torch.manual_seed(seed)
    net = mlp(list(sizes))
    g = torch.Generator().manual_seed(seed + 1)
    # mean 0 inputs: a good share of the ReLUs is off, so their gradient mask matters
    return net, torch.randn(n, sizes[0], generator=g)


def grads(net):
    return [p.grad.clone() for p in net.parameters()]


@pytest.mark.parametrize("chunk", [7, 53, 1000])  # chunks that do not divide 53, one, more than all
@pytest.mark.parametrize("recompute", [False, True])
def test_mlp_rows_equals_the_module(chunk, recompute):
    net, x = net_and_rows()
    weights = torch.randn(53, 1, generator=torch.Generator().manual_seed(5))
    ours = mlp_rows(net, x, chunk=chunk, recompute=recompute)
    torch.testing.assert_close(ours, net(x), rtol=1e-6, atol=1e-6)
    (ours * weights).sum().backward()
    fast = grads(net)
    net.zero_grad()
    (net(x) * weights).sum().backward()
    for a, b in zip(fast, grads(net)):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_mlp_rows_wide_output_and_refuses_an_input_that_needs_a_gradient():
    net, x = net_and_rows(sizes=(3, 16, 4), n=20)  # a narrow-to-wide layer, then 4 outputs
    ours = mlp_rows(net, x, chunk=6)
    assert ours.shape == (20, 4)
    ours.pow(2).sum().backward()
    fast = grads(net)
    net.zero_grad()
    net(x).pow(2).sum().backward()
    for a, b in zip(fast, grads(net)):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="no gradient for its input"):
        mlp_rows(net, x.requires_grad_())


def test_linear_layers_refuses_other_shapes():
    with pytest.raises(ValueError, match="Linear/ReLU"):
        linear_layers(torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Tanh(),
                                          torch.nn.Linear(2, 1)))


@pytest.mark.parametrize("chunk", [3, 64])
@pytest.mark.parametrize("recompute", [False, True])
def test_mlp_gathered_equals_the_module_on_indexed_rows(chunk, recompute):
    torch.manual_seed(2)
    head = mlp([6, 5, 3, 1])
    g = torch.Generator().manual_seed(3)
    src = torch.randn(9, generator=g, requires_grad=True)
    index = torch.randint(0, 9, (10, 6), generator=g)  # repeats within and across rows
    ours = mlp_gathered(head, src, index, chunk=chunk, recompute=recompute)
    torch.testing.assert_close(ours, head(src[index]), rtol=1e-6, atol=1e-6)
    weights = torch.randn(10, 1, generator=g)
    (ours * weights).sum().backward()
    fast, fast_src = grads(head), src.grad.clone()
    head.zero_grad()
    src.grad = None
    (head(src[index]) * weights).sum().backward()
    for a, b in zip(fast, grads(head)):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(fast_src, src.grad, rtol=1e-5, atol=1e-6)


# -- the log-softmax over real slots ---------------------------------------------------------------
def packed_decisions(decisions=30, slots=12, pool=8, seed=0):
    """Decisions of real rows from a small pool, padded (real slots first, as the envs fill them),
    one decision full and one with a single job; an action per decision among its real slots."""
    rng = np.random.default_rng(seed)
    rows = rng.standard_normal((pool, 8)).astype(np.float32)
    obs = np.broadcast_to(padding_row(8), (decisions, slots, 8)).copy()
    mask = np.zeros((decisions, slots), dtype=bool)
    counts = rng.integers(1, slots + 1, size=decisions)
    counts[0], counts[1] = slots, 1
    for d, k in enumerate(counts):
        obs[d, :k] = rows[rng.integers(0, pool, size=k)]
        mask[d, :k] = True
    actions = (rng.random(decisions) * counts).astype(np.int64)
    return obs, mask, actions


def test_pack_rows_gives_each_padding_slot_its_own_index():
    obs, mask, _ = packed_decisions()
    unique, slot_index = pack_rows(obs, mask)
    u, slots = len(unique), obs.shape[1]
    assert u <= 8
    # real slots: their row; padding slot j: index u + j
    torch.testing.assert_close(unique[slot_index[torch.from_numpy(mask)]],
                               torch.from_numpy(obs[mask]), rtol=0, atol=0)
    pad = slot_index[torch.from_numpy(~mask)]
    columns = torch.from_numpy(np.nonzero(~mask)[1])
    assert torch.equal(pad, u + columns)


def dense_log_softmax(scores, slot_index, mask):
    """The plain formula: every slot's logit (padding -1e6), log-softmax over all slots."""
    logits = torch.cat([scores, scores.new_full((mask.shape[1],), 0.0)])[slot_index]
    logits = torch.where(mask, logits, logits - MASK_PENALTY)
    return torch.log_softmax(logits, -1)


def test_action_log_probs_and_entropy_equal_the_dense_log_softmax():
    obs, mask, actions = packed_decisions()
    unique, slot_index = pack_rows(obs, mask)
    mask_t, actions_t = torch.from_numpy(mask), torch.from_numpy(actions)
    packing = ActionPacking(slot_index, mask_t, actions_t)
    g = torch.Generator().manual_seed(4)
    scores = (torch.randn(len(unique), generator=g) * 30).requires_grad_()  # wide: the shift matters
    weights = torch.randn(len(actions), generator=g)

    ours = action_log_probs(scores, packing)
    (ours * weights).sum().backward()
    ours_grad = scores.grad.clone()
    scores.grad = None
    logp_all = dense_log_softmax(scores, slot_index, mask_t)
    plain = logp_all.gather(1, actions_t[:, None]).squeeze(1)
    (plain * weights).sum().backward()
    torch.testing.assert_close(ours, plain, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(ours_grad, scores.grad, rtol=1e-5, atol=1e-5)
    # the single-job decision is certain
    assert float(ours[1].detach()) == pytest.approx(0.0, abs=1e-6)

    p = logp_all.detach().exp()
    plain_entropy = -torch.where(mask_t, p * logp_all.detach(), 0.0).sum(-1)
    torch.testing.assert_close(entropy(scores, packing).float(), plain_entropy,
                               rtol=1e-4, atol=1e-5)


def test_action_packing_refuses_a_padding_action_or_an_empty_decision():
    obs, mask, actions = packed_decisions()
    _, slot_index = pack_rows(obs, mask)
    bad = actions.copy()
    bad[1] = 5  # decision 1 has a single job, in slot 0
    with pytest.raises(ValueError, match="padding slot"):
        ActionPacking(slot_index, torch.from_numpy(mask), torch.from_numpy(bad))
    empty = mask.copy()
    empty[3] = False
    with pytest.raises(ValueError, match="at least one real slot"):
        ActionPacking(slot_index, torch.from_numpy(empty), torch.from_numpy(actions))


def test_kernel_value_packed_reads_padding_from_any_padding_index():
    # pack_rows' index (u + slot) and a single padding index u give the same values and gradients
    obs, mask, _ = packed_decisions(slots=12)
    unique, slot_index = pack_rows(obs, mask)
    torch.manual_seed(0)
    net = KernelValue(8, 12)
    pad_row = torch.from_numpy(padding_row(8))
    single = torch.where(torch.from_numpy(mask), slot_index, len(unique))
    a = net.forward_packed(unique, slot_index, pad_row)
    a.sum().backward()
    ga = grads(net)
    net.zero_grad()
    b = net.forward_packed(unique, single, pad_row)
    b.sum().backward()
    torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(a, net(torch.from_numpy(obs)), rtol=1e-5, atol=1e-5)
    for x, y in zip(ga, grads(net)):
        torch.testing.assert_close(x, y, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("chunk", [4, 1000])
def test_mlp_prefix_equals_the_module_on_padded_rows(chunk):
    # 30 decisions of 20 slots, real slots first; groups of `chunk` decisions read only up to their
    # widest, the padding beyond folded into the first layer's bias
    slots, u = 20, 9
    rng = np.random.default_rng(0)
    counts = rng.integers(1, slots + 1, size=30)
    counts[:3] = [slots, 1, 8]
    index = np.empty((30, slots), dtype=np.int64)
    index[:] = u + np.arange(slots)
    for d, k in enumerate(counts):
        index[d, :k] = rng.integers(0, u, size=k)
    index_t = torch.from_numpy(index)
    layout = PrefixLayout(index_t, counts, chunk=chunk)
    assert sorted(torch.cat([rows for rows, _ in layout.groups]).tolist()) == list(range(30))
    if chunk == 4:
        assert layout.mean_width < slots  # some groups really are cut short

    torch.manual_seed(1)
    head = mlp([slots, 12, 6, 1])  # 20 -> 12: the first layer's gradient is kept transposed
    real = torch.randn(u, requires_grad=True)
    pad = torch.tensor(0.7, requires_grad=True)

    def src():
        return torch.cat([real, pad.expand(slots)])

    weights = torch.randn(30, 1)
    ours = mlp_prefix(head, src(), pad, layout)
    (ours * weights).sum().backward()
    fast = grads(head) + [real.grad.clone(), pad.grad.clone()]
    head.zero_grad()
    real.grad = pad.grad = None
    plain = head(src()[index_t])
    (plain * weights).sum().backward()
    torch.testing.assert_close(ours, plain, rtol=1e-5, atol=1e-6)
    for a, b in zip(fast, grads(head) + [real.grad, pad.grad]):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


def test_prefix_layout_widths_cover_every_real_slot():
    counts = np.array([3, 17, 9, 128, 1, 64, 65, 33])
    index = torch.zeros((8, 128), dtype=torch.int64)
    layout = PrefixLayout(index, counts, chunk=3)
    for rows, part in layout.groups:
        width = part.shape[1]
        assert width % 8 == 0 and width >= counts[rows.numpy()].max()
        assert width < counts[rows.numpy()].max() + 8  # no wider than it needs
    # sorted by count: [1, 3, 9], [17, 33, 64], [65, 128]
    assert [part.shape[1] for _, part in layout.groups] == [16, 64, 128]


@pytest.mark.parametrize("features", [8, 9])  # 9: rows are not whole 64-bit words
def test_distinct_rows_finds_the_first_occurrence_of_every_distinct_row(features, monkeypatch):
    from hpcsched.agents import packed

    rng = np.random.default_rng(features)
    pool = rng.random((7, features), dtype=np.float32)
    pool[3] = pool[2]
    pool[3, -1] = -pool[2, -1]  # differs from row 2 in one bit-pattern only at the end
    rows = pool[rng.integers(0, 7, size=200)]
    first, inverse = packed.distinct_rows(rows)
    np.testing.assert_array_equal(rows[first][inverse], rows)
    expected_first = sorted(np.unique(rows, axis=0, return_index=True)[1])
    assert sorted(first.tolist()) == expected_first  # each distinct row once, its first occurrence
    # a hash collision (simulated: every key equal) is caught and whole rows are compared instead
    monkeypatch.setattr(packed, "_first_and_inverse",
                        lambda key: (np.zeros(1, np.int64), np.zeros(len(key), np.int64)))
    first, inverse = packed.distinct_rows(rows)
    np.testing.assert_array_equal(rows[first][inverse], rows)
    assert sorted(first.tolist()) == expected_first
