"""JSON Schema of the sections of a run: its name, resources, budget and the study-level
run settings (checkpoints, a missing GPU, fault tolerance).

Sections only: :mod:`ddrl.study.schema` assembles them, the algorithm registry and every
stage's own section into the schema of a study config.
"""

from __future__ import annotations

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

# Study-level run settings. Their defaults are stated here only: ddrl.study.defaults reads
# them for every run a study or a search expands to.
CHECKPOINT_EVERY = {"type": "integer", "minimum": 1, "default": 10}
ON_MISSING_GPU = {
    "enum": ["error", "cpu"],
    "default": "error",
    "description": "a run asks for a GPU the machine lacks: fail, or log and use the CPU",
}
FAULT_TOLERANCE = {
    "type": "object",
    "properties": {
        "max_env_runner_restarts": {"type": "integer", "minimum": 0, "default": 10},
        "restart_delay_s": {"type": "number", "minimum": 0, "default": 1},
        # No default: absent leaves existing run ids as they were.
        "store_buffer_in_checkpoints": {
            "type": "boolean",
            "description": "SAC/TD3: save the replay buffer in every checkpoint, so that a "
                           "resumed run continues with the transitions it had (RLlib's "
                           "option of that name; about 4 x (2 x obs + action + 3) bytes per "
                           "transition, ~0.4 GB for 1M humanoid steps). Off: a resumed run "
                           "starts with an empty buffer"},
    },
    "additionalProperties": False,
}

BUDGET = {
    "type": "object",
    "description": "When training stops: whichever limit is reached first.",
    "properties": {
        "env_steps": {"type": "integer", "minimum": 1},
        "time_limit_s": {"type": "number", "exclusiveMinimum": 0},
        "return_threshold": {
            "type": "number",
            "description": "stop once the mean return over the last return_window episodes "
                           "reaches this (needs env_steps or time_limit_s as well)"},
        "return_window": {
            "type": "integer", "minimum": 1, "default": 100,
            "description": "episodes the return threshold averages over (RLlib's "
                           "metrics_num_episodes_for_smoothing)"},
    },
    "minProperties": 1,
    "additionalProperties": False,
}
