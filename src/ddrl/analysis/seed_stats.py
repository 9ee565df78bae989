"""Statistics over seeds for learning comparisons: interquartile mean, a bootstrap interval of
a ratio of means, the area under a return curve, and the time to reach a return.

Few seeds (3-5) are the rule in deep RL, so every summary here is meant to be shown beside
the per-seed values, not instead of them (Agarwal et al. 2021, "Deep RL at the edge of the
statistical precipice": interquartile means and bootstrap intervals).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np


def interquartile_mean(values: Sequence[float]) -> float:
    """Mean of the middle 50% of ``values`` (fractional weights at the quartiles, as
    rliable's IQM: the mean of a 25%-trimmed sample). NaN for no values."""
    x = np.sort(np.asarray(values, dtype=float))
    n = len(x)
    if n == 0:
        return math.nan
    # Each value covers [i/n, (i+1)/n] of the distribution; weight it by its overlap with
    # the middle half [0.25, 0.75].
    lo, hi = np.arange(n) / n, np.arange(1, n + 1) / n
    weights = np.clip(np.minimum(hi, 0.75) - np.maximum(lo, 0.25), 0.0, None)
    return float(np.sum(weights * x) / np.sum(weights))


def bootstrap_ratio_interval(numerator: Sequence[float], denominator: Sequence[float],
                             level: float = 0.95, resamples: int = 10_000,
                             seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of ``mean(numerator) / mean(denominator)``, resampling
    the seeds of each side independently (the two sides are separate runs). (NaN, NaN) when
    a side has no values or a resampled denominator mean is not positive."""
    a, b = np.asarray(numerator, dtype=float), np.asarray(denominator, dtype=float)
    if len(a) == 0 or len(b) == 0:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    means_a = a[rng.integers(0, len(a), size=(resamples, len(a)))].mean(axis=1)
    means_b = b[rng.integers(0, len(b), size=(resamples, len(b)))].mean(axis=1)
    if np.any(means_b <= 0):
        return math.nan, math.nan
    tail = (1.0 - level) / 2.0
    lo, hi = np.quantile(means_a / means_b, [tail, 1.0 - tail])
    return float(lo), float(hi)


def curve_mean(steps: Sequence[float], returns: Sequence[float],
               until: Optional[float] = None) -> float:
    """Area under the return curve divided by its length in env steps (trapezoids between
    evaluation points), from the first evaluation to ``until`` (default: the last one): the
    mean return over training, which rewards learning early as well as ending high."""
    x, y = np.asarray(steps, dtype=float), np.asarray(returns, dtype=float)
    order = np.argsort(x)
    x, y = x[order], y[order]
    if until is not None:
        if until < x[0]:
            return math.nan
        keep = x <= until
        if until > x[keep][-1] and until <= x[-1]:
            x, y = np.append(x[keep], until), np.append(y[keep], np.interp(until, x, y))
        else:
            x, y = x[keep], y[keep]
    if len(x) == 1:
        return float(y[0])
    return float(np.trapezoid(y, x) / (x[-1] - x[0]))


@dataclass(frozen=True)
class TimeToReturn:
    """When a run's evaluation first reached ``threshold``: env steps and training seconds
    at that evaluation, or None for both if it never did."""

    threshold: float
    env_steps: Optional[int]
    seconds: Optional[float]

    @property
    def reached(self) -> bool:
        return self.env_steps is not None


def time_to_return(steps: Sequence[float], seconds: Sequence[float], returns: Sequence[float],
                   threshold: float) -> TimeToReturn:
    """The first evaluation point at or above ``threshold`` (no interpolation: a return
    between two evaluations was not observed)."""
    for s, t, r in sorted(zip(steps, seconds, returns)):
        if r >= threshold:
            return TimeToReturn(float(threshold), int(s), float(t))
    return TimeToReturn(float(threshold), None, None)
