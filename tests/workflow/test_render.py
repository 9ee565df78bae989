"""Rendering: the tiny study's videos and frame strips, camera settings, bad settings."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ddrl.errors import ConfigError
from ddrl.config.eval_config import render_settings
from ddrl.study.study import Study, load_yaml

from conftest import TINY_CONFIG, run_snakemake, write_yaml

ENV = "InvertedPendulumBulletEnv-v0"


def _agent_fraction(frame: np.ndarray) -> float:
    """Share of strongly coloured pixels: the blue pole and the green cart and rail, not the
    white/grey background."""
    f = frame.astype(int)
    return float(((f.max(-1) - f.min(-1)) > 60).mean())


def test_tiny_study_videos_and_frame_strips(tiny_study):
    import imageio.v2 as imageio
    import imageio.v3 as iio

    settings = render_settings(load_yaml(TINY_CONFIG))
    w, h, skip, cut = (settings[k] for k in ("width", "height", "frame_skip", "max_steps"))
    for run_id in Study.from_file(TINY_CONFIG).runs:
        run_dir = tiny_study / "results" / "tiny" / "runs" / run_id
        reader = imageio.get_reader(run_dir / "video.mp4", format="FFMPEG")
        meta = reader.get_meta_data()
        mp4 = [np.asarray(f) for f in reader]
        reader.close()
        assert meta["codec"] == "h264" and meta["fps"] == settings["fps"]
        assert meta["size"] == (w, h)
        gif = iio.imread(run_dir / "video.gif", extension=".gif")
        assert gif.shape[1:3] == (h, w)

        # The video replays the first evaluation episode (same seed, same policy).
        length = json.loads((run_dir / "eval.json").read_text())["lengths"][0]
        steps = min(length, cut)
        expected = steps // skip + 1 + (1 if steps % skip else 0)
        assert len(mp4) == len(gif) == expected, run_id

        for frame in gif:
            assert frame[..., :3].std() > 10  # not blank
            assert _agent_fraction(frame[..., :3]) > 0.01  # the robot is in the picture
        diffs = [np.abs(a[..., :3].astype(int) - b[..., :3]).mean() for a, b in zip(gif, gif[1:])]
        assert sum(d > 0 for d in diffs) >= 0.8 * len(diffs), diffs  # it moves
        assert max(diffs) > 0.05
        assert all(f.std() > 10 for f in mp4)

        strip = iio.imread(run_dir / "frames.png")
        k = min(settings["strip_frames"], expected)
        assert strip.shape[1] == k * w + (k - 1) * 4
        assert strip.shape[0] > h + 20  # frames plus the title and labels
        assert _agent_fraction(strip[..., :3]) > 0.005


def test_camera_and_resolution_come_from_the_settings():
    from ddrl.agents.render import _frame, make_render_env

    frames = []
    for yaw in (0, 90):
        s = render_settings({"render": {"width": 48, "height": 32,
                                        "camera": {"distance": 1.3, "yaw": yaw}}})
        env = make_render_env(ENV, s, "cam-test")
        try:
            env.reset(seed=5)
            assert env.unwrapped._cam_yaw == yaw and env.unwrapped._cam_dist == 1.3
            assert env.unwrapped._cam_pitch == -30  # null keeps the env's own value
            frames.append(_frame(env, s))
        finally:
            env.close()
    assert frames[0].shape == (32, 48, 3)
    assert np.abs(frames[0].astype(int) - frames[1]).mean() > 1.0


@pytest.mark.parametrize("render, message", [
    ({"camera": {"zoom": 2}}, r"unknown setting\(s\) \['zoom'\]"),
    ({"camera": {"yaw": "left"}}, "render.camera.yaw must be a number"),
    ({"camera": {"distance": -1}}, "render.camera.distance must be > 0"),
    ({"width": 65}, "render.width must be an even integer"),
    ({"fov": 60}, r"unknown setting\(s\) \['fov'\]"),
])
def test_bad_render_settings_name_the_run_and_write_nothing(tmp_path, render, message):
    from ddrl.agents.render import render_run

    spec = next(iter(Study.from_file(TINY_CONFIG)))
    settings = {**render_settings(None), **render}
    if "camera" in render:
        settings["camera"] = {**render_settings(None)["camera"], **render["camera"]}
    outs = [tmp_path / n for n in ("video.mp4", "video.gif", "frames.png")]
    with pytest.raises(ConfigError, match=message) as err:
        render_run(spec, tmp_path, settings, *outs)
    assert spec.run_id in str(err.value)
    assert list(tmp_path.iterdir()) == []


def test_workflow_rejects_an_unknown_camera_setting(tmp_path):
    config = load_yaml(TINY_CONFIG)
    config["render"]["camera"]["zoom"] = 3
    path = write_yaml(tmp_path / "bad.yaml", config)
    proc = run_snakemake(tmp_path, path, "-n", check=False, timeout=300)
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert "render.camera" in out and "zoom" in out
    assert not (tmp_path / "results").exists()
