"""SGD's updates (``param.add_(buf, alpha=-lr)``, the momentum's ``add_(grad, alpha=1 -
dampening)``, coupled weight decay ``grad.add(param, alpha=wd)``) as one fused multiply-add per
element, bit for bit torch's (BLAS axpy on contiguous float32/float64 arrays)."""

import numpy as np
import pytest
import torch

import ember

SETTINGS = [dict(lr=0.1), dict(lr=0.1, momentum=0.9), dict(lr=0.05, momentum=0.9, dampening=0.1),
            dict(lr=0.1, weight_decay=1e-2), dict(lr=0.1, momentum=0.5, weight_decay=1e-2)]


def _run(lib, settings, start, grads, transpose=False):
    p = lib.tensor(start.T.copy() if transpose else start, requires_grad=True)
    param = p.t() if transpose else p
    optimizer = lib.optim.SGD([p], **settings)
    for g in grads:
        p.grad = lib.tensor(g.T.copy() if transpose else g)
        optimizer.step()
    return param.detach().numpy()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("settings", SETTINGS)
def test_sgd_matches_torch_bitwise(settings, dtype):
    rng = np.random.default_rng(0)
    start = rng.standard_normal((300, 200)).astype(dtype)
    grads = [rng.standard_normal((300, 200)).astype(dtype) for _ in range(3)]
    np.testing.assert_array_equal(_run(ember, settings, start, grads),
                                  _run(torch, settings, start, grads))


def test_sgd_on_small_and_transposed_parameters_matches_torch():
    rng = np.random.default_rng(1)
    for shape in [(3,), (40, 30)]:
        start = rng.standard_normal(shape).astype(np.float32)
        grads = [rng.standard_normal(shape).astype(np.float32) for _ in range(2)]
        settings = dict(lr=0.1, momentum=0.9, weight_decay=1e-3)
        transpose = len(shape) == 2
        np.testing.assert_allclose(_run(ember, settings, start, grads, transpose),
                                   _run(torch, settings, start, grads, transpose),
                                   rtol=1e-6, atol=1e-7)


def test_the_first_step_takes_axpy_from_the_openblas_numpy_loaded():
    # SciPy's copy cost the first step a ~0.3 s import of scipy.linalg; NumPy's wheels bundle
    # an OpenBLAS (scipy-openblas64) with the same kernel, bit for bit torch's
    import subprocess
    import sys

    threadpoolctl = pytest.importorskip("threadpoolctl")
    if not any(pool.get("internal_api") == "openblas" for pool in
               threadpoolctl.threadpool_info()):
        pytest.skip("NumPy's BLAS here is not OpenBLAS")
    code = ("import sys, numpy as np, ember\n"
            "p = ember.tensor(np.ones((300, 200), np.float32), requires_grad=True)\n"
            "p.grad = ember.full((300, 200), 2.0)\n"
            "ember.optim.SGD([p], lr=0.25).step()\n"
            "assert bool((p.detach() == 0.5).all())\n"
            "print('scipy.linalg' in sys.modules)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"
