"""Measurement code the benchmarks in bench/ share (and tests check); not part of the ddrl package."""
