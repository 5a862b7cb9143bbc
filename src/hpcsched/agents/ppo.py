"""PPO for RLScheduler (spec rlscheduler.md section 8): SpinningUp's actor-critic PPO, as the paper ran it.

One epoch:

1. collect exactly `trajectories_per_epoch` episodes of `episode_jobs` jobs from many environments
   stepped together, sampling every action from the policy (one network call per batch);
2. compute values of every decision with the value network, then GAE(gamma, lambda) advantages. The
   reward is 0 except at the end of an episode, where it is -metric (or +utilization); with gamma = 1
   every decision's return is that final reward;
3. normalise the advantages over the epoch;
4. up to `train_pi_iters` full-batch Adam steps on the clipped surrogate, stopping early when the
   approximate KL to the rollout policy passes 1.5 x `target_kl`; no entropy bonus;
5. `train_v_iters` full-batch Adam steps on the value's squared error to the returns.

Every epoch is a function of the networks, the optimisers and the epoch number only: the
environments are reset with a seed drawn from (seed, epoch) and actions are sampled from a generator
seeded the same way. So training 2 epochs, or 1 epoch + save + load + 1 epoch, gives the same weights.

    model = PPO(PPOConfig(trace="lublin-1", metric="bsld"))
    model.learn(epochs=100)
    model.save("runs/lublin-1-bsld.pt")
    policy = load_policy("runs/lublin-1-bsld.pt")        # a Policy the engine accepts
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, fields
from typing import Any, Callable

import numpy as np
import torch

from hpcsched.agents import rollout
from hpcsched.agents.nets import MASK_PENALTY, KernelValue, make_policy, make_value, pack_rows
from hpcsched.agents.packed import ActionPacking, PrefixLayout, action_log_probs, entropy


@dataclass
class PPOConfig:
    """Every setting of a training run. Defaults: RLScheduler's code and paper (spec section 8)."""

    # -- the environment (hpcsched.envs.pick_job.PickJobEnv's arguments) ---------------------------
    trace: str = "lublin-1"
    profile: str = "rlscheduler"
    backfill: str = "none"
    metric: str = "bsld"  # bsld, wait, turnaround, slowdown, utilization, fairness (envs.pick_job)
    episode_jobs: int = 256  # jobs per training trajectory
    slots: int = 128  # job slots observed; more waiting jobs are cut off by `cutoff`
    cutoff: str = "fcfs"
    first: int | None = 10000  # training windows come from the first `first` jobs (None: all)
    fairness: bool | None = None  # the 9th, per-user feature; None: with metric "fairness"
    n_envs: int = 100  # environments stepped together; = trajectories_per_epoch: one episode each
    # -- networks (nets.POLICIES, nets.VALUES) ------------------------------------------------------
    policy: str = "kernel"
    value: str = "kernel"  # the code's kernel-then-MLP critic (11,570); "flat": the paper's MLP
    # -- PPO -----------------------------------------------------------------------------------------
    trajectories_per_epoch: int = 100
    gamma: float = 1.0
    lam: float = 0.97
    clip_ratio: float = 0.2
    pi_lr: float = 3e-4
    vf_lr: float = 1e-3
    train_pi_iters: int = 80
    train_v_iters: int = 80
    target_kl: float = 0.01  # early stop once approx KL > 1.5 x target_kl
    # -- trajectory filtering (spec section 7; see filtering.py) ------------------------------------
    filter: str = "none"  # "none", "paper": band (median, 2 x mean) of SJF, "fixed": (10, 150)
    filter_windows: int = 1000  # SJF windows sampled for the band's statistics
    filter_epochs: int | None = None  # stage 1 length; afterwards all windows. None: always filter
    # -- reward (not in the paper; see relative_reward) ---------------------------------------------
    reward_baseline: str = "none"  # "none": -metric, as the paper; a heuristic name: relative reward
    init: str = "none"  # "none": random weights, as the paper; a heuristic: imitate it first;
    #                     "model:PATH": start from that checkpoint's networks (fine-tuning)
    init_episodes: int = 100  # episodes of the heuristic to imitate
    init_steps: int = 300  # supervised steps on them
    # -- the run -------------------------------------------------------------------------------------
    seed: int = 0
    threads: int | None = None  # torch.set_num_threads for learn(); None: torch's default
    parallel_update: bool = True  # policy and value iterations in two threads (same arithmetic)

    @property
    def features(self) -> int:
        """Per-job features of the observation: 9 with the fairness feature, else 8."""
        fair = self.metric == "fairness" if self.fairness is None else self.fairness
        return 9 if fair else 8

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "PPOConfig":
        known = {f.name for f in fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"PPOConfig: unknown setting(s) {', '.join(sorted(unknown))}")
        return cls(**d)


