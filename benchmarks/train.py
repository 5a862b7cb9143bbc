"""RLScheduler training speed: rollouts, one PPO epoch, one decision. Ratios against baselines run in
the same process.

    python benchmarks/train.py            # lublin-1 (the heaviest: ~50 waiting jobs per decision)
    python benchmarks/train.py --quick    # fewer repetitions
    python benchmarks/train.py --trace hpc2n

Baselines:
- rollouts: one PickJobEnv stepped one decision at a time with one torch call per decision, the way
  the authors' code collects trajectories;
- epoch: the same epoch with the policy and value iterations one after the other (two threads per
  product), and a "dense" update that scores every one of the 128 slots of every decision instead
  of the distinct real rows (timed for a few iterations, scaled to 80 + 80);
- decision: a torch forward of the same network per call, and SJF choosing among the same jobs.

Last line: ``epoch_s=... decision_ms=... env_steps_per_s=...`` (the batched, packed, parallel path).
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import torch

from hpcsched.agents import rollout
from hpcsched.agents.checkpoint import RLPolicy
from hpcsched.agents.nets import KernelPolicy
from hpcsched.agents.ppo import PPO, PPOConfig, _Batch, advantages_and_returns
from hpcsched.envs.pick_job import PickJobEnv, as_prepared
from hpcsched.policies.priority import get_policy
from hpcsched.sim.engine import make_engine


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def single_env_steps(trace: str, steps: int) -> float:
    """Decisions per second of one env and one torch forward per decision."""
    env = PickJobEnv(trace, episode_jobs=256)
    net = KernelPolicy()
    obs, info = env.reset(seed=0)
    gen = torch.Generator().manual_seed(0)
    t0 = time.perf_counter()
    for _ in range(steps):
        with torch.no_grad():
            logits = net(torch.from_numpy(obs)[None], torch.from_numpy(env.action_masks())[None])
            a = int(torch.multinomial(torch.softmax(logits, -1), 1, generator=gen))
        obs, _, done, _, _ = env.step(a)
        if done:
            obs, _ = env.reset()
    return steps / (time.perf_counter() - t0)


def batched_steps(model: PPO, episodes: int) -> tuple[float, rollout.Trajectories]:
    gen = torch.Generator().manual_seed(0)
    t0 = time.perf_counter()
    traj = rollout.collect(model.env(), model._act_fn(gen), episodes, seed=1)
    return int(traj.lengths.sum()) / (time.perf_counter() - t0), traj


def epoch_seconds(trace: str, parallel: bool, threads: int) -> tuple[float, dict]:
    """One full epoch (rollout + 80 + 80 iterations: the KL stop is disabled)."""
    torch.set_num_threads(threads)
    model = PPO(PPOConfig(trace=trace, target_kl=1e9, parallel_update=parallel, seed=0))
    model.env()
    t0 = time.perf_counter()
    model.learn(1)
    return time.perf_counter() - t0, model.history[-1]


def dense_update_seconds(model: PPO, traj: rollout.Trajectories, iters: int) -> float:
    """What 80 + 80 iterations cost when every slot of every decision goes through the networks."""
    b = _Batch(traj)
    values = np.zeros(b.size)
    adv, ret = advantages_and_returns(values, traj.lengths, traj.rewards, 1.0, 0.97)
    adv_t = torch.from_numpy(((adv - adv.mean()) / (adv.std() + 1e-8)).astype(np.float32))
    ret_t = torch.from_numpy(ret.astype(np.float32))
    t0 = time.perf_counter()
    for _ in range(iters):
        model.pi_optimizer.zero_grad()
        logp = torch.log_softmax(model.policy(b.obs, b.mask), -1)
        ratio = torch.exp(logp.gather(1, b.actions[:, None]).squeeze(1) - b.logp_old)
        (-(torch.min(ratio * adv_t, torch.clamp(ratio, 0.8, 1.2) * adv_t)).mean()).backward()
        model.pi_optimizer.step()
        model.v_optimizer.zero_grad()
        ((model.value(b.obs) - ret_t) ** 2).mean().backward()
        model.v_optimizer.step()
    return (time.perf_counter() - t0) / iters * 80


def busy_view(trace: str, waiting: int = 128, jobs: int = 20000):
    """A decision of the trace with at least `waiting` jobs in the queue, or, if the trace never
    queues that many in its first `jobs` jobs, the decision with the longest queue."""
    prepared = as_prepared(trace, "rlscheduler")
    fcfs = get_policy("fcfs")

    def replay():
        engine = make_engine(prepared.jobs.window(0, min(jobs, len(prepared.jobs))),
                             prepared.cluster, prepared.profile, "none")
        while (view := engine.next_decision()) is not None:
            yield engine, view
            engine.apply(engine.choose(fcfs, view))

    longest, at = -1, 0
    for k, (engine, view) in enumerate(replay()):
        if len(view.queue) >= waiting:
            return prepared, engine, view
        if len(view.queue) > longest:
            longest, at = len(view.queue), k
    say(f"{trace} never queues {waiting} jobs; timing the longest queue ({longest} jobs)")
    for k, (engine, view) in enumerate(replay()):
        if k == at:
            return prepared, engine, view
    raise RuntimeError("unreachable")


def per_call_ms(fn, reps: int) -> float:
    fn()
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - t0) / reps * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", default="lublin-1")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    reps = 200 if args.quick else 2000

    say("decisions ...")
    prepared, engine, view = busy_view(args.trace)
    net = KernelPolicy()
    policy = RLPolicy(net, prepared.report.norm)
    from hpcsched.envs.pick_job import observe

    obs, mask, _ = observe(view, prepared.report.norm)
    weights = net.numpy_weights()
    from hpcsched.agents.nets import kernel_logits

    decision = per_call_ms(lambda: policy.select(view), reps)
    network = per_call_ms(lambda: kernel_logits(weights, obs, mask), reps)
    obs_t, mask_t = torch.from_numpy(obs)[None], torch.from_numpy(mask)[None]

    def torch_call():
        with torch.no_grad():
            return net(obs_t, mask_t)

    torch_ms = per_call_ms(torch_call, reps)
    request = view.jobs["req_time"]
    sjf_ms = per_call_ms(lambda: view.queue[np.argmin(request[view.queue])], reps)

    say("rollouts ...")
    single = single_env_steps(args.trace, 500 if args.quick else 3000)
    model = PPO(PPOConfig(trace=args.trace, seed=0))
    batched, traj = batched_steps(model, 100)

    say("epochs (80 + 80 iterations) ...")
    epoch_par, stats = epoch_seconds(args.trace, True, args.threads)
    epoch_ser, _ = epoch_seconds(args.trace, False, args.threads)
    torch.set_num_threads(args.threads)
    dense = dense_update_seconds(PPO(PPOConfig(trace=args.trace, seed=0)), traj,
                                 1 if args.quick else 2)

    rows = [
        ("decision over %d waiting jobs (RLPolicy.select)" % len(view.queue), f"{decision:.3f} ms",
         "paper 0.30 ms"),
        ("  kernel net, numpy, 128 slots", f"{network:.3f} ms", f"torch call {torch_ms:.3f} ms"),
        ("  SJF picking from the same queue", f"{sjf_ms:.3f} ms", "paper 0.71 ms"),
        ("rollout, 100 envs batched", f"{batched:,.0f} decisions/s",
         f"{batched / single:.1f}x one env + torch per step ({single:,.0f}/s)"),
        ("epoch 100 x 256 jobs, 80+80 iterations", f"{epoch_par:.1f} s",
         f"{epoch_ser / epoch_par:.2f}x serial update ({epoch_ser:.1f} s); paper 123 s"),
        ("  of which rollout / update", f"{stats['rollout_s']:.1f} / {stats['update_s']:.1f} s",
         f"dense update would take {dense:.0f} s ({dense / stats['update_s']:.1f}x)"),
    ]
    width = max(len(r[0]) for r in rows)
    print(f"trace {args.trace}, {args.threads} torch threads, "
          f"{stats['decisions']} decisions per epoch, "
          f"{traj.mask.sum() / max(len(traj.mask), 1):.1f} waiting jobs per decision")
    for name, value, note in rows:
        print(f"{name.ljust(width)}  {value:>20}  {note}")
    print(f"epoch_s={epoch_par:.2f} decision_ms={decision:.4f} env_steps_per_s={batched:.0f}")


if __name__ == "__main__":
    main()
