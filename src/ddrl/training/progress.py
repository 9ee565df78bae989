"""One row per training iteration, taken from RLlib's result dict."""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path
from typing import Any, Mapping

from ray.rllib.algorithms.ppo.ppo import (
    LEARNER_RESULTS_KL_KEY,
    LEARNER_RESULTS_VF_EXPLAINED_VAR_KEY,
)
from ray.rllib.core import DEFAULT_MODULE_ID
from ray.rllib.core.learner.learner import ENTROPY_KEY, POLICY_LOSS_KEY, VF_LOSS_KEY
from ray.rllib.utils.metrics import (
    ENV_RUNNER_RESULTS,
    ENV_RUNNER_SAMPLING_TIMER,
    EPISODE_LEN_MEAN,
    EPISODE_RETURN_MAX,
    EPISODE_RETURN_MEAN,
    EPISODE_RETURN_MIN,
    FAULT_TOLERANCE_STATS,
    LEARNER_RESULTS,
    LEARNER_UPDATE_TIMER,
    NUM_ENV_STEPS_SAMPLED,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    NUM_EPISODES,
    REPLAY_BUFFER_ADD_DATA_TIMER,
    REPLAY_BUFFER_SAMPLE_TIMER,
    REPLAY_BUFFER_UPDATE_PRIOS_TIMER,
    SYNCH_WORKER_WEIGHTS_TIMER,
    TIMERS,
)
from ray.tune.result import TIME_THIS_ITER_S

from ddrl import atomic

COLUMNS = [
    "iteration",
    "env_steps",
    "env_steps_this_iter",
    "gradient_updates",
    "gradient_updates_total",
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
    "replay_time_s",
    "env_steps_per_s",
    "env_runner_restarts",
    "healthy_env_runners",
    "policy_loss",
    "value_loss",
    "q_mean",
    "alpha",
    "entropy",
    "logp_mean",
    "kl",
    "vf_explained_var",
    "session",
    "timestamp",
]


def _key(*parts: str) -> str:
    return "/".join(parts)


# RLlib 2.60 result keys (new API stack), by column. The two fault-tolerance counters have
# no constant in ray.rllib.utils.metrics (Algorithm writes them as literals).
RESULT_KEYS = {
    "env_steps": NUM_ENV_STEPS_SAMPLED_LIFETIME,
    "env_steps_this_iter": _key(ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED),
    # ddrl's off-policy loop counts its updates (ddrl.algorithms.offpolicy.UPDATES_KEY);
    # empty for PPO, whose updates per iteration follow from its batch settings.
    "gradient_updates": "ddrl/num_gradient_updates",
    "gradient_updates_total": "ddrl/num_gradient_updates_lifetime",
    "episode_return_mean": _key(ENV_RUNNER_RESULTS, EPISODE_RETURN_MEAN),
    "episode_return_min": _key(ENV_RUNNER_RESULTS, EPISODE_RETURN_MIN),
    "episode_return_max": _key(ENV_RUNNER_RESULTS, EPISODE_RETURN_MAX),
    "episode_len_mean": _key(ENV_RUNNER_RESULTS, EPISODE_LEN_MEAN),
    "episodes_this_iter": _key(ENV_RUNNER_RESULTS, NUM_EPISODES),
    "time_this_iter_s": TIME_THIS_ITER_S,
    "sample_time_s": _key(TIMERS, ENV_RUNNER_SAMPLING_TIMER),
    "learn_time_s": _key(TIMERS, LEARNER_UPDATE_TIMER),
    "sync_weights_time_s": _key(TIMERS, SYNCH_WORKER_WEIGHTS_TIMER),
    "env_runner_restarts": _key(FAULT_TOLERANCE_STATS, "num_remote_worker_restarts"),
    "healthy_env_runners": _key(FAULT_TOLERANCE_STATS, "num_healthy_workers"),
}


