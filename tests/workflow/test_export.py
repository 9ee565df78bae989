"""policy.pt from the tiny study: torch-only loading, its contract, and equality with RLlib."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from ddrl.study.study import Study

from conftest import TINY_CONFIG

ENV = "InvertedPendulumBulletEnv-v0"


def _runs(tiny_study):
    study = Study.from_file(TINY_CONFIG)
    root = tiny_study / "results" / "tiny" / "runs"
    return [(spec, root / run_id) for run_id, spec in study.runs.items()]


def _one(tiny_study, algorithm):
    return next((s, d) for s, d in _runs(tiny_study) if s.algorithm == algorithm)


def _observations(n: int, dim: int, seed: int = 123) -> np.ndarray:
    rng = np.random.default_rng(seed)
    scales = rng.choice([0.05, 0.5, 3.0], size=(n, 1))
    return (rng.standard_normal((n, dim)) * scales).astype(np.float32)


def _rllib_actions(checkpoint, obs: np.ndarray) -> np.ndarray:
    """Deterministic env actions computed with RLlib's own pieces from the checkpoint."""
    import torch
    from ray.rllib.connectors.connector_v2 import ConnectorV2
    from ray.rllib.connectors.env_to_module.mean_std_filter import MeanStdFilter
    from ray.rllib.core.distribution.torch.torch_distribution import TorchSquashedGaussian
    from ray.rllib.core.rl_module.rl_module import RLModule
    from ray.rllib.utils.spaces.space_utils import unsquash_action

    from ddrl.envs import make_env

    module = RLModule.from_checkpoint(
        str(checkpoint / "learner_group/learner/rl_module/default_policy"))
    module.eval()
    pipeline = ConnectorV2.from_checkpoint(str(checkpoint / "env_runner/env_to_module_connector"))
    filters = [c for c in pipeline.connectors if isinstance(c, MeanStdFilter)]
    x = obs
    for f in filters:  # frozen: update=False, as at inference
        x = np.stack([f._filters[None](row, update=False) for row in x])
    with torch.no_grad():
        out = module.forward_inference({"obs": torch.from_numpy(np.asarray(x, np.float32))})
        if "actions" in out:  # a deterministic actor (TD3)
            a = out["actions"]
        else:
            dist = module.get_inference_action_dist_cls().from_logits(out["action_dist_inputs"])
            if isinstance(dist, TorchSquashedGaussian):
                # The mode of the tanh-Gaussian (RLlib's to_deterministic() skips the tanh).
                a = dist._squash(dist.loc)
            else:
                a = dist.to_deterministic().sample()
    env = make_env(ENV)
    space = env.action_space
    env.close()
    return np.stack([unsquash_action(row, space) for row in a.numpy()])


@pytest.mark.parametrize("algorithm", ["PPO", "SAC", "TD3"])
def test_exported_policy_equals_rllib_on_100_observations(tiny_study, algorithm):
    from ddrl.agents.export import load_exported

    if not any(s.algorithm == algorithm for s, _ in _runs(tiny_study)):
        pytest.skip(f"the tiny study has no {algorithm} run")
    spec, run_dir = _one(tiny_study, algorithm)
    module, meta = load_exported(run_dir / "policy.pt")
    obs = _observations(100, meta["observation_shape"][0])
    import torch

    with torch.no_grad():
        got = module(torch.from_numpy(obs)).numpy()
    want = _rllib_actions(run_dir / "checkpoint", obs)
    assert got.shape == want.shape == (100, 1)
    assert np.abs(got - want).max() <= 1e-5
    # The observations span enough of the input that the policy is not constant.
    assert got.std() > 1e-4
    assert np.all(got >= -1.0) and np.all(got <= 1.0)


def test_exported_policy_contract_without_ray(tiny_study):
    """Every run's policy.pt loads and acts with torch alone (Ray/RLlib imports blocked)."""
    runs = _runs(tiny_study)
    paths = [str(d / "policy.pt") for _, d in runs]
    code = textwrap.dedent(f"""
        import json, sys
        for name in ("ray", "ray.rllib", "gymnasium", "ddrl", "pybullet"):
            sys.modules[name] = None  # any import of these now fails
        import torch
        out = []
        for path in {paths!r}:
            extra = {{"ddrl.json": ""}}
            m = torch.jit.load(path, map_location="cpu", _extra_files=extra)
            meta = json.loads(extra["ddrl.json"])
            g = torch.Generator().manual_seed(0)
            for b in (1, 7, 256):
                obs = torch.randn(b, *meta["observation_shape"], generator=g) * 10
                a = m(obs)
                assert a.dtype == torch.float32 and tuple(a.shape) == (b, *meta["action_shape"])
                low = torch.tensor(meta["action_low"]); high = torch.tensor(meta["action_high"])
                assert bool(((a >= low) & (a <= high)).all())
            same = m(obs[:3])
            # rows are independent (up to float rounding of batched matmuls)
            assert torch.allclose(same, m(obs)[:3], atol=1e-6, rtol=0)
            out.append(meta)
        print(json.dumps(out))
        """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    metas = json.loads(proc.stdout.strip().splitlines()[-1])
    for (spec, run_dir), meta in zip(runs, metas):
        run = json.loads((run_dir / "run.json").read_text())
        assert meta["format"] == "ddrl-policy" and meta["version"] == 1
        assert meta["run_id"] == spec.run_id and meta["env"] == spec.env
        assert meta["algorithm"] == spec.algorithm
        assert meta["checkpoint_iteration"] == run["result"]["iterations"]
        assert meta["checkpoint_env_steps"] == run["result"]["env_steps"]
        has_filter = spec.hyperparameters["observation_filter"] == "MeanStdFilter"
        assert (meta["observation_filter"] is not None) == has_filter
        if has_filter:
            assert meta["observation_filter"]["count"] >= spec.budget["env_steps"]


def test_export_includes_the_observation_filter(tiny_study):
    """Dropping the filter state would change the actions: the export really carries it."""
    import torch

    from ddrl.agents.export import load_exported
    from ddrl.agents.policy import load_run_policy

    spec, run_dir = _one(tiny_study, "PPO")
    assert spec.hyperparameters["observation_filter"] == "MeanStdFilter"
    policy = load_run_policy(spec, run_dir)
    module, _ = load_exported(run_dir / "policy.pt")
    obs = _observations(100, 5, seed=7)
    with torch.no_grad():
        exported = module(torch.from_numpy(obs)).numpy()
    np.testing.assert_allclose(policy.act(obs), exported, atol=1e-6, rtol=0)
    policy.obs_filter = None
    policy._net = None
    assert np.abs(policy.act(obs) - exported).max() > 1e-3


def test_export_bad_checkpoint_writes_nothing(tiny_study, tmp_path):
    import shutil

    from ddrl.errors import CheckpointError
    from ddrl.agents.export import export_run

    spec, run_dir = _one(tiny_study, "SAC")
    copy = tmp_path / spec.run_id
    shutil.copytree(run_dir / "checkpoint", copy / "checkpoint")
    state = copy / "checkpoint/learner_group/learner/rl_module/default_policy/module_state.pkl"
    state.write_bytes(b"\0" * state.stat().st_size)  # same size, garbage content
    out = copy / "policy.pt"
    with pytest.raises(CheckpointError, match=spec.run_id) as err:
        export_run(spec, copy, out)
    assert "RLModule" in str(err.value)
    assert not out.exists()
    assert [p.name for p in copy.iterdir()] == ["checkpoint"]
