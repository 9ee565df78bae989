"""bench/learning_locomotion.py's cheap pieces: the study config, the SB3 translation, the one
evaluation protocol both frameworks use, and the results table's arithmetic (seconds)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

import learning_locomotion as ll
from harness.sampling import run_spec

ENV = "InvertedPendulumBulletEnv-v0"


@pytest.fixture(scope="module")
def runs():
    return ll.study_runs(ll.CONFIG)


def test_study_config_validates_and_has_the_issues_budgets(runs):
    budgets = {(s.algorithm, s.env): s.budget["env_steps"] for s in runs.values()}
    for env in ("HopperBulletEnv-v0", "HalfCheetahBulletEnv-v0"):
        assert budgets[("SAC", env)] >= 100_000 and budgets[("TD3", env)] >= 100_000
        assert budgets[("PPO", env)] >= 1_000_000
    for spec in runs.values():
        if spec.algorithm != "PPO":
            assert spec.hyperparameters["updates_per_step"] == 1.0
        # evaluations every ~10k env steps off-policy, ~100k for PPO
        assert ll.eval_interval(spec) == (100_352 if spec.algorithm == "PPO" else 10_240)


def test_sb3_settings_match_the_spec(runs):
    for spec in runs.values():
        name, kw, diffs = ll.sb3_settings(spec)
        hp = spec.hyperparameters
        assert name == spec.algorithm and diffs
        if name == "PPO":
            assert (kw["n_steps"], kw["batch_size"], kw["n_epochs"]) == (
                hp["train_batch_size"], hp["minibatch_size"], hp["num_epochs"])
            assert kw["max_grad_norm"] == hp["grad_clip"]
            continue
        assert (kw["train_freq"], kw["gradient_steps"]) == (1, 1)  # one update per env step
        assert kw["learning_starts"] == hp["num_steps_sampled_before_learning_starts"]
        assert kw["buffer_size"] == hp["replay_buffer_capacity"]
        assert (kw["gamma"], kw["tau"], kw["batch_size"]) == (
            hp["gamma"], hp["tau"], hp["train_batch_size"])
        assert kw["policy_kwargs"]["net_arch"] == [400, 300]
    spec = run_spec("SAC", ENV, 1, {"actor_lr": 1e-3})
    with pytest.raises(ValueError, match="one learning rate"):
        ll.sb3_settings(spec)
    # The critic loss is listed as a difference only while ddrl's differs from SB3's.
    huber = ll.sb3_settings(run_spec("SAC", ENV, 1, {}))[2]
    mse = ll.sb3_settings(run_spec("SAC", ENV, 1, {"critic_loss": "mse"}))[2]
    assert any("Huber" in d for d in huber) and not any("Huber" in d for d in mse)


def test_sb3_can_train_in_ddrls_rhythm_of_fragments(runs):
    for spec in runs.values():
        if spec.algorithm == "PPO":
            continue
        frag = spec.hyperparameters["rollout_fragment_length"]
        name, kw, diffs = ll.sb3_settings(spec, ll.SB3_PER_FRAGMENT)
        assert (kw["train_freq"], kw["gradient_steps"]) == (frag, frag)  # same ratio: 1
        assert any(f"SB3 trains after every {frag} steps" in d for d in diffs)
        step_kw = ll.sb3_settings(spec)[1]
        assert {k: v for k, v in kw.items() if k not in ("train_freq", "gradient_steps")} == {
            k: v for k, v in step_kw.items() if k not in ("train_freq", "gradient_steps")}
    spec = run_spec("SAC", ENV, 1, {"rollout_fragment_length": 3, "updates_per_step": 0.5})
    with pytest.raises(ValueError, match="whole updates"):
        ll.sb3_settings(spec, ll.SB3_PER_FRAGMENT)
    with pytest.raises(ValueError, match="train_freq must be one of"):
        ll.sb3_settings(spec, "episode")


class _SB3Like:
    """What SB3's ``predict`` looks like, around a fixed deterministic policy."""

    def __init__(self, fn):
        self.fn = fn

    def predict(self, obs, deterministic=False):
        assert deterministic
        return self.fn(obs), None


