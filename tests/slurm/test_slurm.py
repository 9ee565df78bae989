"""The workflow on a real Slurm (slurmctld + two slurmd, see slurm_cluster.py).

One run of tests/slurm/data/slurm_tiny.yaml with ``--profile profiles/slurm`` (partition
overridden) covers: every rule as a Slurm job, outputs like the local profile's, a
training job that times out and resumes from its checkpoint on the retry (its --time is
cut to 1 minute once it has a checkpoint: see conftest.shorten_first_attempt), and a
2-node Ray cluster inside one Slurm job. Bad requests are refused before submission.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd

from ddrl.study.study import Study

from .conftest import (TIMEOUT_SEED, run_slurm_snakemake, slurm_study_config,
                      write_test_profile)

ROOT = Path("results") / "slurmtiny"


def _runs():
    study = Study.from_config(slurm_study_config())
    timed = next(s for s in study if s.seed == TIMEOUT_SEED)
    multi = next(s for s in study if s.resources["nodes"] == 2)
    return study, timed, multi


def _slurm_job_ids(workdir: Path, rule: str, wildcard: str | None = None) -> list[str]:
    folder = workdir / "logs" / "slurm" / f"rule_{rule}"
    if wildcard:
        folder = folder / wildcard
    return sorted((p.stem for p in folder.glob("*.log")), key=int)


def _entries(folder: Path) -> set[str]:
    """Top-level names of a run folder, plus the checkpoint's own index files."""
    names = {p.name for p in folder.iterdir()}
    return names | {f"checkpoint/{n}" for n in ("rllib_checkpoint.json", "ddrl_checkpoint.json")
                    if (folder / "checkpoint" / n).is_file()}


def test_every_rule_ran_as_a_slurm_job(slurm_study, slurm_cluster):
    log = (slurm_study / "snakemake.stderr").read_text()
    # Jobs the submitting Snakemake finished (`localrule all` is no job), and what it sent
    # to Slurm for each (a retried job is submitted again under the same job number).
    finished = dict(re.findall(r"^Finished jobid: (\d+) \(Rule: (\w+)\)$", log, flags=re.M))
    finished = {n: rule for n, rule in finished.items() if rule != "all"}
    submitted: dict[str, list[str]] = {}
    for n, slurm_id, rule in re.findall(
            r"^Job (\d+) has been submitted with SLURM jobid (\d+) \(log: \S*/rule_(\w+)/",
            log, flags=re.M):
        assert finished.get(n) == rule, (n, rule)
        submitted.setdefault(n, []).append(slurm_id)
    assert set(submitted) == set(finished), (finished, submitted)
    rules = set(finished.values())
    assert {"train", "plot_rewards"} <= rules, rules
    states = {j: slurm_cluster.job_info(j) for ids in submitted.values() for j in ids}
    assert {info["Partition"] for info in states.values()} == {"ddrltest"}
    assert sorted(info["JobState"] for info in states.values()).count("TIMEOUT") == 1, states
    for n, ids in submitted.items():  # every job's last attempt completed
        assert states[ids[-1]]["JobState"] == "COMPLETED", (finished[n], states[ids[-1]])
    # Every rule's job has its own Slurm log folder.
    assert {p.name for p in (slurm_study / "logs" / "slurm").iterdir()} == {
        f"rule_{r}" for r in rules}
    # The job request of a training run follows its resources.
    _, _, multi = _runs()
    req = slurm_cluster.job_info(_slurm_job_ids(slurm_study, "train", multi.run_id)[-1])
    assert req["NumNodes"] == "2" and req["NumTasks"] == "2", req
    assert req["CPUs/Task"] == "2", req  # 1 env runner on the head node + the driver


def test_outputs_match_the_local_profile_in_structure(slurm_study, tiny_study):
    from conftest import TINY_CONFIG

    study, _, _ = _runs()
    local_root = tiny_study / "results" / "tiny"
    local_id = next(r for r, spec in Study.from_file(TINY_CONFIG).runs.items()
                    if spec.algorithm == "PPO")  # the same algorithm, trained locally
    local_run = local_root / "runs" / local_id
    local_record = json.loads((local_run / "run.json").read_text())
    local_progress = pd.read_csv(local_run / "progress.csv")
    for run_id in study.runs:
        run_dir = slurm_study / ROOT / "runs" / run_id
        assert _entries(run_dir) == _entries(local_run), run_id
        record = json.loads((run_dir / "run.json").read_text())
        assert set(record) == set(local_record)
        assert record["status"] == "complete"
        assert list(pd.read_csv(run_dir / "progress.csv").columns) == list(local_progress.columns)
    for folder in ("figures", "tables"):
        local = {p.name for p in (local_root / folder).glob("*")}
        assert {p.name for p in (slurm_study / ROOT / folder).glob("*")} == local, folder
    assert len(list((slurm_study / ROOT / "figures").glob("*.pdf"))) >= 1


