"""Evaluation: eval.json on the tiny study, seeds, the returns table, restored vs live
policy with a MeanStdFilter, and bad checkpoints."""

from __future__ import annotations

import csv
import json
import re
import shutil
import statistics

import numpy as np
import pytest

from ddrl.errors import CheckpointError, ConfigError
from ddrl.agents.evaluate import (eval_seeds, evaluate_run, returns_table, training_seeds,
                           write_curve, write_eval)
from ddrl.study.study import Study
from ddrl.runs import RunSpec

from conftest import TINY_CONFIG


def _study():
    return Study.from_file(TINY_CONFIG)


def _run_dir(tiny_study, run_id):
    return tiny_study / "results" / "tiny" / "runs" / run_id


def test_eval_seeds_are_reproducible_distinct_and_disjoint_from_training():
    for spec in _study():
        seeds = eval_seeds(spec, 50)
        assert seeds == eval_seeds(spec, 50)
        assert eval_seeds(spec, 3) == seeds[:3]  # a longer evaluation extends a shorter one
        assert len(set(seeds)) == 50
        assert not set(seeds) & set(training_seeds(spec))
        assert all(2**31 <= s < 2**32 for s in seeds)
    specs = list(_study())
    a = next(s for s in specs if s.seed == 1)
    b = next(s for s in specs if s.seed == 2)
    assert eval_seeds(a, 10) != eval_seeds(b, 10)
    with pytest.raises(ConfigError, match="at least 1 episode"):
        eval_seeds(a, 0)


def test_tiny_study_eval_json(tiny_study):
    for run_id, spec in _study().runs.items():
        run_dir = _run_dir(tiny_study, run_id)
        rec = json.loads((run_dir / "eval.json").read_text())
        run = json.loads((run_dir / "run.json").read_text())
        assert rec["run_id"] == run_id and rec["algorithm"] == spec.algorithm
        assert rec["env"] == spec.env and rec["seed"] == spec.seed
        assert rec["resources"] == spec.resource_label
        assert rec["episodes"] == 3 == len(rec["returns"]) == len(rec["lengths"])
        assert rec["eval_seeds"] == eval_seeds(spec, 3)
        assert rec["checkpoint"] == {"iteration": run["result"]["iterations"],
                                     "env_steps": run["result"]["env_steps"]}
        r = rec["returns"]
        assert rec["return_mean"] == pytest.approx(statistics.fmean(r))
        assert rec["return_std"] == pytest.approx(statistics.pstdev(r))
        assert rec["return_min"] == min(r) and rec["return_max"] == max(r)
        assert rec["return_median"] == pytest.approx(statistics.median(r))
        assert rec["length_mean"] == pytest.approx(statistics.fmean(rec["lengths"]))
        # InvertedPendulum pays 1 per step while the pole is up: return == length > 0.
        assert r == [float(n) for n in rec["lengths"]] and min(r) >= 1
        assert rec["deterministic"] is True
        has_filter = spec.hyperparameters["observation_filter"] == "MeanStdFilter"
        assert (rec["observation_filter"] is not None) == has_filter


def test_evaluation_is_deterministic(tiny_study):
    run_id, spec = next((r, s) for r, s in _study().runs.items() if s.algorithm == "PPO")
    run_dir = _run_dir(tiny_study, run_id)
    stored = json.loads((run_dir / "eval.json").read_text())
    again = evaluate_run(spec, run_dir, episodes=5)
    assert again["returns"][:3] == stored["returns"]
    assert again["eval_seeds"][:3] == stored["eval_seeds"]


def test_tiny_study_returns_table(tiny_study):
    study = _study()
    tables = tiny_study / "results" / "tiny" / "tables"
    rows = list(csv.DictReader((tables / "returns.csv").open()))
    evals = {r: json.loads((_run_dir(tiny_study, r) / "eval.json").read_text())
             for r in study.runs}
    groups = {}  # one row per configuration: its experiment and everything but the seed
    for run_id, spec in study.runs.items():
        groups.setdefault((study.experiment_of[run_id], spec.config_id), []).append(run_id)
    assert len(rows) == len(groups) >= 3
    for row in rows:
        ids = groups[(row["experiment"], row["config_id"])]
        means = [evals[i]["return_mean"] for i in ids]
        assert sorted(row["runs"].split()) == sorted(ids)
        assert float(row["return_mean"]) == pytest.approx(statistics.fmean(means))
        if len(means) > 1:
            assert float(row["return_std"]) == pytest.approx(statistics.stdev(means))
        else:
            assert row["return_std"] == ""
    md = (tables / "returns.md").read_text()
    assert md.startswith("| experiment | algorithm | env | resources | seeds |")
    multi = sum(len(ids) > 1 for ids in groups.values())
    assert len(re.findall(r"\d ± \d", md)) == multi >= 1
    assert md.count("(1 seed)") == len(groups) - multi >= 1


