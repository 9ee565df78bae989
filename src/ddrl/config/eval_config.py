"""Config sections for looking at trained agents: ``evaluation`` and ``render``.

Both are optional top-level keys of a study config; every setting has a default, so a study
that leaves them out still gets ``eval.json``, videos, frame strips and ``policy.pt``.
They do not enter run ids: changing them reruns evaluation or rendering, never training.

.. code-block:: yaml

    evaluation:
      episodes: 10          # deterministic episodes per run (eval.json)
      intermediate: false   # also evaluate every intermediate checkpoint (eval_curve.csv)
    render:
      episodes: 1           # episodes in video.mp4 / video.gif
      width: 320            # pixels (even numbers: H.264 needs them)
      height: 240
      fps: 30               # frames per second of the videos
      frame_skip: 2         # keep every 2nd env step (PyBullet steps at ~60 Hz)
      max_steps: null       # cut each rendered episode after this many steps (null: full)
      strip_frames: 6       # frames in frames.png
      camera: {distance: null, yaw: null, pitch: null}   # null: the env's own camera
      checkpoint: final     # or best: highest return_mean in eval_curve.csv
    export:
      checkpoint: final     # which checkpoint policy.pt (and policy.onnx) hold
      onnx: false           # also write policy.onnx (needs the onnx extra)

``checkpoint: best`` needs ``evaluation.intermediate: true`` (the curve it picks from).
"""

from __future__ import annotations

from typing import Any, Mapping

from ddrl.config.sections import merge_section
from ddrl.errors import ConfigError

EVALUATION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "Deterministic evaluation of each run's final checkpoint (eval.json).",
    "properties": {
        "episodes": {"type": "integer", "minimum": 1, "default": 10,
                     "description": "episodes per run, each with its own evaluation seed"},
        "intermediate": {"type": "boolean", "default": False,
                         "description": "also evaluate every intermediate checkpoint into "
                                        "eval_curve.csv (training then keeps all checkpoints)"},
    },
    "additionalProperties": False,
}

CAMERA_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "PyBullet camera, aimed at the robot; null keeps the env's own setting.",
    "properties": {
        "distance": {"type": ["number", "null"], "exclusiveMinimum": 0, "default": None,
                     "description": "metres from the target"},
        "yaw": {"type": ["number", "null"], "default": None, "description": "degrees"},
        "pitch": {"type": ["number", "null"], "default": None,
                  "description": "degrees; negative looks down"},
    },
    "additionalProperties": False,
}

CHECKPOINT_SCHEMA: dict[str, Any] = {
    "enum": ["final", "best"], "default": "final",
    "description": "final: the last checkpoint; best: the highest return_mean in eval_curve.csv "
                   "(needs evaluation.intermediate: true)",
}

EVEN_PIXELS = {"type": "integer", "minimum": 16, "maximum": 4096, "multipleOf": 2}

RENDER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "Headless videos (video.mp4, video.gif) and a frame strip (frames.png).",
    "properties": {
        "episodes": {"type": "integer", "minimum": 1, "default": 1},
        "width": {**EVEN_PIXELS, "default": 320},
        "height": {**EVEN_PIXELS, "default": 240},
        "fps": {"type": "number", "exclusiveMinimum": 0, "maximum": 240, "default": 30},
        "frame_skip": {"type": "integer", "minimum": 1, "default": 2,
                       "description": "record every n-th env step"},
        "max_steps": {"type": ["integer", "null"], "minimum": 1, "default": None,
                      "description": "env steps per rendered episode at most (null: all)"},
        "strip_frames": {"type": "integer", "minimum": 1, "maximum": 32, "default": 6},
        "camera": CAMERA_SCHEMA,
        "checkpoint": CHECKPOINT_SCHEMA,
    },
    "additionalProperties": False,
}

EXPORT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "The exported policy: policy.pt (TorchScript), optionally policy.onnx.",
    "properties": {
        "checkpoint": CHECKPOINT_SCHEMA,
        "onnx": {"type": "boolean", "default": False,
                 "description": "also write policy.onnx (pip install 'ddrl[onnx]')"},
    },
    "additionalProperties": False,
}


def evaluation_settings(config: Mapping[str, Any] | None) -> dict[str, Any]:
    """The study's ``evaluation`` section with defaults filled in."""
    return merge_section(EVALUATION_SCHEMA, (config or {}).get("evaluation"), "evaluation")


def render_settings(config: Mapping[str, Any] | None) -> dict[str, Any]:
    """The study's ``render`` section with defaults filled in."""
    settings = merge_section(RENDER_SCHEMA, (config or {}).get("render"), "render")
    return _check_best(config, settings, "render")


def export_settings(config: Mapping[str, Any] | None) -> dict[str, Any]:
    """The study's ``export`` section with defaults filled in."""
    settings = merge_section(EXPORT_SCHEMA, (config or {}).get("export"), "export")
    return _check_best(config, settings, "export")


def _check_best(config: Mapping[str, Any] | None, settings: dict[str, Any], where: str
                ) -> dict[str, Any]:
    if settings["checkpoint"] not in CHECKPOINT_SCHEMA["enum"]:
        raise ConfigError(f"{where}.checkpoint: expected one of {CHECKPOINT_SCHEMA['enum']}, "
                          f"got {settings['checkpoint']!r}")
    if settings["checkpoint"] == "best" and not evaluation_settings(config)["intermediate"]:
        raise ConfigError(f"{where}.checkpoint: best needs evaluation.intermediate: true "
                          "(the best checkpoint is picked from eval_curve.csv)")
    return settings
