"""Hand-drawn schedules on a 3-node mixed cluster under the `standard` profile.

Every expected start and node list below was worked out by hand from the documented rules (the
allocators' keys in `cluster/allocate.py`, EASY and conservative in `sim/backfill_nodes.py`, the
pass loop in `sim/passes.py`); each docstring says how. The cluster
(`hetero_helpers.mixed_cluster`):

    A: 8 cores, 32000 MB          B: 4 cores, 64000 MB          C: 4 cores, 16000 MB, 2 GPUs

Jobs are written `J(submit, run, nodes x cores/MB/GPUs)`; the requested time is the run time unless
said otherwise. In the pictures time runs to the right (one column = the time marked), one line per
node; `.` is idle. Jobs are killed at their requested time (standard profile), which no job here
reaches before it ends.
"""

from __future__ import annotations

import numpy as np
import pytest

from hetero_helpers import A, B, C, Job, check_schedule, deadline, mixed_cluster, table
from hpcsched.cluster.request import job_requests
from hpcsched.policies.priority import get_policy
from hpcsched.sim.decisions import Pick, Reserve, Start, Wait
from hpcsched.sim.engine import BACKFILLED, READY, RESERVED
from hpcsched.sim.factory import make_engine

NAMES = "ABC"


@pytest.fixture(autouse=True)
def no_hang():
    """A schedule that never advances its clock fails the test instead of stalling the suite."""
    with deadline(30):
        yield


def run(rows, *, backfill="none", allocator="first-available", policy="fcfs", **cluster_kw):
    """(starts, node names per job, engine) of an FCFS run; checks the schedule is possible."""
    cluster = mixed_cluster(**cluster_kw)
    jobs = table(rows)
    engine = make_engine(jobs, cluster, "standard", backfill, allocator=allocator)
    result = engine.run(get_policy(policy))
    count, demand = job_requests(jobs, cluster)
    check_schedule(cluster, count, demand, jobs.submit, result.start, result.end,
                   result.allocations)
    nodes = ["".join(NAMES[i] for i in a) for a in result.allocations]
    return result.start.tolist(), nodes, engine


# -- allocators ------------------------------------------------------------------------------------


ALLOC_ROWS = [Job(0, 100, 1, 4, 8000),           # J1
              Job(1, 10, 1, 4, 4000, 1),         # G: a GPU job, only C can hold it
              Job(1, 10, 1, 8, 8000)]            # W: 8 cores, only A can hold it


@pytest.mark.parametrize("allocator, starts, nodes", [
    ("first-available", [0, 1, 100], ["A", "C", "A"]),
    ("best-fit", [0, 1, 1], ["B", "C", "A"]),
    ("topology", [0, 100, 100], ["C", "C", "A"]),
])
def test_each_allocator_places_the_first_job_elsewhere(allocator, starts, nodes):
    """Where J1 (1 x 4c/8000) goes decides who waits. Switches: spine over L1 = {A, B}, L2 = {C}.
    No backfilling, FCFS.

        first-available          best-fit                 topology
        0   1      100 110       0   1   11  100          0     100 110
     A  J1  J1 ... W   .      A  .   W...W   .         A  .     W   .
     B  .   .      .   .      B  J1  J1 .... .         B  .     .   .
     C  .   G .    .   .      C  .   G  .    .         C  J1 ...G   .

    - first-available: the first node that fits in cluster order is A. G at 1 on C (the only GPU
      node, free). W needs 8 cores: only A has 8 and J1 holds 4 of them until 100.
    - best-fit: what is left after placing J1, compared as GPUs left x 9 (most cores + 1), then
      cores left, then half the fraction of memory left: A 0 + 4 + .5 x 24/32 = 4.375,
      B 0 + 0 + .5 x 56/64 = 0.44, C 2 x 9 + 0 + .5 x 8/16 = 18.25 -> B. So A stays whole and W
      starts at 1.
    - topology: every node fits J1; both leaves can hold one node; the tightest (fewest fitting
      nodes) is L2 = {C} -> C. Then G cannot have C's 4 cores until 100, and W (behind G, no
      backfilling) waits too; at 100 G takes C and W takes A.
    """
    got_starts, got_nodes, _ = run(ALLOC_ROWS, allocator=allocator, switches=True)
    assert got_starts == starts
    assert got_nodes == nodes


