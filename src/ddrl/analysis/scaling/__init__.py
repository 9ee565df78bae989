"""The scaling study: steady-state iteration times, speedups and Amdahl fits. The general
statistics, by step: :mod:`.runs` (the runs as one table), :mod:`.statistics` (iteration
times, bootstrap, speedups, breakdown) and :mod:`.amdahl` (the fits). The comparison with
the thesis's published numbers is :mod:`ddrl.analysis.thesis_comparison`.

Input is every run's ``progress.csv`` (one row per training iteration) joined with its
``run.json``. For each resource configuration (runs that differ only in seed are pooled):

- **steady-state iteration time**: the median of ``time_this_iter_s`` over the iterations
  after the first ``warmup_iterations`` of each run (the first iterations include JIT,
  actor start-up and replay warm-up), with its inter-quartile range;
- **env steps/s**: env steps sampled over those iterations / their summed time; likewise
  **updates/s** and **updates per env step** from the gradient updates each iteration
  recorded (off-policy runs; the ``update_schedule`` column says which semantics: the
  thesis's ``rllib1_round_robin`` or ddrl's ``fixed_ratio``, see
  :mod:`ddrl.algorithms.offpolicy`);
- **breakdown**: the share of that time spent sampling, learning, syncing weights and in
  replay-buffer work, from RLlib's timers (per-iteration sums, see
  :func:`ddrl.training.progress.use_per_iteration_timers`), and the unaccounted rest;
- **speedup** ``T(baseline) / T`` and **parallel efficiency** ``speedup / workers``, where the
  baseline is the 1-env-runner, no-GPU configuration of the same algorithm, env,
  hyperparameters, envs per runner and CPUs per runner;
- an **Amdahl fit** per series (CPU only; with GPU): ``T(n) = a + b / n`` by least squares on
  relative residuals, ``a, b >= 0``. The serial fraction is ``f = a / (a + b)``; its
  uncertainty is a bootstrap over the steady-state iterations of every configuration.

Nothing is invented: a configuration without its baseline, or a run without a timer
column, gets an empty cell and a note saying which baseline or column is missing.
"""

from __future__ import annotations

from ddrl.analysis.scaling.amdahl import AmdahlFit, amdahl_curve, fit_amdahl, fit_series
from ddrl.analysis.scaling.runs import (
    BASELINE_KEYS,
    CONFIG_KEYS,
    DEFAULT_BOOTSTRAP,
    FIXED_RATIO,
    ON_POLICY,
    PARTS,
    REQUIRED_COLUMNS,
    REQUIRED_TIMERS,
    ROUND_ROBIN,
    SCHEDULE_SETTINGS,
    ScalingError,
    baseline_description,
    baseline_of,
    concurrency,
    in_series,
    load_runs,
)
from ddrl.analysis.scaling.statistics import (
    ScalingResult,
    aggregate,
    block_length,
    bootstrap_medians,
    interval_method,
    steady_state,
)

__all__ = [
    "AmdahlFit", "BASELINE_KEYS", "CONFIG_KEYS", "DEFAULT_BOOTSTRAP", "FIXED_RATIO", "ON_POLICY",
    "PARTS", "REQUIRED_COLUMNS", "REQUIRED_TIMERS", "ROUND_ROBIN", "SCHEDULE_SETTINGS",
    "ScalingError", "ScalingResult", "aggregate", "amdahl_curve", "baseline_description",
    "baseline_of", "block_length", "bootstrap_medians", "concurrency", "fit_amdahl",
    "fit_series", "in_series", "interval_method", "load_runs", "steady_state",
]
