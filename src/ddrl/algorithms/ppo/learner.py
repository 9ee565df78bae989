"""A lean PPO learner: RLlib's PPO loss and minibatch schedule without per-minibatch bookkeeping.

RLlib's ``Learner.update`` wraps every minibatch in a ``MultiAgentBatch``, switches the module
to train mode, checks each gradient for finiteness, logs a dozen metrics and counters, and
concatenates/shuffles ``SampleBatch`` objects. For PPO's small networks that machinery costs
more than the gradient step itself. :class:`LeanPPOTorchLearner` keeps RLlib's maths and
replaces only the loop:

- RLlib's learner connector still builds the train batch (GAE advantages, value targets,
  old-policy logp, the loss mask of the artificial last timestep);
- the batch becomes tensors once; the minibatch index stream
  (:mod:`ddrl.algorithms.ppo.minibatches`) follows RLlib's ``MiniBatchCyclicIterator``
  (first epoch in batch order, a fresh permutation from numpy's global RNG at every epoch
  wrap, minibatches of exactly ``minibatch_size`` that may span an epoch boundary,
  ``ceil(num_epochs * N / minibatch_size)`` minibatches), gathered once per update so that
  each minibatch is a slice;
- each minibatch: forward, RLlib's PPO loss (clipped surrogate, clipped value loss, entropy,
  adaptive KL term), backward into one flat gradient buffer, RLlib's grad clipping, RLlib's
  non-finite-gradient handling (``nan_to_num``) as one op, a fused (or foreach) Adam step;
- metrics are logged once per update under RLlib's names. RLlib logs its loss terms with
  ``window=1``, i.e. reports the *last* minibatch's values and adapts ``kl_coeff`` from the
  last minibatch's KL; this learner does the same.

Setups the lean loop does not cover fall back to RLlib's ``update`` (see
:meth:`LeanPPOTorchLearner.stock_update_reason`): several learners (DDP), several modules,
stateful (RNN) modules, data iterators, ``num_total_minibatches``, torch.compile, AMP grad
scalers, torch LR schedulers, several optimizers per module.
"""

from __future__ import annotations

import logging

import numpy as np
import torch
from ray.rllib.algorithms.ppo.ppo import (
    LEARNER_RESULTS_KL_KEY,
    LEARNER_RESULTS_VF_EXPLAINED_VAR_KEY,
    LEARNER_RESULTS_VF_LOSS_UNCLIPPED_KEY,
)
from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner
from ray.rllib.core import ALL_MODULES
from ray.rllib.core.columns import Columns
from ray.rllib.core.learner.learner import ENTROPY_KEY, POLICY_LOSS_KEY, VF_LOSS_KEY
from ray.rllib.core.learner.training_data import TrainingData
from ray.rllib.evaluation.postprocessing import Postprocessing
from ray.rllib.policy.sample_batch import SampleBatch
from ray.rllib.utils.metrics import (
    DIFF_NUM_GRAD_UPDATES_VS_SAMPLER_POLICY,
    MODULE_TRAIN_BATCH_SIZE_MEAN,
    NUM_ENV_STEPS_TRAINED,
    NUM_ENV_STEPS_TRAINED_LIFETIME,
    NUM_MODULE_STEPS_TRAINED,
    NUM_MODULE_STEPS_TRAINED_LIFETIME,
    WEIGHTS_SEQ_NO,
)
from ray.rllib.utils.torch_utils import explained_variance

from ddrl.algorithms.ppo.minibatches import minibatch_index_stream

logger = logging.getLogger(__name__)


def adam_implementation(device: torch.device) -> dict[str, bool]:
    """``fused=True`` where torch has a fused Adam for the device, else ``foreach=True``."""
    if device.type in ("cpu", "cuda"):
        return {"fused": True}
    return {"foreach": True}


