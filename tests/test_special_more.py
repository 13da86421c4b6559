"""Bessel and Airy functions, incomplete gamma functions and orthogonal polynomials of
ember.special against torch.special: values, dtypes, special values, differentiability,
errors."""

import warnings

import numpy as np
import pytest
import torch

import ember
import ember.special as es
from conftest import DTYPE_PAIRS, assert_grads_match, assert_same

warnings.filterwarnings("ignore", category=RuntimeWarning)
ts = torch.special

BESSEL = ["airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0",
          "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1",
          "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "spherical_bessel_j0"]
POLYNOMIALS = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
               "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
               "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
               "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
               "laguerre_polynomial_l", "legendre_polynomial_p"]
POINTS = np.array([float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 1e-8, -1e-8, 0.5, -0.5,
                   1.0, -1.0, 2.0, -2.5, 3.7, 8.0, 8.5, -8.5, 20.0, -20.0, 30.0, 90.0, -90.0,
                   700.0])


def pair(array, dtype):
    ed, td = DTYPE_PAIRS[dtype]
    return ember.tensor(array).to(ed), torch.from_numpy(np.asarray(array).copy()).to(td)


def tol(dtype):
    return {"rtol": 2e-5, "atol": 1e-6} if dtype == "float32" else {"rtol": 1e-10,
                                                                      "atol": 1e-12}


# ================================================================ Bessel and Airy


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", BESSEL)
def test_bessel_values(name, dtype):
    rng = np.random.default_rng(len(name))
    x = np.concatenate([POINTS, rng.uniform(-15, 15, 40)])
    e, t = pair(x, dtype)
    tolerance = tol(dtype)
    if dtype == "float64" and name in ("airy_ai", "bessel_j0", "bessel_j1", "bessel_y0",
                                       "bessel_y1"):
        # torch's own double kernels for these are accurate to about 2e-7 (absolute); SciPy's
        # to machine precision
        tolerance = {"rtol": 1e-6, "atol": 5e-7}
    assert_same(getattr(es, name)(e), getattr(ts, name)(t), **tolerance)


@pytest.mark.parametrize("name", BESSEL)
def test_bessel_dtypes_and_differentiability(name):
    e, t = pair(np.array([[1, 2], [3, 4]]), "int64")
    assert_same(getattr(es, name)(e), getattr(ts, name)(t), **tol("float32"))
    e, t = pair(np.array([True, False]), "bool")
    assert_same(getattr(es, name)(e), getattr(ts, name)(t), **tol("float32"))
    for dtype in ("float16", "bfloat16", "complex64"):
        with pytest.raises(NotImplementedError) as t_info:
            getattr(ts, name)(torch.ones(2, dtype=DTYPE_PAIRS[dtype][1]))
        with pytest.raises(NotImplementedError) as e_info:
            getattr(es, name)(ember.ones(2, dtype=DTYPE_PAIRS[dtype][0]))
        assert str(e_info.value) == str(t_info.value)
    x = ember.tensor([0.5, 1.5], dtype=ember.float64, requires_grad=True)
    y = getattr(es, name)(x)
    assert not y.requires_grad and y.grad_fn is None  # torch: not differentiable
    out = ember.empty(0, dtype=ember.float64)
    assert getattr(es, name)(x.detach(), out=out) is out
    assert_same(out, getattr(ts, name)(torch.tensor([0.5, 1.5], dtype=torch.float64)))
    meta = getattr(es, name)(ember.ones(2, 3, device="meta"))
    assert meta.device.type == "meta" and tuple(meta.shape) == (2, 3)


# ================================================================ incomplete gamma


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("name", ["gammainc", "gammaincc"])
def test_incomplete_gamma_values(name, dtype):
    rng = np.random.default_rng(1)
    a = np.concatenate([rng.uniform(0.01, 20, 30), [0.0, 0.0, -1.0, 1.0, 1.0, np.inf, np.nan,
                                                    2.0]])
    x = np.concatenate([rng.uniform(0, 25, 30), [0.0, 1.0, 1.0, 0.0, np.inf, 1.0, 1.0,
                                                 np.nan]])
    (ea, ta), (ex, tx) = pair(a, dtype), pair(x, dtype)
    tolerance = {"rtol": 1e-2, "atol": 1e-2} if dtype in ("float16", "bfloat16") else tol(dtype)
    assert_same(getattr(es, name)(ea, ex), getattr(ts, name)(ta, tx), **tolerance)
    # broadcasting, and a 0-dim tensor of a wider dtype does not promote
    assert_same(getattr(es, name)(ea.reshape(-1, 1), ex[:3]),
                getattr(ts, name)(ta.reshape(-1, 1), tx[:3]), **tolerance)
    wide_e, wide_t = ember.tensor(2.0, dtype=ember.float64), torch.tensor(2.0,
                                                                          dtype=torch.float64)
    assert_same(getattr(es, name)(ea, wide_e), getattr(ts, name)(ta, wide_t), **tolerance)


