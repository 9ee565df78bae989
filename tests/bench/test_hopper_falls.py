"""bench/investigations/hopper_falls.py: which evaluations count as falls, and the longest
stretch of them."""

from __future__ import annotations

import csv

import hopper_falls


def _curve(points):
    return [{"env_steps": s, "return_mean": r, "length_mean": n} for s, r, n in points]


def test_falls_count_after_the_warm_up_and_measure_the_longest_stretch():
    curve = _curve([(10_000, 20, 8),                       # warm-up: ignored
                    (20_000, 880, 1000), (30_000, 150, 90), (40_000, 160, 95),
                    (50_000, 1800, 1000), (60_000, 170, 100), (70_000, 2100, 1000)])
    f = hopper_falls.falls(curve, after=10_000, short=150)
    assert f == {"falling": 3, "evaluations": 6, "longest_steps": 20_000}


def test_a_run_that_ends_falling_counts_its_last_stretch_and_none_is_zero():
    ends = _curve([(20_000, 900, 1000), (30_000, 150, 80), (40_000, 140, 70)])
    assert hopper_falls.falls(ends, after=10_000, short=150)["longest_steps"] == 20_000
    never = _curve([(20_000, 900, 1000), (30_000, 1500, 700)])
    assert hopper_falls.falls(never, after=10_000, short=150) == {
        "falling": 0, "evaluations": 2, "longest_steps": 0}


def test_a_gait_is_held_by_the_mean_return_after_its_first_crossing():
    curve = _curve([(10_000, 20, 8), (20_000, 1600, 1000), (30_000, 400, 200),
                    (40_000, 2000, 1000)])
    assert hopper_falls.held(curve, 1500) == (20_000, 1200.0)
    found, after = hopper_falls.held(curve, 1900)
    assert found == 40_000 and after != after  # nothing after the crossing: NaN
    assert hopper_falls.held(curve, 5000)[0] is None


def test_the_table_has_one_row_per_framework_and_seed(tmp_path, capsys):
    import learning_locomotion as ll

    runs = {rid: s for rid, s in ll.study_runs(ll.CONFIG).items()
            if s.algorithm == "SAC" and s.env == "HopperBulletEnv-v0" and s.seed == 1}
    (rid,) = runs
    for fw, lengths in (("ddrl", (1000, 90)), ("sb3", (1000, 1000))):
        d = tmp_path / fw / rid
        d.mkdir(parents=True)
        with (d / "curve.csv").open("w", newline="") as fh:
            w = csv.DictWriter(fh, ["framework", "algorithm", "env", "seed", "run_id",
                                    "env_steps", "train_s", "wall_s", "return_mean",
                                    "length_mean"])
            w.writeheader()
            for steps, n in zip((30_000, 40_000), lengths):
                w.writerow({"framework": fw, "algorithm": "SAC", "env": "HopperBulletEnv-v0",
                            "seed": 1, "run_id": rid, "env_steps": steps, "train_s": 1.0, "wall_s": 1.0,
                            "return_mean": 900.0 if n == 1000 else 150.0, "length_mean": n})
    assert hopper_falls.main(["--out", str(tmp_path)]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]
    assert rows[1:] == ["| ddrl | 1 | 900/1000 150/90 | 1 of 2 | 10,000 | never | - |",
                        "| sb3 | 1 | 900/1000 900/1000 | 0 of 2 | 0 | never | - |"]
