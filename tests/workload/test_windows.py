"""Window starts: the RLScheduler paper's draw, our own draws, the train/test split."""

import pytest

from hpcsched.workload.windows import paper_windows, sample_windows, train_test_split


def test_paper_windows_are_the_fixtures(schedgym_fixture):
    expected = schedgym_fixture["paper_windows_1024"]["starts"]
    assert expected == [1981, 2756, 4299, 8850, 3316, 2714, 5228, 7762, 4022, 7085]
    assert paper_windows() == expected
    assert paper_windows(first=10000, count=10, length=1024) == expected
    assert paper_windows(count=3) == expected[:3]  # drawn in sequence


def test_paper_windows_bounds():
    starts = paper_windows(first=3000, count=200, length=256)
    assert min(starts) >= 256 and max(starts) < 3000 - 256 - 1
    with pytest.raises(ValueError, match="too few for windows of 1024"):
        paper_windows(first=2048, length=1024)


def test_sample_windows():
    starts = sample_windows(5000, 50, 1000, seed=3)
    assert len(starts) == 50 and all(isinstance(s, int) for s in starts)
    assert 0 <= min(starts) and max(starts) <= 4000
    assert sample_windows(5000, 50, 1000, seed=3) == starts  # reproducible
    assert sample_windows(5000, 50, 1000, seed=4) != starts
    assert max(sample_windows(50000, 100, 1024, first=2000)) <= 2000 - 1024
    assert sample_windows(1024, 3, 1024) == [0, 0, 0]  # exactly one window fits


def test_sample_windows_too_short():
    msg = "a window of 1024 jobs does not fit in the trace's 1000 jobs"
    with pytest.raises(ValueError, match=msg):
        sample_windows(1000, 10, 1024)
    with pytest.raises(ValueError, match="does not fit in the first 500 jobs"):
        sample_windows(5000, 10, 1024, first=500)


def test_train_test_split():
    assert train_test_split(10000, 0.8) == (range(0, 2000), range(2000, 10000))
    train, test = train_test_split(7, 0.5)
    assert list(train) + list(test) == list(range(7)) and len(test) == 4
    for bad in (0.0, 1.0, -0.1):
        with pytest.raises(ValueError, match="test_fraction must be in"):
            train_test_split(100, bad)
    with pytest.raises(ValueError, match="one part would be empty"):
        train_test_split(3, 0.1)


# -- validation windows clear of the test windows -----------------------------------------------------

def test_covered_merges_overlapping_and_touching_windows():
    from hpcsched.workload.windows import covered

    assert covered([10, 0, 30], 10) == [(0, 20), (30, 40)]  # 0-9 and 10-19 touch: one range
    assert covered([5, 0], 10) == [(0, 15)]
    assert covered([], 10) == []


def test_paper_test_jobs_are_the_union_of_the_paper_windows():
    from hpcsched.workload.windows import paper_test_jobs, paper_windows

    jobs = set()
    for s in paper_windows():
        jobs.update(range(s, s + 1024))
    ranges = paper_test_jobs(202871)
    assert set().union(*(range(lo, hi) for lo, hi in ranges)) == jobs
    assert ranges == paper_test_jobs(10000)  # the same draw on every trace of 10,000+ jobs


def test_disjoint_windows_share_no_job_with_the_avoided_ranges():
    from hpcsched.workload.windows import disjoint_windows

    avoid = [(100, 200), (450, 451)]
    starts = disjoint_windows(1000, 40, 50, avoid=avoid, seed=3)
    assert len(set(starts)) == 40
    for s in starts:
        assert 0 <= s <= 950
        for lo, hi in avoid:
            assert s + 50 <= lo or s >= hi, (s, lo, hi)
    # the boundaries themselves are allowed: a window may end just before 100 or start at 200
    all_starts = disjoint_windows(1000, 1000 - 50 + 1 - 150 - 50, 50, avoid=avoid, seed=0)
    assert 50 in all_starts and 200 in all_starts and 51 not in all_starts and 199 not in all_starts
    assert 400 in all_starts and 451 in all_starts and 401 not in all_starts and 450 not in all_starts


def test_disjoint_windows_refuse_when_too_few_fit():
    from hpcsched.workload.windows import disjoint_windows

    with pytest.raises(ValueError, match="only 2 windows of 50 jobs"):
        disjoint_windows(200, 3, 50, avoid=[(51, 200)], seed=0)  # starts 0 and 1 only
    with pytest.raises(ValueError, match="first 150 jobs"):
        disjoint_windows(200, 200, 50, first=150, seed=0)


@pytest.mark.parametrize("trace", ["lublin-1", "lublin-2", "hpc2n", "ctc-sp2"])
def test_rlscheduler_validation_windows_miss_every_table_window_job(trace):
    """Validation (which chooses best.pt) never sees a job of the windows the tables score."""
    from hpcsched.agents.rlscheduler import RLSchedulerConfig
    from hpcsched.experiments.training import Validation
    from hpcsched.workload.windows import paper_windows

    v = Validation(RLSchedulerConfig(trace=trace), 20, 256)
    test = set()
    for s in paper_windows():
        test.update(range(s, s + 1024))
    seen = set()
    for s in v.starts:
        seen.update(range(s, s + v.jobs))
    assert len(v.starts) == 20 and v.jobs == 256
    assert seen and not (seen & test)
    assert max(seen) < 10000  # from the training range
    # the old draw (no avoidance) did overlap: the check above is not vacuous
    old = Validation(RLSchedulerConfig(trace=trace), 20, 256, avoid="none")
    assert any(s + 256 > lo and s < hi for s in old.starts for lo, hi in v.avoided)


@pytest.mark.parametrize("trace", ["lublin-1", "hpc2n", "ctc-sp2"])
def test_inspector_validation_windows_miss_every_table4_window_job(trace):
    """SchedInspector's validation (which chooses best.pt) shares no job with either protocol's
    test windows of `experiment schedinspector-table4` (the authors' draw and ours)."""
    from hpcsched.agents.inspector import InspectorConfig
    from hpcsched.experiments.inspector_training import InspectorValidation
    from hpcsched.experiments.schedinspector import protocol_windows

    for profile in ("schedinspector", "schedinspector-paper"):
        v = InspectorValidation(InspectorConfig(trace=trace, profile=profile), windows=10)
        seen = set()
        for s in v.starts:
            seen.update(range(s, s + v.jobs))
        test = set()
        for draw in ("code", "ours"):
            for s in protocol_windows(v.prepared, draw, 50, 256):
                test.update(range(s, s + 256))
        assert len(v.starts) == 10 and seen and not (seen & test), (trace, profile)


@pytest.mark.parametrize("trace", ["ricc", "hpc2n"])
def test_dras_validation_week_comes_before_the_test_period(trace):
    """DRAS validates on the week after its 28 training days and tests on the days after that:
    no job in both, and every validation job submitted before the first test job."""
    from hpcsched.experiments.dras_training import DrasRunConfig, prepared_for
    from hpcsched.workload.jobsets import first_days, split

    config = DrasRunConfig(trace=trace)
    _, validate, test = split(prepared_for(config).jobs, config.train_days, config.validate_days,
                              config.test_days)
    validate = first_days(validate, config.validate_first_days)
    assert len(validate) and len(test)
    assert not set(validate.job_id.tolist()) & set(test.job_id.tolist())
    assert validate.submit.max() < test.submit.min()
