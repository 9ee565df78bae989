"""Checkpoints that are either complete or ignored.

RLlib writes a checkpoint as a directory of files. ddrl saves it under a temporary name,
adds a manifest (``ddrl_checkpoint.json``: run id, iteration, env steps, every file with its
size) and only then renames it into place. A checkpoint whose manifest is missing or whose
files do not match it is treated as corrupt and skipped.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
from pathlib import Path
from typing import Any

from ddrl import atomic
from ddrl.errors import CheckpointError

MANIFEST = "ddrl_checkpoint.json"
PATTERN = re.compile(r"^iter_(\d{6})$")
log = logging.getLogger(__name__)


def _file_sizes(root: Path) -> dict[str, int]:
    return {
        str(p.relative_to(root)): p.stat().st_size
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != MANIFEST
    }


def save(algo: Any, root: Path, iteration: int, meta: dict[str, Any]) -> Path:
    """Save ``algo`` as ``root/iter_NNNNNN`` with a manifest; return its path."""
    root.mkdir(parents=True, exist_ok=True)
    name = f"iter_{iteration:06d}"
    target, tmp = root / name, root / f".{name}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        algo.save_to_path(str(tmp))
        manifest = {**meta, "iteration": iteration, "files": _file_sizes(tmp)}
        atomic.write_json(tmp / MANIFEST, manifest)
        if target.exists():
            shutil.rmtree(target)
        os.replace(tmp, target)
    except OSError as err:
        shutil.rmtree(tmp, ignore_errors=True)
        raise CheckpointError(
            f"cannot write checkpoint {target}: {err.strerror or err} "
            "(is the disk full or the path read-only?)"
        ) from err
    return target


def read_manifest(path: Path) -> dict[str, Any]:
    """The manifest of a checkpoint, after checking its files; raises CheckpointError."""
    path = Path(path)
    if not path.is_dir():
        raise CheckpointError(f"checkpoint {path} does not exist")
    try:
        manifest = json.loads((path / MANIFEST).read_text())
    except FileNotFoundError:
        raise CheckpointError(f"checkpoint {path} is incomplete: no {MANIFEST}") from None
    except (OSError, json.JSONDecodeError) as err:
        raise CheckpointError(f"checkpoint {path} has an unreadable {MANIFEST}: {err}") from None
    actual = _file_sizes(path)
    for rel, size in manifest.get("files", {}).items():
        if rel not in actual:
            raise CheckpointError(f"checkpoint {path} is corrupt: {rel} is missing")
        if actual[rel] != size:
            raise CheckpointError(
                f"checkpoint {path} is corrupt: {rel} has {actual[rel]} bytes, expected {size}"
            )
    return manifest


def listed(root: Path) -> list[Path]:
    """Checkpoint directories under ``root``, oldest first (complete or not)."""
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and PATTERN.match(p.name))


def latest_valid(root: Path, run_id: str | None = None) -> tuple[Path, dict[str, Any]] | None:
    """Newest checkpoint that passes its manifest check (and belongs to ``run_id``)."""
    for path in reversed(listed(root)):
        try:
            manifest = read_manifest(path)
        except CheckpointError as err:
            log.warning("skipping %s; falling back to an earlier checkpoint", err)
            continue
        if run_id and manifest.get("run_id") != run_id:
            log.warning("skipping checkpoint %s: it belongs to run %s, not %s",
                        path, manifest.get("run_id"), run_id)
            continue
        return path, manifest
    return None


DOOMED_SUFFIX = ".deleting"


def prune(root: Path, keep: int) -> None:
    """Keep the newest ``keep`` checkpoints.

    Each old checkpoint is first renamed to a hidden ``.<name>.deleting`` (atomic), then
    deleted: a job killed mid-delete leaves a hidden leftover that :func:`listed` ignores
    (and the next prune removes), never a half-deleted ``iter_N``.
    """
    for leftover in root.glob(f".*{DOOMED_SUFFIX}") if root.is_dir() else []:
        shutil.rmtree(leftover, ignore_errors=True)
    for path in listed(root)[:-keep] if keep > 0 else []:
        doomed = path.with_name(f".{path.name}{DOOMED_SUFFIX}")
        try:
            os.replace(path, doomed)
        except OSError:
            continue
        shutil.rmtree(doomed, ignore_errors=True)


def resolve(path: str | Path) -> tuple[Path, dict[str, Any]]:
    """The newest complete checkpoint at ``path``, as an absolute path, and its manifest.

    ``path`` (relative or absolute) is a checkpoint folder (a run's ``checkpoint/`` or a
    ``work/checkpoints/iter_N``), a folder of them (``work/checkpoints``), or a run folder:
    its final ``checkpoint/``, else the newest complete one in ``work/checkpoints``.
    """
    path = Path(path).expanduser().resolve()
    if (path / MANIFEST).exists() or PATTERN.match(path.name) or path.name == "checkpoint":
        return path, read_manifest(path)
    if (path / "checkpoint").is_dir():
        try:
            return path / "checkpoint", read_manifest(path / "checkpoint")
        except CheckpointError as err:
            log.warning("%s; looking in work/checkpoints", err)
    for root in (path, path / "work" / "checkpoints"):
        found = latest_valid(root)
        if found:
            return found[0], found[1]
    raise CheckpointError(
        f"no complete checkpoint at {path}: expected a checkpoint folder (with {MANIFEST}), "
        "a folder of iter_N checkpoints, or a run folder"
    )


def load_algorithm(path: str | Path) -> Any:
    """``Algorithm.from_checkpoint`` for a ddrl checkpoint, run folder or checkpoint root.

    RLlib 2.60 hands the path to pyarrow's filesystem, which rejects relative paths ("URI
    has empty scheme"); this resolves the path first and picks the newest complete
    checkpoint (see :func:`resolve`). Starts Ray if it is not running.
    """
    from ray.rllib.algorithms.algorithm import Algorithm

    import ddrl.algorithms  # noqa: F401 - registers ddrl's algorithm classes

    checkpoint, _ = resolve(path)
    return Algorithm.from_checkpoint(str(checkpoint))
