"""A config section stated as JSON Schema: its defaults, and a user's values merged over them.

Every stage that reads an optional section of a study config (``evaluation``, ``render``,
``export``, ``tracking``) fills it in with :func:`merge_section`, so a key nobody knows is an
error that names it, wherever the section is read.
"""

from __future__ import annotations

import copy
from typing import Any, Mapping

from ddrl.errors import ConfigError


def section_defaults(schema: Mapping[str, Any]) -> dict[str, Any]:
    """Every property of an object schema with its default (None where it has none);
    nested objects get theirs."""
    out = {}
    for key, sub in schema["properties"].items():
        if sub.get("type") == "object":
            out[key] = section_defaults(sub)
        else:
            out[key] = copy.deepcopy(sub.get("default"))
    return out


def merge_section(schema: Mapping[str, Any], given: Any, where: str) -> dict[str, Any]:
    """``given`` (a mapping, or None) over the defaults of ``schema``; an unknown key raises
    :class:`ConfigError` naming ``where`` and the keys allowed."""
    if given is None:
        given = {}
    if not isinstance(given, Mapping):
        raise ConfigError(f"{where}: expected a mapping, got {type(given).__name__}")
    allowed = schema["properties"]
    unknown = sorted(set(given) - set(allowed))
    if unknown:
        raise ConfigError(
            f"{where}: unknown setting(s) {unknown}; allowed: {', '.join(sorted(allowed))}"
        )
    out = section_defaults(schema)
    for key, value in given.items():
        sub = allowed[key]
        out[key] = merge_section(sub, value, f"{where}.{key}") if sub.get("type") == "object" else value
    return out
