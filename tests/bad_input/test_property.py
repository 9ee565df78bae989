"""Property: any config is either accepted (and then plans with `snakemake -n`) or rejected
with a ConfigError message. Nothing else escapes validation."""

from __future__ import annotations

import copy
import math
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cases import base, run_snakemake  # noqa: E402

from ddrl.errors import ConfigError  # noqa: E402
from ddrl.study.preflight import check_local_cpus, check_local_gpus  # noqa: E402
from ddrl.study.study import Study  # noqa: E402

PATHS = [
    ("study",), ("checkpoint_every",), ("on_missing_gpu",), ("fault_tolerance",),
    ("fault_tolerance", "max_env_runner_restarts"), ("hyperparameters",),
    ("hyperparameters", "PPO"), ("hyperparameters", "PPO", "lr"),
    ("hyperparameters", "PPO", "fcnet_hiddens"), ("hyperparameters", "PPO", "num_epochs"),
    ("hyperparameters", "SAC"), ("experiments",), ("experiments", 0),
    ("experiments", 0, "algorithms"), ("experiments", 0, "envs"), ("experiments", 0, "seeds"),
    ("experiments", 0, "resources"), ("experiments", 0, "resources", 0),
    ("experiments", 0, "resources", 0, "num_env_runners"),
    ("experiments", 0, "resources", 0, "num_gpus_per_learner"),
    ("experiments", 0, "budget"), ("experiments", 0, "budget", "env_steps"),
    ("experiments", 0, "budget", "time_limit_s"), ("experiments", 0, "checkpoint_every"),
    ("experiments", 0, "env_config"), ("experiments", 0, "hyperparameters"), ("extra",),
]
WORDS = ["PPO", "SAC", "TD3", "DQN", "CartPole-v1", "Pendulum-v1", "InvertedPendulumBulletEnv-v0",
         "NoSuchEnv-v0", "gymnasium:CartPole-v1", "..rel:Env-v0", ":", "auto", "cpu", "error",
         "lr", "seeds", "num_env_runners", "env_steps", ""]
KEYS = st.sampled_from(["lr", "env_steps", "time_limit_s", "num_env_runners", "PPO", "SAC",
                        "algorithms", "envs", "seeds", "budget", "x"])
leaf = (st.none() | st.booleans() | st.integers(-3, 3000) | st.sampled_from(WORDS)
        | st.floats(allow_nan=True, allow_infinity=True) | st.text(alphabet="abcV0.:-_ ", max_size=8))
value = st.recursive(leaf, lambda c: st.lists(c, max_size=3) | st.dictionaries(KEYS, c, max_size=3),
                     max_leaves=6)
DELETE = object()
mutation = st.tuples(st.sampled_from(PATHS), value | st.just(DELETE)) | st.tuples(
    st.just(("experiments", 0, "envs")), st.lists(leaf, min_size=1, max_size=2))


def mutate(cfg: dict, changes) -> dict:
    cfg = copy.deepcopy(cfg)
    for path, new in changes:
        node = cfg
        try:
            for key in path[:-1]:
                node = node[key]
            if new is DELETE:
                del node[path[-1]]
            else:
                node[path[-1]] = new
        except (KeyError, IndexError, TypeError):
            continue  # the path no longer exists after an earlier change
    return cfg


def check(cfg: dict) -> Study | None:
    """Accepted -> the Study; rejected -> None. Anything but ConfigError propagates."""
    try:
        study = Study.from_config(cfg)
        check_local_cpus(study.runs)  # the local profile refuses these too
        check_local_gpus(study.runs)
        return study
    except ConfigError as err:
        assert str(err).strip(), "empty error message"
        return None


ACCEPTED: dict[str, dict] = {}


@settings(max_examples=300, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(mutation, min_size=1, max_size=3))
@example([(("experiments", 0, "envs"), ["..rel:Env-v0"])])  # once a TypeError from importlib
@example([(("experiments", 0, "resources", 0, "num_gpus_per_learner"), 2)])
def test_random_configs_are_accepted_or_rejected_with_a_message(changes):
    cfg = mutate(base(), changes)
    study = check(cfg)
    if study is not None:
        assert study.runs, "an accepted config has runs"
        key = yaml.safe_dump(cfg, sort_keys=True)
        if "time_limit_s" not in key or "inf" not in key:  # plannable as written in YAML
            ACCEPTED.setdefault(",".join(sorted(study.runs)), cfg)


def test_accepted_random_configs_plan(tmp_path):
    """A few of the accepted ones through `snakemake -n`: each plans one train job a run."""
    if not ACCEPTED:
        test_random_configs_are_accepted_or_rejected_with_a_message()
    picks = [cfg for cfg in ACCEPTED.values() if cfg != base()][:2] or [base()]

    def plan(i_cfg):
        i, cfg = i_cfg
        workdir = tmp_path / f"plan{i}"
        workdir.mkdir()
        (workdir / "c.yaml").write_text(yaml.safe_dump(cfg))
        return cfg, run_snakemake(workdir, workdir / "c.yaml", "-n", "--quiet", "rules",
                                  check=False, timeout=300)

    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(plan, enumerate(picks)))
    for cfg, proc in results:
        out = proc.stdout + proc.stderr
        assert proc.returncode == 0, f"accepted config did not plan:\n{yaml.safe_dump(cfg)}\n{out}"
        runs = len(Study.from_config(cfg).runs)
        assert f"train {runs}" in " ".join(out.split()), out