def test_multi_node_allocation_order():
    """A job's nodes are reported in allocation order, and the three allocators order them by
    their own keys. One job, 2 x 1c/1000, on the empty cluster (switches as above):

    - first-available: A, B (cluster order);
    - best-fit: left B 3 + .5 x 63/64 = 3.49, A 7 + .5 x 31/32 = 7.48, C 18 + 3 + ... -> B, A;
    - topology: L1 = {A, B} is the only leaf with 2 fitting nodes; best fit under it -> B, A.
    """
    rows = [Job(0, 10, 2, 1, 1000)]
    assert run(rows, allocator="first-available", switches=True)[1] == ["AB"]
    assert run(rows, allocator="best-fit", switches=True)[1] == ["BA"]
    assert run(rows, allocator="topology", switches=True)[1] == ["BA"]


# -- sharing ---------------------------------------------------------------------------------------


SHARE_ROWS = [Job(0, 10), Job(0, 20), Job(0, 30), Job(0, 40)]  # four 1-core jobs


def test_shared_nodes_run_jobs_side_by_side():
    """Four 1 x 1c jobs at 0, first-available, shared nodes: A has 8 cores, so all four run on A
    at once.

            0    10   20   30   40
        A   1234 234  34   4    .
        B   .
        C   .
    """
    starts, nodes, _ = run(SHARE_ROWS)
    assert starts == [0, 0, 0, 0]
    assert nodes == ["A", "A", "A", "A"]


def test_exclusive_nodes_refuse_sharing():
    """The same jobs on an exclusive cluster: a job takes a whole idle node. J1..J3 take A, B, C
    (cluster order); J4 waits for the first node to empty: J1 ends at 10 on A, and J4 starts on
    A at exactly 10 (a job ending at t frees its node for one starting at t).

            0    10   20   30   50
        A   1111 4444 4444 4444 .
        B   2222 2222 .
        C   3333 3333 3333 .
    """
    starts, nodes, _ = run(SHARE_ROWS, exclusive=True)
    assert starts == [0, 0, 0, 10]
    assert nodes == ["A", "B", "C", "A"]


METRIC_ROWS = [Job(0, 10, 1, 2, 8000),        # J0: on A
               Job(0, 20, 1, 4, 0, 2),        # J1: the GPU node C, all of it but memory
               Job(5, 10, 1, 8, 1000)]        # J2: all of A's cores: waits for J0 until 10


@pytest.mark.parametrize("exclusive", [False, True])
def test_metrics_by_hand(exclusive):
    """First-available, no backfilling. Same starts shared or exclusive: J0 [0, 10) on A, J1
    [0, 20) on C, J2 waits 5 s and runs [10, 20) on A.

            0    5    10   20
        A   J0 ...... J2 ..  .
        B   .
        C   J1 ............  .

    Waits 0, 0, 5: mean 5/3, max 5. Bounded slowdown (wait + run) / max(run, 10): 1, 1, 15/10:
    mean 3.5/3, max 1.5. Turnaround 10, 20, 15: mean 15. The makespan is 20; the cluster has 16
    cores, 112000 MB, 2 GPUs. Utilization per resource = resource-seconds held / (total x 20):
      shared:    cores (2x10 + 4x20 + 8x10) / 320 = 0.5625; memory (8000x10 + 1000x10) / 2240000;
                 GPUs 2x20 / 40 = 1
      exclusive: a job holds its whole nodes: cores (8x10 + 4x20 + 8x10) / 320 = 0.75; memory
                 (32000x10 + 16000x20 + 32000x10) / 2240000 = 3/7; GPUs 2x20 / 40 = 1
    """
    starts, nodes, engine = run(METRIC_ROWS, exclusive=exclusive)
    assert starts == [0, 0, 10] and nodes == ["A", "C", "A"]
    m = engine.result().metrics
    assert m["wait"] == pytest.approx(5 / 3) and m["max_wait"] == 5
    assert m["bsld"] == pytest.approx(3.5 / 3) and m["max_bsld"] == 1.5
    assert m["turnaround"] == 15
    assert m["makespan"] == 20
    if exclusive:
        assert m["utilization_cores"] == pytest.approx(0.75)
        assert m["utilization_memory"] == pytest.approx(3 / 7)
    else:
        assert m["utilization_cores"] == pytest.approx(0.5625)
        assert m["utilization_memory"] == pytest.approx(90000 / 2240000)
        assert m["utilization"] == pytest.approx(0.5625)  # processors asked: the same here
    assert m["utilization_gpus"] == pytest.approx(1.0)


