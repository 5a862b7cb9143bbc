"""A trained SchedInspector in use: a base heuristic with the inspector in the loop as an engine
`Policy` (`inspect:PATH`, `InspectedPolicy`), the fixed rule in the inspector's place
(`reject_unfit`), and the model file's loader (`load_inspector`).

    policy = load_inspector("runs/insp/model.pt")            # its base heuristic, inspected
    policy = load_inspector("runs/insp/model.pt", base="f1")  # another base
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
from torch import nn

from hpcsched.agents.greedy import greedy, linear_weights, mlp_forward
from hpcsched.agents.nets import InspectorPolicyNet
from hpcsched.envs.inspection import REJECT, Inspection


def load_inspector_checkpoint(path) -> dict[str, Any]:
    """The model file's contents, its config as it reads today (`trained_config`)."""
    from hpcsched.modelfile import OtherKindError, read_model
    from hpcsched.agents.inspector import trained_config

    ck = read_model(path)
    if ck["recipe"] != "schedinspector":
        hint = f"; use it as rl:{path}" if ck["recipe"] == "rlscheduler" else ""
        raise OtherKindError(f"{path} is not a SchedInspector model (it holds a {ck['recipe']} "
                             f"model){hint}")
    ck["config"] = trained_config(ck["config"])
    return ck


class InspectedPolicy:
    """A base heuristic with a trained inspector in the loop, as an engine `Policy`: the base's top
    job is proposed, and the inspector accepts it (Pick) or rejects it (Wait, up to 600 s) exactly
    as in `InspectEnv`. Greedy by default (DESIGN decision 6); `sample=True` samples, as the
    authors' test script does.

    `decide(obs, mask) -> action` may replace the network (an always-accept inspector, say)."""

    def __init__(self, net: nn.Module | None, base, norm: dict[str, float], *,
                 features: str = "code", metric: str = "bsld", max_interval: float = 600.0,
                 max_rejections: int = 72, sample: bool = False, seed: int = 0,
                 name: str = "inspect", decide: Callable[[np.ndarray, np.ndarray], int] | None = None):
        self.name = name
        self.base = base
        self.norm = dict(norm)
        self.features = features
        self.metric = metric
        self.max_interval = max_interval
        self.max_rejections = max_rejections
        self.sample = sample
        self.rng = np.random.default_rng(seed)
        self._decide = decide
        # the engine keeps its queue in the base heuristic's order, as it does for the base alone
        for attr in ("static_keys", "keys"):
            if hasattr(base, attr):
                setattr(self, attr, getattr(base, attr))
        self._ranks = hasattr(base, "static_keys") or hasattr(base, "keys")
        self.inspection: Inspection | None = None
        self._weights = None
        if net is not None:  # plain numpy: far cheaper than a torch call for one decision
            self._weights = linear_weights(net)

    @classmethod
    def of(cls, net: nn.Module, base, norm: dict[str, float], config,
           **options) -> "InspectedPolicy":
        """`net`, the policy of an inspector configuration `config` (its features, metric, longest
        wait and rejection cap), around `base`; `options` are the constructor's others (sample,
        seed, name)."""
        return cls(net, base, norm, features=config.features, metric=config.metric,
                   max_interval=config.max_interval, max_rejections=config.max_rejections,
                   **options)

    def logits(self, obs: np.ndarray) -> np.ndarray:
        """The network's two logits (accept, reject) of one observation, in float64."""
        return mlp_forward(self._weights, np.asarray(obs, dtype=np.float64))

    def act(self, obs: np.ndarray, mask: np.ndarray) -> int:
        """The inspector's action (0 accept, 1 reject) on an observation: by the greedy rule of
        `hpcsched.agents.greedy` (float64 logits rounded to float32; on a tie, accept), or with
        `sample` a draw from the softmax of the float64 logits."""
        if self._decide is not None:
            return int(self._decide(obs, mask))
        logits = self.logits(obs)
        if not self.sample:
            return greedy(logits, mask)
        # Gumbel-max: a draw from softmax(logits)
        return int(np.argmax(np.where(mask, logits, -np.inf) + self.rng.gumbel(size=2)))

    # -- the Policy protocol: the engine ranks the queue by the base's priority, the inspector
    # accepts the top job (Pick) or lets time pass (Wait) --------------------------------------------
    def reset(self, view) -> None:
        Inspection.check(view)
        self.inspection = Inspection(self.norm, len(view.jobs), features=self.features,
                                     metric=self.metric, max_interval=self.max_interval,
                                     max_rejections=self.max_rejections)

    def decide(self, view):
        insp = self.inspection
        row = int(view.queue[0]) if self._ranks else int(self.base.select(view))
        insp.propose(view, row)
        action = self.act(insp.observe(), insp.mask()) if insp.can_reject() else 0
        return insp.decision(action)

    def summary(self) -> dict[str, float]:
        return self.inspection.summary()


def reject_unfit(obs: np.ndarray, mask: np.ndarray) -> int:
    """A fixed rule in the inspector's place: reject the proposed job exactly when it does not fit
    now (feature 4, "runnable"). Under commit semantics this undoes the commitment to a job that
    would block the queue until it fits, so the next event can bring a pick that fits."""
    return REJECT if obs[4] < 0.5 and mask[REJECT] else 0


def load_inspector(path, *, base: str | None = None, norm: dict[str, float] | None = None,
                   sample: bool = False, seed: int = 0, name: str | None = None,
                   profile=None) -> InspectedPolicy:
    """The inspector in checkpoint `path` around its base heuristic (or `base`), as a Policy.
    `norm`: the normalisation constants of the trace it schedules (default: the training trace's);
    `profile`: the profile it runs under, which says what the base's name means (default: the
    one it was trained under)."""
    from hpcsched.modelfile import config_of, restore_state
    from hpcsched.agents.inspector import InspectorConfig
    from hpcsched.policies.priority import get_policy

    ck = load_inspector_checkpoint(path)
    cfg = config_of(path, lambda: InspectorConfig.from_dict(ck["config"]))
    net = config_of(path, lambda: InspectorPolicyNet(cfg.n_features))
    restore_state(path, net, ck["weights"], "policy")
    base_policy = get_policy(base or cfg.base, profile=profile or cfg.profile)
    return InspectedPolicy.of(net, base_policy, ck["norm"] if norm is None else norm, cfg,
                              sample=sample, seed=seed, name=name or f"inspect:{path}")


__all__ = ["InspectedPolicy", "load_inspector", "load_inspector_checkpoint", "reject_unfit"]
