"""bench/gpu_offpolicy.py, the prepared GPU measurement, run end to end on CPU tensors: the
registry builds SAC and TD3 learners with their replay buffer on the learner, the script
times update_from_device_buffer and reports one row per algorithm."""

from __future__ import annotations

import json

import gpu_offpolicy


def test_cpu_run_reports_updates_per_second_from_the_learners_own_buffer(tmp_path):
    out = tmp_path / "gpu.json"
    assert gpu_offpolicy.main(["--device", "cpu", "--updates", "5", "--repeats", "2",
                               "--buffer", "600", "--batch", "32", "--hiddens", "16",
                               "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    rows = {r["algo"]: r for r in result["rows"]}
    assert set(rows) == {"SAC", "TD3"}
    for algo, row in rows.items():
        assert row["device"] == "cpu" and row["mode"] == "eager" and row["graphs"] == 0
        assert len(row["rounds"]) == 2 and row["updates_per_s"] > 0
        assert row["leanrl_h100_env_steps_per_s"] == {"SAC": 725, "TD3": 936}[algo]
    assert result["gpu"] is None


def test_learner_buffer_holds_what_the_script_stored():
    learner = gpu_offpolicy.build_learner("TD3", "cpu", capture=True, hiddens=[8], batch=16)
    learner.update_from_device_buffer(gpu_offpolicy.random_transitions(300), 4, 16)
    assert len(learner._device_replay_buffer) == 300
    assert not learner._captured_steps.capture  # CPU: graph capture falls back to eager
    assert int(learner.module["default_policy"].unwrapped().num_critic_updates) == 4
