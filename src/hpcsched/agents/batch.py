"""An epoch's decisions as PPO's update reads them (`Batch`), and the action distributions the
policy networks give over them: `MaskedCategorical`, the softmax of masked logits (the plain path),
and `PackedCategorical`, the same softmax from the scores of the batch's distinct job rows over the
real slots only (`packed.action_log_probs`, the kernel policy's path).

A network with a packed path asks for the batch's packing (`packed.pack_rows`: its distinct rows,
8x fewer than the real rows on Lublin-1, and where each slot and action is among them); it is
computed once, on first use. A network without one reads the plain tensors, whole or in `parts`.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np
import torch

from hpcsched.agents.packed import ActionPacking, PrefixLayout, action_log_probs, entropy, pack_rows


class Batch:
    """Decisions ``obs (M, ...)``, ``mask (M, A)``, ``actions (M,)`` and, for the update,
    ``logp_old``, ``adv``, ``ret`` (M,) as tensors sharing the given arrays' memory."""

    def __init__(self, obs: np.ndarray, mask: np.ndarray, actions: np.ndarray,
                 logp: np.ndarray | None = None) -> None:
        self.size = len(actions)
        self.obs = torch.from_numpy(obs)
        self.mask = torch.from_numpy(mask)
        self.actions = torch.from_numpy(actions)
        self.logp_old = torch.from_numpy(logp) if logp is not None else torch.empty(0)
        self.adv = torch.empty(0)
        self.ret = torch.empty(0)

    def to(self, device: torch.device) -> "Batch":
        """The batch with its tensors on `device` (itself on the CPU; the packing stays on the
        CPU: the kernel networks that read it train there)."""
        if device.type == "cpu":
            return self
        for name in ("obs", "mask", "actions", "logp_old", "adv", "ret"):
            setattr(self, name, getattr(self, name).to(device))
        return self

    def parts(self, chunk: int | None) -> list["Batch"]:
        """The batch in views of `chunk` decisions (the last shorter); the whole batch if None."""
        if chunk is None or chunk >= self.size:
            return [self]
        return [self._view(s, min(s + chunk, self.size)) for s in range(0, self.size, chunk)]

    def subset(self, index: torch.Tensor) -> "Batch":
        """The decisions at `index` (a minibatch), as a batch of their own (copies)."""
        part = object.__new__(Batch)
        part.size = len(index)
        for name in ("obs", "mask", "actions", "logp_old", "adv", "ret"):
            whole = getattr(self, name)
            setattr(part, name, whole[index] if len(whole) else whole)
        return part

    def _view(self, s0: int, s1: int) -> "Batch":
        part = object.__new__(Batch)
        part.size = s1 - s0
        for name in ("obs", "mask", "actions", "logp_old", "adv", "ret"):
            whole = getattr(self, name)
            setattr(part, name, whole[s0:s1] if len(whole) else whole)
        return part

    # -- the packing (kernel networks), computed on first use ---------------------------------------
    @cached_property
    def packed(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(unique_rows (U, F), slot_index (M, slots)): the distinct real job rows, and each slot's
        row among them (U + slot for a padding slot)."""
        return pack_rows(self.obs.numpy(), self.mask.numpy())

    @cached_property
    def pad_row(self) -> torch.Tensor | None:
        """The padding row, if every padding slot shows the same one (else None: no packed
        value path)."""
        obs, mask = self.obs.numpy(), self.mask.numpy()
        pad = obs[~mask]
        return torch.from_numpy(pad[0].copy()) if len(pad) and (pad == pad[0]).all() else None

    @cached_property
    def packing(self) -> ActionPacking | None:
        """Where the real slots and the actions are among the distinct rows; None if some action
        is a padding slot (a rollout never samples one)."""
        try:
            return ActionPacking(self.packed[1], self.mask, self.actions)
        except ValueError:
            return None

    @cached_property
    def layout(self) -> PrefixLayout | None:
        """The decisions grouped by their number of real slots, if every decision shows its real
        slots first (as the environments do)."""
        mask = self.mask.numpy()
        counts = mask.sum(1)
        prefix = np.array_equal(mask, np.arange(mask.shape[1])[None, :] < counts[:, None])
        return PrefixLayout(self.packed[1], counts) if prefix and self.size else None


class MaskedCategorical:
    """The softmax over masked logits (M, A), with the decisions' actions."""

    def __init__(self, logits: torch.Tensor, actions: torch.Tensor) -> None:
        self.logp_all = torch.log_softmax(logits, -1)
        self.actions = actions

    def log_prob(self) -> torch.Tensor:
        """Each decision's log-probability of its action (M,), with gradient."""
        return self.logp_all.gather(1, self.actions[:, None]).squeeze(1)

    def _p_log_p(self) -> torch.Tensor:
        with torch.no_grad():
            p = self.logp_all.exp()
            return torch.where(p > 0, p * self.logp_all, 0.0)

    def entropy(self) -> torch.Tensor:
        """Each decision's entropy (M,), no gradient."""
        return -self._p_log_p().sum(-1)

    def entropy_sum(self) -> float:
        """The entropies summed over the decisions (one sum over every slot of every decision)."""
        return -float(self._p_log_p().sum())


class PackedCategorical:
    """The softmax over the real slots' scores, from the distinct rows' scores (U,)."""

    def __init__(self, scores: torch.Tensor, packing: ActionPacking) -> None:
        self.scores = scores
        self.packing = packing

    def log_prob(self) -> torch.Tensor:
        return action_log_probs(self.scores, self.packing)

    def entropy(self) -> torch.Tensor:
        return entropy(self.scores, self.packing)

    def entropy_sum(self) -> float:
        return float(self.entropy().sum())


__all__ = ["Batch", "MaskedCategorical", "PackedCategorical"]
