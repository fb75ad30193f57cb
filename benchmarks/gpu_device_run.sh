#!/usr/bin/env bash
# `make gpu-check` on the accelerator machine (Python 3.12, CUDA, CuPy, NumPy, pytest, hypothesis;
# no Dask, no network) in ONE device `run` call, from the project's root, the report copied to $OUT.
#
# Prepare here, once (docs/gpu.md, "On the accelerator machine"):
#   ../shared/gpu/wheels.sh nvidia-ml-py absl-py      # the Dask stack as wheels in .whl/ (~16 MB)
#   .venv/bin/python -m benchmarks.gpu_check --save-digits   # .whl/digits.npz (training data)
# then one `run` call with carry [".whl"], timeout_s 600 and the command
#   bash benchmarks/gpu_device_run.sh
# UCX (the two-logical-GPU row's device-to-device path) needs ~49 MB more than one call may carry:
#   WHL_DIR=.whl-ucx ../shared/gpu/wheels.sh --ucx
# then a first call with carry [".whl-ucx"]: `bash benchmarks/gpu_device_run.sh --install-ucx`, and
# within the machine's warm time (30 s) the call above: /tmp/site keeps the UCX wheels.
#
# Exit status: gpu-check's (0: every check passed or was skipped; 1: one failed; 2: a module
# missing), 3 when the wheels do not install. $OUT gets gpu.md, gpu-check.json, gpu-check.log.
set -uo pipefail
site=/tmp/site
if [[ ${1:-} == --install-ucx ]]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$site" .whl-ucx/*.whl || exit 3
  echo "UCX wheels in $site: now the main call, carrying .whl"
  exit 0
fi
# (pip --target replaces what it installs: the UCX wheels of a first call stay in /tmp/site)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target "$site" .whl/*.whl || exit 3
export PYTHONPATH="$site:$PWD" PYTHONUNBUFFERED=1
out=${OUT:-/tmp/gpu-check-out}
mkdir -p "$out"
nvidia-smi -L
if command -v make >/dev/null; then
  make gpu-check GPU_CHECK_PYTHON=python3 2>&1 | tee "$out/gpu-check.log"
else
  python3 -m benchmarks.gpu_check 2>&1 | tee "$out/gpu-check.log"
fi
status=${PIPESTATUS[0]}
cp docs/gpu.md docs/gpu-check.json "$out"/
exit "$status"
