"""Private Ray/RLlib APIs stay on a short, documented list; RLlib's constants name result
keys and checkpoint folders."""

from __future__ import annotations

import re

from conftest import REPO

# (file, private name): each has a "Private, kept:" comment at its use saying why.
KNOWN_PRIVATE = {
    ("faults.py", "ray._private.state"),
    ("faults.py", "ray._private.worker"),
    ("faults.py", "_worker_manager"),
    ("ray_nodes.py", "ray._private.authentication"),
    ("ray_nodes.py", "ray._raylet"),
    ("runtime.py", "_node_ip_address"),
}
PRIVATE = re.compile(r"\b(ray\._private\.\w+|ray\._raylet|_worker_manager|_node_ip_address)\b")


def test_private_ray_apis_are_the_documented_ones():
    found = set()
    for path in (REPO / "src" / "ddrl").rglob("*.py"):
        for name in PRIVATE.findall(path.read_text()):
            found.add((path.name, name))
    assert found == KNOWN_PRIVATE, (
        f"new: {sorted(found - KNOWN_PRIVATE)}; gone: {sorted(KNOWN_PRIVATE - found)}")
    for file in {f for f, _ in KNOWN_PRIVATE}:
        text = next((REPO / "src" / "ddrl").rglob(file)).read_text()
        assert "Private, kept:" in text, f"{file}: say why the private API stays"


def test_result_keys_and_checkpoint_folders_come_from_rllib():
    from ddrl.agents.restore import component_dirs
    from ddrl.training.progress import RESULT_KEYS, SUMMED_RESULT_KEYS

    # RLlib 2.60's values, spelled out: a renamed constant upstream shows up here.
    assert RESULT_KEYS["episode_return_mean"] == "env_runners/episode_return_mean"
    assert RESULT_KEYS["sample_time_s"] == "timers/env_runner_sampling_timer"
    assert SUMMED_RESULT_KEYS["replay_time_s"][1] == "timers/replay_buffer_sampling_timer"
    assert [str(p) for p in component_dirs()] == [
        "learner_group/learner/rl_module/default_policy",
        "env_runner/env_to_module_connector", "env_runner/module_to_env_connector"]
    for path in (REPO / "src" / "ddrl" / "training" / "progress.py",
                 REPO / "src" / "ddrl" / "agents" / "policy.py",
                 REPO / "bench" / "harness" / "throughput.py"):
        text = path.read_text()
        assert not re.search(r'"(env_runners|timers|learner_group)/', text), path.name
