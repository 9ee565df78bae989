"""JSON Schema of a study config.

The schema is built from the algorithm registry, so the hyperparameters each algorithm
accepts are stated once. ``workflow/schemas/config.schema.yaml`` is this schema written out
(`ddrl schema`); a test keeps the two equal.
"""

from __future__ import annotations

from typing import Any

from ddrl.algorithms import ALGORITHMS

NAME = {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9_.-]*$"}

RESOURCES = {
    "type": "object",
    "description": "Compute for one run. The learner runs in the driver process.",
    "properties": {
        "num_env_runners": {"type": "integer", "minimum": 1, "default": 1,
                            "description": "rollout workers (Ray actors)"},
        "num_envs_per_env_runner": {"type": "integer", "minimum": 1, "default": 1,
                                    "description": "vectorised envs in each runner"},
        "num_cpus_per_env_runner": {"type": "integer", "minimum": 1, "default": 1},
        "num_gpus_per_learner": {"type": "integer", "minimum": 0, "maximum": 8, "default": 0},
        "nodes": {"type": "integer", "minimum": 1, "default": 1,
                  "description": "cluster nodes for one run (Slurm profile)"},
    },
    "additionalProperties": False,
}

BUDGET = {
    "type": "object",
    "description": "When training stops: whichever limit is reached first.",
    "properties": {
        "env_steps": {"type": "integer", "minimum": 1},
        "time_limit_s": {"type": "number", "exclusiveMinimum": 0},
    },
    "minProperties": 1,
    "additionalProperties": False,
}


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
            "name": NAME,
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
        },
        "required": ["algorithms", "envs", "seeds", "budget"],
        "additionalProperties": False,
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
            "checkpoint_every": {"type": "integer", "minimum": 1, "default": 10},
            "on_missing_gpu": {
                "enum": ["error", "cpu"],
                "default": "error",
                "description": "a run asks for a GPU the machine lacks: fail, or log and use the CPU",
            },
            "fault_tolerance": {
                "type": "object",
                "properties": {
                    "max_env_runner_restarts": {"type": "integer", "minimum": 0, "default": 10},
                    "restart_delay_s": {"type": "number", "minimum": 0, "default": 1},
                },
                "additionalProperties": False,
            },
        },
        "required": ["study", "experiments"],
        "additionalProperties": False,
    }
