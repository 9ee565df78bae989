"""Writes that never leave a half-written file under its final name.

Everything goes to a temporary name in the same directory first, is flushed to disk, and
is then renamed over the target (atomic on POSIX filesystems).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Iterator

from ddrl.errors import OutputError


@contextlib.contextmanager
def atomic_path(target: str | Path, suffix: str = "") -> Iterator[Path]:
    """Yield a temporary path beside ``target``; rename it over ``target`` on success.

    Use this for writers that want a path (``fig.savefig``, ``df.to_csv``). On error the
    temporary file is removed and ``target`` is untouched.
    """
    target = Path(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=suffix or target.suffix,
                                   dir=target.parent)
    except OSError as err:
        _raise_output_error(target, err)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        with open(tmp_path, "rb+") as fh:
            os.fsync(fh.fileno())
        os.chmod(tmp_path, 0o644)
        os.replace(tmp_path, target)
    except OSError as err:
        _raise_output_error(target, err)
    finally:
        tmp_path.unlink(missing_ok=True)


# Errors of the disk or folder, not of the data: reported as "cannot write <target>".
_DISK_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM}


def _raise_output_error(target: Path, err: OSError) -> None:
    """Re-raise ``err``; a disk or permission error as an OutputError naming ``target``."""
    if isinstance(err, OutputError) or err.errno not in _DISK_ERRNOS:
        raise err
    hint = {errno.ENOSPC: "is the disk full?", errno.EDQUOT: "is the disk quota used up?",
            errno.EROFS: "the folder is on a read-only filesystem"}.get(
                err.errno, "is the folder read-only for this user?")
    raise OutputError(err.errno, f"cannot write {target}: {os.strerror(err.errno)} ({hint}); "
                                 "nothing was written under that name") from err


def write_text(target: str | Path, text: str) -> None:
    with atomic_path(target) as tmp:
        tmp.write_text(text)


def write_json(target: str | Path, data: Any) -> None:
    write_text(target, json.dumps(data, indent=2, sort_keys=False, default=_json_default) + "\n")


def _json_default(obj: Any) -> Any:
    if hasattr(obj, "item"):  # numpy scalars
        return obj.item()
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    return repr(obj)


def replace_dir(source: str | Path, target: str | Path) -> None:
    """Copy directory ``source`` to ``target`` so that ``target`` appears complete or not at all."""
    source, target = Path(source), Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        shutil.copytree(source, tmp, dirs_exist_ok=True)
        if target.exists():
            old = target.with_name(f".{target.name}.old")
            shutil.rmtree(old, ignore_errors=True)
            os.replace(target, old)
            os.replace(tmp, target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
