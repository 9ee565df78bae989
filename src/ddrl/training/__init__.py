"""Training: the train loop, stop rules, checkpoints, progress, env-runner faults, Ray runtime,
provenance."""
