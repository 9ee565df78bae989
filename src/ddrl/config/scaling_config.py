"""Config sections of the scaling study (``scaling:``) and of cost (``cost:``), as JSON Schema.

Kept free of heavy imports: :mod:`ddrl.study.schema` builds the study schema from these.
"""

from __future__ import annotations

SCALING_SCHEMA = {
    "type": "object",
    "description": "How iteration times are aggregated into the speedup tables.",
    "properties": {
        "warmup_iterations": {
            "type": "integer", "minimum": 0, "default": 1,
            "description": "first iterations of each run left out of the steady state "
                           "(start-up, JIT, replay warm-up)",
        },
        "bootstrap": {
            "type": "integer", "minimum": 100, "default": 1000,
            "description": "bootstrap resamples for the speedup and serial-fraction intervals",
        },
    },
    "additionalProperties": False,
}

INSTANCE = {
    "type": "object",
    "properties": {
        "vcpus": {"type": "integer", "minimum": 1},
        "gpus": {"type": "integer", "minimum": 0, "default": 0},
        "price_per_hour": {"type": "number", "minimum": 0},
    },
    "required": ["vcpus", "price_per_hour"],
    "additionalProperties": False,
}

COST_SCHEMA = {
    "type": "object",
    "description": "Prices, and the return whose time and cost to reach are compared. "
                   "Without instances or resource_prices, example AWS prices are used.",
    "properties": {
        "currency": {"type": "string", "default": "USD"},
        "prices_note": {"type": "string",
                        "description": "where the prices come from and their date (goes under the table)"},
        "instances": {
            "type": "object",
            "description": "instance type -> size and price; a run is priced as the cheapest "
                           "type that holds one node of it",
            "additionalProperties": INSTANCE,
            "minProperties": 1,
        },
        "resource_prices": {
            "type": "object",
            "description": "price per hour of one resource setting, keyed by its run-id tag "
                           "(e.g. r2x1c1g0: 2 runners x 1 env, 1 CPU each, 0 GPUs)",
            "propertyNames": {"pattern": "^r[0-9]+x[0-9]+c[0-9]+g[0-9]+(n[0-9]+)?$"},
            "additionalProperties": {"type": "number", "minimum": 0},
        },
        "return_threshold": {
            "description": "mean episode return to reach: one number, or one per env id",
            "oneOf": [
                {"type": "number"},
                {"type": "object", "additionalProperties": {"type": "number"}, "minProperties": 1},
            ],
        },
    },
    "additionalProperties": False,
}
