"""The DBF experiments (thesis Ch. 3, Fig. 3.4-3.7): the episode every method is scored on, the
test starts, the invisible jobs, the job types, the rows and the thesis's claims."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hpcsched.cli import main
from hpcsched.envs.dbf import DBFEnv, split_window
from hpcsched.experiments import dbf
from hpcsched.experiments import dbf_window as dw
from hpcsched.sim.decisions import Start, Wait
from hpcsched.sim.run import as_prepared, simulate
from hpcsched.workload.jobs import JobTable

KEYS = ("jobs", "wait", "bsld", "utilization", "queue_length", "job_load", "placed")


def rule(rows: np.ndarray, fits: np.ndarray, cores: np.ndarray, window: int) -> int:
    """A fixed action rule both paths can play: decline when the number of jobs that fit is 2
    mod 3 (schedule cycling: Fwd with a job that fits), else start the widest job that fits (the
    first such slot), else Fwd."""
    valid = np.flatnonzero(fits)
    if valid.size == 0 or valid.size % 3 == 2:
        return window
    return int(valid[np.argmax(cores[rows[valid]])])


class RulePolicy:
    """`rule` as an engine Policy, seeing the queue through the same split window."""

    name = "rule"

    def __init__(self, window: int, tail: int) -> None:
        self.window, self.tail = window, tail

    def decide(self, view):
        rows = split_window(view.queue, self.window, self.tail)
        shown = rows >= 0
        fits = np.zeros(self.window, dtype=bool)
        fits[shown] = view.nodes_needed[rows[shown]] <= view.free_nodes
        a = rule(rows, fits, view.jobs.procs, self.window)
        return Wait() if a == self.window else Start(int(rows[a]))


@pytest.mark.parametrize("start,window,tail", [(8000, 8, 2), (8400, 16, 0), (8800, 4, 4)])
def test_episode_cut_equals_the_dbf_env(start, window, tail):
    """The engine stepped to the N-th start and cut by interval_metrics gives exactly the
    numbers the DBF environment reports for the same episode played by the same rule."""
    env = DBFEnv("lublin-1", window=window, tail=tail, episode_jobs=150)
    obs, info = env.reset(options={"start": start})
    cores = env.engine.jobs.procs
    steps = 0
    while True:
        obs, reward, done, _, info = env.step(rule(env.rows, env.valid, cores, window))
        steps += 1
        if done:
            break
    ours = dbf.run_episode(env.prepared, RulePolicy(window, tail), start,
                           episode_jobs=150).metrics()
    assert info["metrics"]["placed"] == 150
    for k in KEYS:
        assert ours[k] == info["metrics"][k], k
    assert steps > 150  # some Fwd steps: the rule declined jobs that fit, and waited


def test_a_heuristic_episode_is_the_prefix_of_its_whole_run():
    """Stopping at the 1,000th start changes no start before it (the policy sees no future)."""
    prepared = as_prepared("lublin-1", "standard")
    from hpcsched.policies.priority import get_policy

    for backfill in ("none", "easy"):
        ep = dbf.run_episode(prepared, get_policy("fcfs"), 8100, backfill=backfill)
        full = simulate(prepared, get_policy("fcfs"), backfill=backfill, start=8100,
                        jobs=len(ep.jobs))
        placed = np.isfinite(ep.start_time)
        assert placed.sum() == 1000 == ep.placed
        np.testing.assert_array_equal(ep.start_time[placed], full.start[placed])
        assert ep.t1 == np.max(ep.start_time[placed])
        assert np.sum(full.start < ep.t1) <= 1000  # nothing the cut left out started earlier


def test_test_starts_are_fixed_and_disjoint_from_training():
    from hpcsched.workload.windows import dbf_start_range, dbf_starts

    n = 10000
    starts = dbf.test_starts(n, 100)
    assert starts == dbf.test_starts(n, 100) == dbf_starts(n, "test", 100)  # the learner's split
    assert len(set(starts)) == 100
    train_hi = dbf_start_range(n, "train")[1]
    val_lo, val_hi = dbf_start_range(n, "validation")
    # a training or validation episode places its 1,000 jobs and leaves at most a few dozen
    # waiting (the split's gap: a fifth of an episode) before any test episode's first job
    assert train_hi + 1200 <= val_lo and val_hi + 1200 <= min(starts)
    assert max(starts) + 1000 <= n
    assert len(set(dbf.test_starts(n, 1000))) == 1000  # Fig. 3.7's 1,000 episodes fit
    with pytest.raises(ValueError, match="at least 1"):
        dbf.test_starts(n, 0)
    with pytest.raises(ValueError, match="too short"):
        dbf.test_starts(1100, 10)


def test_invisible_jobs_on_a_hand_built_queue():
    # A arrives at 0 and starts then, B waits to 10 and runs 5 s, C never starts, D arrives at
    # 5 and starts at 15; the queue is taken as each cycle opens, before its starts
    submit = np.array([0.0, 0.0, 0.0, 5.0])
    start = np.array([0.0, 10.0, np.nan, 15.0])
    executed = np.array([10.0, 5.0, 1.0, 1.0])
    lengths = dw.queue_lengths_at(submit, start, executed, 0.0, 15.0)
    # cycles at 0 (A, B, C), 5 (arrival: B, C, D), 10 (A ends: B, C, D), 15 (B ends: C, D)
    np.testing.assert_array_equal(lengths, [3, 3, 3, 2])
    assert dw.visibility(lengths, 2) == (3.0, 3, 4)
    assert dw.visibility_means([dw.visibility(lengths, 2), (1.0, 1, 4)]) == {
        "invisible": 0.5, "partial": 0.5, "cycles": 8}
    assert dw.visibility(lengths, 3) == (0.0, 0, 4)
    assert dw.visibility(lengths, 1) == (7.0, 4, 4)
    # an instant where nothing waits is no cycle: one job, started on arrival, ends at 5
    assert dw.queue_lengths_at(np.array([0.0]), np.array([0.0]), np.array([5.0]), 0.0,
                               9.0).tolist() == [1]


def test_job_type_classes_on_a_hand_case():
    cores, times = dw.job_classes(np.array([1, 2, 8, 9, 128, 129, 256]),
                                  np.array([60, 61, 600, 3600, 3601, 43200, 43201]))
    assert cores.tolist() == [0, 1, 1, 2, 4, 5, 5]
    assert times.tolist() == [0, 1, 1, 2, 3, 4, 5]
    assert dw.CORE_LABELS[5] == ">128" and dw.TIME_LABELS[5] == ">12h"
    jobs = JobTable.from_columns(submit=np.array([0.0, 0.0, 1.0, 2.0, 50.0]),
                                 run_time=np.full(5, 10.0),
                                 req_procs=np.array([1, 1, 200, 200, 1]),
                                 req_time=np.array([30.0, 30.0, 7200.0, 7200.0, 30.0]))
    ep = dbf.Episode(0, jobs, np.array([0.0, 4.0, 9.0, np.nan, np.nan]), np.full(5, 10.0),
                     0.0, 9.0, 256, 3)
    counts = dw.job_type_counts(ep)
    assert counts["arrived"][0][0] == 2 and counts["placed"][0][0] == 2
    assert counts["wait"][0][0] == 4.0
    assert counts["arrived"][5][3] == 2 and counts["placed"][5][3] == 1  # the 5th: after t1
    assert counts["wait"][5][3] == 8.0
    big = dw.starvation([counts, counts])
    assert big == {"big_arrived": 4, "big_placed": 2, "big_not_placed": 0.5, "big_wait": 8.0}
    row = next(r for r in dw.job_type_rows("x", [counts]) if r["cores"] == ">128"
               and r["runtime"] == "1-4h")
    assert row == {"method": "x", "cores": ">128", "runtime": "1-4h", "arrived": 2,
                   "placed": 1, "not_placed": 0.5, "wait": 8.0}


def test_queue_parts_on_a_hand_case():
    # four jobs arrive by the cut at t1 = 9 (the fifth at 9 itself, not started); three start
    jobs = JobTable.from_columns(submit=np.array([0.0, 0.0, 1.0, 2.0, 9.0]),
                                 run_time=np.full(5, 10.0), req_procs=np.ones(5, dtype=int),
                                 req_time=np.full(5, 30.0))
    ep = dbf.Episode(0, jobs, np.array([0.0, 4.0, 9.0, np.nan, np.nan]), np.full(5, 10.0),
                     0.0, 9.0, 4, 3)
    parts = ep.queue_parts()
    # started: waits 0, 4 and 8; left: job 3 has waited 7 by the cut, job 4 nothing
    assert parts == {"span": 9.0, "arrived": 5, "left_waiting": 2, "queue_started": 12 / 9,
                     "queue_left": 7 / 9, "wait_all": 19 / 5, "wait_left": 3.5}
    m = ep.metrics()
    assert m["wait"] == 4.0  # the AWT reads the started jobs only
    assert m["queue_length"] == pytest.approx(parts["queue_started"] + parts["queue_left"])


def test_queue_parts_add_up_on_real_episodes():
    ctx = dbf.Context("lublin-1", (dbf.Method("LCFS", "lcfs"), dbf.Method("SJF", "sqf", "easy")),
                      queue_parts=True)
    res = dbf.run_online(ctx, {0: [8000, 8500], 1: [8000]})
    for rows in res.values():
        for r in rows:
            m, p = r["metrics"], r["parts"]
            assert p["left_waiting"] > 0  # the cut leaves jobs waiting: the case that matters
            assert m["queue_length"] == pytest.approx(p["queue_started"] + p["queue_left"])
            assert p["wait_all"] * p["arrived"] == pytest.approx(m["queue_length"] * p["span"])
            assert p["arrived"] == m["jobs"] + p["left_waiting"]
            assert p["wait_all"] > m["wait"]  # those left waiting have waited longer than AWT


def _row(method, kind, protocol="online", window=None, **metrics):
    base = {"method": method, "kind": kind, "protocol": protocol, "window": window,
            "backfill": "none", "utilization": 0.7, "wait": 1000.0, "queue_length": 10.0,
            "job_load": 5000.0, "bsld": 50.0}
    base.update(metrics)
    return base


def _verdicts(rows):
    return {c.claim: c.verdict for c in dbf.claims(rows)}


def test_the_claims_flip_when_the_numbers_flip():
    rows = [_row("SJF", "heuristic", utilization=0.75, job_load=4000.0),
            _row("Insp-SJF+BF-o", "inspector", "offline", bsld=62.2, utilization=0.5),
            _row("SJF+BF-o (Insp. base)", "base", "offline", bsld=73.3),
            _row("M32", "model", window=32, wait=500.0, queue_length=5.0, utilization=0.72,
                 job_load=4500.0)]
    v = _verdicts(rows)
    assert set(v.values()) == {"holds"}, v
    flipped = [dict(r) for r in rows]
    flipped[1]["bsld"], flipped[2]["bsld"] = 73.3, 62.2  # the inspector worse than its base
    flipped[3]["wait"] = 2000.0  # DBF's AWT worse than SJF's
    flipped[0]["utilization"] = 0.45  # a heuristic below the inspector, and below DBF
    v = _verdicts(flipped)
    assert set(v.values()) == {"does not hold"}, v
    lines = [c.line() for c in dbf.claims(flipped)]
    assert any("62.2" in line and "73.3" in line for line in lines)
    # without a DBF model its claims are not judged
    v = _verdicts(rows[:3])
    assert v["DBF with M >= 32: best AWT and queue length"] == "not judged"
    assert v["DBF with M >= 32: lower AWT and queue length than every heuristic"] == "not judged"


def test_the_heuristics_claim_leaves_the_offline_rows_out():
    """Issue 16's reading: below every heuristic, with and without EASY, on AWT and on queue
    length; an offline inspector's drained queue does not count against DBF there (it does in
    the thesis's 'best of all methods'), and each half can fail by itself."""
    claim = "DBF with M >= 32: lower AWT and queue length than every heuristic"
    rows = [_row("SJF", "heuristic", wait=1000.0, queue_length=10.0),
            _row("LCFS+EASY", "heuristic", backfill="easy", wait=900.0, queue_length=11.0),
            _row("Insp-F1+BF-o", "inspector", "offline", wait=950.0, queue_length=3.0),
            _row("M32", "model", window=32, wait=800.0, queue_length=9.5)]
    v = _verdicts(rows)
    assert v[claim] == "holds"
    assert v["DBF with M >= 32: best AWT and queue length"] == "does not hold"  # the 3.0
    line = next(c for c in dbf.claims(rows) if c.claim == claim).ours
    assert "best heuristic: AWT 900 s (LCFS+EASY), queue 10.0 (SJF)" in line
    assert line.endswith("AWT below, queue below")
    for change, ending in (({"queue_length": 10.5}, "AWT below, queue not below"),
                           ({"wait": 950.0}, "AWT not below, queue below"),
                           ({"wait": 900.0}, "AWT not below, queue below")):  # a tie is not below
        rows[3] = _row("M32", "model", window=32, **{"wait": 800.0, "queue_length": 9.5,
                                                     **change})
        c = next(c for c in dbf.claims(rows) if c.claim == claim)
        assert (c.verdict, c.ours.endswith(ending)) == ("does not hold", True), c.ours
    # a model with a window under 32 is not judged by it
    rows[3] = _row("M10", "model", window=10, wait=100.0, queue_length=1.0)
    assert _verdicts(rows)[claim] == "not judged"


