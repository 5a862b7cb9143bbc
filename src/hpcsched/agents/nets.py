"""The networks of the PPO learners: RLScheduler's (spec rlscheduler.md section 5: the kernel policy,
two value networks and the ablation policies of its Table IV) and SchedInspector's (spec
schedinspector.md section 5).

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
| inspector  | InspectorPolicyNet F-32-16-8-2 | 938 (F=7)                   |
| inspector (V) | InspectorValueNet F-32-16-8-1 | 929 (F=7)                |

What PPO asks of a network is `MaskedPolicy`'s and `ValueNet`'s methods; by default they go
through `forward`, and the kernel networks override them with their fast paths: during rollouts the
kernel scores only the real rows; in the update it scores each distinct row of the epoch once
(`agents/packed.py`, `batch.Batch`'s packing); for greedy decisions it runs in numpy, float64
(`agents/greedy.py`). The tests check every fast path against `forward`.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch
from torch import nn

from hpcsched.agents.batch import Batch, MaskedCategorical, PackedCategorical
from hpcsched.agents.packed import gather

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


def count_parameters(net: nn.Module) -> int:
    return sum(p.numel() for p in net.parameters())


class MaskedPolicy(nn.Module):
    """A policy network: ``forward(obs, mask) -> masked logits``, and the paths PPO takes."""

    def act_logits(self, obs: np.ndarray, mask: np.ndarray) -> torch.Tensor:
        """The logits of a rollout step (called without gradient)."""
        return self(torch.from_numpy(obs), torch.from_numpy(mask))

    def logits(self, batch: Batch) -> torch.Tensor:
        """Every decision's masked logits (M, A), with gradient."""
        return self(batch.obs, batch.mask)

    def distribution(self, batch: Batch) -> MaskedCategorical | PackedCategorical:
        """The action distribution of every decision of `batch`, with gradient."""
        return MaskedCategorical(self.logits(batch), batch.actions)

    def reads_packed(self, batch: Batch) -> bool:
        """Whether `logits` and `distribution` read `batch` whole through its packing (else they
        read its plain tensors, and the update may hand them the batch in parts)."""
        return False

    def scores64(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """The logits in float64, for greedy decisions (`agents.greedy`)."""
        from hpcsched.agents.greedy import torch_float64

        with torch.no_grad():
            return torch_float64(self)(torch.as_tensor(obs, dtype=torch.float64),
                                       torch.as_tensor(mask, dtype=torch.bool)).numpy()


class ValueNet(nn.Module):
    """A value network: ``forward(obs) -> (B,)``, and the paths PPO takes."""

    def values(self, batch: Batch) -> torch.Tensor:
        """Every decision's value (M,), with gradient."""
        return self(batch.obs)

    def reads_packed(self, batch: Batch) -> bool:
        """As `MaskedPolicy.reads_packed`."""
        return False


class KernelPolicy(MaskedPolicy):
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

    # -- the paths PPO takes ------------------------------------------------------------------------
    def act_logits(self, obs: np.ndarray, mask: np.ndarray) -> torch.Tensor:
        # only the real rows are scored; a padding slot's logit is -1e6 here, score - 1e6 in
        # forward(): either way its probability is exactly 0 and the real slots' are equal
        logits = torch.full(mask.shape, -MASK_PENALTY)
        logits.view(-1).index_copy_(0, torch.from_numpy(np.flatnonzero(mask)),
                                    self.row_scores(torch.from_numpy(obs[mask])))
        return logits

    def logits(self, batch: Batch) -> torch.Tensor:
        return self.packed_logits(*batch.packed)

    def distribution(self, batch: Batch) -> MaskedCategorical | PackedCategorical:
        if batch.packing is None:  # an action on a padding slot: the logits of every slot
            return super().distribution(batch)
        return PackedCategorical(self.packed_scores(batch.packed[0]), batch.packing)

    def reads_packed(self, batch: Batch) -> bool:
        return True

    def scores64(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        return kernel_logits(self.numpy_weights(np.float64), obs, mask)

    # -- plain numpy, for one decision at a time ---------------------------------------------------
    def numpy_weights(self, dtype=np.float32) -> list[tuple[np.ndarray, np.ndarray]]:
        """(W^T, b) per layer as numpy arrays of `dtype` (copies: later training does not change
        them). float64 is the greedy decisions' precision (`hpcsched.agents.greedy`)."""
        linears = [m for m in self.kernel if isinstance(m, nn.Linear)]
        return [(m.weight.detach().numpy().T.astype(dtype), m.bias.detach().numpy().astype(dtype))
                for m in linears]


def kernel_logits(
    weights: Sequence[tuple[np.ndarray, np.ndarray]], obs: np.ndarray, mask: np.ndarray
) -> np.ndarray:
    """KernelPolicy's masked logits in numpy: ``obs (..., slots, F)``, ``mask (..., slots)``,
    computed in the weights' dtype (float32 or float64).

    Only the real rows go through the MLP (a masked logit is ``-1e6`` plus whatever its score would
    be; the score of a padding row does not matter, so it is taken as 0)."""
    from hpcsched.agents.greedy import mlp_forward

    mask = np.asarray(mask, dtype=bool)
    dtype = weights[0][0].dtype
    logits = np.full(mask.shape, -MASK_PENALTY, dtype=dtype)
    logits[mask] = mlp_forward(weights, np.asarray(obs, dtype=dtype)[mask])[:, 0]
    return logits


class KernelValue(ValueNet):
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

    def values(self, batch: Batch) -> torch.Tensor:
        if not self.reads_packed(batch):
            return self(batch.obs)
        return self.forward_packed(*batch.packed, batch.pad_row, batch.layout)

    def reads_packed(self, batch: Batch) -> bool:
        return batch.pad_row is not None  # the packed path needs one padding row for all


class FlatValue(ValueNet):
    """The paper's critic: an MLP over the flattened observation, slots*F -> 32 -> 16 -> 8 -> 1
    (33,473 parameters for 128 x 8)."""

    def __init__(self, features: int = 8, slots: int = 128):
        super().__init__()
        self.features = features
        self.slots = slots
        self.net = mlp([slots * features, 32, 16, 8, 1])

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.net(obs.flatten(-2)).squeeze(-1)


class MLPPolicy(MaskedPolicy):
    """An ablation policy of Table IV: an MLP over the flattened observation giving `slots` logits.
    Not permutation equivariant: it has to learn what each slot position means."""

    def __init__(self, features: int = 8, slots: int = 128, hidden: Sequence[int] = (128, 128, 128)):
        super().__init__()
        self.features = features
        self.slots = slots
        self.net = mlp([slots * features, *hidden, slots])

    def forward(self, obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return apply_mask(self.net(obs.flatten(-2)), mask)


class LeNetPolicy(MaskedPolicy):
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


class InspectorPolicyNet(MaskedPolicy):
    """SchedInspector's policy: F -> 32 -> 16 -> 8 -> 2 logits (accept, reject), ReLU; a masked
    action gets -1e6."""

    def __init__(self, features: int = 7):
        super().__init__()
        self.net = mlp([features, 32, 16, 8, 2])

    def forward(self, obs: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        logits = self.net(obs)
        return logits if mask is None else apply_mask(logits, mask)

    def scores64(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        from hpcsched.agents.greedy import linear_weights, mlp_forward

        return mlp_forward(linear_weights(self), np.asarray(obs, dtype=np.float64))


class InspectorValueNet(ValueNet):
    """F -> 32 -> 16 -> 8 -> 1: the same trunk as SchedInspector's policy, a scalar out."""

    def __init__(self, features: int = 7):
        super().__init__()
        self.net = mlp([features, 32, 16, 8, 1])

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.net(obs).squeeze(-1)


POLICIES = ("kernel", "mlp-v1", "mlp-v2", "mlp-v3", "lenet")
VALUES = ("kernel", "flat")


def make_policy(name: str, features: int = 8, slots: int = 128) -> MaskedPolicy:
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


def make_value(name: str, features: int = 8, slots: int = 128) -> ValueNet:
    """The value network called `name` (one of VALUES)."""
    if name == "kernel":
        return KernelValue(features, slots)
    if name == "flat":
        return FlatValue(features, slots)
    raise ValueError(f"unknown value network {name!r}; choose one of: {', '.join(VALUES)}")


__all__ = [
    "MASK_PENALTY", "FlatValue", "InspectorPolicyNet", "InspectorValueNet", "KernelPolicy",
    "KernelValue", "LeNetPolicy", "MLPPolicy", "MaskedPolicy", "POLICIES", "VALUES", "ValueNet",
    "apply_mask", "count_parameters", "kernel_logits", "make_policy", "make_value", "mlp",
]
