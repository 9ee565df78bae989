"""PPO from RLlib (new API stack)."""

from __future__ import annotations

from ddrl.algorithms.base import (
    ACTIVATION,
    GAMMA,
    HIDDENS,
    OBSERVATION_FILTER,
    POS_FLOAT,
    POS_INT,
    UNIT_FLOAT,
    AlgorithmSpec,
    Param,
    register,
)
from ddrl.algorithms.common import apply_run_settings, model_config

PARAMS = {
    "lr": Param(POS_FLOAT, 3e-4, "Adam learning rate"),
    "gamma": GAMMA,
    "lambda_": Param(UNIT_FLOAT, 0.95, "GAE lambda"),
    "clip_param": Param(POS_FLOAT, 0.2, "PPO surrogate clip"),
    "vf_clip_param": Param(POS_FLOAT, 10.0, "value-loss clip"),
    "vf_loss_coeff": Param({"type": "number", "minimum": 0}, 1.0, "value-loss weight"),
    "entropy_coeff": Param({"type": "number", "minimum": 0}, 0.0, "entropy bonus"),
    "use_kl_loss": Param({"type": "boolean"}, True, "add the adaptive KL penalty"),
    "kl_coeff": Param({"type": "number", "minimum": 0}, 0.2, "initial KL coefficient"),
    "kl_target": Param(POS_FLOAT, 0.01, "KL target"),
    "train_batch_size": Param(POS_INT, 4000, "env steps per iteration"),
    "minibatch_size": Param(POS_INT, 128, "SGD minibatch size"),
    "num_epochs": Param(POS_INT, 10, "SGD epochs per iteration"),
    "grad_clip": Param({"type": ["number", "null"], "exclusiveMinimum": 0}, None, "global-norm clip"),
    "fcnet_hiddens": Param(HIDDENS, [64, 64], "hidden layer sizes (policy and value nets)"),
    "fcnet_activation": Param(ACTIVATION, "tanh", "hidden activation"),
    "vf_share_layers": Param({"type": "boolean"}, False, "share layers between policy and value"),
    "free_log_std": Param(
        {"type": "boolean"}, False,
        "Box actions: true learns the Gaussian's log std as one state-independent parameter "
        "(PPO paper, SB3, CleanRL; starts at std 1; much better on Bullet HalfCheetah, "
        "docs/benchmarks.md); false (RLlib's default): the policy net outputs it per state. "
        "No effect on discrete actions"),
    "initialization": Param(
        {"enum": ["rllib", "orthogonal", "rllib1_normc"]}, "rllib",
        "weights: rllib (RLlib 2's default: torch's per-layer init); orthogonal (SB3's and "
        "CleanRL's: gain sqrt(2) hidden, 0.01 policy head, 1 value head); rllib1_normc "
        "(RLlib 1.x's, the thesis's: normc 1.0 hidden, 0.01 policy head, 1.0 value head). "
        "Biases 0 in both non-default schemes", implicit_default=True),
    "observation_filter": OBSERVATION_FILTER,
    "rollout_fragment_length": Param({"oneOf": [POS_INT, {"const": "auto"}]}, "auto", "steps per env per sample call"),
    "shuffle_batch_per_epoch": Param({"type": "boolean"}, True, "reshuffle each epoch"),
    "lean_learner": Param(
        {"type": "boolean"}, True,
        "ddrl's lean PPO learner (RLlib's loss and minibatch schedule, without RLlib's "
        "per-minibatch bookkeeping; ddrl.algorithms.ppo.learner); false: RLlib's stock "
        "PPOTorchLearner"),
}


def build(spec):
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import (
        DefaultPPOTorchRLModule,
    )
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    from ddrl.algorithms.ppo.catalog import INITIALIZATION_CATALOGS
    from ddrl.envs.spaces import env_spaces

    hp = spec.hyperparameters
    # RLlib's catalog rejects free_log_std for a categorical head (spaces read only if asked).
    free_log_std = (hp["free_log_std"]
                    and env_spaces(spec.env, spec.env_config)["action"]["type"] == "Box")
    catalog = INITIALIZATION_CATALOGS[SPEC.setting(hp, "initialization")]
    config = apply_run_settings(PPOConfig(), spec)
    config = (
        config.training(
            lr=hp["lr"],
            gamma=hp["gamma"],
            lambda_=hp["lambda_"],
            clip_param=hp["clip_param"],
            vf_clip_param=hp["vf_clip_param"],
            vf_loss_coeff=hp["vf_loss_coeff"],
            entropy_coeff=hp["entropy_coeff"],
            use_kl_loss=hp["use_kl_loss"],
            kl_coeff=hp["kl_coeff"],
            kl_target=hp["kl_target"],
            train_batch_size_per_learner=hp["train_batch_size"],
            minibatch_size=hp["minibatch_size"],
            num_epochs=hp["num_epochs"],
            grad_clip=hp["grad_clip"],
            shuffle_batch_per_epoch=hp["shuffle_batch_per_epoch"],
        )
        .env_runners(rollout_fragment_length=hp["rollout_fragment_length"])
        .rl_module(
            model_config=DefaultModelConfig(
                **model_config(hp, vf_share_layers=hp["vf_share_layers"],
                               free_log_std=free_log_std)
            ),
            rl_module_spec=RLModuleSpec(module_class=DefaultPPOTorchRLModule,
                                        catalog_class=catalog),
        )
    )
    if hp["lean_learner"]:
        from ddrl.algorithms.ppo.learner import LeanPPOTorchLearner

        config = config.learners(learner_class=LeanPPOTorchLearner)
    return config


SPEC = register(
    AlgorithmSpec(
        name="PPO",
        params=PARAMS,
        build=build,
        description="Proximal Policy Optimization (RLlib), on-policy.",
    )
)
