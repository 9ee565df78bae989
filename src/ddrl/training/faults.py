"""Env-runner faults: tell a runner Ray will restart from one that is gone for good.

RLlib restarts a crashed env runner (``fault_tolerance.max_env_runner_restarts`` times, as
Ray's actor ``max_restarts``). Past that limit the runner stays dead and RLlib keeps
training with no samples at all, so an env-steps budget would never be reached. ddrl checks
after every iteration and fails the run with the env and the runner's last error instead.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

from ddrl.errors import DdrlError

log = logging.getLogger(__name__)
# The last line of a Python traceback: "package.module.SomeError: message".
_EXC_LINE = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt)\b.*")


class EnvRunnerFailure(DdrlError):
    """An env runner crashed more often than the run allows."""


def _exception_line(text: str) -> str | None:
    """The most telling exception line of a traceback: the last one with a message."""
    found = [line.strip() for line in text.splitlines()
             if _EXC_LINE.match(line.strip()) and not line.strip().startswith(("SystemExit", "ray."))]
    with_message = [line for line in found if ": " in line]
    return (with_message or found or [None])[-1]


def _death_of(info: dict[str, Any] | None) -> tuple[str, int | None, str | None] | None:
    """(cause, pid, error) of a permanently dead actor, or None while it lives or restarts."""
    if not info or info.get("State") != "DEAD":
        return None
    cause, pid, error = "the env runner process died", None, None
    death = info.get("DeathCause")
    failed = getattr(death, "creation_task_failure_context", None)
    if failed is not None and death.HasField("creation_task_failure_context"):
        # Its constructor raised: the traceback travels with the death cause.
        error = _exception_line(failed.formatted_exception_string)
        cause = "its constructor raised"
    ctx = getattr(death, "actor_died_error_context", None)
    if ctx is not None and death.HasField("actor_died_error_context"):
        cause = ctx.error_message or cause
        pid = ctx.pid or None
    return cause, pid, error


def _death(actor_id_hex: str) -> tuple[str, int | None, str | None] | None:
    import ray

    try:
        # Private, kept: the public ray.util.state.get_actor goes through the dashboard, which
        # ddrl's private Ray runs without; this reads the GCS directly.
        return _death_of(ray._private.state.actors(actor_id_hex))
    except Exception:  # noqa: BLE001 - diagnostics must not fail the run
        return None


def _last_exception(pid: int | None, max_bytes: int = 200_000) -> str | None:
    """The last exception line in the log of worker ``pid`` (Ray's session log folder)."""
    if not pid:
        return None
    try:
        import ray

        # Private, kept: Ray has no public call for this node's log folder.
        logs = Path(ray._private.worker._global_node.get_logs_dir_path())
    except Exception:  # noqa: BLE001 - not a local node
        return None
    found = []
    for path in sorted(logs.glob(f"worker-*-{pid}.*")):
        try:
            with open(path, "rb") as fh:
                fh.seek(0, 2)
                fh.seek(max(0, fh.tell() - max_bytes))
                found.append(fh.read().decode(errors="replace"))
        except OSError:
            continue
    return _exception_line("\n".join(found))


def _short(cause: str) -> str:
    """Ray's death message without its generic advice."""
    cause = cause.split(" Some common causes include")[0]
    cause = cause.replace("The actor is dead because its worker process has died. ", "")
    return cause.strip().rstrip(".")


def check_env_runners(algo: Any, env: str, max_restarts: int) -> None:
    """Raise :class:`EnvRunnerFailure` if an env runner of ``algo`` is dead for good."""
    group = getattr(algo, "env_runner_group", None)
    # Private, kept: EnvRunnerGroup's public calls skip dead runners; the actor handles of
    # the dead ones are only in its worker manager.
    manager = getattr(group, "_worker_manager", None)
    if manager is None or group.num_healthy_remote_workers() == group.num_remote_workers():
        return
    for index, actor in sorted(manager.actors().items()):
        death = _death(actor._actor_id.hex())
        if death is None:
            continue
        raise EnvRunnerFailure(
            f"env {env}: env runner {index} crashed more than "
            f"fault_tolerance.max_env_runner_restarts={max_restarts} time(s); "
            f"last error: {_detail(*death)}. Fix the env, or raise max_env_runner_restarts"
        )


def _detail(cause: str, pid: int | None, error: str | None) -> str:
    error = error or _last_exception(pid)
    return f"{error} ({_short(cause)})" if error else _short(cause)


def startup_failure(env: str, err: BaseException) -> DdrlError | None:
    """Why building the algorithm failed, if an env runner of this job could not start.

    RLlib then fails with an unrelated error (e.g. IndexError from an empty runner list);
    the runner's own death cause says what went wrong.
    """
    try:
        import ray

        job = ray.get_runtime_context().get_job_id()
        actors = ray._private.state.actors().values()  # private: see _death
    except Exception:  # noqa: BLE001 - diagnostics must not hide the original error
        return None
    for info in actors:
        if "EnvRunner" not in str(info.get("ActorClassName")) or info.get("JobID") not in (None, job):
            continue
        death = _death_of(info)
        if death is not None:
            return EnvRunnerFailure(f"env {env}: the env runners could not start; "
                                    f"error: {_detail(*death)} ({type(err).__name__} in RLlib)")
    return None
