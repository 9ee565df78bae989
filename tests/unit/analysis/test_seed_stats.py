"""Statistics over seeds (ddrl.analysis.seed_stats), against values worked out by hand."""

from __future__ import annotations

import math

import pytest

from ddrl.analysis.seed_stats import (
    bootstrap_ratio_interval,
    curve_mean,
    interquartile_mean,
    time_to_return,
)


def test_interquartile_mean_trims_a_quarter_at_each_end():
    assert interquartile_mean([4, 1, 3, 2]) == pytest.approx(2.5)
    # Five seeds: 2 and 4 count three quarters each, 3 fully; the outlier not at all.
    assert interquartile_mean([1, 2, 3, 4, 100]) == pytest.approx(3.0)
    assert interquartile_mean([7.0]) == 7.0
    assert math.isnan(interquartile_mean([]))


def test_bootstrap_ratio_interval_brackets_the_ratio_and_widens_with_spread():
    assert bootstrap_ratio_interval([2, 2, 2], [1, 1, 1]) == pytest.approx((2.0, 2.0))
    lo, hi = bootstrap_ratio_interval([1800, 2000, 2200], [1900, 2000, 2100])
    assert lo < 1.0 < hi
    wide = bootstrap_ratio_interval([500, 2000, 3500], [1900, 2000, 2100])
    assert wide[0] < lo and wide[1] > hi
    assert bootstrap_ratio_interval([1, 2], [1, 2], seed=3) == bootstrap_ratio_interval(
        [1, 2], [1, 2], seed=3)  # reproducible for a seed
    assert all(math.isnan(v) for v in bootstrap_ratio_interval([1, 2], [-1, -2]))
    assert all(math.isnan(v) for v in bootstrap_ratio_interval([], [1]))


def test_curve_mean_is_the_area_over_the_length():
    assert curve_mean([0, 10], [0, 10]) == pytest.approx(5.0)
    assert curve_mean([10, 0, 20], [10, 0, 10]) == pytest.approx(7.5)  # any order
    assert curve_mean([0, 10, 20], [0, 10, 10], until=5) == pytest.approx(2.5)
    assert curve_mean([0, 10, 20], [0, 10, 10], until=10) == pytest.approx(5.0)
    assert math.isnan(curve_mean([10, 20], [1, 2], until=5))


def test_time_to_return_is_the_first_evaluation_at_the_threshold():
    t = time_to_return([10, 20, 30, 40], [5.0, 11.0, 16.0, 22.0], [100, 1500, 900, 2000], 1500)
    assert t.reached and (t.env_steps, t.seconds) == (20, 11.0)
    never = time_to_return([10, 20], [5.0, 11.0], [100, 1499.9], 1500)
    assert not never.reached and never.seconds is None
