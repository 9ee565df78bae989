"""Learning that holds up: ddrl's SAC, TD3 and PPO against Stable-Baselines3 on locomotion.

The runs are those of a ddrl study config (default ``config/bench-locomotion.yaml``): each
run spec is trained either by ddrl, through its production path
(``ddrl.training.train.train_run`` on the registry's RLlib config, checkpoints, then
``ddrl.agents.policy.load_run_policy`` on each checkpoint), or by Stable-Baselines3 with the
same hyperparameters translated by :func:`sb3_settings`. Both are evaluated by ONE function,
:func:`evaluate_act`: ``ddrl.agents.evaluate.evaluate_policy`` playing deterministic
episodes on the run's held-out evaluation seeds (``ddrl.agents.evaluate.eval_seeds``), so
the same seeds, env construction and episode loop serve both frameworks; only the policy
callable (``obs -> action``) differs. ddrl is evaluated at each checkpoint (every
``checkpoint_every`` iterations), SB3 from a callback at the same env-step interval, after
that step's update. Each evaluation is appended to ``curve.csv`` at once, so a killed run
keeps its curve.

Output layout (``--out``, default ``/work/locomotion-runs``)::

    <out>/<framework>/<run_id>/curve.csv     one row per evaluation (CURVE_COLUMNS)
    <out>/<framework>/<run_id>/summary.json  written when the run finishes
    <out>/<framework>/<run_id>/ddrl/         the ddrl run folder (checkpoints, progress.csv)

Commands::

    python bench/learning_locomotion.py list                          # the study's runs
    python bench/learning_locomotion.py run --framework ddrl --run <run_id>
    python bench/learning_locomotion.py run --framework sb3 --run <run_id>
    python bench/learning_locomotion.py run --framework sb3 --run <run_id> --steps 2000  # smoke
    python bench/learning_locomotion.py report --md table.md --csv curves.csv --png fig.png
    python bench/learning_locomotion.py restore --csv docs/img/bench-locomotion-curves.csv

``train_s`` is training wall time without the evaluations (ddrl: the sum of its iterations'
times; SB3: wall time of ``learn`` minus the callback's evaluations). A ddrl run resumes from
its last checkpoint when rerun (``train_run``); an SB3 run starts again.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import io
import itertools
import json
import math
import os
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / "config" / "bench-locomotion.yaml"
# Run folders: <out>/<framework>/<run_id>/ (the cluster Snakefile uses the same place).
OUT = REPO / "results" / "bench-locomotion" / "bench"
FRAMEWORKS = ("ddrl", "sb3")
# An earlier ddrl run of a cell (before a fix), shown next to the current one: in the table
# and the figure, never in the comparison.
BEFORE = "ddrl before"
EPISODES = 10
CURVE_COLUMNS = ["framework", "algorithm", "env", "seed", "run_id", "env_steps", "train_s",
                 "wall_s", "return_mean", "return_std", "return_min", "return_max",
                 "length_mean", "episodes"]


# -- the study's runs ------------------------------------------------------------------------

def study_runs(config: str | Path | Mapping[str, Any] = CONFIG) -> dict[str, Any]:
    """Run id -> RunSpec of the study's learning experiments (config order)."""
    from ddrl.study.study import Study

    study = (Study.from_config(config) if isinstance(config, Mapping)
             else Study.from_file(config))
    return {rid: study.runs[rid] for rid in study.experiment_runs("learning")}


def steps_per_iteration(spec: Any) -> int:
    """Env steps of one ddrl iteration (what a checkpoint interval is made of)."""
    hp = spec.hyperparameters
    if spec.algorithm == "PPO":
        return int(hp["train_batch_size"])
    frag = int(hp["rollout_fragment_length"]) * spec.resources["num_envs_per_env_runner"]
    frag *= spec.resources["num_env_runners"]
    return int(math.ceil(hp["timesteps_per_iteration"] / frag) * frag)


def eval_interval(spec: Any) -> int:
    """Env steps between evaluations: ddrl's checkpoint interval."""
    return spec.checkpoint_every * steps_per_iteration(spec)


# -- one evaluation protocol for both frameworks ---------------------------------------------

def evaluate_act(act: Callable[[np.ndarray], np.ndarray], spec: Any,
                 episodes: int = EPISODES) -> dict[str, Any]:
    """Deterministic return of ``act`` on ``spec``'s held-out evaluation seeds.

    ``ddrl.agents.evaluate.evaluate_policy`` (ddrl's own evaluation loop: a fresh env made by
    ``ddrl.envs.make_env``, one episode per seed from ``reset(seed=...)``), given any
    policy callable; ddrl's and SB3's policies both go through here.
    """
    from ddrl.agents.evaluate import eval_seeds, evaluate_policy, summarize

    seeds = eval_seeds(spec, episodes)
    policy = SimpleNamespace(env=spec.env, act=act)
    returns, lengths = evaluate_policy(policy, seeds, dict(spec.env_config))
    return {**summarize(returns, lengths), "episodes": len(seeds), "returns": returns,
            "eval_seeds": seeds}


def sb3_act(model: Any) -> Callable[[np.ndarray], np.ndarray]:
    """An SB3 model's deterministic action for one observation (env units)."""
    def act(obs: np.ndarray) -> np.ndarray:
        action, _ = model.predict(obs, deterministic=True)
        return action
    return act