def test_a_running_job_holds_a_whole_exclusive_node():
    """What a policy sees: on an exclusive cluster a 1-core job leaves its node nothing free."""
    engine = engine_for([Job(0, 10), Job(0, 10, 1, 1, 0, 1)], exclusive=True)
    view = engine.next_decision()
    assert view.free.tolist() == mixed_cluster().capacity.tolist()
    engine.apply(Pick(0))
    view = engine.next_decision()
    assert view.free.tolist() == [[0, 0, 0], [4, 64000, 0], [4, 16000, 2]]
    assert view.free_nodes == 2
    engine.apply(Pick(1))
    assert engine.view().free.tolist() == [[0, 0, 0], [4, 64000, 0], [0, 0, 0]]


# -- memory and GPUs -------------------------------------------------------------------------------


@pytest.mark.parametrize("mem, start", [(24000, 0), (24001, 10)])
def test_memory_bound_job_only_fits_the_big_memory_node(mem, start):
    """M0 (1 x 8c/1000) fills A's cores. M1 (1 x 2c/40000) fits only B (A has 32000 MB, C
    16000), though first-available would try A first. M2 (1 x 2c/`mem`) then fits only what is
    left on B, 2 cores and 64000 - 40000 = 24000 MB: with exactly 24000 it starts at 0 beside M1
    (a request equal to the node's free vector fits); with 24001 it waits for M1 to end at 10.

            0          10        30
        A   M0 ....... M0 ...... .
        B   M1 (M2)    M2?  ..
        C   .
    """
    rows = [Job(0, 30, 1, 8, 1000), Job(0, 10, 1, 2, 40000), Job(0, 20, 1, 2, mem)]
    starts, nodes, _ = run(rows)
    assert starts == [0, 0, start]
    assert nodes == ["A", "B", "B"]


@pytest.mark.parametrize("g1_gpus, backfill, starts", [
    (2, "none", [0, 50, 50]),
    (2, "easy", [0, 50, 2]),
    (1, "none", [0, 1, 2]),
])
def test_gpu_job_waits_for_the_gpu_node(g1_gpus, backfill, starts):
    """G1 (1 x 1c/1000/`g1_gpus` GPUs, 50 s) takes C, the only GPU node. G2 (1 x 1c/1000/1 GPU)
    arrives at 1: with G1 holding both GPUs it must wait for C until 50, though A and B are idle
    and C still has 3 cores free. X (1 x 2c/1000, 100 s) arrives at 2:

            0   1   2        50        60    102
        A   .   .   X(easy) ..........................
        B   .
        C   G1  G1  G1 ..... G2 ...... .

    - none: X is behind G2 and starts with it at 50 (first-available: A).
    - easy: G2's reservation is at 50 (G1's end); X runs past it, but on A, which G2 does not
      need, so it starts at 2.
    - if G1 takes 1 GPU, G2 asks exactly the GPUs left and starts at 1 beside it on C.
    """
    rows = [Job(0, 50, 1, 1, 1000, g1_gpus), Job(1, 10, 1, 1, 1000, 1), Job(2, 100, 1, 2, 1000)]
    got_starts, nodes, engine = run(rows, backfill=backfill)
    assert got_starts == starts
    assert nodes == ["C", "C", "A"]
    if backfill == "easy":
        assert (1, 50.0) in engine.reservations


def test_a_job_needs_exactly_count_fitting_nodes():
    """J (3 x 4c/16000) fits every node only just (C has exactly 4 cores and 16000 MB): on the
    empty cluster it starts at once on all three. K (3 x 4c/16001) would not fit C: it is an
    error (see test_never_fits.py), so here K asks for 2 nodes, which A and B hold: it waits for J
    (10 s) and starts at 10 on A, B."""
    starts, nodes, _ = run([Job(0, 10, 3, 4, 16000), Job(0, 10, 2, 4, 16001)])
    assert starts == [0, 10]
    assert nodes == ["ABC", "AB"]


