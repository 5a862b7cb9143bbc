"""HeraSched's environment (`hpcsched.envs.herasched`, `hpcsched.envs.hera_observation`): the
thesis's input sizes from the clusters, the masks on a small heterogeneous cluster, Eq. 4.1 and 4.2 worked
by hand, the schedule against the engine's own, and bad input."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from hpcsched.cluster.load import load_cluster
from hpcsched.cluster.nodes import Cluster
from hpcsched.cluster.pool import ClusterError
from hpcsched.envs.hera_observation import (HeraLayout, JOB_FEATURES, NODE_FEATURES,
                                            SLOT_FEATURES, placeholders, scale_time)
from hpcsched.envs.herasched import ALLOCATOR, SELECTOR, HeraSchedEnv
from hpcsched.sim.decisions import Start, Wait
from hpcsched.sim.factory import make_engine
from hpcsched.sim.run import prepare

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "sim"))
from hetero_helpers import A, B, C, check_schedule, mixed_cluster, table  # noqa: E402


def drop_one_node(cluster: Cluster, memory: int) -> Cluster:
    """The cluster without its last node of `memory` MB (Table 4.1's 86-node Physical)."""
    m = cluster.resource_index("memory")
    last = int(np.flatnonzero(cluster.capacity[:, m] == memory)[-1])
    keep = np.ones(cluster.nodes, dtype=bool)
    keep[last] = False
    return cluster._subset(keep, name=f"{cluster.name}-86")


# ---- the thesis's input sizes (Table 4.2), from the clusters ------------------------------------

def test_deeplearn_input_sizes_are_the_thesis_s():
    cluster = load_cluster("spartan-deeplearn")
    layout = HeraLayout.of(cluster, 100, 10)
    assert placeholders(cluster).tolist() == [4] * 30  # 4 GPUs per node: 4 jobs at most
    assert (layout.n_selector, layout.n_allocator) == (1451, 1452)
    assert (layout.window + 1, layout.nodes) == (101, 30)  # the actions of Table 4.2


def test_physical_input_sizes_with_87_and_with_86_nodes():
    cluster = load_cluster("spartan-physical")
    assert cluster.nodes == 87  # the platform folder's (HPCsim's) Physical
    layout = HeraLayout.of(cluster, 512, 64)
    assert placeholders(cluster).tolist() == [72] * 87  # a job takes a core at least
    # 512 * 7 + 1 + 87 * (5 + 72 * 5): Table 4.2's 35,340 exactly
    assert (layout.n_selector, layout.n_allocator) == (35_340, 35_341)
    table41 = drop_one_node(cluster, 710_000)  # Table 4.1's 72 + 14 nodes
    assert table41.nodes == 86
    assert HeraLayout.of(table41, 512, 64).n_selector == 34_975


def test_placeholders_are_sized_per_node_on_a_mixed_cluster():
    cluster = mixed_cluster(switches=True)  # A 8 cores, B 4 cores, C 4 cores + 2 GPUs
    layout = HeraLayout.of(cluster, 3, 1)
    assert layout.slots.tolist() == [8, 4, 2]
    blocks = [NODE_FEATURES + SLOT_FEATURES * p for p in (8, 4, 2)]
    assert layout.n_selector == JOB_FEATURES * 3 + 1 + sum(blocks)
    assert layout.node_base.tolist() == [22, 22 + blocks[0], 22 + blocks[0] + blocks[1]]
    # the static numbers: leaf rank, capacities / the largest node's, node id
    for i, (leaf, cores, mem, gpus) in enumerate([(0.5, 1, 0.5, 0), (0.5, 0.5, 1, 0),
                                                  (1.0, 0.5, 0.25, 1)]):
        b = layout.node_base[i]
        np.testing.assert_allclose(layout.template[b:b + 5],
                                   [leaf, cores, mem, gpus, (i + 1) / 3], rtol=1e-6)


def env_on(jobs, cluster=None, **kw) -> HeraSchedEnv:
    cluster = cluster if cluster is not None else mixed_cluster()
    return HeraSchedEnv(prepare(table(jobs), "hpcsim", cluster=cluster), cluster, **kw)


def test_the_numbers_of_an_observation():
    """Window rows, L(t) and the placeholders of running jobs, where the layout puts them."""
    t = scale_time
    # (submit, run, nodes, cores, mem, gpus, requested)
    env = env_on([(0, 100, 2, 2, 8000, 0, 200),   # j0: 2 nodes
                  (0, 50, 1, 1, 4000, 1, 60),     # j1: a GPU
                  (5, 50, 1, 3, 16_000, 0, 70),   # j2
                  (6, 10, 1, 1, 0, 0, 90),        # j3
                  (7, 10, 1, 1, 0, 0, 90)],       # j4
                 mixed_cluster(switches=True), window=3, tail=1)
    lay = env.layout
    env.reset(seed=0)
    env.step(0)
    env.step(B)
    env.step(A)  # j0 on B then A
    env.step(0)
    obs, _, _, _, info = env.step(C)  # j1 on C
    # nothing waits now: time moves to 5 (j2 arrives), then 6, then 7 with a choice each time
    assert info["time"] == 5
    while info["time"] < 7:
        obs, _, _, _, info = env.step(env.forward)
    # the queue is j2, j3, j4 (3 <= W: shown once in order)
    slots = obs[:3 * JOB_FEATURES].reshape(3, JOB_FEATURES)
    np.testing.assert_allclose(slots[0], [t(2), t(70), 1 / 3, 3 / 8, 16_000 / 64_000, 0, 1],
                               rtol=1e-6)
    np.testing.assert_allclose(slots[2], [t(0), t(90), 1 / 3, 1 / 8, 0, 0, 1], rtol=1e-6)
    assert obs[3 * JOB_FEATURES] == pytest.approx(np.log1p(3) / np.log1p(3))
    j0 = [t(200), 2 / 8, 8000 / 64_000, 0, t(7)]
    for node, first in ((A, j0), (B, j0), (C, [t(60), 1 / 8, 4000 / 64_000, 1 / 2, t(7)])):
        at = lay.node_base[node] + NODE_FEATURES
        np.testing.assert_allclose(obs[at:at + SLOT_FEATURES], first, rtol=1e-6)
        assert not obs[at + SLOT_FEATURES:at + SLOT_FEATURES * lay.slots[node]].any()
    # a second job on A takes A's second placeholder
    env.step(0)
    obs, _, _, _, info = env.step(A)  # j2 (3 cores) on A
    at = lay.node_base[A] + NODE_FEATURES + SLOT_FEATURES
    np.testing.assert_allclose(obs[at:at + SLOT_FEATURES],
                               [t(70), 3 / 8, 16_000 / 64_000, 0, t(0)], rtol=1e-6)
    assert obs[3 * JOB_FEATURES] == pytest.approx(np.log1p(2) / np.log1p(3))


def test_the_split_window_shows_the_head_then_the_newest_jobs():
    cluster = Cluster.identical(1, 1)
    # j0 holds the only core; j1..j6 wait; W = 4 with a tail of 2
    env = env_on([(0, 100, 1)] + [(i, 5, 1) for i in range(1, 7)], cluster, window=4, tail=2)
    env.reset(seed=0)
    env.step(0)
    _, _, _, _, info = env.step(0)  # nothing fits until j0 ends
    assert info["time"] == 100 and env.episode.moved == 6
    assert env.episode.observer.snapshot.rows.tolist() == [1, 2, 6, 5]


# ---- masks on a small heterogeneous cluster ----------------------------------------------------


def test_a_gpu_job_is_hidden_while_no_gpu_is_free():
    # (submit, run, nodes, cores, mem, gpus)
    env = env_on([(0, 100, 1, 1, 1000, 2),   # takes both GPUs of C
                  (0, 50, 1, 1, 1000, 1),    # needs a GPU
                  (0, 50, 1, 2, 1000, 0),
                  (500, 10, 1, 1, 0, 0)], window=4, tail=0)  # arrives later: Forward is allowed
    obs, info = env.reset(seed=0)
    assert info["agent"] == SELECTOR and info["action_mask"][:5].tolist() == [1, 1, 1, 0, 1]
    obs, _, _, _, info = env.step(0)
    assert info["agent"] == ALLOCATOR
    assert info["action_mask"][:3].tolist() == [False, False, True]  # only C has 2 GPUs
    assert obs[-1] == pytest.approx(1 / 4)  # the chosen slot, (0 + 1) / W
    obs, _, _, _, info = env.step(C)
    # same instant: the GPU job is hidden, its fits-now bit 0; the CPU job fits; padding hidden
    assert info["agent"] == SELECTOR
    assert info["action_mask"][:5].tolist() == [False, True, False, False, True]
    slots = obs[:4 * JOB_FEATURES].reshape(4, JOB_FEATURES)
    assert slots[:, 6].tolist() == [0, 1, 0, 0]
    assert not slots[2:].any()  # empty slots are zeros
    assert obs[-1] == 0.0  # the selector's turn


def test_a_node_chosen_for_the_job_is_hidden_for_its_next_pick():
    env = env_on([(0, 10, 3, 2, 1000, 0)], window=2, tail=0)  # 3 nodes of 2 cores each
    _, info = env.reset(seed=0)
    _, _, _, _, info = env.step(0)
    assert info["action_mask"][:3].tolist() == [True, True, True]
    _, _, _, _, info = env.step(B)
    assert info["action_mask"][:3].tolist() == [True, False, True]
    _, _, _, _, info = env.step(C)
    assert info["agent"] == ALLOCATOR and info["action_mask"][:3].tolist() == [True, False, False]
    _, _, terminated, _, info = env.step(A)
    assert terminated
    assert env.engine.result().allocations[0].tolist() == [B, C, A]  # in the order picked


def test_resources_of_every_kind_mask_a_node():
    # C has 16,000 MB: a job of 20,000 MB per node may go to A or B only; a 5-core one to A only
    env = env_on([(0, 10, 1, 1, 20_000, 0), (0, 10, 1, 5, 0, 0)], window=2, tail=0)
    env.reset(seed=0)
    _, _, _, _, info = env.step(0)
    assert info["action_mask"][:3].tolist() == [True, True, False]
    env.step(B)
    _, _, _, _, info = env.step(0)
    assert info["action_mask"][:3].tolist() == [True, False, False]


def test_a_node_whose_placeholders_are_taken_is_hidden():
    # C's placeholders are its 2 GPUs: two CPU-only jobs fill them, though 2 of its cores are free
    env = env_on([(0, 10, 1, 1, 0, 0)] * 3 + [(0, 10, 1, 1, 0, 1)], window=4, tail=0)
    _, info = env.reset(seed=0)
    for _ in range(2):
        env.step(0)
        env.step(C)
    _, _, _, _, info = env.step(0)
    assert info["action_mask"][:3].tolist() == [True, True, False]
    _, _, _, _, info = env.step(A)
    # the GPU job: C has its GPUs free but no placeholder, so it does not fit (k_j = 0): time
    # moved on to the end of C's jobs
    assert env.episode.moved == 1 and info["time"] == 10
    assert info["action_mask"][0]


def test_forward_is_hidden_when_waiting_changes_nothing():
    env = env_on([(0, 10, 1, 8, 0, 0), (0, 10, 1, 8, 0, 0)], window=2, tail=0)
    _, info = env.reset(seed=0)
    # nothing runs and nothing is to arrive: Forward would end the run with jobs waiting
    assert info["action_mask"][:3].tolist() == [True, True, False]
    env.step(0)
    _, _, _, _, info = env.step(A)
    # the second job fits nowhere now (A is full and B, C have 4 cores): time moved to A's end
    assert env.episode.moved == 1 and info["time"] == 10
    assert info["action_mask"][:3].tolist() == [True, False, False]  # no Forward: nothing left


# ---- Eq. 4.1 and 4.2, by hand ------------------------------------------------------------------

def test_rewards_worked_by_hand():
    """Two single-core nodes; A_s = 2 selector actions, A_a = 2 jobs; rewards in seconds.

    t=0: j0 (2 nodes) starts. t=2, 3: j1 (2 nodes), j2 arrive; nothing fits, time moves on.
    t=10: j0 ends. Forward (selector action 2): -(0 + 8 + 7) / (1 + 2) = -5.
    t=30: j3 arrives. Pick j2 (action 1), placed: the allocator's 2nd job,
          -(0 + 27 + 28 + 0) / (2 + 2) = -13.75. Pick j3 (action 2): Q_s = {j2: 27, j3: 0}, j1
          waits 28: -55 / (2 + 1). j3 placed (allocator job 1).
    t=36: j2 ends; pick j1 (action 1), placed on both nodes (allocator job 2): -(0 + 34) / 2 =
          -17; the episode ends: the selector's remainder -34 / 1."""
    cluster = Cluster.identical(2, 1)
    # (submit, run, nodes)
    env = env_on([(0, 10, 2), (2, 4, 2), (3, 6, 1), (30, 1, 1)], cluster, window=4, tail=0,
                 selector_every=2, allocator_every=2, reward_scale=1.0)
    _, info = env.reset(seed=0)
    script = [0, 0, 1, "fwd", 1, 0, 1, 1, 0, 0, 1]
    expected = [(0, 0), (0, 0), (0, 0), (-5, 0), (0, 0), (0, -13.75), (-55 / 3, 0), (0, 0),
                (0, 0), (0, 0), (-34, -17)]
    got = []
    for a in script:
        _, reward, terminated, _, info = env.step(env.forward if a == "fwd" else a)
        got.append(tuple(info["rewards"]))
        assert reward == pytest.approx(sum(info["rewards"]))
    assert terminated
    np.testing.assert_allclose(got, expected)
    assert env.episode.moved == 4  # t = 2, 3, 30 (j1 alone) and 31
    result = env.engine.result()
    assert result.start.tolist() == [0, 36, 30, 30]
    assert info["metrics"]["max_wait"] == 34


#: the selector's rewards of `test_rewards_worked_by_hand`'s schedule under ours
OUR_SELECTOR_REWARDS = {"accrued": [0, 0, -15, -40, 0, 0, 0, -6, 0, 0, 0],
                        "squared": [0, 0, -113, -1400, 0, 0, 0, -372, 0, 0, 0]}


@pytest.mark.parametrize("mode", list(OUR_SELECTOR_REWARDS))
def test_our_selector_rewards_worked_by_hand(mode):
    """The schedule of `test_rewards_worked_by_hand` with `selector_reward="accrued"`: the
    selector is paid when time moves on after its action, the waits that accrued meanwhile.

    j0's start (step 3): nothing fits until t=10, j1 and j2 wait 8 + 7: -15. The Forward at
    t=10: both wait until j3 arrives at 30: -40. j3's start (step 8): j1 alone waits until
    j2 ends at 36: -6. Picks at an instant pay 0; the episode's end pays no remainder. The sum,
    -61, is minus the jobs' total wait (0 + 34 + 27 + 0); the allocator's rewards are Eq. 4.2's
    as before.

    With "squared", what accrues in the squares of the waits: j1 goes from 0 to 8 s and j2
    from 0 to 7, -(64 + 49) = -113; then 8 -> 28 and 7 -> 27, -(720 + 680) = -1400; then j1
    alone, 28 -> 34, -372. The sum, -1885, is minus 34^2 + 27^2."""
    cluster = Cluster.identical(2, 1)
    env = env_on([(0, 10, 2), (2, 4, 2), (3, 6, 1), (30, 1, 1)], cluster, window=4, tail=0,
                 selector_every=2, allocator_every=2, reward_scale=1.0, selector_reward=mode)
    env.reset(seed=0)
    got = []
    for a in [0, 0, 1, "fwd", 1, 0, 1, 1, 0, 0, 1]:
        _, reward, terminated, _, info = env.step(env.forward if a == "fwd" else a)
        got.append(tuple(info["rewards"]))
        assert reward == pytest.approx(sum(info["rewards"]))
    assert terminated
    np.testing.assert_allclose([g[0] for g in got], OUR_SELECTOR_REWARDS[mode])
    np.testing.assert_allclose([g[1] for g in got], [0, 0, 0, 0, 0, -13.75, 0, 0, 0, 0, -17])
    assert env.engine.result().start.tolist() == [0, 36, 30, 30]


@pytest.mark.parametrize("seed", [0, 1])
def test_accrued_rewards_add_up_to_minus_the_total_wait(seed):
    """Random valid actions (Forwards among them) over a Deeplearn stretch: whatever the
    choices, the selector's accrued rewards add up to minus the jobs' total wait in hours (the
    squared ones to minus the sum of the squared waits in hours squared), and Eq. 4.1's do
    not."""
    sums = {}
    for mode in ("accrued", "average", "squared"):
        env = HeraSchedEnv(None, "spartan-deeplearn", episode_jobs=150, selector_every=1,
                           selector_reward=mode)
        env.reset(seed=seed, options={"start": 400})
        env.action_space.seed(seed)
        total, terminated = 0.0, False
        while not terminated:
            _, _, terminated, _, info = env.step(env.action_space.sample())
            total += info["rewards"][SELECTOR]
        sums[mode] = total
        metrics = info["metrics"]
    waits = env.engine.result().start - env.episode.observer.submit
    assert metrics["wait"] * 150 == pytest.approx(waits.sum())
    assert sums["accrued"] == pytest.approx(-waits.sum() / 3600, rel=1e-9)
    assert sums["squared"] == pytest.approx(-(waits @ waits) / 3600 ** 2, rel=1e-9)
    assert waits.sum() > 3600  # the jobs did wait
    assert sums["average"] != pytest.approx(sums["accrued"], rel=1e-3)


def test_an_unknown_selector_reward_is_refused():
    with pytest.raises(ValueError, match="unknown selector reward 'sum'; choose one of: "
                                         "average, accrued, squared"):
        env_on([(0, 1, 1)], Cluster.identical(1, 1), selector_reward="sum")


def test_rewards_are_in_hours_by_default():
    cluster = Cluster.identical(1, 1)
    env = env_on([(0, 3600, 1), (0, 10, 1)], cluster, window=2, tail=0, selector_every=1)
    env.reset(seed=0)
    env.step(0)
    env.step(0)  # j0 starts; j1 waits until 3600
    _, _, _, _, info = env.step(0)
    assert info["rewards"][0] == pytest.approx(-1.0)  # j1 waited an hour


# ---- the schedule is the engine's ----------------------------------------------------------------

def fcfs_first_available(env: HeraSchedEnv, obs, info) -> int:
    """The selector: the head of the queue if it fits, else Forward; the allocator: the first
    allowed node. On the engine this is FCFS without backfilling on first-available nodes."""
    mask = info["action_mask"]
    if info["agent"] == SELECTOR:
        return 0 if mask[0] else env.forward
    return int(np.flatnonzero(mask)[0])


def test_fcfs_through_the_env_is_the_engine_s_fcfs():
    from hpcsched.policies.priority import get_policy
    from hpcsched.sim.run import simulate

    prepared = prepare(HeraSchedEnv().prepared.jobs.window(0, 300), "hpcsim",
                       cluster="spartan-deeplearn", allocator="first-available")
    env = HeraSchedEnv(prepared, "spartan-deeplearn")
    obs, info = env.reset(seed=0)
    terminated = False
    while not terminated:
        obs, _, terminated, _, info = env.step(fcfs_first_available(env, obs, info))
    ours = env.engine.result()
    theirs = simulate(prepared, get_policy("fcfs", profile=prepared.profile), backfill="none")
    np.testing.assert_array_equal(ours.start, theirs.start)
    assert [a.tolist() for a in ours.allocations] == [a.tolist() for a in theirs.allocations]
    assert info["metrics"]["wait"] == pytest.approx(theirs.metrics["wait"])


class Replay:
    """An engine policy that makes the decisions an env made, in order."""

    name = "replay"

    def __init__(self, decisions):
        self.decisions = list(decisions)

    def decide(self, view):
        return self.decisions.pop(0)


def test_random_choices_replayed_on_a_bare_engine_give_the_same_schedule():
    rng = np.random.default_rng(7)
    jobs = []
    for s in np.sort(rng.integers(0, 200, 40)):
        nodes = int(rng.integers(1, 3))
        gpus = int(rng.integers(0, 2)) if nodes == 1 else 0  # only C has GPUs
        jobs.append((float(s), float(rng.integers(1, 50)), nodes, int(rng.integers(1, 4)),
                     int(rng.integers(0, 16_000)), gpus))
    prepared = prepare(table(jobs), "hpcsim", cluster=mixed_cluster())
    env = HeraSchedEnv(prepared, mixed_cluster(), window=6, tail=2)
    obs, info = env.reset(seed=0)
    decisions, chosen, terminated, instant = [], [], False, None
    while not terminated:
        view = env.episode.view
        if info["agent"] == SELECTOR:
            while instant is not None and instant < env.episode.moved:  # the env's own Waits
                decisions.append(Wait())
                instant += 1
            instant = env.episode.moved
        a = int(rng.choice(np.flatnonzero(info["action_mask"])))
        if info["agent"] == SELECTOR and a == env.forward:
            decisions.append(Wait())
        elif info["agent"] == SELECTOR:
            row, chosen = int(env.episode.observer.snapshot.rows[a]), []
        else:
            chosen.append(a)
            if len(chosen) == env.episode.observer.count[row]:
                decisions.append(Start(row, tuple(chosen)))
        assert view.now == info["time"]
        obs, _, terminated, _, info = env.step(a)
    while instant < env.episode.moved:
        decisions.append(Wait())
        instant += 1
    ours = env.engine.result()
    engine = make_engine(prepared.jobs, prepared.cluster, prepared.profile, "none")
    theirs = engine.run(Replay(decisions))
    np.testing.assert_array_equal(ours.start, theirs.start)
    assert [a.tolist() for a in ours.allocations] == [a.tolist() for a in theirs.allocations]
    from hpcsched.cluster.request import job_requests

    count, demand = job_requests(prepared.jobs, prepared.cluster)
    check_schedule(prepared.cluster, count, demand, prepared.jobs.submit, ours.start, ours.end,
                   ours.allocations)


# ---- the Gymnasium contract -------------------------------------------------------------------

def test_passes_gymnasium_s_checker_and_keeps_its_mask_contract():
    env = HeraSchedEnv(episode_jobs=200)
    check_env(env, skip_render_check=True)
    obs, info = env.reset(seed=3)
    assert obs.shape == (1452,) and env.action_space.n == 101
    rng = np.random.default_rng(0)
    for _ in range(300):
        mask = info["action_mask"]
        np.testing.assert_array_equal(env.action_masks(), mask)
        if info["agent"] == ALLOCATOR:
            assert not mask[30:].any() and obs[-1] > 0
        else:
            assert obs[-1] == 0 and mask[:100].any()  # asked only with a choice
        obs, _, terminated, _, info = env.step(int(rng.choice(np.flatnonzero(mask))))
        if terminated:
            obs, info = env.reset()


def test_random_starts_and_a_fixed_start():
    env = HeraSchedEnv(episode_jobs=50)
    _, info = env.reset(seed=1)
    first = info["window"]
    assert first[1] == 50
    _, info = env.reset(options={"start": 7})
    assert info["window"] == (7, 50)
    with pytest.raises(ValueError, match=r"starts in \[0, 1087\], not at 2000"):
        env.reset(options={"start": 2000})


# ---- bad input --------------------------------------------------------------------------------

SACCT = """\
JobIDRaw|JobID|User|Account|Partition|QOS|Submit|Eligible|Start|End|ElapsedRaw|TimelimitRaw|NNodes|NCPUS|ReqCPUS|ReqNodes|ReqMem|ReqTRES|AllocTRES|State
25000000|25000000|u0|p|deeplearn|normal|2021-09-20T00:05:18|2021-09-20T00:05:18|2021-09-20T00:05:18|2021-09-20T01:05:18|3600|60|1|3|3|1|62Gn|cpu=3,mem=62G,node=1,billing=3,gres/gpu=3|cpu=3,mem=62G,node=1,billing=3,gres/gpu=3|TIMEOUT
25000001|25000001|u0|p|deeplearn|normal|2021-09-20T00:06:28|2021-09-20T00:06:28|2021-09-20T00:06:28|2021-09-20T01:19:32|4384|240|1|4|4|1|12Gn|cpu=4,mem=12G,node=1,billing=4,gres/gpu={gpus}|cpu=4,mem=12G,node=1,billing=4,gres/gpu={gpus}|FAILED
"""


def test_a_job_needing_more_gpus_than_any_node_has_is_named_with_its_line(tmp_path):
    path = tmp_path / "jobs.txt"
    path.write_text(SACCT.format(gpus=2))
    env = HeraSchedEnv(str(path), "spartan-deeplearn")  # a sound file loads
    assert len(env.prepared.jobs) == 2
    path.write_text(SACCT.format(gpus=8))
    with pytest.raises(ClusterError) as e:
        HeraSchedEnv(str(path), "spartan-deeplearn")
    text = str(e.value)
    assert "jobs.txt, line 3" in text and "job 25000001" in text and "8 gpus" in text
    assert "largest node: 4" in text
    env = HeraSchedEnv(str(path), "spartan-deeplearn", drop_oversized=True)
    assert len(env.prepared.jobs) == 1


def test_bad_clusters_profiles_and_actions_are_refused_clearly():
    with pytest.raises(ClusterError, match="no cluster 'spartan-nope'"):
        HeraSchedEnv(None, "spartan-nope")
    with pytest.raises(ValueError, match="named nodes.*not a pool of identical nodes"):
        HeraSchedEnv("lublin-1", None, profile="standard")
    with pytest.raises(ValueError, match="not under the 'rlscheduler' profile"):
        HeraSchedEnv(None, "spartan-deeplearn", profile="rlscheduler")
    with pytest.raises(ValueError, match="needs a trace for the cluster"):
        HeraSchedEnv(None, mixed_cluster())
    with pytest.raises(ValueError, match="tail must be in"):
        HeraSchedEnv(window=4, tail=5)
    env = env_on([(0, 10, 1, 1, 0, 1), (0, 10, 1, 1, 0, 0)], window=4, tail=0)
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"action 2 is not valid for the selector now \(valid: "
                                         r"\[0, 1\]\)"):  # Forward is hidden too
        env.step(2)
    env.step(0)
    with pytest.raises(ValueError, match=r"action 1 is not valid for the allocator now \(valid: "
                                         r"\[2\]\)"):  # a GPU job: C only
        env.step(1)


def test_a_pick_the_mask_hides_is_a_forward():
    env = env_on([(0, 10, 1, 8, 0, 0), (0, 10, 1, 8, 0, 0), (5, 10, 1, 1, 0, 0)], window=4,
                 tail=0, selector_every=1, reward_scale=1.0)
    env.reset(seed=0)
    env.step(0)
    env.step(A)  # the second job fits nowhere: time moves to 5, where the third arrives
    _, _, _, _, info = env.step(0)  # the 8-core job does not fit: a Forward
    assert info["rewards"][0] == pytest.approx(-(5 + 0) / 2)  # counted as the selector's action
    assert info["time"] == 10


def test_scale_time_reads_as_documented():
    np.testing.assert_allclose(scale_time(np.array([0, 1, 3600, 86_400, 30 * 86_400])),
                               [0, 0.0469, 0.5545, 0.7697, 1.0], atol=1e-4)
