"""Figures: catalog, style, learning curves, scaling and search figures."""
