"""Training: the train loop, checkpoints, progress, tracking, study status."""
