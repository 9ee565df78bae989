"""Config: section schemas and helpers every stage may use: reading YAML (``loading``), a
section's defaults merged with the user's values (``sections``), the run's sections
(``schema``), ``evaluation``/``render``/``export`` (``eval_config``), ``scaling``/``cost``
(``scaling_config``) and the rules between one run's settings (``relations``).

The study, which assembles them into one schema and expands a config into runs, is
:mod:`ddrl.study`.
"""
