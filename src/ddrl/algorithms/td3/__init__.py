"""TD3 for ddrl: the registry entry (hyperparameters, config builder).

The algorithm itself lives in the submodules, imported only when a run is built:
:mod:`.td3` (``TD3Config``, ``TD3``), :mod:`.module` (the RLModule), :mod:`.learner` (the
torch Learner), :mod:`.losses` (the maths).
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
    replay_buffer_config,
    training_intensity,
)

NONNEG_FLOAT = {"type": "number", "minimum": 0}

PARAMS = {
    "actor_lr": Param(POS_FLOAT, 1e-3, "actor (policy) learning rate"),
    "critic_lr": Param(POS_FLOAT, 1e-3, "critic (twin Q) learning rate"),
    "gamma": Param(UNIT_FLOAT, 0.99, "discount factor"),
    "tau": Param({"type": "number", "exclusiveMinimum": 0, "maximum": 1}, 0.005,
                 "Polyak averaging coefficient for the target networks"),
    "policy_delay": Param(POS_INT, 2, "critic updates per actor and target-network update"),
    "target_noise": Param(NONNEG_FLOAT, 0.2,
                          "std of the target-policy smoothing noise (normalised action units)"),
    "target_noise_clip": Param(NONNEG_FLOAT, 0.5, "the smoothing noise is clipped to +-this"),
    "exploration_noise": Param(NONNEG_FLOAT, 0.1,
                               "std of the Gaussian exploration noise while sampling "
                               "(normalised action units, [-1, 1]); none in evaluation"),
    "train_batch_size": Param(POS_INT, 256, "replay minibatch size"),
    "updates_per_step": Param(POS_FLOAT, 1.0, "gradient (critic) updates per sampled env step"),
    "update_schedule": Param({"enum": list(UPDATE_SCHEDULES)}, FIXED_RATIO, UPDATE_SCHEDULE_HELP),
    "num_steps_sampled_before_learning_starts": Param(
        NONNEG_INT, 10_000, "warm-up env steps with uniform random actions, no training"),
    "replay_buffer_type": Param({"enum": list(REPLAY_BUFFER_TYPES)}, "TransitionReplayBuffer",
                                "TransitionReplayBuffer (ddrl, fast, uniform) or one of RLlib's "
                                "episode buffers (generic learner path, slower)"),
    "replay_buffer_capacity": Param(POS_INT, 1_000_000, "replay buffer size (env steps)"),
    "timesteps_per_iteration": Param(POS_INT, 1000, "env steps sampled per training iteration"),
    "rollout_fragment_length": Param(
        POS_INT, 64, "env steps per env between weight syncs; the updates for them are "
        "trained in one learner call"),
    "actor_hiddens": Param(HIDDENS, [256, 256], "actor hidden layer sizes"),
    "actor_activation": Param(ACTIVATION, "relu", "actor hidden activation"),
    "critic_hiddens": Param(HIDDENS, [256, 256], "critic hidden layer sizes"),
    "critic_activation": Param(ACTIVATION, "relu", "critic hidden activation"),
    "observation_filter": Param(OBS_FILTER, "NoFilter", "running mean/std observation normalisation"),
}


def build(spec):
    from ddrl.algorithms.td3.td3 import TD3Config

    hp = spec.hyperparameters
    config = apply_run_settings(TD3Config(), spec)
    config = (
        config.training(
            actor_lr=hp["actor_lr"],
            critic_lr=hp["critic_lr"],
            gamma=hp["gamma"],
            tau=hp["tau"],
            policy_delay=hp["policy_delay"],
            target_noise=hp["target_noise"],
            target_noise_clip=hp["target_noise_clip"],
            exploration_noise=hp["exploration_noise"],
            actor_hiddens=list(hp["actor_hiddens"]),
            actor_activation=hp["actor_activation"],
            critic_hiddens=list(hp["critic_hiddens"]),
            critic_activation=hp["critic_activation"],
            train_batch_size_per_learner=hp["train_batch_size"],
            updates_per_step=hp["updates_per_step"],
            update_schedule=hp["update_schedule"],
            training_intensity=training_intensity(hp),
            num_steps_sampled_before_learning_starts=hp["num_steps_sampled_before_learning_starts"],
            replay_buffer_config=replay_buffer_config(hp),
        )
        .env_runners(rollout_fragment_length=hp["rollout_fragment_length"])
        .reporting(min_sample_timesteps_per_iteration=hp["timesteps_per_iteration"])
    )
    return config


SPEC = register(
    AlgorithmSpec(
        name="TD3",
        params=PARAMS,
        build=build,
        description="Twin Delayed DDPG (ddrl, on RLlib's new API stack), off-policy.",
    )
)
