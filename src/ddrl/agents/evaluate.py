"""Deterministic evaluation of a run's checkpoints: ``eval.json`` and ``eval_curve.csv``.

The policy is restored with :func:`ddrl.agents.policy.load_run_policy` (RLModule plus observation
filter state plus action rescaling), then plays N episodes in a fresh env, one evaluation
seed per episode, with the deterministic action (no exploration noise). No Ray is started.

Evaluation seeds
----------------
RLlib seeds the envs it trains on with ``seed + worker_index (+ sub-env index)``, so every
training seed lies in ``[seed, seed + num_env_runners + num_envs_per_env_runner]``. The
evaluation seeds are drawn from ``numpy.random.SeedSequence([seed, EVAL_TAG])`` in
``[2**31, 2**32)`` and any seed in the training range is skipped, so the two never overlap,
and the first k seeds of a run are the same whatever N is (a longer evaluation extends a
shorter one).

``eval.json`` fields
--------------------
``run_id, algorithm, env, seed, resources`` (the run); ``config_id`` (its configuration:
:func:`ddrl.runs.config_identity`, the same for every seed); ``checkpoint`` (``iteration``,
``env_steps``); ``episodes``, ``eval_seeds``, ``returns``, ``lengths`` (per episode, in seed
order); ``return_mean, return_std`` (population std over episodes), ``return_min,
return_max, return_median, length_mean``; ``deterministic`` (always true);
``observation_filter`` (the restored MeanStdFilter's sample count and clip, or null);
``wall_time_s`` and ``created``.
"""

from __future__ import annotations

import csv
import io
import logging
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from ddrl import atomic
from ddrl.training import checkpoints, provenance
from ddrl.errors import CheckpointError, ConfigError
from ddrl.analysis.tables import Column, distinguishing_columns, write_formats
from ddrl.runs import RunFolder, RunSpec, config_identity

log = logging.getLogger(__name__)

EVAL_TAG = 0x6576616C  # "eval"
EVAL_SEED_LOW = 2**31
CURVE_COLUMNS = ["iteration", "env_steps", "episodes", "return_mean", "return_std",
                 "return_min", "return_max", "return_median", "length_mean"]


def training_seeds(spec: RunSpec) -> range:
    """Every env seed RLlib may use while training ``spec`` (see the module docstring)."""
    res = spec.resources
    span = res["num_env_runners"] + res["num_envs_per_env_runner"] + 1
    return range(spec.seed, spec.seed + span)


def eval_seeds(spec: RunSpec, n: int) -> list[int]:
    """``n`` evaluation seeds for ``spec``: reproducible, disjoint from its training seeds."""
    if n < 1:
        raise ConfigError(f"run {spec.run_id}: evaluation needs at least 1 episode, got {n}")
    train = training_seeds(spec)
    seeds: list[int] = []
    words = 2 * n + 8
    while len(seeds) < n:
        state = np.random.SeedSequence([spec.seed, EVAL_TAG]).generate_state(words, np.uint32)
        seeds = []
        for w in state:
            s = int(w) | EVAL_SEED_LOW
            if s not in train and s not in seeds:
                seeds.append(s)
            if len(seeds) == n:
                break
        words *= 2
    return seeds


def run_episode(act: Callable[[np.ndarray], np.ndarray], env: Any, seed: int, *,
                max_steps: int | None = None,
                on_step: Callable[[int, float, Any], None] | None = None) -> tuple[float, int]:
    """Play one episode from ``env.reset(seed=seed)``; return (return, length).

    ``on_step(step, return_so_far, env)`` is called after the reset (step 0) and after each
    step; rendering uses it to grab frames.
    """
    obs, _ = env.reset(seed=seed)
    total, steps = 0.0, 0
    if on_step:
        on_step(0, 0.0, env)
    while True:
        obs, reward, terminated, truncated, _ = env.step(act(obs))
        total += float(reward)
        steps += 1
        if on_step:
            on_step(steps, total, env)
        if terminated or truncated or (max_steps and steps >= max_steps):
            return total, steps


