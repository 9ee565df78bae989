"""bench/time_to_return.py: the per-seed time to a return, from real curves (the committed
locomotion study's) and from a tiny side-by-side run of both frameworks."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pytest
import yaml

import learning_locomotion as ll
import time_to_return as ttr

REPO = Path(__file__).resolve().parents[2]
CURVES = REPO / "docs" / "img" / "bench-locomotion-curves.csv"


@pytest.fixture(scope="module")
def restored(tmp_path_factory):
    root = tmp_path_factory.mktemp("curves")
    ll.restore(CURVES, root)
    return root


def first_crossing(framework, algorithm, env, seed, threshold):
    """The committed CSV's first evaluation of one run at or above ``threshold``, read
    directly (an independent reading of what the benchmark must report)."""
    rows = sorted((r for r in csv.DictReader(CURVES.open())
                   if (r["framework"], r["algorithm"], r["env"], int(r["seed"]))
                   == (framework, algorithm, env, seed)),
                  key=lambda r: int(float(r["env_steps"])))
    for r in rows:
        if float(r["return_mean"]) >= threshold:
            return int(float(r["env_steps"])), float(r["train_s"])
    return None, None


def test_report_gives_each_seeds_first_crossing_and_the_median_speedup(restored, tmp_path):
    md, out_csv = tmp_path / "t.md", tmp_path / "t.csv"
    assert ttr.main(["report", "--out", str(restored), "--config", str(ll.CONFIG),
                     "--md", str(md), "--csv", str(out_csv)]) == 0
    rows = list(csv.DictReader(out_csv.open()))
    hopper = [r for r in rows if (r["algorithm"], r["env"]) == ("SAC", "HopperBulletEnv-v0")]
    assert sorted((r["framework"], int(r["seed"])) for r in hopper) == [
        (fw, s) for fw in ("ddrl", "sb3") for s in range(1, 9)]
    for r in hopper:
        steps, secs = first_crossing(r["framework"], "SAC", "HopperBulletEnv-v0",
                                     int(r["seed"]), 1500.0)
        assert float(r["threshold"]) == 1500.0
        assert (r["reached"] == "True") == (steps is not None)
        if steps is not None:
            assert int(r["env_steps_to_return"]) == steps
            assert float(r["seconds_to_return"]) == pytest.approx(secs)
    cell = next(c for c in ttr.speedups(ttr.seed_rows(ll.read_curves(restored, ll.study_runs(
        ll.CONFIG)), ttr.THRESHOLDS)) if (c["algorithm"], c["env"]) == ("SAC", "HopperBulletEnv-v0"))
    # An unreached seed counts with its final training seconds (the ratio is then a bound).
    by_fw = {fw: [float(r["seconds_to_return"] if r["reached"] == "True" else r["final_train_s"])
                  for r in hopper if r["framework"] == fw] for fw in ("ddrl", "sb3")}
    expected = float(np.median(by_fw["sb3"]) / np.median(by_fw["ddrl"]))
    assert cell["speedup"] == pytest.approx(expected)
    lo, hi = cell["speedup_ci"]
    assert lo <= hi and not math.isnan(lo)
    assert "| SAC | HopperBulletEnv-v0 | 1500 |" in md.read_text()


def test_a_seed_that_never_reaches_the_threshold_is_censored_at_its_final_time():
    rows = [{"framework": fw, "algorithm": "SAC", "env": "E", "seed": 1, "run_id": f"{fw}-1",
             "env_steps": s, "train_s": t, "return_mean": r}
            for fw, pts in (("ddrl", [(100, 10.0, 5.0), (200, 20.0, 60.0)]),
                            ("sb3", [(100, 40.0, 5.0), (200, 80.0, 30.0)]))
            for s, t, r in pts]
    per_seed = ttr.seed_rows(rows, {}, default_threshold=50.0)
    ddrl, sb3 = (next(r for r in per_seed if r["framework"] == fw) for fw in ("ddrl", "sb3"))
    assert (ddrl["reached"], ddrl["env_steps_to_return"], ddrl["seconds_to_return"]) == (True, 200, 20.0)
    assert (sb3["reached"], sb3["seconds_to_return"]) == (False, None)
    assert ddrl["curve_mean"] == pytest.approx((5.0 + 60.0) / 2)
    (cell,) = ttr.speedups(per_seed)
    assert cell["censored"] and cell["speedup"] == pytest.approx(80.0 / 20.0)
    with pytest.raises(SystemExit, match="threshold"):
        ttr.seed_rows(rows, {})


def test_run_trains_both_frameworks_side_by_side_on_a_tiny_budget(tmp_path):
    config = {
        "study": "ttr-smoke", "checkpoint_every": 1,
        "evaluation": {"episodes": 2, "intermediate": True},
        "hyperparameters": {"SAC": {"train_batch_size": 32, "fcnet_hiddens": [16, 16],
                                    "num_steps_sampled_before_learning_starts": 64,
                                    "timesteps_per_iteration": 128,
                                    "rollout_fragment_length": 8}},
        "experiments": [{"name": "smoke", "purpose": "learning", "outputs": ["eval"],
                         "algorithms": ["SAC"], "envs": ["InvertedPendulumBulletEnv-v0"],
                         "seeds": [1], "budget": {"env_steps": 256}}],
    }
    path = tmp_path / "smoke.yaml"
    path.write_text(yaml.safe_dump(config))
    out = tmp_path / "runs"
    assert ttr.main(["run", "--config", str(path), "--algorithm", "SAC", "--env",
                     "InvertedPendulumBulletEnv-v0", "--out", str(out), "--episodes", "2"]) == 0
    md = tmp_path / "t.md"
    assert ttr.main(["report", "--out", str(out), "--threshold", "1", "--md", str(md),
                     "--csv", str(tmp_path / "t.csv")]) == 0
    rows = list(csv.DictReader((tmp_path / "t.csv").open()))
    assert sorted(r["framework"] for r in rows) == ["ddrl", "sb3"]
    for r in rows:  # a return of 1 is reached at the first evaluation (every episode lasts)
        assert r["reached"] == "True" and int(r["env_steps_to_return"]) == 128
        assert float(r["seconds_to_return"]) > 0 and int(r["final_env_steps"]) >= 256
