"""Fast training paths for the kernel networks over an epoch packed to its distinct job rows
(`pack_rows`). Same formulas as the plain autograd forward, computed in a cheaper order; the
tests check values and gradients against autograd on the plain expression. The networks take
these paths behind their own methods (`nets.KernelPolicy.distribution`, `nets.KernelValue.values`).

Why they are faster on CPU (measured on a Lublin-1 epoch: 151k distinct rows, 25,600 decisions,
1.27M real slots; one policy + one value iteration took 2.5-2.8x less CPU than plain autograd):

- `mlp_rows` / `mlp_gathered`: an MLP (Linear/ReLU stack) over many rows, with a hand-written
  backward, chunk by chunk: each chunk's activations are made while the chunk is in cache (kept
  for the backward, or, with `recompute`, made again there). The weight gradient of a
  narrow-to-wide layer (8 -> 32) is taken as ``(x^T g)^T``: the ``g^T x`` that autograd asks
  BLAS for, with a 151k-long inner dimension, is about 8x slower in that shape.
- `ActionPacking` / `action_log_probs`: PPO needs the log-probability of the taken action only. It is
  ``score[action] - logsumexp(scores of the decision's real slots)``; computed over the real slots
  (1.27M) instead of a (decisions x 128) matrix of logits (3.3M, mostly padding whose probability is
  exactly 0) it needs no gather to the slot grid and no log-softmax over padding.
- `PrefixLayout` / `mlp_prefix`: the value head reads each group of decisions only as far as its
  real slots go (59 of 128 slots on average on Lublin-1); the padding slots beyond, all the same
  score, enter the first layer as a bias term.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch
from torch import nn

#: rows per chunk of `mlp_rows` (8192 x 32 floats = 1 MB: one core's L2 holds a chunk's activations)
ROW_CHUNK = 8192
#: decisions per chunk of `mlp_gathered` (2048 x 128 floats = 1 MB)
GATHER_CHUNK = 2048


def _take(src: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """src[index] for a 1-D src (index_select: several times faster than indexing on CPU)."""
    return src.index_select(0, index.reshape(-1)).view(index.shape)


class _Gather(torch.autograd.Function):
    """``src[index]`` for a 1-D `src`, whose backward sums the gradient with one `scatter_add_`
    (several times faster on CPU than the generic indexing backward when many entries share an
    index, as the distinct job rows of an epoch do)."""

    @staticmethod
    def forward(ctx, src: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(index)
        ctx.size = src.shape[0]
        return _take(src, index)

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


def linear_layers(seq: nn.Sequential) -> list[nn.Linear]:
    """The Linear layers of an `nets.mlp` stack (Linear, ReLU, Linear, ..., Linear), or a
    ValueError for anything else (the fast paths know only that shape)."""
    mods = list(seq)
    ok = len(mods) % 2 == 1 and all(
        isinstance(m, nn.Linear) if i % 2 == 0 else isinstance(m, nn.ReLU) for i, m in enumerate(mods))
    if not ok:
        raise ValueError("the packed MLP paths need a Linear/ReLU/.../Linear stack")
    return [m for m in mods if isinstance(m, nn.Linear)]


def _forward(ws: Sequence[torch.Tensor], bs: Sequence[torch.Tensor], x: torch.Tensor,
             keep: bool) -> list[torch.Tensor]:
    """Activations of a chunk: [input, layer 1 (after ReLU), ..., output] (only the output unless
    `keep`)."""
    hs = [x]
    h = x
    last = len(ws) - 1
    for k, (w, b) in enumerate(zip(ws, bs)):
        h = torch.addmm(b, h, w.t())
        if k < last:
            h.clamp_(min=0)
        if keep:
            hs.append(h)
    return hs if keep else [h]


def _backward(ws, hs, g, gw, gb, input_grad: bool) -> torch.Tensor | None:
    """Accumulate one chunk's parameter gradients into gw / gb (gw[k] is stored transposed, (in,
    out), for the layers `_transposed_grad` picks) and return the gradient of the chunk's input."""
    for k in range(len(ws) - 1, -1, -1):
        inp = hs[k]
        if _transposed_grad(ws[k]):
            gw[k].addmm_(inp.t(), g)
        else:
            gw[k].addmm_(g.t(), inp)
        gb[k].add_(g.sum(0))
        if k > 0 or input_grad:
            g = g @ ws[k]
            if k > 0:  # ReLU's gradient: zero where the (post-ReLU) activation is 0
                g = torch.ops.aten.threshold_backward(g, hs[k], 0.0)
    return g if input_grad else None


