"""python -m ember.utils.collect_env runs and reports every field."""

import os
import subprocess
import sys

import numpy as np
import scipy

import ember
from ember.utils import collect_env

SRC = os.path.join(os.path.dirname(__file__), "..", "..", "src")


def test_collect_env_runs_as_a_module_and_prints_the_fields():
    env = dict(os.environ, PYTHONPATH=os.path.abspath(SRC))
    result = subprocess.run([sys.executable, "-m", "ember.utils.collect_env"], env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert f"ember version: {ember.__version__}" in out
    assert f"NumPy version: {np.__version__}" in out
    assert f"SciPy version: {scipy.__version__}" in out
    assert "Python version: " + sys.version.split()[0] in out
    try:
        import cupy
        assert f"CuPy version: {cupy.__version__}" in out
    except ImportError:
        assert "CuPy version: not installed" in out
    blas = out.split("BLAS:\n", 1)[1].splitlines()[0]
    assert "threads" in blas and "blas" in blas
    assert "GPUs:" in out and f"CUDA available to ember: {ember.cuda.is_available()}" in out


def test_get_env_info_values():
    from threadpoolctl import threadpool_info

    info = collect_env.get_env_info()
    assert info["NumPy version"] == np.__version__
    assert isinstance(info["BLAS"], list) and info["BLAS"]
    blas_threads = {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}
    assert any(f"{n} threads" in line for n in blas_threads for line in info["BLAS"])
    assert info["ember intra-op threads"] == ember.get_num_threads()
    if not ember.cuda.is_available():
        assert info["GPUs"][0].startswith("none") or "nvidia-smi" in info["GPUs"][0]
    assert collect_env._version("surely_not_a_module_name_xyz") == "not installed"
    pretty = collect_env.get_pretty_env_info()
    assert pretty.splitlines()[0] == f"ember version: {ember.__version__}"
