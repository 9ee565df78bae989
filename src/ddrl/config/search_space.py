"""Moved: the search spaces are :mod:`ddrl.study.search_space`, ``experiment_run_ids`` is
:mod:`ddrl.study.study`'s. This old path only re-exports what workflow/rules/common.smk
still imports from here. Nothing in src imports it (tests/unit/test_layout.py)."""

from __future__ import annotations

from ddrl.study.study import experiment_run_ids  # noqa: F401

__all__ = ["experiment_run_ids"]
