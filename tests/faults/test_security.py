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


def test_local_ray_listens_on_loopback_only(local_ray):
    """GCS, raylet, workers and agents: no listener on another interface (ddrl.training.runtime
    .loopback_only; without it Ray 2.60 listens on all interfaces, "::" or 0.0.0.0)."""
    _, listeners = local_ray
    ports = [addr for ports in listeners.values() for addr in ports]
    assert len(ports) >= 3, listeners  # GCS, raylet and a worker at least
    addresses = {addr.ip for addr in ports}
    assert addresses <= {"127.0.0.1", "::1", "::ffff:127.0.0.1"}, listeners


def test_loopback_setting_does_not_outlive_the_start(local_ray):
    """Connecting to a real cluster later in the same process must still work."""
    import os

    from ray._private import ray_constants

    from ddrl.training.runtime import LOOPBACK_ENV

    assert ray_constants.ENABLE_RAY_CLUSTER is True
    assert LOOPBACK_ENV not in os.environ


def test_ray_token_is_required_to_talk_to_the_local_gcs():
    """Token authentication still guards what listens (only on loopback now): a gRPC call
    to the GCS without the token, or with a wrong one, is refused; with it, answered."""
    import os
    from pathlib import Path

    import grpc
    import ray
    from ray.core.generated import gcs_service_pb2, gcs_service_pb2_grpc

    from ddrl.training.runtime import ray_session

    def call(gcs: str, token: str | None):
        metadata = [("authorization", f"Bearer {token}")] if token is not None else []
        with grpc.insecure_channel(gcs) as channel:
            stub = gcs_service_pb2_grpc.NodeInfoGcsServiceStub(channel)
            try:
                reply = stub.GetAllNodeInfo(gcs_service_pb2.GetAllNodeInfoRequest(),
                                            metadata=metadata, timeout=20)
            except grpc.RpcError as err:
                return err.code()
            return len(reply.node_info_list)

    with ray_session(num_cpus=1):
        gcs = ray._private.worker._global_node.gcs_address
        assert gcs.startswith("127.0.0.1:"), gcs
        token = os.environ.get("RAY_AUTH_TOKEN") or \
            (Path.home() / ".ray" / "auth_token").read_text().strip()
        assert call(gcs, None) == grpc.StatusCode.UNAUTHENTICATED
        assert call(gcs, "not-the-token") == grpc.StatusCode.UNAUTHENTICATED
        assert call(gcs, token) == 1  # this node