# What the learner logged (``learners/default_policy/<key>``), by column: the first key the
# algorithm logs. PPO logs its last minibatch's values; ddrl's SAC and TD3 the mean over their
# last learner call's updates. Empty where an algorithm has no such statistic (or before
# learning starts). value_loss: PPO's value-function loss, SAC's and TD3's critic loss.
LEARNER_KEYS = {
    "policy_loss": (POLICY_LOSS_KEY, "actor_loss"),
    "value_loss": (VF_LOSS_KEY, "critic_loss"),
    "q_mean": ("q_mean",),
    "alpha": ("alpha_value",),
    "entropy": (ENTROPY_KEY,),
    "logp_mean": ("logps",),
    "kl": (LEARNER_RESULTS_KL_KEY,),
    "vf_explained_var": (LEARNER_RESULTS_VF_EXPLAINED_VAR_KEY,),
}


def _learner_key(name: str) -> str:
    return _key(LEARNER_RESULTS, DEFAULT_MODULE_ID, name)


# Timers summed into one column (replay-buffer work of the off-policy algorithms).
SUMMED_RESULT_KEYS = {
    "replay_time_s": (_key(TIMERS, REPLAY_BUFFER_ADD_DATA_TIMER),
                      _key(TIMERS, REPLAY_BUFFER_SAMPLE_TIMER),
                      _key(TIMERS, REPLAY_BUFFER_UPDATE_PRIOS_TIMER)),
}

# The per-iteration timers. RLlib logs them with ``log_time`` and by default reduces them
# with an exponential moving average (coefficient 0.01) across iterations, so the value in
# the result dict barely moves from one iteration to the next: it is not this iteration's
# time. :func:`use_per_iteration_timers` replaces them with sums that RLlib clears at
# every ``reduce()`` (once per ``Algorithm.train()``), so each result holds the seconds
# spent in that iteration (summed over the several ``training_step`` calls of one
# off-policy iteration).
TIMER_COLUMNS = ("sample_time_s", "learn_time_s", "sync_weights_time_s", "replay_time_s")
PER_ITERATION_TIMER_KEYS = tuple(
    [RESULT_KEYS[c] for c in TIMER_COLUMNS if c in RESULT_KEYS]
    + [k for c in TIMER_COLUMNS for k in SUMMED_RESULT_KEYS.get(c, ())]
)


def use_per_iteration_timers(metrics: Any) -> None:
    """Make ``metrics`` (an RLlib root ``MetricsLogger``) report per-iteration timer sums.

    Call it after building the algorithm and again after restoring a checkpoint (a restore
    replaces the logger's stats with the checkpoint's). ``log_time`` reuses an existing
    stats object of a key, so pre-creating each timer as ``reduce="sum"`` changes how RLlib
    reduces it without touching RLlib's code.
    """
    for flat in PER_ITERATION_TIMER_KEYS:
        key = tuple(flat.split("/"))
        metrics.delete(*key, key_error=False)
        metrics.log_value(key, 0.0, reduce="sum")


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
    for col, keys in SUMMED_RESULT_KEYS.items():
        present = [_number(lookup(result, k)) for k in keys if lookup(result, k, None) is not None]
        row[col] = math.fsum(0.0 if math.isnan(v) else v for v in present) if present else math.nan
    for col, names in LEARNER_KEYS.items():
        found = (lookup(result, _learner_key(n), None) for n in names)
        row[col] = _number(next((v for v in found if v is not None), math.nan))
    timers = result.get("timers")
    if isinstance(timers, Mapping):
        # A per-iteration timer that exists but logged nothing this iteration (SAC before
        # learning starts) reduces to NaN: that is zero seconds, not a missing value.
        for col in ("sample_time_s", "learn_time_s", "sync_weights_time_s"):
            name = RESULT_KEYS[col].split("/", 1)[1]
            if name in timers and math.isnan(row[col]):
                row[col] = 0.0
    row["iteration"] = iteration
    row["time_total_s"] = time_total_s
    row["session"] = session
    row["timestamp"] = timestamp
    t = row["time_this_iter_s"]
    row["env_steps_per_s"] = row["env_steps_this_iter"] / t if t and t > 0 else math.nan
    for col in ("env_steps", "env_steps_this_iter", "gradient_updates", "gradient_updates_total",
                "episodes_this_iter",
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
