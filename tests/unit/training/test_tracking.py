"""Tracking: TensorBoard event files read back with TensorBoard's EventAccumulator, MLflow
runs read back with MLflow's client (sqlite and file stores), W&B offline logs read back
record by record. Everything stays on this machine."""

from __future__ import annotations

import glob
import json
import os

import pandas as pd
import pytest

from ddrl.errors import ConfigError, DdrlError
from ddrl.study.study import Study
from ddrl.training.tracking import RUN_ID_TAG, Tracker, tracking_settings

from helpers.tooling_fixtures import TINY_RUN_CONFIG, tiny_run  # noqa: F401
from helpers.wandb_log import records


def _accumulator(tb_dir):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(tb_dir), size_guidance={"scalars": 0})
    acc.Reload()
    return acc


def _spec(tmp_path):
    config = tmp_path / "study.yaml"
    config.write_text(json.dumps(TINY_RUN_CONFIG))
    (_, spec), = Study.from_file(config).runs.items()
    return spec


def _rows(iterations, session=0):
    return [{"iteration": i, "env_steps": 200 * i, "episode_return_mean": 10.0 * i + session,
             "episode_len_mean": float("nan"), "time_this_iter_s": 0.5, "session": session,
             "timestamp": 1.7e9 + i} for i in iterations]


def _wandb_history(run_dir):
    # In session order: the folder names carry the start time to the second only, so two
    # sessions started in one second would sort by their random run ids; the log closes last.
    logs = sorted(glob.glob(str(run_dir / "wandb" / "offline-run-*" / "run-*.wandb")),
                  key=os.path.getmtime)
    assert logs, f"no offline W&B log under {run_dir / 'wandb'}"
    out = []
    for path in logs:
        for rec in records(path):
            if rec.WhichOneof("record_type") == "history":
                out.append({"/".join(i.nested_key) or i.key: json.loads(i.value_json)
                            for i in rec.history.item})
    return out


def test_tracking_is_off_by_default_except_tensorboard():
    s = tracking_settings({"study": "x"})
    assert s["tensorboard"] is True
    assert s["mlflow"]["enabled"] is False and s["wandb"]["enabled"] is False
    assert s["wandb"]["mode"] == "offline"


@pytest.mark.parametrize("section, message", [
    ({"mlflow": {"enabled": True, "token": "abc"}}, r"tracking.mlflow: unknown setting\(s\) \['token'\]"),
    ({"wandb": {"api_key": "abc"}}, r"tracking.wandb: unknown setting\(s\) \['api_key'\]"),
    ({"mlflow": {"enabled": "yes"}}, r"tracking.mlflow.enabled: expected true or false"),
    ({"wandb": {"mode": "cloud"}}, r"tracking.wandb.mode: expected offline or online"),
])
def test_bad_tracking_settings_name_the_key(section, message):
    with pytest.raises(ConfigError, match=message):
        tracking_settings({"tracking": section})


def test_an_unusable_mlflow_store_stops_before_training(tmp_path):
    s = tracking_settings({"study": "x", "tracking": {"mlflow": {
        "enabled": True, "tracking_uri": "nosuchscheme://x"}}})
    with pytest.raises(DdrlError, match=r"tracking.mlflow: cannot start a run .* nosuchscheme"):
        Tracker(s, _spec(tmp_path), tmp_path / "run")


