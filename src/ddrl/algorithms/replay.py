"""A uniform transition replay buffer in flat NumPy arrays, for off-policy learners.

RLlib 2.60's ``EpisodeReplayBuffer`` stores episodes and rebuilds a training batch from them
on every sample; on a 2-core machine that costs 20-200 ms per minibatch, more than the
gradient step itself. Off-policy methods without recurrent state or n-step returns only need
single transitions ``(s, a, r, s', terminated, truncated)``, which this buffer keeps in
preallocated ring arrays: adding is a slice copy and sampling ``k`` minibatches is one fancy
index per column.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

import numpy as np

COLUMNS = ("obs", "actions", "rewards", "next_obs", "terminateds", "truncateds")


def transition_count(data: Mapping[str, Any]) -> int:
    """How many transitions ``data`` holds; every column must have that length."""
    lengths = {name: len(data[name]) for name in COLUMNS}
    if len(set(lengths.values())) != 1:
        raise ValueError(f"transition columns differ in length: {lengths}")
    return lengths["rewards"]


class TransitionReplayBuffer:
    """Fixed-capacity FIFO buffer of single-step transitions, sampled uniformly."""

    def __init__(self, capacity: int, seed: int | None = None) -> None:
        if int(capacity) < 1:
            raise ValueError(f"replay buffer capacity must be >= 1, got {capacity}")
        self.capacity = int(capacity)
        self._arrays: dict[str, np.ndarray] | None = None
        self._next = 0  # index the next transition is written to
        self._size = 0
        self._added = 0  # transitions added over the buffer's lifetime
        self._rng = np.random.default_rng(seed)

    def __len__(self) -> int:
        return self._size

    @property
    def num_added(self) -> int:
        return self._added

    def _allocate(self, sample: Mapping[str, np.ndarray]) -> None:
        self._arrays = {}
        for name in COLUMNS:
            col = np.asarray(sample[name])
            dtype = np.float32 if col.dtype.kind == "f" or name == "rewards" else col.dtype
            if name in ("terminateds", "truncateds"):
                dtype = np.bool_
            self._arrays[name] = np.zeros((self.capacity,) + col.shape[1:], dtype=dtype)

    def add_transitions(self, data: Mapping[str, np.ndarray]) -> int:
        """Append a batch of transitions (each column has the same leading length).

        Returns how many were given; beyond ``capacity`` only the newest are kept.
        """
        n = transition_count(data)
        if n == 0:
            return 0
        if self._arrays is None:
            self._allocate(data)
        assert self._arrays is not None
        total = n
        if n > self.capacity:  # only the newest ``capacity`` transitions survive
            data = {k: np.asarray(data[k])[-self.capacity:] for k in COLUMNS}
            n = self.capacity
        first = min(n, self.capacity - self._next)
        for name in COLUMNS:
            col = np.asarray(data[name])
            self._arrays[name][self._next:self._next + first] = col[:first]
            if first < n:
                self._arrays[name][: n - first] = col[first:]
        self._next = (self._next + n) % self.capacity
        self._size = min(self._size + n, self.capacity)
        self._added += total
        return total

    def add(self, episodes: Iterable[Any]) -> int:
        """Append the transitions of RLlib ``SingleAgentEpisode`` chunks; returns how many."""
        parts = [episode_transitions(e) for e in episodes]
        parts = [p for p in parts if len(p["rewards"])]
        if not parts:
            return 0
        return self.add_transitions(
            {name: np.concatenate([p[name] for p in parts]) for name in COLUMNS}
        )

    def sample(self, batch_size: int, num_batches: int = 1) -> dict[str, np.ndarray]:
        """``num_batches * batch_size`` transitions drawn uniformly with replacement.

        Minibatch ``i`` is rows ``i * batch_size`` to ``(i + 1) * batch_size``.
        """
        if self._size == 0 or self._arrays is None:
            raise ValueError("cannot sample from an empty replay buffer")
        idx = self._rng.integers(0, self._size, size=int(batch_size) * int(num_batches))
        return {name: arr[idx] for name, arr in self._arrays.items()}

    def get_state(self) -> dict[str, Any]:
        return {
            "capacity": self.capacity,
            "next": self._next,
            "size": self._size,
            "added": self._added,
            "rng": self._rng.bit_generator.state,
            "arrays": None if self._arrays is None
            else {k: v[: self._size].copy() for k, v in self._arrays.items()},
        }

    def set_state(self, state: Mapping[str, Any]) -> None:
        if int(state["capacity"]) != self.capacity:
            raise ValueError(
                f"replay buffer state has capacity {state['capacity']}, this buffer "
                f"{self.capacity}"
            )
        self._next, self._size, self._added = int(state["next"]), int(state["size"]), int(state["added"])
        self._rng.bit_generator.state = state["rng"]
        arrays = state["arrays"]
        if arrays is None:
            self._arrays = None
            return
        self._allocate(arrays)
        assert self._arrays is not None
        for k, v in arrays.items():
            self._arrays[k][: self._size] = v


def episode_transitions(episode: Any) -> dict[str, np.ndarray]:
    """The transitions of one episode chunk as arrays.

    A chunk with ``T`` actions has ``T + 1`` observations. Only its last transition can end
    the episode; ``terminated`` and ``truncated`` are kept apart so that the learner
    bootstraps through time limits but not through terminal states.
    """
    obs = np.asarray(episode.get_observations(), dtype=np.float32)
    actions = np.asarray(episode.get_actions(), dtype=np.float32)
    rewards = np.asarray(episode.get_rewards(), dtype=np.float32)
    t = len(rewards)
    if len(actions) != t or len(obs) != t + 1:
        raise ValueError(
            f"episode chunk has {len(obs)} observations, {len(actions)} actions and {t} "
            "rewards; expected T + 1, T and T"
        )
    terminated = np.zeros(t, dtype=np.bool_)
    truncated = np.zeros(t, dtype=np.bool_)
    if t:
        terminated[-1] = bool(episode.is_terminated)
        truncated[-1] = bool(episode.is_truncated)
    return {
        "obs": obs[:-1].reshape(t, -1),
        "actions": actions.reshape(t, -1),
        "rewards": rewards,
        "next_obs": obs[1:].reshape(t, -1),
        "terminateds": terminated,
        "truncateds": truncated,
    }


class DeviceReplayBuffer:
    """The transition ring buffer as torch tensors on the learner's device (a GPU learner's
    replay buffer, so minibatches never cross the host bus).

    Sampling writes into preallocated minibatch tensors and never syncs with the host (the
    fill level lives in a device tensor), so :class:`ddrl.algorithms.offpolicy.cuda_graphs.CapturedSteps`
    can record it inside a CUDA graph together with the update. Same contents and FIFO
    semantics as :class:`TransitionReplayBuffer`; the sampling RNG is torch's on the device.
    """

    def __init__(self, capacity: int, device: Any = "cpu") -> None:
        import torch

        if int(capacity) < 1:
            raise ValueError(f"replay buffer capacity must be >= 1, got {capacity}")
        self.capacity = int(capacity)
        self.device = torch.device(device)
        self._columns: dict[str, Any] | None = None
        self._next = 0
        self._size = 0
        self._added = 0
        # Fill level as a float on the device: sampling scales uniform draws by it.
        self._size_on_device = torch.zeros((), device=self.device)
        self._last_index = torch.zeros((), dtype=torch.long, device=self.device)

    def __len__(self) -> int:
        return self._size

    @property
    def num_added(self) -> int:
        return self._added

    def add_transitions(self, data: Mapping[str, Any]) -> int:
        """Append a batch of transitions (NumPy or torch columns); returns how many were given."""
        import torch

        n = transition_count(data)
        if n == 0:
            return 0
        cols = {}
        for name in COLUMNS:
            col = torch.as_tensor(np.asarray(data[name]) if not torch.is_tensor(data[name])
                                  else data[name])
            col = col.bool() if name in ("terminateds", "truncateds") else col.float()
            cols[name] = col[-self.capacity:].to(self.device, non_blocking=True)
        if self._columns is None:
            self._columns = {k: torch.zeros((self.capacity,) + tuple(v.shape[1:]),
                                            dtype=v.dtype, device=self.device)
                             for k, v in cols.items()}
        kept = len(cols["rewards"])
        first = min(kept, self.capacity - self._next)
        for name, col in cols.items():
            self._columns[name][self._next:self._next + first] = col[:first]
            if first < kept:
                self._columns[name][: kept - first] = col[first:]
        self._next = (self._next + kept) % self.capacity
        self._size = min(self._size + kept, self.capacity)
        self._size_on_device.fill_(float(self._size))
        self._last_index.fill_(self._size - 1)
        self._added += n
        return n

    def minibatch_slots(self, batch_size: int) -> dict[str, Any]:
        """Preallocated tensors that :meth:`sample_into` fills (one minibatch)."""
        import torch

        if self._columns is None:
            raise ValueError("the replay buffer is empty: add transitions before sampling")
        return {k: torch.empty((int(batch_size),) + tuple(v.shape[1:]), dtype=v.dtype,
                               device=self.device) for k, v in self._columns.items()}

    def sample_into(self, slots: Mapping[str, Any]) -> None:
        """Fill ``slots`` with a minibatch drawn uniformly with replacement (no host sync)."""
        import torch

        assert self._columns is not None, "sample_into before add_transitions"
        batch = len(slots["rewards"])
        idx = (torch.rand(batch, device=self.device) * self._size_on_device).long()
        torch.minimum(idx, self._last_index, out=idx)  # float rounding at the top end
        for name, col in self._columns.items():
            torch.index_select(col, 0, idx, out=slots[name])