def test_one_protocol_gives_identical_results_through_both_adapters():
    from ddrl.agents.evaluate import eval_seeds, evaluate_policy

    spec = run_spec("TD3", ENV, seed=5)
    w = np.random.default_rng(0).normal(size=(1, 5)).astype(np.float32) * 0.3

    def fn(obs):
        return np.clip(w @ np.asarray(obs, dtype=np.float32), -1, 1)

    ddrl_like = SimpleNamespace(env=ENV, act=fn)  # a RestoredPolicy's interface
    a = ll.evaluate_act(ddrl_like.act, spec, episodes=3)
    b = ll.evaluate_act(ll.sb3_act(_SB3Like(fn)), spec, episodes=3)
    assert a["returns"] == b["returns"] and a["eval_seeds"] == b["eval_seeds"]
    # ...and they are ddrl's own evaluation: same seeds, same episodes.
    seeds = eval_seeds(spec, 3)
    returns, lengths = evaluate_policy(ddrl_like, seeds)
    assert a["eval_seeds"] == seeds and a["returns"] == returns
    assert a["return_mean"] == pytest.approx(np.mean(returns))
    assert a["length_mean"] == pytest.approx(np.mean(lengths)) and a["episodes"] == 3


def _rows(fw, seed, points, algo="SAC", env="HopperBulletEnv-v0", run_id=None):
    return [{"framework": fw, "algorithm": algo, "env": env, "seed": seed, "env_steps": s,
             "train_s": s / 100, "return_mean": r, "finished": True,
             "run_id": run_id or f"{algo}-{env}-s{seed}"} for s, r in points]


def test_two_runs_in_one_cell_are_refused_not_merged(tmp_path):
    old = _rows("ddrl", 1, [(10_000, 249.0)], algo="PPO", run_id="ppo-old-7a12")
    new = _rows("ddrl", 1, [(10_000, -1009.0)], algo="PPO", run_id="ppo-new-82e1")
    with pytest.raises(ValueError, match="2 runs for one cell.*ppo-new-82e1.*ppo-old-7a12"):
        ll.summary_table(old + new)
    with pytest.raises(ValueError, match="2 runs for one cell"):
        ll.compare(old + new + _rows("sb3", 1, [(10_000, 258.0)], algo="PPO"))
    # On disk, the report reads only the study's run ids unless told otherwise.
    spec = run_spec("SAC", ENV, seed=1)
    for run_id in ("ppo-old-7a12", "ppo-new-82e1"):
        path = tmp_path / "ddrl" / run_id / "curve.csv"
        path.parent.mkdir(parents=True)
        ll.Curve(path, "ddrl", spec).add(1000, 1.0, 1.0, {"return_mean": 5.0, "episodes": 1})
    assert {r["run_id"] for r in ll.read_curves(tmp_path, ["ppo-new-82e1"])} == {"ppo-new-82e1"}
    assert len({r["run_id"] for r in ll.read_curves(tmp_path)}) == 2


def test_summary_table_final_best_and_steps():
    rows = _rows("ddrl", 1, [(10_000, 100.0), (20_000, 900.0), (30_000, 500.0)])
    (t,) = ll.summary_table(rows)
    assert (t["final_return"], t["best_return"], t["best_at_steps"]) == (500.0, 900.0, 20_000)
    assert (t["env_steps"], t["train_s"], t["evaluations"]) == (30_000, 300.0, 3)


def test_compare_at_the_common_env_steps():
    rows = (_rows("ddrl", 1, [(10_000, 100.0), (30_000, 900.0)])
            + _rows("sb3", 1, [(10_000, 200.0), (20_000, 1000.0)]))
    assert ll.return_at(rows[:2], 20_000) == pytest.approx(500.0)  # interpolated
    assert math.isnan(ll.return_at(rows[:2], 40_000))
    (c,) = ll.compare(rows)
    assert c["env_steps"] == 20_000 and c["ddrl"] == pytest.approx(500.0)
    assert c["sb3"] == 1000.0 and c["ratio"] == pytest.approx(0.5) and not c["keeps_up"]
    # Curve means over SB3's evaluation points up to 20k: ddrl (100 + 500) / 2, SB3 600.
    assert (c["ddrl_curve_mean"], c["sb3_curve_mean"], c["curve_points"]) == (300.0, 600.0, 2)
    # Two SB3 seeds: inside SB3's seed spread counts as keeping up.
    rows += _rows("sb3", 2, [(10_000, 0.0), (20_000, 400.0)])
    (c,) = ll.compare(rows)
    assert c["sb3"] == pytest.approx(700.0) and c["keeps_up"]
    md = ll.markdown(ll.summary_table(rows), ll.compare(rows))
    assert "| SAC | HopperBulletEnv-v0 | 20,000 | 500.0 | 700.0 | 0.71 | yes | 300.0, 400.0 (2) |" in md
    # Per-seed statistics: SB3's worst seed ends at 400, ddrl's only seed at 500.
    assert c["final_per_seed"] == {"ddrl": {1: 500.0}, "sb3": {1: 1000.0, 2: 400.0}}
    assert c["final_iqm"]["sb3"] == pytest.approx(700.0)
    assert c["ddrl_seeds_below_sb3_worst"] == 0
    lo, hi = c["final_ratio_ci"]  # resampling SB3's two seeds: 500/1000 .. 500/400
    assert lo == pytest.approx(0.5) and hi == pytest.approx(1.25)
    assert "| SAC | HopperBulletEnv-v0 | 1, 2 | 500.0, 700.0 | 0.71 [0.50, 1.25] |" in md
    # A cell with a run still going gets no verdict.
    rows[-1]["finished"] = False
    assert "| 0.71 | (runs unfinished) |" in ll.markdown([], ll.compare(rows))


