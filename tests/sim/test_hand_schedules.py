"""Small schedules computed by hand (each worked out in the comments) for every backfilling variant
and every heuristic's order."""

import math

import numpy as np
import pytest

from hpcsched.cluster.pool import ClusterError, NodePool
from hpcsched.policies.priority import get_policy
from hpcsched.sim.factory import make_engine
from hpcsched.workload.jobs import JobTable


def table(rows):
    """rows: (submit, run, procs[, req]); the request defaults to the run time."""
    submit = [r[0] for r in rows]
    run = [r[1] for r in rows]
    procs = [r[2] for r in rows]
    req = [r[3] if len(r) > 3 else r[1] for r in rows]
    return JobTable.from_columns(submit=submit, run_time=run, req_procs=procs, alloc_procs=procs,
                                 req_time=req, user=[1] * len(rows))


def starts(rows, policy="fcfs", backfill="none", profile="standard", nodes=4):
    engine = make_engine(table(rows), NodePool(nodes), profile, backfill)
    return engine.run(get_policy(policy)).start.tolist()


# A runs [0,10) on 3 of 4 nodes. B (3 nodes) arrives at 1 and must wait for A: shadow 10, and one
# node (4 - 3) is "extra" at the shadow time. C (1 node, 20 s) arrives at 2: it fits now but would end
# at 22, after the shadow.
#  - EASY: C uses only the extra node -> it starts at 2; B starts at 10.
#  - SchedGym: no extra-node rule and 2 + 20 < 10 is false -> C waits; B at 10, then C at 10.
#  - none: C is behind B -> both at 10.
ABC = [(0, 10, 3), (1, 10, 3), (2, 20, 1)]


@pytest.mark.parametrize("profile", ["standard", "rlscheduler"])
def test_easy_uses_extra_nodes(profile):
    assert starts(ABC, backfill="easy", profile=profile) == [0, 10, 2]


@pytest.mark.parametrize("profile", ["standard", "rlscheduler"])
def test_schedgym_has_no_extra_node_rule(profile):
    assert starts(ABC, backfill="schedgym", profile=profile) == [0, 10, 10]


@pytest.mark.parametrize("profile", ["standard", "rlscheduler"])
def test_no_backfilling_keeps_order(profile):
    assert starts(ABC, backfill="none", profile=profile) == [0, 10, 10]


# D (1 node, 7 s) arrives at 3 behind B (shadow 10): it would end at exactly 10.
#  - EASY allows ending at the shadow time (3 + 7 <= 10) -> D at 3.
#  - SchedGym demands strictly before (3 + 7 < 10 is false) -> D waits until B started: 10.
# D6 (6 s) ends at 9 < 10: both variants backfill it at 3.
ABD = [(0, 10, 3), (1, 10, 3), (3, 7, 1)]
ABD6 = [(0, 10, 3), (1, 10, 3), (3, 6, 1)]


def test_easy_and_schedgym_differ_at_the_shadow_boundary():
    assert starts(ABD, backfill="easy") == [0, 10, 3]
    assert starts(ABD, backfill="schedgym") == [0, 10, 10]
    assert starts(ABD6, backfill="easy") == [0, 10, 3]
    assert starts(ABD6, backfill="schedgym") == [0, 10, 3]


# EASY's "ends by the reservation", alone: A runs [0,10) on 2 of 4 nodes; B (all 4 nodes, 10 s)
# comes at 1: shadow 10, and no node is extra then, so a waiting job may start before B only by
# ending by 10. E (1 node) comes at 2:
#  - asking for 8 s it ends at 10, exactly the shadow time: it starts at 2 (on a node B will need
#    at 10, free again by then);
#  - asking for 9 s it would end at 11, holding a node B needs: it waits for B's end, 20.
# The same on named nodes, exclusive (idle nodes counted) and shared, compiled and stepped.
BOUNDARY = [(0, 10, 2), (1, 10, 4)]


