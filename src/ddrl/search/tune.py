"""Adaptive search: one Ray Tune job with Optuna (TPE) and ASHA early stopping.

The trainable builds its RLlib algorithm through ddrl's registry
(``get_algorithm(name).build(spec)``), so a search space names hyperparameters exactly as a
study config does. The Tune experiment lives in ``results/<study>/search/<id>/tune/``;
when a killed job is started again, :func:`run_tune` finds it there and continues it with
``Tuner.restore`` (finished trials are kept, unfinished ones resume from their newest
checkpoint, and the searcher's state is reloaded) instead of starting over.

The job ends with ``trials.json``: per trial its searched values, status, the series
of the metric column (which :mod:`ddrl.search.grid` turns into the leaderboard) and where it ran.

With ``tune: {nodes: N}`` (N > 1) the tune job is one N-node Slurm job: :func:`tune_cluster`
starts Ray over the allocation with the bootstrap multi-node training uses
(:func:`ddrl.cluster.ray_nodes.ray_cluster_on_nodes`), and Tune places the trials on all the nodes.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import socket
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterator

from ddrl import atomic
from ddrl.errors import DdrlError
from ddrl.study.search_space import Search, trial_name
from ddrl.runs import RunSpec
from ddrl.search.grid import TrialResult

log = logging.getLogger(__name__)

EXPERIMENT = "tune"
STATE_FILE = "ddrl_state.json"
JSON_PREFIX = "json:"  # categorical values Optuna cannot hold (lists) travel as JSON text

# Tune's own result keys; the trainable leaves them to Tune.
_TUNE_KEYS = {"iteration", "session", "timestamp", "time_this_iter_s", "time_total_s"}


def _encode(value: Any) -> Any:
    return JSON_PREFIX + json.dumps(value) if isinstance(value, (list, dict)) else value


def _decode(value: Any) -> Any:
    if isinstance(value, str) and value.startswith(JSON_PREFIX):
        return json.loads(value[len(JSON_PREFIX):])
    return value


def param_space(search: Search) -> dict[str, Any]:
    """The search space as Tune sampling objects (lists become categoricals)."""
    from ray import tune

    space = {}
    for dim in search.dimensions:
        if dim.kind == "choice":
            space[dim.name] = tune.choice([_encode(v) for v in dim.values])
        elif dim.kind == "randint":
            space[dim.name] = tune.randint(int(dim.low), int(dim.high) + 1)  # upper excluded
        elif dim.kind == "loguniform":
            space[dim.name] = tune.loguniform(dim.low, dim.high)
        else:
            space[dim.name] = tune.uniform(dim.low, dim.high)
    return space


def trial_spec(search: Search, values: dict[str, Any]) -> RunSpec:
    """The RunSpec of one trial (a tune search runs one seed per trial)."""
    return search.run_spec(values, search.seeds[0])


def make_trainable(search: Search) -> Any:
    """A Tune class trainable that trains one trial with ddrl's algorithm registry, one
    :meth:`ddrl.training.loop.Progress.step` per Tune step."""
    from ray import tune

    from ddrl.training.loop import build_algorithm_config

    # Every trial asks for what RLlib would: the driver/learner bundle plus one per runner.
    sample = build_algorithm_config(trial_spec(search, {}))
    return tune.with_resources(_trial_class(search),
                               sample.algo_class.default_resource_request(sample))


def _trial_class(search: Search) -> type:
    from ray import tune

    from ddrl.training.loop import (
        Progress,
        build_algorithm_config,
        restore_algorithm,
        start_algorithm,
    )

    class DdrlTrial(tune.Trainable):
        def setup(self, config: dict[str, Any]) -> None:
            values = {k: _decode(v) for k, v in config.items()}
            self.spec = trial_spec(search, values)
            self.node = os.environ.get("SLURMD_NODENAME") or socket.gethostname()
            self.algo = start_algorithm(build_algorithm_config(self.spec), self.spec.env)
            self.progress = Progress(self.spec.budget)
            self.series: list[float] = []

        def step(self) -> dict[str, Any]:
            _, row = self.progress.step(self.algo)
            self.series.append(row[search.metric.column])
            out = {k: v for k, v in row.items() if k not in _TUNE_KEYS}
            out["score"] = search.metric.of_series(self.series)
            out["done"] = self.progress.stop_reason() is not None
            out["node"] = self.node  # Tune adds the node's address as node_ip
            return out

        def save_checkpoint(self, checkpoint_dir: str) -> None:
            self.algo.save_to_path(os.path.join(checkpoint_dir, "algorithm"))
            p = self.progress
            state = {"series": self.series, "env_steps": int(p.env_steps),
                     "trained_s": p.time_total_s, "episodes": p.episodes}
            Path(checkpoint_dir, STATE_FILE).write_text(json.dumps(state))

        def load_checkpoint(self, checkpoint_dir: str) -> None:
            restore_algorithm(self.algo, os.path.join(checkpoint_dir, "algorithm"))
            state = json.loads(Path(checkpoint_dir, STATE_FILE).read_text())
            self.series = list(state["series"])
            self.progress.env_steps = int(state["env_steps"])
            self.progress.time_total_s = float(state["trained_s"])
            self.progress.episodes = float(state.get("episodes", 0.0))

        def cleanup(self) -> None:
            self.algo.stop()

    return DdrlTrial


def _say(line: str) -> None:
    """Progress of the search: to stdout and to ddrl's log (the job's log file)."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()
    log.info(line)


