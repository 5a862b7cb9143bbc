"""PPO over masked discrete actions: SpinningUp's actor-critic PPO, as RLScheduler (spec
rlscheduler.md section 8) and SchedInspector (spec schedinspector.md section 7) ran it.

One epoch:

1. collect exactly `trajectories_per_epoch` episodes from many environments stepped together,
   sampling every action from the policy (one network call per batch, `agents.rollout`);
2. compute values of every decision with the value network, then GAE(gamma, lambda) advantages.
   An episode's only reward comes at its end (with gamma = 1 every decision's return is it);
3. normalise the advantages over the epoch;
4. up to `train_pi_iters` full-batch Adam steps on the clipped surrogate, stopping early when the
   approximate KL to the rollout policy passes 1.5 x `target_kl`; no entropy bonus;
5. `train_v_iters` full-batch Adam steps on the value's squared error to the returns.

A configuration may instead ask for CleanRL's and SB3's update (`PPOParams.minibatch`: DBF's):
`update_epochs` passes over the epoch's decisions in random minibatches, one policy step (with an
entropy bonus `ent_coef`) and one value step on each, gradients clipped to `max_grad_norm`; and
for rewards along the episode rather than only at its end (`step_rewards`). The defaults leave the
full-batch update of RLScheduler and SchedInspector as it was, bit for bit.

Every epoch is a function of the networks, the optimisers and the epoch number only: the
environments are reset with a seed drawn from (seed, epoch) and actions are sampled from a generator
seeded the same way. So training 2 epochs, or 1 epoch + save + load + 1 epoch, gives the same weights.

What PPO learns, and from what, is a configuration (`Configuration`): its networks, its
environments (the training aids that are not the algorithm are wrappers, `envs.wrappers`) and its
hyperparameters (`PPOParams`). RLScheduler's is `agents.rlscheduler.RLSchedulerConfig`,
SchedInspector's `agents.inspector.InspectorConfig`:

    model = PPO(RLSchedulerConfig(trace="lublin-1", metric="bsld"))
    model.learn(epochs=100)
    model.save("runs/lublin-1-bsld.pt")
    model = PPO.load("runs/lublin-1-bsld.pt")        # either kind, from the checkpoint
    policy = load_policy("runs/lublin-1-bsld.pt")    # a Policy the engine accepts
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields
from typing import Any, Callable, Protocol

import numpy as np
import torch

from hpcsched.agents import rollout
from hpcsched.agents.batch import Batch
from hpcsched.agents.greedy import greedy_batch
from hpcsched.agents.nets import MaskedPolicy, ValueNet


@dataclass
class PPOSettings:
    """PPO's settings as a configuration has them (its dataclass's first fields; the defaults
    are RLScheduler's code)."""

    trajectories_per_epoch: int = 100
    gamma: float = 1.0
    lam: float = 0.97
    clip_ratio: float = 0.2
    pi_lr: float = 3e-4
    vf_lr: float = 1e-3
    train_pi_iters: int = 80
    train_v_iters: int = 80
    target_kl: float = 0.01  # early stop once approx KL > 1.5 x target_kl
    seed: int = 0
    threads: int | None = None  # torch.set_num_threads for learn(); None: torch's default