def summarize(returns: Sequence[float], lengths: Sequence[int]) -> dict[str, float]:
    r = np.asarray(returns, dtype=np.float64)
    return {
        "return_mean": float(r.mean()),
        "return_std": float(r.std()),
        "return_min": float(r.min()),
        "return_max": float(r.max()),
        "return_median": float(np.median(r)),
        "length_mean": float(np.mean(lengths)),
    }


def evaluate_policy(policy: Any, seeds: Sequence[int], env_config: dict | None = None
                    ) -> tuple[list[float], list[int]]:
    """Returns and lengths of one deterministic episode per seed."""
    from ddrl.envs import make_env

    env = make_env(policy.env, **dict(env_config or {}))
    returns, lengths = [], []
    try:
        for seed in seeds:
            ret, length = run_episode(policy.act, env, seed)
            returns.append(ret)
            lengths.append(length)
    finally:
        env.close()
    return returns, lengths


def evaluate_run(spec: RunSpec, run_dir: str | Path, episodes: int,
                 checkpoint: str | Path | None = None) -> dict[str, Any]:
    """Evaluate a run's final checkpoint (or ``checkpoint``); return the eval.json record."""
    from ddrl.agents.policy import load_run_policy

    started = time.perf_counter()
    seeds = eval_seeds(spec, episodes)
    policy = load_run_policy(spec, run_dir, checkpoint)
    returns, lengths = evaluate_policy(policy, seeds, dict(spec.env_config))
    meta = policy.metadata()
    return {
        "run_id": spec.run_id,
        "algorithm": spec.algorithm,
        "env": spec.env,
        "seed": spec.seed,
        "resources": spec.resource_label,
        "config_id": spec.config_id,
        "checkpoint": {"iteration": policy.iteration, "env_steps": policy.env_steps},
        "episodes": len(seeds),
        **summarize(returns, lengths),
        "returns": returns,
        "lengths": lengths,
        "eval_seeds": seeds,
        "deterministic": True,
        "observation_filter": meta["observation_filter"],
        "wall_time_s": round(time.perf_counter() - started, 3),
        "created": provenance.now_iso(),
    }


def write_eval(spec: RunSpec, run_dir: str | Path, out: str | Path, episodes: int) -> dict[str, Any]:
    """``evaluate_run`` into ``out`` (written atomically, nothing on error)."""
    record = evaluate_run(spec, run_dir, episodes)
    atomic.write_json(out, record)
    return record


def curve_checkpoints(run_dir: str | Path, run_id: str) -> list[tuple[Path, dict[str, Any]]]:
    """Intermediate checkpoints of a run that pass their manifest check, oldest first."""
    found = []
    for path in checkpoints.listed(RunFolder(run_dir).work_checkpoints):
        try:
            manifest = checkpoints.read_manifest(path)
        except CheckpointError as err:
            log.warning("run %s: skipping %s", run_id, err)
            continue
        if manifest.get("run_id") == run_id:
            found.append((path, manifest))
    return found


def evaluate_curve(spec: RunSpec, run_dir: str | Path, episodes: int) -> list[dict[str, Any]]:
    """One row per checkpoint (intermediate ones and the final one), oldest first."""
    from ddrl.agents.policy import load_run_policy

    run_dir = Path(run_dir)
    seeds = eval_seeds(spec, episodes)
    paths = {int(m["iteration"]): p for p, m in curve_checkpoints(run_dir, spec.run_id)}
    final = load_run_policy(spec, run_dir)  # also checks the final checkpoint
    paths[final.iteration] = RunFolder(run_dir).checkpoint
    rows = []
    for iteration in sorted(paths):
        policy = final if iteration == final.iteration else load_run_policy(
            spec, run_dir, paths[iteration])
        returns, lengths = evaluate_policy(policy, seeds, dict(spec.env_config))
        rows.append({"iteration": iteration, "env_steps": policy.env_steps,
                     "episodes": len(seeds), **summarize(returns, lengths)})
    return rows


def write_curve(spec: RunSpec, run_dir: str | Path, out: str | Path, episodes: int) -> list[dict]:
    rows = evaluate_curve(spec, run_dir, episodes)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=CURVE_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    atomic.write_text(out, buf.getvalue())
    return rows


# -- the study's returns table ---------------------------------------------------------------