def _callback(search_id: str) -> Any:
    from ray.tune import Callback

    class Echo(Callback):  # pickled with the experiment state: holds only the id
        def on_trial_result(self, iteration, trials, trial, result, **info):
            _say(f"ddrl tune {search_id} trial {trial.trial_id} "
                 f"iter={result['training_iteration']} env_steps={result.get('env_steps')} "
                 f"score={result.get('score', math.nan):.3f}")

        def on_trial_complete(self, iteration, trials, trial, **info):
            _say(f"ddrl tune {search_id} trial {trial.trial_id} finished")

        def on_trial_error(self, iteration, trials, trial, **info):
            _say(f"ddrl tune {search_id} trial {trial.trial_id} failed")

    return Echo()


def trial_cpus(search: Search) -> int:
    r = search.resources
    return r["num_env_runners"] * r["num_cpus_per_env_runner"] + 1


def tune_nodes(search: Search) -> int:
    return int(search.tune.get("nodes", 1))


def total_cpus(search: Search) -> int:
    """CPUs of the tune job's Ray: ``tune.num_cpus``, else room for the concurrent trials."""
    return int(search.tune.get("num_cpus")
               or trial_cpus(search) * int(search.tune["max_concurrent_trials"]))


def cpus_per_node(search: Search) -> list[int]:
    """CPUs on each node of a tune job: its CPUs shared out, at least one trial per node."""
    nodes = tune_nodes(search)
    return [max(trial_cpus(search), math.ceil(total_cpus(search) / nodes))] * nodes


@contextlib.contextmanager
def tune_cluster(search: Search, search_dir: str | Path, *,
                 print_fn: Callable[[str], None] = print) -> Iterator[str | None]:
    """For ``tune.nodes > 1``: a Ray cluster over the Slurm job's nodes (the same bootstrap
    as multi-node training); yields its address for :func:`run_tune`. For one node, None."""
    if tune_nodes(search) == 1:
        yield None
        return
    from ddrl.cluster.ray_nodes import ray_cluster_on_nodes

    per_node = cpus_per_node(search)
    with ray_cluster_on_nodes(per_node, Path(search_dir), print_fn=print_fn,
                              what=f"CPUs for trials per node {per_node}") as address:
        yield address


