"""Study: a config file validated against the schema of every stage, and expanded into runs
with stable ids (:mod:`ddrl.study.study`), its searches (:mod:`ddrl.study.search_space`), the
defaults every run shares (:mod:`ddrl.study.defaults`), the assembled schema
(:mod:`ddrl.study.schema`) and the checks that need this machine (:mod:`ddrl.study.preflight`).

It stands above the stages it assembles (algorithms, training, agents, aws, cluster); they
import only the section schemas and helpers of :mod:`ddrl.config`.
"""
