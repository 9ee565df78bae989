"""bench/investigations/sac_action_stats.py: the two tanh corrections it compares, and its
input check."""

from __future__ import annotations

import numpy as np
import pytest

import sac_action_stats as stats


def test_exact_correction_is_log_one_minus_tanh_squared_and_sb3s_is_capped():
    u = np.array([-8.0, -3.0, -0.5, 0.0, 0.7, 2.5, 12.0])
    exact, sb3 = stats.tanh_corrections(u)
    np.testing.assert_allclose(exact, np.log(1.0 - np.tanh(u) ** 2), rtol=1e-6, atol=1e-6)
    small = np.abs(u) < 3.5
    np.testing.assert_allclose(sb3[small], exact[small], atol=1e-3)
    # Saturated actions: SB3's penalty stops at log(1e-6); the exact one keeps growing.
    assert sb3[-1] == pytest.approx(np.log(1e-6), abs=0.01)
    assert exact[-1] < sb3[-1] - 3


def test_a_folder_that_is_not_a_sac_checkpoint_is_refused(tmp_path, capsys):
    with pytest.raises(SystemExit):
        stats.main([str(tmp_path), "--env", "HopperBulletEnv-v0"])
    assert "not a ddrl SAC checkpoint" in capsys.readouterr().err
