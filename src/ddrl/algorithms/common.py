"""Settings every algorithm applies the same way: env, resources, seed, fault tolerance."""

from __future__ import annotations

from typing import Any

from ddrl.algorithms.base import OBSERVATION_FILTER
from ddrl.envs import rllib_env_id
from ddrl.errors import ConfigError
from ddrl.runs import RunSpec
from ddrl.runs import return_window


def apply_run_settings(config: Any, spec: RunSpec) -> Any:
    """Apply the parts of a run spec that do not depend on the algorithm."""
    res = spec.resources
    hp = spec.hyperparameters
    config = (
        config.environment(env=rllib_env_id(spec.env), env_config=dict(spec.env_config))
        .framework("torch")
        .env_runners(
            num_env_runners=res["num_env_runners"],
            num_envs_per_env_runner=res["num_envs_per_env_runner"],
            num_cpus_per_env_runner=res["num_cpus_per_env_runner"],
            observation_filter=hp.get("observation_filter", OBSERVATION_FILTER.default),
            env_to_module_connector=observation_filter_connector(hp.get("observation_filter")),
        )
        .learners(num_learners=0, num_gpus_per_learner=res["num_gpus_per_learner"])
        .fault_tolerance(
            restart_failed_env_runners=True,
            max_num_env_runner_restarts=spec.fault_tolerance["max_env_runner_restarts"],
            delay_between_env_runner_restarts_s=spec.fault_tolerance["restart_delay_s"],
        )
        .debugging(seed=spec.seed, log_level="WARN")
        # The episodes episode_return_mean averages over: budget.return_window, stated
        # explicitly (ddrl.training.stop), 100 (RLlib's default) when unset.
        .reporting(metrics_num_episodes_for_smoothing=return_window(spec.budget))
    )
    if spec.fault_tolerance.get("store_buffer_in_checkpoints"):
        if not hasattr(config, "store_buffer_in_checkpoints"):
            raise ConfigError(
                f"fault_tolerance.store_buffer_in_checkpoints: {spec.algorithm} has no replay "
                "buffer to checkpoint (SAC and TD3 have); remove the setting for this run")
        config = config.training(store_buffer_in_checkpoints=True)
    return config


def _mean_std_filter(env=None, spaces=None, device=None):
    from ray.rllib.connectors.env_to_module.mean_std_filter import MeanStdFilter

    return MeanStdFilter(multi_agent=False)


def observation_filter_connector(name: str | None):
    """The env-to-module connector for ``observation_filter``.

    RLlib's new API stack ignores ``config.observation_filter`` (old stack only): the filter
    must be an env-to-module connector. Its running mean/std is part of the env runners'
    checkpointed state, so restored and exported policies normalise the same way.
    """
    if name in (None, "NoFilter"):
        return None
    if name == "MeanStdFilter":
        return _mean_std_filter
    raise ValueError(f"unknown observation_filter {name!r}; expected NoFilter or MeanStdFilter")


