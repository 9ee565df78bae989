"""PPO's minibatch schedule: which train-batch rows each minibatch of one update takes.

Plain numpy (no torch, no RLlib). The lean PPO learner (:mod:`ddrl.algorithms.ppo.learner`)
gathers the train batch once along this schedule, so that every minibatch is a slice.
"""

from __future__ import annotations

import math

import numpy as np


def minibatch_index_stream(
    batch_len: int, num_epochs: int, minibatch_size: int | None, shuffle: bool
) -> np.ndarray:
    """Row indices of every minibatch of one update, RLlib's schedule, shape (M, size).

    As ``Learner._create_iterator_if_necessary`` + ``MiniBatchCyclicIterator``: no
    ``minibatch_size`` means whole-batch minibatches; shuffling only with ``num_epochs > 1``;
    the first epoch runs in batch order, every wrap past the batch end reshuffles (numpy's
    global RNG, as ``SampleBatch.shuffle``); iteration stops once ``num_epochs`` epochs are
    covered, so the last minibatch may start the next epoch.
    """
    if batch_len < 1:
        raise ValueError("PPO train batch is empty: nothing to update on")
    size = minibatch_size or batch_len
    shuffle = shuffle and num_epochs > 1
    num_minibatches = max(1, math.ceil(num_epochs * batch_len / size))
    num_orders = math.ceil(num_minibatches * size / batch_len)
    order = np.arange(batch_len)
    orders = []
    for _ in range(num_orders):
        orders.append(order)
        if shuffle:  # each wrap permutes the (already permuted) batch again
            order = order[np.random.permutation(batch_len)]
    stream = np.concatenate(orders)[: num_minibatches * size]
    return stream.reshape(num_minibatches, size)