# -- EASY and conservative on heterogeneous nodes --------------------------------------------------


def easy_rows(e_req: int):
    return [
        Job(0, 30, 1, 4, 1000),            # RA
        Job(0, 50, 1, 1, 1000, 1),         # G1
        Job(1, 10, 1, 1, 1000, 2),         # H: both GPUs
        Job(1, 20, 1, 8, 1000),            # H2: all of A's cores
        Job(2, e_req, 1, 1, 1000, 1),      # E: one GPU, e_req seconds
        Job(3, 100, 1, 2, 2000),           # P: a CPU job that runs long
    ]


#                                RA   G1   H    H2   E    P
@pytest.mark.parametrize("backfill, e_req, starts, nodes", [
    ("easy", 48, [0, 0, 50, 103, 2, 3], "A C C A C A"),
    ("easy", 49, [0, 0, 50, 103, 60, 3], "A C C A C A"),
    ("conservative", 48, [0, 0, 50, 30, 2, 3], "A C C A C B"),
    ("conservative", 49, [0, 0, 50, 30, 60, 3], "A C C A C B"),
    ("none", 48, [0, 0, 50, 50, 60, 60], "A C C A C B"),
])
def test_reservation_on_heterogeneous_nodes(backfill, e_req, starts, nodes):
    """FCFS, first-available. RA (1 x 4c, 30 s) on A and G1 (1 x 1c/1 GPU, 50 s) on C start at 0.
    At 1 come H (1 x 1c/2 GPUs, 10 s), which must wait for G1's GPU, and H2 (1 x 8c, 20 s), which
    needs all of A. E (1 x 1c/1 GPU, `e_req` s) comes at 2, P (1 x 2c/2000, 100 s) at 3.

    EASY (e_req 48):

            0   1   2   3        30       50       60       103     123
        A   RA  RA  RA  RA+P ... P ...... P ...... P ...... H2 .... .
        B   .
        C   G1  G1  G1+E ....... G1+E ... H ...... .

    - H's reservation (the head, FCFS): releasing running jobs at their ends, C has 2 GPUs at 50
      (G1's end): shadow 50, on C.
    - E fits now (C's second GPU) and ends at 2 + 48 = 50, by the shadow: it starts at 2 on C,
      though it uses the head's node. With 49 s it would still hold a GPU at 50, and H needs both:
      it does not start; it starts at 60, when H ends (then the head is H2, reserved at 103 on A,
      and E runs on C, which H2 does not need).
    - P fits now; first-available puts it on A (4 cores free). It runs past 50, but at 50 H still
      fits on C beside it: it starts at 3.
    - H starts at 50 (G1 and E end then). H2 needs 8 cores on A: P holds 2 of them until 103,
      so H2 starts at 103. EASY protects only the head: P delayed H2 from 30 to 103.

    Conservative gives every waiting job a reservation in queue order: H [50, 60) on C, H2
    [30, 50) on A (RA ends at 30). E (48 s) fits [2, 50) on C before H's reservation: it starts
    at 2 (with 49 s it would overlap H's: its earliest slot is [60, 109) on C). P needs 2 cores
    for [3, 103): A is reserved full for H2 in [30, 50), so of the nodes that hold it throughout,
    B and C, first-available takes B. H2 starts at 30.

            0   1   2   3        30       50       60
        A   RA  RA  RA  RA ..... H2 ..... .
        B   .   .   .   P ............................. P (until 103)
        C   G1  G1  G1+E ....... G1+E ... H ...... .

    No backfilling: nothing passes H. At 50 H takes C and H2 takes A (RA ended at 30); E needs a
    GPU: at 60 (H's end) it takes C, and P, behind it, takes B (A is H2's until 70).
    """
    got_starts, got_nodes, engine = run(easy_rows(e_req), backfill=backfill)
    assert got_starts == starts
    assert got_nodes == nodes.split()
    if backfill == "easy":
        # the head's reservation, as it was made when H was first reserved, at 1
        assert engine.reservations[0] == (2, 50.0)
        assert all(start <= shadow for row, shadow in engine.reservations
                   for start in [got_starts[row]])


