"""Moved to :mod:`ddrl.study.study`. This old path only re-exports it, for the callers that
still import it from here: workflow/rules/common.smk and bench/ (learning_locomotion.py,
thesis_grid.py). Nothing in src imports it (tests/unit/test_layout.py)."""

from __future__ import annotations

from ddrl.study.study import (  # noqa: F401
    Experiment,
    RunSpec,
    Study,
    expand_runs,
    load_yaml,
    validate_config,
)

__all__ = ["Experiment", "RunSpec", "Study", "expand_runs", "load_yaml", "validate_config"]
