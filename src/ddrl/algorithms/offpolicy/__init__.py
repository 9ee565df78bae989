"""The fast off-policy training loop that ddrl's SAC and TD3 share, by layer:

- :mod:`.config`: the ``AlgorithmConfig`` (``TransitionReplayConfig``);
- :mod:`.learner`: the learner mixin and its update step (``FastUpdateLearner``,
  ``OffPolicyStep``), and how a CPU learner uses its threads;
- :mod:`.algorithm`: the Algorithm and its training step (``TransitionReplayAlgorithm``);
- what the update steps are made of: :mod:`.fused_adam`, :mod:`.batch_parts` (a minibatch's
  gradients in parts on threads), :mod:`.plain_mlp` (RLlib's MLPs as plain tensor ops) and
  :mod:`.cuda_graphs` (steps replayed as CUDA graphs).

RLlib 2.60's SAC training step pays, per gradient step, for an episode replay buffer that
rebuilds a batch from episodes, a learner connector pipeline and per-update metrics
bookkeeping; at one update per env step on a 2-core machine that is several times the cost
of the gradient step itself (RLlib SAC: 3.8 env steps/s on InvertedPendulum). With
``replay_buffer_config={"type": "TransitionReplayBuffer"}`` (the default here) each
training step instead

1. samples ``rollout_fragment_length`` steps per env from every env runner (remote runners
   sample the next fragment while the learner trains on this one),
2. appends the transitions to ddrl's flat NumPy buffer (:mod:`ddrl.algorithms.replay`),
3. once ``num_steps_sampled_before_learning_starts`` env steps were sampled, draws
   ``updates_per_step`` x (new env steps) minibatches in one go and trains them in one
   learner call (the learner's ``update_from_transitions``),
4. syncs the weights to the env runners.

Two update schedules (``update_schedule``), named so a config says which one it measures:

- ``fixed_ratio`` (ddrl's default): ``updates_per_step`` gradient updates per sampled env
  step, whatever the number of env runners, so iteration times at different worker counts
  compare the same amount of learning.
- ``rllib1_round_robin``: what RLlib 1.x did with ``training_intensity`` unset, and so what
  the thesis's TD3/SAC timing runs measured. Each training step is one synchronous round:
  ``rollout_fragment_length`` steps from every env runner (N of them), stored, then ONE
  update of ``train_batch_size``, then a weight sync. An iteration still closes after
  ``timesteps_per_iteration`` env steps, so it holds about
  ``timesteps_per_iteration / (N * rollout_fragment_length)`` updates: the updates per env
  step fall as 1/N. No sampling overlaps learning (RLlib 1.x's bulk-synchronous sampling).

Both record the gradient updates of every iteration (``UPDATES_KEY``). With one of RLlib's
episode buffers it runs RLlib's own SAC training step unchanged.
"""

from __future__ import annotations

from ddrl.algorithms.offpolicy.algorithm import (
    MAX_UPDATES_PER_CALL,
    POLICY_LAG_KEY,
    REPLAY_BUFFER_STATE,
    SAMPLE_TAG,
    UPDATES_KEY,
    UPDATES_LIFETIME_KEY,
    PendingTransitions,
    TransitionReplayAlgorithm,
)
from ddrl.algorithms.offpolicy.batch_parts import SplitBatch, sum_gradients, weighted
from ddrl.algorithms.offpolicy.config import FAST_BUFFER, TransitionReplayConfig
from ddrl.algorithms.offpolicy.cuda_graphs import CapturedSteps
from ddrl.algorithms.offpolicy.fused_adam import FusedAdamStep, optimizer_params, prefer_fused_adam
from ddrl.algorithms.offpolicy.learner import (
    MAX_BATCH_PARTS,
    FastUpdateLearner,
    OffPolicyStep,
    SharedCores,
    captured_steps_for,
    learner_replay_buffer,
    learner_thread_settings,
    limit_learner_threads,
    minibatch_tensors,
    polyak_update,
)
from ddrl.algorithms.offpolicy.plain_mlp import PlainMLP, mlp_chain

__all__ = [
    "CapturedSteps", "FAST_BUFFER", "FastUpdateLearner", "FusedAdamStep", "MAX_BATCH_PARTS",
    "MAX_UPDATES_PER_CALL", "OffPolicyStep", "POLICY_LAG_KEY", "PendingTransitions",
    "PlainMLP", "REPLAY_BUFFER_STATE", "SAMPLE_TAG", "SharedCores", "SplitBatch",
    "TransitionReplayAlgorithm", "TransitionReplayConfig", "UPDATES_KEY", "UPDATES_LIFETIME_KEY",
    "captured_steps_for", "learner_replay_buffer", "learner_thread_settings",
    "limit_learner_threads", "minibatch_tensors", "mlp_chain", "optimizer_params",
    "polyak_update", "prefer_fused_adam", "sum_gradients", "weighted",
]
