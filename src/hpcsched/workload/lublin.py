"""The Lublin-Feitelson workload model (J. Parallel Distrib. Comput. 63(11), 2003), "whole sample"
parameters (no batch/interactive split), as published with the model.

Each job:
- size: serial (1 node) with probability `serial_prob`; otherwise log2(size) is drawn from a
  two-stage uniform (on [u_low, u_med] with probability `u_prob`, else on [u_med, u_hi]; u_hi =
  log2(nodes) and u_med = u_hi - 2.5, the published 4.5 for 128 nodes), rounded to
  an integer (a power-of-two size) with probability pow2_prob / (1 - serial_prob), and the size is
  round(2^x);
- run time: log(run time) is hyper-gamma, Gamma(a1, b1) with probability p = pa * nodes + pb
  (clipped to [0, 1]), else Gamma(a2, b2) (shape, scale); draws above log(max_run_time) are drawn
  again;
- arrivals: log(inter-arrival at the rush hour) is Gamma(a_arr * arar, b_arr); the time of day
  slows it down by the daily cycle: the day is 48 half-hour buckets whose weights are the
  Gamma(a_num, b_num) probabilities of the (1-based) bucket numbers 11 .. 58 taken cyclically,
  divided by their mean; an inter-arrival "costs" its length in seconds-at-rush-rate, and each bucket passed
  pays out its weight times its length (a busy hour passes more arrivals).

`generate(n, nodes, seed=...)` draws a JobTable; `fitted(jobs, nodes, n)` draws one fitted to a real
period the way DRAS's synthetic jobsets are (spec dras.md 7.4, "to match the system's size
distribution, arrival pattern and estimate accuracy"): sizes by `fit_sizes`, the arrival rate scaled
to the period's mean inter-arrival (the daily cycle kept), run times capped at its longest request,
and requests drawn as run time x an over-estimation factor resampled from the period's own
request / run-time ratios.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from hpcsched.workload.jobs import JobTable, TraceHeader

BUCKETS = 48
DAY = 86400.0
DAY_START_BUCKET = 11


@dataclass(frozen=True)
class LublinParams:
    serial_prob: float = 0.244
    pow2_prob: float = 0.576
    u_low: float = 0.8
    #: None: u_hi - 2.5, which is the published 4.5 on the model's 128 nodes
    u_med: float | None = None
    #: None: log2 of the machine's nodes
    u_hi: float | None = None
    u_prob: float = 0.86
    a1: float = 4.2
    b1: float = 0.94
    a2: float = 312.0
    b2: float = 0.03
    pa: float = -0.0054
    pb: float = 0.78
    a_arr: float = 10.2303
    b_arr: float = 0.4871
    a_num: float = 8.1737
    b_num: float = 3.9631
    arar: float = 1.0225


PUBLISHED = LublinParams()


def _gamma_cdf(x: np.ndarray, shape: float, scale: float) -> np.ndarray:
    """Regularised lower incomplete gamma by its series (x moderate here: hours of a day)."""
    x = np.asarray(x, dtype=np.float64) / scale
    out = np.zeros_like(x)
    for i, xi in enumerate(x):
        if xi <= 0:
            continue
        term = 1.0 / shape
        total = term
        k = 1
        while term > 1e-14 * total and k < 2000:
            term *= xi / (shape + k)
            total += term
            k += 1
        out[i] = total * math.exp(-xi + shape * math.log(xi) - math.lgamma(shape))
    return out


def daily_weights(params: LublinParams = PUBLISHED) -> np.ndarray:
    """Weight of each half-hour bucket of the day (bucket 0 = 00:00-00:30), mean 1."""
    # the gamma's variable counts half-hour buckets (1-based), from bucket 11 on, cyclically
    points = np.arange(DAY_START_BUCKET, DAY_START_BUCKET + BUCKETS)
    w = (_gamma_cdf(points + 0.5, params.a_num, params.b_num)
         - _gamma_cdf(points - 0.5, params.a_num, params.b_num))
    weights = np.empty(BUCKETS)
    weights[(points - 1) % BUCKETS] = w
    return weights / weights.mean()


def sizes(rng: np.random.Generator, n: int, nodes: int,
          params: LublinParams = PUBLISHED) -> np.ndarray:
    u_hi = params.u_hi if params.u_hi is not None else math.log2(nodes)
    u_med = params.u_med if params.u_med is not None else u_hi - 2.5
    u = rng.random(n)
    low_stage = rng.random(n) < params.u_prob
    x = np.where(low_stage, rng.uniform(params.u_low, u_med, n), rng.uniform(u_med, u_hi, n))
    pow2 = u <= params.serial_prob + params.pow2_prob
    x = np.where(pow2, np.floor(x + 0.5), x)
    size = np.floor(2.0 ** x + 0.5)
    size = np.where(u <= params.serial_prob, 1.0, size)
    return np.clip(size, 1, nodes).astype(np.int64)


def run_times(rng: np.random.Generator, size: np.ndarray, max_run_time: float,
              params: LublinParams = PUBLISHED) -> np.ndarray:
    p = np.clip(params.pa * size + params.pb, 0.0, 1.0)
    limit = math.log(max_run_time)
    out = np.empty(size.size)
    todo = np.arange(size.size)
    while todo.size:
        first = rng.random(todo.size) < p[todo]
        g = np.where(first, rng.gamma(params.a1, params.b1, todo.size),
                     rng.gamma(params.a2, params.b2, todo.size))
        ok = g <= limit
        out[todo[ok]] = g[ok]
        todo = todo[~ok]
    return np.exp(out)


def arrival_times(rng: np.random.Generator, n: int, params: LublinParams = PUBLISHED,
                  daily_cycle: bool = True, start_hour: float = 0.0) -> np.ndarray:
    """Arrival times of n jobs, in seconds from midnight of the first day."""
    gaps = np.exp(rng.gamma(params.a_arr * params.arar, params.b_arr, n))
    if not daily_cycle:
        return np.cumsum(gaps)
    weights = daily_weights(params)
    width = DAY / BUCKETS
    out = np.empty(n)
    t = start_hour * 3600.0
    for i, cost in enumerate(gaps):
        # spend `cost` seconds-at-rush-rate; the bucket at t pays its weight per second
        while True:
            b = int(t // width) % BUCKETS
            left = (math.floor(t / width) + 1) * width - t
            pay = weights[b] * left
            if cost <= pay:
                t += cost / weights[b]
                break
            cost -= pay
            t += left
        out[i] = t
    return out


def generate(n: int, nodes: int, *, seed: int = 0, max_run_time: float = 2 * DAY,
             params: LublinParams = PUBLISHED, daily_cycle: bool = True) -> JobTable:
    """n jobs of the model on a machine of `nodes` nodes (requests unknown: -1, as the model's own
    SWF output has them)."""
    rng = np.random.default_rng(seed)
    submit = np.round(arrival_times(rng, n, params, daily_cycle))  # SWF holds whole seconds
    size = sizes(rng, n, nodes, params)
    run = np.maximum(np.round(run_times(rng, size, max_run_time, params)), 1.0)
    header = TraceHeader(name=f"lublin-model-{nodes}", max_nodes=nodes, max_procs=nodes)
    return JobTable.from_columns(header, job_id=np.arange(1, n + 1), submit=submit, run_time=run,
                                 req_procs=size, alloc_procs=size, req_time=np.full(n, -1.0),
                                 user=np.ones(n), status=np.ones(n))


def fitted(real: JobTable, nodes: int, n: int, *, seed: int = 0, procs_per_node: int = 1,
           params: LublinParams = PUBLISHED) -> JobTable:
    """n model jobs fitted to a real period `real` (see the module docstring). Sizes are in
    processors of `procs_per_node` per node, like the real table's."""
    rng = np.random.default_rng(seed)
    max_req = float(np.max(real.req_time))
    params = fit_sizes(real, nodes, procs_per_node, params)
    jobs = generate(n, nodes, seed=int(rng.integers(2**31)), max_run_time=max_req, params=params)
    gap_real = float(np.mean(np.diff(real.submit))) if len(real) > 1 else 1.0
    gap_model = float(np.mean(np.diff(jobs.submit))) if n > 1 else 1.0
    submit = np.round(jobs.submit * (gap_real / gap_model))
    ratio = real.req_time / np.maximum(real.run_time, 1.0)
    ratio = ratio[np.isfinite(ratio) & (ratio >= 1.0)]
    factor = rng.choice(ratio, n) if ratio.size else np.ones(n)
    req = np.minimum(np.ceil(jobs.run_time * factor), max_req)
    req = np.maximum(req, jobs.run_time)
    procs = jobs.req_procs * procs_per_node
    header = TraceHeader(name=f"lublin-fitted-{real.header.name}", max_nodes=nodes,
                         max_procs=nodes * procs_per_node)
    return JobTable.from_columns(header, job_id=np.arange(1, n + 1), submit=submit,
                                 run_time=jobs.run_time, req_time=req, req_procs=procs,
                                 alloc_procs=procs, user=np.ones(n), status=np.ones(n))


def fit_sizes(real: JobTable, nodes: int, procs_per_node: int = 1,
              params: LublinParams = PUBLISHED) -> LublinParams:
    """The size parameters fitted to a real period: the share of 1-node jobs, and the two-stage
    uniform's low / middle / high points at the smallest, median and largest log2 size of its
    parallel jobs (the power-of-two share and u_prob stay published)."""
    size = np.ceil(real.procs / procs_per_node)
    parallel = np.log2(size[size > 1]) if np.any(size > 1) else np.array([1.0])
    u_hi = min(float(parallel.max()), math.log2(nodes))
    u_med = min(float(np.median(parallel)), u_hi)
    return dataclasses.replace(params, serial_prob=float(np.mean(size <= 1)),
                               u_low=min(params.u_low, u_med), u_med=u_med, u_hi=u_hi)


__all__ = ["LublinParams", "fit_sizes", "PUBLISHED", "arrival_times", "daily_weights", "fitted", "generate",
           "run_times", "sizes"]
