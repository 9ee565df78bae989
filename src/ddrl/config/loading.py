"""Reading a YAML config file, with errors that name the file, line and column."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from ddrl.errors import ConfigError


def load_yaml(path: str | Path) -> Any:
    """Read a YAML file; syntax errors name the file, line and column."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as err:
        raise ConfigError(f"cannot read config {path}: {err.strerror}") from None
    try:
        return yaml.safe_load(text)
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "unknown position"
        raise ConfigError(f"{path}: YAML syntax error at {where}: {err.problem}") from None