class LeanPPOTorchLearner(PPOTorchLearner):
    """RLlib's PPOTorchLearner with a lean single-learner update loop (module docstring)."""

    def configure_optimizers_for_module(self, module_id, config=None) -> None:
        module = self._module[module_id]
        params = self.get_parameters(module)
        optimizer = torch.optim.Adam(params, **adam_implementation(self._device))
        self.register_optimizer(
            module_id=module_id, optimizer=optimizer, params=params, lr_or_lr_schedule=config.lr
        )

    def _set_optimizer_state(self, state) -> None:
        # A checkpoint's param_groups carry their own fused/foreach flags (e.g. from the stock
        # learner); keep this learner's implementation.
        super()._set_optimizer_state(state)
        impl = adam_implementation(self._device)
        for optimizer in self._named_optimizers.values():
            for group in optimizer.param_groups:
                group.update({"fused": None, "foreach": None, **impl})

    # ------------------------------------------------------------------ dispatch

    def stock_update_reason(
        self, *, data_iterators=None, training_data=None, num_total_minibatches: int = 0
    ) -> str | None:
        """Why this update must take RLlib's generic path, or None for the lean loop."""
        cfg = self.config
        if cfg.num_learners > 1:
            return "num_learners > 1 (DDP gradient sync)"
        if data_iterators or (training_data is not None and training_data.data_iterators):
            return "data iterators"
        if num_total_minibatches:
            return "num_total_minibatches"
        if len(self.module) != 1:
            return "more than one module"
        module_id = next(iter(self.module.keys()))
        if self.module[module_id].is_stateful():
            return "stateful (RNN) module"
        if len(self._module_optimizers[module_id]) != 1:
            return "more than one optimizer"
        if cfg.torch_compile_learner or cfg._torch_grad_scaler_class or cfg._torch_lr_scheduler_classes:
            return "torch.compile, grad scaler or torch LR scheduler configured"
        return None

    def update(
        self,
        batch=None,
        batches=None,
        batch_refs=None,
        episodes=None,
        episodes_refs=None,
        data_iterators=None,
        training_data=None,
        *,
        timesteps=None,
        num_total_minibatches: int = 0,
        num_epochs: int = 1,
        minibatch_size: int | None = None,
        shuffle_batch_per_epoch: bool = False,
        _no_metrics_reduce: bool = False,
        **kwargs,
    ):
        reason = self.stock_update_reason(
            data_iterators=data_iterators, training_data=training_data,
            num_total_minibatches=num_total_minibatches,
        )
        if reason is not None:
            return super().update(
                batch=batch, batches=batches, batch_refs=batch_refs, episodes=episodes,
                episodes_refs=episodes_refs, data_iterators=data_iterators,
                training_data=training_data, timesteps=timesteps,
                num_total_minibatches=num_total_minibatches, num_epochs=num_epochs,
                minibatch_size=minibatch_size, shuffle_batch_per_epoch=shuffle_batch_per_epoch,
                _no_metrics_reduce=_no_metrics_reduce, **kwargs,
            )

        self._check_is_built()
        self.before_gradient_based_update(timesteps=timesteps or {})
        if training_data is None:
            training_data = TrainingData(
                batch=batch, batches=batches, batch_refs=batch_refs, episodes=episodes,
                episodes_refs=episodes_refs,
            )
        training_data.validate()
        training_data.solve_refs()
        self._weights_seq_no += 1

        ma_batch = self._make_batch_if_necessary(training_data=training_data)
        self._lean_update_modules(ma_batch, num_epochs=num_epochs, minibatch_size=minibatch_size,
                                  shuffle=shuffle_batch_per_epoch)
        self.after_gradient_based_update(timesteps=timesteps or {})
        if not _no_metrics_reduce:
            return self.metrics.reduce()
        return None

    # ------------------------------------------------------------------ the lean loop

    def _batch_tensors(self, module_batch: SampleBatch) -> dict[str, torch.Tensor]:
        """The batch's top-level array columns as tensors on the learner's device."""
        tensors = {}
        for key, value in module_batch.items():
            if isinstance(value, np.ndarray) and value.dtype != object:
                value = torch.from_numpy(value)
            if isinstance(value, torch.Tensor):
                tensors[key] = value.to(self._device, non_blocking=True)
        return tensors

    def _flat_gradients(self, params: list[torch.Tensor]) -> torch.Tensor:
        """One buffer holding every parameter's ``.grad`` (as views), so that zeroing and
        non-finite handling are one op each."""
        flat = getattr(self, "_lean_flat_grad", None)
        numel = sum(p.numel() for p in params)
        if flat is None or flat.numel() != numel or flat.device != params[0].device:
            flat = torch.zeros(numel, device=params[0].device, dtype=params[0].dtype)
            self._lean_flat_grad = flat
        offset = 0
        for p in params:
            p.grad = flat[offset: offset + p.numel()].view_as(p)
            offset += p.numel()
        return flat

    def _clip_gradients(self, flat: torch.Tensor, views: list[torch.Tensor], config):
        """RLlib's ``clip_gradients`` semantics on the flat buffer; returns the global norm
        where RLlib returns one (``global_norm``), else None."""
        clip, clip_by = config.grad_clip, config.grad_clip_by
        if clip_by == "value":
            flat.clamp_(-clip, clip)
            return None
        if clip_by == "norm":
            for g in views:
                norm = g.norm(2).nan_to_num(neginf=-10e8, posinf=10e8)
                g.mul_(torch.where(norm > clip, clip / norm, torch.ones_like(norm)))
            return None
        if clip_by == "global_norm":
            total = torch.linalg.vector_norm(flat).nan_to_num(neginf=-10e8, posinf=10e8)
            coeff = torch.clamp(clip / torch.clamp(total + 1e-6, min=clip), max=1.0)
            flat.mul_(coeff)
            return total
        raise ValueError(f"`grad_clip_by` ({clip_by}) must be one of [value|norm|global_norm]!")

    def _lean_update_modules(self, ma_batch, *, num_epochs: int, minibatch_size: int | None,
                             shuffle: bool) -> None:
        """The lean update of every module of ``ma_batch`` that is to be updated."""
        for module_id in list(ma_batch.policy_batches):
            if not self.should_module_be_updated(module_id, ma_batch):
                del ma_batch.policy_batches[module_id]
        for module_id, module_batch in ma_batch.policy_batches.items():
            if module_id not in self.module.keys():
                raise ValueError(
                    f"Batch contains ModuleID {module_id!r}, which is not in this Learner "
                    f"(modules: {list(self.module.keys())})"
                )
            self._lean_update_module(
                module_id, module_batch, ma_batch.env_steps(),
                num_epochs=num_epochs, minibatch_size=minibatch_size, shuffle=shuffle,
            )

    def _minibatches(self, tensors: dict[str, torch.Tensor], batch_len: int, num_epochs: int,
                     minibatch_size: int | None, shuffle: bool):
        """Every minibatch of the epochs gathered once (minibatch i is rows
        ``[i*size, (i+1)*size)``), each row's weight in its minibatch's mean, the number of
        minibatches and their size."""
        stream = minibatch_index_stream(batch_len, num_epochs, minibatch_size, shuffle)
        num_minibatches, size = stream.shape
        index = torch.from_numpy(stream.reshape(-1)).to(self._device)
        gathered = {k: v.index_select(0, index) for k, v in tensors.items()}
        mask = gathered.get(Columns.LOSS_MASK)
        if mask is not None:
            # Masked mean = dot(x, weights): weights = mask / valid rows of x's minibatch.
            mask_f = mask.to(torch.float32).view(num_minibatches, size)
            weights = (mask_f / mask_f.sum(dim=1, keepdim=True)).view(-1)
        else:
            weights = torch.full((num_minibatches * size,), 1.0 / size, device=self._device)
        return gathered, weights, num_minibatches, size

    def _lean_update_module(
        self, module_id, module_batch: SampleBatch, env_steps: int, *,
        num_epochs: int, minibatch_size: int | None, shuffle: bool,
    ) -> None:
        config = self.config.get_config_for_module(module_id)
        module = self.module[module_id].unwrapped()
        (optimizer_name, optimizer), = self.get_optimizers_for_module(module_id)
        params = [p for group in optimizer.param_groups for p in group["params"]]
        flat_grad = self._flat_gradients(params)
        views = [p.grad for p in params]
        tensors = self._batch_tensors(module_batch)
        gathered, weights, num_minibatches, size = self._minibatches(
            tensors, len(module_batch), num_epochs, minibatch_size, shuffle)

        entropy_coeff = self.entropy_coeff_schedulers_per_module[module_id].get_current_value()
        kl_coeff = self.curr_kl_coeffs_per_module[module_id]
        train_dist_cls = module.get_train_action_dist_cls()
        old_dist_cls = module.get_exploration_action_dist_cls()
        skip_nan_check = self.config.torch_skip_nan_gradients
        nonfinite_losses = torch.zeros((), dtype=torch.int64, device=self._device)

        module.train()
        for i in range(num_minibatches):
            rows = slice(i * size, (i + 1) * size)
            minibatch = {k: v[rows] for k, v in gathered.items()}
            last = i == num_minibatches - 1
            total_loss, stats = self._ppo_loss(
                module, minibatch, weights[rows], config, train_dist_cls, old_dist_cls,
                entropy_coeff, kl_coeff, with_stats=last,
            )
            flat_grad.zero_()
            total_loss.backward()
            global_norm = self._clip_gradients(flat_grad, views, config) if config.grad_clip else None
            if not skip_nan_check:
                # RLlib's default: non-finite gradients become finite (nan -> 0).
                torch.nan_to_num_(flat_grad)
                nonfinite_losses += ~torch.isfinite(total_loss.detach())
            optimizer.step()

        if nonfinite_losses.item():
            logger.warning(
                "PPO update of module %s: %d of %d minibatch losses were nan/inf; their "
                "non-finite gradients were set to finite values (RLlib's default).",
                module_id, nonfinite_losses.item(), num_minibatches,
            )
        self._log_lean_metrics(
            module_id, optimizer_name, stats, total_loss.detach(), global_norm, tensors,
            num_minibatches=num_minibatches, size=size, env_steps=env_steps, config=config,
        )

    def _ppo_loss(
        self, module, batch, weights, config, train_dist_cls, old_dist_cls,
        entropy_coeff, kl_coeff, *, with_stats: bool,
    ):
        """RLlib's ``PPOTorchLearner.compute_loss_for_module`` for one minibatch; the
        masked mean is ``dot(x, weights)``. Stats (RLlib's logged terms) only if asked."""
        fwd_out = module._forward_train(batch)
        curr_dist = train_dist_cls.from_logits(fwd_out[Columns.ACTION_DIST_INPUTS])
        ratio = torch.exp(curr_dist.logp(batch[Columns.ACTIONS]) - batch[Columns.ACTION_LOGP])
        advantages = batch[Postprocessing.ADVANTAGES]
        surrogate = torch.min(
            advantages * ratio,
            advantages * torch.clamp(ratio, 1 - config.clip_param, 1 + config.clip_param),
        )
        entropy = curr_dist.entropy()
        per_row = -surrogate - entropy_coeff * entropy
        if config.use_critic:
            values = module.compute_values(batch, embeddings=fwd_out.get(Columns.EMBEDDINGS))
            vf_loss = torch.pow(values - batch[Postprocessing.VALUE_TARGETS], 2.0)
            vf_loss_clipped = torch.clamp(vf_loss, 0, config.vf_clip_param)
            per_row = per_row + config.vf_loss_coeff * vf_loss_clipped
        total_loss = torch.dot(per_row, weights)
        mean_kl = None
        if config.use_kl_loss:
            old_dist = old_dist_cls.from_logits(batch[Columns.ACTION_DIST_INPUTS])
            mean_kl = torch.dot(old_dist.kl(curr_dist), weights)
            total_loss = total_loss + kl_coeff * mean_kl
        if not with_stats:
            return total_loss, None
        with torch.no_grad():
            zero = torch.zeros((), device=total_loss.device)
            if config.use_critic:
                vf_mean, vf_unclipped = torch.dot(vf_loss_clipped, weights), torch.dot(vf_loss, weights)
                explained = explained_variance(batch[Postprocessing.VALUE_TARGETS], values)
            else:
                vf_mean = vf_unclipped = zero
                explained = explained_variance(batch[Postprocessing.VALUE_TARGETS], zero)
            stats = {
                POLICY_LOSS_KEY: -torch.dot(surrogate, weights),
                VF_LOSS_KEY: vf_mean,
                LEARNER_RESULTS_VF_LOSS_UNCLIPPED_KEY: vf_unclipped,
                LEARNER_RESULTS_VF_EXPLAINED_VAR_KEY: explained,
                ENTROPY_KEY: torch.dot(entropy, weights),
                LEARNER_RESULTS_KL_KEY: mean_kl if mean_kl is not None else zero,
            }
        return total_loss, {k: v.detach() for k, v in stats.items()}

    def _log_lean_metrics(
        self, module_id, optimizer_name, stats, total_loss, global_norm, tensors, *,
        num_minibatches: int, size: int, env_steps: int, config,
    ) -> None:
        """Once per update, what RLlib logs once per minibatch (same keys and reductions;
        window=1 terms are the last minibatch's, as in RLlib)."""
        log = self.metrics.log_value
        self.metrics.log_dict(stats, key=module_id, window=1)
        log((module_id, self.TOTAL_LOSS_KEY), total_loss, window=1)
        if global_norm is not None:
            log((module_id, f"gradients_{optimizer_name}_global_norm"), global_norm, window=1)
        if WEIGHTS_SEQ_NO in tensors:
            seq_no = tensors[WEIGHTS_SEQ_NO].float()
            mask = tensors.get(Columns.LOSS_MASK)
            lag = self._weights_seq_no - (seq_no[mask] if mask is not None else seq_no).mean()
            log((module_id, DIFF_NUM_GRAD_UPDATES_VS_SAMPLER_POLICY), lag, window=1)
        module_steps = num_minibatches * size
        log((module_id, WEIGHTS_SEQ_NO), self._weights_seq_no, window=1)
        log((module_id, MODULE_TRAIN_BATCH_SIZE_MEAN), size, reduce="mean")
        log((module_id, NUM_MODULE_STEPS_TRAINED), module_steps, reduce="sum")
        log((module_id, NUM_MODULE_STEPS_TRAINED_LIFETIME), module_steps,
            reduce="lifetime_sum", with_throughput=True)
        log((ALL_MODULES, NUM_MODULE_STEPS_TRAINED), module_steps, reduce="sum",
            with_throughput=True)
        log((ALL_MODULES, NUM_MODULE_STEPS_TRAINED_LIFETIME), module_steps,
            reduce="lifetime_sum", with_throughput=True)
        # RLlib counts the whole batch's env steps for every minibatch.
        log((ALL_MODULES, NUM_ENV_STEPS_TRAINED), env_steps * num_minibatches, reduce="sum",
            with_throughput=True)
        log((ALL_MODULES, NUM_ENV_STEPS_TRAINED_LIFETIME), env_steps * num_minibatches,
            reduce="lifetime_sum", with_throughput=True)
        if env_steps > 0:
            self._metrics_all_modules_num_env_steps_trained.inc(value=env_steps * num_minibatches)
            self._metrics_all_modules_num_module_steps_trained.inc(value=module_steps)
