"""SchedInspector's agent (spec schedinspector.md sections 5-7): PPO on `hpcsched/Inspect-v0`.

The networks are the paper's: a policy MLP F -> 32 -> 16 -> 8 -> 2 (938 parameters with the code's
7 features) and a value MLP F -> 32 -> 16 -> 8 -> 1 (929). The algorithm is RLScheduler's PPO
(`agents/ppo.py`): the same rollouts (`rollout.collect`), the same GAE (`advantages_and_returns`),
the same per-epoch seeding (`derived_seed`) and the same update (clipped surrogate, full batch, up
to 80 policy steps with the KL stop, 80 value steps); only the networks and the environment differ,
and with two-way decisions over 7 numbers there is nothing to pack, so the update is written here
in full.

    model = InspectorPPO(InspectorConfig(trace="lublin-1", base="sjf"))
    model.learn(epochs=40)
    model.save("runs/insp/model.pt")
    policy = load_inspector("runs/insp/model.pt")      # a Policy: sjf with the inspector
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, fields
from typing import Any, Callable

import numpy as np
import torch
from torch import nn

from hpcsched.agents import rollout
from hpcsched.agents.greedy import greedy, greedy_batch, linear_weights64
from hpcsched.agents.nets import apply_mask, mlp
from hpcsched.agents.ppo import (advantages_and_returns, derived_seed, epoch_stats,
                                 run_epochs)
from hpcsched.envs.inspector import FEATURE_SETS, REJECT, Inspection, VecInspect

ALGORITHM = "schedinspector-ppo"
HIDDEN = (32, 16, 8)


@dataclass
class InspectorConfig:
    """Every setting of a training run. Defaults: the paper (section 4.1) and the authors' code."""

    # -- the environment (hpcsched.envs.inspector.InspectEnv's arguments) ---------------------------
    trace: str = "lublin-1"
    base: str = "sjf"
    metric: str = "bsld"  # bsld, wait, utilization
    backfill: str = "none"
    # "schedinspector": the authors' code (run times as requests, its SJF); "schedinspector-paper":
    # the users' requested times on SchedGym's loader (the shipped models were trained under it)
    profile: str = "schedinspector"
    episode_jobs: int = 128
    features: str = "code"  # "code": 7 features; "paper": 8 (metric-aware delay, backfilling)
    # None: the profile's requested times; "perfect": the run times under any profile
    estimate: str | None = None
    reward: str = "paper"  # "paper": (base - insp) / base; "code": / max(base, insp, 1)
    train_fraction: float = 0.2
    max_interval: float = 600.0
    max_rejections: int = 72
    # -- PPO -----------------------------------------------------------------------------------------
    trajectories_per_epoch: int = 100
    n_envs: int = 100
    gamma: float = 1.0
    lam: float = 0.97
    clip_ratio: float = 0.2
    pi_lr: float = 1e-3  # the paper's stated rate (the code's policy rate is 3e-4)
    vf_lr: float = 1e-3
    train_pi_iters: int = 80
    train_v_iters: int = 80
    target_kl: float = 0.01
    # None: PyTorch's default initialisation (about 50% reject at first). P in (0, 1): the output
    # layer starts with near-zero weights and the bias of an accept probability P, so the inspector
    # starts as (almost) the base heuristic and only learns to reject where that pays.
    init_accept: float | None = None
    # None, or "reject-unfit": before PPO, fit the policy by cross-entropy to that fixed rule's
    # decisions on `init_episodes` training episodes, so PPO starts from the rule, not from chance.
    init_rule: str | None = None
    init_episodes: int = 100
    # -- the run -------------------------------------------------------------------------------------
    seed: int = 0
    threads: int | None = None

    @property
    def n_features(self) -> int:
        return FEATURE_SETS[self.features]

    def env_kwargs(self) -> dict[str, Any]:
        return dict(trace=self.trace, base=self.base, metric=self.metric, backfill=self.backfill,
                    episode_jobs=self.episode_jobs, features=self.features,
                    estimate=self.estimate, reward=self.reward,
                    train_fraction=self.train_fraction, max_interval=self.max_interval,
                    max_rejections=self.max_rejections, profile=self.profile)

    def __post_init__(self) -> None:
        from hpcsched.sim.profiles import get_profile

        if self.estimate is not None and get_profile(self.profile).cleaning == "schedinspector":
            if self.estimate == "user":
                raise ValueError(f"estimate 'user': the {self.profile} profile schedules every job "
                                 f"with its run time as its request (SchedInspector's code); for "
                                 f"the users' requested times use --profile schedinspector-paper")
            self.estimate = None  # "perfect": the profile's loader does it already

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "InspectorConfig":
        known = {f.name for f in fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"InspectorConfig: unknown setting(s) {', '.join(sorted(unknown))}")
        return cls(**trained_config(d))