@pytest.mark.parametrize("backfill", ["easy", "conservative"])
def test_backfill_shares_the_heads_node_when_the_head_still_fits(backfill):
    """The head's reservation holds per resource, not per node: a job may run past the shadow on
    the head's own node if what it leaves there still holds the head. FCFS, first-available.
    RA (1 x 8c, 100 s) fills A, RB (1 x 4c, 100 s) fills B, G1 (1 x 1c/1000/1 GPU, 50 s) is on C.
    H (1 x 1c/4000/2 GPUs, 10 s) comes at 1: shadow 50 on C (G1's end), where it needs 1 core,
    4000 MB, 2 GPUs.

            0   1   2        50       60       100      102     160
        A   RA ............................... .
        B   RB ............................... .
        C   G1  G1  G1+Q ... H+Q .... Q+Q2 ............ Q2 .... .

    At 2, Q (1 x 2c/2000, 100 s) fits only on C and runs past 50; at 50 C would have 4 - 2 = 2
    cores, 14000 MB and 2 GPUs: H still fits -> Q starts at 2. Q2 (1 x 1c/12000, 100 s) fits C
    now (1 core, 13000 MB left) but at 50 would leave 2000 MB, less than H's 4000: it does not
    start. H starts at 50; Q2 then waits for H's end at 60 (C has 10000 MB beside H).
    Conservative plans the same (H [50, 60) on C; Q fits [2, 102) on C beside it; Q2's first slot
    is after H, at 60)."""
    rows = [Job(0, 100, 1, 8, 1000), Job(0, 100, 1, 4, 1000), Job(0, 50, 1, 1, 1000, 1),
            Job(1, 10, 1, 1, 4000, 2), Job(2, 100, 1, 2, 2000), Job(2, 100, 1, 1, 12000)]
    starts, nodes, _ = run(rows, backfill=backfill)
    assert starts == [0, 0, 0, 50, 2, 60]
    assert nodes == ["A", "B", "C", "C", "C", "C"]


@pytest.mark.parametrize("h_cores, p_start", [(6, 2), (7, 40)])
def test_every_job_ending_at_the_shadow_gives_its_share_back(h_cores, p_start):
    """EASY, FCFS, first-available. RA (1 x 4c) and RA2 (1 x 2c) share A, both until 30; RB
    (1 x 4c/40000: only B holds it) and RC (1 x 4c/1000/1 GPU: only C) fill B and C until 100.
    H (1 x `h_cores` cores, 10 s) comes at 1: only A can hold it; releasing RA alone at 30 would
    give A 6 cores, but RA2 ends at the same instant, so at the shadow (30) A has all 8.

            0    2        30         40
        A   RA+RA2 (+P) . H (+P) ... .  (P: until 102)
        B   RB .................................. (until 100)
        C   RC .................................. (until 100)

    P (1 x 2c, 100 s) comes at 2 and fits only A (2 cores left); it runs past 30, leaving A
    8 - 2 = 6 cores then. With H asking 6, exactly that, P starts at 2 and H at 30 beside it.
    With H asking 7, P would delay H: it waits; H starts at 30, and P at H's end, 40."""
    rows = [Job(0, 30, 1, 4), Job(0, 30, 1, 2), Job(0, 100, 1, 4, 40000),
            Job(0, 100, 1, 4, 1000, 1), Job(1, 10, 1, h_cores), Job(2, 100, 1, 2)]
    starts, nodes, engine = run(rows, backfill="easy")
    assert starts == [0, 0, 0, 0, 30, p_start]
    assert nodes == ["A", "A", "B", "C", "A", "A"]
    assert engine.reservations[0] == (4, 30.0)


