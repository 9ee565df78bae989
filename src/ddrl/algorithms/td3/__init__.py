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
    POS_FLOAT,
    POS_INT,
    AlgorithmSpec,
    Param,
    register,
)
from ddrl.algorithms.common import apply_offpolicy_settings, apply_run_settings, offpolicy_params

NONNEG_FLOAT = {"type": "number", "minimum": 0}

PARAMS = {
    "actor_lr": Param(POS_FLOAT, 1e-3, "actor (policy) learning rate"),
    "critic_lr": Param(POS_FLOAT, 1e-3, "critic (twin Q) learning rate"),
    "tau": Param({"type": "number", "exclusiveMinimum": 0, "maximum": 1}, 0.005,
                 "Polyak averaging coefficient for the target networks"),
    "policy_delay": Param(POS_INT, 2, "critic updates per actor and target-network update"),
    "target_noise": Param(NONNEG_FLOAT, 0.2,
                          "std of the target-policy smoothing noise (normalised action units)"),
    "target_noise_clip": Param(NONNEG_FLOAT, 0.5, "the smoothing noise is clipped to +-this"),
    "exploration_noise": Param(NONNEG_FLOAT, 0.1,
                               "std of the Gaussian exploration noise while sampling "
                               "(normalised action units, [-1, 1]); none in evaluation"),
    **offpolicy_params(num_steps_sampled_before_learning_starts=Param(
        NONNEG_INT, 10_000, "warm-up env steps with uniform random actions, no training")),
    "actor_hiddens": Param(HIDDENS, [256, 256], "actor hidden layer sizes"),
    "actor_activation": Param(ACTIVATION, "relu", "actor hidden activation"),
    "critic_hiddens": Param(HIDDENS, [256, 256], "critic hidden layer sizes"),
    "critic_activation": Param(ACTIVATION, "relu", "critic hidden activation"),
}


def build(spec):
    from ddrl.algorithms.td3.td3 import TD3Config

    hp = spec.hyperparameters
    config = apply_run_settings(TD3Config(), spec)
    config = apply_offpolicy_settings(config, hp)
    return config.training(
        actor_lr=hp["actor_lr"],
        critic_lr=hp["critic_lr"],
        tau=hp["tau"],
        policy_delay=hp["policy_delay"],
        target_noise=hp["target_noise"],
        target_noise_clip=hp["target_noise_clip"],
        exploration_noise=hp["exploration_noise"],
        actor_hiddens=list(hp["actor_hiddens"]),
        actor_activation=hp["actor_activation"],
        critic_hiddens=list(hp["critic_hiddens"]),
        critic_activation=hp["critic_activation"],
    )


SPEC = register(
    AlgorithmSpec(
        name="TD3",
        params=PARAMS,
        build=build,
        description="Twin Delayed DDPG (ddrl, on RLlib's new API stack), off-policy.",
    )
)
