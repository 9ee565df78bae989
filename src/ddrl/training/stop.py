"""When a run stops: its budget of env steps, wall time, and a return threshold.

``budget.return_threshold`` stops a run once the mean return over its last
``budget.return_window`` episodes reaches it (the thesis stopped at 2000 or 2200). That mean
is RLlib's ``env_runners/episode_return_mean``: a sliding window over the last
``metrics_num_episodes_for_smoothing`` episodes, kept across iterations (and checkpointed
with the algorithm's metrics). ddrl sets that window to ``return_window`` (RLlib's default,
100, when unset), so the window is stated, not inherited, and the rule waits until the run
has finished at least that many episodes: a mean over fewer is not a mean over N.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping

from ddrl.runs import (  # noqa: F401  (the budget's facts live with the run spec)
    DEFAULT_RETURN_WINDOW,
    budget_with_defaults,
    check_budget,
    return_window,
)

# Checked in this order; the first one met is the run's stop reason.
STOP_REASONS = ("return_threshold", "env_steps", "time_limit_s")


def _finite(value: Any) -> float:
    try:
        value = float(value)
    except (TypeError, ValueError):
        return math.nan
    return value


def threshold_reached(budget: Mapping[str, Any], return_mean: Any, episodes: float) -> bool:
    """The mean return over the last ``return_window`` episodes reaches the threshold."""
    threshold = budget.get("return_threshold")
    if threshold is None:
        return False
    mean = _finite(return_mean)
    return episodes >= return_window(budget) and mean == mean and mean >= threshold


def stop_reason(budget: Mapping[str, Any], *, env_steps: float, time_total_s: float,
                return_mean: Any = math.nan, episodes: float = 0) -> str | None:
    """Why a run with this progress stops now (one of :data:`STOP_REASONS`), or None.

    ``episodes`` counts the episodes the run has finished so far, ``return_mean`` is the
    windowed mean return after its last iteration.
    """
    if threshold_reached(budget, return_mean, episodes):
        return "return_threshold"
    steps = budget.get("env_steps")
    if steps and env_steps >= steps:
        return "env_steps"
    limit = budget.get("time_limit_s")
    if limit and time_total_s >= limit:
        return "time_limit_s"
    return None


def episodes_so_far(rows: Iterable[Mapping[str, Any]]) -> float:
    """Episodes finished over progress rows (``episodes_this_iter`` summed; NaN counts 0)."""
    total = 0.0
    for row in rows:
        n = _finite(row.get("episodes_this_iter"))
        total += n if n == n else 0.0
    return total
