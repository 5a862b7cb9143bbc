"""Networks of RLScheduler (spec rlscheduler.md section 5): the kernel policy, two value networks and
the ablation policies of its Table IV.

Every policy maps an observation batch ``obs (B, slots, F)`` and a mask ``(B, slots)`` (True = a real
waiting job) to masked logits ``(B, slots)``: a masked slot gets ``logit - 1e6``, so its probability
after the softmax is exactly 0. Every value network maps ``obs`` to ``(B,)``.

| name       | class                          | parameters (F=8, 128 slots) |
|------------|--------------------------------|-----------------------------|
| kernel     | KernelPolicy 8-32-16-8-1 / row | 961                         |
| mlp-v1     | MLPPolicy (128, 128, 128)      | 180,736                     |
| mlp-v2     | MLPPolicy (32, 16, 8)          | 34,616                      |
| mlp-v3     | MLPPolicy (32,) * 5            | 41,248                      |
| lenet      | LeNetPolicy (square slots)     | depends on slots            |
| kernel (V) | KernelValue                    | 11,570                      |
| flat (V)   | FlatValue 1024-32-16-8-1       | 33,473                      |

The kernel policy applies one small MLP to each job row with shared weights, so permuting the rows
permutes the probabilities the same way, and it has a plain-numpy forward (`numpy_forward`) for single
decisions, where torch's per-call overhead would dominate.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch
from torch import nn

#: what a masked slot's logit is lowered by; exp(-1e6) is 0 in float32 and float64
MASK_PENALTY = 1e6

KERNEL_HIDDEN = (32, 16, 8)


def mlp(sizes: Sequence[int]) -> nn.Sequential:
    """Linear layers of the given sizes with ReLU between them (none after the last)."""
    layers: list[nn.Module] = []
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def apply_mask(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """logits + (mask - 1) * 1e6: masked slots keep no probability (and get no gradient that
    matters)."""
    return torch.where(mask, logits, logits - MASK_PENALTY)


class _Gather(torch.autograd.Function):
    """``src[index]`` for a 1-D `src`, whose backward sums the gradient with one `scatter_add_`
    (several times faster on CPU than the generic indexing backward when many entries share an
    index, as the distinct job rows of an epoch do)."""

    @staticmethod
    def forward(ctx, src: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(index)
        ctx.size = src.shape[0]
        # index_select: several times faster than src[index] for a 1-D src on CPU
        return src.index_select(0, index.reshape(-1)).view(index.shape)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        (index,) = ctx.saved_tensors
        out = grad.new_zeros(ctx.size).scatter_add_(0, index.reshape(-1), grad.reshape(-1))
        return out, None


def gather(src: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """``src[index]`` (1-D `src`, any shape of `index`) with a fast backward."""
    return _Gather.apply(src, index)


def distinct_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(first, inverse) such that ``rows[first]`` are the distinct rows of the 2-D float array
    `rows` and ``rows[first][inverse] == rows``. Rows are hashed to one 64-bit key each (sorting
    1M keys is far cheaper than sorting 1M 32-byte rows); the result is checked, and a hash
    collision, should one ever occur, falls back to comparing whole rows."""
    rows = np.ascontiguousarray(rows)
    if rows.dtype.itemsize * rows.shape[1] % 8 == 0:  # whole rows as 64-bit words (F = 8: 4)
        words = rows.view(np.uint64)
    else:
        words = rows.view(np.uint32).astype(np.uint64)
    key = words[:, 0] * np.uint64(0x9E3779B97F4A7C15)
    for j in range(1, words.shape[1]):
        key ^= key >> np.uint64(29)
        key += words[:, j]
        key *= np.uint64(0x9E3779B97F4A7C15)
    first, inverse = _first_and_inverse(key)
    if not np.array_equal(rows[first][inverse], rows):
        whole = np.ascontiguousarray(rows).view(
            np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).ravel()
        _, first, inverse = np.unique(whole, return_index=True, return_inverse=True)
        inverse = inverse.reshape(-1)
    return first, inverse


