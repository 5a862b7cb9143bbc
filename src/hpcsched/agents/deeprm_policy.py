"""A trained DeepRM network in use: the engine policy and the model file it loads from (its slim
export is `modelfile.slim`'s, as every learner's)."""

from __future__ import annotations

import numpy as np
from torch import nn

from hpcsched.agents.deeprm import DeepRMConfig, NumpyPolicy, choose, policy_network
from hpcsched.sim.discrete_batch import DiscreteBatch


class GridNetPolicy:
    """A trained DeepRM network as a deeprm-profile policy: greedy by default (the rule of
    `hpcsched.agents.greedy`: float64 logits rounded to float32, the lowest action index on a
    tie, void last), or sampling with `sample`. `act(batch)` gives
    one action index per environment of a batch; `decide(view)` the same choice as a decision on
    one engine (`hpcsched.policies.deeprm.decide_on_grid`)."""

    def __init__(self, net: nn.Sequential, config: DeepRMConfig, *, sample: bool = False,
                 seed: int = 0, name: str = "deeprm") -> None:
        # greedy decisions in float64 (`hpcsched.agents.greedy`), samples as training draws them
        self.forward = NumpyPolicy(net, np.float32 if sample else np.float64)
        self.config = config
        self.sample = sample
        self.rng = np.random.default_rng(seed)
        self.name = name

    def act(self, batch: DiscreteBatch) -> np.ndarray:
        c = self.config
        if (batch.grid.resources, batch.grid.units, batch.grid.horizon, batch.slots,
                batch.backlog) != (c.resources, c.units, c.horizon, c.slots, c.backlog):
            raise ValueError(f"model {self.name} was trained on a {c.resources}x{c.units} grid, "
                             f"horizon {c.horizon}, {c.slots} slots, backlog {c.backlog}; the "
                             f"simulation has {batch.grid.describe()}, {batch.slots} slots, "
                             f"backlog {batch.backlog}")
        out = np.full(batch.B, batch.void)
        live = np.flatnonzero(~batch.done)
        if live.size:
            img = batch.images(live, np.float32).reshape(len(live), -1)
            mask = batch.action_mask()[live] if c.mask_invalid else None
            out[live] = choose(self.forward.logits(img), mask, self.rng, not self.sample)
        return out

    def decide(self, view):
        from hpcsched.policies.deeprm import decide_on_grid

        return decide_on_grid(self, view)


def load_deeprm_policy(path, *, sample: bool = False, seed: int = 0,
                       name: str | None = None) -> GridNetPolicy:
    """A shipped or trained DeepRM model file as a policy: only its config and weights are read,
    so a slim export (`modelfile.slim`) decides exactly as the file it was made from."""
    from hpcsched.modelfile import config_of, read_model, restore_state

    ck = read_model(path, recipe="deeprm")
    config = config_of(path, lambda: DeepRMConfig(**ck["config"]))
    net = config_of(path, lambda: policy_network(
        int(np.prod(config.batch().image_shape)), config.hidden, config.slots + 1))
    restore_state(path, net, ck["weights"], "policy")
    return GridNetPolicy(net, config, sample=sample, seed=seed, name=name or f"deeprm:{path}")


__all__ = ["GridNetPolicy", "load_deeprm_policy"]
