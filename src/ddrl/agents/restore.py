"""Reading the policy's parts out of a run's checkpoint, without an Algorithm or Ray cluster.

:func:`ddrl.agents.policy.load_policy` folds what this module reads into one torch module:

- the ddrl manifest of the checkpoint (:func:`read_checkpoint_manifest`), and the env and
  algorithm it was trained for, checked against the caller's (:func:`expected_env_and_algorithm`);
- the RLModule and the two connector pipelines, each from its folder
  (:func:`component_dirs`, :func:`restore_component`);
- the state those pipelines hold: the frozen ``MeanStdFilter`` (:class:`ObsFilter`,
  :func:`observation_filter`) and whether actions are rescaled from [-1, 1]
  (:func:`normalizes_actions`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ddrl.errors import CheckpointError, ConfigError
from ddrl.training import checkpoints

# Env-to-module pieces RLlib adds by default; they only batch and convert, hold no state.
STATELESS_ENV_TO_MODULE = {
    "AddObservationsFromEpisodesToBatch",
    "AddTimeDimToBatchAndZeroPad",
    "AddStatesFromEpisodesToBatch",
    "AgentToModuleMapping",
    "BatchIndividualItems",
    "NumpyToTensor",
}


# --------------------------------------------------------------------------- the manifest

def read_checkpoint_manifest(checkpoint: Path, run_id: str) -> dict[str, Any]:
    """The ddrl manifest of a run's checkpoint, its files checked; errors name the run."""
    if not checkpoint.is_dir():
        raise CheckpointError(f"run {run_id}: no checkpoint at {checkpoint} (train the run first)")
    try:
        manifest = checkpoints.read_manifest(checkpoint)
    except CheckpointError as err:
        raise CheckpointError(f"run {run_id}: {err}") from None
    return manifest


def expected_env_and_algorithm(manifest: dict[str, Any], checkpoint: Path, run_id: str,
                               env: str | None, algorithm: str | None
                               ) -> tuple[str, str | None]:
    """The env and algorithm to restore for: the caller's, which must match the manifest's."""
    trained_env = manifest.get("env")
    if env and trained_env and trained_env != env:
        raise ConfigError(
            f"run {run_id}: checkpoint {checkpoint} was trained on env {trained_env!r}, "
            f"but the run asks for {env!r}"
        )
    trained_algo = manifest.get("algorithm")
    if algorithm and trained_algo and trained_algo != algorithm:
        raise ConfigError(
            f"run {run_id}: checkpoint {checkpoint} was trained with {trained_algo}, "
            f"but the run asks for {algorithm}"
        )
    if manifest.get("run_id") not in (None, run_id):
        raise CheckpointError(
            f"run {run_id}: checkpoint {checkpoint} belongs to run {manifest['run_id']}"
        )
    env = env or trained_env
    if not env:
        raise CheckpointError(f"run {run_id}: checkpoint {checkpoint} does not name its env")
    return env, algorithm or trained_algo


# --------------------------------------------------------------------------- the components

def component_dirs() -> tuple[Path, Path, Path]:
    """(RLModule, env-to-module, module-to-env) folders inside an Algorithm checkpoint, from
    RLlib's own component names (imported here: ray.rllib takes seconds to import)."""
    from ray.rllib.core import (
        COMPONENT_ENV_RUNNER,
        COMPONENT_ENV_TO_MODULE_CONNECTOR,
        COMPONENT_LEARNER,
        COMPONENT_LEARNER_GROUP,
        COMPONENT_MODULE_TO_ENV_CONNECTOR,
        COMPONENT_RL_MODULE,
        DEFAULT_MODULE_ID,
    )

    return (Path(COMPONENT_LEARNER_GROUP, COMPONENT_LEARNER, COMPONENT_RL_MODULE,
                 DEFAULT_MODULE_ID),
            Path(COMPONENT_ENV_RUNNER, COMPONENT_ENV_TO_MODULE_CONNECTOR),
            Path(COMPONENT_ENV_RUNNER, COMPONENT_MODULE_TO_ENV_CONNECTOR))


