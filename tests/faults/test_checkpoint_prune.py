"""Pruning old checkpoints never leaves a half-deleted ``iter_N`` (a SIGKILL mid-delete
once left one without all its files, which failed its manifest check)."""

from __future__ import annotations

from ddrl.training import checkpoints


def _fake(root, n: int) -> None:
    for i in range(1, n + 1):
        path = root / f"iter_{i:06d}"
        path.mkdir(parents=True)
        (path / "state.pkl").write_bytes(b"x" * 10)


def test_prune_keeps_the_newest_and_cleans_leftovers_of_a_killed_prune(tmp_path):
    _fake(tmp_path, 5)
    # What a prune killed mid-delete leaves: a hidden, partly deleted directory.
    leftover = tmp_path / ".iter_000000.deleting"
    leftover.mkdir()
    (leftover / "half.pkl").write_bytes(b"x")
    assert [p.name for p in checkpoints.listed(tmp_path)][0] == "iter_000001"

    checkpoints.prune(tmp_path, keep=3)

    assert [p.name for p in checkpoints.listed(tmp_path)] == [
        "iter_000003", "iter_000004", "iter_000005"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "iter_000003", "iter_000004", "iter_000005"]
