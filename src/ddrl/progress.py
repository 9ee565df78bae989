"""One row per training iteration, taken from RLlib's result dict."""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path
from typing import Any, Mapping

from ddrl import atomic

COLUMNS = [
    "iteration",
    "env_steps",
    "env_steps_this_iter",
    "episode_return_mean",
    "episode_return_min",
    "episode_return_max",
    "episode_len_mean",
    "episodes_this_iter",
    "time_this_iter_s",
    "time_total_s",
    "sample_time_s",
    "learn_time_s",
    "sync_weights_time_s",
    "env_steps_per_s",
    "env_runner_restarts",
    "healthy_env_runners",
    "session",
    "timestamp",
]

# RLlib 2.60 result keys (new API stack), by column.
RESULT_KEYS = {
    "env_steps": "num_env_steps_sampled_lifetime",
    "env_steps_this_iter": "env_runners/num_env_steps_sampled",
    "episode_return_mean": "env_runners/episode_return_mean",
    "episode_return_min": "env_runners/episode_return_min",
    "episode_return_max": "env_runners/episode_return_max",
    "episode_len_mean": "env_runners/episode_len_mean",
    "episodes_this_iter": "env_runners/num_episodes",
    "time_this_iter_s": "time_this_iter_s",
    "sample_time_s": "timers/env_runner_sampling_timer",
    "learn_time_s": "timers/learner_update_timer",
    "sync_weights_time_s": "timers/synch_weights",
    "env_runner_restarts": "fault_tolerance/num_remote_worker_restarts",
    "healthy_env_runners": "fault_tolerance/num_healthy_workers",
}


def lookup(result: Mapping[str, Any], key: str, default: Any = math.nan) -> Any:
    node: Any = result
    for part in key.split("/"):
        if not isinstance(node, Mapping) or part not in node:
            return default
        node = node[part]
    return node


def _number(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def row_from_result(result: Mapping[str, Any], *, iteration: int, time_total_s: float,
                    session: int, timestamp: float) -> dict[str, float]:
    row: dict[str, Any] = {c: _number(lookup(result, k)) for c, k in RESULT_KEYS.items()}
    row["iteration"] = iteration
    row["time_total_s"] = time_total_s
    row["session"] = session
    row["timestamp"] = timestamp
    t = row["time_this_iter_s"]
    row["env_steps_per_s"] = row["env_steps_this_iter"] / t if t and t > 0 else math.nan
    for col in ("env_steps", "env_steps_this_iter", "episodes_this_iter",
                "env_runner_restarts", "healthy_env_runners"):
        if not math.isnan(row[col]):
            row[col] = int(row[col])
    return row


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return "" if math.isnan(value) else repr(round(value, 6))
    return str(value)


class ProgressLog:
    """``progress.csv`` kept in memory and rewritten atomically after every iteration."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.rows: list[dict[str, Any]] = []
        if self.path.exists():
            with open(self.path, newline="") as fh:
                self.rows = [dict(r) for r in csv.DictReader(fh)]

    def truncate_after(self, iteration: int) -> None:
        """Drop rows past ``iteration`` (they came after the checkpoint we resume from)."""
        self.rows = [r for r in self.rows if int(r["iteration"]) <= iteration]

    @property
    def last(self) -> dict[str, Any] | None:
        return self.rows[-1] if self.rows else None

    def append(self, row: Mapping[str, Any]) -> None:
        self.rows.append(dict(row))
        self.flush()

    def to_csv(self) -> str:
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=COLUMNS, extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        for row in self.rows:
            writer.writerow({c: _fmt(row.get(c, "")) for c in COLUMNS})
        return buf.getvalue()

    def flush(self, path: str | Path | None = None) -> None:
        atomic.write_text(path or self.path, self.to_csv())