def run_tune(search: Search, search_dir: str | Path, trials_json: str | Path, *,
             ray_address: str | None = None,
             print_fn: Callable[[str], None] = print) -> list[TrialResult]:
    """Run (or continue) the Tune search of ``search``; write ``trials_json``."""
    if search.kind != "tune":
        raise DdrlError(f"search {search.id} is a {search.kind} search, not a tune search")
    from ray import tune

    from ddrl.training.runtime import ray_session

    search_dir = Path(search_dir).resolve()  # Tune needs an absolute storage path
    search_dir.mkdir(parents=True, exist_ok=True)
    path = search_dir / EXPERIMENT
    started = time.time()
    _retire_stale_experiment(search, search_dir, path, print_fn)
    with ray_session(num_cpus=total_cpus(search), address=ray_address):
        trainable = make_trainable(search)
        if tune.Tuner.can_restore(str(path)):
            print_fn(f"ddrl tune {search.id} resuming the search in {path}")
            tuner = tune.Tuner.restore(str(path), trainable=trainable,
                                       resume_unfinished=True, resume_errored=True)
        else:
            tuner = _new_tuner(search, search_dir, trainable)
        grid = tuner.fit()
    results = _results(search, grid)
    record = _trials_record(search, path, results, _placements(grid), time.time() - started)
    atomic.write_json(trials_json, record)
    print_fn(f"ddrl tune {search.id} done: {len(results)} trial(s) in "
             f"{record['session_wall_time_s']:.1f} s this session")
    return results


def _new_tuner(search: Search, search_dir: Path, trainable: Any) -> Any:
    """A fresh Tune experiment: Optuna's TPE proposes, ASHA stops early."""
    from optuna.samplers import TPESampler
    from ray import tune
    from ray.tune.schedulers import ASHAScheduler
    from ray.tune.search.optuna import OptunaSearch

    opts, mode = search.tune, search.metric.mode
    return tune.Tuner(
        trainable,
        param_space=param_space(search),
        tune_config=tune.TuneConfig(
            num_samples=search.num_samples,
            search_alg=OptunaSearch(metric="score", mode=mode,
                                    sampler=TPESampler(seed=search.sampler_seed)),
            scheduler=ASHAScheduler(
                time_attr="training_iteration", metric="score", mode=mode,
                max_t=10**6, grace_period=int(opts["grace_period"]),
                reduction_factor=float(opts["reduction_factor"]),
            ),
            max_concurrent_trials=int(opts["max_concurrent_trials"]),
            time_budget_s=opts.get("time_budget_s"),
            reuse_actors=False,
        ),
        run_config=tune.RunConfig(
            name=EXPERIMENT,
            storage_path=str(search_dir),
            checkpoint_config=tune.CheckpointConfig(
                num_to_keep=1, checkpoint_frequency=search.checkpoint_every,
                checkpoint_at_end=True,
            ),
            failure_config=tune.FailureConfig(max_failures=1),
            callbacks=[_callback(search.id)],
            verbose=0,
        ),
    )


def _trials_record(search: Search, path: Path, results: list[TrialResult],
                   places: dict[str, dict[str, Any]], wall_s: float) -> dict[str, Any]:
    """The content of ``trials.json``."""
    return {
        "search": search.id,
        "experiment": str(path),
        "session_wall_time_s": round(wall_s, 2),
        "trials": [
            {"trial": r.trial, "tune_trial_id": r.runs[0], "values": r.values, "status": r.status,
             "metric": None if math.isnan(r.metric) else r.metric, "env_steps": r.env_steps,
             "wall_time_s": r.wall_time_s, "iterations": r.iterations,
             **places.get(r.runs[0], {})}
            for r in results
        ],
    }


