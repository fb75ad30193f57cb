# The two set-up commands of the README: `make demo` and `make test`; and `make bench`.
# Each creates the virtual environment it needs (.venv) from pyproject.toml and constraints.txt.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
BENCH_STAMP := $(VENV)/.installed-bench

.PHONY: demo test test-fast test-under-load lint bench reliability check-newest gpu-check clean

# On Linux x86_64 the test environment also gets the ucx-cu12 extra (Dask's UCX transport,
# which runs over TCP and shared memory without a GPU), so the suite's UCX tests run there.
comma := ,
TEST_EXTRAS := $(if $(filter Linux-x86_64,$(shell uname -s)-$(shell uname -m)),test$(comma)ucx-cu12,test)

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt -e '.[$(TEST_EXTRAS)]'
	touch $(STAMP)

demo: $(STAMP)  ## A^n + B^n on the embedded cluster (virtual GPUs where there are none)
	$(PY) examples/matpow.py

# The inner loop's tier: unit tests and doctests, no cluster of processes (about a minute).
test-fast: $(STAMP)  ## unit tests and doctests only
	$(PY) -m pytest tests/unit daskgraph -q

test: $(STAMP)  ## the whole suite: unit, integration and (skipped without a GPU) gpu tests
	$(PY) -m pytest

# The suite (by default its integration and fault-and-fuzz parts) while another process keeps
# one core busy (.ci/busy: stress-ng where installed, else a Python busy loop), stopped after the
# run whatever its outcome. No test's verdict may depend on how fast the machine is.
# Another selection or load: make test-under-load LOAD_TESTS=tests/unit BUSY_CORES=2
LOAD_TESTS ?= tests/integration tests/reliability
test-under-load: $(STAMP)  ## pytest $(LOAD_TESTS) with one core kept busy
	.ci/busy $(PY) -m pytest $(LOAD_TESTS)

reliability: $(STAMP)  ## the fault-and-fuzz suite alone; writes its counts to docs/reliability.md
	DASKGRAPH_RELIABILITY_REPORT=docs/reliability.md $(PY) -m pytest tests/reliability -p no:cacheprovider

# The bench extra (tensorflow-cpu, matplotlib). TensorFlow is an optional peer: where it cannot
# be installed, the suite still runs and its TensorFlow rows say "n/a (tensorflow not installed)".
$(BENCH_STAMP): $(STAMP)
	@if $(PY) -m pip install --quiet -c constraints.txt -e '.[test,bench]'; then \
		touch $(BENCH_STAMP); \
	else \
		echo "note: the bench extra did not install fully; TensorFlow rows will say n/a"; \
		$(PY) -m pip install --quiet -c constraints.txt matplotlib || true; \
	fi

# Every GPU claim checked on this machine's NVIDIA GPU (virtual GPUs where there is none, saying
# what was skipped): at most 8 minutes; the report goes into docs/gpu.md (see that page).
# Where the dependencies are already importable (the accelerator machine: wheels on PYTHONPATH),
# name that Python and no virtual environment is made: make gpu-check GPU_CHECK_PYTHON=python3
GPU_CHECK_PYTHON ?=
gpu-check: $(if $(GPU_CHECK_PYTHON),,$(STAMP))
	$(or $(GPU_CHECK_PYTHON),$(PY)) -m benchmarks.gpu_check $(GPU_CHECK_ARGS)

check-newest:  ## the suite against the newest dask/distributed releases (.venv-newest)
	.ci/newest

# Results, page and plot go to benchmarks/results/ (untracked); UPDATE_DOCS=1 renders the page
# and plot into docs/ (docs/benchmarks.md, docs/scale.png) instead. The output ends with the
# verdict: each target met or not met, with its measured value over its goal.
UPDATE_DOCS ?=
bench: $(BENCH_STAMP)  ## the benchmark suite: table, verdict, benchmarks/results/ (docs/ with UPDATE_DOCS=1)
	$(PY) -m benchmarks.run $(if $(UPDATE_DOCS),--update-docs,) $(BENCH_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check daskgraph tests examples benchmarks
	$(VENV)/bin/ruff format --check daskgraph tests examples benchmarks

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache *.egg-info
