"""HeraSched's warm start by imitation (ours, not the thesis's): before the first update, each
agent is taught what a fixed rule decides (behaviour cloning), so that PPO starts from that rule's
schedule instead of from random weights (`train herasched --imitate first-fit+best-fit`).

    stats = imitate(model, "first-fit+best-fit")   # model: a new `agents.herasched.HeraSched`

**The rules.** The selector's is `first-fit`: the first slot its mask allows, Forward only when
no job may start. The window lists its head slots oldest first and its tail after them, so with
the thesis's masks this starts the oldest job that fits, with no reservation: the "flat rule" of
`benchmarks/herasched_flat.py`; under `--reserve-after AGE`'s masks it starts the oldest job
that the reservation for the oldest waiting job allows (once that one has waited AGE): FCFS with
an EASY-like reservation, within the window. The allocator's is one of the heuristic
allocators (`envs.herasched.HEURISTIC_ALLOCATORS`): the job's nodes are the ones that heuristic
picks (`HeraEpisode.nodes_by`, as `herasched:MODEL@allocator=NAME` places them),
and at each of the allocator's steps any of them not yet chosen is right.

**The demonstrations** are the rule's own schedule on the run's training trace: one environment,
episodes reset with seeds of their own, the rules deciding; every `stride`-th selector decision is
kept (with the allocator decisions that place its job), so that the kept ones spread over
`decisions x stride` decisions of the schedule rather than its first busy hour.

**The loss.** The selector's: the cross-entropy of the rule's slot. The allocator's: minus the
log of the probability the policy gives to the rule's nodes not yet chosen (any order of the
same nodes is the same placement). Adam, minibatches of the run's size, `passes` passes. The
critics are not fitted: PPO's first update fits them, on the rollout of the imitated policy.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from hpcsched.agents.ppo import derived_seed
from hpcsched.envs.herasched import ALLOCATOR, HEURISTIC_ALLOCATORS, SELECTOR

SELECTOR_RULES = ("first-fit",)
#: selector decisions imitated, one kept in `STRIDE`, passes over them, the learning rate
DECISIONS, STRIDE, PASSES, LR = 2048, 4, 30, 1e-3


def parse_rules(text: str, place_with: str | None = None) -> tuple[str, str | None]:
    """`--imitate`'s "SELECTOR[+ALLOCATOR]" as (selector rule, allocator heuristic or None);
    `ValueError` naming what is wrong. Behind a heuristic allocator (`place_with`) the allocator
    agent is not trained, so only the selector imitates; the allocator agent imitates whenever it
    is trained, so its rule is then required."""
    sel, sep, alloc = str(text).strip().lower().partition("+")
    if sel not in SELECTOR_RULES:
        raise ValueError(f"--imitate {text!r}: the selector's rule must be one of "
                         f"{', '.join(SELECTOR_RULES)}, not {sel!r}")
    if place_with is not None:
        if sep:
            raise ValueError(f"--imitate {text!r}: with --allocator {place_with} the allocator "
                             f"agent is not trained; give the selector's rule alone "
                             f"(--imitate {sel})")
        return sel, None
    if not sep or alloc not in HEURISTIC_ALLOCATORS:
        raise ValueError(f"--imitate {text!r}: the allocator agent is trained too, so name the "
                         f"heuristic it imitates: {sel}+NAME, NAME one of "
                         f"{', '.join(HEURISTIC_ALLOCATORS)}")
    return sel, alloc


class Demonstrations:
    """The rules' decisions: the selector's (obs, mask, slot) and the allocator's (obs, mask, the
    rule's nodes not yet chosen, as a mask)."""

    def __init__(self) -> None:
        self.sel: tuple[list, list, list] = ([], [], [])
        self.alloc: tuple[list, list, list] = ([], [], [])

    def add(self, agent: int, obs: np.ndarray, mask: np.ndarray, target) -> None:
        for store, x in zip(self.sel if agent == SELECTOR else self.alloc, (obs, mask, target)):
            store.append(np.array(x, copy=True))

    def arrays(self, agent: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        obs, mask, target = self.sel if agent == SELECTOR else self.alloc
        if not obs:
            return None
        return np.stack(obs), np.stack(mask), np.stack(target)


def first_fit(mask: np.ndarray) -> int:
    """The selector's first-fit rule: the first allowed action (Forward, the last, only when no
    job may start)."""
    allowed = np.flatnonzero(mask)
    if allowed.size == 0:
        raise RuntimeError("the selector has no valid action")
    return int(allowed[0])


def demonstrate(env, allocator: str | None, decisions: int = DECISIONS, stride: int = STRIDE,
                seed: int = 0) -> Demonstrations:
    """Run the rules on `env` (a `HeraSchedEnv`) until `decisions` selector decisions are kept,
    one in `stride`; the allocator agent's decisions (when `env` has no heuristic allocator of
    its own) follow `allocator`'s placements and are kept with their job's selector decision."""
    from hpcsched.sim.factory import resolve_allocator

    if (env.place_with is None) != (allocator is not None):
        raise ValueError("the allocator agent acts in this environment: name the heuristic it "
                         "imitates" if env.place_with is None else
                         f"this environment places with {env.place_with}: the allocator agent "
                         f"does not act, so it imitates nothing")
    placer = None if allocator is None else resolve_allocator(allocator, env.prepared.profile)
    demos = Demonstrations()
    width_sel, width_alloc = env.layout.window + 1, env.layout.nodes
    kept = seen = episodes = 0
    obs, info = env.reset(seed=derived_seed(seed, 2_000_000, episodes))
    keep, nodes = False, ()
    while kept < decisions:
        ep, mask = env.episode, info["action_mask"]
        if info["agent"] == SELECTOR:
            action = first_fit(mask[:width_sel])
            keep = seen % stride == 0
            seen += 1
            if keep:
                demos.add(SELECTOR, obs, mask[:width_sel], action)
                kept += 1
            nodes = ()
        else:
            if not nodes:  # the job's first node: the heuristic places it whole
                nodes = ep.nodes_by(placer, ep.row)
            left = [n for n in nodes if n not in ep.chosen]
            action = min(left)
            if keep:
                target = np.zeros(width_alloc, dtype=bool)
                target[left] = True
                demos.add(ALLOCATOR, obs, mask[:width_alloc], target)
        obs, _, terminated, _, info = env.step(action)
        if terminated:
            episodes += 1
            obs, info = env.reset(seed=derived_seed(seed, 2_000_000, episodes))
            keep, nodes = False, ()
    return demos


def fit(policy: torch.nn.Module, obs: np.ndarray, mask: np.ndarray, target: np.ndarray,
        passes: int = PASSES, minibatch: int = 64, lr: float = LR, seed: int = 0
        ) -> dict[str, float]:
    """Adam on minus the log-probability of the rule's choice (`target`: an action per decision,
    or a boolean mask of the actions that are all right); returns the last pass's mean loss and
    the share of decisions whose greedy action the rule would take."""
    obs_t, mask_t = torch.from_numpy(obs), torch.from_numpy(mask)
    target_t = torch.from_numpy(target)
    if target_t.dtype != torch.bool:
        target_t = torch.nn.functional.one_hot(target_t, mask.shape[1]).bool()
    if not bool((target_t & mask_t).any(1).all()):
        raise ValueError("a demonstrated choice is one its mask forbids")
    opt = torch.optim.Adam(policy.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(int(seed))
    n = len(obs)
    losses: list[float] = []
    for _ in range(passes):
        losses = []
        for idx in torch.randperm(n, generator=gen).split(minibatch):
            logits = policy(obs_t[idx], mask_t[idx])
            right = logits.masked_fill(~target_t[idx], -torch.inf)
            loss = (torch.logsumexp(logits, -1) - torch.logsumexp(right, -1)).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(float(loss.detach()))
    agree = []
    with torch.no_grad():
        for idx in torch.arange(n).split(512):
            best = policy(obs_t[idx], mask_t[idx]).argmax(-1)
            agree.append(target_t[idx].gather(1, best[:, None]).squeeze(1))
    return {"loss": float(np.mean(losses)), "agreement": float(torch.cat(agree).float().mean()),
            "decisions": int(n)}


def imitate(model, rules: str, decisions: int = DECISIONS, stride: int = STRIDE,
            passes: int = PASSES) -> dict[str, Any]:
    """Fit `model`'s actors (a `HeraSched`) to `rules` ("first-fit" or "first-fit+NAME") on
    demonstrations from its training trace; returns what was fitted, per agent: imitation_loss,
    imitation_agreement and imitation_decisions, prefixed by the agent's name."""
    from hpcsched.agents.herasched_rollout import AGENT_NAMES
    from hpcsched.agents.ppo import torch_threads

    c = model.config
    _, allocator = parse_rules(rules, c.place_with)
    demos = demonstrate(c.make_env(), allocator, decisions, stride, seed=c.seed)
    stats: dict[str, Any] = {"imitate": rules}
    with torch_threads(c.threads):
        for agent, ppo in enumerate(model.agents):
            data = demos.arrays(agent)
            if data is None:
                continue
            fitted = fit(ppo.policy, *data, passes=passes, minibatch=c.minibatch,
                         seed=derived_seed(c.seed, 3_000_000, agent))
            for k, v in fitted.items():
                stats[f"{AGENT_NAMES[agent]}_imitation_{k}"] = v
    return stats


def describe(stats: dict[str, Any]) -> str:
    """`imitate`'s statistics in one line, for a run's output."""
    parts = []
    for name in ("selector", "allocator"):
        if f"{name}_imitation_decisions" in stats:
            parts.append(f"the {name} on {stats[f'{name}_imitation_decisions']:,} decisions "
                         f"(greedy agrees on {stats[f'{name}_imitation_agreement']:.1%}, loss "
                         f"{stats[f'{name}_imitation_loss']:.3f})")
    return f"imitating {stats['imitate']}: " + " and ".join(parts)


__all__ = ["DECISIONS", "Demonstrations", "LR", "PASSES", "SELECTOR_RULES", "STRIDE",
           "demonstrate", "describe", "first_fit", "fit", "imitate", "parse_rules"]
