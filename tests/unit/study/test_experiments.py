"""Experiments declare what they are for: learning and timing runs stay apart, and timing
runs skip render and export unless asked."""

from __future__ import annotations

import pytest

from ddrl.study.study import Study
from ddrl.errors import ConfigError


def _config(**timing):
    return {
        "study": "t",
        "experiments": [
            {"name": "learn", "purpose": "learning", "algorithms": ["PPO"],
             "envs": ["CartPole-v1"], "seeds": [1], "budget": {"env_steps": 1000}},
            {"name": "time", "purpose": "timing", "algorithms": ["PPO"], "envs": ["CartPole-v1"],
             "seeds": [1], "resources": [{"num_env_runners": 1}, {"num_env_runners": 2}],
             "budget": {"env_steps": 500}, **timing},
            {"algorithms": ["PPO"], "envs": ["CartPole-v1"], "seeds": [2],
             "budget": {"env_steps": 700}},
        ],
    }


def test_runs_are_selected_by_purpose_and_output():
    study = Study.from_config(_config())
    learn, (time1, time2), both = (
        [r for r, e in study.experiment_of.items() if e == name] for name in
        ("learn", "time", "experiment-3"))
    learn, both = learn[0], both[0]
    assert study.experiment_runs("learning") == [learn, both]
    assert study.experiment_runs("timing") == [time1, time2, both]
    assert study.experiment_runs(output="eval") == [learn, time1, time2, both]
    assert study.experiment_runs(output="video") == [learn, both]
    assert study.experiment_runs(output="policy") == [learn, both]
    assert study.experiments["experiment-3"].purpose == "both"


def test_timing_runs_can_ask_for_every_output():
    study = Study.from_config(_config(outputs=["eval", "video", "policy"]))
    assert len(study.experiment_runs(output="video")) == 4


def test_purpose_and_outputs_are_validated():
    with pytest.raises(ConfigError, match=r"experiments\.1\.purpose: 'speed' is not allowed; "
                                          r"expected one of \['learning', 'timing', 'both'\]"):
        Study.from_config(_config(purpose="speed"))
    with pytest.raises(ConfigError, match=r"experiments\.1\.outputs\.0: 'movie' is not allowed"):
        Study.from_config(_config(outputs=["movie"]))


def test_experiment_names_are_unique():
    config = _config()
    config["experiments"][2]["name"] = "learn"
    with pytest.raises(ConfigError, match="'learn' is already the name of another experiment"):
        Study.from_config(config)
