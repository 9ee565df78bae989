"""SAC for ddrl: the registry entry (hyperparameters, config builder). RLlib's module and
losses, trained by ddrl's transition-buffer loop; ``replay_buffer_type`` selects RLlib's own
training step with its episode buffers instead (needed for n-step returns and prioritized
replay).

The algorithm itself lives in the submodules, imported only when a run is built, as td3/'s:
:mod:`.sac` (``FastSACConfig``, ``FastSAC``), :mod:`.module` (the RLModule), :mod:`.learner`
(the torch Learner), :mod:`.losses` (the maths).
"""

from __future__ import annotations

from ddrl.algorithms.base import (
    ACTIVATION,
    HIDDENS,
    POS_FLOAT,
    POS_INT,
    UNIT_FLOAT,
    AlgorithmSpec,
    Param,
    register,
)
from ddrl.algorithms.common import (
    apply_offpolicy_settings,
    apply_run_settings,
    model_config,
    offpolicy_params,
)

PARAMS = {
    "actor_lr": Param(POS_FLOAT, 3e-4, "policy learning rate"),
    "critic_lr": Param(POS_FLOAT, 3e-4, "Q-network learning rate"),
    "alpha_lr": Param(POS_FLOAT, 3e-4, "entropy-temperature learning rate"),
    "tau": Param(UNIT_FLOAT, 0.005, "Polyak averaging coefficient for the target Q-nets"),
    "initial_alpha": Param(POS_FLOAT, 1.0, "initial entropy temperature"),
    "target_entropy": Param({"oneOf": [{"const": "auto"}, {"type": "number"}]}, "auto", "entropy target"),
    "twin_q": Param({"type": "boolean"}, True, "clipped double-Q"),
    "critic_loss": Param(
        {"enum": ["huber", "mse"]}, "huber",
        "critic regression: huber (delta 1; RLlib's and the thesis's RLlib 1.x) or mse "
        "(0.5 x squared error: the SAC paper's and Stable-Baselines3's)",
        implicit_default=True),
    "warmup_actions": Param(
        {"enum": ["policy", "uniform"]}, "policy",
        "actions before num_steps_sampled_before_learning_starts: policy (the initial "
        "stochastic policy; RLlib's) or uniform (uniform random; the SAC paper's and "
        "Stable-Baselines3's)", implicit_default=True),
    "n_step": Param(POS_INT, 1, "n-step returns (> 1 needs an RLlib episode buffer)"),
    **offpolicy_params(),
    "fcnet_hiddens": Param(HIDDENS, [256, 256], "encoder hidden sizes (policy and Q)"),
    "fcnet_activation": Param(ACTIVATION, "relu", "hidden activation"),
    "head_fcnet_hiddens": Param({"type": "array", "items": POS_INT}, [], "extra head layers"),
}


def build(spec):
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

    from ddrl.algorithms.sac.sac import FastSACConfig

    hp = spec.hyperparameters
    config = apply_run_settings(FastSACConfig(), spec)
    config = apply_offpolicy_settings(config, hp)
    return (
        config.training(
            actor_lr=hp["actor_lr"],
            critic_lr=hp["critic_lr"],
            alpha_lr=hp["alpha_lr"],
            tau=hp["tau"],
            initial_alpha=hp["initial_alpha"],
            target_entropy=hp["target_entropy"],
            twin_q=hp["twin_q"],
            n_step=hp["n_step"],
            critic_loss=SPEC.setting(hp, "critic_loss"),
            warmup_actions=SPEC.setting(hp, "warmup_actions"),
        )
        .rl_module(
            model_config=DefaultModelConfig(
                **model_config(hp, head_fcnet_hiddens=list(hp["head_fcnet_hiddens"]))
            )
        )
    )


SPEC = register(
    AlgorithmSpec(
        name="SAC",
        params=PARAMS,
        build=build,
        description="Soft Actor-Critic (RLlib's module and losses, ddrl's replay loop), off-policy.",
    )
)