def test_easy_counts_every_job_that_runs_past_the_shadow():
    """EASY, FCFS, first-available. RA (1 x 4c, 30 s) on A; RB (1 x 4c/40000) on B and RC
    (1 x 4c/1000/1 GPU) on C until 100. H (1 x 6c, 10 s) at 1: shadow 30 on A (8 cores).
    P1 and P2 (1 x 2c, 100 s each) at 2 both fit A now (4 cores free) and run past 30. Each
    alone would leave A 6 cores at 30, enough for H; both would leave 4. P1 starts; P2 does
    not (what P1 holds at the shadow counts against it). H starts at 30; P2 at 40 (H's end).

            0    2          30        40
        A   RA+P1 ........  H+P1 .... P1+P2 ..
        B   RB .................................. (until 100)
        C   RC .................................. (until 100)
    """
    rows = [Job(0, 30, 1, 4), Job(0, 100, 1, 4, 40000), Job(0, 100, 1, 4, 1000, 1),
            Job(1, 10, 1, 6), Job(2, 100, 1, 2), Job(2, 100, 1, 2)]
    starts, nodes, _ = run(rows, backfill="easy")
    assert starts == [0, 0, 0, 30, 2, 40]
    assert nodes == ["A", "B", "C", "A", "A", "A"]


def test_easy_counts_every_node_the_head_loses():
    """EASY, FCFS, first-available; the head needs two nodes. RA (1 x 8c) fills A, RB and RC
    (1 x 3c each) leave B and C one core each, all until 30. H (2 x 4c, 10 s) comes at 1: at 30
    all three nodes can hold its share: shadow 30, with one node to spare. P1 and P2 (1 x 1c,
    100 s) come at 2. P1 fits B (first-available) and runs past 30, leaving B 3 cores: B is lost
    to H, but A and C are left: it starts. P2 then fits only C: it would take C too, leaving H
    one node at 30: it does not start. At 30 H takes A and C; P2 then takes A's spare cores.

            0    2          30         40
        A   RA ............ H+P2 ..... P2 .....
        B   RB+P1 ......... P1 ................ (P1 until 102)
        C   RC ............ H ........ .
    """
    rows = [Job(0, 30, 1, 8), Job(0, 30, 1, 3), Job(0, 30, 1, 3),
            Job(1, 10, 2, 4), Job(2, 100, 1, 1), Job(2, 100, 1, 1)]
    starts, nodes, engine = run(rows, backfill="easy")
    assert starts == [0, 0, 0, 30, 2, 30]
    assert nodes == ["A", "B", "C", "AC", "B", "A"]
    assert engine.reservations[0] == (3, 30.0)


# -- decisions: Start on given nodes, Wait(until), Reserve -----------------------------------------


def engine_for(rows, backfill="none", **cluster_kw):
    return make_engine(table(rows), mixed_cluster(**cluster_kw), "standard", backfill,
                       allocator="first-available")


def test_start_on_given_nodes():
    """Start(row, nodes) puts a job where it is told, in that order, not where the allocator
    would (first-available would give S0 node A and S1 A, B):

            0
        A   S1
        B   .
        C   S0+S1     (S0 2c + S1 2c = C's 4 cores exactly)
    """
    engine = engine_for([Job(0, 10, 1, 2, 2000), Job(0, 10, 2, 2, 2000)])
    view = engine.next_decision()
    assert view.now == 0 and view.queue.tolist() == [0, 1]
    engine.apply(Start(0, nodes=(C,)))
    view = engine.next_decision()
    assert view.queue.tolist() == [1]
    engine.apply(Start(1, nodes=(C, A)))
    assert engine.next_decision() is None
    result = engine.result()
    assert result.start.tolist() == [0, 0]
    assert [a.tolist() for a in result.allocations] == [[C], [C, A]]
    assert result.records()["nodes"].tolist() == ["C", "C A"]