def derived_seed(seed: int, epoch: int, stream: int) -> int:
    """A 63-bit seed for one epoch and one use (0: environments, 1: actions)."""
    return int(np.random.SeedSequence([seed, epoch, stream]).generate_state(1, np.uint64)[0] >> 1)


def advantages_and_returns(values: np.ndarray, lengths: np.ndarray, rewards: np.ndarray,
                           gamma: float, lam: float) -> tuple[np.ndarray, np.ndarray]:
    """GAE(gamma, lambda) advantages and discounted returns of trajectories laid end to end, each
    with a single reward at its last step (the value after the last step is 0)."""
    n, longest = len(lengths), int(lengths.max())
    # trajectories as rows of a (n, longest) grid, right-aligned so that they all end together
    col = np.arange(longest)[None, :] >= (longest - lengths)[:, None]
    v = np.zeros((n, longest + 1))
    v[:, :-1][col] = values
    r = np.zeros((n, longest))
    r[:, -1] = rewards
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


def relative_reward(value: float, base: float, sign: float) -> float:
    """The episode's improvement over a heuristic on the same window, in [-1, 1]:
    ``sign * (value - base) / (|value| + |base|)`` (sign -1 for metrics where lower is better, so
    beating the heuristic is positive; 0 when both are 0).

    Not in RLScheduler. Its reward, -metric, varies across windows far more than across decisions
    (a Lublin-1 window's bsld ranges from 1 to 10^4 under any policy), so most of an epoch's
    advantage signal says which windows were hard. Measured against the heuristic on the same
    window, the signal says whether the policy scheduled that window well."""
    total = abs(value) + abs(base)
    return 0.0 if total == 0 else sign * (value - base) / total


def make_vec_env(config: PPOConfig, window_filter: Callable[[int], bool] | None = None):
    """The environments of `config` (hpcsched.envs.vec.VecPickJob). They return their own buffers
    (copy=False): `rollout.collect` copies what it keeps."""
    from hpcsched.envs.vec import VecPickJob

    return VecPickJob(
        config.n_envs, trace=config.trace, profile=config.profile, backfill=config.backfill,
        metric=config.metric, episode_jobs=config.episode_jobs, slots=config.slots,
        cutoff=config.cutoff, first=config.first, window_filter=window_filter,
        fairness=config.fairness, copy=False,
    )