def _retire_stale_experiment(search: Search, search_dir: Path, path: Path,
                             print_fn: Callable[[str], None]) -> None:
    """Keep the experiment only if it was started for this very search definition.

    A changed space, budget or metric must not be continued from trials of the old one: the
    old experiment is moved aside (``tune.stale-<time>``), and the new search starts fresh.
    """
    marker = search_dir / "definition.json"
    definition = search.definition()
    if path.exists():
        old = json.loads(marker.read_text()) if marker.exists() else None
        if old == definition:
            return
        aside = search_dir / f"{EXPERIMENT}.stale-{time.strftime('%Y%m%d-%H%M%S')}"
        path.rename(aside)
        print_fn(f"ddrl tune {search.id}: the search changed; moved the old experiment to {aside}")
    atomic.write_json(marker, definition)


def _trial_id(result: Any) -> str:
    # Trial folders are named <trainable>_<id>_<n>_<values>_<date>; n is the creation order.
    return (result.metrics or {}).get("trial_id") or Path(result.path).name.split("_")[1]


def _placements(grid: Any) -> dict[str, dict[str, Any]]:
    """Tune trial id -> the node (Slurm node name or host name) and address it ran on."""
    places = {}
    for result in grid:
        df = result.metrics_dataframe
        if df is None or df.empty:
            continue
        place = {k: df[k].dropna().iloc[-1] for k in ("node", "node_ip")
                 if k in df and df[k].notna().any()}
        places[_trial_id(result)] = {k: str(v) for k, v in place.items()}
    return places


def _results(search: Search, grid: Any) -> list[TrialResult]:
    rows = []
    budget = search.budget.get("env_steps")
    for result in grid:
        df = result.metrics_dataframe
        parts = Path(result.path).name.split("_")
        trial_id = _trial_id(result)
        order = int(parts[2]) if len(parts) > 2 and parts[2].isdigit() else 0
        values = {k: _decode(result.config[k]) for k in search.names if k in result.config}
        if df is None or df.empty or search.metric.column not in df:
            series, steps, wall, iters = [], math.nan, math.nan, 0
        else:
            df = df.sort_values("training_iteration").drop_duplicates("training_iteration",
                                                                      keep="last")
            series = df[search.metric.column].tolist()
            steps = float(df["env_steps"].iloc[-1])
            wall = float(df["time_total_s"].iloc[-1])
            iters = int(df["training_iteration"].iloc[-1])
        if result.error is not None:
            status = "error"
        elif _threshold_done(search, df):
            status = "reached return threshold"
        elif budget and steps == steps and steps < budget and not _time_done(search, wall):
            status = "stopped early"
        else:
            status = "complete"
        rows.append((order, trial_id, values, series, steps, wall, iters, status))
    rows.sort(key=lambda r: (r[0], r[1]))
    return [
        TrialResult(trial=trial_name(i), values=values,
                    metric=search.metric.of_series(series), env_steps=steps, wall_time_s=wall,
                    iterations=iters, status=status, runs=[trial_id])
        for i, (_, trial_id, values, series, steps, wall, iters, status) in enumerate(rows)
    ]


def _threshold_done(search: Search, df: Any) -> bool:
    """The trial stopped on budget.return_threshold (see ddrl.training.stop)."""
    from ddrl.training.stop import episodes_so_far, threshold_reached

    if df is None or df.empty or "episode_return_mean" not in df:
        return False
    return threshold_reached(search.budget, df["episode_return_mean"].iloc[-1],
                             episodes_so_far(df.to_dict("records")))


def _time_done(search: Search, wall: float) -> bool:
    limit = search.budget.get("time_limit_s")
    return bool(limit and wall == wall and wall >= limit)


def read_trials(search: Search, trials_json: str | Path) -> list[TrialResult]:
    """The trials a tune job recorded, as leaderboard rows."""
    record = json.loads(Path(trials_json).read_text())
    return [
        TrialResult(trial=t["trial"], values=t["values"],
                    metric=math.nan if t["metric"] is None else float(t["metric"]),
                    env_steps=t["env_steps"], wall_time_s=t["wall_time_s"],
                    iterations=t["iterations"], status=t["status"], runs=[t["tune_trial_id"]])
        for t in record["trials"]
    ]
