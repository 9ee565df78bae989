"""Headless videos and frame strips of a trained agent.

PyBullet renders with its CPU TinyRenderer when the env is in DIRECT mode
(``gym.make(id, render_mode="rgb_array")``), so this needs no display and no GPU and runs on
any cluster node.

For each run this writes, all or none (temporary names, renamed at the end):

- ``video.mp4``: H.264 (libx264, yuv420p, via imageio-ffmpeg), ``render.fps`` frames/s;
- ``video.gif``: the same frames, looping;
- ``frames.png``: ``render.strip_frames`` evenly spaced frames of the first episode side by
  side, each labelled with its env step and the return collected so far.

The rendered episodes use the run's first evaluation seeds (:func:`ddrl.agents.evaluate.eval_seeds`),
so the first video episode is the first episode in ``eval.json``. A frame is kept after the
reset and every ``frame_skip`` env steps (plus the last one); ``max_steps`` cuts long episodes.
The camera (PyBullet's ``_cam_dist``, ``_cam_yaw``, ``_cam_pitch`` on the unwrapped env) is
aimed at the robot; null settings keep the env's own values.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from ddrl.errors import ConfigError
from ddrl.runs import RunSpec

log = logging.getLogger(__name__)

CAMERA_ATTRS = {"distance": "_cam_dist", "yaw": "_cam_yaw", "pitch": "_cam_pitch"}


@dataclass
class Frame:
    image: np.ndarray  # H x W x 3 uint8
    episode: int
    step: int
    ret: float


@dataclass
class Recording:
    frames: list[Frame] = field(default_factory=list)
    returns: list[float] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)
    seeds: list[int] = field(default_factory=list)


def check_settings(settings: Mapping[str, Any], run_id: str) -> dict[str, Any]:
    """Validate the (defaults-filled) render settings; errors name the run and the key."""
    from ddrl.config.eval_config import RENDER_SCHEMA
    from ddrl.config.sections import merge_section

    try:
        s = merge_section(RENDER_SCHEMA, dict(settings), "render")
    except ConfigError as err:
        raise ConfigError(f"run {run_id}: {err}") from None
    for key in ("width", "height"):
        v = s[key]
        if not isinstance(v, int) or isinstance(v, bool) or v < 16 or v % 2:
            raise ConfigError(f"run {run_id}: render.{key} must be an even integer >= 16 "
                              f"(H.264 needs even sizes), got {v!r}")
    for key in ("episodes", "frame_skip", "strip_frames"):
        v = s[key]
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ConfigError(f"run {run_id}: render.{key} must be a positive integer, got {v!r}")
    if s["max_steps"] is not None and (not isinstance(s["max_steps"], int) or s["max_steps"] < 1):
        raise ConfigError(f"run {run_id}: render.max_steps must be null or a positive integer, "
                          f"got {s['max_steps']!r}")
    if not isinstance(s["fps"], (int, float)) or isinstance(s["fps"], bool) or s["fps"] <= 0:
        raise ConfigError(f"run {run_id}: render.fps must be a positive number, got {s['fps']!r}")
    for key, value in s["camera"].items():
        if value is not None and (not isinstance(value, (int, float)) or isinstance(value, bool)
                                  or not np.isfinite(value)):
            raise ConfigError(f"run {run_id}: render.camera.{key} must be a number or null, "
                              f"got {value!r}")
    if s["camera"]["distance"] is not None and s["camera"]["distance"] <= 0:
        raise ConfigError(f"run {run_id}: render.camera.distance must be > 0, "
                          f"got {s['camera']['distance']!r}")
    return s


def make_render_env(env_id: str, settings: Mapping[str, Any], run_id: str,
                    env_config: Mapping[str, Any] | None = None) -> Any:
    """The env in ``rgb_array`` mode with the configured camera and resolution."""
    from ddrl.envs import make_env

    env = make_env(env_id, render_mode="rgb_array", **dict(env_config or {}))
    raw = env.unwrapped
    if not all(hasattr(raw, a) for a in ("_render_width", "_render_height")):
        env.close()
        raise ConfigError(
            f"run {run_id}: env {env_id!r} is not a PyBullet env with a configurable camera "
            "(no _render_width/_render_height); ddrl renders PyBullet tasks"
        )
    raw._render_width = int(settings["width"])
    raw._render_height = int(settings["height"])
    for key, value in settings["camera"].items():
        if value is not None:
            setattr(raw, CAMERA_ATTRS[key], float(value))
    return env


def record(policy: Any, settings: Mapping[str, Any], seeds: list[int],
           env_config: Mapping[str, Any] | None = None) -> Recording:
    """Play ``len(seeds)`` episodes with ``policy`` and keep frames (see module docstring)."""
    from ddrl.agents.evaluate import run_episode

    env = make_render_env(policy.env, settings, policy.run_id, env_config)
    rec = Recording()
    skip = int(settings["frame_skip"])
    try:
        for episode, seed in enumerate(seeds):
            last: list[Any] = [None]

            def grab(step: int, ret: float, e: Any, episode: int = episode) -> None:
                if step % skip == 0:
                    rec.frames.append(Frame(_frame(e, settings), episode, step, ret))
                    last[0] = None
                else:
                    last[0] = (step, ret)

            ret, length = run_episode(policy.act, env, seed, max_steps=settings["max_steps"],
                                      on_step=grab)
            if last[0] is not None:  # always show the final state
                rec.frames.append(Frame(_frame(env, settings), episode, length, ret))
            rec.returns.append(ret)
            rec.lengths.append(length)
            rec.seeds.append(seed)
    finally:
        env.close()
    return rec


def _frame(env: Any, settings: Mapping[str, Any]) -> np.ndarray:
    img = env.render()
    if img is None:
        raise ConfigError(f"env {env.spec.id if env.spec else env} returned no frame in "
                          "rgb_array mode")
    img = np.ascontiguousarray(np.asarray(img, dtype=np.uint8)[..., :3])
    expected = (settings["height"], settings["width"], 3)
    if img.shape != expected:
        raise ConfigError(f"env rendered frames of shape {img.shape}, expected {expected}")
    return img


def _font(size: int):
    from PIL import ImageFont

    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # Pillow < 10.1
        return ImageFont.load_default()


def frame_strip(rec: Recording, n: int, title: str | None = None) -> np.ndarray:
    """``n`` evenly spaced frames of the first episode in one row, each with step and return."""
    from PIL import Image, ImageDraw

    first = [f for f in rec.frames if f.episode == 0]
    idx = np.unique(np.linspace(0, len(first) - 1, num=min(n, len(first))).round().astype(int))
    chosen = [first[i] for i in idx]
    h, w, _ = chosen[0].image.shape
    size = max(10, min(18, w // 14))
    label_h = 2 * size + 8
    title_h = size + 10 if title else 0
    gap = 4
    canvas = Image.new("RGB", (len(chosen) * w + (len(chosen) - 1) * gap, title_h + h + label_h),
                       "white")
    draw = ImageDraw.Draw(canvas)
    font = _font(size)
    if title:
        draw.text((4, 4), title, fill="black", font=font)
    for i, f in enumerate(chosen):
        x = i * (w + gap)
        canvas.paste(Image.fromarray(f.image), (x, title_h))
        draw.text((x + 4, title_h + h + 3), f"step {f.step}", fill="black", font=font)
        draw.text((x + 4, title_h + h + 5 + size), f"return {f.ret:.1f}", fill="black", font=font)
    return np.asarray(canvas)


def write_videos(rec: Recording, settings: Mapping[str, Any], mp4: str | Path, gif: str | Path,
                 png: str | Path, title: str | None = None) -> None:
    """The three files, all or none."""
    import imageio.v2 as imageio
    import imageio.v3 as iio

    from ddrl import atomic

    frames = [f.image for f in rec.frames]
    strip = frame_strip(rec, int(settings["strip_frames"]), title)
    with contextlib.ExitStack() as stack:
        t_mp4 = stack.enter_context(atomic.atomic_path(mp4))
        t_gif = stack.enter_context(atomic.atomic_path(gif))
        t_png = stack.enter_context(atomic.atomic_path(png))
        writer = imageio.get_writer(
            str(t_mp4), format="FFMPEG", mode="I", fps=float(settings["fps"]), codec="libx264",
            pixelformat="yuv420p", macro_block_size=2, quality=None,
            ffmpeg_params=["-crf", "23", "-preset", "medium"], ffmpeg_log_level="error",
        )
        try:
            for img in frames:
                writer.append_data(img)
        finally:
            writer.close()
        iio.imwrite(t_gif, np.stack(frames), extension=".gif",
                    duration=1000.0 / float(settings["fps"]), loop=0)
        iio.imwrite(t_png, strip, extension=".png")


def render_run(spec: RunSpec, run_dir: str | Path, settings: Mapping[str, Any], mp4: str | Path,
               gif: str | Path, png: str | Path) -> dict[str, Any]:
    """Render a run's checkpoint (``settings["checkpoint"]``: final, best or a folder);
    returns a summary (returns, lengths, frames, checkpoint iteration)."""
    from ddrl.agents.best import select_checkpoint
    from ddrl.agents.evaluate import eval_seeds
    from ddrl.agents.policy import load_run_policy

    settings = check_settings(settings, spec.run_id)
    chosen = select_checkpoint(run_dir, spec.run_id, settings.get("checkpoint"))
    policy = load_run_policy(spec, run_dir, chosen)
    seeds = eval_seeds(spec, int(settings["episodes"]))
    rec = record(policy, settings, seeds, dict(spec.env_config))
    title = (f"{spec.algorithm} {spec.env} seed {spec.seed} | iteration {policy.iteration}, "
             f"{policy.env_steps} env steps")
    write_videos(rec, settings, mp4, gif, png, title=title)
    return {"run_id": spec.run_id, "returns": rec.returns, "lengths": rec.lengths,
            "seeds": rec.seeds, "frames": len(rec.frames), "iteration": policy.iteration}
