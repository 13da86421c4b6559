#!/usr/bin/env bash
# The test command: set up .venv if needed, then run the whole suite against PyTorch.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
  .venv/bin/python -m pip install -q torch==2.13.0
fi
.venv/bin/python -m ruff check src tests bench examples scripts
# the API docs must build without a warning (docs/Makefile turns warnings into errors)
PATH="$PWD/.venv/bin:$PATH" make -C docs html
# two workers, each test file whole on one of them (its module fixtures are built once)
exec .venv/bin/python -m pytest -n 2 --dist loadfile "$@"
