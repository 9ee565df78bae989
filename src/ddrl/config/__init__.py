"""Config: the study file, its schema, search spaces, env ids and the config sections of each stage."""
