"""Why two learner threads do not give 2x here: the GIL around small torch ops.

Two measurements, each printed as one line per round:

1. ``ops``: a chain of ``--ops`` small elementwise ops on a [128, 17] tensor, once on one
   thread, then twice the work on two threads, eager and under ``torch.jit.script`` (whose
   interpreter runs without the GIL). Speedup = 2 x one-thread time / two-thread time.
2. ``parts``: ddrl's SAC critic and actor gradient functions (humanoid shapes, [256, 256]) on
   half a minibatch alone, on the whole minibatch, and on the two halves side by side
   (``SplitBatch`` with 2 parts), in ms.

Usage::

    PYTHONPATH=src:bench .venv/bin/python bench/investigations/gil_threads.py --rounds 3
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
import warnings
from typing import Callable

import torch


def _chain(x, n: int):
    for _ in range(n):
        x = torch.tanh(x * 1.0001 + 0.001)
    return x


def _seconds(fn: Callable[[], object], repeats: int) -> float:
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    return time.perf_counter() - start


def _on_two_threads(fn: Callable[[], object], repeats: int) -> float:
    threads = [threading.Thread(target=_seconds, args=(fn, repeats)) for _ in range(2)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - start


def measure_ops(ops: int, repeats: int) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # torch.jit.script is deprecated
        scripted = torch.jit.script(_chain)
    x = torch.randn(128, 17)
    row = {}
    for name, fn in (("eager", lambda: _chain(x, ops)), ("script", lambda: scripted(x, ops))):
        _seconds(fn, 10)
        one = _seconds(fn, repeats)
        two = _on_two_threads(fn, repeats)
        row[name] = {"one_thread_s": round(one, 6), "twice_on_two_threads_s": round(two, 6),
                     "speedup": round(2 * one / two, 3)}
    return row


def measure_parts(repeats: int) -> dict:
    from learner_update import ACT_DIM, build_learner, random_transitions

    learner = build_learner("SAC", 2, 256)
    data = random_transitions(4 * 256)
    learner.update_from_transitions(data, 4, 256)
    step = learner.fast_step("default_policy")
    batch = {k: torch.as_tensor(v[:256]).float() for k, v in data.items() if k != "truncateds"}
    batch["next_noise"], batch["noise"] = torch.randn(256, ACT_DIM), torch.randn(256, ACT_DIM)
    half = {k: v[:128] for k, v in batch.items()}
    alpha = step.log_alpha.detach().exp()
    row = {}
    for name, fn in (("critic", step._critic_gradients), ("actor", step._actor_gradients)):
        cases = {"half": lambda: fn(half, 0.5, alpha), "whole": lambda: fn(batch, 1.0, alpha),
                 "two_halves_side_by_side":
                     lambda: step.split.map(lambda part, w: fn(part, w, alpha), batch)}
        row[name] = {}
        for case, call in cases.items():
            _seconds(call, 10)
            row[name][case] = round(_seconds(call, repeats) / repeats * 1e3, 3)
    return row


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--ops", type=int, default=200, help="ops in the chain")
    p.add_argument("--repeats", type=int, default=200)
    p.add_argument("--json", help="also write the measurements to this file")
    args = p.parse_args(argv)
    if min(args.rounds, args.ops, args.repeats) < 1:
        p.error("--rounds, --ops and --repeats must be >= 1")

    from harness.throughput import report_json

    rows = []
    for r in range(args.rounds):
        torch.set_num_threads(1)
        ops = measure_ops(args.ops, args.repeats)
        parts = measure_parts(args.repeats)
        rows.append({"round": r, "ops": ops, "parts": parts})
        print(f"round {r} ops: eager {ops['eager']['speedup']:.2f}x, script "
              f"{ops['script']['speedup']:.2f}x on 2 threads; parts (ms) critic "
              f"{parts['critic']}, actor {parts['actor']}", flush=True)
    report_json({"args": vars(args), "rows": rows}, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
