# The job's only work: its output file (bench/noop/Snakefile).
open(snakemake.output[0], "w").close()