def _transposed_grad(w: torch.Tensor) -> bool:
    """Accumulate this layer's weight gradient as (in, out): faster when in < out (see the module)."""
    return w.shape[1] < w.shape[0]


def _grad_buffers(ws, bs):
    gw = [w.new_zeros(w.shape[::-1]) if _transposed_grad(w) else torch.zeros_like(w) for w in ws]
    return gw, [torch.zeros_like(b) for b in bs]


def _param_grads(ws, gw, gb) -> list[torch.Tensor]:
    out = []
    for w, a, b in zip(ws, gw, gb):
        out += [a.t().contiguous() if _transposed_grad(w) else a, b]
    return out


class _MLP(torch.autograd.Function):
    """The MLP over the rows of x, or, with an `index` (N, width), over the rows ``src[index]``
    of a 1-D src, chunk by chunk; src's gradient (summed over the repeats of each entry) only
    where it needs one (the observation is data). With `recompute` the forward keeps nothing and
    the backward recomputes each chunk's activations; otherwise it keeps them."""

    @staticmethod
    def forward(ctx, src, index, chunk, recompute, *params):
        ws, bs = params[0::2], params[1::2]
        keep = not recompute and any(ctx.needs_input_grad)
        n = len(src if index is None else index)
        out = src.new_empty((n, ws[-1].shape[0]))
        ctx.kept = []
        for s in range(0, n, chunk):
            hs = _forward(ws, bs, _chunk(src, index, s, chunk), keep=keep)
            out[s:s + chunk] = hs[-1]
            if keep:
                ctx.kept.append(hs)
        ctx.save_for_backward(src, index, *params)
        ctx.chunk, ctx.n = chunk, n
        return out

    @staticmethod
    def backward(ctx, grad_out):
        src, index, *params = ctx.saved_tensors
        ws, bs = params[0::2], params[1::2]
        gw, gb = _grad_buffers(ws, bs)
        input_grad = ctx.needs_input_grad[0]
        grad_src = torch.zeros_like(src) if input_grad else None
        grad_out = grad_out.contiguous()
        for i, s in enumerate(range(0, ctx.n, ctx.chunk)):
            hs = ctx.kept[i] if ctx.kept else _forward(ws, bs, _chunk(src, index, s, ctx.chunk),
                                                       keep=True)
            g = _backward(ws, hs, grad_out[s:s + ctx.chunk], gw, gb, input_grad=input_grad)
            if input_grad:
                grad_src.scatter_add_(0, index[s:s + ctx.chunk].reshape(-1), g.reshape(-1))
        ctx.kept = []
        return (grad_src, None, None, None, *_param_grads(ws, gw, gb))


def _chunk(src: torch.Tensor, index: torch.Tensor | None, s: int, chunk: int) -> torch.Tensor:
    """Rows s to s + chunk of the input: of src itself, or of src[index]."""
    return src[s:s + chunk] if index is None else _take(src, index[s:s + chunk])