def test_the_dbf_claim_names_each_seed_and_judges_the_mean():
    """Over training seeds the verdict is the mean's, and the line says each seed's AWT and queue
    and how many seeds beat the best other method by themselves: a mean below it that rests on
    one seed reads so."""
    claim = "DBF with M >= 32: best AWT and queue length"
    sjf = _row("SJF", "heuristic", wait=1000.0, queue_length=10.0)
    lcfs = _row("LCFS", "heuristic", wait=1200.0, queue_length=9.0)

    def seeds(waits, queues):
        return _row("M32", "model", window=32, wait=sum(waits) / len(waits),
                    queue_length=sum(queues) / len(queues), wait_per_seed=waits,
                    queue_length_per_seed=queues)

    one_carries = seeds([400.0, 1100.0, 1050.0], [6.0, 8.0, 8.5])  # mean 850 s, 7.5 jobs
    c = next(c for c in dbf.claims([sjf, lcfs, one_carries]) if c.claim == claim)
    assert c.verdict == "holds"
    assert "AWT 400, 1,100, 1,050, queue 6.0, 8.0, 8.5" in c.ours
    assert "seeds below by themselves: 1 of 3 on AWT, 3 of 3 on queue" in c.ours
    every = seeds([900.0, 950.0, 980.0], [8.0, 8.9, 8.5])
    c = next(c for c in dbf.claims([sjf, lcfs, every]) if c.claim == claim)
    assert c.verdict == "holds" and "3 of 3 on AWT, 3 of 3 on queue" in c.ours
    worse = seeds([400.0, 2000.0, 1500.0], [6.0, 8.0, 8.5])  # one seed below, the mean not
    c = next(c for c in dbf.claims([sjf, lcfs, worse]) if c.claim == claim)
    assert c.verdict == "does not hold" and "1 of 3 on AWT, 3 of 3 on queue" in c.ours
    # a single model's line names no seeds
    c = next(c for c in dbf.claims([sjf, lcfs, _row("M32", "model", window=32, wait=10.0,
                                                    queue_length=1.0)]) if c.claim == claim)
    assert "seeds" not in c.ours


