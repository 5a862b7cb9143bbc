"""``herasched:MODEL@work-conserving``: the selector is not offered Forward while a job it may pick
fits now, so the machine is never left idle on purpose; its choices among the jobs stay the
model's. Worked by hand for a selector that prefers Forward to any job (what a model that stalls
does) and an allocator that takes the first node allowed."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import hpcsched.agents.herasched_policy as hp
from hpcsched.agents.herasched_policy import HeraSchedPolicy
from hpcsched.cluster.nodes import Cluster
from hpcsched.recipes.herasched import ModelOptions, model_options
from hpcsched.sim.run import prepare, simulate

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "sim"))
from hetero_helpers import table  # noqa: E402


class Idler(HeraSchedPolicy):
    """Forward scores highest, then the window's slots in order (the oldest shown job first);
    the allocator takes the first node allowed."""

    def _scores(self, agent: int) -> np.ndarray:
        if agent == 1:
            return np.zeros(self.observer.layout.nodes)
        s = -np.arange(self.window + 1, dtype=np.float64)
        s[-1] = 1.0
        return s


@pytest.fixture
def idler(monkeypatch):
    monkeypatch.setattr(hp, "fits_layout", lambda *a: None)
    monkeypatch.setattr(hp, "numpy_scores", lambda *a: None)
    return lambda **kw: Idler(None, None, net="default", window=4, tail=1, **kw)


# two one-core nodes; (submit, run, nodes)
JOBS = [(0, 100, 1),   # j0: the node it takes is busy until its start + 100
        (1, 10, 1),    # j1
        (50, 10, 1)]   # j2: the last arrival


def run(policy):
    prepared = prepare(table(JOBS), "hpcsim", cluster=Cluster.identical(2, 1))
    return simulate(prepared, policy)


def test_work_conserving_starts_every_job_that_fits_at_once(idler):
    # j0 at 0 and j1 at 1 on the two nodes; j1 ends at 11, so j2 finds a node at 50
    policy = idler(work_conserving=True)
    assert run(policy).start.tolist() == [0, 1, 50]
    # Forward was on offer, and hidden, at 0 and 1 (arrivals to come) and at 50 (j0 runs on)
    assert policy.summary()["forward_hidden"] == 3


def test_without_it_the_same_selector_idles_while_jobs_fit(idler):
    policy = idler()
    start = run(policy).start
    assert start[0] > 0 and start[1] > 1  # it waited with free nodes
    assert "forward_hidden" not in policy.summary()


def test_the_option_is_read_and_refused_where_it_cannot_act():
    assert model_options("work-conserving", "m") == ModelOptions(work_conserving=True)
    assert model_options("allocator=best-fit@work-conserving", "m") == \
        ModelOptions(allocator="best-fit", work_conserving=True)
    for bad in ("work-conserving=1", "work-conserving=", "work_conserving"):
        with pytest.raises(ValueError, match="unknown option"):
            model_options(bad, "herasched:m")
    with pytest.raises(ValueError, match="@work-conserving is given twice"):
        model_options("work-conserving@work-conserving", "herasched:m")
    with pytest.raises(ValueError, match="@selector replaces the model's selector"):
        model_options("selector=fcfs@work-conserving", "herasched:m")


def test_a_shipped_model_reads_with_it_on_the_engine():
    """``herasched:pretrained/...@work-conserving`` through `resolve_policy` and `simulate`: at
    no decision is Forward taken while a job of the window fits, and every job starts."""
    from hpcsched.experiments.herasched_eval import period_prepared
    from hpcsched.experiments.policyspec import resolve_policy

    prepared = period_prepared("spartan-deeplearn", "test", jobs=300)
    policy = resolve_policy("herasched:pretrained/herasched-deeplearn-s0@work-conserving",
                            prepared)
    assert policy.work_conserving
    result = simulate(prepared, policy)
    assert np.isfinite(result.start).all()
    assert policy.slots[-1] == 0  # Forward never chosen: always hidden while a job fitted
    assert policy.summary()["forward_hidden"] > 0  # and it was on offer


@pytest.mark.slow
@pytest.mark.parametrize("split", ["test", "test-high-load"])
def test_the_shipped_deeplearn_models_schedule_as_without_it(split):
    """README: read with the option, each shipped Deeplearn model starts every job of both test
    periods when and where it does without it."""
    from hpcsched.experiments.herasched_eval import period_prepared
    from hpcsched.experiments.policyspec import resolve_policy

    prepared = period_prepared("spartan-deeplearn", split)
    for seed in range(3):
        model = f"herasched:pretrained/herasched-deeplearn-s{seed}"
        plain = simulate(prepared, resolve_policy(model, prepared))
        kept = simulate(prepared, resolve_policy(f"{model}@work-conserving", prepared))
        assert plain.start.tolist() == kept.start.tolist(), seed
        assert [a.tolist() for a in plain.allocations] == [a.tolist() for a in kept.allocations]
