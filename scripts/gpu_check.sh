#!/usr/bin/env bash
# Run the test suite on a machine with an NVIDIA GPU, CuPy and torch already installed
# (no network needed): the device fixture in tests/conftest.py adds 'cuda' to every test that
# takes it. Usage: bash scripts/gpu_check.sh [pytest args]; results go to $OUT (or ./out).
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-out}"
mkdir -p "$out"
export PYTHONPATH=src PYTHONUNBUFFERED=1
python3 -c "import cupy, ember; print('cupy', cupy.__version__, 'gpus', ember.cuda.device_count())" \
  2>&1 | tee "$out/gpu_env.txt"
python3 -m pytest -q -p no:cacheprovider "$@" 2>&1 | tee "$out/gpu_pytest.txt"
python3 bench/run.py --no-write 2>&1 | tee "$out/gpu_bench.txt"
