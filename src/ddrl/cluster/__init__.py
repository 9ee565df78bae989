"""Cluster: Slurm requests and checks, and Ray over a job's nodes."""
