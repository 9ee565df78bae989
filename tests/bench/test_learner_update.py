"""bench/investigations/learner_update.py: SAC and TD3 learners at 1 and 2 threads (torch's
kernel threads and minibatch parts), timed side by side; the summary's speedups are relative
to the first thread count."""

from __future__ import annotations

import json

import pytest
import torch

import learner_update


@pytest.fixture(autouse=True)
def _restore_torch_threads():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_times_each_learner_and_thread_count(tmp_path, capsys):
    out = tmp_path / "learner.json"
    assert learner_update.main(["--threads", "1", "2", "--updates", "2", "--batch", "16",
                                "--rounds", "2", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    variants = ("1t", "2t-kernels", "2t-parts")
    assert set(result["times_ms"]) == {f"{a}-{v}" for a in ("SAC", "TD3") for v in variants}
    assert all(len(v) == 2 and min(v) > 0 for v in result["times_ms"].values())
    for algo in ("SAC", "TD3"):
        one = result["median"][f"{algo}-1t"]
        assert one["speedup"] == 1.0
        for variant in variants[1:]:
            two = result["median"][f"{algo}-{variant}"]
            assert two["speedup"] == pytest.approx(one["ms_per_update"] / two["ms_per_update"],
                                                   rel=1e-2)
    assert "SAC-2t-parts: median" in capsys.readouterr().out


def test_a_learner_built_for_parts_splits_the_minibatch_and_one_for_kernels_does_not():
    assert learner_update.build_learner("SAC", 2, 16, "parts")._batch_parts == 2
    kernels = learner_update.build_learner("SAC", 2, 16, "kernels")
    assert kernels._batch_parts == 1 and torch.get_num_threads() == 2


def test_rejects_a_thread_count_below_one():
    with pytest.raises(SystemExit):
        learner_update.main(["--threads", "0"])
