"""The Lublin-Feitelson model: generated statistics against the moments implied by its published
parameters (computed here from the parameters, not from our output), and its SWF output."""

import math

import numpy as np
import pytest

from hpcsched.workload import lublin
from hpcsched.workload.swf import read_swf

P = lublin.PUBLISHED


def test_size_shares():
    rng = np.random.default_rng(0)
    s = lublin.sizes(rng, 200_000, 128)
    assert np.mean(s == 1) == pytest.approx(P.serial_prob, abs=0.005)
    parallel = s[s > 1]
    pow2 = (parallel & (parallel - 1)) == 0
    # at least the power-of-two share (other draws can land on a power of two too)
    assert np.mean(pow2) >= P.pow2_prob / (1 - P.serial_prob) - 0.005
    assert s.max() <= 128 and s[s > 1].min() >= 2


def test_log_run_time_is_hyper_gamma():
    # for serial jobs p = pa + pb; E[log t] = p a1 b1 + (1 - p) a2 b2
    rng = np.random.default_rng(1)
    t = lublin.run_times(rng, np.ones(200_000, dtype=np.int64), 10 * 86400)
    p = P.pa + P.pb
    mean = p * P.a1 * P.b1 + (1 - p) * P.a2 * P.b2
    var1, var2 = P.a1 * P.b1**2, P.a2 * P.b2**2
    m1, m2 = P.a1 * P.b1, P.a2 * P.b2
    var = p * (var1 + m1**2) + (1 - p) * (var2 + m2**2) - mean**2
    assert np.mean(np.log(t)) == pytest.approx(mean, abs=0.02)
    assert np.var(np.log(t)) == pytest.approx(var, rel=0.02)


def test_inter_arrival_log_mean_without_daily_cycle():
    rng = np.random.default_rng(2)
    gaps = np.diff(lublin.arrival_times(rng, 100_001, daily_cycle=False))
    assert np.mean(np.log(gaps)) == pytest.approx(P.a_arr * P.arar * P.b_arr, abs=0.01)


def test_daily_cycle_moves_arrivals_to_the_afternoon():
    w = lublin.daily_weights()
    assert w.mean() == pytest.approx(1.0)
    # the gamma's variable is the 1-based half-hour bucket; its mode (a - 1) b = 28.4 is bucket
    # 28 (0-based 27), i.e. 13:30-14:00
    mode = (P.a_num - 1) * P.b_num
    assert abs(np.argmax(w) - (mode - 1)) <= 1.0
    rng = np.random.default_rng(3)
    t = lublin.arrival_times(rng, 50_000)
    hours = (t % 86400) // 3600
    busy = np.mean((hours >= 10) & (hours < 18))
    assert busy > 8 / 24 + 0.1  # a working day gets clearly more than its share of arrivals


def test_generate_writes_swf(tmp_path):
    from hpcsched.workload.swf import write_swf

    jobs = lublin.generate(500, 64, seed=4)
    write_swf(jobs, tmp_path / "l.swf")
    back = read_swf(tmp_path / "l.swf")
    assert len(back) == 500
    np.testing.assert_allclose(back.submit, np.round(jobs.submit), atol=1)
    assert back.req_procs.max() <= 64


def test_fitted_matches_the_period():
    rng = np.random.default_rng(5)
    from hpcsched.workload.jobs import JobTable

    n = 2000
    real = JobTable.from_columns(submit=np.cumsum(rng.exponential(120, n)),
                                 run_time=rng.integers(10, 3600, n).astype(float),
                                 req_time=np.full(n, 7200.0), req_procs=np.ones(n),
                                 alloc_procs=np.ones(n))
    syn = lublin.fitted(real, 256, 3000, seed=1)
    # arrival times are whole seconds: equal up to the rounding
    assert np.mean(np.diff(syn.submit)) == pytest.approx(np.mean(np.diff(real.submit)), rel=1e-3)
    assert syn.req_time.max() <= 7200 and np.all(syn.req_time >= syn.run_time)