def restore_component(what: str, path: Path, loader: Callable[[str], Any], run: str) -> Any:
    """``loader(path)``; a missing folder or any error restoring it is a CheckpointError
    naming the run and ``what`` was being restored."""
    if not path.exists():
        raise CheckpointError(f"run {run}: checkpoint has no {what} ({path} is missing)")
    try:
        return loader(str(path))
    except CheckpointError:
        raise
    except Exception as err:  # unpickling errors come in many types
        raise CheckpointError(
            f"run {run}: cannot restore the {what} from {path}: {type(err).__name__}: {err}"
        ) from err


# --------------------------------------------------------------------------- connector state

@dataclass(frozen=True)
class ObsFilter:
    """The frozen state of RLlib's ``MeanStdFilter`` (no more updates)."""

    mean: np.ndarray  # float64, like RLlib's running mean
    std: np.ndarray  # RLlib's (float32) std, as float64
    denom: np.ndarray  # what RLlib divides by: std + SMALL_NUMBER in float32, as float64
    demean: bool
    destd: bool
    clip: float | None
    count: int

    @classmethod
    def from_connector(cls, connector: Any) -> "ObsFilter":
        from ray.rllib.utils.filter import SMALL_NUMBER

        filters = getattr(connector, "_filters", None) or {}
        if set(filters) != {None}:
            raise CheckpointError(
                f"MeanStdFilter with agents {sorted(map(str, filters))}: only single-agent "
                "filters can be restored"
            )
        flt = filters[None]
        stats = flt.running_stats
        if not hasattr(stats, "mean"):
            raise CheckpointError("MeanStdFilter over a nested observation space is not supported")
        return cls(
            mean=np.asarray(stats.mean, dtype=np.float64).copy(),
            std=np.asarray(stats.std, dtype=np.float64).copy(),
            denom=np.asarray(stats.std + SMALL_NUMBER, dtype=np.float64).copy(),
            demean=bool(flt.demean),
            destd=bool(flt.destd),
            clip=float(flt.clip) if flt.clip else None,
            count=int(stats.n),
        )

    def apply(self, obs: np.ndarray) -> np.ndarray:
        """What RLlib's filter does with ``update=False``, in numpy."""
        dtype = np.asarray(obs).dtype
        x = np.asarray(obs)
        if self.demean:
            x = x - self.mean
        if self.destd:
            x = x / self.denom
        if self.clip:
            x = np.clip(x, -self.clip, self.clip)
        return x.astype(dtype)


def observation_filter(pipeline: Any, run: str) -> ObsFilter | None:
    """The env-to-module pipeline's one ``MeanStdFilter``, frozen (None without one); any
    piece that holds other state is an error."""
    from ray.rllib.connectors.env_to_module.mean_std_filter import MeanStdFilter

    found = None
    for piece in getattr(pipeline, "connectors", [pipeline]):
        name = type(piece).__name__
        if isinstance(piece, MeanStdFilter):
            if found is not None:
                raise CheckpointError(f"run {run}: two MeanStdFilters in the env-to-module "
                                      "pipeline; ddrl restores one")
            found = ObsFilter.from_connector(piece)
        elif name not in STATELESS_ENV_TO_MODULE:
            raise CheckpointError(
                f"run {run}: the env-to-module connector {name} is not supported by ddrl's "
                f"policy restore (known: MeanStdFilter, {', '.join(sorted(STATELESS_ENV_TO_MODULE))})"
            )
    return found


def normalizes_actions(pipeline: Any) -> bool:
    """Whether the module-to-env pipeline rescales the module's actions from [-1, 1]."""
    for piece in getattr(pipeline, "connectors", [pipeline]):
        if type(piece).__name__ == "NormalizeAndClipActions":
            return bool(piece.normalize_actions)
    return False
