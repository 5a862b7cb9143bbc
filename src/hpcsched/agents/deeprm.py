"""DeepRM's learner: REINFORCE with a time-dependent baseline over N rollouts of one jobset
(HotNets'16 section 3.3, Fig. 3; the authors' `pg_re.py` settles the details, spec deeprm.md 4).

Read top to bottom: the hyperparameters, the network, a batched rollout, the learner. The update
itself is `agents.reinforce`'s, with DeepRM's settings (`DeepRMConfig.reinforce`).

* Policy network: the flattened state image (20 x 223 = 4460 inputs at the paper's sizes) -> 20
  ReLU -> M+1 logits (89,451 parameters); weights N(0, 0.01^2), biases 0 (the code's init).
* One update: `jobsets_per_update` training jobsets, each rolled out `rollouts` (N = 20) times with
  sampled actions, all stepped together in one `DiscreteBatch` with the network run once per step
  for the whole batch; returns-to-go with gamma = 1 over the time baseline of each jobset's N
  rollouts (`reinforce`'s "time"), and one RMSProp step (lr 1e-3, rho 0.9, eps 1e-9).
* An epoch is one pass over the training jobsets (100 by default, shuffled), i.e. 10 updates of 10
  jobsets each: the code's groups of `batch_size` 10, but with an optimiser step per group (the code
  sums the groups' gradients into one step per pass; we take more, smaller steps to learn within
  our budget, spec 10.9).
* `mask_invalid` (ours, on by default): picks that place nothing (an empty slot, a job that fits
  nowhere in the window) get probability 0. In the paper such a pick ends the time step exactly as
  void does, so masking them removes only duplicate ways of saying "void": the set of policies is
  the same, and training does not waste samples on them. `--no-mask` trains as the paper did.
* `init` (not the paper's protocol): the authors' code's supervised warm start (pg_su), imitating a
  heuristic before REINFORCE (`agents.deeprm_imitation`).

SB3's verbs: `DeepRM(config).learn(epochs)`, `predict(images, masks)`, `save(path)`,
`DeepRM.load(path)`, and `policy()` for the engine (`agents.deeprm_policy`).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

import numpy as np
import torch
from torch import nn

from hpcsched.agents.greedy import greedy_batch, linear_weights, mlp_forward
from hpcsched.agents.reinforce import Reinforce, ReinforceSettings
from hpcsched.cluster.grid import ResourceGrid
from hpcsched.sim.discrete_batch import DiscreteBatch
from hpcsched.workload.deeprm import TRAIN_SEED, GridJobs, generate, rate_for_load

VALIDATION_SEED = 27_182  # validation jobsets: neither the training (42) nor the test (314159) draw
CHUNK = 8192  # decisions per forward/backward pass of an update


@dataclass
class DeepRMConfig:
    load: float = 0.7  # offered load the jobsets are drawn for (1.0 = 100%)
    steps: int = 50  # arrival steps per jobset ("each experiment lasts for 50t")
    jobsets: int = 100  # training jobsets
    rollouts: int = 20  # N: rollouts per jobset (the baseline's sample)
    jobsets_per_update: int = 10
    lr: float = 1e-3
    rho: float = 0.9
    eps: float = 1e-9
    hidden: int = 20
    resources: int = 2
    units: int = 10
    horizon: int = 20
    slots: int = 10
    backlog: int = 60
    queue: str = "bounded"  # DeepRM's: arrivals that find the slots and backlog full are dropped
    reward: str = "slowdown"  # or "completion" (reward -|J| per step)
    mask_invalid: bool = True
    max_decisions: int = 1000  # per episode: a cap for policies that never place anything
    validate_jobsets: int = 50  # greedy validation each epoch (0: off), on the reward's metric
    init: str = "none"  # or a heuristic to imitate first (the authors' code's pg_su warm start)
    init_passes: int = 30  # supervised passes over the imitation states
    seed: int = 0
    train_seed: int = TRAIN_SEED
    threads: int | None = 1

    @property
    def rate(self) -> float:
        return rate_for_load(self.load, self.resources)

    @property
    def grid(self) -> ResourceGrid:
        return ResourceGrid(self.resources, self.units, self.horizon)

    def batch(self) -> DiscreteBatch:
        return DiscreteBatch(self.grid, self.slots, self.backlog, self.reward, self.queue)

    @property
    def reinforce(self) -> ReinforceSettings:
        return ReinforceSettings(lr=self.lr, optimizer="rmsprop", rho=self.rho, eps=self.eps,
                                 gamma=1.0, baseline="time", chunk=CHUNK)


# -- the network -----------------------------------------------------------------------------------
def policy_network(inputs: int, hidden: int, actions: int) -> nn.Sequential:
    """inputs -> hidden ReLU -> actions logits, initialised as the authors' Lasagne net."""
    net = nn.Sequential(nn.Linear(inputs, hidden), nn.ReLU(), nn.Linear(hidden, actions))
    for layer in (net[0], net[2]):
        nn.init.normal_(layer.weight, std=0.01)
        nn.init.zeros_(layer.bias)
    return net