class Curve:
    """``curve.csv`` of one run, rewritten after every evaluation (survives a kill)."""

    def __init__(self, path: Path, framework: str, spec: Any) -> None:
        self.path = Path(path)
        # The folder is named by the study's run id (a smoke test's budget changes the spec's).
        self.base = {"framework": framework, "algorithm": spec.algorithm, "env": spec.env,
                     "seed": spec.seed, "run_id": self.path.parent.name}
        self.rows: list[dict[str, Any]] = []
        if self.path.exists():
            self.rows = list(csv.DictReader(self.path.open()))

    def has(self, env_steps: int) -> bool:
        return any(int(float(r["env_steps"])) == int(env_steps) for r in self.rows)

    def add(self, env_steps: int, train_s: float, wall_s: float, ev: Mapping[str, Any]) -> None:
        row = {**self.base, "env_steps": int(env_steps), "train_s": round(train_s, 2),
               "wall_s": round(wall_s, 2), **{k: ev[k] for k in CURVE_COLUMNS if k in ev}}
        self.rows.append(row)
        self.rows.sort(key=lambda r: int(float(r["env_steps"])))
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=CURVE_COLUMNS, lineterminator="\n",
                           extrasaction="ignore")
        w.writeheader()
        w.writerows(self.rows)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(buf.getvalue())
        os.replace(tmp, self.path)


# -- ddrl ------------------------------------------------------------------------------------

def run_ddrl(spec: Any, out: Path, episodes: int = EPISODES,
             print_fn: Callable[[str], None] = print) -> dict[str, Any]:
    """Train ``spec`` with ddrl's ``train_run``; evaluate each checkpoint as it appears."""
    from ddrl.agents.evaluate import curve_checkpoints
    from ddrl.agents.policy import load_run_policy
    from ddrl.runs import RunFolder
    from ddrl.training.train import train_run

    out.mkdir(parents=True, exist_ok=True)
    run_dir = out / "ddrl"
    curve = Curve(out / "curve.csv", "ddrl", spec)
    train_time: dict[int, float] = {}  # iteration -> training seconds so far
    progress = RunFolder(run_dir).work_progress_csv
    if progress.exists():  # a resumed run: the earlier sessions' times
        for r in csv.DictReader(progress.open()):
            train_time[int(float(r["iteration"]))] = float(r["time_total_s"])
    t0 = time.perf_counter()

    def evaluate(path: Path, manifest: Mapping[str, Any]) -> None:
        steps = int(manifest["env_steps"])
        if curve.has(steps):
            return
        policy = load_run_policy(spec, run_dir, path)
        ev = evaluate_act(policy.act, spec, episodes)
        it = int(manifest["iteration"])
        curve.add(steps, train_time.get(it, math.nan), time.perf_counter() - t0, ev)
        print_fn(f"eval ddrl {spec.run_id} env_steps={steps} return={ev['return_mean']:.1f}")

    def on_iteration(row: Mapping[str, Any]) -> None:
        train_time[int(row["iteration"])] = float(row["time_total_s"])
        for path, manifest in curve_checkpoints(run_dir, spec.run_id):
            evaluate(path, manifest)

    record = train_run(spec, run_dir, keep_checkpoints=0, print_fn=print_fn,
                       on_iteration=on_iteration)
    for path, manifest in curve_checkpoints(run_dir, spec.run_id):
        evaluate(path, manifest)
    from ddrl.training import checkpoints
    evaluate(RunFolder(run_dir).checkpoint,
             checkpoints.read_manifest(RunFolder(run_dir).checkpoint))
    return {"env_steps": record["result"]["env_steps"],
            "train_s": record["result"]["time_total_s"],
            "wall_s": time.perf_counter() - t0}


# -- Stable-Baselines3 -----------------------------------------------------------------------

# How SB3's SAC/TD3 interleave acting and training (``run --sb3-train-freq``): an update
# after every env step (the study's comparison), or ddrl's rhythm, ``rollout_fragment_length``
# steps then their updates (the RL Zoo's PyBullet SAC trains 8 every 8).
SB3_EVERY_STEP, SB3_PER_FRAGMENT = "step", "fragment"
SB3_TRAIN_FREQS = (SB3_EVERY_STEP, SB3_PER_FRAGMENT)


