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
