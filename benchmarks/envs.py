"""Speed of the PickJob environments: `python benchmarks/envs.py`.

lublin-1, rlscheduler profile, 256-job windows, random valid actions. Baseline in the same process: the
bare engine stepped with the same kind of random valid choices. Prints a table, then `name=value` pairs.
"""
import time, sys
import numpy as np
from hpcsched.envs.pick_job import PickJobEnv
from hpcsched.envs.observation import observe, UserScores
from hpcsched.envs.vec import VecPickJob
from hpcsched.sim.factory import make_engine
from hpcsched.sim.run import prepare

def best(fn, repeat=3):
    b = float("inf")
    for _ in range(repeat):
        t = time.perf_counter(); out = fn(); b = min(b, time.perf_counter() - t)
    return b, out

p = prepare("lublin-1", "rlscheduler")
results = {}

# 1. observe() on a decision with >= 128 waiting jobs
e = make_engine(p.jobs.window(3000, 1024), p.cluster, p.profile, "none")
while len(e.queue) < 160: e.apply(e.queue[-1])
view = e.next_decision()
def per_call(f, n=20000):
    f(); t = time.perf_counter()
    for _ in range(n): f()
    return (time.perf_counter() - t) / n * 1e6
q = list(e.queue)
print(f"1. observe(view), µs per call ({len(q)} waiting / 128 exactly)")
for cut in ("fcfs", "interleave"):
    a = per_call(lambda: observe(view, p.report.norm, 128, cut))
    e.queue = q[:128]; b = per_call(lambda: observe(view, p.report.norm, 128, cut)); e.queue = q
    print(f"   {cut:<11} {a:7.1f} {b:7.1f}"); results[f"observe_{cut}_us"] = round(b, 1)
us = UserScores(view.jobs, e.executed)
e.queue = q[:128]
fa = per_call(lambda: observe(view, p.report.norm, fairness=us)); e.queue = q
print(f"   fairness    {fa:7.1f} (128 waiting, 1024-job window)"); results["observe_fair_us"] = round(fa, 1)

# 2. single env vs bare engine, per decision
def engine_loop(backfill, episodes=100, seed=0):
    rng = np.random.default_rng(seed); steps = 0
    for _ in range(episodes):
        s = int(rng.integers(256, 10000 - 257))
        eng = make_engine(p.jobs.window(s, 256), p.cluster, p.profile, backfill)
        while eng.next_decision() is not None:
            qq = eng.queue
            k = min(len(qq), 128)
            eng.apply(sorted(qq)[int(rng.random() * k)]); steps += 1
        eng.result()
    return steps
def env_loop(backfill, episodes=100, seed=0):
    rng = np.random.default_rng(seed); env = PickJobEnv(p, backfill=backfill); steps = 0
    for i in range(episodes):
        obs, info = env.reset(seed=seed + i); m = info["action_mask"]
        while True:
            obs, r, done, _, info = env.step(int(rng.random() * m.sum())); steps += 1
            m = info["action_mask"]
            if done: break
    return steps
print("2. one episode at a time, decisions per second (random valid slot)")
for bf in ("none", "schedgym"):
    t0, n0 = best(lambda: engine_loop(bf), 2); t1, n1 = best(lambda: env_loop(bf), 2)
    print(f"   {bf:<9} bare engine {n0/t0:9.0f}/s  PickJobEnv {n1/t1:9.0f}/s  ({t1/n1*1e6:5.1f} µs per step)")
    results[f"env_{bf}_steps_per_s"] = round(n1 / t1)

# 3. VecPickJob
print("3. VecPickJob, env steps per second in total (random valid slots)")
for N in (1, 16, 64, 256):
    for copy in (True, False):
        vec = VecPickJob(N, p, copy=copy)
        rng = np.random.default_rng(0)
        def run(target=60000):
            obs, mask = vec.reset(seed=0); steps = 0; done_n = 0
            while steps < target:
                a = (rng.random(N) * mask.sum(1)).astype(np.int64)
                obs, mask, r, d, infos = vec.step(a); steps += N; done_n += int(d.sum())
            return steps, done_n
        t, (n, done_n) = best(run, 2)
        print(f"   N={N:<4} copy={str(copy):<5} {n/t:9.0f}/s  ({done_n} episodes)")
        results[f"vec{N}{'' if copy else '_nocopy'}_steps_per_s"] = round(n / t)
print(" ".join(f"{k}={v}" for k, v in results.items()))