@dataclass
class PPOParams(PPOSettings):
    """The algorithm's settings: a configuration's (`Configuration`), and how the arithmetic is
    arranged. None of the arrangement changes what is estimated; each one fixes the rounding or
    the random stream of a published configuration, so that it trains the same."""

    parallel_update: bool = True  # policy and value iterations in two threads (same arithmetic)
    # torch threads of the rollouts (None: learn's). One: the network calls are small (<= 12,800
    # rows), and a second thread adds a barrier per op that costs a scheduler slice whenever the
    # cores are shared (a 0.1 ms call took 2.5 ms on a loaded 2-core machine). The count changes
    # the last bits of a product, however small (MKL picks its kernel by it).
    rollout_threads: int | None = 1
    chunk: int | None = 2048  # decisions per gradient chunk of networks without a packed path
    sampling: str = "cdf"  # "cdf": one uniform per decision (rollout.sample_categorical); or
    #                        "multinomial": torch.multinomial's stream
    float32_stats: bool = False  # KL, clip fraction and entropy as float32 means over the batch
    #                              (else summed in float64 part by part)
    # -- for learners that update in minibatches (DBF; the defaults keep the full-batch update) --
    minibatch: int | None = None  # decisions per minibatch (None: the full-batch iterations above)
    update_epochs: int = 1  # passes over the epoch's decisions, in minibatches
    ent_coef: float = 0.0  # entropy bonus of the minibatch policy loss
    max_grad_norm: float | None = None  # each minibatch's gradient norm clipped to this
    step_rewards: bool = False  # rewards along the episode (else only its last step's)

    def __post_init__(self) -> None:
        if self.sampling not in ("cdf", "multinomial"):
            raise ValueError(f"sampling {self.sampling!r}: choose 'cdf' or 'multinomial'")
        if self.float32_stats and self.chunk is not None:
            raise ValueError("float32_stats are means over the whole batch: they need chunk=None")
        if self.minibatch is not None and (self.minibatch < 1 or self.update_epochs < 1):
            raise ValueError(f"minibatch ({self.minibatch}) and update_epochs "
                             f"({self.update_epochs}) must be positive")

    @classmethod
    def of(cls, config: PPOSettings, **arrangement) -> "PPOParams":
        """`config`'s PPO settings, arranged as `arrangement` says."""
        return cls(**{f.name: getattr(config, f.name) for f in fields(PPOSettings)}, **arrangement)


class Configuration(Protocol):
    """What PPO needs of a learned scheduler's configuration (a dataclass, saved whole): its
    settings, its networks (freshly initialised: torch is seeded just before), its training
    environments (`rollout.collect`'s contract, wrappers included; `model` for wrappers that
    follow the training, as a stage that ends after some epochs), what it keeps in the model file
    besides PPO's own (`PPO.extra`, with their initial values: the training state's "run"), and
    how it reads itself back. Its class is named in `CONFIGURATIONS` under its recipe."""

    def ppo_params(self) -> PPOParams: ...
    def networks(self) -> tuple[MaskedPolicy, ValueNet]: ...
    def make_env(self, model: "PPO"): ...
    def extra_state(self) -> dict[str, Any]: ...
    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Configuration": ...


def config_from_dict(cls, d: dict[str, Any]):
    """A configuration dataclass from its saved settings; an unknown one is refused, named."""
    unknown = set(d) - {f.name for f in fields(cls)}
    if unknown:
        raise ValueError(f"{cls.__name__}: unknown setting(s) {', '.join(sorted(unknown))}")
    return cls(**d)


#: a model file's recipe -> its configuration class (module, qualified name); a recipe of
#: PPO registered from outside adds its own (`recipes.pick_job.ppo_recipe`)
CONFIGURATIONS = {"rlscheduler": ("hpcsched.agents.rlscheduler", "RLSchedulerConfig"),
                  "schedinspector": ("hpcsched.agents.inspector", "InspectorConfig"),
                  "dbf": ("hpcsched.agents.dbf", "DBFConfig")}


def derived_seed(seed: int, epoch: int, stream: int) -> int:
    """A 63-bit seed for one epoch and one use (0: environments, 1: actions)."""
    return int(np.random.SeedSequence([seed, epoch, stream]).generate_state(1, np.uint64)[0] >> 1)


def advantages_and_returns(values: np.ndarray, lengths: np.ndarray, rewards: np.ndarray,
                           gamma: float, lam: float, step_rewards: np.ndarray | None = None
                           ) -> tuple[np.ndarray, np.ndarray]:
    """GAE(gamma, lambda) advantages and discounted returns of trajectories laid end to end, each
    with a single reward at its last step (the value after the last step is 0); or, given
    `step_rewards` (one per decision, laid out as `values`), with those rewards."""
    n, longest = len(lengths), int(lengths.max())
    # trajectories as rows of a (n, longest) grid, right-aligned so that they all end together
    col = np.arange(longest)[None, :] >= (longest - lengths)[:, None]
    v = np.zeros((n, longest + 1))
    v[:, :-1][col] = values
    r = np.zeros((n, longest))
    if step_rewards is None:
        r[:, -1] = rewards
    else:
        r[col] = step_rewards
    delta = r + gamma * v[:, 1:] - v[:, :-1]
    adv = np.zeros((n, longest))
    ret = np.zeros((n, longest))
    a_next = np.zeros(n)
    g_next = np.zeros(n)
    for t in range(longest - 1, -1, -1):
        a_next = delta[:, t] + gamma * lam * a_next
        g_next = r[:, t] + gamma * g_next
        adv[:, t] = a_next
        ret[:, t] = g_next
    return adv[col], ret[col]


