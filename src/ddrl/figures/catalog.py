"""Names of the scaling study's figures: what the workflow needs to declare their outputs.

Kept apart from :mod:`ddrl.figures.scaling` (which draws them) so that parsing the workflow
does not import matplotlib, pandas and seaborn: that import was a fixed 2-3 s of every
``snakemake`` call on a 2-core machine (bench/dag.py).
"""

from __future__ import annotations

# file stem -> what it reproduces (used by the workflow and the report captions).
FIGURES = {
    "fig12-14_reward_curves": "thesis Figs 12-14: reward against env steps, per algorithm",
    "fig12-14_reward_curves_wallclock": "thesis Figs 12-14, against training time",
    "fig15-20_iteration_time": "thesis Figs 15-20: iteration time by number of workers",
    "fig15-20_speedup": "speedup by number of workers (thesis Tables 6-8 as a figure)",
    "fig21-22_breakdown": "thesis Figs 21-22: iteration time by task",
    "cost_pareto": "time and cost to reach the return threshold (the thesis's cost question)",
    "thesis_comparison": "our speedups next to the thesis's published ones",
    "update_schedules": "off-policy speedup under the thesis's update schedule (split into "
                        "fewer updates and parallel work) and at a fixed update ratio",
}

# Drawn by rule plot_rewards from the learning runs; the rest by rule plot_scaling from the
# scaling and cost tables.
LEARNING_FIGURES = ("fig12-14_reward_curves", "fig12-14_reward_curves_wallclock")
SCALING_FIGURES = tuple(name for name in FIGURES if name not in LEARNING_FIGURES)

# figure stem -> report category.
CATEGORY = {name: "Learning" if name.startswith("fig12-14") else
            "Cost" if name.startswith("cost") else "Scaling" for name in FIGURES}


def output_key(name: str, ext: str) -> str:
    """Snakemake output name of figure ``name`` (identifiers cannot hold '-')."""
    return f"{name.replace('-', '_')}_{ext}"
