"""One rule for a trained model's greedy decision, so that a shipped model scores the same on every
machine and through every arithmetic path (numpy, einsum, torch, another BLAS).

The rule, used by every learned scheduler here (RLScheduler, SchedInspector, DRAS, DeepRM) when it
decides greedily, in evaluation and in the validation that chooses `best.pt`:

1. the network's scores (logits, Q-values) are computed in **float64**, from the float32 weights
   and observations widened exactly;
2. each score is then **rounded to float32** (`decision_scores`);
3. the action is the **first** maximum among the allowed ones, in the network's own order (a job
   slot's order is the queue order its observation shows: the earliest job wins a tie).

Why: two correct float64 computations of the same score differ by a few units in the 16th digit
(the order of a matrix product's additions depends on the BLAS and the CPU), and a float32
computation by a few in the 8th. Comparing raw scores, near-ties then flip from one machine or path
to another: one HPC2N model scored 97.34 through float32 numpy and 100.18 through torch. Rounded to
float32, two float64 results that differ by 1e-15 relative land on the same value unless they
straddle a rounding boundary, about one chance in 10^8 per score; and scores that differ by less
than float32 can resolve become exact ties, which step 3 settles the same way everywhere.
`tests/agents/test_greedy.py` checks that noise of that size in the scores changes no schedule of a
shipped model.

Sampling (`--sample`) draws from the softmax of the same rounded scores; its draws depend on the
random stream, not on this rule.
"""

from __future__ import annotations

import numpy as np

#: the precision greedy decisions compare scores at (after computing them in float64)
DECISION_DTYPE = np.float32


def decision_scores(scores) -> np.ndarray:
    """`scores` (any shape, computed in float64) rounded to the precision decisions use."""
    return np.asarray(scores, dtype=np.float64).astype(DECISION_DTYPE)


def greedy(scores, mask=None) -> int:
    """The action of one decision: the first maximum of the rounded `scores` (1-D) among the
    entries `mask` allows (all when None). With nothing allowed, 0."""
    return int(greedy_batch(scores, mask))


def greedy_batch(scores, mask=None) -> np.ndarray:
    """`greedy` row by row: ``scores (B, A)``, ``mask (B, A)`` -> actions ``(B,)`` int64."""
    s = decision_scores(scores)
    if mask is not None:
        s = np.where(np.asarray(mask, dtype=bool), s, -np.inf)
    return np.argmax(s, axis=-1).astype(np.int64)  # numpy's argmax returns the first maximum


def linear_weights(net, dtype=np.float64) -> list[tuple[np.ndarray, np.ndarray]]:
    """``(W^T, b)`` of every `torch.nn.Linear` in `net`, in module order, as `dtype` (float64:
    widened exactly; copies: later training does not change them)."""
    from torch import nn

    return [(m.weight.detach().numpy().astype(dtype).T.copy(),
             m.bias.detach().numpy().astype(dtype).copy())
            for m in net.modules() if isinstance(m, nn.Linear)]


def mlp_forward(weights: list[tuple[np.ndarray, np.ndarray]], x: np.ndarray) -> np.ndarray:
    """An MLP's forward pass in numpy, in the weights' dtype: `weights` as `linear_weights` gives
    them (W^T, b per layer), ReLU between layers; `x` one input (F,) or a batch (B, F)."""
    for i, (wt, b) in enumerate(weights):
        x = x @ wt
        x += b
        if i < len(weights) - 1:
            np.maximum(x, 0.0, out=x)
    return x


def torch_float64(net):
    """A float64 copy of a torch module, in eval mode, for greedy scoring through torch."""
    import copy

    return copy.deepcopy(net).double().eval()


class Float64Copy:
    """`torch_float64(net)`, kept between calls and made again when `net`'s parameters have changed
    since (torch counts every in-place change of a tensor: an optimiser step, `load_state_dict`),
    so that an agent that trains between two greedy validations never scores with stale weights.

        self._net64 = Float64Copy()
        scores = self._net64(self.net)(obs64)
    """

    def __init__(self) -> None:
        self._key = None
        self._net = None

    def __call__(self, net):
        key = (id(net), tuple((id(p), p._version) for p in net.parameters()))
        if key != self._key:
            self._net, self._key = torch_float64(net), key
        return self._net


__all__ = ["DECISION_DTYPE", "Float64Copy", "decision_scores", "greedy", "greedy_batch",
           "linear_weights", "mlp_forward", "torch_float64"]