def sb3_settings(spec: Any, train_freq: str = SB3_EVERY_STEP
                 ) -> tuple[str, dict[str, Any], list[str]]:
    """SB3 class name, its keyword arguments, and what still differs from ddrl's spec.

    ``updates_per_step`` updates per env step for SAC/TD3: after every step
    (``train_freq=1``), or with ``train_freq="fragment"`` a fragment's worth after every
    ``rollout_fragment_length`` steps, as ddrl trains.
    """
    hp = spec.hyperparameters
    algo = spec.algorithm
    if train_freq not in SB3_TRAIN_FREQS:
        raise ValueError(f"train_freq must be one of {SB3_TRAIN_FREQS}, got {train_freq!r}")
    every = hp.get("rollout_fragment_length", 1) if train_freq == SB3_PER_FRAGMENT else 1
    if algo in ("SAC", "TD3") and every * hp["updates_per_step"] != round(
            every * hp["updates_per_step"]):
        raise ValueError(f"SB3 trains whole updates: {every} steps x updates_per_step "
                         f"{hp['updates_per_step']} is not an integer")
    if algo == "SAC":
        if not (hp["actor_lr"] == hp["critic_lr"] == hp["alpha_lr"]):
            raise ValueError("SB3's SAC has one learning rate; the spec's differ")
        kwargs = dict(learning_rate=hp["actor_lr"], buffer_size=hp["replay_buffer_capacity"],
                      batch_size=hp["train_batch_size"], gamma=hp["gamma"], tau=hp["tau"],
                      learning_starts=hp["num_steps_sampled_before_learning_starts"],
                      train_freq=every, gradient_steps=round(every * hp["updates_per_step"]),
                      ent_coef=f"auto_{hp['initial_alpha']}",
                      target_entropy="auto" if hp["target_entropy"] == "auto"
                      else hp["target_entropy"],
                      policy_kwargs={"net_arch": list(hp["fcnet_hiddens"])})
        from ddrl.algorithms import get_algorithm

        diffs = [_sampling_difference(hp, every)]
        if get_algorithm("SAC").setting(hp, "warmup_actions") != "uniform":
            diffs.insert(0, "warm-up actions: ddrl samples the initial stochastic policy, SB3 "
                            "uniform random actions (warmup_actions: uniform matches it)")
        if get_algorithm("SAC").setting(hp, "critic_loss") == "huber":
            diffs.insert(0, "critic loss: ddrl (RLlib's) Huber (delta 1) summed over the twin "
                            "Qs, SB3 0.5 x MSE summed (critic_loss: mse matches it)")
        return "SAC", kwargs, diffs
    if algo == "TD3":
        if hp["actor_lr"] != hp["critic_lr"]:
            raise ValueError("SB3's TD3 has one learning rate; the spec's differ")
        if list(hp["actor_hiddens"]) != list(hp["critic_hiddens"]):
            raise ValueError("this runner gives SB3 one net_arch; the spec's differ")
        kwargs = dict(learning_rate=hp["actor_lr"], buffer_size=hp["replay_buffer_capacity"],
                      batch_size=hp["train_batch_size"], gamma=hp["gamma"], tau=hp["tau"],
                      learning_starts=hp["num_steps_sampled_before_learning_starts"],
                      train_freq=every, gradient_steps=round(every * hp["updates_per_step"]),
                      policy_delay=hp["policy_delay"],
                      target_policy_noise=hp["target_noise"],
                      target_noise_clip=hp["target_noise_clip"],
                      action_noise_std=hp["exploration_noise"],
                      policy_kwargs={"net_arch": list(hp["actor_hiddens"])})
        diffs = [_sampling_difference(hp, every)]
        return "TD3", kwargs, diffs
    if algo == "PPO":
        kwargs = dict(learning_rate=hp["lr"], n_steps=hp["train_batch_size"],
                      batch_size=hp["minibatch_size"], n_epochs=hp["num_epochs"],
                      gamma=hp["gamma"], gae_lambda=hp["lambda_"], clip_range=hp["clip_param"],
                      ent_coef=hp["entropy_coeff"], vf_coef=hp["vf_loss_coeff"],
                      max_grad_norm=hp["grad_clip"] if hp["grad_clip"] else 1e9,
                      policy_kwargs={"net_arch": {"pi": list(hp["fcnet_hiddens"]),
                                                  "vf": list(hp["fcnet_hiddens"])},
                                     "activation_fn": hp["fcnet_activation"]})
        from ddrl.algorithms import get_algorithm

        diffs = ["advantage normalisation: SB3 per minibatch, RLlib over the train batch",
                 "value loss: RLlib clips at vf_clip_param (set huge here), SB3 none"]
        if get_algorithm("PPO").setting(hp, "initialization") != "orthogonal":
            diffs.insert(0, "initialisation: SB3 orthogonal (gain 0.01 on the policy layer), "
                            "ddrl RLlib's (torch's default; initialization: orthogonal "
                            "matches SB3)")
        if not hp["free_log_std"]:
            diffs.append("log std: ddrl's policy net outputs it per state (free_log_std "
                         "false); SB3 learns one state-independent parameter")
        if hp["use_kl_loss"]:
            diffs.append("ddrl adds RLlib's adaptive KL penalty; SB3 has none")
        return "PPO", kwargs, diffs
    raise ValueError(f"no SB3 counterpart for {algo}")


def _sampling_difference(hp: Mapping[str, Any], sb3_every: int) -> str:
    ddrl = (f"ddrl samples fragments of {hp['rollout_fragment_length']} steps and trains their "
            "updates in one call, the env runner sampling the next fragment meanwhile (policy "
            "lag up to 2 fragments)")
    if sb3_every == 1:
        return ddrl + "; SB3 acts with the latest policy"
    return ddrl + f"; SB3 trains after every {sb3_every} steps (policy lag up to 1 fragment)"


def build_sb3(spec: Any, env: Any, train_freq: str = SB3_EVERY_STEP) -> Any:
    import stable_baselines3 as sb3
    import torch
    from stable_baselines3.common.noise import NormalActionNoise

    name, kwargs, _ = sb3_settings(spec, train_freq)
    kwargs = dict(kwargs)
    if "action_noise_std" in kwargs:
        std = kwargs.pop("action_noise_std")
        n = env.action_space.shape[0]
        # ddrl's noise is in normalised [-1, 1] action units; SB3 adds it in env units
        # (Bullet locomotion actions are [-1, 1], so the two agree there).
        scale = (env.action_space.high - env.action_space.low) / 2.0
        kwargs["action_noise"] = NormalActionNoise(np.zeros(n), std * scale)
    pk = dict(kwargs.get("policy_kwargs", {}))
    if isinstance(pk.get("activation_fn"), str):
        pk["activation_fn"] = {"tanh": torch.nn.Tanh, "relu": torch.nn.ReLU,
                               "elu": torch.nn.ELU, "silu": torch.nn.SiLU}[pk["activation_fn"]]
    kwargs["policy_kwargs"] = pk
    return getattr(sb3, name)("MlpPolicy", env, seed=spec.seed, device="cpu", verbose=0,
                              **kwargs)


