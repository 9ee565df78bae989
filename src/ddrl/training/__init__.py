"""Training: the train loop, checkpoints, progress, faults, runtime."""
