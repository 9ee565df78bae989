"""Malformed study configs, each with what its error message must say.

Every case is a change to ``base()`` (a valid two-run study); ``expect`` are substrings the
error must contain: the offending key and the values that would have been allowed.
"""

from __future__ import annotations

import copy
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable


def _root_conftest():
    """tests/conftest.py by path: the name ``conftest`` may be another folder's."""
    path = Path(__file__).resolve().parents[1] / "conftest.py"
    spec = importlib.util.spec_from_file_location("ddrl_tests_root_conftest", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


run_snakemake = _root_conftest().run_snakemake


def base() -> dict[str, Any]:
    return {
        "study": "bad",
        "checkpoint_every": 1,
        "hyperparameters": {"PPO": {"train_batch_size": 200, "fcnet_hiddens": [16]}},
        "experiments": [
            {"algorithms": ["PPO"], "envs": ["CartPole-v1"], "seeds": [1, 2],
             "resources": [{"num_env_runners": 1}], "budget": {"env_steps": 400}},
        ],
    }


@dataclass(frozen=True)
class Case:
    name: str
    change: Callable[[dict], Any]
    expect: tuple[str, ...]


def _set(path: str, value: Any) -> Callable[[dict], dict]:
    def change(cfg: dict) -> dict:
        node = cfg
        keys = path.split(".")
        for k in keys[:-1]:
            node = node[int(k)] if k.isdigit() else node[k]
        last = keys[-1]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value
        return cfg
    return change


def _drop(path: str) -> Callable[[dict], dict]:
    def change(cfg: dict) -> dict:
        node = cfg
        keys = path.split(".")
        for k in keys[:-1]:
            node = node[int(k)] if k.isdigit() else node[k]
        del node[keys[-1]]
        return cfg
    return change


def _duplicate_experiment(cfg: dict) -> dict:
    cfg["experiments"].append(copy.deepcopy(cfg["experiments"][0]))
    cfg["experiments"][1]["seeds"] = [2, 3]
    return cfg


CASES = [
    Case("unknown algorithm", _set("experiments.0.algorithms", ["PPO", "A3C"]),
         ("experiments.0.algorithms.1", "'A3C'", "expected one of", "PPO", "SAC")),
    Case("unknown env id", _set("experiments.0.envs", ["HumanoidBulletEnv-v9"]),
         ("experiments.0.envs", "unknown env id 'HumanoidBulletEnv-v9'", "HumanoidBulletEnv-v0")),
    Case("env module that does not exist", _set("experiments.0.envs", ["no_such_pkg:Foo-v0"]),
         ("experiments.0.envs", "cannot import module 'no_such_pkg'")),
    Case("relative env module", _set("experiments.0.envs", ["..envs:Foo-v0"]),
         ("experiments.0.envs", "must be an absolute module name", "module:EnvId")),
    Case("zero env runners", _set("experiments.0.resources.0.num_env_runners", 0),
         ("experiments.0.resources.0.num_env_runners", "0 is less than the minimum of 1")),
    Case("negative env runners", _set("experiments.0.resources.0.num_env_runners", -2),
         ("experiments.0.resources.0.num_env_runners", "-2 is less than the minimum of 1")),
    Case("zero envs per runner", _set("experiments.0.resources.0.num_envs_per_env_runner", 0),
         ("experiments.0.resources.0.num_envs_per_env_runner", "minimum of 1")),
    Case("negative GPUs", _set("experiments.0.resources.0.num_gpus_per_learner", -1),
         ("num_gpus_per_learner", "minimum of 0")),
    Case("unknown resource key", _set("experiments.0.resources.0.num_workers", 2),
         ("experiments.0.resources.0", "['num_workers']", "allowed keys", "num_env_runners")),
    Case("unknown hyperparameter", _set("hyperparameters.PPO.learning_rate", 0.1),
         ("hyperparameters.PPO", "unknown PPO hyperparameter(s) ['learning_rate']",
          "PPO accepts", "lr")),
    Case("hyperparameter of another algorithm",
         _set("hyperparameters.PPO.actor_lr", 0.001),
         ("unknown PPO hyperparameter(s) ['actor_lr']", "PPO accepts")),
    Case("hyperparameters for an unknown algorithm", _set("hyperparameters.DQN", {"lr": 1e-3}),
         ("hyperparameters", "unknown algorithm(s) ['DQN']", "PPO", "SAC")),
    Case("wrong type: learning rate as text", _set("hyperparameters.PPO.lr", "fast"),
         ("hyperparameters.PPO.lr", "'fast' is not of type 'number'")),
    Case("wrong type: seeds as a string", _set("experiments.0.seeds", "1,2"),
         ("experiments.0.seeds", "'1,2' is not of type 'array'")),
    Case("wrong type: seed as a float", _set("experiments.0.seeds", [1.5]),
         ("experiments.0.seeds.0", "1.5 is not of type 'integer'")),
    Case("wrong type: hidden sizes", _set("hyperparameters.PPO.fcnet_hiddens", 64),
         ("hyperparameters.PPO.fcnet_hiddens", "64 is not of type 'array'")),
    Case("wrong type: off-policy rhythm as text",
         _set("hyperparameters.SAC", {"sample_while_learning": "sometimes"}),
         ("hyperparameters.SAC.sample_while_learning", "'sometimes' is not of type 'boolean'")),
    Case("bad enum value", _set("hyperparameters.PPO.fcnet_activation", "sigmoid"),
         ("hyperparameters.PPO.fcnet_activation", "'sigmoid' is not allowed", "relu", "tanh")),
    Case("zero budget", _set("experiments.0.budget", {"env_steps": 0}),
         ("experiments.0.budget.env_steps", "0 is less than the minimum of 1")),
    Case("zero time budget", _set("experiments.0.budget", {"time_limit_s": 0}),
         ("experiments.0.budget.time_limit_s", "less than or equal to the minimum of 0")),
    Case("empty budget", _set("experiments.0.budget", {}),
         ("experiments.0.budget", "should be non-empty")),
    Case("missing budget", _drop("experiments.0.budget"),
         ("experiments.0", "'budget' is a required property")),
    Case("duplicate runs across experiments", _duplicate_experiment,
         ("duplicate run", "seed 2", "experiments.0 and experiments.1", "remove one")),
    Case("duplicate seeds in one experiment", _set("experiments.0.seeds", [1, 1]),
         ("experiments.0.seeds", "non-unique elements")),
    Case("zero checkpoint interval", _set("checkpoint_every", 0),
         ("checkpoint_every", "0 is less than the minimum of 1")),
    Case("bad on_missing_gpu", _set("on_missing_gpu", "ignore"),
         ("on_missing_gpu", "'ignore' is not allowed", "'error'", "'cpu'")),
    Case("negative restarts", _set("fault_tolerance", {"max_env_runner_restarts": -1}),
         ("fault_tolerance.max_env_runner_restarts", "minimum of 0")),
    Case("unknown top-level key", _set("experiment", []),
         ("unknown key(s) ['experiment']", "allowed keys", "experiments")),
    Case("study name with a slash", _set("study", "my/study"),
         ("study", "does not match")),
    Case("no experiments", _set("experiments", []),
         ("experiments", "should be non-empty")),
    Case("config is a list", lambda cfg: [cfg],
         ("expected a mapping at the top level, got list",)),
]

def _algo(algorithm: str, env: str = "CartPole-v1", **hp: Any) -> Callable[[dict], dict]:
    """The experiment trains ``algorithm`` on ``env`` with ``hp`` (study-wide)."""
    def change(cfg: dict) -> dict:
        cfg["experiments"][0].update(algorithms=[algorithm], envs=[env])
        cfg["hyperparameters"] = {algorithm: hp} if hp else {}
        return cfg
    return change


def _both(*changes: Callable[[dict], Any]) -> Callable[[dict], Any]:
    def change(cfg: dict) -> Any:
        for c in changes:
            cfg = c(cfg)
        return cfg
    return change


OFF = {"num_steps_sampled_before_learning_starts": 100}  # within base()'s 400-step budget

# What only a job used to find (ddrl.envs.spaces, ddrl.config.relations): each is now
# refused by Study.from_config, so by `ddrl validate` and before the DAG starts.
CASES += [
    # The algorithm against the env's spaces (read by building the env once; cached).
    Case("TD3 on discrete actions", _algo("TD3", **OFF),
         ("experiments.0 (TD3 on CartPole-v1)", "action space Discrete(2)",
          "TD3 needs continuous actions: a 1-D Box", "use PPO")),
    Case("SAC transition buffer on discrete actions", _algo("SAC", **OFF),
         ("experiments.0 (SAC on CartPole-v1)", "action space Discrete(2)", "1-D Box",
          "replay_buffer_type: EpisodeReplayBuffer")),
    Case("TD3 on another discrete-action task", _algo("TD3", "MountainCar-v0", **OFF),
         ("TD3 on MountainCar-v0", "action space Discrete(3)", "continuous actions")),
    Case("discrete observations", _set("experiments.0.envs", ["FrozenLake-v1"]),
         ("experiments.0 (PPO on FrozenLake-v1)", "observation space Discrete(16)",
          "1-D Box observation space")),
    Case("tuple observations", _set("experiments.0.envs", ["Blackjack-v1"]),
         ("PPO on Blackjack-v1", "observation space Tuple(", "1-D Box observation space")),
    Case("SAC episode buffer on discrete observations",
         _algo("SAC", "Taxi-v3", replay_buffer_type="EpisodeReplayBuffer", **OFF),
         ("SAC on Taxi-v3", "observation space Discrete(500)", "1-D Box")),
    Case("env_config the env does not take", _set("experiments.0.env_config", {"gravity": 1}),
         ("experiments.0 (PPO on CartPole-v1)", "cannot be built", "env_config={'gravity': 1}",
          "unexpected keyword argument 'gravity'")),
    # Hyperparameters that contradict each other.
    Case("PPO minibatch larger than the train batch",
         _set("hyperparameters.PPO.minibatch_size", 500),
         ("PPO.minibatch_size=500 is larger than PPO.train_batch_size=200",
          "allowed: minibatch_size <= 200")),
    Case("PPO default minibatch vs an experiment's small train batch",
         _set("experiments.0.hyperparameters", {"PPO": {"train_batch_size": 100}}),
         ("experiments.0", "PPO.minibatch_size=128 is larger than PPO.train_batch_size=100")),
    Case("PPO rollout fragment that cannot fill the train batch",
         _set("hyperparameters.PPO.rollout_fragment_length", 64),
         ("PPO.rollout_fragment_length=64 x num_env_runners=1 x num_envs_per_env_runner=1",
          "PPO.train_batch_size=200", "allowed: rollout_fragment_length: auto or 200")),
    Case("PPO rollout fragment vs envs per runner",
         _both(_set("hyperparameters.PPO.rollout_fragment_length", 50),
               _set("experiments.0.resources.0.num_envs_per_env_runner", 8)),
         ("rollout_fragment_length=50 x num_env_runners=1 x num_envs_per_env_runner=8",
          "auto or 25")),
    Case("SAC minibatch larger than the replay buffer",
         _algo("SAC", "Pendulum-v1", train_batch_size=512, replay_buffer_capacity=256, **OFF),
         ("SAC.train_batch_size=512 is larger than SAC.replay_buffer_capacity=256",
          "allowed: train_batch_size <= 256")),
    Case("TD3 warm-up longer than the replay buffer",
         _algo("TD3", "Pendulum-v1", num_steps_sampled_before_learning_starts=300,
               replay_buffer_capacity=256, train_batch_size=64),
         ("TD3.num_steps_sampled_before_learning_starts=300 is larger than "
          "TD3.replay_buffer_capacity=256", "allowed: <= 256")),
    Case("SAC learning starts after the budget", _algo("SAC", "Pendulum-v1"),
         ("SAC.num_steps_sampled_before_learning_starts=1000 is not less than "
          "budget.env_steps=400", "before its first update", "allowed: < 400")),
    Case("SAC n-step returns with the transition buffer",
         _algo("SAC", "Pendulum-v1", n_step=3, **OFF),
         ("SAC.n_step=3 with replay_buffer_type=TransitionReplayBuffer", "allowed: n_step: 1",
          "EpisodeReplayBuffer")),
    Case("SAC squared-error critic loss on RLlib's episode-buffer path",
         _algo("SAC", "Pendulum-v1", critic_loss="mse", replay_buffer_type="EpisodeReplayBuffer",
               **OFF),
         ("SAC.critic_loss=mse with replay_buffer_type=EpisodeReplayBuffer", "own Huber loss",
          "allowed: critic_loss: huber, or replay_buffer_type: TransitionReplayBuffer")),
    Case("SAC uniform warm-up on RLlib's episode-buffer path",
         _algo("SAC", "Pendulum-v1", warmup_actions="uniform",
               replay_buffer_type="EpisodeReplayBuffer", **OFF),
         ("SAC.warmup_actions=uniform with replay_buffer_type=EpisodeReplayBuffer",
          "allowed: warmup_actions: policy, or replay_buffer_type: TransitionReplayBuffer")),
    Case("TD3 target noise clipped to zero",
         _algo("TD3", "Pendulum-v1", target_noise_clip=0, **OFF),
         ("TD3.target_noise=0.2 with target_noise_clip=0", "allowed: target_noise_clip > 0")),
]

# Resources this machine can never hold (ddrl.study.preflight.check_local_cpus, the local
# profile): (change, number of CPUs the runners ask for). Refused by `ddrl validate --local`
# and by the workflow before any job; valid as configs (a Slurm profile may run them).
MACHINE_CASES = [
    ("64 env runners", _set("experiments.0.resources.0.num_env_runners", 64), 64),
    ("one runner with 64 CPUs", _set("experiments.0.resources.0.num_cpus_per_env_runner", 64), 64),
]

# YAML text that does not parse, with the line the error must name.
YAML_ERRORS = [
    ("unclosed bracket", "study: bad\nexperiments:\n  - algorithms: [PPO\n    envs: [CartPole-v1]\n",
     "line 4"),
    ("tab indentation", "study: bad\nexperiments:\n\t- algorithms: [PPO]\n", "line 3"),
    ("bad mapping", "study: bad\nexperiments: [\n  {algorithms: [PPO], envs: CartPole-v1: x}\n]\n",
     "line 3"),
]

# A GPU request on a machine without one: an error, or (on_missing_gpu: cpu) a warning.
def gpu_request(fallback: bool) -> dict:
    cfg = _set("experiments.0.resources.0.num_gpus_per_learner", 1)(base())
    if fallback:
        cfg["on_missing_gpu"] = "cpu"
    return cfg
