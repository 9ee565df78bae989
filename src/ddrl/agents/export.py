"""Export a run's deterministic policy to TorchScript: ``policy.pt``.

Contract of ``policy.pt`` (what a server may rely on)
------------------------------------------------------
- Load with ``torch.jit.load("policy.pt", map_location="cpu")``; needs torch only, no Ray,
  RLlib, gymnasium or ddrl.
- ``module(obs) -> actions``:

  - ``obs``: a ``torch.float32`` tensor ``[B, *observation_shape]`` of **raw** env
    observations (B >= 1). Observation preprocessing (the run's ``MeanStdFilter`` mean/std
    and clip, frozen at the checkpoint) is inside the module; do not normalise yourself.
  - ``actions``: ``torch.float32`` ``[B, *action_shape]``, the deterministic action
    (PPO: Gaussian mean; SAC: squashed mean; TD3: actor output), rescaled from [-1, 1] to
    the env's Box bounds and clipped to ``[action_low, action_high]``. Send it to the env
    as it is.
  - Rows are independent: the module has no state, batch size is free.

- Metadata travels inside the file as ``ddrl.json`` (read it with
  ``torch.jit.load(path, _extra_files={"ddrl.json": ""})``): ``format`` (``ddrl-policy``),
  ``version`` (1), ``run_id``, ``algorithm``, ``env``, ``checkpoint_iteration``,
  ``checkpoint_env_steps``, ``observation_shape``, ``action_shape``, ``action_low``,
  ``action_high``, ``observation_filter``, ``torch_version``, ``created``.

How it is built: :func:`ddrl.agents.policy.load_run_policy` folds the RLModule, the filter state
and the action rescaling into one torch module, which is traced with ``torch.jit.trace``.
Before the file is written the traced module is checked against the eager one on random
observations at two batch sizes; a mismatch is an error and no file is written.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


from ddrl import atomic
from ddrl.training import provenance
# The exported files' shared contract (TorchScript and ONNX) lives with the restored policy.
from ddrl.agents.policy import (  # noqa: F401
    EXTRA_FILE,
    FORMAT,
    VERSION,
    ExportError,
    sample_observations,
)

CHECK_TOL = 1e-5


def trace_policy(policy: Any) -> Any:
    """``torch.jit.trace`` of ``policy.net``, checked against the eager module."""
    import torch

    shape = tuple(policy.module.observation_space.shape)
    example = torch.from_numpy(sample_observations(shape, 8, seed=1))
    net = policy.net
    with torch.no_grad():
        traced = torch.jit.trace(net, example, check_trace=False)
        for n in (1, 33):
            obs = torch.from_numpy(sample_observations(shape, n, seed=n))
            want, got = net(obs), traced(obs)
            if got.shape != want.shape or not torch.allclose(got, want, atol=CHECK_TOL, rtol=0):
                raise ExportError(
                    f"run {policy.run_id}: the traced policy differs from the restored one "
                    f"(max |diff| {float((got - want).abs().max()):.3g} at batch size {n})"
                )
    return traced


def export_policy(policy: Any, out: str | Path) -> dict[str, Any]:
    """Write ``policy`` (a :class:`ddrl.agents.policy.RestoredPolicy`) to ``out`` atomically."""
    import torch

    traced = trace_policy(policy)
    meta = {
        "format": FORMAT,
        "version": VERSION,
        **policy.metadata(),
        "torch_version": torch.__version__,
        "created": provenance.now_iso(),
    }
    with atomic.atomic_path(out) as tmp:
        torch.jit.save(traced, str(tmp), _extra_files={EXTRA_FILE: json.dumps(meta)})
    return meta


def export_run(spec: Any, run_dir: str | Path, out: str | Path, checkpoint: str | None = None,
               onnx_out: str | Path | None = None) -> dict[str, Any]:
    """Export a run's checkpoint (``checkpoint``: final (default), best or a folder) to ``out``
    (``policy.pt``) and, with ``onnx_out``, to ONNX as well."""
    from ddrl.agents.best import select_checkpoint
    from ddrl.agents.policy import load_run_policy

    policy = load_run_policy(spec, run_dir, select_checkpoint(run_dir, spec.run_id, checkpoint))
    meta = export_policy(policy, out)
    if onnx_out:
        from ddrl.agents.onnx_export import export_onnx

        export_onnx(policy, onnx_out)
    return meta


def load_exported(path: str | Path) -> tuple[Any, dict[str, Any]]:
    """``(module, metadata)`` of a ``policy.pt``; uses torch only."""
    import torch

    extra = {EXTRA_FILE: ""}
    module = torch.jit.load(str(path), map_location="cpu", _extra_files=extra)
    return module, json.loads(extra[EXTRA_FILE] or "{}")
