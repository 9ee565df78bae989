"""JSON Schema of a study config.

The schema is built from the algorithm registry, so the hyperparameters each algorithm
accepts are stated once, and from the sections of a run (:mod:`ddrl.config.schema`) and of
each stage. ``workflow/schemas/config.schema.yaml`` is this schema written out
(`ddrl schema`); a test keeps the two equal.
"""

from __future__ import annotations

from typing import Any

from ddrl.algorithms import ALGORITHMS
from ddrl.aws.settings import BACKEND_SCHEMA, SAGEMAKER_SCHEMA
from ddrl.cluster.slurm import SLURM_SCHEMA, SOFTWARE_SCHEMA
from ddrl.config.eval_config import EVALUATION_SCHEMA, EXPORT_SCHEMA, RENDER_SCHEMA
from ddrl.config.scaling_config import COST_SCHEMA, SCALING_SCHEMA
from ddrl.config.schema import (BUDGET, CHECKPOINT_EVERY, FAULT_TOLERANCE, NAME, ON_MISSING_GPU,
                                RESOURCES)
from ddrl.training.tracking import TRACKING_SCHEMA


def hyperparameters_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "description": "Per-algorithm hyperparameters; unset ones take the algorithm default.",
        "properties": {
            name: {
                "type": "object",
                "description": algo.description,
                "properties": {
                    p: {**param.schema, "description": param.help} for p, param in algo.params.items()
                },
                "additionalProperties": False,
            }
            for name, algo in sorted(ALGORITHMS.items())
        },
        "additionalProperties": False,
    }


def experiment_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "description": "A grid of runs: algorithms x envs x seeds x resources.",
        "properties": {
            "name": {**NAME, "description": "id used to group its runs in figures and tables "
                                            "(default experiment-<position>)"},
            "purpose": {"enum": ["learning", "timing", "both"], "default": "both",
                        "description": "learning: reward curves and returns tables; timing: "
                                       "speedup, breakdown and cost tables; both: all"},
            "outputs": {"type": "array", "items": {"enum": ["eval", "video", "policy"]},
                        "uniqueItems": True,
                        "description": "per-run outputs (eval.json, video + frames, policy.pt); "
                                       "default: all for learning/both, eval only for timing"},
            "algorithms": {
                "type": "array",
                "items": {"enum": sorted(ALGORITHMS)},
                "minItems": 1,
                "uniqueItems": True,
            },
            "envs": {"type": "array", "items": {"type": "string", "minLength": 1},
                     "minItems": 1, "uniqueItems": True},
            "seeds": {"type": "array", "items": {"type": "integer", "minimum": 0},
                      "minItems": 1, "uniqueItems": True},
            "resources": {"type": "array", "items": RESOURCES, "minItems": 1},
            "budget": BUDGET,
            "checkpoint_every": {"type": "integer", "minimum": 1,
                                 "description": "iterations between checkpoints"},
            "hyperparameters": hyperparameters_schema(),
            "env_config": {"type": "object", "description": "keyword arguments for gym.make"},
            "hyperparameters_from": {
                "type": "string", "minLength": 1,
                "description": "a search's best.yaml: its hyperparameters (experiment ones win)",
            },
        },
        "required": ["algorithms", "envs", "seeds", "budget"],
        "additionalProperties": False,
    }


def search_space_schema() -> dict[str, Any]:
    """A search's ``space:``: hyperparameter -> list of choices or one distribution."""
    bounds = {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2}
    return {
        "type": "object",
        "minProperties": 1,
        "description": "hyperparameter -> list of choices, or {uniform|loguniform|"
                       "randint: [low, high]}",
        "additionalProperties": {
            "anyOf": [
                {"type": "array"},
                {"type": "object", "properties": {
                    "uniform": bounds, "loguniform": bounds, "randint": bounds},
                 "minProperties": 1, "maxProperties": 1,
                 "additionalProperties": False},
            ],
        },
    }


