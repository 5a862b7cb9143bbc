"""The cqsim profile against CQSim's own code (SPEAR-UIC/CQSim, run unmodified; tests/data/README.md
says how each reference was made):

- every job's start time on every reference case, FCFS with EASY and with conservative
  backfilling, by `hpcsched simulate SLICE --profile cqsim` on the slice file alone;
- small workloads, each isolating one rule of CQSim's that a schedule depends on, with the start
  times CQSim itself gives them, so that changing one rule fails a test that names it.

DRAS's semantics (the `dras` profile) are tested in `test_dras_profile.py`.
"""

import csv
import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from hpcsched.cli import main
from hpcsched.cluster.pool import NodePool
from hpcsched.policies.priority import get_policy
from hpcsched.sim.factory import make_engine
from hpcsched.sim.run import prepare, simulate
from hpcsched.workload.cleaning import clean
from hpcsched.workload.jobs import JobTable
from hpcsched.workload.traces import trace_path

DATA = Path(__file__).parents[1] / "data"
SMALL = json.loads((DATA / "cqsim_small.json").read_text())["cases"]
MORE = json.loads(gzip.decompress((DATA / "cqsim_more.json.gz").read_bytes()))["cases"]
TINY = json.loads((DATA / "cqsim_tiny.json").read_text())["cases"]

# the bundled RICC holds the trace's first 8 weeks (its first 86,643 job lines), header included
BUNDLED = {"RICC-2010-2.swf.gz": ("ricc", 86_643)}


def write_slice(case: dict, dest: Path) -> Path:
    """The slice CQSim was given: the trace's header lines, then its job lines [start, start + jobs)
    (0-based over job lines). Slices of traces the package does not bundle are stored whole."""
    trace, start, n = case["trace"], case["start"], case["jobs"]
    stored = DATA / "cqsim_slices" / f"{trace.split('.')[0]}_{start}_{n}.swf.gz"
    if stored.exists():
        dest.write_bytes(gzip.decompress(stored.read_bytes()))
        return dest
    name, lines = BUNDLED.get(trace, (trace, None))
    assert lines is None or start + n <= lines, f"{trace}: the bundled copy ends before this slice"
    header, jobs = [], []
    with gzip.open(trace_path(name), "rt") as f:
        for line in f:
            if line.startswith(";"):
                if not jobs:
                    header.append(line)
                continue
            jobs.append(line)
            if len(jobs) == start + n:
                break
    dest.write_text("".join(header + jobs[start:]))
    return dest


def schedule_by_cli(capsys, path: Path, backfill: str, records: Path) -> dict[str, float]:
    """job id -> start time, as `hpcsched simulate --records` writes them."""
    code = main(["simulate", str(path), "--profile", "cqsim", "--policy", "fcfs",
                 "--backfill", backfill, "--records", str(records)])
    capsys.readouterr()
    assert code == 0
    with open(records, newline="") as f:
        return {row["job_id"]: float(row["start"]) for row in csv.DictReader(f)}


@pytest.mark.parametrize("name", list(SMALL) + list(MORE))
def test_matches_cqsim(name, tmp_path, capsys):
    case = SMALL.get(name) or MORE[name]
    starts = schedule_by_cli(capsys, write_slice(case, tmp_path / "slice.swf"), case["backfill"],
                             tmp_path / "jobs.csv")
    ours = {job: s - case["first_submit"] for job, s in starts.items()}
    assert ours.keys() == case["starts"].keys()  # the same jobs kept by the cleaning
    wrong = sorted((job for job in ours if ours[job] != case["starts"][job]),
                   key=lambda job: case["starts"][job])
    assert not wrong, (f"{len(wrong)} of {len(ours)} start times differ; first: job {wrong[0]}, "
                       f"CQSim {case['starts'][wrong[0]]}, ours {ours[wrong[0]]}")