class _Batch:
    """One epoch's decisions as tensors.

    For the kernel networks the epoch is packed once to its distinct job rows (`nets.pack_rows`:
    8x fewer than the real rows on Lublin-1); the kernel runs on those and its scores are gathered
    back, which gives exactly the same logits and gradients as scoring every row.

    Networks over the flattened observation take the batch in chunks of decisions (their
    gradients accumulated: the sum of the chunks' gradients is the full batch's gradient)."""

    CHUNK_SAMPLES = 2048  # decisions per chunk (nets over the flattened observation)

    def __init__(self, traj: rollout.Trajectories):
        self.size = len(traj.actions)
        self.obs = torch.from_numpy(traj.obs)
        self.mask = torch.from_numpy(traj.mask)
        self.actions = torch.from_numpy(traj.actions)
        self.logp_old = torch.from_numpy(traj.logp)
        self.unique_rows, self.slot_index = pack_rows(traj.obs, traj.mask)
        pad = traj.obs[~traj.mask]
        # the packed value path needs every padding row to be the same vector
        self.pad_row = (torch.from_numpy(pad[0].copy())
                        if len(pad) and (pad == pad[0]).all() else None)
        # where the real slots and the actions are, for the log-softmax over real slots only
        # (None if some action is a padding slot, which a rollout never samples)
        try:
            self.packing = ActionPacking(self.slot_index, self.mask, self.actions)
        except ValueError:
            self.packing = None
        # decisions grouped by their number of real slots, for the value head (real slots first)
        counts = traj.mask.sum(1)
        prefix = np.array_equal(traj.mask, np.arange(traj.mask.shape[1])[None, :] < counts[:, None])
        self.layout = PrefixLayout(self.slot_index, counts) if prefix and self.size else None
        self.adv = torch.empty(0)
        self.ret = torch.empty(0)
        self.chunks = [(s, min(s + self.CHUNK_SAMPLES, self.size))
                       for s in range(0, self.size, self.CHUNK_SAMPLES)]

    def chunk(self, c: tuple[int, int]) -> "_Batch":
        """A view of decisions [s0, s1) (obs, mask, actions, logp_old, adv, ret only)."""
        s0, s1 = c
        part = object.__new__(_Batch)
        part.size = s1 - s0
        part.obs, part.mask = self.obs[s0:s1], self.mask[s0:s1]
        part.actions, part.logp_old = self.actions[s0:s1], self.logp_old[s0:s1]
        part.adv = self.adv[s0:s1] if len(self.adv) else self.adv
        part.ret = self.ret[s0:s1] if len(self.ret) else self.ret
        part.packing = part.layout = None
        return part


def epoch_stats(out: dict[str, Any], traj, stats: dict[str, Any], t0: float, t1: float,
                t2: float) -> dict[str, Any]:
    """An epoch's row: `out`, then the mean over trajectories of every numeric metric the episodes
    reported (those not already in `out`), the update's `stats`, and the rollout, update and epoch
    times from the clock readings t0 (start), t1 (rollouts done), t2 (update done)."""
    keys = [k for k, v in (traj.metrics[0] if traj.metrics else {}).items()
            if isinstance(v, (int, float))]
    out.update({k: float(np.mean([m[k] for m in traj.metrics])) for k in keys
                if k not in out and all(k in m for m in traj.metrics)})
    out.update(stats)
    out.update(rollout_s=t1 - t0, update_s=t2 - t1, epoch_s=t2 - t0)
    return out


def run_epochs(model, epochs: int, callback: Callable[[dict[str, Any]], bool | None] | None = None):
    """`model._one_epoch()` `epochs` times with `model.config.threads` torch threads, each epoch's
    stats appended to `model.history`; `callback(stats)` runs after each and returning False stops.
    The `learn` of PPO and of the agents built on its pieces."""
    previous_threads = torch.get_num_threads()
    if model.config.threads:
        torch.set_num_threads(model.config.threads)
    try:
        for _ in range(epochs):
            stats = model._one_epoch()
            model.history.append(stats)
            if callback is not None and callback(stats) is False:
                break
    finally:
        torch.set_num_threads(previous_threads)
    return model