@pytest.mark.parametrize("job, nodes, message", [
    (Job(0, 10, 1, 1, 1000, 1), (A,), r"does not fit on node A"),        # no GPU on A
    (Job(0, 10, 1, 1, 1000, 1), (B,), r"does not fit on node B"),        # nor on B
    (Job(0, 10, 1, 1, 40000), (A,), r"does not fit on node A"),          # 32000 MB < 40000
    (Job(0, 10, 1, 1, 40000), (C,), r"does not fit on node C"),          # 16000 MB
    (Job(0, 10, 1, 5), (C,), r"does not fit on node C"),                 # 4 cores < 5
    (Job(0, 10, 1, 1), (A, B), r"asks for 1 node\(s\); the allocation names 2"),
    (Job(0, 10, 2, 1), (A, A), r"names a node twice"),
    (Job(0, 10, 1, 1), (3,), r"node indices must be in 0\.\.2"),
])
def test_start_on_nodes_that_lack_the_request_is_an_error(job, nodes, message):
    """A Start on nodes that cannot take the request is refused with the node named, and the
    engine is unchanged: a valid decision afterwards works as if the bad one never came."""
    engine = engine_for([job])
    engine.next_decision()
    with pytest.raises(ValueError, match=message):
        engine.apply(Start(0, nodes=nodes))
    assert engine.res.free_matrix.tolist() == mixed_cluster().capacity.tolist()
    engine.apply(Pick(0))
    assert engine.next_decision() is None
    result = engine.result()
    assert result.start.tolist() == [0]


def test_start_on_a_busy_exclusive_node_is_an_error():
    """On an exclusive cluster a node running anything takes no other job, even one that would
    fit beside it: S0 (1 x 1c) is on A; S1 (1 x 1c) cannot start on A, but can on B."""
    engine = engine_for([Job(0, 10), Job(0, 10)], exclusive=True)
    engine.next_decision()
    engine.apply(Start(0, nodes=(A,)))
    engine.next_decision()
    with pytest.raises(ValueError, match=r"does not fit on node A.*exclusive"):
        engine.apply(Start(1, nodes=(A,)))
    engine.apply(Start(1, nodes=(B,)))
    assert engine.next_decision() is None
    assert [a.tolist() for a in engine.result().allocations] == [[A], [B]]


def test_start_of_a_job_that_does_not_fit_now_is_an_error():
    """S1 (1 x 1c/1 GPU) cannot start while S0 holds both GPUs, wherever it is put."""
    engine = engine_for([Job(0, 10, 1, 1, 0, 2), Job(0, 10, 1, 1, 0, 1)])
    engine.next_decision()
    engine.apply(Pick(0))
    engine.next_decision()
    with pytest.raises(ValueError, match="does not fit now"):
        engine.apply(Start(1))
    with pytest.raises(ValueError, match="does not fit"):
        engine.apply(Start(1, nodes=(C,)))


def test_wait_until_wakes_the_engine_then():
    """Wait(until) ends the pass and asks to be woken at `until` even if nothing happens then.
    W0 (1 x 1c) comes at 0, W1 (1 x 1c) at 3; nothing runs. Decisions:

        t=0   Wait(until=7)      -> the next decision is at W1's arrival, 3 (an event comes first)
        t=3   Wait()             -> the next event is the wake-up asked for: 7
        t=7   Pick(0), Pick(1)   -> both start at 7

    and a Wait(until) in the past or now wakes nobody: with nothing else to come, the run ends."""
    engine = engine_for([Job(0, 5), Job(3, 5)])
    times = []
    view = engine.next_decision()
    times.append(view.now)
    engine.apply(Wait(until=7))
    view = engine.next_decision()
    times.append(view.now)
    assert view.queue.tolist() == [0, 1]
    engine.apply(Wait())
    view = engine.next_decision()
    times.append(view.now)
    engine.apply(Pick(0))
    engine.apply(Pick(1))
    assert times == [0, 3, 7]
    assert engine.next_decision() is None
    assert engine.result().start.tolist() == [7, 7]

    engine = engine_for([Job(0, 5)])
    engine.next_decision()
    engine.apply(Wait(until=0))
    assert engine.next_decision() is None  # nothing running, nothing to arrive, no wake-up


def test_wait_until_in_a_run_policy():
    """The same through `Engine.run`: a policy that waits once, until 4, then picks."""

    class WaitOnce:
        name = "wait-once"

        def __init__(self):
            self.waited = False

        def decide(self, view):
            if not self.waited:
                self.waited = True
                return Wait(until=view.now + 4)
            return Pick(int(view.queue[0]))

    result = engine_for([Job(1, 5)]).run(WaitOnce())
    assert result.start.tolist() == [5]


