# Two commands do everything: `make run` (the default study) and `make test`.
VENV    ?= .venv
PYTHON  ?= python3
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.ddrl-installed
PROFILE ?= profiles/local
CONFIG  ?= config/config.yaml
STUDY   ?= $(shell sed -n 's/^study:[[:space:]]*\([A-Za-z0-9_.-]*\).*/\1/p' $(CONFIG))

.PHONY: run test lint report dry-run clean-venv image image-gpu

$(STAMP): pyproject.toml requirements.lock
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -c requirements.lock torch==2.13.0
	$(BIN)/python -m pip install -q -c requirements.lock -e '.[test]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/ddrl validate $(CONFIG)  # names the line of a YAML error, which snakemake does not
	$(BIN)/snakemake --profile $(PROFILE) --configfile $(CONFIG)
	$(BIN)/snakemake --profile $(PROFILE) --configfile $(CONFIG) --report results/$(STUDY)/report.html

test: $(STAMP)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# snakemake --lint (no lints at all), snakefmt --check workflow/ (tests/workflow/test_workflow_lint.py)
# and the packaging checks (environment.yml against pyproject.toml and the lock).
lint: $(STAMP)
	$(BIN)/python -m pytest -q tests/workflow/test_workflow_lint.py tests/unit/test_packaging.py

report: $(STAMP)
	$(BIN)/snakemake --profile $(PROFILE) --configfile $(CONFIG) --report results/$(STUDY)/report.html

dry-run: $(STAMP)
	$(BIN)/ddrl validate $(CONFIG)
	$(BIN)/snakemake --profile $(PROFILE) --configfile $(CONFIG) -n

# The container image (Dockerfile) from this checkout: docker/build-image.sh starts dockerd if
# none answers and makes a local Debian 12 base when no registry base can be pulled.
# IMAGE=name:tag (default ddrl:test; the container tests look for it), PYTHON_IMAGE=base.
image:
	docker/build-image.sh

# The same Dockerfile with the CUDA build of the pinned torch (default tag ddrl:test-gpu).
image-gpu:
	docker/build-image.sh --gpu

clean-venv:
	rm -rf $(VENV)