@pytest.mark.parametrize("cluster", ["pool", "exclusive", "shared"])
@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("e_req, e_start", [(8, 2), (9, 20)])
def test_easy_starts_a_job_ending_exactly_at_the_shadow_time(cluster, compiled, e_req, e_start):
    from hpcsched.cluster.nodes import Cluster

    machine = NodePool(4) if cluster == "pool" else \
        Cluster.identical(4, 1, exclusive=cluster == "exclusive")
    engine = make_engine(table(BOUNDARY + [(2, e_req, 1)]), machine, "standard", "easy")
    result = engine.run(get_policy("fcfs"), compiled=compiled)
    assert result.start.tolist() == [0, 10, e_start]
    assert engine.reservations[0] == (1, 10.0)


# A runs [0,10) on 2 nodes. B (3 nodes) and C (4 nodes) arrive at 1; D (1 node, 30 s) at 2.
#  - EASY protects only B (shadow 10, one extra node): D takes the extra node at 2 and runs to 32,
#    so C (all 4 nodes) cannot start until 32. B at 10.
#  - Conservative reserves B [10,20) and C [20,30); D cannot fit 30 s anywhere before 30 -> D at 30.
#  - none: B 10, C 20, D 30 (D is behind C).
ABCD = [(0, 10, 2), (1, 10, 3), (1, 10, 4), (2, 30, 1)]


def test_easy_versus_conservative():
    assert starts(ABCD, backfill="easy") == [0, 10, 32, 2]
    assert starts(ABCD, backfill="conservative") == [0, 10, 20, 30]
    assert starts(ABCD, backfill="none") == [0, 10, 20, 30]


# Two jobs compete for one extra node. A [0,10) on 2 nodes; B (3 nodes) reserved at 10 with one
# extra node; C and D (1 node, 30 s each) arrive at 2: C takes the extra node; D fits the free node but
# would still hold it at 10, when B needs it -> D waits. B at 10, D at 20 when B ends.
def test_easy_extra_nodes_are_used_up():
    rows = [(0, 10, 2), (1, 10, 3), (2, 30, 1), (2, 30, 1)]
    assert starts(rows, backfill="easy") == [0, 10, 2, 20]


# Conservative still backfills what delays no reservation: E (1 node, 5 s) at 2 fits in [2,7)
# while B waits for A's nodes until 10, and C's reservation starts at 20.
def test_conservative_backfills_harmless_jobs():
    rows = [(0, 10, 2), (1, 10, 3), (1, 10, 4), (2, 5, 1)]
    assert starts(rows, backfill="conservative") == [0, 10, 20, 2]


def test_standard_kills_at_request_rlscheduler_does_not():
    # A asks for 5 s but would run 10 s; B needs the whole machine.
    rows = [(0, 10, 4, 5), (1, 3, 4)]
    assert starts(rows, profile="standard") == [0, 5]  # A killed at 5
    assert starts(rows, profile="rlscheduler") == [0, 10]


# Heuristic order: X holds all 4 nodes during [0,100). J1..J4 arrive at 1..4 and each needs 3 or 4
# nodes, so they run one after another in the order the policy ranks them at each decision.
#          submit  req  procs   area  ratio
#   J1       1     50    3      150   16.7
#   J2       2     40    4      160   10.0
#   J3       3     30    4      120    7.5
#   J4       4     45    3      135   15.0
ORDER_ROWS = [(0, 100, 4), (1, 50, 3), (2, 40, 4), (3, 30, 4), (4, 45, 3)]
# Under commit semantics the first arrival is decided alone (it is the only job waiting), so a J0
# (4 nodes, 1 s) arriving at 0.5 takes that decision and runs [100, 101); J1..J4 are then ranked at
# 101. The waiting-time scores shift by 1 s, which changes no order above (checked by hand).
ORDER_ROWS_COMMIT = [ORDER_ROWS[0], (0.5, 1, 4)] + ORDER_ROWS[1:]


def run_order(policy, profile="standard"):
    rows = ORDER_ROWS if profile == "standard" else ORDER_ROWS_COMMIT
    s = starts(rows, policy=policy, profile=profile)[-4:]
    return [f"J{i + 1}" for i in sorted(range(4), key=lambda i: s[i])]