def run_sb3(spec: Any, out: Path, episodes: int = EPISODES,
            print_fn: Callable[[str], None] = print,
            train_freq: str = SB3_EVERY_STEP) -> dict[str, Any]:
    """Train ``spec`` with SB3; evaluate every :func:`eval_interval` env steps."""
    from stable_baselines3.common.callbacks import BaseCallback

    from ddrl.envs import make_env

    out.mkdir(parents=True, exist_ok=True)
    curve = Curve(out / "curve.csv", "sb3", spec)
    curve.rows = []  # an SB3 run starts again
    env = make_env(spec.env, **dict(spec.env_config))
    model = build_sb3(spec, env, train_freq)
    every = eval_interval(spec)
    budget = int(spec.budget["env_steps"])

    class Evaluate(BaseCallback):
        """Evaluates at the first rollout start at or after each interval: after the update
        of that step (off-policy) or of that rollout (PPO), as ddrl's checkpoints are."""

        def __init__(self) -> None:
            super().__init__()
            self.next = every
            self.eval_s = 0.0
            self.t0 = time.perf_counter()

        def evaluate(self) -> None:
            t = time.perf_counter()
            ev = evaluate_act(sb3_act(self.model), spec, episodes)
            self.eval_s += time.perf_counter() - t
            wall = time.perf_counter() - self.t0
            curve.add(self.num_timesteps, wall - self.eval_s, wall, ev)
            print_fn(f"eval sb3 {spec.run_id} env_steps={self.num_timesteps} "
                     f"return={ev['return_mean']:.1f} train_s={wall - self.eval_s:.0f}",)

        def _on_rollout_start(self) -> None:
            if self.num_timesteps >= self.next:
                self.evaluate()
                while self.next <= self.num_timesteps:
                    self.next += every

        def _on_step(self) -> bool:
            return True

    cb = Evaluate()
    model.learn(total_timesteps=budget, callback=cb)
    if not curve.has(model.num_timesteps):
        cb.evaluate()
    env.close()
    wall = time.perf_counter() - cb.t0
    return {"env_steps": int(model.num_timesteps), "train_s": wall - cb.eval_s, "wall_s": wall}


# -- results ---------------------------------------------------------------------------------

def read_curves(root: Path, run_ids: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """Every evaluation in ``<root>/<framework>/<run_id>/curve.csv``; with ``run_ids``, only
    those runs (the study's current ids: a changed hyperparameter leaves the old run's folder
    behind under its old id)."""
    keep = None if run_ids is None else set(run_ids)
    rows = []
    for path in sorted(Path(root).glob("*/*/curve.csv")):
        if keep is not None and path.parent.name not in keep:
            continue
        for r in csv.DictReader(path.open()):
            rows.append({**r, "seed": int(r["seed"]), "env_steps": int(float(r["env_steps"])),
                         "train_s": float(r["train_s"]), "wall_s": float(r["wall_s"]),
                         "return_mean": float(r["return_mean"]),
                         "finished": (path.parent / "summary.json").exists()})
    return rows


def read_study_curves(study_root: Path) -> list[dict[str, Any]]:
    """ddrl's curves from the main workflow's outputs (``evaluation.intermediate: true``):
    ``<study_root>/runs/<run_id>/eval_curve.csv`` (the same held-out seeds and episodes as
    :func:`evaluate_act`), training seconds from the run's ``progress.csv``."""
    rows = []
    for path in sorted(Path(study_root).glob("runs/*/eval_curve.csv")):
        run_dir = path.parent
        record = json.loads((run_dir / "run.json").read_text())
        spec = record["spec"]
        times = {int(float(r["iteration"])): float(r["time_total_s"])
                 for r in csv.DictReader((run_dir / "progress.csv").open())}
        for r in csv.DictReader(path.open()):
            rows.append({"framework": "ddrl", "algorithm": spec["algorithm"],
                         "env": spec["env"], "seed": int(spec["seed"]),
                         "run_id": run_dir.name, "env_steps": int(float(r["env_steps"])),
                         "train_s": times.get(int(float(r["iteration"])), math.nan),
                         "wall_s": math.nan, "return_mean": float(r["return_mean"]),
                         "return_std": r["return_std"], "episodes": r["episodes"],
                         "finished": True})
    return rows


def read_before(root: Path, run_ids: Iterable[str]) -> list[dict[str, Any]]:
    """ddrl's curves of earlier runs (``<root>/ddrl/<run_id>``), relabelled :data:`BEFORE`."""
    run_ids = list(run_ids)
    missing = [rid for rid in run_ids if not (Path(root) / "ddrl" / rid / "curve.csv").exists()]
    if missing:
        raise FileNotFoundError(f"no ddrl curve.csv under {root}/ddrl for {sorted(missing)}")
    rows = [r for r in read_curves(root, run_ids) if r["framework"] == "ddrl"]
    return [{**r, "framework": BEFORE} for r in rows]


def sb3_equivalents(spec: Any) -> list[str]:
    """Run ids of the specs that differ from ``spec`` only in hyperparameters SB3 does not
    see (:func:`sb3_settings` translates them to the same SB3 arguments), one or several at
    a time, fewest first. An SB3 run under one of them is this run's SB3 run too: ddrl-only
    settings (a new ``initialization``, a critic loss and warm-up) change ddrl's run id, not
    what SB3 trains."""
    from ddrl.algorithms import get_algorithm

    algo = get_algorithm(spec.algorithm)
    defaults = algo.defaults()
    kwargs = sb3_settings(spec)[1]

    def without(names: Iterable[str]) -> Any:
        overrides = {k: v for k, v in spec.hyperparameters.items() if k not in names}
        return dataclasses.replace(spec, hyperparameters=algo.resolve(overrides))

    def same_for_sb3(other: Any) -> bool:
        try:
            return sb3_settings(other)[1] == kwargs
        except ValueError:  # the default has no SB3 translation
            return False

    invisible = [name for name, value in spec.hyperparameters.items()
                 if value != defaults.get(name) and same_for_sb3(without([name]))]
    ids = []
    for size in range(1, len(invisible) + 1):
        for names in itertools.combinations(invisible, size):
            other = without(names)
            if same_for_sb3(other) and other.run_id not in ids:
                ids.append(other.run_id)
    return ids


def read_shared_sb3(root: Path, runs: Mapping[str, Any]) -> list[dict[str, Any]]:
    """SB3 curves of study runs that have none under their own id, taken from an equivalent
    run (:func:`sb3_equivalents`), relabelled with the study's run id (``sb3_run`` keeps the
    id the SB3 run was trained under)."""
    rows = []
    for rid, spec in runs.items():
        if (Path(root) / "sb3" / rid / "curve.csv").exists():
            continue
        for other in sb3_equivalents(spec):
            found = [r for r in read_curves(root, [other]) if r["framework"] == "sb3"]
            if found:
                rows += [{**r, "run_id": rid, "sb3_run": other} for r in found]
                break
    return rows


def write_curves_csv(rows: Iterable[Mapping[str, Any]], path: Path) -> None:
    """All evaluation points (CURVE_COLUMNS and whether the run had finished), sorted by
    cell; :func:`restore` reads it back."""
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=[*CURVE_COLUMNS, "finished"], extrasaction="ignore",
                           lineterminator="\n")
        w.writeheader()
        w.writerows(sorted(rows, key=lambda r: (r["algorithm"], r["env"], r["framework"],
                                                r["seed"], r["env_steps"])))
    tmp.replace(path)


