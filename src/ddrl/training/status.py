"""``ddrl status``: where each run of a study stands, with an ETA.

A run is, checked in this order:

- **done**: ``run.json`` exists and says ``"status": "complete"`` (train writes it last,
  atomically, after the final checkpoint and ``progress.csv``).
- **running**: its live files (``work/progress.csv``, rewritten every iteration, or
  ``work/started``) changed within ``stale_after_s`` (default 900 s, or 3 x its slowest
  recent iteration if that is longer); or Snakemake holds it: a lock in
  ``.snakemake/locks`` lists its ``run.json`` and ``.snakemake/incomplete`` marks it, and it
  has started (``work/`` exists). File times work for every executor (local, Slurm, Batch),
  where process ids and Slurm states are not visible from here.
- **failed**: its training log (``logs/train/<run_id>.log``) shows an error (a Python
  traceback or ``Error:`` line), or Snakemake marked it incomplete with no Snakemake holding
  it, or it started but its live files went stale (killed, out of time, a lost node).
  Rerunning the workflow resumes it from its newest checkpoint.
- **pending**: none of the above (not started, or queued and not yet started).

ETA: running runs extrapolate the env-step rate of their last 5 iterations to the budget
(or the time limit, whichever comes first). Pending runs are estimated from the rate of the
other runs with the same algorithm and env (marked ``~``); no such run, no estimate.
"""

from __future__ import annotations

import base64
import csv
import datetime as dt
import json
import re
import statistics
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterable

STALE_AFTER_S = 900.0
STATES = ("done", "running", "failed", "pending")
ERROR_LINE = re.compile(r"^(\S*(Error|Exception)\b[^ ]*:|ddrl: error)")
TRACEBACK = "Traceback (most recent call last):"


@dataclass
class RunStatus:
    run_id: str
    state: str
    iteration: int | None = None
    env_steps: int | None = None
    budget_env_steps: int | None = None
    episode_return_mean: float | None = None
    eta_s: float | None = None
    eta_estimated: bool = False   # pending: from other runs' rates
    note: str = ""


def _rows(path: Path) -> list[dict[str, str]]:
    try:
        with path.open(newline="") as fh:
            return list(csv.DictReader(fh))
    except (FileNotFoundError, csv.Error):
        return []


def _float(value: Any) -> float | None:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return v if v == v else None


def _rate(rows: list[dict[str, str]]) -> float | None:
    """Env steps per second over the last 5 iterations."""
    recent = rows[-5:]
    secs = sum(_float(r.get("time_this_iter_s")) or 0.0 for r in recent)
    steps = sum(_float(r.get("env_steps_this_iter")) or 0.0 for r in recent)
    return steps / secs if secs > 0 and steps > 0 else None


def _remaining_s(budget: dict[str, Any], env_steps: float, time_total_s: float,
                 rate: float | None) -> float | None:
    left = []
    if budget.get("env_steps") and rate:
        left.append(max(0.0, budget["env_steps"] - env_steps) / rate)
    if budget.get("time_limit_s"):
        left.append(max(0.0, budget["time_limit_s"] - time_total_s))
    return min(left) if left else None


def _log_error(log: Path) -> str | None:
    """The last error line of a training log (None: no error in it)."""
    try:
        lines = log.read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return None
    tb = max((i for i, ln in enumerate(lines) if ln.strip() == TRACEBACK), default=None)
    if tb is not None:  # the exception line: the last unindented line after the traceback
        tail = [ln.strip() for ln in lines[tb + 1:] if ln.strip() and not ln[0].isspace()]
        return (tail[-1] if tail else TRACEBACK)[:160]
    hits = [ln.strip() for ln in lines if ERROR_LINE.match(ln.strip())]
    return hits[-1][:160] if hits else None


def _decode_marker(path: Path, root: Path) -> str | None:
    """The output path a Snakemake marker file stands for (base64 name, split at 255 chars)."""
    b64 = "".join(part.lstrip("@") for part in path.relative_to(root).parts)
    try:
        return base64.urlsafe_b64decode(b64.encode()).decode()
    except (ValueError, UnicodeDecodeError):
        return None


def snakemake_state(workdir: Path) -> tuple[set[str], set[str]]:
    """(outputs Snakemake holds a lock on, outputs it marked incomplete), as written."""
    meta = Path(workdir) / ".snakemake"
    locked: set[str] = set()
    for lock in (meta / "locks").glob("*.output.lock"):
        try:
            locked.update(ln.strip() for ln in lock.read_text().splitlines() if ln.strip())
        except OSError:
            continue
    incomplete = {m for f in (meta / "incomplete").rglob("*") if f.is_file()
                  if (m := _decode_marker(f, meta / "incomplete"))}
    return locked, incomplete


def _normal(paths: Iterable[str], workdir: Path) -> set[str]:
    return {str((workdir / p).resolve()) for p in paths}