@pytest.mark.parametrize("policy, expected", [
    ("fcfs", ["J1", "J2", "J3", "J4"]),
    ("lcfs", ["J4", "J3", "J2", "J1"]),
    ("sjf", ["J3", "J2", "J4", "J1"]),
    ("saf", ["J3", "J4", "J1", "J2"]),
    ("srf", ["J3", "J2", "J4", "J1"]),
    ("sqf", ["J1", "J4", "J2", "J3"]),  # J1, J4 tie on 3 procs: the earlier one first
    # F1 = log10(r) n + 870 log10(s): 5.1, 268.3, 421.0, 528.8 -> submit order dominates
    ("f1", ["J1", "J2", "J3", "J4"]),
    # WFP3 at t=100 with w = 100 - s: -(99/50)^3*3 = -23.3, -(98/40)^3*4 = -58.8,
    # -(97/30)^3*4 = -135.2, -(96/45)^3*3 = -29.1 -> J3; at 130: J1 -51.5, J2 -131.1, J4 -65.9 -> J2;
    # at 170: J1 -115.9, J4 -150.6 -> J4, then J1.
    ("wfp3", ["J3", "J2", "J4", "J1"]),
    # WFP3 as RLScheduler codes it: ((1+s)/r)^3 n = 1.9e-4, 1.7e-3, 9.5e-3, 4.1e-3 -> J1 J2 J4 J3
    ("wfp3-rls", ["J1", "J2", "J4", "J3"]),
    # UNICEP as coded: (1+s)/(log2(n) r): 2/(1.585*50)=.025, 3/(2*40)=.0375, 4/(2*30)=.0667,
    # 5/(1.585*45)=.0701 -> J1 J2 J3 J4
    ("unicep-rls", ["J1", "J2", "J3", "J4"]),
    # UNICEP -w/(log2(n) r) at 100: J1 -99/79.2=-1.25, J2 -98/80=-1.225, J3 -97/60=-1.617,
    # J4 -96/71.3=-1.346 -> J3; at 130: J1 -1.628, J2 -1.6, J4 -1.767 -> J4; at 175: J1 -2.196,
    # J2 -2.1625 -> J1, then J2.
    ("unicep", ["J3", "J4", "J1", "J2"]),
])
@pytest.mark.parametrize("profile", ["standard", "rlscheduler"])
def test_heuristic_orders(policy, expected, profile):
    assert run_order(policy, profile) == expected


def test_order_start_times_are_cumulative():
    # SJF: J3 at 100 (30 s), J2 at 130 (40 s), J4 at 170 (45 s), J1 at 215
    assert starts(ORDER_ROWS, policy="sjf") == [0, 215, 130, 100, 170]


def test_random_policy_is_seeded():
    a = starts(ORDER_ROWS, policy="random")
    b = starts(ORDER_ROWS, policy="random")
    assert a == b
    orders = set()
    for seed in range(8):
        engine = make_engine(table(ORDER_ROWS), NodePool(4), "standard", "none")
        orders.add(tuple(engine.run(get_policy("random", seed=seed)).start.tolist()))
    assert len(orders) > 1


def test_oversized_job_is_an_error_naming_it():
    with pytest.raises(ClusterError, match=r"job 2 .*asks for 5 processors.*--drop-oversized"):
        make_engine(table([(0, 1, 1), (1, 1, 5)]), NodePool(4), "standard", "none")


def test_whole_nodes_are_allocated():
    # 2 nodes x 4 procs: a 3-proc job takes a whole node, so two of them fill the machine and a
    # third waits for the first to end at 10, even though only 6 of 8 processors are busy.
    rows = [(0, 10, 3), (0, 20, 3), (1, 5, 3)]
    engine = make_engine(table(rows), NodePool(2, 4), "standard", "none")
    assert engine.run(get_policy("fcfs")).start.tolist() == [0, 0, 10]


def test_metrics_by_hand():
    # One node. A runs [0,100); B (5 s) arrives at 10 and waits 90 s.
    rows = [(0, 100, 1), (10, 5, 1)]
    engine = make_engine(table(rows), NodePool(1), "standard", "none")
    m = engine.run(get_policy("fcfs")).metrics
    # waits 0, 90; turnaround 100, 95; bsld 1 and (90+5)/10 = 9.5; slowdown 1 and 95/5 = 19
    assert m["wait"] == 45 and m["max_wait"] == 90
    assert m["turnaround"] == 97.5
    assert m["bsld"] == pytest.approx((1 + 9.5) / 2)
    assert m["max_bsld"] == 9.5
    assert m["slowdown"] == pytest.approx(10)
    # busy 105 s over a makespan of 105 s on one processor
    assert m["utilization"] == pytest.approx(1.0)
    assert m["makespan"] == 105
    assert m["jobs"] == 2 and m["first_job_id"] == 1 and m["last_job_id"] == 2
    # one user: its mean bsld is the max, and Jain's index of one value is 1
    assert m["max_user_bsld"] == pytest.approx(5.25)
    assert m["jain_user_bsld"] == 1.0
    assert math.isclose(m["bsld"], 5.25)