def restore(csv_path: Path, root: Path) -> list[Path]:
    """Rebuild ``<root>/<framework>/<run_id>/curve.csv`` from a report's ``--csv`` (e.g. the
    committed docs/img/bench-locomotion-curves.csv) for runs whose folders are gone, so a
    later report can show them beside new runs. :data:`BEFORE` runs go to
    ``ddrl/<run_id>.before`` (pass that to ``--before``). A finished run (``finished`` column;
    CSVs from before that column held finished runs only) gets a ``summary.json`` naming the
    CSV. Existing folders are left alone."""
    groups: dict[Path, list[dict[str, str]]] = {}
    for r in csv.DictReader(Path(csv_path).open()):
        fw, name = r["framework"], r["run_id"]
        if fw == BEFORE:
            fw, name = "ddrl", f"{name}.before"
        if fw not in FRAMEWORKS:
            raise ValueError(f"{csv_path}: unknown framework {r['framework']!r}; expected one "
                             f"of {[*FRAMEWORKS, BEFORE]}")
        groups.setdefault(Path(root) / fw / name, []).append({**r, "framework": fw})
    written = []
    for folder, rows in sorted(groups.items()):
        if folder.exists():
            continue
        folder.mkdir(parents=True)
        tmp = folder / "curve.csv.tmp"
        with tmp.open("w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=CURVE_COLUMNS, extrasaction="ignore",
                               lineterminator="\n")
            w.writeheader()
            w.writerows(sorted(rows, key=lambda r: int(float(r["env_steps"]))))
        tmp.replace(folder / "curve.csv")
        if rows[0].get("finished", "True") == "True":
            (folder / "summary.json").write_text(json.dumps({"restored_from": str(csv_path)}))
        written.append(folder)
    return written


