"""`ddrl render`, `ddrl export` (TorchScript and ONNX), `--version`, `python -m ddrl`, and
best-checkpoint selection, on one tiny trained run."""

from __future__ import annotations

import csv
import shutil
import tomllib

import numpy as np
import pytest

from ddrl.agents.best import best_iteration, select_checkpoint
from ddrl.errors import CheckpointError, ConfigError
from ddrl.config.eval_config import export_settings, render_settings

from conftest import REPO
from helpers.tooling_fixtures import ddrl_cli, tiny_run  # noqa: F401

CURVE_HEADER = ["iteration", "env_steps", "episodes", "return_mean", "return_std",
                "return_min", "return_max", "return_median", "length_mean"]


def _write_curve(path, returns: dict[int, float]) -> None:
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(CURVE_HEADER)
        for it, ret in returns.items():
            w.writerow([it, it * 200, 2, ret, 0.0, ret, ret, ret, 20.0])


def test_version_and_python_dash_m(tmp_path):
    want = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    proc = ddrl_cli("--version", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.strip() == f"ddrl {want}"
    proc = ddrl_cli("render", "--config", "nope.yaml", cwd=tmp_path)
    assert proc.returncode == 2 and "render --config needs --run-id" in proc.stderr


def test_best_iteration_highest_return_earliest_on_tie_nan_skipped(tmp_path):
    path = tmp_path / "eval_curve.csv"
    _write_curve(path, {1: 5.0, 2: float("nan"), 3: 9.0, 4: 9.0, 5: 2.0})
    assert best_iteration(path) == (3, 9.0)


@pytest.mark.parametrize("content, message", [
    (None, "eval_curve.csv is missing"),
    ("iteration,return_mean\n", "no evaluated checkpoint"),
    ("iteration,return_mean\nx,1.0\n", "eval_curve.csv:2: expected integer 'iteration'"),
])
def test_best_iteration_bad_curves_say_what_is_wrong(tmp_path, content, message):
    path = tmp_path / "eval_curve.csv"
    if content is not None:
        path.write_text(content)
    with pytest.raises(CheckpointError, match=message):
        best_iteration(path)


def test_best_needs_intermediate_evaluation_in_the_config():
    with pytest.raises(ConfigError, match=r"render.checkpoint: best needs evaluation.intermediate"):
        render_settings({"render": {"checkpoint": "best"}})
    with pytest.raises(ConfigError, match=r"export.checkpoint: expected one of"):
        export_settings({"export": {"checkpoint": "newest"}})
    ok = export_settings({"export": {"checkpoint": "best", "onnx": True},
                          "evaluation": {"intermediate": True}})
    assert ok == {"checkpoint": "best", "onnx": True}
    assert render_settings(None)["checkpoint"] == "final"


def test_select_checkpoint_maps_the_best_row_to_its_checkpoint(tiny_run, tmp_path):
    run_dir = tmp_path / "run"
    shutil.copytree(tiny_run.run_dir, run_dir)
    run_id = tiny_run.spec.run_id
    assert select_checkpoint(run_dir, run_id, "final") is None
    _write_curve(run_dir / "eval_curve.csv", {1: 1.0, 2: 50.0, 3: 20.0})
    best = select_checkpoint(run_dir, run_id, "best")
    assert best == run_dir / "work" / "checkpoints" / "iter_000002"
    _write_curve(run_dir / "eval_curve.csv", {1: 1.0, 2: 5.0, 3: 20.0})
    assert select_checkpoint(run_dir, run_id, "best") == run_dir / "checkpoint"
    shutil.rmtree(run_dir / "work" / "checkpoints" / "iter_000001")
    _write_curve(run_dir / "eval_curve.csv", {1: 99.0, 3: 20.0})
    with pytest.raises(CheckpointError, match="iteration 1.*no longer in"):
        select_checkpoint(run_dir, run_id, "best")
    with pytest.raises(ConfigError, match="expected 'final', 'best' or an existing"):
        select_checkpoint(run_dir, run_id, "bestest")


def test_export_best_writes_torchscript_and_onnx_that_match_the_live_policy(tiny_run, tmp_path):
    import torch

    from ddrl.agents.onnx_export import read_metadata, run_onnx
    from ddrl.agents.export import load_exported
    from ddrl.agents.policy import load_run_policy

    run_dir = tmp_path / "run"
    shutil.copytree(tiny_run.run_dir, run_dir)
    _write_curve(run_dir / "eval_curve.csv", {1: 1.0, 2: 50.0, 3: 20.0})
    proc = ddrl_cli("export", "--config", str(tiny_run.config), "--run-id", tiny_run.spec.run_id,
                    "--run-dir", str(run_dir), "--checkpoint", "best", "--onnx", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "exported iteration 2" in proc.stdout

    live = load_run_policy(tiny_run.spec, run_dir, run_dir / "work" / "checkpoints" / "iter_000002")
    rng = np.random.default_rng(7)
    obs = (rng.standard_normal((100, 5)) * rng.choice([0.1, 1, 4], (100, 1))).astype(np.float32)
    want = live.act(obs)
    got_onnx = run_onnx(run_dir / "policy.onnx", obs)
    module, meta = load_exported(run_dir / "policy.pt")
    with torch.no_grad():
        got_pt = module(torch.from_numpy(obs)).numpy()
    assert got_onnx.shape == got_pt.shape == want.shape == (100, 1)
    assert np.abs(got_onnx - want).max() <= 1e-5
    assert np.abs(got_pt - want).max() <= 1e-5
    assert want.std() > 1e-4  # the policy is not constant on these observations
    assert run_onnx(run_dir / "policy.onnx", obs[:1]).shape == (1, 1)
    onnx_meta = read_metadata(run_dir / "policy.onnx")
    assert meta["checkpoint_iteration"] == onnx_meta["checkpoint_iteration"] == 2
    assert onnx_meta["run_id"] == tiny_run.spec.run_id and onnx_meta["format"] == "ddrl-policy"
    # the final checkpoint acts differently, so "best" really picked iteration 2
    final = load_run_policy(tiny_run.spec, run_dir)
    assert final.iteration == 3 and np.abs(final.act(obs) - want).max() > 1e-4


def test_onnx_mismatch_writes_nothing(tiny_run, tmp_path, monkeypatch):
    from ddrl.agents import onnx_export
    from ddrl.agents.export import ExportError
    from ddrl.agents.policy import load_run_policy

    policy = load_run_policy(tiny_run.spec, tiny_run.run_dir)
    monkeypatch.setattr(onnx_export, "CHECK_TOL", -1.0)  # any difference, even 0, fails
    with pytest.raises(ExportError, match="ONNX policy differs"):
        onnx_export.export_onnx(policy, tmp_path / "policy.onnx")
    assert list(tmp_path.iterdir()) == []


def test_render_cli_uses_the_chosen_checkpoint(tiny_run, tmp_path):
    run_dir = tmp_path / "run"
    shutil.copytree(tiny_run.run_dir, run_dir)
    _write_curve(run_dir / "eval_curve.csv", {1: 60.0, 2: 50.0, 3: 20.0})
    out = tmp_path / "videos"
    proc = ddrl_cli("render", "--config", str(tiny_run.config), "--run-id", tiny_run.spec.run_id,
                    "--run-dir", str(run_dir), "--checkpoint", "best", "--out-dir", str(out),
                    cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "rendered iteration 1" in proc.stdout
    for name in ("video.mp4", "video.gif", "frames.png"):
        assert (out / name).stat().st_size > 1000, name
    proc = ddrl_cli("render", "--config", str(tiny_run.config), "--run-id", tiny_run.spec.run_id,
                    "--run-dir", str(tmp_path / "missing"), "--checkpoint", "best", cwd=tmp_path)
    assert proc.returncode == 2 and "eval_curve.csv is missing" in proc.stderr