class NumpyPolicy:
    """The network's forward pass in numpy (a 20-unit MLP: faster than torch per small batch).

    `dtype`: float32 (the network's own, what training's sampled rollouts use) or float64, the
    arithmetic of greedy decisions (`hpcsched.agents.greedy`): the weights are widened exactly and
    the images (0/1 cells) cast to it."""

    def __init__(self, net: nn.Sequential, dtype=np.float32) -> None:
        self.dtype = np.dtype(dtype)
        self.weights = linear_weights(net, self.dtype)

    def logits(self, images: np.ndarray) -> np.ndarray:
        return mlp_forward(self.weights, np.asarray(images, dtype=self.dtype))


def choose(logits: np.ndarray, mask: np.ndarray | None, rng: np.random.Generator | None,
           greedy: bool) -> np.ndarray:
    """One action per row: the greedy rule (float64 logits rounded to float32, the first maximum)
    or a sample of the masked softmax."""
    if greedy:
        return greedy_batch(logits, mask)
    if mask is not None:
        logits = np.where(mask, logits, -np.inf)
    z = logits - logits.max(axis=1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=1, keepdims=True)
    u = rng.random((len(p), 1))
    return np.minimum((np.cumsum(p, axis=1) < u).sum(axis=1), p.shape[1] - 1)


# -- a batched rollout -----------------------------------------------------------------------------
@dataclass
class Rollout:
    """One batch of episodes: per decision the image, action and mask (flat over environments and
    steps), the environment and decision index of each, and the per-environment rewards (B, K)."""

    images: np.ndarray
    actions: np.ndarray
    masks: np.ndarray
    env: np.ndarray
    index: np.ndarray
    rewards: np.ndarray
    batch: DiscreteBatch = field(repr=False)


def rollout(policy: NumpyPolicy, batch: DiscreteBatch, jobs: GridJobs, *, mask_invalid: bool,
            rng: np.random.Generator | None = None, greedy: bool = False,
            max_decisions: int = 1000, record: bool = True) -> Rollout:
    """Run every jobset of `jobs` to its end (or `max_decisions`), stepping them together."""
    batch.reset(jobs)
    B = batch.B
    images, actions, masks, envs, index, rewards = [], [], [], [], [], []
    k = 0
    while not batch.done.all() and k < max_decisions:
        live = np.flatnonzero(~batch.done)
        img = batch.images(live, np.float32).reshape(len(live), -1)
        mask = batch.action_mask()[live]
        a = choose(policy.logits(img), mask if mask_invalid else None, rng, greedy)
        full = np.full(B, batch.void)
        full[live] = a
        r, _ = batch.step(full)
        if record:
            images.append(img)
            actions.append(a)
            masks.append(mask)
            envs.append(live)
            index.append(np.full(len(live), k))
        rewards.append(r)
        k += 1
    R = np.stack(rewards, axis=1) if rewards else np.zeros((B, 0))
    if not record:
        empty = np.zeros(0, dtype=np.int64)
        return Rollout(np.zeros((0, 0), np.float32), empty, np.zeros((0, batch.actions), bool),
                       empty, empty, R, batch)
    return Rollout(np.concatenate(images), np.concatenate(actions), np.concatenate(masks),
                   np.concatenate(envs), np.concatenate(index), R, batch)


