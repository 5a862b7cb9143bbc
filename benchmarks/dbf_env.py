"""Speed of the DBF environment (`hpcsched/DBF-v0`): `python benchmarks/dbf_env.py [--quick]`.

Lublin-1 (256 cores), standard profile, M = 32 slots with a tail of 4, 1,000-job episodes, so
observations of 256 + 96 floats and 33 actions. Baseline in the same process: the single
`DBFEnv`, one step at a time. Measured:

1. env steps per second, env alone: the single env, then `VecDBF` with N episodes (copy=False),
   a random policy (a valid pick with probability 0.7, else Fwd) drawn with numpy for all N;
2. the same N episodes with the thesis's network in the loop: an actor and a critic, each an
   MLP [1024, 512, 256] (Tanh; the thesis names no activation), run once per step on the batch
   of N observations (logits and values), the actions sampled from the logits (Gumbel-max); in
   float32, and in bfloat16 (torch.autocast, where the CPU has bf16 instructions); and the
   network alone on the same batch, to show where the time goes. The network is untrained, so its
   actions are near uniform over the 33 (mostly empty or too-big slots: Fwd), the mix of early
   training.

Torch runs on 2 threads (the issue's target: >= 20,000 env steps per second with the network on
2 cores). Every rate is the best of several short runs, in wall-clock time and per CPU-second
of this process: on a machine shared with other work, two torch threads lose many times over
while a third process runs, so `--threads 1`'s steps per CPU-second are the number to trust
there (what one core does). Prints a table, then `name=value` pairs (and the load average).
"""
import argparse
import time

import numpy as np
import torch

from hpcsched.envs.dbf import DBFEnv
from hpcsched.envs.dbf_vec import VecDBF
from hpcsched.sim.run import prepare

parser = argparse.ArgumentParser()
parser.add_argument("--quick", action="store_true", help="shorter runs, one repeat")
parser.add_argument("--threads", type=int, default=2)
args = parser.parse_args()
torch.set_num_threads(args.threads)
# the best of several short runs: the development machines' two cores are shared, and two torch
# threads slow down many times over while a third process runs
SECONDS = 0.5 if args.quick else 1.0
REPEAT = 2 if args.quick else 8
WINDOW, TAIL = 32, 4

prepared = prepare("lublin-1", "standard")
results: dict[str, float] = {}


CPU_RATES: dict[str, float] = {}


def rate(fn, n_per_call: int, name: str = "") -> float:
    """Best steps per second of `fn` (one call = n_per_call steps) over REPEAT timed runs; the
    best steps per CPU-second of this process (every thread's) goes to CPU_RATES[name]: with one
    thread, what one core does whoever else shares the machine."""
    fn()  # warm up
    best = best_cpu = 0.0
    for _ in range(REPEAT):
        steps, t0, c0 = 0, time.perf_counter(), time.process_time()
        while time.perf_counter() - t0 < SECONDS:
            fn()
            steps += n_per_call
        best = max(best, steps / (time.perf_counter() - t0))
        best_cpu = max(best_cpu, steps / max(time.process_time() - c0, 1e-9))
    if name:
        CPU_RATES[name] = best_cpu
    return best


def random_actions(rng: np.random.Generator, valid: np.ndarray) -> np.ndarray:
    """A valid pick (uniform among the valid slots) with probability 0.7, else Fwd."""
    n, m = valid.shape
    a = (rng.random((n, m)) * valid).argmax(1)
    a[~valid.any(1) | (rng.random(n) >= 0.7)] = m
    return a


# 1. env alone ----------------------------------------------------------------------------------
env = DBFEnv(prepared, window=WINDOW, tail=TAIL)
env.reset(seed=0)
rng = np.random.default_rng(0)


def single_step():
    a = int(random_actions(rng, env.valid[None])[0])
    if env.step(a)[2]:
        env.reset()


single = rate(single_step, 1, "single")
results["single_steps_per_s"] = round(single)
print(f"DBF env, Lublin-1, M = {WINDOW} (tail {TAIL}), {env.n_obs} inputs, torch threads "
      f"{torch.get_num_threads()}")