def _first_and_inverse(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(key, return_index=True, return_inverse=True)[1:], from one stable sort."""
    order = np.argsort(key, kind="stable")
    ordered = key[order]
    new = np.empty(len(key), dtype=bool)
    new[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=new[1:])
    inverse = np.empty(len(key), dtype=np.int64)
    inverse[order] = np.cumsum(new) - 1
    return order[new], inverse


def pack_rows(obs: np.ndarray, mask: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
    """A batch of observations ``(B, slots, F)`` as its distinct real job rows ``(U, F)`` and, for
    every slot, the index of its row among them: the input of `KernelPolicy.packed_logits` and
    `KernelValue.forward_packed`. A job waiting through several decisions at the same instant shows
    the same row each time, so U is several times smaller than the number of real rows.

    A padding slot j gets ``U + j``: the packed paths score padding from a copy per slot position
    (all equal), so that the gradient's scatter-add spreads over `slots` entries instead of piling
    2M additions onto one (a chain of dependent additions, 6x slower on CPU). Any index from U to
    U + slots - 1 means padding to them."""
    rows = np.ascontiguousarray(obs[mask])  # (real rows, F), decision after decision
    if len(rows):
        first, inverse = distinct_rows(rows)
        unique = rows[first]
    else:
        unique = np.zeros((0, obs.shape[-1]), dtype=np.float32)
        inverse = np.zeros(0, dtype=np.int64)
    slot_index = np.empty(mask.shape, dtype=np.int64)
    slot_index[...] = len(unique) + np.arange(mask.shape[-1])
    slot_index[mask] = inverse
    return torch.from_numpy(unique), torch.from_numpy(slot_index)


def count_parameters(net: nn.Module) -> int:
    return sum(p.numel() for p in net.parameters())


class KernelPolicy(nn.Module):
    """RLScheduler's policy: one MLP F -> 32 -> 16 -> 8 -> 1 scores every job row (shared weights);
    the scores, masked, are the logits of a softmax over the slots. 961 parameters for F = 8, for any
    number of slots."""

    def __init__(self, features: int = 8, slots: int = 128, hidden: Sequence[int] = KERNEL_HIDDEN):
        super().__init__()
        self.features = features
        self.slots = slots
        self.kernel = mlp([features, *hidden, 1])

    def row_scores(self, rows: torch.Tensor) -> torch.Tensor:
        """Scores of job rows ``(..., F) -> (...)``; the training loop calls it on the real rows only."""
        return self.kernel(rows).squeeze(-1)

    def forward(self, obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return apply_mask(self.row_scores(obs), mask)

    def packed_scores(self, unique_rows: torch.Tensor) -> torch.Tensor:
        """`row_scores` of the distinct rows of a batch (`pack_rows`), with the chunked backward
        of `packed.mlp_rows` (same values and gradients, cheaper on many rows)."""
        from hpcsched.agents.packed import mlp_rows

        return mlp_rows(self.kernel, unique_rows).squeeze(-1)

    def packed_logits(self, unique_rows: torch.Tensor, slot_index: torch.Tensor) -> torch.Tensor:
        """Masked logits of a batch given as `pack_rows` packs it: each distinct row is scored
        once; a padding slot's logit is -1e6 (probability exactly 0, as `forward` gives it)."""
        scores = self.packed_scores(unique_rows)
        padding = scores.new_full((slot_index.shape[-1],), -MASK_PENALTY)
        return gather(torch.cat([scores, padding]), slot_index)

    # -- plain numpy, for one decision at a time ---------------------------------------------------
    def numpy_weights(self, dtype=np.float32) -> list[tuple[np.ndarray, np.ndarray]]:
        """(W^T, b) per layer as numpy arrays of `dtype` (copies: later training does not change
        them). float64 is the greedy decisions' precision (`hpcsched.agents.greedy`)."""
        linears = [m for m in self.kernel if isinstance(m, nn.Linear)]
        return [(m.weight.detach().numpy().T.astype(dtype), m.bias.detach().numpy().astype(dtype))
                for m in linears]

    def numpy_forward(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Masked logits as `forward` computes them, in numpy (float32). For many calls with the same
        weights, take `numpy_weights()` once and call `kernel_logits` directly."""
        return kernel_logits(self.numpy_weights(), obs, mask)


def kernel_logits(
    weights: Sequence[tuple[np.ndarray, np.ndarray]], obs: np.ndarray, mask: np.ndarray
) -> np.ndarray:
    """KernelPolicy's masked logits in numpy: ``obs (..., slots, F)``, ``mask (..., slots)``,
    computed in the weights' dtype (float32 or float64).

    Only the real rows go through the MLP (a masked logit is ``-1e6`` plus whatever its score would
    be; the score of a padding row does not matter, so it is taken as 0)."""
    mask = np.asarray(mask, dtype=bool)
    dtype = weights[0][0].dtype
    x = np.asarray(obs, dtype=dtype)[mask]
    last = len(weights) - 1
    for i, (w, b) in enumerate(weights):
        x = x @ w
        x += b
        if i < last:
            np.maximum(x, 0.0, out=x)
    logits = np.full(mask.shape, -MASK_PENALTY, dtype=dtype)
    logits[mask] = x[:, 0]
    return logits


class KernelValue(nn.Module):
    """The reference code's critic: a kernel F -> 32 -> 16 -> 8 -> 1 per row (its own weights) gives
    one number per slot, then an MLP slots -> 64 -> 32 -> 8 -> 1. 11,570 parameters for 128 x 8."""

    def __init__(self, features: int = 8, slots: int = 128):
        super().__init__()
        self.features = features
        self.slots = slots
        self.kernel = mlp([features, *KERNEL_HIDDEN, 1])
        self.head = mlp([slots, 64, 32, 8, 1])

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.head(self.kernel(obs).squeeze(-1)).squeeze(-1)

    def forward_packed(self, unique_rows: torch.Tensor, slot_index: torch.Tensor,
                       pad_row: torch.Tensor, layout=None) -> torch.Tensor:
        """`forward(obs)` for a batch given as its distinct real rows and, for every slot, the index
        of its row among them (``len(unique_rows)`` and up for a padding slot, whose row is
        `pad_row`; see `pack_rows`): the kernel runs once per distinct row. With a
        `packed.PrefixLayout` of the batch (real slots first in every decision), the head reads each
        group of decisions only as far as its real slots go."""
        from hpcsched.agents.packed import mlp_gathered, mlp_prefix, mlp_rows

        u = len(unique_rows)
        scores = mlp_rows(self.kernel, torch.cat([unique_rows, pad_row[None]])).squeeze(-1)
        pad = scores[u]
        scores = torch.cat([scores[:u], pad.expand(slot_index.shape[-1])])
        if layout is not None:
            return mlp_prefix(self.head, scores, pad, layout).squeeze(-1)
        return mlp_gathered(self.head, scores, slot_index).squeeze(-1)


class FlatValue(nn.Module):
    """The paper's critic: an MLP over the flattened observation, slots*F -> 32 -> 16 -> 8 -> 1
    (33,473 parameters for 128 x 8)."""

    def __init__(self, features: int = 8, slots: int = 128):
        super().__init__()
        self.features = features
        self.slots = slots
        self.net = mlp([slots * features, 32, 16, 8, 1])

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.net(obs.flatten(-2)).squeeze(-1)


class MLPPolicy(nn.Module):
    """An ablation policy of Table IV: an MLP over the flattened observation giving `slots` logits.
    Not permutation equivariant: it has to learn what each slot position means."""

    def __init__(self, features: int = 8, slots: int = 128, hidden: Sequence[int] = (128, 128, 128)):
        super().__init__()
        self.features = features
        self.slots = slots
        self.net = mlp([slots * features, *hidden, slots])

    def forward(self, obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return apply_mask(self.net(obs.flatten(-2)), mask)


class LeNetPolicy(nn.Module):
    """Table IV's LeNet: the slots are laid out as an m x m grid (m = sqrt(slots)) with the F features
    as channels; 1x1 convolutions with 32 and 64 filters, each followed by a 2x2 max pool, then dense
    64 and the logits. The reference code used m = floor(sqrt(128)) = 11, which cannot hold 128 slots,
    so here `slots` must be a perfect square (64, 256, ...)."""

    def __init__(self, features: int = 8, slots: int = 128):
        super().__init__()
        side = int(round(slots**0.5))
        if side * side != slots:
            raise ValueError(
                f"LeNetPolicy lays the slots out as a square grid, and {slots} slots are not a "
                f"square; use a square number of slots (e.g. {(side) ** 2} or {(side + 1) ** 2})"
            )
        if side < 4:
            raise ValueError(f"LeNetPolicy needs at least 16 slots (two 2x2 pools), got {slots}")
        self.features = features
        self.slots = slots
        self.side = side
        pooled = side // 2 // 2
        self.conv = nn.Sequential(
            nn.Conv2d(features, 32, kernel_size=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, kernel_size=1), nn.ReLU(), nn.MaxPool2d(2),
        )
        self.dense = nn.Sequential(
            nn.Flatten(), nn.Linear(64 * pooled * pooled, 64), nn.ReLU(), nn.Linear(64, slots)
        )

    def forward(self, obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        lead = obs.shape[:-2]
        grid = obs.reshape(-1, self.side, self.side, self.features).permute(0, 3, 1, 2)
        logits = self.dense(self.conv(grid)).reshape(*lead, self.slots)
        return apply_mask(logits, mask)


POLICIES = ("kernel", "mlp-v1", "mlp-v2", "mlp-v3", "lenet")
VALUES = ("kernel", "flat")


def make_policy(name: str, features: int = 8, slots: int = 128) -> nn.Module:
    """The policy network called `name` (one of POLICIES)."""
    if name == "kernel":
        return KernelPolicy(features, slots)
    if name == "mlp-v1":
        return MLPPolicy(features, slots, (128, 128, 128))
    if name == "mlp-v2":
        return MLPPolicy(features, slots, (32, 16, 8))
    if name == "mlp-v3":
        return MLPPolicy(features, slots, (32,) * 5)
    if name == "lenet":
        return LeNetPolicy(features, slots)
    raise ValueError(f"unknown policy network {name!r}; choose one of: {', '.join(POLICIES)}")


def make_value(name: str, features: int = 8, slots: int = 128) -> nn.Module:
    """The value network called `name` (one of VALUES)."""
    if name == "kernel":
        return KernelValue(features, slots)
    if name == "flat":
        return FlatValue(features, slots)
    raise ValueError(f"unknown value network {name!r}; choose one of: {', '.join(VALUES)}")


__all__ = [
    "MASK_PENALTY", "KernelPolicy", "KernelValue", "FlatValue", "MLPPolicy", "LeNetPolicy",
    "POLICIES", "VALUES", "make_policy", "make_value", "kernel_logits", "apply_mask",
    "count_parameters", "mlp", "gather", "distinct_rows", "pack_rows",
]