class PrefixLayout:
    """The decisions of a batch whose real slots come first (as the envs fill them), grouped for
    `mlp_prefix`: sorted by their number of real slots and cut into groups of `chunk`; a group is
    read only up to its widest decision (rounded up to a multiple of 8), and the rest of its slots,
    all padding, is folded into the first layer's bias (pad * the sum of those weight columns).
    On Lublin-1 the groups average 45% of the 128 slots: the value head's first layer, most of its
    work, shrinks accordingly.

    slot_index (M, slots) as `pack_rows` gives it; counts (M,) real slots per decision."""

    def __init__(self, slot_index: torch.Tensor, counts: np.ndarray, chunk: int = GATHER_CHUNK):
        counts = np.asarray(counts, dtype=np.int64)
        slots = slot_index.shape[1]
        order = np.argsort(counts, kind="stable")
        self.slots = slots
        self.size = len(counts)
        self.groups: list[tuple[torch.Tensor, torch.Tensor]] = []
        for s in range(0, len(order), chunk):
            rows = order[s:s + chunk]
            width = min(slots, max(8, -(-int(counts[rows].max()) // 8) * 8))
            rows_t = torch.from_numpy(rows.copy())
            self.groups.append((rows_t, slot_index[:, :width].index_select(0, rows_t).contiguous()))

    @property
    def mean_width(self) -> float:
        return sum(len(r) * part.shape[1] for r, part in self.groups) / max(self.size, 1)


def _prefix_layers(ws, bs, pad, width):
    """The first layer cut to `width` inputs, the padding beyond folded into its bias."""
    tail = ws[0][:, width:].sum(1)
    return [ws[0][:, :width], *ws[1:]], [bs[0] + pad * tail, *bs[1:]], tail


class _MLPPrefix(torch.autograd.Function):
    """The MLP over rows ``x_d = src[index[d]]`` whose slots from `counts[d]` on all hold `pad`
    (src's padding entries equal pad), group by group (`PrefixLayout`), with the gradients of src
    and of pad."""

    @staticmethod
    def forward(ctx, src, pad, layout, *params):
        ws, bs = params[0::2], params[1::2]
        out = src.new_empty((layout.size, ws[-1].shape[0]))
        keep = any(ctx.needs_input_grad)
        ctx.kept = []
        for rows, part in layout.groups:
            ws_g, bs_g, _ = _prefix_layers(ws, bs, pad, part.shape[1])
            hs = _forward(ws_g, bs_g, _take(src, part), keep=keep)
            out.index_copy_(0, rows, hs[-1])
            if keep:
                ctx.kept.append(hs)
        ctx.save_for_backward(src, pad, *params)
        ctx.layout = layout
        return out

    @staticmethod
    def backward(ctx, grad_out):
        src, pad, *params = ctx.saved_tensors
        ws, bs = params[0::2], params[1::2]
        gw, gb = _grad_buffers(ws, bs)
        grad_src = torch.zeros_like(src)
        grad_pad = torch.zeros_like(pad)
        for (rows, part), hs in zip(ctx.layout.groups, ctx.kept):
            width = part.shape[1]
            ws_g, _, tail = _prefix_layers(ws, bs, pad, width)
            gw_g, gb_g = _grad_buffers(ws_g[:1], bs[:1])
            g = _backward(ws_g, hs, grad_out.index_select(0, rows), gw_g + gw[1:], gb_g + gb[1:],
                          input_grad=True)
            grad_src.scatter_add_(0, part.reshape(-1), g.reshape(-1))
            first = gw_g[0].t() if _transposed_grad(ws_g[0]) else gw_g[0]
            _add_first_layer(gw, ws, width, first)
            g1 = gb_g[0]  # the first layer's summed output gradient over the group
            gb[0].add_(g1)
            # the folded padding: bias + pad * tail
            _add_first_layer(gw, ws, slice(width, None), torch.outer(g1, pad.reshape(1)))
            grad_pad += (g1 * tail).sum()
        ctx.kept = []
        return (grad_src, grad_pad, None, *_param_grads(ws, gw, gb))


def _add_first_layer(gw, ws, columns, value) -> None:
    """gw[0][:, columns] += value, in gw[0]'s storage layout (see `_grad_buffers`)."""
    cols = slice(None, columns) if isinstance(columns, int) else columns
    if _transposed_grad(ws[0]):
        gw[0][cols, :] += value.t()
    else:
        gw[0][:, cols] += value


def mlp_prefix(seq: nn.Sequential, src: torch.Tensor, pad: torch.Tensor,
               layout: PrefixLayout) -> torch.Tensor:
    """``seq(src[index])`` for the decisions of `layout` (rows padded with `pad` after their real
    slots; src's padding entries must equal pad), group by group, with the gradients of src and
    pad. (M, out), in the decisions' order."""
    return _MLPPrefix.apply(src, pad.reshape(()), layout, *_params(seq))


def _params(seq: nn.Sequential) -> list[torch.Tensor]:
    out = []
    for m in linear_layers(seq):
        out += [m.weight, m.bias]
    return out


def mlp_rows(seq: nn.Sequential, x: torch.Tensor, chunk: int = ROW_CHUNK,
             recompute: bool = False) -> torch.Tensor:
    """``seq(x)`` for x (N, in) -> (N, out), with the chunked backward (no gradient for x)."""
    if x.requires_grad:
        raise ValueError("mlp_rows gives no gradient for its input; use the module itself")
    return _MLP.apply(x.contiguous(), None, int(chunk), bool(recompute), *_params(seq))


def mlp_gathered(seq: nn.Sequential, src: torch.Tensor, index: torch.Tensor,
                 chunk: int = GATHER_CHUNK, recompute: bool = False) -> torch.Tensor:
    """``seq(src[index])`` for a 1-D src and index (N, width) -> (N, out), chunked, with the
    gradient of src."""
    return _MLP.apply(src, index, int(chunk), bool(recompute), *_params(seq))


class ActionPacking:
    """Where the real slots and the taken actions of a packed batch are, for `action_log_probs`.

    slot_index (M, slots): each slot's row among the distinct rows (`pack_rows`; padding slots
    hold any index, they are not read); mask (M, slots): the real slots; actions (M,): the slot taken.
    Every decision must have a real slot and every action must be a real slot (a rollout never
    samples a padding slot: its probability is exactly 0)."""

    def __init__(self, slot_index: torch.Tensor, mask: torch.Tensor, actions: torch.Tensor):
        mask_np = mask.numpy()
        counts = mask_np.sum(1)
        m = len(counts)
        if m == 0 or (counts == 0).any():
            raise ValueError("ActionPacking: every decision needs at least one real slot")
        acts = actions.numpy()
        if not mask_np[np.arange(m), acts].all():
            raise ValueError("ActionPacking: an action points at a padding slot")
        self.size = m
        self.counts = counts.astype(np.int64)
        self.starts = np.concatenate([[0], np.cumsum(self.counts)[:-1]]).astype(np.int64)
        self.real_index = torch.from_numpy(slot_index.numpy()[mask_np])  # (R,) decision by decision
        self.action_index = torch.from_numpy(slot_index.numpy()[np.arange(m), acts])

    def spread(self, per_decision: np.ndarray) -> np.ndarray:
        """A value per decision repeated over the decision's real slots, (M,) -> (R,)."""
        return np.repeat(per_decision, self.counts)

    def segment_sum(self, per_slot: np.ndarray) -> np.ndarray:
        return np.add.reduceat(per_slot, self.starts)

    def shifted(self, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(z - max, max): the real slots' scores less their decision's largest, and that largest."""
        z = scores[self.real_index.numpy()]
        top = np.maximum.reduceat(z, self.starts)
        z -= self.spread(top)
        return z, top


class _ActionLogProb(torch.autograd.Function):
    """log p(action) = score[action] - max - log sum_j exp(score_j - max) over the real slots j."""

    @staticmethod
    def forward(ctx, scores, packing: ActionPacking):
        s = scores.detach().numpy()
        z, top = packing.shifted(s)
        e = np.exp(z)
        total = packing.segment_sum(e)
        logp = s[packing.action_index.numpy()] - top - np.log(total)
        ctx.packing = packing
        ctx.e, ctx.total = e, total
        ctx.n = len(s)
        return torch.from_numpy(logp.astype(np.float32, copy=False))

    @staticmethod
    def backward(ctx, grad):
        # d logp_d / d score_j = [j is the action] - p_j, p_j = e_j / total_d
        packing = ctx.packing
        g = grad.detach().numpy().astype(np.float32, copy=False)
        weight = torch.from_numpy(packing.spread(g / ctx.total) * ctx.e)
        out = torch.zeros(ctx.n, dtype=grad.dtype)
        out.scatter_add_(0, packing.action_index, grad.to(out.dtype))
        out.scatter_add_(0, packing.real_index, -weight)
        return out, None


def action_log_probs(scores: torch.Tensor, packing: ActionPacking) -> torch.Tensor:
    """The log-probability of each decision's action (M,) under the masked softmax of the row
    scores (U,) (`nets.KernelPolicy.row_scores` of the distinct rows)."""
    return _ActionLogProb.apply(scores, packing)


def entropy(scores: torch.Tensor, packing: ActionPacking) -> torch.Tensor:
    """Each decision's entropy (M,), over its real slots (no gradient)."""
    z, _ = packing.shifted(scores.detach().numpy())
    e = np.exp(z)
    total = packing.segment_sum(e)
    # H = -sum p (z - log total) = log total - sum(e z) / total
    return torch.from_numpy(np.log(total) - packing.segment_sum(e * z) / total)


__all__ = ["ActionPacking", "GATHER_CHUNK", "PrefixLayout", "ROW_CHUNK", "action_log_probs",
           "distinct_rows", "entropy", "gather", "linear_layers", "mlp_gathered", "mlp_prefix",
           "mlp_rows", "pack_rows"]
