"""Trained agents: policy restore, evaluation, rendering, export."""
