"""bench/investigations/gil_threads.py: the small-op chain eager and scripted on one and two
threads, and SAC's gradient functions on half, whole and two halves of a minibatch."""

from __future__ import annotations

import json

import pytest
import torch

import gil_threads


@pytest.fixture(autouse=True)
def _restore_torch_threads():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_reports_both_measurements(tmp_path):
    out = tmp_path / "gil.json"
    assert gil_threads.main(["--rounds", "1", "--ops", "5", "--repeats", "3",
                             "--json", str(out)]) == 0
    (row,) = json.loads(out.read_text())["rows"]
    for mode in ("eager", "script"):
        timing = row["ops"][mode]
        assert timing["one_thread_s"] > 0 and timing["twice_on_two_threads_s"] > 0
        # The report rounds the speedup to 3 decimals and the times to 6.
        assert timing["speedup"] == pytest.approx(
            2 * timing["one_thread_s"] / timing["twice_on_two_threads_s"], rel=0.01, abs=6e-4)
    for phase in ("critic", "actor"):
        assert set(row["parts"][phase]) == {"half", "whole", "two_halves_side_by_side"}
        assert min(row["parts"][phase].values()) > 0


def test_rejects_nonpositive_counts():
    with pytest.raises(SystemExit):
        gil_threads.main(["--ops", "0"])