@pytest.mark.parametrize("store", ["sqlite", "file"])
def test_resumed_session_continues_the_same_runs(tmp_path, store, monkeypatch):
    from mlflow.tracking import MlflowClient

    # MLflow 3.18 keeps the file store in maintenance mode: an opt-in (README says so)
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    uri = (f"sqlite:///{tmp_path}/mlflow.db" if store == "sqlite"
           else (tmp_path / "mlruns").as_uri())
    s = tracking_settings({"study": "resume", "tracking": {
        "mlflow": {"enabled": True, "tracking_uri": uri}, "wandb": {"enabled": store == "sqlite"}}})
    spec, run_dir = _spec(tmp_path), tmp_path / "run"
    from ddrl.training.train import TrainingInterrupted

    with pytest.raises(TrainingInterrupted):  # SIGTERM after iteration 3, checkpoint at 2
        with Tracker(s, spec, run_dir) as t:
            for row in _rows([1, 2, 3]):
                t.log(row)
            raise TrainingInterrupted("preempted")
    if store == "file":
        client = MlflowClient(tracking_uri=uri)
        (run,) = client.search_runs([client.get_experiment_by_name("resume").experiment_id])
        assert run.info.status == "KILLED"
    with Tracker(s, spec, run_dir, resumed_at=400) as t:  # iteration 3 again, then 4
        for row in _rows([3, 4], session=1):
            t.log(row)

    acc = _accumulator(run_dir / "tb")
    got = [(e.step, e.value) for e in acc.Scalars("train/episode_return_mean")]
    assert got == [(200, 10.0), (400, 20.0), (600, 31.0), (800, 41.0)]  # purged, no doubling
    assert "train/episode_len_mean" not in acc.Tags()["scalars"]  # NaN columns left out

    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name("resume")
    runs = client.search_runs([exp.experiment_id])
    assert len(runs) == 1, "the resumed session must continue the MLflow run"
    run = runs[0]
    assert run.info.status == "FINISHED" and run.data.tags[RUN_ID_TAG] == spec.run_id
    assert run.data.params["algorithm"] == "PPO" and run.data.params["seed"] == "1"
    assert run.data.params["hyperparameters.fcnet_hiddens"] == "[16, 16]"
    hist = sorted((m.step, m.value) for m in client.get_metric_history(
        run.info.run_id, "train/episode_return_mean"))
    # MLflow keeps every logged point: the replayed step 600 appears from both sessions
    assert hist == [(200, 10.0), (400, 20.0), (600, 30.0), (600, 31.0), (800, 41.0)]

    if store == "sqlite":
        hist = _wandb_history(run_dir)
        assert [(h["env_steps"], h["train/episode_return_mean"]) for h in hist] == [
            (200, 10.0), (400, 20.0), (600, 30.0), (600, 31.0), (800, 41.0)]


def test_failed_session_is_marked_failed(tmp_path):
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path}/mlflow.db"
    s = tracking_settings({"study": "fail", "tracking": {"tensorboard": False,
                                                       "mlflow": {"enabled": True,
                                                                  "tracking_uri": uri}}})
    with pytest.raises(RuntimeError):
        with Tracker(s, _spec(tmp_path), tmp_path / "run") as t:
            t.log(_rows([1])[0])
            raise RuntimeError("env crashed")
    (run,) = MlflowClient(tracking_uri=uri).search_runs(
        [MlflowClient(tracking_uri=uri).get_experiment_by_name("fail").experiment_id])
    assert run.info.status == "FAILED"
    assert not (tmp_path / "run" / "tb").exists()  # tensorboard: false


def _same_curve(got, want):
    assert [int(s) for s, _ in got] == [int(s) for s, _ in want]
    assert [v for _, v in got] == pytest.approx([v for _, v in want], rel=1e-6)


def test_training_writes_every_sink(tiny_run):
    """The real training run of the fixture: each sink holds progress.csv's values."""
    from mlflow.tracking import MlflowClient

    progress = pd.read_csv(tiny_run.run_dir / "progress.csv")
    want = list(zip(progress["env_steps"], progress["episode_return_mean"]))
    assert len(want) == 3

    acc = _accumulator(tiny_run.run_dir / "tb")
    _same_curve([(e.step, e.value) for e in acc.Scalars("train/episode_return_mean")], want)
    assert {"train/time_this_iter_s", "train/env_steps_per_s"} <= set(acc.Tags()["scalars"])

    uri = f"sqlite:///{tiny_run.root}/mlflow.db"
    client = MlflowClient(tracking_uri=uri)
    (run,) = client.search_runs([client.get_experiment_by_name("tiny1").experiment_id])
    assert run.info.status == "FINISHED" and run.info.run_name == tiny_run.spec.run_id
    hist = sorted((m.step, m.value) for m in client.get_metric_history(
        run.info.run_id, "train/episode_return_mean"))
    _same_curve(hist, want)

    hist = _wandb_history(tiny_run.run_dir)
    _same_curve([(h["env_steps"], h["train/episode_return_mean"]) for h in hist], want)
