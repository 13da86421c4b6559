#!/usr/bin/env bash
# Run the CUDA checks on a machine with an NVIDIA GPU, CuPy and torch already installed (no
# network needed): the device fixture in tests/conftest.py adds 'cuda' to every test that takes
# it. A lent device runs one command for at most 10 minutes, so this runs every test whose id
# names cuda (the device tests' [cuda] cases, the CUDA-only files and tests) under a time limit,
# GPU_CHECK_SECONDS (default 480); what ran by then is in the report. Results go to $OUT (or
# ./out). Usage: bash scripts/gpu_check.sh [pytest args].
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-out}"
mkdir -p "$out"
export PYTHONPATH=src PYTHONUNBUFFERED=1
python3 -c "import cupy, ember; print('cupy', cupy.__version__, 'gpus', ember.cuda.device_count())" \
  2>&1 | tee "$out/gpu_env.txt"
timeout "${GPU_CHECK_SECONDS:-480}" python3 -m pytest -q -p no:cacheprovider -rfE -k cuda "$@" \
  2>&1 | tee "$out/gpu_pytest.txt"