def table(rows):
    """rows: (submit, run, processors, request)."""
    return JobTable.from_columns(job_id=list(range(1, len(rows) + 1)),
                                 submit=[r[0] for r in rows], run_time=[r[1] for r in rows],
                                 req_procs=[r[2] for r in rows], alloc_procs=[r[2] for r in rows],
                                 req_time=[r[3] for r in rows], user=[1] * len(rows))


def starts(rows, nodes, backfill="easy", profile="cqsim"):
    engine = make_engine(table(rows), NodePool(nodes), profile, backfill)
    return engine.run(get_policy("fcfs")).start.tolist()


@pytest.mark.parametrize("i", range(len(TINY)))
def test_random_small_workloads_match_cqsim(i):
    case = TINY[i]
    rows = [tuple(r) for r in case["rows"]]
    assert starts(rows, case["nodes"], case["backfill"]) == case["starts"], rows


# Each of the following schedules is CQSim's own (checked by running it), and each breaks when one
# of its rules is changed. Rows are (submit, run, processors, request); FCFS.

def test_backfilling_plans_with_the_logged_run_time():
    # 6 nodes. At 5, job 2 (6 nodes) waits for job 1 (ends at 10) and is reserved [10, 12) with
    # its run time (its request, 7, would reserve [10, 17)). Job 3 (4 nodes) runs 3 s but asks for
    # 8: planned with its run time, [5, 8) ends before the reservation, so it starts at 5; planned
    # with its request, [5, 13) would overlap it, and it would wait until 12.
    rows = [(0, 10, 2, 10), (5, 2, 6, 7), (5, 3, 4, 8)]
    assert starts(rows, 6) == [0, 10, 5]


def test_a_pass_after_every_event_not_once_per_instant():
    # 5 nodes. Jobs 1 and 2 run [5, 8); job 2 asks for 4 s, so the plan ends it at 9. At 6 jobs 3
    # (5 nodes) and 4 (2 nodes, 1 s) wait. At 8 the two completions are separate events. After
    # job 1's, 2 nodes are free: job 3 does not fit and is reserved at 9 (job 2's planned end),
    # and job 4 ([8, 9)) ends by then: it starts at 8. After job 2's, job 3 still does not fit
    # (job 4 holds 2 nodes) and starts at 9. One pass after both completions would start job 3 at
    # 8 and job 4 at 9.
    rows = [(5, 3, 2, 3), (5, 3, 3, 4), (6, 1, 5, 2), (6, 1, 2, 2)]
    assert starts(rows, 5) == [5, 5, 9, 8]


def test_completions_of_an_instant_go_before_its_arrivals():
    # 4 nodes. Job 1 (1 node) runs [0, 2); job 2 (4 nodes) waits for it and starts at 2, the
    # instant job 3 (1 node) arrives. The completion is processed first: job 2 starts, and job 3
    # waits for it (until 5). Arrival first, job 3 would be backfilled at 2 ([2, 4) ends before
    # job 1's planned end at 7) and job 2 would wait until 4.
    rows = [(0, 2, 1, 7), (1, 3, 4, 8), (2, 2, 1, 3)]
    assert starts(rows, 4) == [0, 2, 5]


def test_completions_of_an_instant_go_in_the_order_their_jobs_started():
    # 6 nodes. Job 6 (1 node) is backfilled at 9 and job 2 (5 nodes) starts at 10; both end at 11.
    # Job 4 (6 nodes) waits, reserved at 16 (both jobs' requests end then), and so does job 5
    # (5 nodes, 2 s). CQSim processes the completion of the job that started first first: after
    # job 6's, 1 node is free and nothing starts; after job 2's, job 4 starts at 11 and job 5
    # waits until 16. In row order job 2's completion would come first, leaving 5 nodes: job 5
    # ([11, 13)) would be backfilled before job 4's reservation, and job 4 would wait until 13.
    rows = [(5, 5, 5, 5), (6, 1, 5, 6), (6, 1, 1, 1), (7, 5, 6, 6), (9, 2, 5, 3), (9, 2, 1, 7)]
    assert starts(rows, 6) == [5, 10, 6, 11, 16, 9]