def test_the_split_window_claims_flip():
    def sweep(q20, wait_t1, inv_t1, big_0_10):
        rows = [_row("20-0", "model", window=20, tail=0, queue_length=q20, invisible=9.0,
                     partial=0.5),
                _row("10-0", "model", window=10, tail=0, invisible=9.0, partial=0.6),
                _row("9-1", "model", window=10, tail=1, wait=wait_t1, queue_length=8.0,
                     invisible=inv_t1, partial=0.4),
                _row("0-10", "model", window=10, tail=10, wait=300.0, invisible=inv_t1 + 1,
                     partial=0.3)]
        parts = {label: [{"arrived": [[0] * 6] * 5 + [[0, 0, 0, 10, 0, 0]],
                          "placed": [[0] * 6] * 5 + [[0, 0, 0, placed, 0, 0]],
                          "wait": [[0.0] * 6] * 6}]
                 for label, placed in (("10-0", 9), ("9-1", 9), ("0-10", big_0_10))}
        return dw.Sweep(rows, parts, 1, [])

    good = {c.claim: c.verdict for c in dw.claims(sweep(31.0, 500.0, 2.0, 5))}
    assert set(good.values()) == {"holds"}, good
    bad = {c.claim: c.verdict for c in dw.claims(sweep(60.0, 5000.0, 20.0, 10))}
    assert set(bad.values()) == {"does not hold"}, bad


