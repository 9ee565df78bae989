"""ddrl: reproducible, scalable deep-RL experiments with RLlib, Snakemake and PyBullet."""

__version__ = "0.1.0"