@contextmanager
def torch_threads(threads: int | None):
    """torch.set_num_threads(threads) for the duration, and numpy's BLAS pool limited to as many
    (None: both as they are). Without the BLAS limit a one-thread training still woke a BLAS
    thread per core, whose spinning took a third of the CPU time of twelve runs on two cores."""
    if not threads:
        yield
        return
    from threadpoolctl import threadpool_limits

    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        with threadpool_limits(limits=threads, user_api="blas"):
            yield
    finally:
        torch.set_num_threads(previous)


class PPO:
    """PPO on the environments, networks and settings of `config` (default: RLScheduler's).
    SB3's verbs: `learn`, `predict`, `save`, `load`. `env`: environments to use instead of the
    configuration's (as they are: no wrappers added; the configuration's are made on first use,
    so that a model loaded to decide makes none); `norm`: the observation's normalisation
    constants to keep with the model (default: the environments')."""

    def __init__(self, config: Configuration | None = None, env=None,
                 norm: dict[str, float] | None = None):
        if config is None:
            from hpcsched.agents.rlscheduler import RLSchedulerConfig

            config = RLSchedulerConfig()
        self.config = config
        p = self.params
        torch.manual_seed(p.seed)
        self.policy, self.value = config.networks()
        self.pi_optimizer = torch.optim.Adam(self.policy.parameters(), lr=p.pi_lr)
        self.v_optimizer = torch.optim.Adam(self.value.parameters(), lr=p.vf_lr)
        self.epoch = 0  # epochs done
        self.history: list[dict[str, Any]] = []
        # the options of the training run that shape it besides the config (validation): set by
        # `experiments.runfolder`, kept in the checkpoint
        self.run_options: dict[str, Any] = {}
        # what the configuration keeps in the model file besides PPO's own (RLScheduler: the
        # filter band, the warm start)
        self.extra: dict[str, Any] = dict(config.extra_state())
        self._env = env
        self._norm = norm
        self.device = torch.device("cpu")
        self._rollout_twin: MaskedPolicy | None = None  # the actor's CPU copy (device not CPU)

    def to(self, device: str | torch.device) -> "PPO":
        """Run the updates on `device` (say "cuda"): both networks and their optimisers' state
        move there; rollouts and greedy decisions stay on the CPU, on a copy of the actor
        refreshed after every update (the environments step on the CPU, a batch of a few rows per
        step). The model file is the same whatever the device. Not part of the configuration: a
        run may resume on another device (the arithmetic, not the estimate, then differs in its
        last bits)."""
        device = torch.device(device)
        if device.type == "cuda" and not torch.cuda.is_available():
            raise ValueError(f"device {device}: torch {torch.__version__} sees no CUDA device")
        self.device = device
        self.policy.to(device)
        self.value.to(device)
        for opt in (self.pi_optimizer, self.v_optimizer):
            for state in opt.state.values():
                for k, v in state.items():
                    if isinstance(v, torch.Tensor) and k != "step":
                        state[k] = v.to(device)
        self._rollout_twin = None
        return self

    def rollout_policy(self) -> MaskedPolicy:
        """The actor the rollouts and greedy decisions use: itself on the CPU, else its CPU copy
        (made on first use and refreshed after each update)."""
        if self.device.type == "cpu":
            return self.policy
        if self._rollout_twin is None:
            import copy

            self._rollout_twin = copy.deepcopy(self.policy).to("cpu")
        return self._rollout_twin

    def _sync_twin(self) -> None:
        if self._rollout_twin is not None:
            with torch.no_grad():
                for mine, theirs in zip(self._rollout_twin.parameters(), self.policy.parameters()):
                    mine.copy_(theirs)

    @property
    def params(self) -> PPOParams:
        """The algorithm's settings, from the configuration as it is now."""
        return self.config.ppo_params()

    def env(self):
        """The environments the epochs run on."""
        if self._env is None:
            self._env = self.config.make_env(self)
        return self._env

    @property
    def norm(self) -> dict[str, float] | None:
        if self._norm is None:
            self._norm = getattr(self.env(), "norm", None)
        return self._norm

    @norm.setter
    def norm(self, value: dict[str, float] | None) -> None:
        self._norm = value

    # -- acting -------------------------------------------------------------------------------------
    def _act_fn(self, generator: torch.Generator, sampling: str = "cdf") -> rollout.ActFn:
        policy = self.rollout_policy()

        def act(obs: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            with torch.no_grad():
                logits = policy.act_logits(obs, mask)
                logp_all = torch.log_softmax(logits, -1)
                if sampling == "cdf":
                    a = rollout.sample_categorical(torch.softmax(logits, -1), generator)
                else:
                    a = torch.multinomial(logp_all.exp(), 1, generator=generator).squeeze(1)
                return a.numpy(), logp_all.gather(1, a[:, None]).squeeze(1).numpy()

        return act

    def predict(self, obs: np.ndarray, mask: np.ndarray, deterministic: bool = True,
                generator: torch.Generator | None = None) -> np.ndarray:
        """The action chosen for each observation (one observation, or a batch: `mask` (A,) or
        (B, A)). Greedy by default, by the rule of `agents.greedy` (float64 scores rounded to
        float32, the first maximum); `deterministic=False` samples from the policy."""
        obs = np.asarray(obs, dtype=np.float32)
        mask = np.asarray(mask, dtype=bool)
        single = mask.ndim == 1
        if single:
            obs, mask = obs[None], mask[None]
        policy = self.rollout_policy()
        if deterministic:
            a = greedy_batch(policy.scores64(obs, mask), mask)
        else:
            with torch.no_grad():
                logits = policy(torch.from_numpy(obs), torch.from_numpy(mask))
            a = torch.multinomial(torch.softmax(logits, -1), 1, generator=generator).squeeze(1)
            a = a.numpy()
        return a[0] if single else a

    # -- learning -----------------------------------------------------------------------------------
    def learn(self, epochs: int, callback: Callable[[dict[str, Any]], bool | None] | None = None
              ) -> "PPO":
        """Train `epochs` more epochs with `threads` torch threads, each epoch's stats appended to
        `history`. `callback(stats)` runs after each; returning False stops."""
        with torch_threads(self.params.threads):
            for _ in range(epochs):
                stats = self._one_epoch()
                self.history.append(stats)
                if callback is not None and callback(stats) is False:
                    break
        return self

    def _one_epoch(self) -> dict[str, Any]:
        p = self.params
        t0 = time.perf_counter()
        env = self.env()
        generator = torch.Generator().manual_seed(derived_seed(p.seed, self.epoch, 1))
        with torch_threads(p.rollout_threads):
            traj = rollout.collect(env, self._act_fn(generator, p.sampling),
                                   p.trajectories_per_epoch,
                                   seed=derived_seed(p.seed, self.epoch, 0))
        t1 = time.perf_counter()
        b = Batch(traj.obs, traj.mask, traj.actions, traj.logp).to(self.device)
        with torch.no_grad():
            values = torch.cat([self.value.values(part) for part in self._parts(self.value, b)])
        values = values.cpu().numpy().astype(np.float64)
        step_rewards = traj.step_rewards if p.step_rewards else None
        adv, ret = advantages_and_returns(values, traj.lengths, traj.rewards, p.gamma, p.lam,
                                          step_rewards)
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        b.adv = torch.from_numpy(adv.astype(np.float32)).to(self.device)
        b.ret = torch.from_numpy(ret.astype(np.float32)).to(self.device)
        stats = self._update(b)
        self._sync_twin()
        t2 = time.perf_counter()
        self.epoch += 1
        out: dict[str, Any] = {
            "epoch": self.epoch,
            "trajectories": len(traj.lengths),
            "decisions": int(traj.lengths.sum()),
            "mean_reward": float(traj.rewards.mean()),
        }
        if step_rewards is not None:  # an episode's return: the sum of its rewards
            out["mean_reward"] = float(np.add.reduceat(step_rewards, traj.starts).mean())
        info = getattr(env, "rollout_info", None)  # what the environments say of this rollout
        if info is not None:
            out.update(info())
        # the mean over the episodes of every number they reported, the update's stats, timings
        keys = [k for k, v in (traj.metrics[0] if traj.metrics else {}).items()
                if isinstance(v, (int, float)) and k not in out]
        out.update({k: float(np.mean([m[k] for m in traj.metrics])) for k in keys
                    if all(k in m for m in traj.metrics)})
        return {**out, **stats, "rollout_s": t1 - t0, "update_s": t2 - t1, "epoch_s": t2 - t0}

    def update(self, batch: Batch) -> dict[str, float]:
        """One update of both networks on `batch`, its advantages and returns set (`adv`, `ret`),
        as an epoch's: for a learner that collects its own rollouts and hands each of its agents
        their decisions (HeraSched's selector and allocator, `agents.herasched`). Counts as an
        epoch."""
        stats = self._update(batch)
        self._sync_twin()
        self.epoch += 1
        return stats

    def _parts(self, net, b: Batch) -> list[Batch]:
        """The batch as `net` reads it: whole through its packing, else in chunks of decisions
        whose gradients add up to the whole batch's."""
        return [b] if net.reads_packed(b) else b.parts(self.params.chunk)

    def _policy_pass(self, b: Batch, first: bool) -> dict[str, float]:
        """The clipped surrogate loss over the whole batch, its gradient accumulated part by part,
        and the approximate KL to the rollout policy (with the entropy on the first pass)."""
        p = self.params
        out = {"loss_pi": 0.0, "kl": 0.0, "clip_fraction": 0.0, "entropy": 0.0}
        for part in self._parts(self.policy, b):
            dist = self.policy.distribution(part)
            logp = dist.log_prob()
            ratio = torch.exp(logp - part.logp_old)
            clipped = torch.clamp(ratio, 1 - p.clip_ratio, 1 + p.clip_ratio) * part.adv
            loss = -torch.min(ratio * part.adv, clipped).sum() / b.size
            loss.backward()
            with torch.no_grad():
                out["loss_pi"] += float(loss)
                clipped_out = (ratio - 1).abs() > p.clip_ratio
                if p.float32_stats:  # one part, the whole batch
                    out["kl"] = float((part.logp_old - logp).mean())
                    out["clip_fraction"] = float(clipped_out.float().mean())
                    if first:
                        out["entropy"] = float(dist.entropy().mean())
                    continue
                out["kl"] += float((part.logp_old - logp).sum()) / b.size
                out["clip_fraction"] += float(clipped_out.sum()) / b.size
                if first:
                    out["entropy"] += dist.entropy_sum() / b.size
        return out

    def _value_pass(self, b: Batch) -> float:
        """The value's mean squared error over the batch (gradient accumulated over the parts)."""
        total = 0.0
        for part in self._parts(self.value, b):
            loss = ((self.value.values(part) - part.ret) ** 2).sum() / b.size
            loss.backward()
            total += float(loss.detach())
        return total

    def _update_policy(self, b: Batch, threads: int | None = None) -> dict[str, float]:
        p = self.params
        if threads:
            torch.set_num_threads(threads)
        t0 = time.perf_counter()
        stats: dict[str, float] = {}
        pi_iters = 0
        for i in range(p.train_pi_iters):
            self.pi_optimizer.zero_grad()
            out = self._policy_pass(b, first=i == 0)
            if i == 0:
                stats = {"loss_pi": out["loss_pi"], "entropy": out["entropy"]}
            stats.update(kl=out["kl"], clip_fraction=out["clip_fraction"])
            if out["kl"] > 1.5 * p.target_kl:  # too far from the rollout policy: no more steps
                break
            self.pi_optimizer.step()
            pi_iters += 1
        self.pi_optimizer.zero_grad()
        stats.update(pi_iters=pi_iters, pi_s=time.perf_counter() - t0)
        return stats

    def _update_value(self, b: Batch, threads: int | None = None) -> dict[str, float]:
        if threads:
            torch.set_num_threads(threads)
        t0 = time.perf_counter()
        stats: dict[str, float] = {}
        for i in range(self.params.train_v_iters):
            self.v_optimizer.zero_grad()
            loss_v = self._value_pass(b)
            if i == 0:
                stats["loss_v"] = loss_v
            self.v_optimizer.step()
        self.v_optimizer.zero_grad()
        stats["v_s"] = time.perf_counter() - t0
        return stats

    def _update(self, b: Batch) -> dict[str, float]:
        """The policy's and the value's iterations. They share nothing but the batch, so with
        `parallel_update` and at least two torch threads they run side by side, one thread each:
        the same arithmetic. On these 2-core machines side by side was as fast or faster than one
        after the other with two threads per product in most runs, and clearly faster when the
        cores are shared with other work (benchmarks/train.py measures both)."""
        if self.params.minibatch is not None:
            return self._update_minibatches(b)
        threads = torch.get_num_threads()
        if self.params.parallel_update and threads >= 2:
            from concurrent.futures import ThreadPoolExecutor

            each = max(1, threads // 2)
            with ThreadPoolExecutor(2) as pool:
                pi = pool.submit(self._update_policy, b, each)
                v = pool.submit(self._update_value, b, each)
                return {**pi.result(), **v.result()}
        return {**self._update_policy(b), **self._update_value(b)}

    def _update_minibatches(self, b: Batch) -> dict[str, float]:
        """`update_epochs` passes over the batch in random minibatches of `minibatch` decisions
        (CleanRL's and SB3's PPO, on separate networks with their own optimisers): on each, one
        Adam step of the policy on the clipped surrogate minus `ent_coef` x the entropy, and one
        of the value on its squared error, each gradient clipped to `max_grad_norm`; with
        `target_kl` > 0 no further pass once a pass's approximate KL exceeds 1.5 x target_kl.
        The minibatches are drawn from a generator seeded by (seed, epoch), as the rollout's."""
        p = self.params
        t0 = time.perf_counter()
        generator = torch.Generator().manual_seed(derived_seed(p.seed, self.epoch, 2))
        stats: dict[str, float] = {}
        passes = 0
        for k in range(p.update_epochs):
            order = torch.randperm(b.size, generator=generator).to(b.obs.device)
            sums = {"loss_pi": 0.0, "loss_v": 0.0, "kl": 0.0, "clip_fraction": 0.0,
                    "entropy": 0.0}
            for s0 in range(0, b.size, p.minibatch):
                part = b.subset(order[s0:s0 + p.minibatch])
                dist = self.policy.distribution(part)
                logp = dist.log_prob()
                ratio = torch.exp(logp - part.logp_old)
                clipped = torch.clamp(ratio, 1 - p.clip_ratio, 1 + p.clip_ratio) * part.adv
                loss = -torch.min(ratio * part.adv, clipped).mean()
                probs = dist.logp_all.exp()
                entropy = -(probs * dist.logp_all).sum(-1).mean()
                if p.ent_coef:
                    loss = loss - p.ent_coef * entropy
                self.pi_optimizer.zero_grad()
                loss.backward()
                if p.max_grad_norm is not None:
                    torch.nn.utils.clip_grad_norm_(self.policy.parameters(), p.max_grad_norm)
                self.pi_optimizer.step()
                loss_v = ((self.value.values(part) - part.ret) ** 2).mean()
                self.v_optimizer.zero_grad()
                loss_v.backward()
                if p.max_grad_norm is not None:
                    torch.nn.utils.clip_grad_norm_(self.value.parameters(), p.max_grad_norm)
                self.v_optimizer.step()
                with torch.no_grad():
                    w = part.size / b.size
                    sums["loss_pi"] += float(loss) * w
                    sums["loss_v"] += float(loss_v) * w
                    sums["entropy"] += float(entropy) * w
                    sums["kl"] += float((part.logp_old - logp).mean()) * w
                    sums["clip_fraction"] += float(
                        ((ratio - 1).abs() > p.clip_ratio).float().mean()) * w
            passes += 1
            if k == 0:
                stats = {"loss_pi": sums["loss_pi"], "loss_v": sums["loss_v"],
                         "entropy": sums["entropy"]}
            stats.update(kl=sums["kl"], clip_fraction=sums["clip_fraction"])
            if p.target_kl > 0 and sums["kl"] > 1.5 * p.target_kl:
                break
        self.pi_optimizer.zero_grad()
        self.v_optimizer.zero_grad()
        stats.update(pi_iters=passes, pi_s=time.perf_counter() - t0, v_s=0.0)
        return stats

    # -- files --------------------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        """The model file's contents (`hpcsched.modelfile`): the recipe of the configuration, its
        config, both networks, the normalisation, epoch and history, and the training state (both
        optimisers, the global random states, and the run's: the configuration's `extra` and the
        run options)."""
        from hpcsched.modelfile import rng_states

        return {
            "recipe": recipe_of(self.config),
            "learner": "ppo",
            "config": asdict(self.config),
            "learner_config": {},
            "learner_state": {},
            "weights": on_cpu({"policy": self.policy.state_dict(),
                               "value": self.value.state_dict()}),
            "norm": dict(self.norm) if self.norm else {},
            "epoch": self.epoch,
            "history": self.history,
            "training": {
                "optimizers": on_cpu({"policy": self.pi_optimizer.state_dict(),
                                      "value": self.v_optimizer.state_dict()}),
                "rng": rng_states(),
                "run": {**self.extra, "run_options": dict(self.run_options)},
            },
        }

    def save(self, path) -> None:
        """Write the model file (atomically): see hpcsched.modelfile."""
        from hpcsched.modelfile import write_model

        write_model(path, self.state())

    @classmethod
    def load(cls, path, env=None, restore_rng: bool = True) -> "PPO":
        """A model from a model file, ready to `predict` or to `learn` on from the next epoch (its
        environments made when it does); its configuration is the one of the file's recipe
        (`CONFIGURATIONS`). A slim export is refused: it has no optimiser state to continue
        from."""
        from importlib import import_module

        from hpcsched.modelfile import (OtherKindError, config_of, read_model,
                                                restore_rng_states, restore_state, training_of)

        ck = read_model(path)
        if ck["learner"] != "ppo" or ck["recipe"] not in CONFIGURATIONS:
            raise OtherKindError(f"{path} holds a {ck['recipe']} model trained by "
                                 f"{ck['learner']}, not one PPO trains")
        training = training_of(path, ck)
        module, name = CONFIGURATIONS[ck["recipe"]]
        kind = getattr(import_module(module), name)
        model = config_of(path, lambda: cls(kind.from_dict(ck["config"]), env=env,
                                            norm=ck["norm"] or None))
        restore_state(path, model.policy, ck["weights"], "policy")
        restore_state(path, model.value, ck["weights"], "value")
        restore_state(path, model.pi_optimizer, training["optimizers"], "policy")
        restore_state(path, model.v_optimizer, training["optimizers"], "value")
        model.epoch = int(ck["epoch"])
        model.history = list(ck["history"])
        run = training.get("run") or {}
        model.run_options = dict(run.get("run_options") or {})
        model.extra.update({k: run[k] for k in model.extra if k in run})
        if restore_rng:
            restore_rng_states(training.get("rng"))
        return model


def on_cpu(obj):
    """`obj` (dicts, lists, tensors) with every tensor on the CPU: model files hold CPU tensors
    whatever the device trained on (a CPU tensor is itself, not a copy)."""
    if isinstance(obj, torch.Tensor):
        return obj.cpu()
    if isinstance(obj, dict):
        return {k: on_cpu(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(on_cpu(v) for v in obj)
    return obj


def recipe_of(config) -> str:
    """The recipe whose configuration `config` is (`CONFIGURATIONS`)."""
    where = (type(config).__module__, type(config).__qualname__)
    for recipe, known in CONFIGURATIONS.items():
        if tuple(known) == where:
            return recipe
    raise ValueError(f"PPO saves the configurations it can load back, those of a recipe "
                     f"({', '.join(CONFIGURATIONS)}); register {type(config).__name__}'s "
                     f"(`recipes.pick_job.ppo_recipe`)")


__all__ = ["CONFIGURATIONS", "Configuration", "PPO", "PPOParams", "PPOSettings", "config_from_dict",
           "advantages_and_returns", "derived_seed", "recipe_of", "torch_threads"]