def test_a_job_ending_at_this_instant_frees_its_nodes_now_in_the_plan():
    # 6 nodes. At 10 jobs 1 and 4 (backfilled at 9) both end. Job 1's completion is processed
    # first, and in its pass job 4, whose request also ends at 10, is still running: its end is a
    # second breakpoint at 10 (CQSim never merges it with the breakpoint for now). Job 2 (6 nodes)
    # is reserved from it, at 10, which leaves no room at that breakpoint for job 3 ([10, 11) on
    # 3 nodes): job 2 starts at 10 after job 4's completion, job 3 at 12. Were job 4 planned to
    # end a second later, job 2 would be reserved at 11 and job 3 backfilled at 10.
    rows = [(0, 10, 4, 15), (2, 2, 6, 3), (7, 1, 3, 6), (9, 1, 1, 1)]
    assert starts(rows, 6) == [0, 10, 12, 9]


def test_a_candidate_may_end_exactly_when_the_reservation_starts():
    # 3 nodes, all at 5: job 1 [5, 6) on 2 nodes, job 3 (1 node) on the third; job 2 (3 nodes)
    # waits, reserved at 6. Job 3 [5, 6) ends exactly at the reservation: the breakpoints CQSim
    # checks are those in [now, now + run), so the reservation's own breakpoint at 6 is not one.
    rows = [(5, 1, 2, 1), (5, 2, 3, 2), (5, 1, 1, 1)]
    assert starts(rows, 3) == [5, 6, 5]


def test_processors_are_nodes(tmp_path):
    # RICC's header shape: 2 nodes of 4 processors. CQSim models MaxProcs single-processor nodes,
    # so jobs of 3 and 5 processors run together; two whole nodes of 4 would not hold both.
    path = tmp_path / "t.swf"
    path.write_text("; MaxNodes: 2\n; MaxProcs: 8\n"
                    "1 0 -1 10 3 -1 -1 3 10 -1 1 1 1 -1 -1 -1 -1 -1\n"
                    "2 0 -1 10 5 -1 -1 5 10 -1 1 1 1 -1 -1 -1 -1 -1\n")
    prepared = prepare(str(path), "cqsim")
    assert prepared.cluster == NodePool(8, 1)
    assert simulate(prepared, get_policy("fcfs"), backfill="easy").start.tolist() == [0, 0]
    dras = prepare(str(path), "dras")
    assert dras.cluster == NodePool(2, 4)
    assert simulate(dras, get_policy("fcfs"), backfill="easy").start.tolist() == [0, 10]


def test_a_header_without_maxprocs_is_refused(tmp_path):
    path = tmp_path / "t.swf"
    path.write_text("; MaxNodes: 2\n1 0 -1 10 3 -1 -1 3 10 -1 1 1 1 -1 -1 -1 -1 -1\n")
    with pytest.raises(ValueError, match="no MaxProcs.*--nodes"):
        prepare(str(path), "cqsim")
    assert prepare(str(path), "cqsim", nodes=4).cluster == NodePool(4, 1)


def test_cqsims_filter():
    # CQSim reads the requested processors only (job 2 asks for none: dropped, whatever it was
    # allocated) and compares whole seconds (int()): job 3's 10.5 s run is not longer than its
    # 10.2 s request, so it is kept as it is; job 4's 12 s run is clamped to its 11 s request; job
    # 5's 0.5 s run is not positive; job 6's submit time -0.5 is not negative.
    raw = JobTable.from_columns(
        job_id=[1, 2, 3, 4, 5, 6], submit=[0, 1, 2, 3, 4, -0.5],
        run_time=[10, 10, 10.5, 12, 0.5, 10], req_time=[20, 20, 10.2, 11, 20, 20],
        req_procs=[1, -1, 1, 3, 1, 1], alloc_procs=[2, 4, 1, 3, 1, 1])
    jobs, report = clean(raw, "cqsim")
    assert jobs.job_id.tolist() == [6, 1, 3, 4]
    assert jobs.procs.tolist() == [1, 1, 1, 3]  # job 1 asked for 1 and was given 2
    assert jobs.run_time.tolist() == [10, 10, 10.5, 11]
    assert report.dropped == {"run time not positive": 1, "requested processors not positive": 1}
    assert report.changed == {"procs = requested": 1, "run time clamped to the request": 1,
                              "reordered by submit time": 4}


