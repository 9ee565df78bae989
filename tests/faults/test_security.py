"""Secrets stay out of run records; Ray for a local run has no dashboard and needs a token."""

from __future__ import annotations

import psutil
import pytest

from ddrl.training.provenance import REDACTED, redact_env


def test_secret_looking_variables_are_redacted():
    env = {
        "AWS_SECRET_ACCESS_KEY": "abc", "AWS_SESSION_TOKEN": "abc", "AWS_ACCESS_KEY_ID": "abc",
        "DDRL_API_TOKEN": "abc", "RAY_REDIS_PASSWORD": "abc", "SLURM_PRIVATE_THING": "abc",
        "RAY_ADDRESS": "ray://alice:hunter2@10.0.0.5:10001",
        "AWS_REGION": "eu-west-1", "SLURM_JOB_ID": "42", "OMP_NUM_THREADS": "1",
        "GITHUB_TOKEN": "abc", "HOME": "/root",  # not recorded at all
    }
    out = redact_env(env)
    for key in ("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ACCESS_KEY_ID",
                "DDRL_API_TOKEN", "RAY_REDIS_PASSWORD", "SLURM_PRIVATE_THING"):
        assert out[key] == REDACTED, key
    assert out["RAY_ADDRESS"] == f"ray://alice:{REDACTED}@10.0.0.5:10001"
    assert out["AWS_REGION"] == "eu-west-1" and out["SLURM_JOB_ID"] == "42"
    assert "GITHUB_TOKEN" not in out and "HOME" not in out
    assert "hunter2" not in str(out) and "abc" not in out.values()


def _ray_listeners() -> dict[str, list]:
    me = psutil.Process()
    found: dict[str, list] = {}
    for proc in [me, *me.children(recursive=True)]:
        try:
            for conn in proc.net_connections(kind="inet"):
                if conn.status == psutil.CONN_LISTEN:
                    found.setdefault(proc.name(), []).append(conn.laddr)
        except psutil.Error:
            continue
    return found


@pytest.fixture(scope="module")
def local_ray():
    import ray

    from ddrl.training.runtime import ray_session

    with ray_session(num_cpus=1):
        yield ray, _ray_listeners()


def test_local_ray_has_no_dashboard_and_uses_token_auth(local_ray):
    ray, listeners = local_ray
    from ray._private.authentication.authentication_utils import is_token_auth_enabled

    node = ray._private.worker._global_node
    assert not getattr(node, "webui_url", None), "dashboard started"
    assert not any("dashboard" in name for name in listeners), listeners
    assert all(port.port != 8265 for ports in listeners.values() for port in ports)
    assert is_token_auth_enabled(), "a private Ray must require its token"


@pytest.mark.xfail(strict=True, reason=(
    "Ray 2.60 maps _node_ip_address=127.0.0.1 to the primary interface and its gRPC servers "
    "(GCS, raylet, workers) listen on all interfaces; only token authentication guards them"))
def test_local_ray_listens_on_loopback_only(local_ray):
    _, listeners = local_ray
    addresses = {addr.ip for ports in listeners.values() for addr in ports}
    assert addresses <= {"127.0.0.1", "::1"}, listeners
