# The two set-up commands of the README: `make demo` and `make test`; and `make bench`.
# Each creates the virtual environment it needs (.venv) from pyproject.toml and constraints.txt.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
BENCH_STAMP := $(VENV)/.installed-bench

.PHONY: demo ucx-site test test-fast test-under-load lint bench reliability check-newest gpu-check clean

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt -e '.[test]'
	touch $(STAMP)

# Dask's UCX transport (the ucx-cu12 extra: distributed-ucxx, which runs over TCP and shared
# memory without a GPU) for the suite's UCX tests, in a folder of its own beside .venv, never in
# it: those packages would otherwise be imported by every Python process of the suite (an import
# hook over dask at start-up, rmm and pynvml at `import distributed`). Only the tests that need
# them put the folder on their subprocesses' PYTHONPATH (tests/integration/test_ucx_transport.py).
# Linux x86_64 only (elsewhere those tests are skipped); the list is the extra's packages that
# .venv lacks, each pinned in constraints.txt.
UCX_SITE := .ucx-site
UCX_STAMP := $(UCX_SITE)/.installed
UCX_PACKAGES := distributed-ucxx-cu12 ucxx-cu12 libucxx-cu12 libucx-cu12 rmm-cu12 librmm-cu12 \
	rapids-dask-dependency rapids-logger cuda-bindings cuda-pathfinder cuda-core nvidia-ml-py
ON_LINUX_X86_64 := $(filter Linux-x86_64,$(shell uname -s)-$(shell uname -m))

$(UCX_STAMP): $(STAMP) constraints.txt
	rm -rf $(UCX_SITE)
	$(PY) -m pip install --quiet --no-deps --target $(UCX_SITE) -c constraints.txt $(UCX_PACKAGES)
	touch $(UCX_STAMP)

ucx-site: $(if $(ON_LINUX_X86_64),$(UCX_STAMP),$(STAMP))  ## Dask's UCX transport for the UCX tests (.ucx-site)

demo: $(STAMP)  ## A^n + B^n on the embedded cluster (virtual GPUs where there are none)
	$(PY) examples/matpow.py

# The inner loop's tier: unit tests and doctests, no cluster of processes (about a minute).
test-fast: $(STAMP)  ## unit tests and doctests only
	$(PY) -m pytest tests/unit daskgraph -q

test: $(STAMP) ucx-site  ## the whole suite: unit, integration and (skipped without a GPU) gpu tests
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
	rm -rf $(VENV) $(UCX_SITE) .pytest_cache .ruff_cache *.egg-info
