"""Speed of the deeprm profile: `python benchmarks/deeprm.py`.

Baselines measured in the same run: the same 100 jobsets (load 110%) run one at a time through
`grid_engine` (an Engine with DeepRM's grid loop, B = 1) against all together in one `DiscreteBatch`, with SJF; and one training
update (10 jobsets x 20 rollouts, the network run once per step for the whole batch) against the
same rollouts stepped one environment at a time with a torch call per decision. Prints a table,
then `name=value` pairs.
"""
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
import torch

from hpcsched.agents.deeprm import DeepRM, DeepRMConfig, NumpyPolicy, rollout
from hpcsched.policies.deeprm import ShortestJobFirst
from hpcsched.sim.discrete import DiscreteBatch, grid_engine, run_batch
from hpcsched.workload.deeprm import TEST_SEED, generate, rate_for_load

torch.set_num_threads(1)
results = {}


def best(fn, repeat=3):
    b = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        b = min(b, time.perf_counter() - t)
    return b, out


jobs = generate(100, rate_for_load(1.1), 50, seed=TEST_SEED)
t_batch, b = best(lambda: run_batch(DiscreteBatch(), jobs, ShortestJobFirst()))
decisions = int(b.decisions.sum())
t_one, _ = best(lambda: [grid_engine(jobs.take([i])).run(ShortestJobFirst())
                         for i in range(len(jobs))], 1)
print(f"SJF on 100 jobsets at 110% load ({decisions} decisions)")
print(f"  one DiscreteBatch of 100      {t_batch:7.2f} s  {decisions / t_batch:9.0f} decisions/s")
print(f"  one engine at a time          {t_one:7.2f} s  {decisions / t_one:9.0f} decisions/s"
      f"  (batched: {t_one / t_batch:.1f}x)")
results["sjf_batched_decisions_per_s"] = round(decisions / t_batch)
results["sjf_batch_speedup"] = round(t_one / t_batch, 2)

model = DeepRM(DeepRMConfig(load=1.1, validate_jobsets=0))
c = model.config
group = model.train_jobs.take(np.arange(10)).repeat(c.rollouts)
t_roll, ro = best(lambda: rollout(NumpyPolicy(model.net), c.batch(), group, mask_invalid=True,
                                  rng=np.random.default_rng(0)), 2)
n = len(ro.actions)


def one_at_a_time():
    rng = np.random.default_rng(0)
    k = 0
    for i in range(len(group)):
        batch = c.batch()
        batch.reset(group.take([i]))
        while not batch.done[0]:
            x = torch.from_numpy(batch.images(None, np.float32).reshape(1, -1))
            with torch.no_grad():
                logits = model.net(x).masked_fill(~torch.from_numpy(batch.action_mask()), -1e9)
            p = torch.softmax(logits, 1)[0].numpy().astype(np.float64)
            batch.step(np.array([rng.choice(len(p), p=p / p.sum())]))
            k += 1
    return k


t_serial, k = best(one_at_a_time, 1)
t_update, _ = best(lambda: model.update(np.arange(10)), 2)
print(f"one update's rollouts: 10 jobsets x 20 rollouts ({n} decisions)")
print(f"  batched, numpy network        {t_roll:7.2f} s  {n / t_roll:9.0f} decisions/s")
print(f"  one env at a time, torch      {t_serial:7.2f} s  {k / t_serial:9.0f} decisions/s"
      f"  (batched: {(t_serial / k) / (t_roll / n):.1f}x)")
print(f"  a whole update (rollouts + gradient step): {t_update:.2f} s; an epoch is 10 updates")
results["rollout_decisions_per_s"] = round(n / t_roll)
results["rollout_speedup"] = round((t_serial / k) / (t_roll / n), 2)
results["update_s"] = round(t_update, 2)
print(" ".join(f"{k}={v}" for k, v in results.items()))