def test_timed_out_job_is_retried_and_resumes_from_its_checkpoint(slurm_study, slurm_cluster):
    _, timed, _ = _runs()
    jobs = _slurm_job_ids(slurm_study, "train", timed.run_id)
    states = [slurm_cluster.job_info(j)["JobState"] for j in jobs]
    assert states[0] == "TIMEOUT" and states[-1] == "COMPLETED", states
    assert slurm_cluster.job_info(jobs[0])["TimeLimit"] == "00:01:00"
    assert slurm_cluster.job_info(jobs[-1])["TimeLimit"] == "00:20:00"  # 10 x attempt 2

    run_dir = slurm_study / ROOT / "runs" / timed.run_id
    progress = pd.read_csv(run_dir / "progress.csv")
    record = json.loads((run_dir / "run.json").read_text())
    # One unbroken run: iterations 1..N once each, over two sessions, time budget met.
    assert progress["iteration"].tolist() == list(range(1, len(progress) + 1))
    assert sorted(progress["session"].unique().tolist()) == [0, 1], progress["session"]
    assert record["sessions"] == 2
    assert progress["time_total_s"].iloc[-1] >= timed.budget["time_limit_s"]
    first_of_retry = int(progress.loc[progress["session"] == 1, "iteration"].iloc[0])
    assert first_of_retry > 1  # the retry did not start over
    log = (slurm_study / ROOT / "logs" / "train" / f"{timed.run_id}.log").read_text()
    match = re.search(r"resuming from iter_(\d+) \(iteration (\d+)", log)
    assert match, log[-3000:]
    assert int(match.group(2)) == first_of_retry - 1
    # It resumed from the newest checkpoint the timed-out job left (not an older one).
    cut = json.loads((slurm_study / "cut_short.json").read_text())
    assert str(cut["job"]) == jobs[0]
    assert int(match.group(2)) >= int(cut["checkpoints"][-1].split("_")[1])


def test_two_node_run_has_env_runners_on_both_nodes(slurm_study, slurm_cluster):
    _, _, multi = _runs()
    run_dir = slurm_study / ROOT / "runs" / multi.run_id
    record = json.loads((run_dir / "run.json").read_text())
    placement = record["placement"]
    assert placement["slurm_nodes"] == ["n1", "n2"]
    per_node = placement["env_runners_per_node"]
    nodes = {key.split(" ")[0] for key in per_node}
    assert nodes == {"n1", "n2"}, per_node
    assert sorted(per_node.values()) == [1, 1]
    addresses = {re.search(r"\((.*)\)", key).group(1) for key in per_node}
    assert addresses == {"10.231.76.1", "10.231.76.2"}, per_node  # two network hosts
    progress = pd.read_csv(run_dir / "progress.csv")
    assert progress["env_steps"].iloc[-1] >= multi.budget["env_steps"]
    log = (slurm_study / ROOT / "logs" / "train" / f"{multi.run_id}.log").read_text()
    assert "2 nodes up" in log
    # The cluster was shut down: no Ray process of that job is left on either node.
    job = _slurm_job_ids(slurm_study, "train", multi.run_id)[-1]
    leftover = [p for p in Path("/proc").glob("[0-9]*/cmdline")
                if f"ddrl-ray-{job}-".encode() in _read(p)]
    assert not leftover
    assert not (run_dir / "work" / f"ray-{job}" / "auth_token").exists()


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


# -- bad requests: refused before anything is submitted --------------------------------------

def _refused(tmp_path: Path, config: dict, **profile_overrides) -> str:
    import yaml

    cfg = tmp_path / "study.yaml"
    cfg.write_text(yaml.safe_dump(config))
    profile = write_test_profile(tmp_path / "profile", **profile_overrides)
    proc = run_slurm_snakemake(tmp_path, cfg, profile, timeout=300)
    assert proc.returncode != 0, proc.stdout[-2000:]
    assert not (tmp_path / "logs" / "slurm").exists()  # nothing was submitted
    assert not (tmp_path / "results").exists()
    return proc.stderr


def _study(**resources) -> dict:
    config = slurm_study_config()
    config["experiments"] = [{**config["experiments"][0], "resources": [resources]}]
    return config


def test_unknown_partition_is_refused(slurm_cluster, tmp_path):
    err = _refused(tmp_path, _study(num_env_runners=1),
                   **{"default-resources": {"slurm_partition": "gpu_v100"}})
    assert "partition 'gpu_v100' does not exist" in err and "ddrltest" in err, err[-2000:]


def test_request_larger_than_any_node_is_refused(slurm_cluster, tmp_path):
    err = _refused(tmp_path, _study(num_env_runners=64))
    assert "asks for 65 CPUs" in err and "larger than any node" in err, err[-2000:]


def test_multi_node_run_without_a_runner_per_node_is_refused(slurm_cluster, tmp_path):
    err = _refused(tmp_path, _study(num_env_runners=1, nodes=2))
    assert "nodes=2 but num_env_runners=1" in err, err[-2000:]
