"""HeraSched's protocol periods: fixed, in order, disjoint."""

import datetime as dt

import numpy as np
import pytest

from hpcsched.workload.hera_periods import SPLITS, hera_period, hera_periods


@pytest.mark.parametrize("partition", ["spartan-deeplearn", "spartan-physical"])
def test_periods_follow_one_another_with_their_own_seeds(partition):
    periods = hera_periods(partition)
    assert list(periods) == list(SPLITS)
    ordered = [periods[s] for s in SPLITS]
    for before, after in zip(ordered, ordered[1:]):
        assert before.end <= after.start  # test after validation after train
    assert len({p.seed for p in ordered}) == len(ordered)
    assert [p.high_load_day for p in ordered] == [False, False, False, True, True]


def test_deeplearn_periods_are_pinned():
    # changing any of these changes every reported HeraSched number: it must be deliberate
    p = hera_periods("spartan-deeplearn")
    assert [(x.seed, x.start, x.days) for x in p.values()] == [
        (1701, dt.date(2021, 9, 20), 56), (1702, dt.date(2021, 11, 15), 14),
        (1703, dt.date(2021, 11, 29), 28), (1704, dt.date(2021, 12, 27), 1.0),
        (1705, dt.date(2021, 12, 28), 1.0)]
    assert p["train"].command("t.txt") == ("hpcsched trace generate spartan-deeplearn --seed 1701 "
                                           "--days 56 --start 2021-09-20 -o t.txt")


def test_generated_periods_are_the_same_every_time_and_lie_in_their_days():
    val = hera_period("spartan-deeplearn", "validation")
    a, b = val.generate().jobs, val.generate().jobs
    assert len(a) == len(b) == 2566
    np.testing.assert_array_equal(a.submit, b.submit)
    assert 0 <= a.submit.min() and a.submit.max() < val.days * 86400  # seconds from its start
    assert val.generate().start.date() == val.start
    hl = hera_period("spartan-deeplearn", "test-high-load").generate()
    assert len(hl.jobs) == 1137 and hl.start.date() == hera_period(
        "spartan-deeplearn", "test-high-load").start


def test_unknown_names_are_refused():
    with pytest.raises(ValueError, match="spartan-sapphire"):
        hera_periods("spartan-sapphire")
    with pytest.raises(ValueError, match="choose one of"):
        hera_period("spartan-deeplearn", "holdout")


# ---- CERIT-SC: cuts of the real log -------------------------------------------------------------

def raw_submits():
    """The Unix submit times of the bundled CERIT-SC log, read straight from its lines (field 2),
    not through the reader."""
    import gzip

    from hpcsched.workload.traces import trace_path

    lines = gzip.decompress(trace_path("cerit-2013").read_bytes()).decode().splitlines()
    return np.array([int(line.split()[1]) for line in lines
                     if line.split() and not line.startswith(";")])


def prague_midnight(day: dt.date) -> int:
    from zoneinfo import ZoneInfo

    return int(dt.datetime(day.year, day.month, day.day, tzinfo=ZoneInfo("Europe/Prague"))
               .timestamp())


def test_cerit_periods_are_whole_weeks_one_after_another_inside_the_log():
    periods = hera_periods("cerit-zewura")
    assert list(periods) == ["train", "validation", "test"]
    ordered = list(periods.values())
    for before, after in zip(ordered, ordered[1:]):
        assert before.end == after.start  # no gap, no overlap: each day in one period at most
    assert all(p.days % 7 == 0 and p.cluster == "cerit-zewura" for p in ordered)
    # pinned: changing them changes every reported CERIT-SC number
    assert [(p.start, p.days) for p in ordered] == [
        (dt.date(2013, 1, 1), 56), (dt.date(2013, 2, 26), 14), (dt.date(2013, 3, 12), 14)]
    submits = raw_submits()
    # inside the log: the first period starts before its first job, the last ends before its last
    assert prague_midnight(ordered[0].start) <= submits.min()
    assert prague_midnight(ordered[-1].end) <= submits.max()


def test_cerit_job_counts_are_a_direct_count_of_the_raw_log():
    submits = raw_submits()
    seen = []
    for p in hera_periods("cerit-zewura").values():
        lo, hi = prague_midnight(p.start), prague_midnight(p.end)
        expected = int(np.sum((submits >= lo) & (submits < hi)))
        jobs = p.jobs()
        assert len(jobs) == expected
        # times count from the period's own first job, which is its earliest in the log
        assert jobs.submit.min() == 0 and jobs.header.unix_start_time == submits[
            (submits >= lo) & (submits < hi)].min()
        seen.append(set(jobs.job_id.astype(int)))
    assert [len(s) for s in seen] == [7808, 2685, 5145]  # the numbers the docs state
    assert not (seen[0] & seen[1]) and not (seen[1] & seen[2]) and not (seen[0] & seen[2])
    left = int(np.sum(submits >= prague_midnight(dt.date(2013, 3, 26))))
    assert sum(map(len, seen)) + left == submits.size == 17900  # the last 5 days: in no period


def test_a_cerit_period_written_by_its_command_reads_back_as_the_same_jobs(tmp_path):
    import shlex

    from hpcsched.cli import main
    from hpcsched.workload.cerit import read_machines
    from hpcsched.workload.traces import load_trace, trace_path

    period = hera_period("cerit-zewura", "validation")
    out = tmp_path / "cerit-validation.swf"
    argv = shlex.split(period.command(str(out)))
    assert argv[:3] == ["hpcsched", "trace", "convert"]
    assert main(argv[1:]) == 0
    machines = tmp_path / "cerit-validation.swf.machines"
    assert read_machines(machines) == read_machines(str(trace_path("cerit-2013")).removesuffix(
        ".gz") + ".machines")
    back, here = load_trace(str(out)), period.jobs()
    for col in ("job_id", "submit", "run_time", "req_time", "req_procs", "procs", "nodes",
                "cores_per_node", "mem_per_node", "gpus_per_node", "user"):
        np.testing.assert_array_equal(back[col], here[col], err_msg=col)
    assert back.header.unix_start_time == here.header.unix_start_time
    # the lines are the log's own: the same bytes for the same jobs
    import gzip

    log = gzip.decompress(trace_path("cerit-2013").read_bytes()).decode().splitlines()
    ours = [x for x in out.read_text().splitlines() if not x.startswith(";")]
    assert ours == [log[int(i) - 1] for i in here.line]


def test_cerit_has_no_high_load_day_and_says_so():
    with pytest.raises(ValueError, match=r"cerit-zewura has no test-high-load period \(its "
                                         r"periods: train, validation, test\)"):
        hera_period("cerit-zewura", "test-high-load")
