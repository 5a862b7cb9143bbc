"""``herasched:MODEL@reserve[=AGE]``: once the oldest waiting job has waited AGE, the selector may
start only it, or jobs that EASY would backfill behind it: those that end by its reservation, and
those that leave it enough nodes then (`HeraSchedPolicy.reserve_after`). The schedules below are
worked by hand for a selector that always prefers the newest job (a last-come-first-served
selector: what starves a wide job) and an allocator that takes the first node allowed."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import hpcsched.agents.herasched_policy as hp
from hpcsched.agents.herasched_policy import HeraSchedPolicy
from hpcsched.cli.herasched_eval import by_cluster
from hpcsched.cluster.nodes import Cluster
from hpcsched.recipes.herasched import reserve_after
from hpcsched.sim.decisions import Start
from hpcsched.sim.factory import make_engine
from hpcsched.sim.run import prepare, simulate

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "sim"))
from hetero_helpers import A, B, C, mixed_cluster, table  # noqa: E402


class Newest(HeraSchedPolicy):
    """Scores that rank the window's later slots higher (the newest shown job first), Forward
    last; the allocator takes the first node allowed."""

    def _scores(self, agent: int) -> np.ndarray:
        if agent == 1:
            return np.zeros(self.observer.layout.nodes)
        s = np.arange(self.window + 1, dtype=np.float64)
        s[-1] = -1.0
        return s


@pytest.fixture
def newest(monkeypatch):
    monkeypatch.setattr(hp, "fits_layout", lambda *a: None)
    monkeypatch.setattr(hp, "numpy_scores", lambda *a: None)

    def make(after=None):
        return Newest(None, None, net="default", window=4, tail=1, reserve_after=after)
    return make


# two one-core nodes; (submit, run, nodes): j1 needs both
JOBS = [(0, 100, 1),   # j0 holds a node until 100
        (1, 10, 2),    # j1: both nodes; its reservation is 100 (j0's end)
        (2, 100, 1),   # j2 would end at 102, after j1's reservation
        (3, 50, 1)]    # j3 ends at 53, before it


def starts(policy) -> list[float]:
    prepared = prepare(table(JOBS), "hpcsim", cluster=Cluster.identical(2, 1))
    result = simulate(prepared, policy)
    return result.start.tolist()


def test_without_a_reservation_the_newest_first_selector_starves_the_wide_job(newest):
    # j2 starts at 2 on the free node; at 100 j3 takes j0's node; j1 waits for j3's end
    assert starts(newest()) == [0, 150, 2, 100]


def test_a_reservation_from_the_first_second_holds_the_wide_job_s_start(newest):
    # at 2, j2 (to 102) is hidden, the node idles; at 3, j3 (to 53) may go; j1 starts at 100
    policy = newest(0.0)
    assert starts(policy) == [0, 100, 110, 3]
    assert policy.summary()["reserving_decisions"] >= 3  # at 2, at 3 and at 100 at least


def test_the_reservation_begins_at_the_age_given(newest):
    # j1 is 99 s old at 100, when j0 ends: an age of 99 s reserves then (j2 holds the other
    # node until 102, so j3 (to 150) is hidden and j1 starts at 102); 100 s does not, as none
    assert starts(newest(99.0)) == [0, 102, 2, 112]
    assert starts(newest(100.0)) == [0, 150, 2, 100]


# four one-core nodes; j2 needs three
SPARE = [(0, 100, 1),   # j0 on n0 until 100
         (1, 99, 1),    # j1 on n1 until 100
         (2, 10, 3),    # j2: its reservation is 100, when four nodes are free: one to spare
         (3, 300, 1),   # j3 runs past 100: it may take the spare node
         (4, 300, 1),   # j4 too, but none is left to spare
         (5, 50, 1)]    # j5 ends at 55: it may go


def test_a_job_running_past_the_reservation_takes_a_spare_node_and_no_more(newest):
    prepared = prepare(table(SPARE), "hpcsim", cluster=Cluster.identical(4, 1))
    with_ = simulate(prepared, newest(0.0))
    # j3 on n2 at 3; j4 held back; j5 on n3 at 5; j2 at 100 on n0, n1, n3; j4 when j2 ends
    assert with_.start.tolist() == [0, 1, 100, 3, 110, 5]
    assert [a.tolist() for a in with_.allocations] == [[0], [1], [0, 1, 3], [2], [0], [3]]
    # without the reservation j3 and j4 take n2 and n3 and j2 waits for j3's end
    assert simulate(prepared, newest()).start.tolist() == [0, 1, 303, 3, 4, 100]


@pytest.mark.parametrize("exclusive", [False, True])
def test_the_reservation_on_mixed_nodes_worked_by_hand(exclusive):
    """A holds j0 (8 cores) until 100, B j1 (4 cores) until 50; j2 wants 2 cores on 2 nodes: only
    C has them now, B will at 50, A at 100, so its reservation is 50 on B and C."""
    cluster = mixed_cluster(exclusive=exclusive)
    jobs = [(0, 100, 1, 8), (0, 50, 1, 4), (0, 10, 2, 2)]
    prepared = prepare(table(jobs), "hpcsim", cluster=cluster)
    engine = make_engine(prepared.jobs, prepared.cluster, prepared.profile, "none")
    engine.next_decision()
    engine.apply(Start(0, (A,)))
    engine.next_decision()
    engine.apply(Start(1, (B,)))
    plan = engine.next_decision().reservation(2)
    assert plan.shadow == 50
    assert plan.ready.tolist() == [False, True, True] and plan.spare == 0
    assert plan.at_shadow[:, 0].tolist() == [0, 4, 4]  # cores free at 50
    two, three = np.array([2, 0, 0]), np.array([3, 0, 0])
    # a job past 50 may use A (j2 cannot), and, on a shared cluster, B or C with 2 of 4 cores
    # (2 are left for j2), not with 3; on an exclusive one only A
    assert plan.harmless(two).tolist() == ([True, False, False] if exclusive else [True] * 3)
    assert plan.harmless(three).tolist() == [True, False, False]


def test_the_option_reads_a_slurm_duration_and_refuses_anything_else():
    assert reserve_after("", "m") is None
    assert reserve_after("reserve", "m") == 0.0
    assert reserve_after("reserve=90", "m") == 90 * 60  # a bare number is minutes, as in Slurm
    assert reserve_after("reserve=12:00:00", "m") == 12 * 3600
    assert reserve_after("reserve=1-00", "m") == 86400
    for bad in ("reserved", "reserve=", "masked"):
        with pytest.raises(ValueError, match="unknown option"):
            reserve_after(bad, "herasched:m")
    with pytest.raises(ValueError, match=r"@reserve=12h: not a Slurm duration"):
        reserve_after("reserve=12h", "herasched:m")
    with pytest.raises(ValueError, match="reserve_after must be"):
        HeraSchedPolicy(None, None, net="default", window=4, tail=1, reserve_after=-1.0)


def test_an_option_with_an_equals_sign_is_not_taken_for_a_partition():
    given = ["pretrained/herasched-physical-s0@reserve=12:00:00,runs/a"]
    assert by_cluster(given, ["spartan-physical"]) == {
        "spartan-physical": ["pretrained/herasched-physical-s0@reserve=12:00:00", "runs/a"]}
    two = by_cluster(["spartan-physical=runs/a@reserve=1:00:00", "spartan-deeplearn=runs/b"],
                     ["spartan-physical", "spartan-deeplearn"])
    assert two == {"spartan-physical": ["runs/a@reserve=1:00:00"], "spartan-deeplearn": ["runs/b"]}
    with pytest.raises(ValueError, match="'nowhere' is not one of --cluster"):
        by_cluster(["nowhere=runs/a"], ["spartan-physical"])


# ---- trained with the reservation (`train herasched --reserve-after`) -------------------------

def same_in_env_and_engine(model, config, start: int = 100, jobs: int = 300):
    """Play `model` greedily through its env on `jobs` jobs from `start`, run it as a policy on
    the engine over the same jobs, and check both schedules are the same, start for start and
    node for node; returns (the env, the engine's result, the policy)."""
    from hpcsched.agents.herasched_policy import as_policy
    from hpcsched.envs.herasched import HeraSchedEnv

    env = HeraSchedEnv(config.prepared(), config.cluster,
                       **{**config.env_kwargs(), "episode_jobs": jobs})
    obs, info = env.reset(options={"start": start})
    terminated = False
    while not terminated:
        obs, _, terminated, _, info = env.step(model.predict(obs, info["action_mask"]))
    ours = env.engine.result()
    policy = as_policy(model)
    theirs = simulate(env.prepared, policy, start=start, jobs=jobs)
    np.testing.assert_array_equal(ours.start, theirs.start)
    assert [a.tolist() for a in ours.allocations] == [a.tolist() for a in theirs.allocations]
    return env, theirs, policy


def test_a_model_trained_with_the_reservation_schedules_on_the_engine_as_in_its_env(tmp_path):
    import torch

    from hpcsched.agents.herasched import HeraSched, HeraSchedConfig
    from hpcsched.agents.herasched_policy import as_policy, load_herasched

    torch.manual_seed(0)
    config = HeraSchedConfig(window=16, tail=4, episode_jobs=200, num_envs=2, update_every=128,
                             selector_every=32, allocator_every=10, minibatch=64, update_epochs=1,
                             pi_lr=3e-3, vf_lr=3e-3, reserve_after=0.0)
    model = HeraSched(config)
    model.learn(1)
    env, theirs, policy = same_in_env_and_engine(model, config)
    assert policy.summary()["reserving_decisions"] > 0
    # the reservation changed the schedule: the same weights without it schedule otherwise
    free = as_policy(model)
    free.reserve_after = None
    assert not np.array_equal(simulate(env.prepared, free, start=100, jobs=300).start,
                              theirs.start)
    # the file keeps it: read so by default, @reserve=AGE (here, load_herasched's) overrides it
    model.save(tmp_path / "m.pt")
    assert load_herasched(tmp_path / "m.pt").reserve_after == 0.0
    assert load_herasched(tmp_path / "m.pt", reserve_after=3600.0).reserve_after == 3600.0


def test_the_training_option_reads_a_slurm_duration():
    from hpcsched.cli import UsageError, build_parser

    p = build_parser()
    args = p.parse_args(["train", "herasched", "--out", "x", "--reserve-after", "1:00:00"])
    assert args.reserve_after == 3600.0
    with pytest.raises(UsageError, match="--reserve-after: '12h' is not a Slurm duration"):
        p.parse_args(["train", "herasched", "--out", "x", "--reserve-after", "12h"])


# ---- @allocator=NAME: a heuristic places the selector's jobs ------------------------------------

def test_a_heuristic_allocator_places_the_jobs_in_place_of_the_agent(newest):
    """Worked by hand on the mixed cluster (A 8 cores, B 4, C 4 + 2 GPUs), hpcsim profile: j0 (4
    cores, to 100) goes where the allocator puts it; j1 (8 cores) fits only on an empty A. The
    agent here takes the first node allowed (A), so j1 waits for j0's end; HPCsim's best fit (free
    GPUs x 100 + free cores, least first: B 4, A 8, C 204) leaves A empty and j1 starts at once;
    HPCsim's first-available takes A, as the agent."""
    jobs = [(0, 100, 1, 4), (1, 10, 1, 8)]
    prepared = prepare(table(jobs), "hpcsim", cluster=mixed_cluster())

    def run(place_with):
        policy = newest()
        policy.place_with = place_with
        result = simulate(prepared, policy)
        return result.start.tolist(), [a.tolist() for a in result.allocations]

    assert run(None) == ([0, 100], [[A], [A]])
    assert run("best-fit") == ([0, 1], [[B], [A]])
    assert run("first-available") == ([0, 100], [[A], [A]])
    assert run("topology") == ([0, 1], [[B], [A]])  # no switches: HPCsim's is best fit by index


@pytest.mark.parametrize("place_with", ["first-available", "best-fit"])
def test_a_heuristic_allocator_keeps_the_reservation_s_spare_node_rule(newest, place_with):
    # SPARE above, placed by the heuristic: j3 (past the reservation) takes the one spare node, j4
    # is held back, j5 (it ends before) goes; the same schedule as the agent's
    policy = newest(0.0)
    policy.place_with = place_with
    prepared = prepare(table(SPARE), "hpcsim", cluster=Cluster.identical(4, 1))
    result = simulate(prepared, policy)
    assert result.start.tolist() == [0, 1, 100, 3, 110, 5]
    assert [a.tolist() for a in result.allocations] == [[0], [1], [0, 1, 3], [2], [0], [3]]


def test_a_job_past_the_reservation_goes_to_a_node_that_leaves_the_oldest_its_share(newest):
    """Three nodes of 8, 4 and 4 cores, a reservation from age 0, HPCsim's best fit (least free
    cores first, ties by index): j0 (4 cores, to 100) on B, j1 (2 cores, to 50) on C; j2 wants 4
    cores on 2 nodes: only A has them now, A and C at 50, its reservation. j3 (2 cores, to 301)
    runs past 50: best fit alone would take C (2 free against A's 8) and j2 would wait for j0's
    end at 100; A is the node that leaves j2 its share (6 cores left there), so j3 goes there and
    j2 starts at 50 on C and A."""
    cluster = Cluster(names=("A", "B", "C"), capacity=[[8, 1000, 0], [4, 1000, 0], [4, 1000, 0]],
                      name="three")
    jobs = [(0, 100, 1, 4), (0, 50, 1, 2), (0, 10, 2, 4), (1, 300, 1, 2)]
    prepared = prepare(table(jobs), "hpcsim", cluster=cluster)
    policy = newest(0.0)
    policy.place_with = "best-fit"
    result = simulate(prepared, policy)
    assert result.start.tolist() == [0, 0, 50, 1]
    assert [a.tolist() for a in result.allocations] == [[B], [C], [C, A], [A]]


def test_the_options_combine_and_refuse_what_they_do_not_know():
    from hpcsched.experiments.herasched_grid import ALLOCATORS, SELECTORS
    from hpcsched.recipes.herasched import (ALLOCATOR_OPTIONS, SELECTOR_OPTIONS, ModelOptions,
                                            model_options)

    assert (ALLOCATOR_OPTIONS, SELECTOR_OPTIONS) == (ALLOCATORS, SELECTORS)  # the grid's names
    assert model_options("", "m") == ModelOptions()
    assert model_options("allocator=best-fit", "m") == ModelOptions(None, "best-fit")
    both = ModelOptions(6 * 3600.0, "topology")
    assert model_options("reserve=6:00:00@allocator=topology", "m") == both
    assert model_options("allocator=topology@reserve=6:00:00", "m") == both
    assert reserve_after("allocator=first-available@reserve", "m") == 0.0
    with pytest.raises(ValueError, match=r"@allocator=hpcsim-best-fit: not one of the grid's "
                                         r"allocators \(topology, best-fit, first-available\)"):
        model_options("allocator=hpcsim-best-fit", "herasched:m")
    for bad in ("allocator", "allocator=", "reserve=1@", "place=best-fit"):
        with pytest.raises(ValueError, match="unknown option"):
            model_options(bad, "herasched:m")
    with pytest.raises(ValueError, match="herasched:m: @reserve is given twice"):
        model_options("reserve=1@reserve=2", "herasched:m")


def test_a_shipped_model_reads_through_a_heuristic_allocator_on_the_engine():
    """`simulate` with ``herasched:pretrained/...@allocator=best-fit``: every job placed where
    HPCsim's best fit puts it given what is free when it starts (rebuilt from the result), a
    possible schedule, and one other than the model's own allocator's."""
    from hpcsched.cluster.allocate import fitting_nodes
    from hpcsched.cluster.request import job_requests
    from hpcsched.experiments.herasched_eval import period_prepared
    from hpcsched.experiments.policyspec import resolve_policy
    from hpcsched.sim.factory import resolve_allocator

    prepared = period_prepared("spartan-deeplearn", "test", jobs=400)
    model = "herasched:pretrained/herasched-deeplearn-s0"
    ours = simulate(prepared, resolve_policy(f"{model}@allocator=best-fit", prepared))
    agent = simulate(prepared, resolve_policy(model, prepared))
    cluster = prepared.cluster
    count, demand = job_requests(prepared.jobs, cluster)
    # replay the starts in order (ends first at an instant), checking each placement
    best_fit = resolve_allocator("best-fit", "hpcsim")
    end = ours.start + np.asarray(prepared.jobs.run_time)
    events = sorted([(float(end[j]), 0, j) for j in range(len(end))]
                    + [(float(ours.start[j]), 1, j) for j in range(len(end))])
    free = np.asarray(cluster.capacity).copy()
    for _t, kind, j in events:
        nodes = ours.allocations[j]
        if kind == 0:
            free[nodes] += demand[j]
            continue
        fits = fitting_nodes(cluster, free, demand[j])
        assert nodes.tolist() == best_fit.allocate(cluster, free, demand[j], int(count[j]),
                                                   fits=fits).tolist(), f"row {j}"
        free[nodes] -= demand[j]
    assert (free == np.asarray(cluster.capacity)).all()
    assert [a.tolist() for a in ours.allocations] != [a.tolist() for a in agent.allocations]


# ---- @selector=NAME: a heuristic with HPCsim's backfilling picks, the allocator places -----------

def grid_cell(prepared, selector, allocator):
    from hpcsched.experiments.herasched_grid import selector_policy

    engine = make_engine(prepared.jobs, prepared.cluster, prepared.profile, "easy",
                         allocator=allocator)
    return engine.run(selector_policy(selector, prepared.profile.name))


def same_schedule(a, b) -> bool:
    return np.array_equal(a.start, b.start) and \
        [x.tolist() for x in a.allocations] == [x.tolist() for x in b.allocations]


@pytest.fixture(scope="module")
def deeplearn_test():
    """The first 500 jobs of Deeplearn's test high-load day: over 100 of them wait."""
    from hpcsched.experiments.herasched_eval import period_prepared

    return period_prepared("spartan-deeplearn", "test-high-load", jobs=500)


@pytest.mark.parametrize("selector, allocator", [
    ("fcfs", "topology"), ("lcfs", "best-fit"), ("sjf", "first-available"), ("wfp3", "topology"),
    ("unicep", "best-fit"), ("f1", "first-available"), ("f2", "best-fit")])
def test_a_heuristic_selector_and_allocator_are_the_grid_s_cell_exactly(deeplearn_test, selector,
                                                                        allocator):
    """``@selector=S@allocator=A`` schedules as the grid's cell S + A (the engine's own HPCsim
    pass and backfilling, checked against HPCsim's outputs): every start and every node."""
    from hpcsched.experiments.policyspec import resolve_policy

    spec = f"herasched:pretrained/herasched-deeplearn-s0@selector={selector}@allocator={allocator}"
    ours = simulate(deeplearn_test, resolve_policy(spec, deeplearn_test), backfill="easy")
    cell = grid_cell(deeplearn_test, selector, allocator)
    assert np.sum(cell.start > deeplearn_test.jobs.submit) > 100  # a queue to order and backfill
    assert same_schedule(ours, cell)


def test_the_allocator_agent_behind_a_heuristic_selector_places_every_job_it_starts(
        deeplearn_test, monkeypatch):
    """The allocator agent's path: an agent whose scores are all equal takes the first node
    allowed, which is HPCsim's first-available; so, with a window that shows every waiting job,
    FCFS through it is the grid's FCFS + first-available cell exactly."""
    monkeypatch.setattr(hp, "fits_layout", lambda *a: None)
    monkeypatch.setattr(hp, "numpy_scores", lambda *a: None)

    class Flat(HeraSchedPolicy):
        def _scores(self, agent):
            return np.zeros(self.observer.layout.nodes if agent else self.window + 1)

    policy = Flat(None, None, net="default", window=256, tail=1, order_by="fcfs")
    ours = simulate(deeplearn_test, policy, backfill="easy")
    assert policy.summary()["unshown_placements"] == 0
    assert same_schedule(ours, grid_cell(deeplearn_test, "fcfs", "first-available"))
    # and it is not the other allocators' schedule
    assert not same_schedule(ours, grid_cell(deeplearn_test, "fcfs", "best-fit"))
    # a window of 8 does not show every job LCFS starts: each is shown first to the agent
    small = Flat(None, None, net="default", window=8, tail=1, order_by="lcfs")
    result = simulate(deeplearn_test, small, backfill="easy")
    assert "unstarted" not in result.metrics and small.summary()["unshown_placements"] > 0
    assert same_schedule(result, grid_cell(deeplearn_test, "lcfs", "first-available"))


def test_the_selector_option_is_refused_where_it_cannot_be_the_grid_s(deeplearn_test):
    from hpcsched.experiments.policyspec import resolve_policy
    from hpcsched.recipes.herasched import model_options

    assert model_options("selector=unicep", "m").selector == "unicep"
    with pytest.raises(ValueError, match=r"@selector=edf: not one of the grid's selectors"):
        model_options("selector=edf", "m")
    with pytest.raises(ValueError, match="takes no @reserve"):
        model_options("selector=fcfs@reserve=1:00:00", "m")
    policy = resolve_policy("herasched:pretrained/herasched-deeplearn-s0@selector=fcfs",
                            deeplearn_test)
    with pytest.raises(ValueError, match="the hpcsim profile with --backfill easy"):
        simulate(deeplearn_test, policy, backfill="none")


@pytest.mark.slow
def test_every_cell_of_the_grid_on_deeplearn_s_whole_test_period():
    """The README's claim: all 21 cells, every start and node, on the whole test period (5,131
    jobs; about 90 s)."""
    from hpcsched.experiments.herasched_eval import period_prepared
    from hpcsched.experiments.herasched_grid import ALLOCATORS, SELECTORS
    from hpcsched.experiments.policyspec import resolve_policy

    prepared = period_prepared("spartan-deeplearn", "test")
    for selector in SELECTORS:
        for allocator in ALLOCATORS:
            spec = (f"herasched:pretrained/herasched-deeplearn-s0@selector={selector}"
                    f"@allocator={allocator}")
            ours = simulate(prepared, resolve_policy(spec, prepared), backfill="easy")
            assert same_schedule(ours, grid_cell(prepared, selector, allocator)), spec