def reserve_engine():
    """RA (1 x 4c, 30 s), RB and RC (1 x 4c, 100 s each) at 0; at 1: H2 (1 x 8c, 20 s), S (1 x 2c,
    40 s), T (1 x 2c, 29 s). EASY, first-available."""
    return engine_for([Job(0, 30, 1, 4), Job(0, 100, 1, 4), Job(0, 100, 1, 4),
                       Job(1, 20, 1, 8), Job(1, 40, 1, 2), Job(1, 29, 1, 2)], backfill="easy")


def place_ra_rb_rc(engine):
    """The first pass, by hand: RA on A, RB on B, RC on C (so only A has room left)."""
    view = engine.next_decision()
    assert view.now == 0 and view.queue.tolist() == [0, 1, 2]
    for row, node in [(0, A), (1, B), (2, C)]:
        engine.apply(Start(row, nodes=(node,)))
        view = engine.next_decision()
    return view


def test_reserve_protects_the_job_named():
    """Reserve(row) gives that job the backfilling's reservation, whatever the queue order; a job
    that fits starts at once (mode RESERVED).

            0    1             30        50        90
        A   RA   RA+T ........ H2 ...... S ....... .
        B   RB ...................................... (until 100)
        C   RC ...................................... (until 100)

    At 1 the queue is H2, S, T, and the decision is Reserve(H2): its shadow is 30 (RA's end gives A
    its 8 cores). S fits only on A (4 cores free; B and C are full) and would run to 41, leaving A
    6 cores at 30: it does not start. T ends at 1 + 29 = 30, by the shadow: it starts
    (backfilled) at 1 on A. The pass ends there: the next decision is at 30 (RA and T end), where
    Reserve(H2) starts H2 at once (it fits). Pick(S) then does not fit (A is H2's, B and C are
    full): S is reserved, at 50 (H2's end), and starts then on A."""
    engine = reserve_engine()
    view = place_ra_rb_rc(engine)
    assert view.now == 1 and view.queue.tolist() == [3, 4, 5]
    engine.apply(Reserve(3))
    assert engine.reservations == [(3, 30.0)]
    view = engine.next_decision()
    assert view.now == 30 and view.queue.tolist() == [3, 4]
    engine.apply(Reserve(3))
    view = engine.next_decision()
    assert view.now == 30 and view.queue.tolist() == [4]
    engine.apply(Pick(4))
    assert engine.reservations[-1] == (4, 50.0)
    view = engine.next_decision()
    assert view.now == 50 and view.queue.tolist() == [4]
    engine.apply(Pick(4))
    assert engine.next_decision() is None
    result = engine.result()
    assert result.start.tolist() == [0, 0, 0, 30, 50, 1]
    assert [a.tolist() for a in result.allocations] == [[A], [B], [C], [A], [A], [A]]
    assert engine.mode.tolist() == [READY, READY, READY, RESERVED, READY, BACKFILLED]


def test_pick_of_a_job_that_does_not_fit_reserves_it():
    """Pick(row) of a job that does not fit is the same as Reserve(row) (the pass loop's rule):
    Pick(H2) at 1 gives the same reservation, and T is backfilled the same way."""
    engine = reserve_engine()
    place_ra_rb_rc(engine)
    engine.apply(Pick(3))
    assert engine.reservations == [(3, 30.0)]
    view = engine.next_decision()
    assert view.now == 30
    assert np.isnan(view.start_time[4]) and view.start_time[5] == 1
    assert engine.mode[5] == BACKFILLED


def test_easy_candidate_may_use_a_node_the_head_does_not_need():
    """First-available. RA (1 x 4c, 30 s) on A; at 1 H2 (1 x 8c, 20 s: only A can hold it,
    shadow 30) and S (1 x 2c, 40 s). First-available puts S on A (cluster order), where it would
    hold 2 of H2's cores past 30. B and C are idle throughout and hold S without touching A, so
    the allocator chooses again among them, and S starts at 1 on B (first-available).

            0    1         30        50
        A   RA   RA ...... H2 ...... .
        B   .    S? ......................
        C   .
    """
    rows = [Job(0, 30, 1, 4), Job(1, 20, 1, 8), Job(1, 40, 1, 2)]
    starts, nodes, _ = run(rows, backfill="easy")
    assert starts[:2] == [0, 30] and nodes[:2] == ["A", "A"]
    assert (starts[2], nodes[2]) == (1, "B")
