"""``<image> serve``: the SageMaker inference contract on port 8080 (Flask under gunicorn).

``GET /ping`` answers 200 once the policy is loaded. ``POST /invocations`` takes JSON:

    {"observation": [o1, ..., on]}          -> {"action": [a1, ..., am]}
    {"observations": [[...], [...], ...]}   -> {"actions": [[...], [...], ...]}

(a bare list is read the same way: one observation or a batch). The policy is the exported
TorchScript ``policy.pt`` (contract in ddrl.agents.export): a float32 observation batch in, an
action batch out. Each observation is sent flat; its size is checked against the
``observation_shape`` recorded in the file.
Bad requests (not JSON, wrong content type, wrong observation size, NaN or infinity, an
empty or ragged batch) get a 4xx with a message saying what was expected; the server stays up.
"""

from __future__ import annotations

import json
import logging
import math
import os
import threading
from pathlib import Path
from typing import Any

from ddrl.errors import DdrlError

log = logging.getLogger(__name__)
MAX_BATCH = 4096
POLICY_FILE = "policy.pt"


class BadRequest(Exception):
    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class Policy:
    """A TorchScript policy and what is known about its input."""

    def __init__(self, model_dir: str | Path) -> None:
        import torch

        self.model_dir = Path(model_dir)
        path = self.model_dir / POLICY_FILE
        if not path.exists():
            raise DdrlError(f"no {POLICY_FILE} in {self.model_dir}; export the run's policy first")
        from ddrl.agents.export import load_exported

        self.module, self.meta = load_exported(path)
        self.module.eval()
        shape = self.meta.get("observation_shape")
        self.obs_shape = tuple(int(n) for n in shape) if shape else None
        self.obs_dim = int(math.prod(self.obs_shape)) if self.obs_shape else None
        self._lock = threading.Lock()

    def act(self, batch: list[list[float]]) -> list[list[float]]:
        import torch

        obs = torch.tensor(batch, dtype=torch.float32)
        if self.obs_shape is not None:
            obs = obs.reshape(len(batch), *self.obs_shape)
        with torch.no_grad(), self._lock:
            try:
                actions = self.module(obs)
            except RuntimeError as err:
                raise BadRequest(f"the policy rejected observations of shape {list(obs.shape)}: "
                                 f"{str(err).splitlines()[0]}") from None
        return actions.reshape(len(batch), -1).tolist()


def parse_observations(payload: Any, obs_dim: int | None) -> tuple[list[list[float]], bool]:
    """``(batch, single)`` from a request body; raises BadRequest on anything else."""
    single = False
    if isinstance(payload, dict):
        keys = {"observation", "observations"} & set(payload)
        if len(keys) != 1:
            raise BadRequest('expected a JSON object with "observation" (one) or "observations" '
                             f"(a batch); got keys {sorted(payload)}")
        key = keys.pop()
        payload, single = payload[key], key == "observation"
        if single:
            payload = [payload]
    if not isinstance(payload, list) or not payload:
        raise BadRequest("observations must be a non-empty list of numbers or of lists of numbers")
    if not isinstance(payload[0], list):
        payload, single = [payload], True
    if len(payload) > MAX_BATCH:
        raise BadRequest(f"batch of {len(payload)} observations; at most {MAX_BATCH} per request", 413)
    width = len(payload[0])
    for i, row in enumerate(payload):
        if not isinstance(row, list) or len(row) != width:
            raise BadRequest(f"observation {i} has a different size from observation 0 ({width})")
        for j, x in enumerate(row):
            if isinstance(x, bool) or not isinstance(x, (int, float)):
                raise BadRequest(f"observation {i}, element {j} is {x!r}; expected a number")
            if not math.isfinite(x):
                raise BadRequest(f"observation {i}, element {j} is {x}; NaN and infinity are not allowed")
    if obs_dim is not None and width != obs_dim:
        raise BadRequest(f"observations have {width} values; this policy expects {obs_dim}")
    return payload, single


def create_app(model_dir: str | Path):
    """The Flask app. The policy loads when the app is built (before the first /ping)."""
    from flask import Flask, Response, request

    app = Flask("ddrl.serve")
    state: dict[str, Any] = {"policy": None, "error": None}
    try:
        state["policy"] = Policy(model_dir)
        log.info("loaded %s (observation size %s)", Path(model_dir) / POLICY_FILE,
                 state["policy"].obs_dim or "unknown")
    except Exception as err:  # noqa: BLE001 - /ping reports it
        state["error"] = f"{type(err).__name__}: {err}"
        log.error("policy not loaded: %s", state["error"])

    def reply(body: dict[str, Any], status: int = 200) -> Response:
        return Response(json.dumps(body), status=status, mimetype="application/json")

    @app.get("/ping")
    def ping() -> Response:
        if state["policy"] is None:
            return reply({"status": "unavailable", "error": state["error"]}, 503)
        return reply({"status": "ok"})

    @app.post("/invocations")
    def invocations() -> Response:
        policy = state["policy"]
        if policy is None:
            return reply({"error": f"model not loaded: {state['error']}"}, 503)
        if request.mimetype != "application/json":
            return reply({"error": f"content type {request.mimetype or 'none'!r} is not supported; "
                                   "send application/json"}, 415)
        try:
            payload = json.loads(request.get_data(as_text=True))
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            return reply({"error": f"request body is not valid JSON: {err}"}, 400)
        try:
            batch, single = parse_observations(payload, policy.obs_dim)
            actions = policy.act(batch)
        except BadRequest as err:
            return reply({"error": str(err)}, err.status)
        return reply({"action": actions[0]} if single else {"actions": actions})

    return app


def serve(model_dir: str | Path, host: str = "0.0.0.0", port: int = 8080,
          workers: int | None = None, timeout: int | None = None) -> None:
    """Run gunicorn in this process (SageMaker's env knobs: SAGEMAKER_MODEL_SERVER_*)."""
    from gunicorn.app.base import BaseApplication

    workers = workers or int(os.environ.get("SAGEMAKER_MODEL_SERVER_WORKERS", "1"))
    timeout = timeout or int(os.environ.get("SAGEMAKER_MODEL_SERVER_TIMEOUT", "60"))

    class _App(BaseApplication):
        def load_config(self) -> None:
            for key, value in {"bind": f"{host}:{port}", "workers": workers, "threads": 4,
                               "worker_class": "gthread", "timeout": timeout,
                               "accesslog": "-", "errorlog": "-"}.items():
                self.cfg.set(key, value)

        def load(self):
            return create_app(model_dir)

    _App().run()