def test_the_split_window_claims_over_seeds_name_each_seed():
    """A model over seeds is judged on its mean, and the text says how many seeds hold alone:
    a tail-1 mean below tail 0's with one seed above it says 2 of 3; a lower queue that is not
    lower makes the verdict fail and names the half."""
    def seeded(label, tail, waits, queues):
        return _row(label, "model", window=10, tail=tail, wait=float(np.mean(waits)),
                    wait_sd=float(np.std(waits, ddof=1)), wait_per_seed=waits,
                    queue_length=float(np.mean(queues)), queue_length_per_seed=queues,
                    queue_length_sd=float(np.std(queues, ddof=1)), invisible=5.0, partial=0.5)

    head = seeded("10-0", 0, [1000.0, 1100.0, 1200.0], [10.0, 11.0, 12.0])
    one = seeded("9-1", 1, [700.0, 800.0, 1150.0], [9.0, 9.0, 9.0])
    c = next(c for c in dw.claims(dw.Sweep([head, one], {}, 0, []))
             if c.claim.startswith("with M <= 20"))
    assert c.verdict == "holds"
    assert "1,100 ± 100 (1,000, 1,100, 1,200)" in c.ours
    assert "2 of 3 on AWT, 3 of 3 on queue" in c.ours and "AWT lower, queue lower" in c.ours
    level = seeded("9-1", 1, [700.0, 800.0, 900.0], [11.0, 11.0, 11.0])
    c = next(c for c in dw.claims(dw.Sweep([head, level], {}, 0, []))
             if c.claim.startswith("with M <= 20"))
    assert c.verdict == "does not hold" and "AWT lower, queue not lower" in c.ours

    def big(placed):  # 10 jobs of more than 128 cores arrive, `placed` start
        return {"arrived": [[0] * 6] * 5 + [[0, 0, 0, 10, 0, 0]],
                "placed": [[0] * 6] * 5 + [[0, 0, 0, placed, 0, 0]], "wait": [[0.0] * 6] * 6}

    full = seeded("0-10", 10, [500.0, 600.0, 700.0], [8.0, 8.0, 8.0])
    per_seed = [[big(5)], [big(9)], [big(4)]]  # not placed: 50%, 10%, 60%; pooled 18/30
    sweep = dw.Sweep([head, one, full], {"10-0": [big(8)], "9-1": [big(8)],
                                         "0-10": [p for ps in per_seed for p in ps]}, 1, [],
                     {"0-10": per_seed})
    starve = {r["method"]: r for r in sweep.starvation_rows()}
    assert starve["0-10"]["big_not_placed"] == pytest.approx(0.4)
    assert starve["0-10"]["big_not_placed_per_seed"] == pytest.approx([0.5, 0.1, 0.6])
    assert "big_not_placed_per_seed" not in starve["10-0"]
    c = next(c for c in dw.claims(sweep) if c.claim.startswith("the all-tail"))
    assert c.verdict == "holds", c.ours
    assert "40.0% with 0-10 (per seed 50.0%, 10.0%, 60.0%; 2 of 3 seeds above 10-0's)" in c.ours
    sweep.types["0-10"] = [big(9)] * 3  # pooled 10% not placed: fewer than 10-0's 20%
    c = next(c for c in dw.claims(sweep) if c.claim.startswith("the all-tail"))
    assert c.verdict == "does not hold" and "big jobs placed not less often" in c.ours