def test_returns_table_groups_and_statistics():
    recs = [
        {"algorithm": "PPO", "env": "E", "resources": "r1", "seed": s, "run_id": f"p{s}",
         "config_id": "ppo-config", "episodes": 10, "return_mean": m}
        for s, m in [(2, 30.0), (1, 10.0), (3, 20.0)]
    ] + [{"algorithm": "SAC", "env": "E", "resources": "r1", "seed": 1, "run_id": "s1",
          "config_id": "sac-config", "episodes": 10, "return_mean": 5.0}]
    rows = returns_table(recs, {"p1": "exp", "p2": "exp", "p3": "exp", "s1": "exp"})
    assert [(r["experiment"], r["algorithm"], r["seeds"]) for r in rows] == [
        ("exp", "PPO", "1 2 3"), ("exp", "SAC", "1")]
    assert rows[0]["return_mean"] == 20.0 and rows[0]["return_std"] == pytest.approx(10.0)
    assert rows[0]["return_min_seed"] == 10.0 and rows[0]["return_max_seed"] == 30.0
    assert rows[1]["return_std"] is None
    # Runs whose configuration is unknown (no config_id) are never pooled as seeds.
    unknown = [{k: v for k, v in r.items() if k != "config_id"} for r in recs[:2]]
    assert [r["seeds"] for r in returns_table(unknown)] == ["1", "2"]


# -- restored vs live ------------------------------------------------------------------------

def _filter_spec() -> RunSpec:
    cfg = {
        "study": "live",
        "hyperparameters": {"PPO": {"train_batch_size": 200, "minibatch_size": 50,
                                    "num_epochs": 2, "fcnet_hiddens": [16, 16],
                                    "observation_filter": "MeanStdFilter"}},
        "experiments": [{"algorithms": ["PPO"], "envs": ["InvertedPendulumBulletEnv-v0"],
                         "seeds": [3], "budget": {"env_steps": 400}}],
    }
    return next(iter(Study.from_config(cfg)))


def test_restored_policy_scores_the_same_as_the_live_one(tmp_path):
    """A MeanStdFilter PPO run: the live algorithm's policy (its module and the env runner's
    filter, acting as RLlib's connectors do) and the policy restored from its checkpoint play
    the same episodes; restoring the module without the filter would not."""
    import torch
    from ray.rllib.utils.spaces.space_utils import unsquash_action

    from ddrl.training import checkpoints
    from ddrl.envs import make_env
    from ddrl.agents.evaluate import evaluate_policy
    from ddrl.agents.policy import load_run_policy
    from ddrl.training.runtime import ray_session
    from ddrl.training.train import build_algorithm_config

    def live_filter(runner):  # runs in the env runner (a local function pickles by value)
        conn = next(c for c in runner._env_to_module.connectors
                    if type(c).__name__ == "MeanStdFilter")
        return conn._filters[None]  # RLlib's MeanStdFilter object (mean/std state)

    spec = _filter_spec()
    run_dir = tmp_path / spec.run_id
    with ray_session(num_cpus=2):
        algo = build_algorithm_config(spec).build_algo()
        try:
            for i in (1, 2):
                algo.train()
                checkpoints.save(algo, run_dir / "work" / "checkpoints", i,
                                 {"run_id": spec.run_id, "algorithm": "PPO", "env": spec.env,
                                  "env_steps": 200 * i})
            live = algo.env_runner_group.foreach_env_runner(live_filter,
                                                            local_env_runner=False)
            live_filter_obj = live[0]
            count = int(live_filter_obj.running_stats.n)
            module = algo.get_module()
            module.eval()
        finally:
            algo.stop()
    assert count >= 400  # the filter really ran during training
    shutil.copytree(run_dir / "work" / "checkpoints" / "iter_000002", run_dir / "checkpoint")

    env = make_env(spec.env)
    space = env.action_space
    env.close()

    def live_act(obs):
        x = live_filter_obj(obs, update=False)  # RLlib's own filter, frozen
        with torch.no_grad():
            out = module.forward_inference({"obs": torch.from_numpy(x[None])})
            dist = module.get_inference_action_dist_cls().from_logits(out["action_dist_inputs"])
            a = dist.to_deterministic().sample().numpy()[0]
        return unsquash_action(a, space)

    class Live:
        env = spec.env
        act = staticmethod(live_act)

    seeds = eval_seeds(spec, 4)
    live_returns, _ = evaluate_policy(Live, seeds)
    restored = load_run_policy(spec, run_dir)
    assert restored.obs_filter is not None and restored.obs_filter.count == count
    restored_returns, _ = evaluate_policy(restored, seeds)
    assert restored_returns == live_returns

    obs = np.random.default_rng(0).normal(size=(64, 5)).astype(np.float32)
    want = np.stack([live_act(o) for o in obs])
    np.testing.assert_allclose(restored.act(obs), want, atol=1e-6, rtol=0)
    restored.obs_filter, restored._net = None, None  # what a module-only restore would do
    assert np.abs(restored.act(obs) - want).max() > 1e-3

    # The learning curve over the intermediate checkpoints (evaluation.intermediate).
    rows = write_curve(spec, run_dir, run_dir / "eval_curve.csv", episodes=4)
    assert [(r["iteration"], r["env_steps"]) for r in rows] == [(1, 200), (2, 400)]
    assert rows[1]["return_mean"] == pytest.approx(np.mean(live_returns))
    first = load_run_policy(spec, run_dir, run_dir / "work" / "checkpoints" / "iter_000001")
    assert rows[0]["return_mean"] == pytest.approx(np.mean(evaluate_policy(first, seeds)[0]))
    table = list(csv.DictReader((run_dir / "eval_curve.csv").open()))
    assert [int(r["iteration"]) for r in table] == [1, 2]


