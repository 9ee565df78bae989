"""Former home of SAC's classes, now :mod:`ddrl.algorithms.sac.sac`.

Kept because RLlib checkpoints store classes by import path: SAC run folders trained before
the move name ``ddrl.algorithms.fast_sac.FastSAC`` (and its module, catalog and learner), and
evaluate, render and export must still restore them.
"""

from ddrl.algorithms.sac.sac import (  # noqa: F401
    ConcatQSACCatalog,
    ConcatQSACTorchRLModule,
    FastSAC,
    FastSACConfig,
    FastSACTorchLearner,
)