# Conservative backfilling (CQSim's `backfill_cons`): at every pass the plan is built anew, every
# waiting job reserved in queue order at its earliest place, planned with its run time.

def test_conservative_reserves_every_waiting_job():
    # 4 nodes. Job 1 runs [0, 10) on 2 nodes; job 2 (3 nodes) is reserved [10, 15), which leaves
    # 1 node; job 3 (4 nodes) is reserved after it, [15, 25). Job 4 (1 node, 13 s) arrives at 3:
    # [3, 16) fits around job 2's reservation but not job 3's, so conservative backfilling keeps
    # it waiting (until 25), while EASY, which protects job 2 only, starts it at 3 and job 3 then
    # waits for it (until 16).
    rows = [(0, 10, 2, 10), (1, 5, 3, 5), (2, 10, 4, 10), (3, 13, 1, 13)]
    assert starts(rows, 4, "conservative") == [0, 10, 15, 25]
    assert starts(rows, 4, "easy") == [0, 10, 16, 3]


def test_conservative_plans_anew_at_every_pass():
    # 4 nodes. Jobs 1 (requests 100 s, runs 10) and 2 start at 0. At 2 job 3 (4 nodes) is reserved
    # at 100 (job 1's request) and job 4 (2 nodes, 45 s) at 50, when job 2 ends. Job 1 ends at
    # 10: the new plan reserves job 3 at 50 and job 4 after it, at 60. CQSim does not keep the
    # earlier reservation at 50: job 4 starts at 60.
    rows = [(0, 10, 2, 100), (0, 50, 2, 50), (1, 10, 4, 10), (2, 45, 2, 45)]
    assert starts(rows, 4, "conservative") == [0, 0, 50, 60]


def test_agents_cannot_order_conservative_backfilling():
    with pytest.raises(ValueError, match="use --backfill easy"):
        make_engine(table([(0, 1, 1, 1)]), NodePool(2), "cqsim", "conservative",
                    backfill_decisions=True)


@pytest.mark.parametrize("backfill", ["easy", "conservative"])
def test_a_job_outliving_its_request_by_less_than_a_second_never_oversubscribes(backfill):
    # CQSim's filter compares whole seconds, so a 3.5 s run with a 3 s request is kept as it is:
    # the job is still running when its request ends, and the plans of the passes in that half
    # second have breakpoints before now, which CQSim's rules skip. (CQSim itself fails on such
    # workloads: it can start a job without nodes and then cannot free them.) Ours must still never
    # run more than the machine.
    rng = np.random.default_rng(5)
    overdue = 0
    for _ in range(60):
        nodes = int(rng.integers(2, 9))
        rows, submit = [], 0.0
        for _ in range(int(rng.integers(5, 15))):
            submit += float(rng.choice([0, 0, 1, 2, 3, 7]))
            run = float(rng.choice([1, 2, 3, 4, 6, 10]))
            req = run + float(rng.choice([0, 0, 1, 3]))
            run += 0.5 if run == req and rng.random() < 0.4 else 0.0
            rows.append((submit, run, int(rng.integers(1, nodes + 1)), req))
        engine = make_engine(table(rows), NodePool(nodes), "cqsim", backfill)
        plan = engine.loop._begin_backfill

        def counted(plan=plan, loop=engine.loop):
            nonlocal overdue
            plan()
            overdue += loop._overdue

        engine.loop._begin_backfill = counted
        res = engine.run(get_policy("fcfs"))
        need = np.array([r[2] for r in rows])
        assert np.all(np.isfinite(res.start))
        for t in np.unique(res.start):
            assert need[(res.start <= t) & (res.start + res.executed > t)].sum() <= nodes, rows
    assert overdue > 0  # the case this test is about did occur
