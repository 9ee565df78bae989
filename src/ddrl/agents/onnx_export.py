"""Export a run's deterministic policy to ONNX: ``policy.onnx``.

The same module as ``policy.pt`` (:attr:`ddrl.agents.policy.RestoredPolicy.net`: observation filter,
RLModule, action rescaling), exported with ``torch.onnx.export(dynamo=True)`` (the
torch.export-based exporter; needs ``onnxscript``). Contract:

- input ``obs``: float32 ``[batch, *observation_shape]``, raw env observations;
- output ``actions``: float32 ``[batch, *action_shape]``, clipped to the env's bounds;
- the batch dimension is dynamic; the graph has no state;
- metadata: the ``ddrl.json`` metadata property holds the same JSON as ``policy.pt``'s.

Before the file is renamed into place it is loaded with onnxruntime and compared with the
eager module on :data:`CHECK_OBSERVATIONS` observations (and at batch size 1); a mismatch
above :data:`CHECK_TOL` is an :class:`~ddrl.agents.export.ExportError` and nothing is written.
Install with ``pip install 'ddrl[onnx]'``.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

import numpy as np

from ddrl import atomic
from ddrl.training import provenance
from ddrl.errors import DdrlError
from ddrl.agents.policy import EXTRA_FILE, FORMAT, VERSION, ExportError, sample_observations

log = logging.getLogger(__name__)
logging.getLogger("onnx_ir").setLevel(logging.WARNING)  # one INFO line per graph pass
CHECK_OBSERVATIONS = 100
# float32 kernels differ between torch and onnxruntime (fused ops, summation order).
CHECK_TOL = 1e-5
OPSET = 18


def _modules() -> tuple[Any, Any]:
    try:
        import onnx
        import onnxruntime
    except ImportError as err:
        raise DdrlError(f"ONNX export needs the onnx extra ({err.name} is missing): "
                        "pip install 'ddrl[onnx]'") from None
    return onnx, onnxruntime


def run_onnx(path: str | Path, obs: np.ndarray) -> np.ndarray:
    """Actions of ``policy.onnx`` for a batch of observations, with onnxruntime on the CPU."""
    _, ort = _modules()
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    return session.run(["actions"], {"obs": np.asarray(obs, np.float32)})[0]


def read_metadata(path: str | Path) -> dict[str, Any]:
    onnx, _ = _modules()
    model = onnx.load(str(path), load_external_data=False)
    props = {p.key: p.value for p in model.metadata_props}
    return json.loads(props.get(EXTRA_FILE, "{}"))


def export_onnx(policy: Any, out: str | Path, check_n: int = CHECK_OBSERVATIONS
                ) -> dict[str, Any]:
    """Write ``policy`` (a :class:`ddrl.agents.policy.RestoredPolicy`) to ``out`` as ONNX, checked
    with onnxruntime against the eager module first."""
    import torch

    onnx, _ = _modules()
    shape = tuple(policy.module.observation_space.shape)
    net = policy.net
    example = torch.from_numpy(sample_observations(shape, 4, seed=1))
    batch = torch.export.Dim("batch", min=1)
    with torch.no_grad():
        program = torch.onnx.export(
            net, (example,), dynamo=True, input_names=["obs"], output_names=["actions"],
            dynamic_shapes=({0: batch},), opset_version=OPSET, verbose=False)
    model = program.model_proto
    meta = {"format": FORMAT, "version": VERSION, **policy.metadata(),
            "torch_version": torch.__version__, "onnx_opset": OPSET,
            "created": provenance.now_iso()}
    entry = model.metadata_props.add()
    entry.key, entry.value = EXTRA_FILE, json.dumps(meta)
    with atomic.atomic_path(out) as tmp:
        onnx.save_model(model, str(tmp))
        onnx.checker.check_model(str(tmp))
        for n in (check_n, 1):
            obs = sample_observations(shape, n, seed=1000 + n)
            with torch.no_grad():
                want = net(torch.from_numpy(obs)).numpy()
            got = run_onnx(tmp, obs)
            diff = float(np.abs(got - want).max()) if got.shape == want.shape else float("inf")
            if diff > CHECK_TOL:
                raise ExportError(
                    f"run {policy.run_id}: the ONNX policy differs from the restored one "
                    f"(max |diff| {diff:.3g} > {CHECK_TOL} on {n} observations; shapes "
                    f"{got.shape} vs {want.shape}); {os.fspath(out)} not written")
    log.info("run %s: wrote %s (opset %d)", policy.run_id, out, OPSET)
    return meta
