"""RLScheduler training speed: rollouts, one PPO epoch, one decision. Ratios against baselines run in
the same process.

    python benchmarks/train.py            # lublin-1 (the heaviest: ~50 waiting jobs per decision)
    python benchmarks/train.py --quick    # fewer repetitions
    python benchmarks/train.py --trace hpc2n --epochs 5

Baselines:
- rollouts: one PickJobEnv stepped one decision at a time with one torch call per decision, the way
  the authors' code collects trajectories (one torch thread, as the batched rollout uses); the
  batched rate is the best of 3 rollouts of 100 episodes;
- epoch: the same update iterations as plain autograd over the distinct job rows (the update
  before agents/packed.py: the kernel's activations kept whole, the logits gathered to the
  128-slot grid, log-softmax over all slots), the policy and value iterations one after the other
  (two threads per product), and a "dense" update that scores every one of the 128 slots of every
  decision; each timed for a few iterations and scaled to 80 + 80;
- decision: a torch forward of the same network per call, and SJF choosing among the same jobs
  (each the best of 20 batches of calls).

The machine may be shared: the epochs are repeated (--epochs), their median is reported with the
range and the CPU time the process used, and the load averages are printed before and after.

Last line: ``epoch_s=... decision_ms=... env_steps_per_s=...`` (the batched, packed, parallel path;
epoch_s the median).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
import torch

from hpcsched.agents import rollout
from hpcsched.agents.rlscheduler_policy import RLPolicy
from hpcsched.agents.batch import Batch
from hpcsched.agents.nets import MASK_PENALTY, KernelPolicy, kernel_logits
from hpcsched.agents.packed import gather
from hpcsched.agents.ppo import PPO, advantages_and_returns
from hpcsched.agents.rlscheduler import RLSchedulerConfig
from hpcsched.envs.pick_job import PickJobEnv, observe
from hpcsched.sim.run import as_prepared
from hpcsched.policies.priority import get_policy
from hpcsched.sim.factory import make_engine


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


def batched_steps(model: PPO, episodes: int, repeat: int = 3) -> tuple[float, rollout.Trajectories]:
    """Decisions per second of the batched rollout: the best of `repeat` rollouts of `episodes`
    episodes (the environments built before the clock starts)."""
    env = model.env()
    best, traj = 0.0, None
    for r in range(repeat):
        gen = torch.Generator().manual_seed(r)
        t0 = time.perf_counter()
        traj = rollout.collect(env, model._act_fn(gen), episodes, seed=1 + r)
        best = max(best, int(traj.lengths.sum()) / (time.perf_counter() - t0))
    return best, traj


def epochs(trace: str, count: int, threads: int) -> list[tuple[float, float, dict]]:
    """`count` full epochs (rollout + 80 + 80 iterations: the KL stop is disabled), one model:
    (wall s, CPU s of the process, stats) each."""
    torch.set_num_threads(threads)
    model = PPO(RLSchedulerConfig(trace=trace, target_kl=1e9, seed=0))
    model.env()
    out = []
    for _ in range(count):
        t0, c0 = time.perf_counter(), time.process_time()
        model.learn(1)
        out.append((time.perf_counter() - t0, time.process_time() - c0, model.history[-1]))
    return out


def targets(traj: rollout.Trajectories) -> tuple[Batch, torch.Tensor, torch.Tensor]:
    b = Batch(traj.obs, traj.mask, traj.actions, traj.logp)
    adv, ret = advantages_and_returns(np.zeros(b.size), traj.lengths, traj.rewards, 1.0, 0.97)
    b.adv = torch.from_numpy(((adv - adv.mean()) / (adv.std() + 1e-8)).astype(np.float32))
    b.ret = torch.from_numpy(ret.astype(np.float32))
    return b, b.adv, b.ret


def surrogate(model: PPO, logp: torch.Tensor, b: Batch) -> torch.Tensor:
    ratio = torch.exp(logp - b.logp_old)
    return -(torch.min(ratio * b.adv, torch.clamp(ratio, 0.8, 1.2) * b.adv)).mean()


def timed_iterations(pi_step, v_step, iters: int) -> float:
    """Seconds that 80 policy + 80 value iterations take at this per-iteration cost."""
    pi_step(), v_step()  # warm up
    t0 = time.perf_counter()
    for _ in range(iters):
        pi_step()
        v_step()
    return (time.perf_counter() - t0) / iters * 80


def ours_update_seconds(model: PPO, b: Batch, iters: int) -> float:
    """The update as PPO runs it (agents/packed.py), one iteration after the other."""
    def pi_step():
        model.pi_optimizer.zero_grad()
        model._policy_pass(b, first=False)
        model.pi_optimizer.step()

    def v_step():
        model.v_optimizer.zero_grad()
        model._value_pass(b)
        model.v_optimizer.step()

    return timed_iterations(pi_step, v_step, iters)


def autograd_update_seconds(model: PPO, b: Batch, iters: int) -> float:
    """The same iterations as plain autograd over the distinct rows (the update before
    agents/packed.py)."""
    slots = b.packed[1].shape[1]
    u = len(b.packed[0])
    with_pad = torch.cat([b.packed[0], b.pad_row[None]])
    single_pad = b.packed[1].clamp(max=u)

    def pi_step():
        model.pi_optimizer.zero_grad()
        scores = model.policy.kernel(b.packed[0]).squeeze(-1)
        logits = gather(torch.cat([scores, scores.new_full((slots,), -MASK_PENALTY)]), b.packed[1])
        logp = torch.log_softmax(logits, -1).gather(1, b.actions[:, None]).squeeze(1)
        surrogate(model, logp, b).backward()
        model.pi_optimizer.step()

    def v_step():
        model.v_optimizer.zero_grad()
        scores = model.value.kernel(with_pad).squeeze(-1)
        v = model.value.head(gather(scores, single_pad)).squeeze(-1)
        ((v - b.ret) ** 2).mean().backward()
        model.v_optimizer.step()

    return timed_iterations(pi_step, v_step, iters)


def dense_update_seconds(model: PPO, b: Batch, iters: int) -> float:
    """What 80 + 80 iterations cost when every slot of every decision goes through the networks."""
    def pi_step():
        model.pi_optimizer.zero_grad()
        logp = torch.log_softmax(model.policy(b.obs, b.mask), -1)
        surrogate(model, logp.gather(1, b.actions[:, None]).squeeze(1), b).backward()
        model.pi_optimizer.step()

    def v_step():
        model.v_optimizer.zero_grad()
        ((model.value(b.obs) - b.ret) ** 2).mean().backward()
        model.v_optimizer.step()

    return timed_iterations(pi_step, v_step, iters)


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


def per_call_ms(fn, reps: int, repeat: int = 20, clock=time.perf_counter) -> float:
    """Milliseconds per call: the best of `repeat` batches of reps / repeat calls (as timeit
    advises: the other batches were slowed by something else on the machine). `clock`:
    time.process_time for the CPU time of the process instead of the wall time."""
    fn()
    n = max(1, reps // repeat)
    best = float("inf")
    for _ in range(repeat):
        t0 = clock()
        for _ in range(n):
            fn()
        best = min(best, (clock() - t0) / n * 1000)
    return best


def load() -> str:
    return "load average %.2f %.2f %.2f" % os.getloadavg()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", default="lublin-1")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=None, help="epochs timed (default 3, --quick 1)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    reps = 200 if args.quick else 2000
    n_epochs = args.epochs or (1 if args.quick else 3)
    load_before = load()

    say("decisions ...")
    prepared, engine, view = busy_view(args.trace)
    net = KernelPolicy()
    policy = RLPolicy(net, prepared.report.norm)
    obs, mask, _ = observe(view, prepared.report.norm)
    weights = net.numpy_weights()

    decision = per_call_ms(lambda: policy.select(view), reps)
    # CPU time: batches long enough for process_time's resolution
    decision_cpu = per_call_ms(lambda: policy.select(view), 10 * reps, repeat=5,
                               clock=time.process_time)
    network = per_call_ms(lambda: kernel_logits(weights, obs, mask), reps)
    obs_t, mask_t = torch.from_numpy(obs)[None], torch.from_numpy(mask)[None]

    def torch_call():
        with torch.no_grad():
            return net(obs_t, mask_t)

    torch_ms = per_call_ms(torch_call, reps)
    request = view.jobs["req_time"]
    sjf_ms = per_call_ms(lambda: view.queue[np.argmin(request[view.queue])], reps)

    say("rollouts ...")
    torch.set_num_threads(1)  # as PPO's rollouts run
    single = single_env_steps(args.trace, 500 if args.quick else 3000)
    model = PPO(RLSchedulerConfig(trace=args.trace, seed=0))
    batched, traj = batched_steps(model, 100, 1 if args.quick else 3)

    say(f"epochs (80 + 80 iterations) x {n_epochs} ...")
    runs = epochs(args.trace, n_epochs, args.threads)
    walls = sorted(r[0] for r in runs)
    epoch_s = float(np.median(walls))
    cpu_s = float(np.median([r[1] for r in runs]))
    stats = sorted(runs, key=lambda r: r[0])[len(runs) // 2][2]

    say("update baselines (a few iterations each, scaled to 80 + 80) ...")
    b, _, _ = targets(traj)
    iters = 2 if args.quick else 5
    torch.set_num_threads(1)
    ours_1 = ours_update_seconds(PPO(RLSchedulerConfig(trace=args.trace, seed=0)), b, iters)
    plain_1 = autograd_update_seconds(PPO(RLSchedulerConfig(trace=args.trace, seed=0)), b, iters)
    torch.set_num_threads(args.threads)
    serial = ours_update_seconds(PPO(RLSchedulerConfig(trace=args.trace, seed=0)), b, iters)
    dense = dense_update_seconds(PPO(RLSchedulerConfig(trace=args.trace, seed=0)), b, 1)

    spread = f"{walls[0]:.1f}-{walls[-1]:.1f} s over {len(walls)}" if len(walls) > 1 else "1 run"
    rows = [
        ("decision over %d waiting jobs (RLPolicy.select)" % len(view.queue), f"{decision:.3f} ms",
         f"CPU {decision_cpu:.3f} ms; paper 0.30 ms"),
        ("  kernel net, numpy, 128 slots", f"{network:.3f} ms", f"torch call {torch_ms:.3f} ms"),
        ("  SJF picking from the same queue", f"{sjf_ms:.3f} ms", "paper 0.71 ms"),
        ("rollout, 100 envs batched", f"{batched:,.0f} decisions/s",
         f"{batched / single:.1f}x one env + torch per step ({single:,.0f}/s)"),
        ("epoch 100 x 256 jobs, 80+80 iterations", f"{epoch_s:.1f} s",
         f"median ({spread}); {cpu_s:.1f} CPU s; paper 123 s"),
        ("  of which rollout / update", f"{stats['rollout_s']:.1f} / {stats['update_s']:.1f} s",
         f"policy {stats['pi_s']:.1f} s, value {stats['v_s']:.1f} s side by side"),
        ("update, one iteration after the other, 1 thread", f"{ours_1:.1f} s",
         f"{plain_1 / ours_1:.2f}x plain autograd on the distinct rows ({plain_1:.1f} s)"),
        (f"  the same with {args.threads} torch threads per product", f"{serial:.1f} s",
         f"dense update would take {dense:.0f} s ({dense / ours_1:.0f}x)"),
    ]
    width = max(len(r[0]) for r in rows)
    print(f"trace {args.trace}, {args.threads} torch threads, "
          f"{stats['decisions']} decisions per epoch, "
          f"{traj.mask.sum() / max(len(traj.mask), 1):.1f} waiting jobs per decision")
    print(f"before: {load_before}; after: {load()}")
    for name, value, note in rows:
        print(f"{name.ljust(width)}  {value:>20}  {note}")
    print(f"epoch_s={epoch_s:.2f} decision_ms={decision:.4f} env_steps_per_s={batched:.0f}")


if __name__ == "__main__":
    main()