def test_curve_is_written_after_each_evaluation_and_reread(tmp_path):
    spec = run_spec("SAC", ENV, seed=1)
    path = tmp_path / "sb3" / "run-1" / "curve.csv"  # <out>/<framework>/<run>/curve.csv
    path.parent.mkdir(parents=True)
    c = ll.Curve(path, "sb3", spec)
    c.add(2000, 1.5, 2.0, {"return_mean": 3.0, "episodes": 10})
    c.add(1000, 0.5, 1.0, {"return_mean": 1.0, "episodes": 10})
    again = ll.Curve(path, "sb3", spec)
    assert [int(r["env_steps"]) for r in again.rows] == [1000, 2000]
    assert again.has(2000) and not again.has(3000)
    rows = ll.read_curves(tmp_path)
    assert [(r["framework"], r["run_id"], r["env_steps"], r["return_mean"]) for r in rows] == [
        ("sb3", "run-1", 1000, 1.0), ("sb3", "run-1", 2000, 3.0)]
    assert not rows[0]["finished"]  # no summary.json yet


def test_a_run_before_a_fix_is_shown_but_not_compared(tmp_path):
    spec = run_spec("PPO", ENV, seed=1)
    for fw, run_id, ret in (("ddrl", "ppo-new", 900.0), ("ddrl", "ppo-old", 300.0),
                            ("sb3", "ppo-new", 1000.0)):
        path = tmp_path / fw / run_id / "curve.csv"
        path.parent.mkdir(parents=True)
        curve = ll.Curve(path, fw, spec)
        curve.add(1000, 1.0, 1.0, {"return_mean": ret / 2, "episodes": 1})
        curve.add(2000, 2.0, 2.0, {"return_mean": ret, "episodes": 1})
    rows = ll.read_curves(tmp_path, ["ppo-new"]) + ll.read_before(tmp_path, ["ppo-old"])
    table = {r["framework"]: r["final_return"] for r in ll.summary_table(rows)}
    assert table == {"ddrl": 900.0, ll.BEFORE: 300.0, "sb3": 1000.0}
    (c,) = ll.compare(rows)
    assert (c["ddrl"], c["sb3"]) == (900.0, 1000.0)
    series = ll.plot_series(rows)
    assert [k[2] for k in series] == ["ddrl", "sb3", ll.BEFORE]
    assert series[("PPO", ENV, ll.BEFORE, 1)]["return_mean"] == [150.0, 300.0]
    assert series[("PPO", ENV, "ddrl", 1)]["env_steps"] == [1000, 2000]
    with pytest.raises(FileNotFoundError, match="ppo-gone"):
        ll.read_before(tmp_path, ["ppo-gone"])
    png = tmp_path / "fig.png"
    ll.plot(rows, png)
    assert png.stat().st_size > 0


def test_many_seeds_are_drawn_as_their_mean_with_each_seed_thin(tmp_path):
    rows = []
    for fw, seed, returns in (("ddrl", 1, (100.0, 400.0, 700.0)), ("ddrl", 2, (200.0, 500.0)),
                              ("ddrl", 3, (300.0, 600.0, 900.0)), ("sb3", 1, (50.0, 80.0, 90.0))):
        rows += [{"framework": fw, "algorithm": "SAC", "env": ENV, "seed": seed,
                  "run_id": f"sac-s{seed}", "env_steps": 1000 * (i + 1), "train_s": 10.0 * (i + 1),
                  "return_mean": r, "episodes": 10} for i, r in enumerate(returns)]
    means = ll.seed_means(ll.plot_series(rows))
    # Only the env steps every ddrl seed reached; SB3's single seed keeps its own line.
    assert means == {("SAC", ENV, "ddrl"): {"env_steps": [1000, 2000], "seeds": 3,
                                            "return_mean": [200.0, 500.0],
                                            "train_s": [10.0, 20.0]}}
    labels = ll.plot(rows, tmp_path / "fig.png")
    assert labels == {("SAC", ENV): ["sb3 s1", "ddrl mean of 3 seeds"]}


