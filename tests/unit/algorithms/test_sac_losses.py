"""SAC loss maths (ddrl.algorithms.sac.losses) on small fixed tensors, against references
written out element by element in the test."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from ddrl.algorithms.sac import losses

REWARDS = [1.0, -0.5, 2.0, 0.25]
TERMINATED = [False, True, False, True]
NEXT_Q = [3.0, 10.0, -1.0, 0.5]  # already min over the target critics
NEXT_LOGP = [-1.0, 0.5, -2.0, 0.0]
ALPHA = 0.2
DISCOUNT = 0.99 ** 3  # gamma ** n_step


def _t(values, dtype=torch.float32):
    return torch.tensor(values, dtype=dtype)


def _huber(x: float) -> float:
    return 0.5 * x * x if abs(x) <= 1.0 else abs(x) - 0.5


def test_critic_targets_bootstrap_the_soft_value_unless_terminated():
    got = losses.critic_targets(_t(REWARDS), _t(TERMINATED, torch.bool), _t(NEXT_Q),
                                _t(NEXT_LOGP), ALPHA, DISCOUNT)
    ref = []
    for r, done, q, logp in zip(REWARDS, TERMINATED, NEXT_Q, NEXT_LOGP):
        ref.append(r if done else r + DISCOUNT * (q - ALPHA * logp))
    torch.testing.assert_close(got, _t(ref))


def test_critic_loss_is_the_sum_of_each_critics_mean_huber_loss():
    targets = [0.0, 1.0, -2.0, 3.0]
    q1 = [0.5, 3.0, -2.0, 1.0]   # errors 0.5 (quadratic), 2 (linear), 0, 2
    q2 = [0.0, 1.25, -4.5, 3.0]
    got = losses.critic_loss([_t(q1), _t(q2)], _t(targets))
    ref = sum(np.mean([_huber(q - y) for q, y in zip(qs, targets)]) for qs in (q1, q2))
    assert float(got) == pytest.approx(ref)
    single = losses.critic_loss([_t(q1)], _t(targets))  # twin_q off
    assert float(single) == pytest.approx(np.mean([_huber(q - y) for q, y in zip(q1, targets)]))


def test_mse_critic_loss_is_half_the_squared_error_unclipped():
    targets = [0.0, 1.0, -2.0, 3.0]
    q1 = [0.5, 3.0, -2.0, 1.0]
    q2 = [0.0, 1.25, -4.5, 3.0]
    got = losses.critic_loss([_t(q1), _t(q2)], _t(targets), "mse")
    ref = sum(np.mean([0.5 * (q - y) ** 2 for q, y in zip(qs, targets)]) for qs in (q1, q2))
    assert float(got) == pytest.approx(ref)
    # Inside |error| <= 1 both losses agree; outside, only the squared error keeps growing.
    small = [0.5, 0.75, -2.0, 3.0]
    assert float(losses.critic_loss([_t(small)], _t(targets), "mse")) == pytest.approx(
        float(losses.critic_loss([_t(small)], _t(targets), "huber")))
    q = _t([5.0], torch.float32).requires_grad_()
    losses.critic_loss([q], _t([0.0]), "mse").backward()
    assert float(q.grad) == pytest.approx(5.0)  # Huber's would be 1
    with pytest.raises(ValueError, match="critic_loss must be one of"):
        losses.critic_loss([_t(q1)], _t(targets), "l1")


def test_actor_loss_uses_the_smaller_critic():
    logp = [-1.0, 0.0, 2.0]
    q1, q2 = [1.0, 5.0, -3.0], [2.0, 4.0, -1.0]
    got = losses.actor_loss(_t(logp), [_t(q1), _t(q2)], ALPHA)
    ref = np.mean([ALPHA * lp - min(a, b) for lp, a, b in zip(logp, q1, q2)])
    assert float(got) == pytest.approx(ref)


def test_actor_loss_gradient_reaches_logp_and_q_but_alpha_loss_only_log_alpha():
    logp = _t([-1.0, 0.5]).requires_grad_()
    q = _t([2.0, 1.0]).requires_grad_()
    losses.actor_loss(logp, [q], ALPHA).backward()
    torch.testing.assert_close(logp.grad, _t([ALPHA / 2, ALPHA / 2]))
    torch.testing.assert_close(q.grad, _t([-0.5, -0.5]))

    log_alpha = torch.tensor(math.log(ALPHA), requires_grad=True)
    logp2 = _t([-1.0, 0.5]).requires_grad_()
    target_entropy = -2.0
    loss = losses.alpha_loss(log_alpha, logp2, target_entropy)
    ref = -np.mean([math.log(ALPHA) * (lp + target_entropy) for lp in (-1.0, 0.5)])
    assert float(loss) == pytest.approx(ref)
    loss.backward()
    # d/d log_alpha = -mean(logp + target_entropy); logp gets no gradient (detached).
    assert float(log_alpha.grad) == pytest.approx(-np.mean([-1.0 - 2.0, 0.5 - 2.0]))
    assert logp2.grad is None


@pytest.mark.parametrize("name", ["FastSAC", "FastSACConfig", "FastSACTorchLearner",
                                  "ConcatQSACTorchRLModule", "ConcatQSACCatalog"])
def test_checkpoints_from_before_the_move_still_find_sacs_classes(name):
    import pickle

    from ddrl.algorithms.sac import sac

    # A pickle by reference, as RLlib's checkpoints hold classes (protocol 0 GLOBAL).
    assert pickle.loads(f"cddrl.algorithms.fast_sac\n{name}\n.".encode()) is getattr(sac, name)
