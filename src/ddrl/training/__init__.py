"""Training: the train loop, checkpoints, progress, env-runner faults, Ray runtime, provenance."""
