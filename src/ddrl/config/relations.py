"""Rules between settings that the schema checks one at a time.

Each rule is one that RLlib or ddrl's own training loop would enforce (or silently break)
inside the job, minutes after it starts; here it fails before any job, naming the keys,
their values and what would be accepted.
"""

from __future__ import annotations

from typing import Any, Mapping

from ddrl.errors import ConfigError


def _ppo(hp: Mapping[str, Any], res: Mapping[str, int], budget: Mapping[str, Any]) -> list[str]:
    errors = []
    tbs, mbs = hp["train_batch_size"], hp["minibatch_size"]
    if mbs > tbs:  # RLlib's PPOConfig.validate: minibatches are cut from one train batch
        errors.append(f"PPO.minibatch_size={mbs} is larger than PPO.train_batch_size={tbs}; "
                      f"allowed: minibatch_size <= {tbs}")
    frag = hp["rollout_fragment_length"]
    if frag != "auto":
        # RLlib's validate_train_batch_size_vs_rollout_fragment_length: one sampling round
        # (fragment x runners x envs) must fill the train batch to within 10%.
        per_round = res["num_env_runners"] * res["num_envs_per_env_runner"] * frag
        size = per_round
        while size < tbs:
            size += per_round
        if size - tbs > 0.1 * tbs or size - per_round - tbs > 0.1 * tbs:
            suggest = max(1, tbs // (res["num_env_runners"] * res["num_envs_per_env_runner"]))
            errors.append(
                f"PPO.rollout_fragment_length={frag} x num_env_runners={res['num_env_runners']} "
                f"x num_envs_per_env_runner={res['num_envs_per_env_runner']} does not fill "
                f"PPO.train_batch_size={tbs} to within 10%; allowed: rollout_fragment_length: "
                f"auto or {suggest}"
            )
    return errors


def _offpolicy(algo: str, hp: Mapping[str, Any], budget: Mapping[str, Any]) -> list[str]:
    errors = []
    cap, tbs = hp["replay_buffer_capacity"], hp["train_batch_size"]
    start = hp["num_steps_sampled_before_learning_starts"]
    if tbs > cap:
        errors.append(f"{algo}.train_batch_size={tbs} is larger than "
                      f"{algo}.replay_buffer_capacity={cap}: every minibatch would repeat "
                      f"transitions; allowed: train_batch_size <= {cap}")
    if start > cap:
        errors.append(f"{algo}.num_steps_sampled_before_learning_starts={start} is larger than "
                      f"{algo}.replay_buffer_capacity={cap}: the buffer drops warm-up "
                      f"transitions before learning starts; allowed: <= {cap}")
    steps = budget.get("env_steps")
    if steps is not None and start >= steps:
        errors.append(f"{algo}.num_steps_sampled_before_learning_starts={start} is not less "
                      f"than budget.env_steps={steps}: the run would end before its first "
                      f"update; allowed: < {steps}")
    if hp.get("n_step", 1) != 1 and hp["replay_buffer_type"] == "TransitionReplayBuffer":
        errors.append(f"{algo}.n_step={hp['n_step']} with replay_buffer_type="
                      "TransitionReplayBuffer (one-step transitions); allowed: n_step: 1, or "
                      "replay_buffer_type: EpisodeReplayBuffer or PrioritizedEpisodeReplayBuffer")
    if hp.get("critic_loss", "huber") != "huber" and hp["replay_buffer_type"] != "TransitionReplayBuffer":
        errors.append(f"{algo}.critic_loss={hp['critic_loss']} with replay_buffer_type="
                      f"{hp['replay_buffer_type']} (RLlib's training step, its own Huber loss); "
                      "allowed: critic_loss: huber, or replay_buffer_type: TransitionReplayBuffer")
    if hp.get("warmup_actions", "policy") != "policy" and hp["replay_buffer_type"] != "TransitionReplayBuffer":
        errors.append(f"{algo}.warmup_actions={hp['warmup_actions']} with replay_buffer_type="
                      f"{hp['replay_buffer_type']} (RLlib's training step warms up with the "
                      "policy); allowed: warmup_actions: policy, or replay_buffer_type: "
                      "TransitionReplayBuffer")
    if hp.get("target_noise_clip") is not None and hp["target_noise_clip"] == 0 \
            and hp.get("target_noise", 0) > 0:
        errors.append(f"{algo}.target_noise={hp['target_noise']} with target_noise_clip=0 "
                      "clips the smoothing noise to nothing; allowed: target_noise_clip > 0, "
                      "or target_noise: 0 to turn smoothing off")
    return errors


def relation_errors(algorithm: str, hyperparameters: Mapping[str, Any],
                    resources: Mapping[str, int], budget: Mapping[str, Any]) -> list[str]:
    """Contradictions between one run's settings, one message each (empty: none)."""
    if algorithm == "PPO":
        return _ppo(hyperparameters, resources, budget)
    if "replay_buffer_capacity" in hyperparameters:
        return _offpolicy(algorithm, hyperparameters, budget)
    return []


def check_relations(where: str, algorithm: str, hyperparameters: Mapping[str, Any],
                    resources: Mapping[str, int], budget: Mapping[str, Any]) -> None:
    errors = relation_errors(algorithm, hyperparameters, resources, budget)
    if errors:
        raise ConfigError(f"{where}: " + "; ".join(errors))
