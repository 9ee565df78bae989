"""Measuring sampling: an env runner's ``sample()`` against a plain loop with the same policy.

Used by bench/sampling.py. Both measurements are functions of an RLlib env runner, so they
can run inside the (remote) env runner process through
``algo.env_runner_group.foreach_env_runner``: the plain loop then uses that runner's own
RLModule (same network, same weights, same torch threads) and the same env id, so the only
difference left is RLlib's machinery around the env and the module (connector pipelines,
episode bookkeeping, vector-env wrapping, metrics).

The plain loop does what a minimal hand-written sampler does per step: one batched
``forward_exploration`` of the module on the observation, a sample (and its log-prob, which
PPO needs) from the module's exploration distribution, the action clipped to the env's
bounds (as RLlib's ``NormalizeAndClipActions`` does for a [-1, 1] action space), one
``env.step``; a reset when the episode terminates or is truncated (the env's own
``TimeLimit``, as in RLlib).

Both report wall-clock steps/s (the figure that matters) and steps per CPU second of the
sampling thread (``time.thread_time``): on a shared machine other processes stretch the
wall time but not the CPU time, so the CPU ratio is the steadier comparison there.
"""

from __future__ import annotations

import cProfile
import io
import pstats
import time
from typing import Any, Mapping

import numpy as np


def run_spec(algorithm: str, env: str, seed: int = 0,
             hyperparameters: Mapping[str, Any] | None = None,
             resources: Mapping[str, int] | None = None) -> Any:
    """A RunSpec with the registry's defaults for everything not given (for benchmarks)."""
    from ddrl.algorithms import get_algorithm
    from ddrl.config.schema import RESOURCES
    from ddrl.runs import RunSpec

    res = {k: v["default"] for k, v in RESOURCES["properties"].items()}
    unknown = set(resources or {}) - set(res)
    if unknown:
        raise ValueError(f"unknown resource key(s) {sorted(unknown)}; expected {sorted(res)}")
    res.update(resources or {})
    return RunSpec(algorithm=algorithm, env=env, seed=seed, resources=res,
                   budget={"env_steps": 1},
                   hyperparameters=get_algorithm(algorithm).resolve(dict(hyperparameters or {})),
                   fault_tolerance={"max_env_runner_restarts": 0, "restart_delay_s": 1})


def _episode_stats(episodes: list) -> tuple[int, int, list[int]]:
    """(env steps, finished episodes, lengths of the finished ones) of sample()'s output."""
    steps = sum(len(e) for e in episodes)
    done = [e for e in episodes if e.is_done]
    return steps, len(done), [len(e) for e in done]


def _torch_threads() -> int:
    import torch

    return torch.get_num_threads()


def time_env_runner(runner: Any, steps: int, warmup_steps: int = 200,
                    profile_top: int = 0) -> dict[str, Any]:
    """Env steps/s of ``runner.sample()`` (default arguments, as training calls it).

    Calls it until at least ``steps`` env steps were returned, after ``warmup_steps`` of
    untimed sampling. Episode lengths are those of the finished episodes' chunks returned by
    the timed calls (an episode begun before the clock started counts only its timed steps). With ``profile_top``, the timed calls run under
    cProfile and the top rows (by cumulative time) come back as ``profile``.
    """
    if warmup_steps:
        runner.sample(num_timesteps=warmup_steps)
    prof = cProfile.Profile() if profile_top else None
    n = n_eps = calls = 0
    lengths: list[int] = []
    t0, c0 = time.perf_counter(), time.thread_time()
    if prof:
        prof.enable()
    while n < steps:
        s, e, lens = _episode_stats(runner.sample())
        n, n_eps, calls = n + s, n_eps + e, calls + 1
        lengths += lens
    if prof:
        prof.disable()
    elapsed, cpu = time.perf_counter() - t0, time.thread_time() - c0
    out = {"env_steps": n, "seconds": elapsed, "steps_per_s": n / elapsed,
           "cpu_s": cpu, "steps_per_cpu_s": n / cpu, "calls": calls,
           "episodes": n_eps, "mean_episode_len": float(np.mean(lengths)) if lengths else None,
           "num_envs": runner.num_envs, "torch_threads": _torch_threads()}
    if prof:
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(profile_top)
        out["profile"] = buf.getvalue()
    return out


def time_plain_loop(module: Any, env_id: str, steps: int, seed: int = 0,
                    warmup_steps: int = 200, env_config: Mapping[str, Any] | None = None
                    ) -> dict[str, Any]:
    """Env steps/s of a plain Python loop: ``module`` acting in one ``env_id`` env.

    ``module`` is an RLlib RLModule with a stochastic exploration distribution (e.g. PPO's
    default module on a Box action space).
    """
    import torch

    from ddrl.envs import make_env

    env = make_env(env_id, **dict(env_config or {}))
    low, high = env.action_space.low, env.action_space.high
    dist_cls = module.get_exploration_action_dist_cls()
    obs, _ = env.reset(seed=seed)
    n = n_eps = ep_len = 0
    lengths: list[int] = []
    t0 = None
    with torch.no_grad():
        while t0 is None or n < steps:
            if t0 is None and n >= warmup_steps:  # start the clock after the warm-up
                t0, c0, n, n_eps, lengths = time.perf_counter(), time.thread_time(), 0, 0, []
            out = module.forward_exploration(
                {"obs": torch.as_tensor(obs[None], dtype=torch.float32)})
            dist = dist_cls.from_logits(out["action_dist_inputs"])
            action = dist.sample()
            dist.logp(action)  # what a PPO sampler also keeps
            obs, _reward, terminated, truncated, _ = env.step(
                np.clip(action[0].numpy(), low, high))
            n, ep_len = n + 1, ep_len + 1
            if terminated or truncated:
                if t0 is not None:
                    n_eps += 1
                    lengths.append(ep_len)
                ep_len = 0
                obs, _ = env.reset()
    elapsed, cpu = time.perf_counter() - t0, time.thread_time() - c0
    env.close()
    return {"env_steps": n, "seconds": elapsed, "steps_per_s": n / elapsed,
            "cpu_s": cpu, "steps_per_cpu_s": n / cpu, "calls": 1,
            "episodes": n_eps, "mean_episode_len": float(np.mean(lengths)) if lengths else None,
            "num_envs": 1, "torch_threads": _torch_threads()}