def run_status(spec: Any, run_dir: Path, log: Path, *, locked: set[str],
               incomplete: set[str], now: float, stale_after_s: float = STALE_AFTER_S
               ) -> RunStatus:
    run_dir = Path(run_dir)
    budget = dict(spec.budget)
    st = RunStatus(spec.run_id, "pending", budget_env_steps=budget.get("env_steps"))
    run_json = run_dir / "run.json"
    if run_json.exists():
        try:
            record = json.loads(run_json.read_text())
        except (OSError, json.JSONDecodeError) as err:
            record = {}
            st.note = f"unreadable run.json ({err})"
        if record.get("status") == "complete":
            result = record.get("result", {})
            st.state = "done"
            st.iteration = result.get("iterations")
            st.env_steps = result.get("env_steps")
            st.episode_return_mean = _float(result.get("episode_return_mean"))
            st.eta_s = 0.0
            return st

    rows = _rows(run_dir / "work" / "progress.csv")
    if rows:
        last = rows[-1]
        st.iteration = int(float(last["iteration"]))
        st.env_steps = int(float(last["env_steps"]))
        st.episode_return_mean = _float(last.get("episode_return_mean"))
    live = [p for p in (run_dir / "work" / "progress.csv", run_dir / "work" / "started")
            if p.exists()]
    age = now - max(p.stat().st_mtime for p in live) if live else None
    slowest = max((_float(r.get("time_this_iter_s")) or 0.0 for r in rows[-5:]), default=0.0)
    stale_after = max(stale_after_s, 3 * slowest)
    target = str((run_dir / "run.json").resolve())
    held = target in locked and target in incomplete
    error = _log_error(log)

    if age is not None and (age <= stale_after or held):
        st.state = "running"
        st.note = f"updated {_duration(age)} ago" + ("" if age <= stale_after else
                                                     " (Snakemake holds it)")
        time_total = _float(rows[-1].get("time_total_s")) if rows else 0.0
        st.eta_s = _remaining_s(budget, st.env_steps or 0, time_total or 0.0, _rate(rows))
    elif error:
        st.state, st.note = "failed", f"train log: {error}"
    elif target in incomplete:
        st.state, st.note = "failed", "Snakemake marked it incomplete (its job stopped)"
    elif age is not None:
        st.state = "failed"
        st.note = f"no progress for {_duration(age)} (killed?); a rerun resumes it"
    return st


def study_status(study: Any, workdir: str | Path = ".", now: float | None = None,
                 stale_after_s: float = STALE_AFTER_S) -> list[RunStatus]:
    """One :class:`RunStatus` per run of ``study`` (paths relative to ``workdir``)."""
    workdir = Path(workdir)
    now = time.time() if now is None else now
    locked, incomplete = snakemake_state(workdir)
    locked, incomplete = _normal(locked, workdir), _normal(incomplete, workdir)
    out = []
    for run_id, spec in study.runs.items():
        run_dir = workdir / study.run_dir(run_id)
        log = workdir / study.root / "logs" / "train" / f"{run_id}.log"
        out.append(run_status(spec, run_dir, log, locked=locked, incomplete=incomplete,
                              now=now, stale_after_s=stale_after_s))
    _estimate_pending(study, workdir, out)
    return out


def _estimate_pending(study: Any, workdir: Path, statuses: list[RunStatus]) -> None:
    rates: dict[tuple[str, str], list[float]] = {}
    for st in statuses:
        if st.state in ("done", "running"):
            spec = study.runs[st.run_id]
            run_dir = workdir / study.run_dir(st.run_id)
            rows = _rows(run_dir / "progress.csv") or _rows(run_dir / "work" / "progress.csv")
            if (rate := _rate(rows)) is not None:
                rates.setdefault((spec.algorithm, spec.env), []).append(rate)
    for st in statuses:
        if st.state != "pending":
            continue
        spec = study.runs[st.run_id]
        known = rates.get((spec.algorithm, spec.env))
        if known:
            st.eta_s = _remaining_s(dict(spec.budget), 0, 0.0, statistics.median(known))
            st.eta_estimated = st.eta_s is not None


def _duration(seconds: float | None) -> str:
    return "-" if seconds is None else str(dt.timedelta(seconds=round(max(0.0, seconds))))


def format_table(study_name: str, statuses: list[RunStatus]) -> str:
    counts = {s: sum(st.state == s for st in statuses) for s in STATES}
    left = [st.eta_s for st in statuses if st.state in ("running", "pending")]
    total = (_duration(sum(left)) if left and all(x is not None for x in left) else "?")
    lines = [f"study {study_name}: {len(statuses)} run(s): "
             + ", ".join(f"{counts[s]} {s}" for s in STATES)
             + (f"; remaining ~{total} run one after another" if left else "")]
    header = ("run", "state", "iter", "env_steps", "return", "eta", "note")
    table = [header]
    for st in statuses:
        steps = "-" if st.env_steps is None else str(st.env_steps)
        if st.budget_env_steps:
            steps += f"/{st.budget_env_steps}"
        ret = "-" if st.episode_return_mean is None else f"{st.episode_return_mean:.2f}"
        eta = "-" if st.state in ("done", "failed") else (
            ("~" if st.eta_estimated else "") + _duration(st.eta_s) if st.eta_s is not None
            else "?")
        table.append((st.run_id, st.state, "-" if st.iteration is None else str(st.iteration),
                      steps, ret, eta, st.note))
    widths = [max(len(r[i]) for r in table) for i in range(len(header) - 1)]
    for row in table:
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths)) + "  " + row[-1])
    return "\n".join(line.rstrip() for line in lines)


def as_json(statuses: list[RunStatus]) -> str:
    return json.dumps([asdict(st) for st in statuses], indent=1)
