#!/usr/bin/env bash
# Create .venv (once) with ember installed in editable mode, plus the test and demo extras.
# PyTorch 2.13.0 (CPU) is installed as the test oracle only; ember never imports it.
set -euo pipefail
cd "$(dirname "$0")/.."
# the webgpu device's tests need a Vulkan driver: Mesa's lavapipe (a software one) where we
# can install it (root with apt-get), once
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
   ! ls /usr/share/vulkan/icd.d/lvp_icd.*.json >/dev/null 2>&1; then
  apt-get install -y --no-install-recommends mesa-vulkan-drivers >/dev/null 2>&1 || \
    { apt-get update >/dev/null 2>&1 && \
      apt-get install -y --no-install-recommends mesa-vulkan-drivers >/dev/null 2>&1; } || \
    echo "setup_env: could not install mesa-vulkan-drivers (the webgpu tests will fail in CI)"
fi
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
stamp=.venv/.ember-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e '.[test,demo,dev]'
  touch "$stamp"
fi
# bytecode for ember's own source, as a wheel install writes it (programs run with
# PYTHONDONTWRITEBYTECODE would otherwise compile ember at every start); cheap when current
.venv/bin/python -m compileall -q src/ember >/dev/null
