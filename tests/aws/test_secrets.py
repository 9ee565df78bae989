"""No credentials in the repository, in run outputs or in logs."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from aws.aws_helpers import FAKE_ENV

REPO = Path(__file__).resolve().parents[2]
# AWS access key ids (long-term AKIA, temporary ASIA), and a 40-character secret next to
# a name that says what it is.
KEY_ID = re.compile(rb"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")
SECRET = re.compile(rb"(?i)aws.{0,20}secret.{0,20}[=:]\s*[\"']?[A-Za-z0-9/+]{40}\b")
ACCOUNT_ARN = re.compile(rb"arn:aws[a-z-]*:[a-z0-9-]+:[a-z0-9-]*:(\d{12}):")
FAKE_ACCOUNT = b"123456789012"  # moto's, used by the tests only


def _tracked_files() -> list[Path]:
    out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO,
                         capture_output=True, check=True).stdout.decode().splitlines()
    return [REPO / f for f in out if (REPO / f).is_file()]


def _offences(data: bytes) -> list[str]:
    found = [m.decode() for m in KEY_ID.findall(data)]
    found += [m.decode()[:30] + "..." for m in SECRET.findall(data)]
    found += [f"account {a.decode()}" for a in ACCOUNT_ARN.findall(data) if a != FAKE_ACCOUNT]
    return found


def test_patterns_catch_what_they_should():
    assert _offences(b"key = AKIA" + b"ABCDEFGHIJKLMNOP")
    assert _offences(b"aws_secret_access_key = " + b"a" * 40)
    assert _offences(b"role: arn:aws:iam::" + b"210987654321:role/x")
    assert not _offences(b"arn:aws:iam::123456789012:role/ddrl-test-role AKIAshort")


def test_repository_holds_no_credentials_or_account_ids():
    bad = {}
    for path in _tracked_files():
        found = _offences(path.read_bytes())
        if found:
            bad[str(path.relative_to(REPO))] = found
    assert not bad, f"credential-like strings in the repository: {bad}"


def test_run_outputs_and_logs_hold_no_secret(container_run):
    root, _, spec = container_run
    files = [root / "train.log", root / "model" / "run.json", root / "model" / "progress.csv",
             root / "checkpoints" / spec.run_id / "run.json"]
    secrets = [FAKE_ENV["AWS_SECRET_ACCESS_KEY"], FAKE_ENV["AWS_SESSION_TOKEN"],
               FAKE_ENV["AWS_ACCESS_KEY_ID"]]
    for path in files:
        text = path.read_text()
        for secret in secrets:
            assert secret not in text, f"{secret} leaked into {path}"
        assert not _offences(text.encode()), path
    import json

    env = json.loads((root / "model" / "run.json").read_text())["environment"]
    assert env["AWS_SECRET_ACCESS_KEY"] == env["AWS_ACCESS_KEY_ID"] == "<redacted>"
    assert env["AWS_REGION"] == FAKE_ENV["AWS_REGION"]  # recorded, not secret