TABLE_COLUMNS = ["experiment", "algorithm", "env", "resources", "config_id", "seeds",
                 "episodes_per_seed", "return_mean", "return_std", "return_min_seed",
                 "return_max_seed", "runs"]


def returns_table(records: Iterable[dict[str, Any]],
                  experiments: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """Per configuration (experiment, from ``experiments``: run id -> name, and ``config_id``:
    runs that differ in nothing but the seed): mean and sample std across its seeds of each
    run's mean evaluation return (std is empty for a single seed). A record without a
    ``config_id`` is a configuration of its own: it is never pooled with another run."""
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for rec in records:
        experiment = (experiments or {}).get(rec["run_id"], "")
        identity = rec.get("config_id") or f"run {rec['run_id']}"
        groups.setdefault((rec["algorithm"], rec["env"], rec["resources"], experiment, identity),
                          []).append(rec)
    rows = []
    for (algo, env, res, experiment, _), recs in sorted(groups.items()):
        recs = sorted(recs, key=lambda r: r["seed"])
        means = np.asarray([r["return_mean"] for r in recs], dtype=np.float64)
        rows.append({
            "experiment": experiment,
            "algorithm": algo,
            "env": env,
            "resources": res,
            "config_id": recs[0].get("config_id", ""),
            "seeds": " ".join(str(r["seed"]) for r in recs),
            "episodes_per_seed": min(int(r["episodes"]) for r in recs),
            "return_mean": float(means.mean()),
            "return_std": float(means.std(ddof=1)) if len(means) > 1 else None,
            "return_min_seed": float(means.min()),
            "return_max_seed": float(means.max()),
            "runs": " ".join(r["run_id"] for r in recs),
        })
    return rows


RETURNS_COLUMNS = [Column("experiment", "experiment"), Column("algorithm", "algorithm"),
                   Column("env", "env"), Column("resources", "resources"),
                   Column("n_seeds", "seeds"),
                   Column("return", "evaluation return (mean ± std across seeds)")]


def _returns_shown(rows: Sequence[dict[str, Any]]) -> "pd.DataFrame":
    """The returns table as shown (Markdown): seed count and ``mean ± std`` in one cell."""
    import pandas as pd

    return pd.DataFrame([{
        **r, "n_seeds": len(r["seeds"].split()),
        "return": (f"{r['return_mean']:.1f} ± {r['return_std']:.1f}" if r["return_std"] is not None
                   else f"{r['return_mean']:.1f} (1 seed)"),
    } for r in rows], columns=[*TABLE_COLUMNS, "n_seeds", "return"])


def _returns_footer(rows: Sequence[dict[str, Any]]) -> str:
    eps = sorted({r["episodes_per_seed"] for r in rows})
    return (f"Deterministic policy, {'/'.join(map(str, eps))} evaluation episodes per seed "
            "on seeds disjoint from training.")


def _with_config_id(record: dict[str, Any], eval_path: Path) -> dict[str, Any]:
    """``record`` with its ``config_id``; an eval.json written before it had one takes it
    from the run's ``run.json`` beside it (when there is one)."""
    folder = RunFolder(eval_path.parent)
    if "config_id" in record or not folder.run_json.exists():
        return record
    return {**record, "config_id": config_identity(folder.read_record()["spec"])}


def write_returns_table(eval_paths: Iterable[str | Path], out_csv: str | Path,
                        out_md: str | Path,
                        experiments: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """The returns table of the runs whose ``eval.json`` files are ``eval_paths``
    (``experiments``: run id -> experiment name, as in :func:`returns_table`)."""
    import json

    records = []
    for path in map(Path, eval_paths):
        try:
            records.append(_with_config_id(json.loads(path.read_text()), path))
        except (OSError, ValueError) as err:
            raise CheckpointError(f"cannot read evaluation {path}: {err}") from None
    if not records:
        raise ConfigError("no eval.json files given; the returns table needs at least one run")
    rows = returns_table(records, experiments)
    shown = _returns_shown(rows)
    columns = distinguishing_columns(shown, RETURNS_COLUMNS,
                                     by=["experiment", "algorithm", "env", "resources"])
    write_formats(shown, columns, {"csv": out_csv, "md": out_md},
                  csv_df=shown[TABLE_COLUMNS], footer=_returns_footer(rows))
    return rows