print("1. env alone (random valid pick 70% / Fwd)")
print(f"   {'':<22} {'steps/s':>9} {'µs/step':>8} {'vs single':>9} {'per CPU-s':>10}")
print(f"   {'DBFEnv (single)':<22} {single:9.0f} {1e6 / single:8.1f} {1.0:8.1f}x "
      f"{CPU_RATES['single']:10.0f}")
SIZES = (16, 64, 256) if args.quick else (1, 16, 64, 256)
for n in SIZES:
    vec = VecDBF(n, prepared, window=WINDOW, tail=TAIL, copy=False)
    vec.reset(seed=0)

    def vec_step(vec=vec):
        vec.step(random_actions(rng, vec._valid))

    r = rate(vec_step, n, f"vec{n}")
    results[f"vec{n}_steps_per_s"] = round(r)
    print(f"   {'VecDBF N=' + str(n):<22} {r:9.0f} {1e6 / r:8.1f} {r / single:8.1f}x "
          f"{CPU_RATES[f'vec{n}']:10.0f}")


# 2. env + the thesis's network -----------------------------------------------------------------
def mlp(n_in: int, n_out: int) -> torch.nn.Module:
    return torch.nn.Sequential(
        torch.nn.Linear(n_in, 1024), torch.nn.Tanh(), torch.nn.Linear(1024, 512), torch.nn.Tanh(),
        torch.nn.Linear(512, 256), torch.nn.Tanh(), torch.nn.Linear(256, n_out))


torch.manual_seed(0)
actor, critic = mlp(env.n_obs, WINDOW + 1), mlp(env.n_obs, 1)


def cpu_has_bf16() -> bool:
    try:
        with open("/proc/cpuinfo") as f:
            flags = f.read()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


HAS_BF16 = cpu_has_bf16()


def forward(obs: torch.Tensor, bf16: bool) -> torch.Tensor:
    with torch.inference_mode():
        if bf16:
            with torch.autocast("cpu", dtype=torch.bfloat16):
                logits, _value = actor(obs), critic(obs)
            logits = logits.float()
        else:
            logits, _value = actor(obs), critic(obs)
        gumbel = -torch.log(-torch.log(torch.rand_like(logits)))
        return (logits + gumbel).argmax(1)


print("2. env + actor and critic MLPs [1024, 512, 256] once per step on the batch")
print(f"   {'':<22} {'env+net':>9} {'net alone':>10}  {'env µs':>7} {'net µs':>7}  per step;"
      f" {'env+net':>8} {'net':>8} per CPU-s")
modes = (False, True) if HAS_BF16 else (False,)
for n in (64, 256):
    for bf16 in modes:
        vec = VecDBF(n, prepared, window=WINDOW, tail=TAIL, copy=False)
        obs, _ = vec.reset(seed=0)
        buf = torch.from_numpy(obs)  # the env's own buffer: no copy per step

        def net_step(vec=vec, buf=buf, bf16=bf16):
            vec.step(forward(buf, bf16).numpy())

        fixed = torch.from_numpy(obs.copy())
        key = f"vec{n}_{'bf16' if bf16 else 'fp32'}"
        both = rate(net_step, n, key + "_with_net")
        net = rate(lambda: forward(fixed, bf16), n, key + "_net")
        env_us = 1e6 / both - 1e6 / net
        tag = f"N={n} {'bf16' if bf16 else 'fp32'}"
        print(f"   {tag:<22} {both:9.0f} {net:10.0f}  {env_us:7.1f} {1e6 / net:7.1f}  "
              f"          {CPU_RATES[key + '_with_net']:8.0f} {CPU_RATES[key + '_net']:8.0f}")
        results[f"{key}_with_net_steps_per_s"] = round(both)
        results[f"{key}_net_alone_per_s"] = round(net)
        results[f"{key}_with_net_steps_per_cpu_s"] = round(CPU_RATES[key + "_with_net"])
if not HAS_BF16:
    print("   (no bf16 instructions on this CPU: float32 only)")
best_fp32 = max(v for k, v in results.items() if k.endswith("fp32_with_net_steps_per_s"))
results["best_fp32_with_net_vs_20000"] = round(best_fp32 / 20000, 2)
results["vec64_vs_single"] = round(results["vec64_steps_per_s"] / single, 1)
results["load_average"] = __import__("os").getloadavg()[0]
print(" ".join(f"{k}={v}" for k, v in results.items()))