def test_jain_index_of_several_users_by_hand():
    """One node, FCFS. Users 1, 2, 1, 3 submit A (100 s) at 0, B (10 s) at 10, C (20 s) at 20 and
    D (40 s) at 30; they run one after another: A [0,100), B [100,110), C [110,130), D [130,170).
    bsld: A 1; B (90 + 10) / 10 = 10; C (90 + 20) / 20 = 5.5; D (100 + 40) / 40 = 3.5.
    Per user: 1 -> (1 + 5.5) / 2 = 3.25, 2 -> 10, 3 -> 3.5.
    Jain's index (sum x)^2 / (n sum x^2) = 16.75^2 / (3 (3.25^2 + 10^2 + 3.5^2))
    = 280.5625 / 368.4375 = 0.7615 (min / max would be 0.325; the mean over the max 0.558)."""
    jobs = JobTable.from_columns(submit=[0, 10, 20, 30], run_time=[100, 10, 20, 40],
                                 req_time=[100, 10, 20, 40], req_procs=[1, 1, 1, 1],
                                 alloc_procs=[1, 1, 1, 1], user=[1, 2, 1, 3])
    result = make_engine(jobs, NodePool(1), "standard", "none").run(get_policy("fcfs"))
    assert result.start.tolist() == [0, 100, 110, 130]
    m = result.metrics
    assert m["max_user_bsld"] == pytest.approx(10.0)
    assert m["jain_user_bsld"] == pytest.approx(280.5625 / 368.4375, rel=1e-12)


def test_stepped_loop_matches_run():
    engine = make_engine(table(ABCD), NodePool(4), "standard", "easy")
    policy = get_policy("sjf")
    while (view := engine.next_decision()) is not None:
        engine.apply(policy.select(view))
    stepped = np.asarray(engine.start)
    fast = make_engine(table(ABCD), NodePool(4), "standard", "easy").run(policy).start
    assert stepped.tolist() == fast.tolist()


# Carastan-Santos' scores with submit times near 10,000, where the log10(s) term no longer dominates:
# X holds the machine until 10,100; J1..J4 (same r, n as above) arrive at 10,001..10,004.
# log10(s / 10001) for J2, J3, J4 = 4.3425e-5, 8.685e-5, 1.30276e-4.
#   F1 = log10(r) n + 870 log10(s):   5.0969, 6.4082+0.0378, 5.9085+0.0756, 4.9596+0.1133
#        -> J4 5.073 < J1 5.097 < J3 5.984 < J2 6.446
#   F2 = sqrt(r) n + 25600 log10(s):  21.213, 25.298+1.112, 21.909+2.223, 20.125+3.335
#        -> J1 21.21 < J4 23.46 < J3 24.13 < J2 26.41
#   F3 = r n + 6.86e6 log10(s):       150, 160+297.9, 120+595.8, 135+893.7 -> J1 J2 J3 J4
#   F4 = r sqrt(n) + 5.3e5 log10(s):  86.60, 80+23.02, 60+46.03, 77.94+69.05 -> J1 J2 J3 J4
LATE_ROWS = [(0, 10100, 4), (10001, 50, 3), (10002, 40, 4), (10003, 30, 4), (10004, 45, 3)]


@pytest.mark.parametrize("policy, expected", [
    ("f1", ["J4", "J1", "J3", "J2"]),
    ("f2", ["J1", "J4", "J3", "J2"]),
    ("f3", ["J1", "J2", "J3", "J4"]),
    ("f4", ["J1", "J2", "J3", "J4"]),
])
def test_carastan_santos_orders(policy, expected):
    s = starts(LATE_ROWS, policy=policy)[1:]
    assert [f"J{i + 1}" for i in sorted(range(4), key=lambda i: s[i])] == expected