def model_config(hp: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """RLlib ``model_config`` from the shared network hyperparameters."""
    cfg = {
        "fcnet_hiddens": list(hp["fcnet_hiddens"]),
        "fcnet_activation": hp["fcnet_activation"],
    }
    cfg.update(extra)
    return cfg


# Replay buffers the off-policy algorithms accept (see ddrl.algorithms.offpolicy): ddrl's flat
# transition buffer first (the default), then RLlib's episode buffers.
REPLAY_BUFFER_TYPES = ("TransitionReplayBuffer", "EpisodeReplayBuffer",
                       "PrioritizedEpisodeReplayBuffer")


# How an off-policy iteration trains (ddrl.algorithms.offpolicy): a fixed number of updates
# per env step, or RLlib 1.x's one update per sampling round (what the thesis measured).
FIXED_RATIO = "fixed_ratio"
RLLIB1_ROUND_ROBIN = "rllib1_round_robin"
UPDATE_SCHEDULES = (FIXED_RATIO, RLLIB1_ROUND_ROBIN)
UPDATE_SCHEDULE_HELP = (
    "fixed_ratio: updates_per_step updates per sampled env step at any worker count (ddrl); "
    "rllib1_round_robin: one update of train_batch_size per synchronous sampling round of "
    "rollout_fragment_length steps from every env runner, as RLlib 1.x with "
    "training_intensity unset (the thesis's TD3/SAC timing runs): updates per env step fall "
    "as 1/workers")


def replay_buffer_config(hp: dict[str, Any]) -> dict[str, Any]:
    """RLlib ``replay_buffer_config`` from ``replay_buffer_type`` and its capacity."""
    kind = hp["replay_buffer_type"]
    cfg: dict[str, Any] = {"type": kind, "capacity": hp["replay_buffer_capacity"]}
    if kind == "PrioritizedEpisodeReplayBuffer":
        cfg.update(alpha=0.6, beta=0.4)
    return cfg


def training_intensity(hp: dict[str, Any]) -> float:
    """RLlib's ratio of trained to sampled steps for ``updates_per_step`` updates a step
    (read by RLlib's own training step, i.e. with an episode buffer)."""
    return hp["updates_per_step"] * hp["train_batch_size"]


# --------------------------------------------------------------------------- off-policy (SAC, TD3)

# Defaults the off-policy hyperparameters and the RLlib configs (ddrl.algorithms.offpolicy)
# share, each written here once.
REPLAY_BUFFER_CAPACITY = 1_000_000  # env steps
ROLLOUT_FRAGMENT_LENGTH = 64  # env steps per env runner between weight syncs
TIMESTEPS_PER_ITERATION = 1000  # env steps sampled per training iteration


def offpolicy_params(**overrides: Any) -> dict[str, Any]:
    """The hyperparameters SAC and TD3 share (replay, update ratio, sampling), defined once.

    ``overrides`` replaces a shared :class:`~ddrl.algorithms.base.Param` where an algorithm
    differs (TD3 warms up longer, with uniform random actions).
    """
    from ddrl.algorithms.base import GAMMA, NONNEG_INT, POS_FLOAT, POS_INT, Param

    shared = {
        "gamma": GAMMA,
        "train_batch_size": Param(POS_INT, 256, "replay minibatch size"),
        "updates_per_step": Param(POS_FLOAT, 1.0, "gradient (critic) updates per sampled env step"),
        "update_schedule": Param({"enum": list(UPDATE_SCHEDULES)}, FIXED_RATIO, UPDATE_SCHEDULE_HELP),
        "num_steps_sampled_before_learning_starts": Param(NONNEG_INT, 1000, "warm-up env steps"),
        "replay_buffer_capacity": Param(POS_INT, REPLAY_BUFFER_CAPACITY, "replay buffer size (env steps)"),
        "replay_buffer_type": Param(
            {"enum": list(REPLAY_BUFFER_TYPES)}, REPLAY_BUFFER_TYPES[0],
            "TransitionReplayBuffer (ddrl, fast, uniform) or one of RLlib's episode buffers "
            "(RLlib's generic training step, slower; SAC: n-step, prioritized)"),
        "timesteps_per_iteration": Param(POS_INT, TIMESTEPS_PER_ITERATION,
                                         "env steps sampled per training iteration"),
        "rollout_fragment_length": Param(
            POS_INT, ROLLOUT_FRAGMENT_LENGTH,
            "env steps per env between weight syncs; with the TransitionReplayBuffer "
            "the updates for them are trained in one learner call"),
        "sample_while_learning": Param(
            {"type": "boolean"}, True,
            "remote env runners sample the next fragment while the learner trains on the last "
            "one (the acting policy then lags up to two fragments behind the learner); false: "
            "sample and train in turn", implicit_default=True),
        "observation_filter": OBSERVATION_FILTER,
    }
    unknown = sorted(set(overrides) - set(shared))
    if unknown:
        raise KeyError(f"not a shared off-policy hyperparameter: {unknown}")
    return {**shared, **overrides}


def apply_offpolicy_settings(config: Any, hp: dict[str, Any]) -> Any:
    """The end of SAC's and TD3's ``build()``: the shared hyperparameters on the config."""
    shared = offpolicy_params()
    return (
        config.training(
            sample_while_learning=hp.get("sample_while_learning",
                                         shared["sample_while_learning"].default),
            gamma=hp["gamma"],
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

