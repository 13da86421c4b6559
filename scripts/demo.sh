#!/usr/bin/env bash
# The demo command: set up .venv if needed, then train a model on scikit-learn's digits.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh
exec .venv/bin/python -m ember.examples.digits "$@"
