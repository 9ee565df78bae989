"""Test helpers shared across test folders (not tests themselves)."""