def trained_config(d: dict[str, Any]) -> dict[str, Any]:
    """A saved config as it reads today. Before the schedinspector profile became the authors'
    code (run times as requests, SJF's ties by processors, zero-length jobs kept), a config named
    it with an `estimate` of "user" or "perfect"; those semantics are the schedinspector-paper
    profile's now, so such a config names that profile. Configs written since never pair
    schedinspector with an estimate."""
    if d.get("profile", "schedinspector") == "schedinspector" and d.get("estimate") is not None:
        return {**d, "profile": "schedinspector-paper"}
    return dict(d)


class InspectorPolicyNet(nn.Module):
    """F -> 32 -> 16 -> 8 -> 2 logits (accept, reject), ReLU; a masked action gets -1e6."""

    def __init__(self, features: int = 7):
        super().__init__()
        self.net = mlp([features, *HIDDEN, 2])

    def forward(self, obs: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        logits = self.net(obs)
        return logits if mask is None else apply_mask(logits, mask)


def bias_toward_accept(policy: InspectorPolicyNet, p_accept: float) -> None:
    """Start `policy` accepting with probability about `p_accept` whatever the observation: the
    output layer's weights are shrunk 100-fold and its bias set to log-odds log(p / (1 - p))."""
    if not 0.0 < p_accept < 1.0:
        raise ValueError(f"init_accept: {p_accept} is not a probability strictly between 0 and 1")
    out = policy.net[-1]
    with torch.no_grad():
        out.weight.mul_(0.01)
        out.bias.copy_(torch.tensor([float(np.log(p_accept)), float(np.log(1.0 - p_accept))]))


class InspectorValueNet(nn.Module):
    """F -> 32 -> 16 -> 8 -> 1: the same trunk as the policy, a scalar out."""

    def __init__(self, features: int = 7):
        super().__init__()
        self.net = mlp([features, *HIDDEN, 1])

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.net(obs).squeeze(-1)


class InspectorPPO:
    """PPO on `VecInspect`. SB3's verbs: `learn`, `predict`, `save`, `load`."""

    def __init__(self, config: InspectorConfig | None = None, env: VecInspect | None = None):
        self.config = config = config or InspectorConfig()
        torch.manual_seed(config.seed)
        self.policy = InspectorPolicyNet(config.n_features)
        if config.init_accept is not None:
            bias_toward_accept(self.policy, config.init_accept)
        self.value = InspectorValueNet(config.n_features)
        self.pi_optimizer = torch.optim.Adam(self.policy.parameters(), lr=config.pi_lr)
        self.v_optimizer = torch.optim.Adam(self.value.parameters(), lr=config.vf_lr)
        self.epoch = 0
        self.history: list[dict[str, Any]] = []
        self.run_options: dict[str, Any] = {}  # the training run's validation options (kept)
        self._env = env

    def env(self) -> VecInspect:
        if self._env is None:
            self._env = VecInspect(self.config.n_envs, **self.config.env_kwargs())
        return self._env

    def predict(self, obs: np.ndarray, mask: np.ndarray, deterministic: bool = True) -> np.ndarray:
        """Actions for observations (B, F) with masks (B, 2); greedy (the rule of
        `hpcsched.agents.greedy`, float64 scores) unless told otherwise."""
        if deterministic:
            return greedy_batch(mlp_logits64(linear_weights64(self.policy),
                                             np.asarray(obs, dtype=np.float64)), mask)
        with torch.no_grad():
            logits = self.policy(torch.as_tensor(obs, dtype=torch.float32),
                                 torch.as_tensor(mask, dtype=torch.bool))
            return torch.multinomial(torch.softmax(logits, -1), 1).squeeze(1).numpy()

    def _act_fn(self, generator: torch.Generator) -> rollout.ActFn:
        def act(obs: np.ndarray, mask: np.ndarray):
            with torch.no_grad():
                logp_all = torch.log_softmax(
                    self.policy(torch.from_numpy(obs), torch.from_numpy(mask)), -1)
                a = torch.multinomial(logp_all.exp(), 1, generator=generator).squeeze(1)
                return a.numpy(), logp_all.gather(1, a[:, None]).squeeze(1).numpy()
        return act

    def imitate_rule(self) -> dict[str, float]:
        """Fit the policy to `config.init_rule`'s decisions on training episodes (full-batch
        cross-entropy, `agents.imitation.imitate`); returns its final loss and agreement."""
        from hpcsched.agents.imitation import imitate

        c = self.config
        rules = {"reject-unfit": reject_unfit}
        if c.init_rule not in rules:
            raise ValueError(f"init_rule: unknown rule {c.init_rule!r}; known: {', '.join(rules)}")
        rule = rules[c.init_rule]

        def act(obs: np.ndarray, mask: np.ndarray):
            a = np.array([rule(o, m) for o, m in zip(obs, mask)], dtype=np.int64)
            return a, np.zeros(len(a), dtype=np.float32)

        previous = torch.get_num_threads()
        if c.threads:
            torch.set_num_threads(c.threads)
        try:
            traj = rollout.collect(self.env(), act, c.init_episodes,
                                   seed=derived_seed(c.seed, 10**6, 0))
            return imitate(self.policy, traj.obs, traj.mask, traj.actions)
        finally:
            torch.set_num_threads(previous)

    def _update(self, obs, mask, actions, logp_old, adv, ret) -> dict[str, float]:
        c = self.config
        stats: dict[str, float] = {}
        pi_iters = 0
        for i in range(c.train_pi_iters):
            self.pi_optimizer.zero_grad()
            logp_all = torch.log_softmax(self.policy(obs, mask), -1)
            logp = logp_all.gather(1, actions[:, None]).squeeze(1)
            ratio = torch.exp(logp - logp_old)
            clipped = torch.clamp(ratio, 1 - c.clip_ratio, 1 + c.clip_ratio) * adv
            loss = -torch.min(ratio * adv, clipped).mean()
            with torch.no_grad():
                kl = float((logp_old - logp).mean())
                if i == 0:
                    p = logp_all.exp()
                    stats["loss_pi"] = float(loss)
                    stats["entropy"] = -float(torch.where(p > 0, p * logp_all, 0.0).sum(-1).mean())
                stats["kl"] = kl
                stats["clip_fraction"] = float(((ratio - 1).abs() > c.clip_ratio).float().mean())
            if kl > 1.5 * c.target_kl:  # too far from the rollout policy: no more steps
                break
            loss.backward()
            self.pi_optimizer.step()
            pi_iters += 1
        stats["pi_iters"] = pi_iters
        for i in range(c.train_v_iters):
            self.v_optimizer.zero_grad()
            loss_v = ((self.value(obs) - ret) ** 2).mean()
            if i == 0:
                stats["loss_v"] = float(loss_v.detach())
            loss_v.backward()
            self.v_optimizer.step()
        return stats

    def _one_epoch(self) -> dict[str, Any]:
        c = self.config
        t0 = time.perf_counter()
        generator = torch.Generator().manual_seed(derived_seed(c.seed, self.epoch, 1))
        traj = rollout.collect(self.env(), self._act_fn(generator), c.trajectories_per_epoch,
                               seed=derived_seed(c.seed, self.epoch, 0))
        t1 = time.perf_counter()
        obs = torch.from_numpy(traj.obs)
        with torch.no_grad():
            values = self.value(obs).numpy().astype(np.float64)
        adv, ret = advantages_and_returns(values, traj.lengths, traj.rewards, c.gamma, c.lam)
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        stats = self._update(obs, torch.from_numpy(traj.mask), torch.from_numpy(traj.actions),
                             torch.from_numpy(traj.logp), torch.from_numpy(adv.astype(np.float32)),
                             torch.from_numpy(ret.astype(np.float32)))
        t2 = time.perf_counter()
        self.epoch += 1
        out: dict[str, Any] = {"epoch": self.epoch, "trajectories": len(traj.lengths),
                               "decisions": int(traj.lengths.sum()),
                               "mean_reward": float(traj.rewards.mean())}
        return epoch_stats(out, traj, stats, t0, t1, t2)

    def learn(self, epochs: int, callback: Callable[[dict[str, Any]], bool | None] | None = None
              ) -> "InspectorPPO":
        """Train `epochs` more epochs. `callback(stats)` runs after each; returning False stops."""
        return run_epochs(self, epochs, callback)

    # -- files --------------------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        return {
            "algorithm": ALGORITHM,
            "config": asdict(self.config),
            "epoch": self.epoch,
            "policy": self.policy.state_dict(),
            "value": self.value.state_dict(),
            "pi_optimizer": self.pi_optimizer.state_dict(),
            "v_optimizer": self.v_optimizer.state_dict(),
            "norm": dict(self.env().norm),
            "history": self.history,
            "run_options": dict(self.run_options),
        }

    def save(self, path) -> None:
        from hpcsched.agents.checkpoint import save_checkpoint

        save_checkpoint(path, self.state())

    @classmethod
    def load(cls, path, restore_rng: bool = True) -> "InspectorPPO":
        from hpcsched.agents.checkpoint import config_of, restore_rng_states, restore_state

        ck = load_inspector_checkpoint(path)
        model = config_of(path, lambda: cls(InspectorConfig.from_dict(ck["config"])))
        for key, part in (("policy", model.policy), ("value", model.value),
                          ("pi_optimizer", model.pi_optimizer),
                          ("v_optimizer", model.v_optimizer)):
            restore_state(path, part, ck, key)
        model.epoch = int(ck["epoch"])
        model.history = list(ck.get("history", []))
        model.run_options = dict(ck.get("run_options") or {})
        if restore_rng:
            restore_rng_states(ck.get("rng"))
        return model


