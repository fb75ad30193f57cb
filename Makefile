# The two set-up commands of the README: `make demo` and `make test`.
# Each creates the virtual environment it needs (.venv) from pyproject.toml and constraints.txt.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench clean

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)  ## A^n + B^n on the embedded cluster (virtual GPUs where there are none)
	$(PY) examples/matpow.py

test: $(STAMP)  ## the whole suite: unit, integration and (skipped without a GPU) gpu tests
	$(PY) -m pytest

lint: $(STAMP)
	$(VENV)/bin/ruff check daskgraph tests examples benchmarks
	$(VENV)/bin/ruff format --check daskgraph tests examples benchmarks

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache *.egg-info