# -- bad input -------------------------------------------------------------------------------

@pytest.fixture
def run_copy(tiny_study, tmp_path):
    run_id, spec = next((r, s) for r, s in _study().runs.items() if s.algorithm == "SAC")
    dst = tmp_path / run_id
    shutil.copytree(_run_dir(tiny_study, run_id) / "checkpoint", dst / "checkpoint")
    return spec, dst


def test_missing_checkpoint_is_a_clear_error(run_copy):
    spec, run_dir = run_copy
    shutil.rmtree(run_dir / "checkpoint")
    with pytest.raises(CheckpointError, match=f"run {spec.run_id}: no checkpoint"):
        write_eval(spec, run_dir, run_dir / "eval.json", 2)
    assert list(run_dir.iterdir()) == []


def test_corrupt_checkpoint_is_a_clear_error(run_copy):
    spec, run_dir = run_copy
    state = run_dir / "checkpoint/learner_group/learner/rl_module/default_policy/module_state.pkl"
    state.write_bytes(state.read_bytes()[:100])
    with pytest.raises(CheckpointError, match=f"run {spec.run_id}: .*corrupt.*module_state.pkl"):
        write_eval(spec, run_dir, run_dir / "eval.json", 2)
    assert not (run_dir / "eval.json").exists()


def test_env_mismatch_is_a_clear_error(run_copy):
    spec, run_dir = run_copy
    other = RunSpec.from_dict({**spec.to_dict(), "env": "HopperBulletEnv-v0"})
    with pytest.raises(ConfigError, match="trained on env 'InvertedPendulumBulletEnv-v0'.*"
                                          "asks for 'HopperBulletEnv-v0'") as err:
        write_eval(other, run_dir, run_dir / "eval.json", 2)
    assert other.run_id in str(err.value)
    # Without the env in the manifest, the observation shapes still give it away.
    manifest = run_dir / "checkpoint" / "ddrl_checkpoint.json"
    data = json.loads(manifest.read_text())
    data.pop("env")
    data["run_id"] = other.run_id
    manifest.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match=f"run {other.run_id}: env 'HopperBulletEnv-v0' has "
                                          "observations of shape"):
        write_eval(other, run_dir, run_dir / "eval.json", 2)
    assert not (run_dir / "eval.json").exists()


def test_intermediate_evaluation_keeps_every_checkpoint():
    from ddrl.training.train import KEEP_CHECKPOINTS, keep_checkpoints

    assert keep_checkpoints({"evaluation": {"intermediate": True}}) == 0  # 0: keep all
    assert keep_checkpoints({"evaluation": {"episodes": 3}}) == KEEP_CHECKPOINTS
    assert keep_checkpoints({}) == KEEP_CHECKPOINTS


def test_checkpoint_of_another_run_is_a_clear_error(run_copy):
    spec, run_dir = run_copy
    other = RunSpec.from_dict({**spec.to_dict(), "seed": 99})
    with pytest.raises(CheckpointError, match=f"run {other.run_id}: checkpoint .* belongs to "
                                              f"run {spec.run_id}"):
        write_eval(other, run_dir, run_dir / "eval.json", 2)
    assert not (run_dir / "eval.json").exists()
