"""Analysis: scaling and cost maths, run results, tables."""