@pytest.mark.parametrize("name", ["igamma", "igammac"])
def test_incomplete_gamma_gradients_methods_and_errors(name):
    rng = np.random.default_rng(2)
    a, x = rng.uniform(0.5, 5, (2, 3)), rng.uniform(0.1, 6, (2, 3))
    assert_grads_match(lambda u: getattr(ember, name)(ember.tensor(a), u),
                       lambda u: getattr(torch, name)(torch.tensor(a), u), x,
                       double_backward=True)
    for lib in (ember, torch):
        with pytest.raises(NotImplementedError,
                           match=f"the derivative for '{name}: input' is not implemented."):
            lib_a = lib.tensor(a, requires_grad=True)
            getattr(lib, name)(lib_a, lib.tensor(x)).sum().backward()
    e, t = ember.tensor(a), torch.tensor(a)
    assert_same(getattr(e, name)(ember.tensor(x)), getattr(t, name)(torch.tensor(x)))
    getattr(e, name + "_")(ember.tensor(x))
    getattr(t, name + "_")(torch.tensor(x))
    assert_same(e, t)
    special_name = {"igamma": "gammainc", "igammac": "gammaincc"}[name]
    pair = (ember.tensor([0.5, 2.0]), ember.tensor([1.0, 3.0]))
    assert getattr(ember, name)(*pair).tolist() == getattr(es, special_name)(*pair).tolist()
    for bad in (lambda m: getattr(m, name)(m.ones(2, dtype=m.int64), m.ones(2, dtype=m.int64)),
                lambda m: getattr(m, name)(m.ones(2, dtype=m.complex64), m.ones(2))):
        with pytest.raises(NotImplementedError) as t_info:
            bad(torch)
        with pytest.raises(NotImplementedError) as e_info:
            bad(ember)
        assert str(e_info.value) == str(t_info.value)
    with pytest.raises(TypeError):
        getattr(ember, name)(ember.ones(2), 2.0)


# ================================================================ orthogonal polynomials


def polynomial_grid():
    """x across and beyond [-1, 1] (and the ends of [0, 1] for the shifted ones) against
    degrees that are negative, fractional, large or not finite."""
    xs = np.array([-3, -1.5, -1, -0.999, -0.5, -1e-3, 0, 0.3, 0.5, 0.9, 1, 1.2, 2.5, 7,
                   np.inf, -np.inf])
    ns = np.array([-2, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 15, 2.7, -0.5, 30, np.nan,
                   np.inf])
    return np.meshgrid(xs, ns)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomial_values(name, dtype):
    x, n = polynomial_grid()
    (ex, tx), (en, tn) = pair(x, dtype), pair(n, dtype)
    rtol = 1e-4 if dtype == "float32" else 1e-9
    assert_same(getattr(es, name)(ex, en), getattr(ts, name)(tx, tn), rtol=rtol, atol=1e-5)


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomial_operands_and_dtypes(name):
    x = np.array([0.25, -0.7, 1.5])
    fe, ft = getattr(es, name), getattr(ts, name)
    e, t = pair(x, "float64")
    assert_same(fe(e, 3), ft(t, 3))
    assert_same(fe(e, 3.9), ft(t, 3.9))
    assert_same(fe(0.5, ember.tensor([0, 1, 2, 5])), ft(0.5, torch.tensor([0, 1, 2, 5])))
    assert_same(fe(ember.tensor([1, 2]), 2), ft(torch.tensor([1, 2]), 2))  # ints: float32
    assert_same(fe(ember.tensor([1.0]), ember.tensor([3.0], dtype=ember.float64)),
                ft(torch.tensor([1.0]), torch.tensor([3.0], dtype=torch.float64)))
    assert_same(fe(e.reshape(3, 1), ember.tensor([0, 4, 9])),
                ft(t.reshape(3, 1), torch.tensor([0, 4, 9])))
    for dtype in ("float16", "complex64"):
        with pytest.raises(NotImplementedError) as t_info:
            ft(torch.ones(2, dtype=DTYPE_PAIRS[dtype][1]), 3)
        with pytest.raises(NotImplementedError) as e_info:
            fe(ember.ones(2, dtype=DTYPE_PAIRS[dtype][0]), 3)
        assert str(e_info.value) == str(t_info.value)
    with pytest.raises(TypeError):
        fe(2, 3)
    y = fe(ember.tensor(x, requires_grad=True), 3)
    assert not y.requires_grad  # torch: not differentiable
    out = ember.empty(0, dtype=ember.float64)
    assert fe(e, 2, out=out) is out
    assert_same(out, ft(t, 2))


def test_special_namespace_matches_torch():
    documented = {"common_args", "multi_dim_common", "Tensor", "torch"}
    missing = {n for n in dir(torch.special) if not n.startswith("_")} - set(dir(es))
    assert missing <= documented, missing
