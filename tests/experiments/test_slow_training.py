"""Full training runs (opt-in: `pytest -m slow`; minutes each on 2 cores)."""

from __future__ import annotations

import numpy as np
import pytest

from hpcsched.agents.rlscheduler import RLSchedulerConfig
from hpcsched.experiments.policyspec import resolve_policy
from hpcsched.experiments.training import Validation, train
from hpcsched.policies.priority import get_policy
from hpcsched.sim.run import simulate
from hpcsched.workload.windows import paper_windows

pytestmark = pytest.mark.slow


def mean_bsld(validation: Validation, policy, backfill: str) -> float:
    """The mean bsld on the paper's ten test windows (1024 jobs), which the validation windows
    that chose best.pt never touch."""
    return float(np.mean([simulate(validation.prepared, policy, backfill=backfill, start=s,
                                   jobs=1024).metrics["bsld"] for s in paper_windows()]))


def test_paper_recipe_with_backfilling_beats_sjf_on_lublin_1(tmp_path):
    """The paper's recipe (random start, reward -bsld) on Lublin-1 with SchedGym's backfilling:
    after 20 epochs the best checkpoint (chosen on validation windows) beats SJF, the best
    heuristic of the paper's Table V there, on the paper's ten test windows of 1024 jobs."""
    config = RLSchedulerConfig(trace="lublin-1", backfill="schedgym", pi_lr=1e-3, seed=0, threads=1)
    train(config, tmp_path, 20, validate_windows=10, progress=False, log=lambda text: None)
    v = Validation(config, 1, 256)
    model = resolve_policy(f"rl:{tmp_path / 'best.pt'}", v.prepared)
    assert mean_bsld(v, model, "schedgym") < mean_bsld(v, get_policy("sjf"), "schedgym")


def test_imitation_start_reaches_f1_on_lublin_1_without_backfilling(tmp_path):
    """Imitating F1 then PPO with the reward relative to F1: within 1.05 of F1 after 10 epochs, on
    the paper's test windows."""
    config = RLSchedulerConfig(trace="lublin-1", pi_lr=1e-3, seed=0, threads=1, init="f1",
                       reward_baseline="f1", cutoff="interleave")
    train(config, tmp_path, 10, validate_windows=10, progress=False, log=lambda text: None)
    v = Validation(config, 1, 256)
    model = resolve_policy(f"rl:{tmp_path / 'best.pt'}", v.prepared)
    assert mean_bsld(v, model, "none") < 1.05 * mean_bsld(v, get_policy("f1"), "none")
