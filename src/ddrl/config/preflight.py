"""Moved to :mod:`ddrl.study.preflight`. This old path only re-exports what
workflow/rules/common.smk still imports from here. Nothing in src imports it
(tests/unit/test_layout.py)."""

from __future__ import annotations

from ddrl.study.preflight import check_local_cpus, check_local_gpus  # noqa: F401

__all__ = ["check_local_cpus", "check_local_gpus"]
