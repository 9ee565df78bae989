"""bench/learner_update.py: SAC and TD3 learners at 1 and 2 threads (minibatch parts), timed
side by side; the summary's speedups are relative to the first thread count."""

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
    assert set(result["times_ms"]) == {"SAC-1t", "SAC-2t", "TD3-1t", "TD3-2t"}
    assert all(len(v) == 2 and min(v) > 0 for v in result["times_ms"].values())
    for algo in ("SAC", "TD3"):
        one, two = result["median"][f"{algo}-1t"], result["median"][f"{algo}-2t"]
        assert one["speedup"] == 1.0
        assert two["speedup"] == pytest.approx(one["ms_per_update"] / two["ms_per_update"],
                                               rel=1e-2)
    assert "SAC threads=2: median" in capsys.readouterr().out


def test_rejects_a_thread_count_below_one():
    with pytest.raises(SystemExit):
        learner_update.main(["--threads", "0"])