def test_the_sweep_pools_a_methods_seeds_in_its_job_types(capsys):
    """Fig. 3.7's parts of a method over seeds are every seed's episodes (two heuristics stand in
    for two seeds): its starvation row is their sum, each seed's share is that heuristic's."""
    assert main(["experiment", "dbf-window-sweep", "--episodes", "2", "--heatmap-episodes", "3",
                 "--workers", "1", "--seeds", "0-10=sqf,lcfs", "--reference", "sqf,lcfs",
                 "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    starve = {r["method"]: r for r in rows if r["table"] == "starvation"}
    two, sjf, lcfs = starve["0-10"], starve["SJF"], starve["LCFS"]
    assert two["big_arrived"] == sjf["big_arrived"] + lcfs["big_arrived"]
    assert two["big_placed"] == sjf["big_placed"] + lcfs["big_placed"]
    assert two["big_not_placed_per_seed"] == pytest.approx([sjf["big_not_placed"],
                                                           lcfs["big_not_placed"]])
    assert sjf["big_not_placed"] != lcfs["big_not_placed"]  # the two seeds differ
    types = {(r["method"], r["cores"], r["runtime"]): r for r in rows
             if r["table"] == "job_types"}
    for (method, cores, runtime), r in types.items():
        if method == "0-10":
            assert r["placed"] == (types["SJF", cores, runtime]["placed"]
                                   + types["LCFS", cores, runtime]["placed"])


def test_mean_and_sd_over_seeds():
    row = dbf.mean_row([{"wait": 1.0, "bsld": 2.0}, {"wait": 3.0, "bsld": 2.0}], ("wait", "bsld"))
    assert row == {"wait": 2.0, "wait_sd": pytest.approx(2 ** 0.5), "bsld": 2.0, "bsld_sd": 0.0}
    assert dbf.mean_row([{"wait": 1.0}], ("wait",)) == {"wait": 1.0}


def test_baselines_json_rows(capsys):
    """--json rows carry the documented keys; a method over seeds (two heuristics standing in
    for two training seeds) is their mean with its sample sd."""
    assert main(["experiment", "dbf-baselines", "--episodes", "2", "--workers", "1",
                 "--heuristics", "fcfs,sqf", "--backfill", "none",
                 "--inspectors", "inspect:pretrained/inspect-lublin-1-sjf", "--models", "none",
                 "--seeds", "two=fcfs,sqf", "--offline-jobs", "64", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    for r in rows:
        assert {"policy", "backfill", "window", "tail", "utilization", "wait", "queue_length",
                "job_load", "bsld", "seeds"} <= set(r), r
    by = {r["method"]: r for r in rows}
    assert set(by) == {"FCFS", "SJF", "Insp-SJF", "Insp-SJF-o",
                       "SJF-o (Insp. base)", "two"}
    assert by["two"]["seeds"] == ["fcfs", "sqf"]
    assert by["two"]["wait"] == pytest.approx((by["FCFS"]["wait"]
                                               + by["SJF"]["wait"]) / 2)
    assert by["two"]["wait_sd"] == pytest.approx(
        abs(by["FCFS"]["wait"] - by["SJF"]["wait"]) / 2 ** 0.5)
    for key in ("wait", "queue_length", "utilization", "job_load", "bsld"):  # each seed's own
        assert by["two"][f"{key}_per_seed"] == [by["FCFS"][key], by["SJF"][key]], key
    assert "wait_per_seed" not in by["FCFS"]  # a single policy has none
    assert by["Insp-SJF"]["rejection_ratio"] > 0
    assert by["Insp-SJF-o"]["protocol"] == "offline"
    # the online rows carry the waits of every job arrived by the cut (Episode.queue_parts)
    for r in rows:
        if r["protocol"] == "online":
            assert r["wait_all"] >= r["wait"] and r["left_waiting"] > 0, r["method"]
        else:  # SchedInspector's own windows run until every job has started: no cut
            assert "wait_all" not in r, r["method"]
    assert by["two"]["wait_all"] == pytest.approx((by["FCFS"]["wait_all"]
                                                   + by["SJF"]["wait_all"]) / 2)
    assert [r["wait"] for r in rows] == sorted(r["wait"] for r in rows)  # Fig. 3.4's order


def test_window_sweep_runs_any_policy(capsys, tmp_path):
    """Heuristics in a model's place: the sweep, its heatmap rows and its claims run; the rows
    are the same with two worker processes."""
    args = ["experiment", "dbf-window-sweep", "--episodes", "2", "--heatmap-episodes", "3",
            "--grid", "10-0=fcfs,0-10=sqf", "--reference", "lcfs,sqf+easy", "--json"]
    assert main(args + ["--workers", "1"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert main(args + ["--workers", "2"]) == 0
    assert json.loads(capsys.readouterr().out) == rows
    windows = [r for r in rows if r["table"] == "windows"]
    assert [(r["method"], r["window"], r["tail"]) for r in windows] == [
        ("10-0", 10, 0), ("0-10", 10, 10), ("LCFS", 10, None), ("SJF+EASY", 10, None)]
    assert all(r["episodes"] == 2 and 0 <= r["partial"] <= 1 for r in windows)
    types = [r for r in rows if r["table"] == "job_types"]
    configurations = {"10-0", "0-10", "LCFS", "SJF+EASY"}
    assert len(types) == 4 * 36 and {r["method"] for r in types} == configurations
    assert {r["method"] for r in rows if r["table"] == "starvation"} == configurations
    plot, heat = tmp_path / "sweep.png", tmp_path / "heat.png"
    assert main(args[:-1] + ["--plot", str(plot), "--heatmap", str(heat)]) == 0
    out = capsys.readouterr().out
    assert plot.stat().st_size > 0 and heat.stat().st_size > 0
    assert "the all-tail window (0-10)" in out and "jobs of more than 128 cores" in out


def test_the_sweep_table_is_the_same_episodes_whatever_the_heatmap():
    """The table's episodes are the baselines' test starts for any heatmap size (the heatmap's
    draw holds them), and the heatmap reads exactly its own starts."""
    plain = dw.window_sweep(references=("sqf",), episodes=2, heatmap_episodes=0, windows=(10,))
    heat = dw.window_sweep(references=("sqf",), episodes=2, heatmap_episodes=3, windows=(10,))
    assert [r["wait"] for r in plain.rows] == [r["wait"] for r in heat.rows]
    std = dbf._prepared("lublin-1", "standard")
    from hpcsched.policies.priority import get_policy
    waits = [dbf.run_episode(std, get_policy("sqf"), s).metrics()["wait"]
             for s in dbf.test_starts(len(std.jobs), 2)]
    assert plain.rows[0]["wait"] == pytest.approx(np.mean(waits))
    assert len(heat.types["SJF"]) == 3
    small = dw.window_sweep(references=("sqf",), episodes=3, heatmap_episodes=2, windows=(10,))
    assert len(small.types["SJF"]) == 2 and small.rows[0]["episodes"] == 3


@pytest.mark.parametrize("args,message", [
    (["dbf-baselines", "--models", "nosuchpolicy"], "nosuchpolicy"),
    (["dbf-baselines", "--models", "rl:/no/such/model.pt"], "no model file"),
    (["dbf-baselines", "--heuristics", "nosuch"], "nosuch"),
    (["dbf-baselines", "--episodes", "0"], "--episodes"),
    (["dbf-window-sweep", "--grid", "10=fcfs"], "MH-MT=MODEL"),
    (["dbf-window-sweep", "--grid", "10-0=inspect:/no/file.pt"], "no model file"),
    (["dbf-window-sweep", "--seeds", "9-1"], "LABEL=MODEL"),
    (["dbf-window-sweep", "--reference", "fcfs+backwards"], "easy or conservative"),
])
def test_bad_input_is_one_line(capsys, args, message):
    assert main(["experiment", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and err.startswith("hpcsched: error:") and "\n" not in err


def test_compare_episodes_gives_the_mean_median_and_worst_episode(capsys):
    """`compare --episodes N`: per policy and backfilling, the mean of each episode's metrics on
    the first N test starts, and the spread of the episodes' AWTs."""
    from hpcsched.experiments.dbf_episodes import run_episode
    from hpcsched.policies.priority import get_policy

    assert main(["compare", "lublin-1", "--policies", "sqf,lcfs", "--backfill", "none,easy",
                 "--episodes", "3", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["policy"], r["backfill"]) for r in rows] == [
        ("sqf", "none"), ("sqf", "easy"), ("lcfs", "none"), ("lcfs", "easy")]
    std = dbf._prepared("lublin-1", "standard")
    starts = dbf.test_starts(len(std.jobs), 3)
    waits = [run_episode(std, get_policy("lcfs"), s, backfill="easy")["wait"] for s in starts]
    assert len(set(waits)) == 3  # three different episodes, so mean, median and worst differ
    row = rows[3]
    assert row["episodes"] == 3
    assert row["wait"] == pytest.approx(np.mean(waits))
    assert row["wait_median"] == pytest.approx(sorted(waits)[1])
    assert row["wait_worst"] == pytest.approx(max(waits))


def test_fig34_takes_each_shipped_unmasked_model_in_both_readings():
    """The shipped DBF models were trained without the mask: Fig. 3.4's default rows read each as
    trained and through the mask (``@masked``), and a name not shipped is noted, not read."""
    from hpcsched.modelfile import read_model
    from hpcsched.recipes import PRETRAINED

    names, notes = dbf.shipped_models(("dbf-m32", "dbf-m999"))
    assert not read_model(PRETRAINED / "dbf-m32.pt")["config"]["mask"]
    assert names == ["dbf:pretrained/dbf-m32", "dbf:pretrained/dbf-m32@masked"]
    assert len(notes) == 1 and "dbf-m999" in notes[0]
    methods, _ = dbf.baseline_methods(heuristics=[], inspectors=[],
                                      models=[("", n) for n in names])
    labels = [m.label for m in dbf.resolve_windows(methods, "lublin-1")]
    assert labels == ["M32-4", "M32-4@masked"]


def _blas_threads() -> list[int]:
    from threadpoolctl import threadpool_info

    return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]


def test_a_worker_process_runs_one_blas_thread():
    """Each worker of a parallel run limits numpy's BLAS pool to one thread (two workers' pools
    of a thread per core each spun against each other: 20 times slower)."""
    from concurrent.futures import ProcessPoolExecutor

    context = dbf.Context("lublin-1", (), dbf.EPISODE_JOBS)
    with ProcessPoolExecutor(max_workers=1, initializer=dbf._init_worker,
                             initargs=(context,)) as pool:
        threads = pool.submit(_blas_threads).result()
    assert threads and set(threads) == {1}