def search_metric_schema() -> dict[str, Any]:
    """A search's ``metric:``: the progress column that ranks its trials."""
    return {
        "type": "object",
        "properties": {
            "column": {"type": "string", "default": "episode_return_mean"},
            "last": {"type": "integer", "minimum": 1, "default": 5,
                     "description": "mean over the last K iterations"},
            "mode": {"enum": ["max", "min"], "default": "max"},
        },
        "additionalProperties": False,
    }


def search_tune_schema() -> dict[str, Any]:
    """A search's ``tune:``: settings of a Ray Tune (ASHA) search."""
    return {
        "type": "object",
        "properties": {
            "time_budget_s": {"type": "number", "exclusiveMinimum": 0},
            "max_concurrent_trials": {"type": "integer", "minimum": 1, "default": 1},
            "grace_period": {"type": "integer", "minimum": 1, "default": 1,
                             "description": "ASHA: iterations before a first cut"},
            "reduction_factor": {"type": "number", "exclusiveMinimum": 1,
                                 "default": 3},
            "num_cpus": {"type": "integer", "minimum": 1,
                         "description": "CPUs of the private Ray (default: all)"},
            "nodes": {"type": "integer", "minimum": 1, "default": 1,
                      "description": "Slurm nodes of the tune job: Ray is started "
                                     "over them and the trials spread out"},
        },
        "additionalProperties": False,
    }


def search_schema() -> dict[str, Any]:
    """``search:`` entries; ddrl.study.search_space checks names and ranges against the registry."""
    return {
        "type": "array",
        "description": "Hyperparameter searches, one algorithm on one env each (ddrl.study.search_space).",
        "items": {
            "type": "object",
            "properties": {
                "name": {**NAME, "description": "id; default <algorithm>-<env>"},
                "kind": {"enum": ["grid", "tune"], "default": "grid",
                         "description": "grid: trials are ordinary runs; tune: one Ray Tune job"},
                "algorithm": {"enum": sorted(ALGORITHMS)},
                "env": {"type": "string", "minLength": 1},
                "seeds": {"type": "array", "items": {"type": "integer", "minimum": 0},
                          "minItems": 1, "uniqueItems": True, "default": [0]},
                "resources": RESOURCES,
                "budget": BUDGET,
                "checkpoint_every": {"type": "integer", "minimum": 1},
                "hyperparameters": {"type": "object",
                                    "description": "fixed for every trial (over the study's)"},
                "env_config": {"type": "object"},
                "space": search_space_schema(),
                "num_samples": {"type": "integer", "minimum": 1, "default": 1,
                                "description": "grid: draws per grid point; tune: trial budget"},
                "seed": {"type": "integer", "minimum": 0, "default": 0,
                         "description": "seed of the sampler"},
                "metric": search_metric_schema(),
                "tune": search_tune_schema(),
            },
            "required": ["algorithm", "env", "budget", "space"],
            "additionalProperties": False,
        },
        "minItems": 1,
    }


def config_schema() -> dict[str, Any]:
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "ddrl study config",
        "type": "object",
        "properties": {
            "study": {**NAME, "description": "name; outputs go to results/<study>/"},
            "experiments": {"type": "array", "items": experiment_schema(), "minItems": 1},
            "hyperparameters": hyperparameters_schema(),
            "checkpoint_every": CHECKPOINT_EVERY,
            "on_missing_gpu": ON_MISSING_GPU,
            "fault_tolerance": FAULT_TOLERANCE,
            "evaluation": EVALUATION_SCHEMA,
            "scaling": SCALING_SCHEMA,
            "cost": COST_SCHEMA,
            "render": RENDER_SCHEMA,
            "export": EXPORT_SCHEMA,
            "tracking": TRACKING_SCHEMA,
            "search": search_schema(),
            "train_backend": BACKEND_SCHEMA,
            "sagemaker": SAGEMAKER_SCHEMA,
            "software": SOFTWARE_SCHEMA,
            "slurm": SLURM_SCHEMA,
        },
        "required": ["study", "experiments"],
        "additionalProperties": False,
    }
