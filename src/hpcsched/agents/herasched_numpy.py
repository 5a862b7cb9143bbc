"""HeraSched's actors in plain numpy, float64, one observation at a time: the greedy decisions of
``herasched:PATH`` on the engine (`agents.herasched_policy`), where torch's per-operation cost
(some 100 small operations per call) would be most of a decision's time on a Physical-sized
cluster. The same functions as the torch modules (`agents.herasched_nets`), from their weights
widened exactly to float64; `tests/agents/test_herasched_nets.py` checks the scores against the
modules' own in float64.
"""

from __future__ import annotations

import numpy as np
from torch import nn

from hpcsched.agents.herasched_nets import AllocatorActor, SelectorActor, ThesisActor
from hpcsched.envs.hera_observation import (HeraLayout, JOB_FEATURES, NODE_FEATURES,
                                            SLOT_FEATURES)


def _linear(m: nn.Linear) -> tuple[np.ndarray, np.ndarray | None]:
    w = m.weight.detach().numpy().astype(np.float64).T.copy()
    b = m.bias.detach().numpy().astype(np.float64).copy() if m.bias is not None else None
    return w, b


def _apply(layer, x: np.ndarray) -> np.ndarray:
    w, b = layer
    y = x @ w
    if b is not None:
        y += b
    return y


def _relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0.0, out=x)


class DefaultScores:
    """Our selector's or allocator's actor (`SelectorActor`, `AllocatorActor`) in numpy:
    `scores(obs)` gives its logits (unmasked) for one environment observation."""

    def __init__(self, actor: SelectorActor | AllocatorActor, layout: HeraLayout) -> None:
        e = actor.encoder
        self.selector = isinstance(actor, SelectorActor)
        self.slot = _linear(e.slot_enc[0])
        self.node = [_linear(e.node_mlp[0]), _linear(e.node_mlp[2])]
        self.job = [_linear(e.job_mlp[0]), _linear(e.job_mlp[2])]
        self.context = _linear(e.context[0])
        s = actor.score
        self.score = (_linear(s.item), _linear(s.context), _linear(s.out))
        if self.selector:
            self.forward_score = [_linear(actor.forward_score[0]), _linear(actor.forward_score[2])]
        self.set_layout(layout)

    def set_layout(self, layout: HeraLayout) -> None:
        self.layout = layout
        n, p = layout.nodes, layout.max_slots
        self.node_index = layout.node_base[:, None] + np.arange(NODE_FEATURES)[None, :]
        slot = np.arange(p)[None, :, None]
        index = layout.node_base[:, None, None] + NODE_FEATURES + SLOT_FEATURES * slot \
            + np.arange(SLOT_FEATURES)[None, None, :]
        self.real = (slot < layout.slots[:, None, None])[..., 0]  # (N, P)
        self.slot_index = np.where(self.real[..., None], index, layout.n_allocator)
        self.slots = layout.slots.astype(np.float64)
        self.regular = bool((layout.slots == p).all())
        self.shape = (layout.window, n, p)

    def _encode(self, obs: np.ndarray):
        w, n, p = self.shape
        x = np.asarray(obs, dtype=np.float64)
        first = JOB_FEATURES * w
        jobs = x[:first].reshape(w, JOB_FEATURES)
        if self.regular:
            blocks = x[first + 1:-1].reshape(n, NODE_FEATURES + SLOT_FEATURES * p)
            nodes = blocks[:, :NODE_FEATURES]
            placed = blocks[:, NODE_FEATURES:].reshape(n, p, SLOT_FEATURES)
        else:
            padded = np.append(x, 0.0)
            nodes = padded[self.node_index]
            placed = padded[self.slot_index]
        occupied = placed[..., 0] > 0  # any of the 5 numbers (numpy reduces 5-long rows slowly)
        for k in range(1, SLOT_FEATURES):
            occupied |= placed[..., k] > 0
        counts = occupied.sum(1)
        encoded = _relu(_apply(self.slot, placed[occupied]))
        running = np.zeros((n, encoded.shape[1]))
        has = counts > 0
        if encoded.shape[0]:
            starts = np.concatenate([[0], np.cumsum(counts)[:-1]])[has]
            running[has] = np.add.reduceat(encoded, starts, axis=0)
        running /= self.slots[:, None]
        share = (counts / self.slots)[:, None]
        h = _relu(_apply(self.node[0], np.concatenate([nodes, running, share], 1)))
        h_node = _relu(_apply(self.node[1], h))
        present = jobs[:, 2] > 0
        h_job = _relu(_apply(self.job[1], _relu(_apply(self.job[0], jobs))))
        shown = h_job[present].sum(0) / max(int(present.sum()), 1)
        ctx = _relu(_apply(self.context, np.concatenate([h_node.mean(0), shown, [x[first]]])))
        chosen = int(np.round(x[-1] * w)) - 1
        return h_job, h_node, ctx, chosen

    def _shared(self, items: np.ndarray, context: np.ndarray) -> np.ndarray:
        item, ctx, out = self.score
        hidden = _relu(_apply(item, items) + context @ ctx[0])
        return _apply(out, hidden)[:, 0]

    def scores(self, obs: np.ndarray) -> np.ndarray:
        h_job, h_node, ctx, chosen = self._encode(obs)
        if self.selector:
            forward = _apply(self.forward_score[1], _relu(_apply(self.forward_score[0], ctx)))
            return np.concatenate([self._shared(h_job, ctx), forward])
        job = h_job[chosen] if chosen >= 0 else np.zeros(h_job.shape[1])
        return self._shared(h_node, np.concatenate([ctx, job]))


class ThesisScores:
    """The thesis's actor MLP (`ThesisActor`, Tanh) in numpy, float64."""

    def __init__(self, actor: ThesisActor) -> None:
        self.n_in = actor.n_in
        self.layers = [_linear(m) for m in actor.net if isinstance(m, nn.Linear)]

    def set_layout(self, layout: HeraLayout) -> None:
        pass

    def scores(self, obs: np.ndarray) -> np.ndarray:
        x = np.asarray(obs[:self.n_in], dtype=np.float64)
        for i, layer in enumerate(self.layers):
            x = _apply(layer, x)
            if i < len(self.layers) - 1:
                x = np.tanh(x)
        return x


def numpy_scores(actor, layout: HeraLayout) -> DefaultScores | ThesisScores:
    """The numpy scorer of a HeraSched actor (either family) reading `layout`."""
    if isinstance(actor, ThesisActor):
        return ThesisScores(actor)
    return DefaultScores(actor, layout)


__all__ = ["DefaultScores", "ThesisScores", "numpy_scores"]
