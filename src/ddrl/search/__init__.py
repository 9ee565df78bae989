"""Hyperparameter search: grid summary and leaderboard, Ray Tune."""
