"""The off-policy update schedule is a named setting: part of the run id, checked against
the settings it excludes. (The updates each schedule trains per iteration are asserted on
real SAC and TD3 runs with 1 and 2 runners in tests/workflow/test_thesis_mini.py.)"""

from __future__ import annotations

import pytest

from ddrl.runs import RunSpec
from ddrl.training.train import build_algorithm_config
from helpers.specs import unit_spec


def _spec(algorithm: str, schedule: str, **hp) -> RunSpec:
    return unit_spec(algorithm, {"update_schedule": schedule, **hp})


@pytest.mark.parametrize("algorithm", ["SAC", "TD3"])
def test_update_schedule_is_part_of_the_run_id(algorithm):
    a, b = (_spec(algorithm, s) for s in ("rllib1_round_robin", "fixed_ratio"))
    assert a.run_id != b.run_id


@pytest.mark.parametrize("algorithm", ["SAC", "TD3"])
def test_round_robin_refuses_an_update_ratio(algorithm):
    config = build_algorithm_config(_spec(algorithm, "rllib1_round_robin", updates_per_step=0.5))
    with pytest.raises(ValueError, match="applies to the fixed_ratio schedule only"):
        config.validate()


def test_round_robin_needs_the_transition_buffer():
    config = build_algorithm_config(_spec("SAC", "rllib1_round_robin",
                                          replay_buffer_type="EpisodeReplayBuffer"))
    with pytest.raises(ValueError, match="needs the TransitionReplayBuffer"):
        config.validate()


@pytest.mark.parametrize("algorithm", ["SAC", "TD3"])
def test_both_schedules_validate(algorithm):
    for schedule in ("rllib1_round_robin", "fixed_ratio"):
        build_algorithm_config(_spec(algorithm, schedule)).validate()
