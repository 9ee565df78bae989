"""Small helpers for the workflow's scripts."""

from __future__ import annotations

import contextlib
import logging
import sys
import traceback
from pathlib import Path
from typing import Callable, Iterator


@contextlib.contextmanager
def log_to(path: str | Path) -> Iterator[Callable[[str], None]]:
    """Send logging to ``path`` as well as the console; yield a print that does both.

    A failure is written to the log with its traceback before it propagates.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", buffering=1) as fh:
        handler = logging.StreamHandler(fh)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        root = logging.getLogger()
        root.addHandler(handler)
        if root.level > logging.INFO or root.level == logging.NOTSET:
            root.setLevel(logging.INFO)

        def echo(line: str) -> None:
            print(line, flush=True)
            fh.write(line + "\n")

        try:
            yield echo
        except BaseException:
            fh.write(traceback.format_exc())
            raise
        finally:
            root.removeHandler(handler)
            sys.stdout.flush()
