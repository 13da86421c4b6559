#!/usr/bin/env bash
# Create .venv (once) with ember installed in editable mode, plus the test and demo extras.
# PyTorch 2.13.0 (CPU) is installed as the test oracle only; ember never imports it.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
stamp=.venv/.ember-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e '.[test,demo,dev]'
  touch "$stamp"
fi