def cell_runs(rows: Iterable[Mapping[str, Any]]) -> dict[tuple, list[Mapping[str, Any]]]:
    """Rows grouped by (algorithm, env, seed, framework). Raises if a group holds two run ids:
    their curves would be merged into one (e.g. a run and its predecessor under an old id)."""
    groups: dict[tuple, list[Mapping[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["algorithm"], r["env"], int(r["seed"]), r["framework"]), []).append(r)
    for key, rs in groups.items():
        ids = sorted({r["run_id"] for r in rs if r.get("run_id")})
        if len(ids) > 1:
            raise ValueError(
                f"{len(ids)} runs for one cell {key}: {ids}; report one run per algorithm, "
                "task, seed and framework (pass the study's run ids, see `list`)")
    return groups


def summary_table(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per (algorithm, env, seed, framework): final and best evaluation return, the
    env steps and training seconds at the last evaluation, evaluations so far."""
    groups = cell_runs(rows)
    out = []
    for (algo, env, seed, fw), rs in sorted(groups.items()):
        rs = sorted(rs, key=lambda r: int(r["env_steps"]))
        best = max(rs, key=lambda r: float(r["return_mean"]))
        last = rs[-1]
        out.append({"algorithm": algo, "env": env, "seed": seed, "framework": fw,
                    "final_return": float(last["return_mean"]),
                    "best_return": float(best["return_mean"]),
                    "best_at_steps": int(best["env_steps"]),
                    "env_steps": int(last["env_steps"]), "train_s": float(last["train_s"]),
                    "evaluations": len(rs), "finished": bool(last.get("finished", True))})
    return out


def return_at(rows: Sequence[Mapping[str, Any]], steps: int) -> float:
    """Evaluation return at ``steps`` env steps, linear between evaluation points (NaN
    outside the curve)."""
    rs = sorted(rows, key=lambda r: int(r["env_steps"]))
    xs = [int(r["env_steps"]) for r in rs]
    if not xs or steps < xs[0] or steps > xs[-1]:
        return math.nan
    return float(np.interp(steps, xs, [float(r["return_mean"]) for r in rs]))


def compare(rows: Iterable[Mapping[str, Any]], ratio: float = 0.9) -> list[dict[str, Any]]:
    """Per (algorithm, env): ddrl's and SB3's mean over seeds of the return at the last env
    step both reached, their ratio, and whether ddrl keeps up: ddrl >= ``ratio`` x SB3, or
    inside SB3's seed spread (min over seeds) when SB3 has more than one seed. Returns on
    these tasks can be negative early on; the ratio is then not meaningful (None) and the
    verdict uses the difference against the spread only. ``finished`` is false while a run
    of the cell is still going (the verdict is then provisional)."""
    cells: dict[tuple, dict[str, dict[int, list]]] = {}
    for (algo, env, seed, fw), rs in cell_runs(rows).items():
        cells.setdefault((algo, env), {}).setdefault(fw, {})[seed] = rs
    out = []
    for (algo, env), fws in sorted(cells.items()):
        if not {"ddrl", "sb3"} <= set(fws):
            continue
        common = min(max(int(r["env_steps"]) for rs in fws[fw].values() for r in rs)
                     for fw in ("ddrl", "sb3"))
        at = {fw: [return_at(rs, common) for rs in fws[fw].values()] for fw in ("ddrl", "sb3")}
        at = {fw: [v for v in vs if not math.isnan(v)] for fw, vs in at.items()}
        if not at["ddrl"] or not at["sb3"]:
            continue
        d, s = float(np.mean(at["ddrl"])), float(np.mean(at["sb3"]))
        # Less at the mercy of one evaluation: each framework's mean return over SB3's
        # evaluation points up to the common env steps (ddrl's curve interpolated there).
        grid = sorted({int(r["env_steps"]) for rs in fws["sb3"].values() for r in rs
                       if int(r["env_steps"]) <= common})
        curve = {fw: float(np.nanmean([np.nanmean([return_at(rs, x) for x in grid])
                                       for rs in fws[fw].values()]))
                 for fw in ("ddrl", "sb3")}
        r_ = d / s if s > 0 else None
        spread_low = min(at["sb3"]) if len(at["sb3"]) > 1 else None
        keeps = (r_ is not None and r_ >= ratio) or (spread_low is not None and d >= spread_low)
        done = all(bool(r.get("finished", True)) for fw in ("ddrl", "sb3")
                   for rs in fws[fw].values() for r in rs)
        out.append({"algorithm": algo, "env": env, "env_steps": common, "ddrl": d, "sb3": s,
                    "ratio": r_, "ddrl_curve_mean": curve["ddrl"], "sb3_curve_mean": curve["sb3"],
                    "curve_points": len(grid),
                    "ddrl_seeds": len(at["ddrl"]), "sb3_seeds": len(at["sb3"]),
                    "keeps_up": bool(keeps), "finished": done,
                    **seed_statistics(fws, common, grid)})
    return out


def seed_statistics(fws: Mapping[str, Mapping[int, Sequence[Mapping[str, Any]]]], common: int,
                    grid: Sequence[int]) -> dict[str, Any]:
    """Per-seed finals and curve means of both frameworks at ``common`` env steps, their
    interquartile means, 95% bootstrap intervals of the ddrl/SB3 ratios, and how many ddrl
    seeds end below SB3's worst seed."""
    from ddrl.analysis.seed_stats import bootstrap_ratio_interval, interquartile_mean

    finals = {fw: {seed: return_at(rs, common) for seed, rs in sorted(fws[fw].items())}
              for fw in ("ddrl", "sb3")}
    curves = {fw: {seed: float(np.nanmean([return_at(rs, x) for x in grid]))
                   for seed, rs in sorted(fws[fw].items())} for fw in ("ddrl", "sb3")}
    stats: dict[str, Any] = {}
    for name, per_seed in (("final", finals), ("curve", curves)):
        values = {fw: [v for v in per_seed[fw].values() if not math.isnan(v)]
                  for fw in ("ddrl", "sb3")}
        stats[f"{name}_per_seed"] = per_seed
        stats[f"{name}_iqm"] = {fw: interquartile_mean(values[fw]) for fw in values}
        stats[f"{name}_ratio_ci"] = bootstrap_ratio_interval(values["ddrl"], values["sb3"])
        if name == "final":
            worst = min(values["sb3"], default=math.nan)
            stats["ddrl_seeds_below_sb3_worst"] = sum(v < worst for v in values["ddrl"])
    return stats


def markdown(table: Sequence[Mapping[str, Any]], comparison: Sequence[Mapping[str, Any]]) -> str:
    lines = ["| algorithm | task | seed | framework | final return | best return (at env steps) "
             "| env steps | training time | status |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in table:
        lines.append(
            f"| {r['algorithm']} | {r['env']} | {r['seed']} | {r['framework']} | "
            f"{r['final_return']:.1f} | {r['best_return']:.1f} ({r['best_at_steps']:,}) | "
            f"{r['env_steps']:,} | {r['train_s'] / 60:.1f} min | "
            f"{'finished' if r['finished'] else 'partial'} |")
    lines += ["", "| algorithm | task | at env steps | ddrl | SB3 | ddrl / SB3 | keeps up "
              "| mean over the curve: ddrl, SB3 (points) |",
              "|---|---|---|---|---|---|---|---|"]
    for c in comparison:
        ratio = f"{c['ratio']:.2f}" if c["ratio"] is not None else "n/a"
        verdict = "yes" if c["keeps_up"] else "**no**"
        if not c.get("finished", True):
            verdict = "(runs unfinished)"
        lines.append(f"| {c['algorithm']} | {c['env']} | {c['env_steps']:,} | {c['ddrl']:.1f} | "
                     f"{c['sb3']:.1f} | {ratio} | {verdict} | "
                     f"{c['ddrl_curve_mean']:.1f}, {c['sb3_curve_mean']:.1f} ({c['curve_points']}) |")
    lines += ["", "| algorithm | task | seeds ddrl, SB3 | final IQM ddrl, SB3 | final ratio, 95% CI "
              "| curve-mean IQM ddrl, SB3 | curve ratio, 95% CI | ddrl seeds below SB3's worst |",
              "|---|---|---|---|---|---|---|---|"]
    for c in comparison:
        cells = []
        for name, mean_d, mean_s in (("final", c["ddrl"], c["sb3"]),
                                     ("curve", c["ddrl_curve_mean"], c["sb3_curve_mean"])):
            iqm, (lo, hi) = c[f"{name}_iqm"], c[f"{name}_ratio_ci"]
            ratio = f"{mean_d / mean_s:.2f}" if mean_s > 0 else "n/a"
            cells += [f"{iqm['ddrl']:.1f}, {iqm['sb3']:.1f}",
                      f"{ratio} [{lo:.2f}, {hi:.2f}]" if not math.isnan(lo) else f"{ratio} [n/a]"]
        lines.append(f"| {c['algorithm']} | {c['env']} | {c['ddrl_seeds']}, {c['sb3_seeds']} | "
                     f"{' | '.join(cells)} | {c['ddrl_seeds_below_sb3_worst']} |")
    return "\n".join(lines) + "\n"


def plot_series(rows: Sequence[Mapping[str, Any]]) -> dict[tuple, dict[str, list[float]]]:
    """The figure's lines: (algorithm, env, framework, seed) -> env steps, training seconds
    and returns, in env-step order; frameworks in :data:`FRAMEWORKS` order, then
    :data:`BEFORE`."""
    order = {fw: i for i, fw in enumerate((*FRAMEWORKS, BEFORE))}
    series: dict[tuple, dict[str, list[float]]] = {}
    for (algo, env, seed, fw), rs in sorted(cell_runs(rows).items(),
                                            key=lambda kv: (kv[0][:2], order[kv[0][3]], kv[0][2])):
        rs = sorted(rs, key=lambda r: int(r["env_steps"]))
        series[(algo, env, fw, seed)] = {
            "env_steps": [int(r["env_steps"]) for r in rs],
            "train_s": [float(r["train_s"]) for r in rs],
            "return_mean": [float(r["return_mean"]) for r in rs]}
    return series


# From this many seeds of a framework in one cell, the figure draws each seed thin and their
# mean thick (one legend entry), so that eight seeds a side stay readable.
MEAN_FROM_SEEDS = 3


def seed_means(series: Mapping[tuple, Mapping[str, list[float]]]
               ) -> dict[tuple, dict[str, Any]]:
    """(algorithm, env, framework) -> the mean over its seeds of the return and training
    seconds at the env steps every one of its seeds evaluated, and the seed count; only
    for cells with at least :data:`MEAN_FROM_SEEDS` seeds of that framework."""
    groups: dict[tuple, list[Mapping[str, list[float]]]] = {}
    for (algo, env, fw, _seed), line in series.items():
        groups.setdefault((algo, env, fw), []).append(line)
    out = {}
    for key, lines in groups.items():
        if len(lines) < MEAN_FROM_SEEDS or key[2] == BEFORE:
            continue
        grid = sorted(set.intersection(*(set(line["env_steps"]) for line in lines)))
        at = [{x: i for i, x in enumerate(line["env_steps"])} for line in lines]
        out[key] = {"env_steps": grid, "seeds": len(lines),
                    **{k: [float(np.mean([line[k][a[x]] for line, a in zip(lines, at)]))
                           for x in grid] for k in ("return_mean", "train_s")}}
    return out


def evaluation_episodes_label(rows: Sequence[Mapping[str, Any]]) -> str:
    """How many deterministic episodes each plotted point averages, from the rows themselves
    ("10", or "5-10" when the runs differ; "?" when no row says)."""
    counts = sorted({int(float(r["episodes"])) for r in rows if r.get("episodes") not in (None, "")})
    if not counts:
        return "?"
    return str(counts[0]) if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"


def plot(rows: Sequence[Mapping[str, Any]], png: Path) -> dict[tuple, list[str]]:
    """The figure: return against env steps (top) and training time (bottom), one column per
    cell. Returns each cell's legend labels."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cells = sorted({(r["algorithm"], r["env"]) for r in rows})
    if not cells:
        return {}
    fig, axes = plt.subplots(2, len(cells), figsize=(3.6 * len(cells), 6.2), squeeze=False)
    styles = {"ddrl": ("tab:blue", "o-"), "sb3": ("tab:orange", "o-"),
              BEFORE: ("tab:gray", "o--")}
    series = plot_series(rows)
    means = seed_means(series)

    def draw(j: int, line: Mapping[str, list[float]], style: str, **kw: Any) -> None:
        axes[0, j].plot([x / 1e3 for x in line["env_steps"]], line["return_mean"], style, **kw)
        axes[1, j].plot([t / 60 for t in line["train_s"]], line["return_mean"], style, **kw)

    for (algo, env, fw, seed), line in series.items():
        j = cells.index((algo, env))
        color, style = styles[fw]
        if (algo, env, fw) in means:  # one thin line per seed under the mean
            draw(j, line, "-", lw=0.7, alpha=0.35, color=color)
            continue
        if seed != 1 and fw != BEFORE:  # later seeds: same colour, other marker and dash
            style = "s:"
        draw(j, line, style, ms=3, color=color, label=f"{fw} s{seed}")
    for (algo, env, fw), line in means.items():
        draw(cells.index((algo, env)), line, "o-", ms=3, lw=2.0, color=styles[fw][0],
             label=f"{fw} mean of {line['seeds']} seeds")
    for j, (algo, env) in enumerate(cells):
        axes[0, j].set_title(f"{algo} {env.replace('BulletEnv-v0', '')}", fontsize=9)
        axes[0, j].set_xlabel("env steps (k)", fontsize=8)
        axes[1, j].set_xlabel("training time (min, shared machine)", fontsize=8)
        for ax in axes[:, j]:
            ax.tick_params(labelsize=7)
            ax.grid(alpha=0.3)
    ylabel = f"eval return ({evaluation_episodes_label(rows)} det. episodes)"
    axes[0, 0].set_ylabel(ylabel, fontsize=8)
    axes[1, 0].set_ylabel(ylabel, fontsize=8)
    for ax in axes[0]:
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=110)
    labels = {cell: axes[0, j].get_legend_handles_labels()[1] for j, cell in enumerate(cells)}
    plt.close(fig)
    return labels


# -- CLI -------------------------------------------------------------------------------------

def _limit_threads() -> None:
    """One torch thread per process (fair to SB3 and to others sharing the machine)."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("MKL_NUM_THREADS", "1")
    os.environ.setdefault("DDRL_LEARNER_THREADS", "1")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    import torch

    torch.set_num_threads(1)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    ls = sub.add_parser("list", help="the study's learning runs")
    ls.add_argument("--config", default=str(CONFIG))
    run = sub.add_parser("run", help="train and evaluate one run with one framework")
    run.add_argument("--config", default=str(CONFIG))
    run.add_argument("--framework", choices=FRAMEWORKS, required=True)
    run.add_argument("--run", required=True, help="run id (see `list`)")
    run.add_argument("--out", default=str(OUT))
    run.add_argument("--episodes", type=int, default=EPISODES)
    run.add_argument("--steps", type=int, help="override the budget (smoke tests)")
    run.add_argument("--eval-every-iterations", type=int,
                     help="override checkpoint_every (smoke tests)")
    run.add_argument("--sb3-train-freq", choices=SB3_TRAIN_FREQS, default=SB3_EVERY_STEP,
                     help="SB3 off-policy runs: an update after every env step (the study's "
                     "comparison) or a fragment's updates after every rollout_fragment_length "
                     "steps, as ddrl trains; give such runs their own --out")
    res = sub.add_parser("restore", help="rebuild run folders' curve.csv from a report's CSV")
    res.add_argument("--csv", required=True, help="a report's --csv (all evaluation points)")
    res.add_argument("--out", default=str(OUT))
    rep = sub.add_parser("report", help="table, comparison and figure from the curves")
    rep.add_argument("--config", default=str(CONFIG))
    rep.add_argument("--out", default=str(OUT))
    rep.add_argument("--all-runs", action="store_true",
                     help="every run under --out, not only the study's current run ids")
    rep.add_argument("--ddrl-study", help="take ddrl's curves from the main workflow's "
                     "results/<study> (eval_curve.csv) instead of <out>/ddrl")
    rep.add_argument("--before", action="append", default=[], metavar="RUN_ID",
                     help="an earlier ddrl run under <out>/ddrl (before a fix) to show as "
                     f"{BEFORE!r} in the table and figure, not in the comparison (repeatable)")
    rep.add_argument("--md")
    rep.add_argument("--csv", help="all evaluation points (the figure's source data)")
    rep.add_argument("--png")
    args = p.parse_args(argv)

    if args.cmd == "list":
        for rid, spec in study_runs(args.config).items():
            print(rid, spec.algorithm, spec.env, spec.seed, spec.budget["env_steps"],
                  f"eval every {eval_interval(spec)} env steps")
        return 0
    if args.cmd == "run":
        _limit_threads()
        runs = study_runs(args.config)
        if args.run not in runs:
            raise SystemExit(f"unknown run {args.run!r}; the study has {list(runs)}")
        spec = runs[args.run]
        if args.steps:
            spec = dataclasses.replace(spec, budget={**spec.budget, "env_steps": args.steps})
        if args.eval_every_iterations:
            spec = dataclasses.replace(spec, checkpoint_every=args.eval_every_iterations)
        out = Path(args.out) / args.framework / args.run
        if args.framework == "ddrl" and args.sb3_train_freq != SB3_EVERY_STEP:
            p.error("--sb3-train-freq applies to --framework sb3")
        print_line = lambda s: print(s, flush=True)  # noqa: E731
        started = time.time()
        if args.framework == "ddrl":
            result = run_ddrl(spec, out, args.episodes, print_fn=print_line)
        else:
            result = run_sb3(spec, out, args.episodes, print_fn=print_line,
                             train_freq=args.sb3_train_freq)
        summary = {"framework": args.framework, "run_id": args.run, "spec": spec.to_dict(),
                   **result, "started": started, "finished": time.time(),
                   "torch_threads": 1}
        if args.framework == "sb3":
            name, kwargs, diffs = sb3_settings(spec, args.sb3_train_freq)
            summary["sb3"] = {"class": name, "kwargs": kwargs, "differences": diffs}
        (out / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
        print(json.dumps({k: v for k, v in summary.items() if k != "spec"}, default=str))
        return 0
    if args.cmd == "restore":
        for folder in restore(Path(args.csv), Path(args.out)):
            print("restored", folder)
        return 0
    runs = study_runs(args.config)
    rows = read_curves(Path(args.out), None if args.all_runs else runs)
    if not args.all_runs:
        rows += read_shared_sb3(Path(args.out), runs)
    if args.ddrl_study:
        rows = [r for r in rows if r["framework"] != "ddrl"]
        rows += read_study_curves(Path(args.ddrl_study))
    rows += read_before(Path(args.out), args.before)
    table, comp = summary_table(rows), compare(rows)
    text = markdown(table, comp)
    print(text)
    if args.md:
        Path(args.md).write_text(text)
    if args.csv:
        write_curves_csv(rows, Path(args.csv))
    if args.png:
        plot(rows, Path(args.png))
    return 0


if __name__ == "__main__":
    sys.exit(main())