def test_sb3_runs_are_shared_across_ddrl_only_settings(tmp_path):
    # SB3 always initialises orthogonally: a ddrl run with `initialization: orthogonal` has
    # the same SB3 counterpart as the run without it. A setting SB3 sees does not share.
    base = run_spec("PPO", ENV, seed=1, hyperparameters={"fcnet_hiddens": [32, 32]})
    ortho = run_spec("PPO", ENV, seed=1, hyperparameters={"fcnet_hiddens": [32, 32],
                                                          "initialization": "orthogonal"})
    assert base.run_id in ll.sb3_equivalents(ortho)
    assert ll.sb3_equivalents(base) == []  # fcnet_hiddens is SB3's net_arch
    sac_mse = run_spec("SAC", ENV, seed=1, hyperparameters={"critic_loss": "mse"})
    assert run_spec("SAC", ENV, seed=1).run_id in ll.sb3_equivalents(sac_mse)
    # Two ddrl-only settings at once (SB3's loss and warm-up): the spec without both, too.
    sac_sb3_like = run_spec("SAC", ENV, seed=1, hyperparameters={
        "critic_loss": "mse", "warmup_actions": "uniform", "tau": 0.02})
    found = ll.sb3_equivalents(sac_sb3_like)
    assert run_spec("SAC", ENV, seed=1, hyperparameters={"tau": 0.02}).run_id in found
    assert sac_mse.run_id not in found  # tau differs: SB3 sees it
    assert len(found) == 3 and len(set(found)) == 3

    path = tmp_path / "sb3" / base.run_id / "curve.csv"
    path.parent.mkdir(parents=True)
    curve = ll.Curve(path, "sb3", base)
    curve.add(1000, 1.0, 1.0, {"return_mean": 50.0, "episodes": 1})
    rows = ll.read_shared_sb3(tmp_path, {ortho.run_id: ortho, base.run_id: base})
    assert [(r["run_id"], r["sb3_run"], r["return_mean"]) for r in rows] == [
        (ortho.run_id, base.run_id, 50.0)]  # base has its own curve: not repeated


def test_restore_rebuilds_the_run_folders_a_report_csv_came_from(tmp_path):
    spec = run_spec("PPO", ENV, seed=1)
    runs = tmp_path / "runs"
    for fw, run_id, ret in (("ddrl", "ppo-new", 900.0), ("ddrl", "ppo-old", 300.0),
                            ("sb3", "ppo-new", 1000.0)):
        path = runs / fw / run_id / "curve.csv"
        path.parent.mkdir(parents=True)
        curve = ll.Curve(path, fw, spec)
        curve.add(1000, 1.0, 1.0, {"return_mean": ret / 2, "episodes": 1})
        curve.add(2000, 2.0, 2.0, {"return_mean": ret, "episodes": 1})
    (runs / "sb3" / "ppo-new" / "summary.json").write_text("{}")  # finished; the others not
    rows = ll.read_curves(runs, ["ppo-new"]) + ll.read_before(runs, ["ppo-old"])
    report_csv = tmp_path / "curves.csv"
    ll.write_curves_csv(rows, report_csv)

    restored = tmp_path / "restored"
    written = ll.restore(report_csv, restored)
    assert sorted(p.relative_to(restored).as_posix() for p in written) == [
        "ddrl/ppo-new", "ddrl/ppo-old.before", "sb3/ppo-new"]
    again = ll.read_curves(restored, ["ppo-new"]) + ll.read_before(restored, ["ppo-old.before"])
    key = ("framework", "run_id", "seed", "env_steps", "train_s", "return_mean", "finished")
    assert sorted(tuple(r[k] for k in key) for r in again) == sorted(
        tuple(r[k] for k in key) for r in rows)
    assert {(r["framework"], r["finished"]) for r in again} == {
        ("ddrl", False), ("sb3", True), (ll.BEFORE, False)}
    assert ll.restore(report_csv, restored) == []  # existing folders are left alone


def test_the_figures_axis_label_counts_the_episodes_the_rows_average():
    assert ll.evaluation_episodes_label([{"episodes": 10}, {"episodes": "10"}]) == "10"
    assert ll.evaluation_episodes_label([{"episodes": 5}, {"episodes": 10.0}]) == "5-10"
    assert ll.evaluation_episodes_label([{"episodes": ""}, {}]) == "?"
