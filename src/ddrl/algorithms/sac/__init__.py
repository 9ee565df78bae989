"""SAC: RLlib's module and losses, trained by ddrl's transition-buffer loop.

See :mod:`ddrl.algorithms.sac.sac`. ``replay_buffer_type`` selects RLlib's own training
step with its episode buffers instead (needed for n-step returns and prioritized replay).
"""

from __future__ import annotations

from ddrl.algorithms.base import (
    ACTIVATION,
    HIDDENS,
    NONNEG_INT,
    OBS_FILTER,
    POS_FLOAT,
    POS_INT,
    UNIT_FLOAT,
    AlgorithmSpec,
    Param,
    register,
)
from ddrl.algorithms.common import (
    FIXED_RATIO,
    REPLAY_BUFFER_TYPES,
    UPDATE_SCHEDULE_HELP,
    UPDATE_SCHEDULES,
    apply_run_settings,
    model_config,
    replay_buffer_config,
    training_intensity,
)

PARAMS = {
    "actor_lr": Param(POS_FLOAT, 3e-4, "policy learning rate"),
    "critic_lr": Param(POS_FLOAT, 3e-4, "Q-network learning rate"),
    "alpha_lr": Param(POS_FLOAT, 3e-4, "entropy-temperature learning rate"),
    "gamma": Param(UNIT_FLOAT, 0.99, "discount factor"),
    "tau": Param(UNIT_FLOAT, 0.005, "Polyak averaging coefficient for the target Q-nets"),
    "initial_alpha": Param(POS_FLOAT, 1.0, "initial entropy temperature"),
    "target_entropy": Param({"oneOf": [{"const": "auto"}, {"type": "number"}]}, "auto", "entropy target"),
    "twin_q": Param({"type": "boolean"}, True, "clipped double-Q"),
    "n_step": Param(POS_INT, 1, "n-step returns (> 1 needs an RLlib episode buffer)"),
    "train_batch_size": Param(POS_INT, 256, "replay minibatch size"),
    "updates_per_step": Param(POS_FLOAT, 1.0, "gradient updates per sampled env step"),
    "num_steps_sampled_before_learning_starts": Param(NONNEG_INT, 1000, "warm-up env steps"),
    "update_schedule": Param({"enum": list(UPDATE_SCHEDULES)}, FIXED_RATIO, UPDATE_SCHEDULE_HELP),
    "replay_buffer_capacity": Param(POS_INT, 1_000_000, "replay buffer size (env steps)"),
    "replay_buffer_type": Param({"enum": list(REPLAY_BUFFER_TYPES)}, "TransitionReplayBuffer",
                                "TransitionReplayBuffer (ddrl, fast, uniform) or one of RLlib's "
                                "episode buffers (RLlib's training step; n-step, prioritized)"),
    "timesteps_per_iteration": Param(POS_INT, 1000, "env steps sampled per training iteration"),
    "rollout_fragment_length": Param(
        POS_INT, 64, "env steps per env between weight syncs; with the TransitionReplayBuffer "
        "the updates for them are trained in one learner call"),
    "fcnet_hiddens": Param(HIDDENS, [256, 256], "encoder hidden sizes (policy and Q)"),
    "fcnet_activation": Param(ACTIVATION, "relu", "hidden activation"),
    "head_fcnet_hiddens": Param({"type": "array", "items": POS_INT}, [], "extra head layers"),
    "observation_filter": Param(OBS_FILTER, "NoFilter", "running mean/std observation normalisation"),
}


def build(spec):
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

    from ddrl.algorithms.sac.sac import FastSACConfig

    hp = spec.hyperparameters
    config = apply_run_settings(FastSACConfig(), spec)
    config = (
        config.training(
            actor_lr=hp["actor_lr"],
            critic_lr=hp["critic_lr"],
            alpha_lr=hp["alpha_lr"],
            gamma=hp["gamma"],
            tau=hp["tau"],
            initial_alpha=hp["initial_alpha"],
            target_entropy=hp["target_entropy"],
            twin_q=hp["twin_q"],
            n_step=hp["n_step"],
            train_batch_size_per_learner=hp["train_batch_size"],
            updates_per_step=hp["updates_per_step"],
            update_schedule=hp["update_schedule"],
            training_intensity=training_intensity(hp),
            num_steps_sampled_before_learning_starts=hp["num_steps_sampled_before_learning_starts"],
            replay_buffer_config=replay_buffer_config(hp),
        )
        .env_runners(rollout_fragment_length=hp["rollout_fragment_length"])
        .reporting(min_sample_timesteps_per_iteration=hp["timesteps_per_iteration"])
        .rl_module(
            model_config=DefaultModelConfig(
                **model_config(hp, head_fcnet_hiddens=list(hp["head_fcnet_hiddens"]))
            )
        )
    )
    return config


SPEC = register(
    AlgorithmSpec(
        name="SAC",
        params=PARAMS,
        build=build,
        description="Soft Actor-Critic (RLlib's module and losses, ddrl's replay loop), off-policy.",
    )
)