class PPO:
    """PPO with RLScheduler's networks. SB3's verbs: `learn`, `predict`, `save`, `load`.

    `env` is anything with VecPickJob's contract; by default the environments of `config` are built
    (and the trajectory filter of `config.filter` applied to them)."""

    def __init__(self, config: PPOConfig | None = None, env=None, norm: dict | None = None):
        self.config = config = config or PPOConfig()
        if config.reward_baseline != "none":
            from hpcsched.policies.priority import get_policy

            get_policy(config.reward_baseline)  # an unknown name fails here, not after an epoch
        torch.manual_seed(config.seed)
        self.policy = make_policy(config.policy, config.features, config.slots)
        self.value = make_value(config.value, config.features, config.slots)
        self.pi_optimizer = torch.optim.Adam(self.policy.parameters(), lr=config.pi_lr)
        self.v_optimizer = torch.optim.Adam(self.value.parameters(), lr=config.vf_lr)
        self.epoch = 0  # epochs done
        self.history: list[dict[str, Any]] = []
        self.filter_info: dict[str, Any] | None = None
        self._own_env = env is None
        self._env = env
        self._env_filtered = False
        self.warm: dict[str, Any] | None = None  # what warm_start did, if it ran
        # the options of the training run that shape it besides the config (validation): set by
        # `experiments.training.train`, kept in the checkpoint
        self.run_options: dict[str, Any] = {}
        self._baseline_scores: dict[tuple[int, int], float] = {}  # heuristic metric per window
        self.norm = norm if norm is not None else getattr(env, "norm", None)

    # -- environments and trajectory filtering ------------------------------------------------------
    def _filtering_now(self) -> bool:
        c = self.config
        return c.filter != "none" and (c.filter_epochs is None or self.epoch < c.filter_epochs)

    def _prepared(self):
        from hpcsched.envs.pick_job import as_prepared

        return as_prepared(self.config.trace, self.config.profile)

    def env(self):
        """The environments the next epoch runs on (built, or rebuilt at the stage switch, here)."""
        if not self._own_env:
            return self._env
        filtering = self._filtering_now()
        if self._env is None or filtering != self._env_filtered:
            window_filter = None
            if filtering:
                from hpcsched.agents import filtering as flt

                c = self.config
                prepared = self._prepared()
                if self.filter_info is None:
                    window_filter = flt.make_window_filter(
                        prepared, rule=c.filter, windows=c.filter_windows,
                        episode_jobs=c.episode_jobs, backfill=c.backfill, metric=c.metric,
                        first=c.first, seed=c.seed)
                    self.filter_info = window_filter.info()
                else:  # resumed: the band is known, no need to sample windows again
                    window_filter = flt.WindowFilter(
                        prepared, tuple(self.filter_info["band"]), episode_jobs=c.episode_jobs,
                        backfill=c.backfill, metric=c.metric)
            self._env = make_vec_env(self.config, window_filter)
            self._env_filtered = filtering
            if self.norm is None:
                self.norm = getattr(self._env, "norm", None) or self._prepared().report.norm
        return self._env

    # -- acting -------------------------------------------------------------------------------------
    def _act_fn(self, generator: torch.Generator) -> rollout.ActFn:
        policy = self.policy
        kernel = hasattr(policy, "row_scores")  # a kernel policy: score the real rows only

        def act(obs: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            with torch.no_grad():
                if kernel:
                    # a padding slot's logit is -1e6 here, score - 1e6 in forward(): either way
                    # its probability is exactly 0 and the real slots' log-probabilities are equal
                    logits = torch.full(mask.shape, -MASK_PENALTY)
                    logits.view(-1).index_copy_(0, torch.from_numpy(np.flatnonzero(mask)),
                                                policy.row_scores(torch.from_numpy(obs[mask])))
                else:
                    logits = policy(torch.from_numpy(obs), torch.from_numpy(mask))
                logp_all = torch.log_softmax(logits, -1)
                a = rollout.sample_categorical(torch.softmax(logits, -1), generator)
                return a.numpy(), logp_all.gather(1, a[:, None]).squeeze(1).numpy()

        return act

    def predict(self, obs: np.ndarray, mask: np.ndarray, deterministic: bool = True,
                generator: torch.Generator | None = None) -> np.ndarray:
        """The slot chosen for each observation: ``obs (slots, F) -> ()`` or ``(B, slots, F) -> (B,)``.
        Greedy by default; `deterministic=False` samples from the policy."""
        obs_t = torch.as_tensor(np.asarray(obs, dtype=np.float32))
        mask_t = torch.as_tensor(np.asarray(mask, dtype=bool))
        single = obs_t.dim() == 2
        if single:
            obs_t, mask_t = obs_t[None], mask_t[None]
        with torch.no_grad():
            logits = self.policy(obs_t, mask_t)
            if deterministic:
                a = logits.argmax(-1)
            else:
                a = torch.multinomial(torch.softmax(logits, -1), 1, generator=generator).squeeze(1)
        a = a.numpy()
        return a[0] if single else a

    # -- learning -----------------------------------------------------------------------------------
    def _packed_policy(self) -> bool:
        return hasattr(self.policy, "packed_logits")

    def _packed_value(self, b: _Batch) -> bool:
        return isinstance(self.value, KernelValue) and b.pad_row is not None

    def _log_probs(self, b: _Batch) -> torch.Tensor:
        """Log-probabilities of every slot, (M, slots)."""
        if self._packed_policy():  # a kernel policy: score the distinct real rows only
            logits = self.policy.packed_logits(b.unique_rows, b.slot_index)
        else:
            logits = self.policy(b.obs, b.mask)
        return torch.log_softmax(logits, -1)

    def _values(self, b: _Batch) -> torch.Tensor:
        if self._packed_value(b):
            return self.value.forward_packed(b.unique_rows, b.slot_index, b.pad_row, b.layout)
        return self.value(b.obs)

    def _parts(self, b: _Batch, packed: bool) -> list[_Batch]:
        return [b] if packed else [b.chunk(c) for c in b.chunks]

    def _policy_pass(self, b: _Batch, first: bool) -> dict[str, float]:
        """The clipped surrogate loss over the whole batch (its gradient accumulated chunk by chunk
        for the flat networks), and the approximate KL to the rollout policy."""
        c = self.config
        out = {"loss_pi": 0.0, "kl": 0.0, "clip_fraction": 0.0, "entropy": 0.0}
        packed = self._packed_policy() and b.packing is not None
        for part in self._parts(b, self._packed_policy()):
            if packed:  # the taken actions' log-probabilities straight from the distinct rows
                scores = self.policy.packed_scores(b.unique_rows)
                logp = action_log_probs(scores, b.packing)
            else:
                logp_all = self._log_probs(part)
                logp = logp_all.gather(1, part.actions[:, None]).squeeze(1)
            ratio = torch.exp(logp - part.logp_old)
            clipped = torch.clamp(ratio, 1 - c.clip_ratio, 1 + c.clip_ratio) * part.adv
            loss = -torch.min(ratio * part.adv, clipped).sum() / b.size
            loss.backward()
            with torch.no_grad():
                out["loss_pi"] += float(loss)
                out["kl"] += float((part.logp_old - logp).sum()) / b.size
                out["clip_fraction"] += float(((ratio - 1).abs() > c.clip_ratio).sum()) / b.size
                if first and packed:
                    out["entropy"] += float(entropy(scores, b.packing).sum()) / b.size
                elif first:
                    p = logp_all.exp()
                    out["entropy"] -= float(torch.where(p > 0, p * logp_all, 0.0).sum()) / b.size
        return out

    def _value_pass(self, b: _Batch) -> float:
        """The value's mean squared error over the batch (gradient accumulated over chunks)."""
        total = 0.0
        for part in self._parts(b, self._packed_value(b)):
            loss = ((self._values(part) - part.ret) ** 2).sum() / b.size
            loss.backward()
            total += float(loss.detach())
        return total

    def _update_policy(self, b: _Batch, threads: int | None = None) -> dict[str, float]:
        c = self.config
        if threads:
            torch.set_num_threads(threads)
        t0 = time.perf_counter()
        stats: dict[str, float] = {}
        pi_iters = 0
        for i in range(c.train_pi_iters):
            self.pi_optimizer.zero_grad()
            out = self._policy_pass(b, first=i == 0)
            if i == 0:
                stats = {"loss_pi": out["loss_pi"], "entropy": out["entropy"]}
            stats.update(kl=out["kl"], clip_fraction=out["clip_fraction"])
            if out["kl"] > 1.5 * c.target_kl:  # too far from the rollout policy: no more steps
                break
            self.pi_optimizer.step()
            pi_iters += 1
        self.pi_optimizer.zero_grad()
        stats.update(pi_iters=pi_iters, pi_s=time.perf_counter() - t0)
        return stats

    def _update_value(self, b: _Batch, threads: int | None = None) -> dict[str, float]:
        if threads:
            torch.set_num_threads(threads)
        t0 = time.perf_counter()
        stats: dict[str, float] = {}
        for i in range(self.config.train_v_iters):
            self.v_optimizer.zero_grad()
            loss_v = self._value_pass(b)
            if i == 0:
                stats["loss_v"] = loss_v
            self.v_optimizer.step()
        self.v_optimizer.zero_grad()
        stats["v_s"] = time.perf_counter() - t0
        return stats

    def _update(self, b: _Batch) -> dict[str, float]:
        """The policy's and the value's iterations. They share nothing but the batch, so with
        `parallel_update` and at least two torch threads they run side by side, one thread each:
        the same arithmetic. On these 2-core machines side by side was as fast or faster than one
        after the other with two threads per product in most runs, and clearly faster when the
        cores are shared with other work (benchmarks/train.py measures both)."""
        threads = torch.get_num_threads()
        if self.config.parallel_update and threads >= 2:
            from concurrent.futures import ThreadPoolExecutor

            each = max(1, threads // 2)
            with ThreadPoolExecutor(2) as pool:
                pi = pool.submit(self._update_policy, b, each)
                v = pool.submit(self._update_value, b, each)
                return {**pi.result(), **v.result()}
        return {**self._update_policy(b), **self._update_value(b)}

    def warm_start(self) -> dict[str, float]:
        """Before the first epoch: imitate `config.init`'s choices (see agents/imitation.py), or,
        with ``init="model:PATH"``, take that checkpoint's policy and value networks."""
        from hpcsched.agents.imitation import collect_demonstrations, imitate

        c = self.config
        if c.init.startswith("model:"):
            from hpcsched.agents.checkpoint import config_of, load_checkpoint, restore_state

            path = c.init[len("model:"):]
            ck = load_checkpoint(path)
            theirs = config_of(path, lambda: PPOConfig.from_dict(ck["config"]))
            if (theirs.policy, theirs.value, theirs.features, theirs.slots) != (
                    c.policy, c.value, c.features, c.slots):
                raise ValueError(f"--init {c.init}: its networks ({theirs.policy}/{theirs.value}, "
                                 f"{theirs.slots}x{theirs.features}) differ from this run's")
            restore_state(path, self.policy, ck, "policy")
            restore_state(path, self.value, ck, "value")
            self.warm = {"from_epoch": int(ck["epoch"])}
            return self.warm
        obs, mask, target = collect_demonstrations(self.env(), c.init, c.init_episodes,
                                                   seed=derived_seed(c.seed, 0, 2))
        previous = torch.get_num_threads()
        if c.threads:
            torch.set_num_threads(c.threads)
        try:
            stats = imitate(self.policy, obs, mask, target, steps=c.init_steps)
        finally:
            torch.set_num_threads(previous)
        stats["imitation_decisions"] = len(target)
        self.warm = stats
        return stats

    def _relative_rewards(self, traj: rollout.Trajectories) -> np.ndarray:
        from hpcsched.agents.filtering import heuristic_score
        from hpcsched.envs.pick_job import METRICS

        c = self.config
        key, sign = METRICS[c.metric]
        prepared = self._prepared()
        cache = self._baseline_scores
        out = np.empty(len(traj.rewards))
        for i, (metrics, win) in enumerate(zip(traj.metrics, traj.windows)):
            if win is None:
                raise ValueError("reward_baseline needs environments that report each episode's "
                                 "window (infos['window'])")
            if win not in cache:
                cache[win] = heuristic_score(prepared, win[0], win[1], c.backfill, c.metric,
                                             c.reward_baseline)
            out[i] = relative_reward(float(metrics[key]), cache[win], sign)
        return out

    def _one_epoch(self) -> dict[str, Any]:
        c = self.config
        t0 = time.perf_counter()
        env = self.env()
        generator = torch.Generator().manual_seed(derived_seed(c.seed, self.epoch, 1))
        # one torch thread for the rollout: its network calls are small (<= 12,800 rows), and a
        # second thread adds a barrier per op that costs a scheduler slice whenever the cores are
        # shared (a 0.1 ms call took 2.5 ms on a loaded 2-core machine)
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            traj = rollout.collect(env, self._act_fn(generator), c.trajectories_per_epoch,
                                   seed=derived_seed(c.seed, self.epoch, 0))
        finally:
            torch.set_num_threads(threads)
        if c.reward_baseline != "none":
            traj.rewards = self._relative_rewards(traj)
        t1 = time.perf_counter()
        b = _Batch(traj)
        with torch.no_grad():
            values = torch.cat([self._values(part) for part in self._parts(b, self._packed_value(b))])
        values = values.numpy().astype(np.float64)
        adv, ret = advantages_and_returns(values, traj.lengths, traj.rewards, c.gamma, c.lam)
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        b.adv = torch.from_numpy(adv.astype(np.float32))
        b.ret = torch.from_numpy(ret.astype(np.float32))
        stats = self._update(b)
        t2 = time.perf_counter()
        self.epoch += 1
        out: dict[str, Any] = {
            "epoch": self.epoch,
            "trajectories": len(traj.lengths),
            "decisions": int(traj.lengths.sum()),
            "mean_reward": float(traj.rewards.mean()),
            "filtered": self._env_filtered,
        }
        return epoch_stats(out, traj, stats, t0, t1, t2)

    def learn(self, epochs: int, callback: Callable[[dict[str, Any]], bool | None] | None = None
              ) -> "PPO":
        """Train `epochs` more epochs. `callback(stats)` runs after each; returning False stops."""
        return run_epochs(self, epochs, callback)

    # -- files --------------------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        """Everything a checkpoint holds, except what `checkpoint.save_checkpoint` adds."""
        return {
            "config": asdict(self.config),
            "epoch": self.epoch,
            "policy": self.policy.state_dict(),
            "value": self.value.state_dict(),
            "pi_optimizer": self.pi_optimizer.state_dict(),
            "v_optimizer": self.v_optimizer.state_dict(),
            "norm": dict(self.norm) if self.norm else {},
            "history": self.history,
            "filter": self.filter_info,
            "warm": self.warm,
            "run_options": dict(self.run_options),
        }

    def save(self, path) -> None:
        """Write a checkpoint (atomically): see hpcsched.agents.checkpoint."""
        from hpcsched.agents.checkpoint import save_checkpoint

        if self.norm is None and self._own_env:
            self.norm = self._prepared().report.norm
        save_checkpoint(path, self.state())

    @classmethod
    def load(cls, path, env=None, restore_rng: bool = True) -> "PPO":
        """A model from a checkpoint, ready to `predict` or to `learn` on from the next epoch."""
        from hpcsched.agents.checkpoint import (config_of, load_checkpoint, restore_rng_states,
                                                restore_state)

        ck = load_checkpoint(path)
        model = config_of(path, lambda: cls(PPOConfig.from_dict(ck["config"]), env=env,
                                            norm=ck.get("norm") or None))
        for key, part in (("policy", model.policy), ("value", model.value),
                          ("pi_optimizer", model.pi_optimizer),
                          ("v_optimizer", model.v_optimizer)):
            restore_state(path, part, ck, key)
        model.epoch = int(ck["epoch"])
        model.history = list(ck.get("history", []))
        model.filter_info = ck.get("filter")
        model.warm = ck.get("warm")
        model.run_options = dict(ck.get("run_options") or {})
        if restore_rng:
            restore_rng_states(ck.get("rng"))
        return model


__all__ = ["PPO", "PPOConfig", "advantages_and_returns", "derived_seed", "epoch_stats",
           "make_vec_env",
           "relative_reward"]