def load_inspector_checkpoint(path) -> dict[str, Any]:
    """The checkpoint's contents, its config as it reads today (`trained_config`)."""
    from hpcsched.agents.checkpoint import load_checkpoint

    ck = load_checkpoint(path)
    if ck.get("algorithm") != ALGORITHM:
        raise ValueError(f"{path} is not a SchedInspector model (it holds "
                         f"{ck.get('algorithm', 'an RLScheduler model')}); use it as rl:{path}")
    ck["config"] = trained_config(ck.get("config", {}))
    return ck


# -- a trained inspector as a Policy --------------------------------------------------------------
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
            self._weights = linear_weights64(net)

    def logits(self, obs: np.ndarray) -> np.ndarray:
        """The network's two logits (accept, reject) of one observation, in float64."""
        return mlp_logits64(self._weights, np.asarray(obs, dtype=np.float64))

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


def mlp_logits64(weights: list[tuple[np.ndarray, np.ndarray]], x: np.ndarray) -> np.ndarray:
    """The inspector MLP's forward pass in float64: `weights` as `linear_weights64` gives them
    (W^T, b per layer), ReLU between layers; `x` one observation (F,) or a batch (B, F)."""
    for i, (wt, b) in enumerate(weights):
        x = x @ wt + b
        if i < len(weights) - 1:
            x = np.maximum(x, 0.0)
    return x


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
    from hpcsched.agents.checkpoint import config_of, restore_state
    from hpcsched.policies.priority import get_policy

    ck = load_inspector_checkpoint(path)
    cfg = config_of(path, lambda: InspectorConfig.from_dict(ck["config"]))
    net = config_of(path, lambda: InspectorPolicyNet(cfg.n_features))
    restore_state(path, net, ck, "policy")
    base_policy = get_policy(base or cfg.base, profile=profile or cfg.profile)
    return InspectedPolicy(net, base_policy, norm if norm is not None else ck["norm"],
                           features=cfg.features, metric=cfg.metric,
                           max_interval=cfg.max_interval, max_rejections=cfg.max_rejections,
                           sample=sample, seed=seed, name=name or f"inspect:{path}")


__all__ = ["ALGORITHM", "InspectedPolicy", "InspectorConfig", "InspectorPPO",
           "InspectorPolicyNet", "InspectorValueNet", "load_inspector",
           "load_inspector_checkpoint", "reject_unfit", "trained_config"]
