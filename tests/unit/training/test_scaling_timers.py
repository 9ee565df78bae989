"""RLlib's step timers become per-iteration values in progress.csv (not RLlib's EMA)."""

from __future__ import annotations

import math
import time

import pytest

from ddrl.training.progress import (
    PER_ITERATION_TIMER_KEYS,
    TIMER_COLUMNS,
    row_from_result,
    use_per_iteration_timers,
)

SAMPLE = ("timers", "env_runner_sampling_timer")
LEARN = ("timers", "learner_update_timer")


def _iteration(metrics, sample_s: float, learn_s: float, calls: int = 1) -> dict:
    """One fake ``Algorithm.train()``: ``calls`` training steps, then RLlib's reduce."""
    for _ in range(calls):
        with metrics.log_time(SAMPLE):
            time.sleep(sample_s)
        if learn_s:
            with metrics.log_time(LEARN):
                time.sleep(learn_s)
    return metrics.reduce(compile=True)


def test_timers_report_each_iterations_own_time():
    from ray.rllib.utils.metrics.metrics_logger import MetricsLogger

    metrics = MetricsLogger(root=True)
    use_per_iteration_timers(metrics)
    plan = [(0.20, 0.02, 1), (0.02, 0.15, 1), (0.03, 0.0, 4)]  # (sample, learn, calls)
    for sample_s, learn_s, calls in plan:
        result = _iteration(metrics, sample_s, learn_s, calls)
        row = row_from_result({**result, "time_this_iter_s": 1.0}, iteration=1,
                              time_total_s=1.0, session=0, timestamp=0.0)
        # Off-policy iterations run several training steps: their times add up.
        assert row["sample_time_s"] == pytest.approx(calls * sample_s, abs=0.04)
        # No learner update this iteration: zero seconds, not a stale or missing value.
        assert row["learn_time_s"] == pytest.approx(learn_s * calls, abs=0.04)
        assert row["sync_weights_time_s"] == 0.0


def test_rllibs_default_reduction_is_smoothed_which_is_why_ddrl_replaces_it():
    from ray.rllib.utils.metrics.metrics_logger import MetricsLogger

    metrics = MetricsLogger(root=True)  # RLlib's default: EMA with coefficient 0.01
    first = _iteration(metrics, 0.20, 0.0)["timers"]["env_runner_sampling_timer"]
    second = _iteration(metrics, 0.02, 0.0)["timers"]["env_runner_sampling_timer"]
    assert second > 0.15 and second == pytest.approx(first, rel=0.05)


def test_setting_up_twice_keeps_sums_and_covers_every_timer_column():
    from ray.rllib.utils.metrics.metrics_logger import MetricsLogger

    metrics = MetricsLogger(root=True)
    use_per_iteration_timers(metrics)
    _iteration(metrics, 0.05, 0.0)
    use_per_iteration_timers(metrics)  # as after a checkpoint restore
    result = _iteration(metrics, 0.01, 0.0)
    assert result["timers"]["env_runner_sampling_timer"] == pytest.approx(0.01, abs=0.01)
    assert set(TIMER_COLUMNS) == {"sample_time_s", "learn_time_s", "sync_weights_time_s",
                                  "replay_time_s"}
    assert "timers/replay_buffer_sampling_timer" in PER_ITERATION_TIMER_KEYS


def test_replay_time_sums_the_replay_timers_and_absent_timers_stay_missing():
    result = {"time_this_iter_s": 2.0,
              "timers": {"replay_buffer_sampling_timer": 0.5,
                         "replay_buffer_add_data_timer": 0.25,
                         "env_runner_sampling_timer": 1.0}}
    row = row_from_result(result, iteration=1, time_total_s=2.0, session=0, timestamp=0.0)
    assert row["replay_time_s"] == pytest.approx(0.75)
    assert row["sample_time_s"] == 1.0
    # RLlib never reported these timers: unknown, not zero.
    row = row_from_result({"time_this_iter_s": 2.0}, iteration=1, time_total_s=2.0,
                          session=0, timestamp=0.0)
    assert all(math.isnan(row[c]) for c in TIMER_COLUMNS)