# -- the learner -----------------------------------------------------------------------------------
class DeepRM:
    """`DeepRM(config).learn(epochs)`, `predict`, `save(path)`, `DeepRM.load(path)`, `policy()`."""

    def __init__(self, config: DeepRMConfig) -> None:
        self.config = c = config
        if c.threads:
            torch.set_num_threads(c.threads)
        torch.manual_seed(c.seed)
        self.rng = np.random.default_rng(c.seed)
        T, width = c.batch().image_shape
        self.net = policy_network(T * width, c.hidden, c.slots + 1)
        self.reinforce = Reinforce(self.net.parameters(), c.reinforce)
        self.optimizer = self.reinforce.optimizer
        self.epoch = 0
        self.history: list[dict[str, Any]] = []
        self.train_jobs = generate(c.jobsets, c.rate, c.steps, seed=c.train_seed,
                                   resources=c.resources)
        self._validation: GridJobs | None = None

    def logits(self, images: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
        """The network's logits, invalid picks at -1e9 with `mask_invalid`."""
        logits = self.net(images)
        return logits.masked_fill(~masks, -1e9) if self.config.mask_invalid else logits

    def update(self, jobset_ids: np.ndarray) -> dict[str, float]:
        """Roll out each jobset N times together and take one REINFORCE step on them."""
        c = self.config
        t0 = time.perf_counter()
        jobs = self.train_jobs.take(jobset_ids).repeat(c.rollouts)
        group = np.repeat(np.arange(len(jobset_ids)), c.rollouts)
        batch = c.batch()
        ro = rollout(NumpyPolicy(self.net), batch, jobs, mask_invalid=c.mask_invalid,
                     rng=self.rng, max_decisions=c.max_decisions)
        t1 = time.perf_counter()
        adv, togo = self.reinforce.advantages(ro.rewards, group, ro.env, ro.index)
        stats = self.reinforce.step(self.logits, torch.from_numpy(ro.images),
                                    torch.from_numpy(ro.masks), torch.from_numpy(ro.actions),
                                    torch.from_numpy(adv).float())
        t2 = time.perf_counter()
        m = batch.metrics()
        per_env = togo[:, 0] if togo.shape[1] else np.zeros(batch.B)
        best = per_env.reshape(len(jobset_ids), c.rollouts).max(axis=1)
        return {"slowdown": m["slowdown"], "completion": m["completion"],
                "mean_return": float(per_env.mean()), "max_return": float(best.mean()),
                "entropy": stats["entropy"], "decisions": len(adv),
                "withheld_share": m["withheld_share"], "unfinished": m["unfinished"],
                "rollout_s": t1 - t0, "update_s": t2 - t1}

    def learn(self, epochs: int, callback: Callable[[dict[str, Any]], None] | None = None) -> None:
        """Train `epochs` more epochs (passes over the training jobsets); `callback` gets each
        epoch's row (the means of its updates' statistics, and the greedy validation)."""
        c = self.config
        for _ in range(epochs):
            t0 = time.perf_counter()
            order = self.rng.permutation(c.jobsets)
            stats = [self.update(order[s:s + c.jobsets_per_update])
                     for s in range(0, c.jobsets, c.jobsets_per_update)]
            self.epoch += 1
            row: dict[str, Any] = {"epoch": self.epoch, "updates": len(stats)}
            for k in stats[0]:
                vals = [s[k] for s in stats]
                row[k] = float(np.sum(vals)) if k in ("decisions", "unfinished", "rollout_s",
                                                       "update_s") else float(np.mean(vals))
            if c.validate_jobsets:
                m = self.evaluate(self.validation_jobs()).metrics()
                # a policy that leaves jobs unfinished cannot be the best: its mean hides them
                ok = m["unfinished"] == 0
                row["val_slowdown"] = m["slowdown"] if ok else float("inf")
                row["val_completion"] = m["completion"] if ok else float("inf")
                row["val_unfinished"] = m["unfinished"]
            row["epoch_s"] = time.perf_counter() - t0
            self.history.append(row)
            if callback is not None:
                callback(row)

    def warm_start(self, heuristic: str, **options) -> dict[str, float]:
        """Imitate `heuristic` before REINFORCE (`agents.deeprm_imitation.imitate`)."""
        from hpcsched.agents.deeprm_imitation import imitate

        return imitate(self, heuristic, **options)

    # -- deciding ----------------------------------------------------------------------------------
    def predict(self, images: np.ndarray, masks: np.ndarray | None = None,
                deterministic: bool = True) -> np.ndarray:
        """One action per state image (n, T x width) with its valid-action mask (n, M + 1): the
        greedy pick (float64), or with `deterministic=False` a sample (float32, drawn from the
        learner's generator)."""
        images = np.asarray(images).reshape(len(images), -1)
        forward = NumpyPolicy(self.net, np.float64 if deterministic else np.float32)
        mask = masks if self.config.mask_invalid else None
        return choose(forward.logits(images), mask, self.rng, deterministic)

    def validation_jobs(self) -> GridJobs:
        c = self.config
        if self._validation is None:
            self._validation = generate(c.validate_jobsets, c.rate, c.steps,
                                        seed=VALIDATION_SEED, resources=c.resources)
        return self._validation

    def evaluate(self, jobs: GridJobs, *, greedy: bool = True, seed: int = 0) -> DiscreteBatch:
        """Run the current policy on `jobs` (greedy by default) and return the finished batch."""
        c = self.config
        forward = NumpyPolicy(self.net, np.float64 if greedy else np.float32)
        ro = rollout(forward, c.batch(), jobs, mask_invalid=c.mask_invalid,
                     rng=np.random.default_rng(seed), greedy=greedy,
                     max_decisions=c.max_decisions * 4, record=False)
        return ro.batch

    def policy(self, *, sample: bool = False, seed: int = 0, name: str = "deeprm"):
        """The network as an engine policy (`agents.deeprm_policy.GridNetPolicy`)."""
        from hpcsched.agents.deeprm_policy import GridNetPolicy

        return GridNetPolicy(self.net, self.config, sample=sample, seed=seed, name=name)

    # -- files -------------------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        """The model file's contents (`hpcsched.modelfile`): the config, the network, the epoch and
        history, and the training state (RMSProp's, the global random states and the learner's
        own generator)."""
        from hpcsched.modelfile import rng_states

        return {"recipe": "deeprm", "learner": "reinforce", "config": asdict(self.config),
                "learner_config": {}, "learner_state": {},
                "weights": {"policy": self.net.state_dict()}, "norm": {},
                "epoch": self.epoch, "history": self.history,
                "training": {"optimizers": {"policy": self.optimizer.state_dict()},
                             "rng": rng_states(),
                             "learner": {"rng": self.rng.bit_generator.state}}}

    def save(self, path) -> None:
        from hpcsched.modelfile import write_model

        write_model(path, self.state())

    @classmethod
    def load(cls, path) -> "DeepRM":
        """A learner to continue training from `path` (a slim export is refused: it only
        decides)."""
        from hpcsched.modelfile import (ModelFileError, config_of, read_model,
                                                restore_rng_states, restore_state, training_of)

        ck = read_model(path, recipe="deeprm")
        training = training_of(path, ck)
        model = config_of(path, lambda: cls(DeepRMConfig(**ck["config"])))
        restore_state(path, model.net, ck["weights"], "policy")
        restore_state(path, model.optimizer, training["optimizers"], "policy")
        model.epoch = int(ck["epoch"])
        model.history = list(ck["history"])
        try:
            model.rng.bit_generator.state = training["learner"]["rng"]
        except (KeyError, TypeError, ValueError) as e:
            raise ModelFileError(f"{path}: its random state is not valid ({e})") from None
        restore_rng_states(training.get("rng"))
        return model


__all__ = ["CHUNK", "VALIDATION_SEED", "DeepRM", "DeepRMConfig", "NumpyPolicy",
           "Rollout", "choose", "policy_network", "rollout"]
