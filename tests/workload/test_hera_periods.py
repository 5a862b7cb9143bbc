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
