"""Reductions, scans, sorting and counting ops against torch: values, dtypes, errors, grads."""

import math
import warnings

import numpy as np
import pytest
import torch

import ember
from conftest import assert_grads_match, assert_same, make_pair

NAN = float("nan")


def rand(shape, dtype="float64", seed=0, low=-3, high=4):
    """Random data of a NumPy dtype name (ints in [low, high), bools, floats, complex)."""
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype in ("uint8",):
        return rng.integers(0, high + 3, shape).astype(dtype)
    if dtype.startswith(("int", "uint")):
        return rng.integers(low, high, shape).astype(dtype)
    if dtype.startswith("complex"):
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def compare(fn, *arrays, rtol=None, atol=None, transpose=False):
    """Run ``fn(module, *tensors)`` with ember and torch: same result, or same exception type."""
    if rtol is not None and atol is None:
        atol = rtol
    pairs = [make_pair(a) for a in arrays]
    if transpose:
        pairs = [(e.transpose(0, -1), t.transpose(0, -1)) for e, t in pairs]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            expected = fn(torch, *[t for _, t in pairs])
        except Exception as error:  # torch rejects it: ember must raise the same type
            with pytest.raises(type(error)):
                fn(ember, *[e for e, _ in pairs])
            return None
        actual = fn(ember, *[e for e, _ in pairs])
    assert_same(actual, expected, rtol=rtol, atol=atol)
    return actual, expected


def compare_meta(fn, shape, dtype="float32"):
    """Shapes and dtypes on the meta device match torch's."""
    t = torch.empty(shape, dtype=getattr(torch, dtype), device="meta")
    e = ember.empty(shape, dtype=getattr(ember, dtype), device="meta")
    expected, actual = fn(torch, t), fn(ember, e)
    expected = expected if isinstance(expected, tuple) else (expected,)
    actual = actual if isinstance(actual, tuple) else (actual,)
    assert len(expected) == len(actual)
    for a, x in zip(actual, expected):
        assert a.device.type == "meta"
        assert tuple(a.shape) == tuple(x.shape)
        assert a.dtype.name == str(x.dtype).removeprefix("torch.")


# ---------------------------------------------------------------- sum-like reductions

DIMS = [None, 0, -1, (0, 2), (-1, 0), ()]
SUM_DTYPES = ["float32", "float64", "int32", "int64", "uint8", "bool", "complex64"]


@pytest.mark.parametrize("dtype", SUM_DTYPES)
@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("keepdim", [False, True])
def test_sum_nansum_mean_prod(dtype, dim, keepdim):
    a = rand((3, 4, 2), dtype, seed=1)
    kw = {"dim": dim}
    compare(lambda m, x: m.sum(x, keepdim=keepdim, **kw), a, rtol=1e-5, atol=1e-5)
    compare(lambda m, x: m.nansum(x, keepdim=keepdim, **kw), a, rtol=1e-5, atol=1e-5)
    compare(lambda m, x: m.mean(x, keepdim=keepdim, **kw), a, rtol=1e-5, atol=1e-5)
    compare(lambda m, x: x.nanmean(keepdim=keepdim, **kw), a, rtol=1e-5, atol=1e-5)
    compare(lambda m, x: m.count_nonzero(x, **kw), a)
    if isinstance(dim, int):
        compare(lambda m, x: m.prod(x, dim, keepdim=keepdim), a, rtol=1e-5, atol=1e-5)
    elif dim is None:
        compare(lambda m, x: m.prod(x), a, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", ["float32", "int8", "bool", "float64"])
def test_sum_prod_mean_dtype_argument_and_promotion(dtype):
    a = rand((3, 4), dtype, seed=2)
    compare(lambda m, x: m.sum(x, 1, dtype=m.float64), a)
    compare(lambda m, x: m.sum(x, dtype=m.int16), a)
    compare(lambda m, x: m.prod(x, 0, dtype=m.float32), a, rtol=1e-5)
    compare(lambda m, x: m.mean(x, 0, dtype=m.float64), a)
    compare(lambda m, x: x.cumsum(1, dtype=m.float64), a)
    compare(lambda m, x: x.cumprod(0), a)


def test_half_precision_sums_accumulate_in_float32():
    a = (np.arange(2048) % 7).astype(np.float16)
    compare(lambda m, x: x.sum(), a)
    compare(lambda m, x: x.mean(), a)
    compare(lambda m, x: x.cumsum(0), a, rtol=1e-3, atol=1e-3)
    e = ember.tensor(a.astype(np.float32)).to(ember.bfloat16)
    t = torch.from_numpy(a.astype(np.float32)).to(torch.bfloat16)
    assert_same(e.sum(), t.sum())
    assert_same(e.mean(0), t.mean(0))


def test_nan_handling_of_nansum_nanmean():
    a = np.array([[1.0, NAN, 3.0], [NAN, NAN, NAN]])
    compare(lambda m, x: m.nansum(x, 1), a)
    compare(lambda m, x: m.nanmean(x, 1), a)
    compare(lambda m, x: m.nanmean(x), a)
    compare(lambda m, x: m.sum(x, 1), a)


@pytest.mark.parametrize("shape", [(0,), (0, 3), (2, 0)])
def test_zero_size_sum_like(shape):
    a = np.zeros(shape)
    for dim in (None, 0, -1):
        kw = {} if dim is None else {"dim": dim}
        compare(lambda m, x: m.sum(x, **kw), a)
        compare(lambda m, x: m.prod(x, **kw), a)
        compare(lambda m, x: m.mean(x, **kw), a)
        compare(lambda m, x: m.logsumexp(x, dim if dim is not None else 0), a)
        compare(lambda m, x: m.amax(x, **kw), a)
        compare(lambda m, x: m.max(x, **kw), a)
        compare(lambda m, x: m.argmax(x, **kw), a)
        compare(lambda m, x: m.all(x, **kw), a)
        compare(lambda m, x: m.any(x, **kw), a)
        compare(lambda m, x: m.var(x, **kw), a)
        compare(lambda m, x: m.norm(x, **kw), a)
        compare(lambda m, x: m.median(x, **kw), a)


def test_mean_of_integers_raises_like_torch():
    compare(lambda m, x: m.mean(x), np.array([1, 2]))
    compare(lambda m, x: m.nanmean(x), np.array([1, 2]))
    with pytest.raises(RuntimeError, match="mean"):
        ember.tensor([1, 2]).mean()


def test_sum_out_and_methods():
    e, t = make_pair(rand((3, 4)))
    out_e, out_t = ember.empty(4, dtype=ember.float64), torch.empty(4, dtype=torch.float64)
    ember.sum(e, 0, out=out_e)
    torch.sum(t, 0, out=out_t)
    assert_same(out_e, out_t)
    values = ember.empty(0, dtype=ember.float64)
    indices = ember.empty(0, dtype=ember.int64)
    r = ember.max(e, 1, out=(values, indices))
    assert r.values is values and r.indices is indices
    assert_same(r, torch.max(t, 1))


# ---------------------------------------------------------------- var / std


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex128", "int64"])
@pytest.mark.parametrize("dim", [None, 1, (0, 2), -1])
@pytest.mark.parametrize("correction", [0, 1, 2])
def test_var_std(dtype, dim, correction):
    a = rand((3, 4, 2), dtype, seed=3)
    kw = {} if dim is None else {"dim": dim}
    for name in ("var", "std", "var_mean", "std_mean"):
        compare(lambda m, x: getattr(m, name)(x, correction=correction, keepdim=True, **kw), a,
                rtol=1e-5, atol=1e-6)
        compare(lambda m, x: getattr(m, name)(x, **kw), a, rtol=1e-5, atol=1e-6)


def test_var_legacy_unbiased_overloads_and_warnings():
    a = rand((4, 5), seed=4)
    compare(lambda m, x: m.var(x, False), a)
    compare(lambda m, x: m.std(x, 1, False, True), a)
    compare(lambda m, x: x.var(1, unbiased=True), a)
    compare(lambda m, x: m.var(x, 0, correction=5), a)
    compare(lambda m, x: m.var(x, unbiased=True, correction=1), a)
    with pytest.warns(UserWarning, match="degrees of freedom"):
        ember.var(ember.tensor([1.0]))


# ---------------------------------------------------------------- max / min / amax / argmax


MAX_DTYPES = ["float32", "float64", "int16", "int64", "uint8", "bool", "complex64"]


@pytest.mark.parametrize("dtype", MAX_DTYPES)
@pytest.mark.parametrize("transpose", [False, True])
def test_max_min_forms(dtype, transpose):
    a = rand((3, 5, 4), dtype, seed=5, low=-2, high=2)  # small range: many ties
    for name in ("max", "min"):
        compare(lambda m, x: getattr(m, name)(x), a, transpose=transpose)
        for dim in (0, 1, -1):
            for keepdim in (False, True):
                result = compare(lambda m, x: getattr(m, name)(x, dim, keepdim), a,
                                 transpose=transpose)
                if result is not None:
                    assert type(result[0]).__name__ == name
                    assert_same(result[0].indices, result[1].indices)
                    assert_same(result[0].values, result[1].values)
        compare(lambda m, x: getattr(x, name)(dim=1), a, transpose=transpose)
    for name in ("amax", "amin", "argmax", "argmin", "aminmax"):
        compare(lambda m, x: getattr(m, name)(x), a, transpose=transpose)
    for dim in ((0, 2), -1, 1):
        compare(lambda m, x: m.amax(x, dim), a, transpose=transpose)
        compare(lambda m, x: m.amin(x, dim, keepdim=True), a, transpose=transpose)
    for dim in (0, -1):
        compare(lambda m, x: m.argmax(x, dim, keepdim=True), a, transpose=transpose)
        compare(lambda m, x: m.argmin(x, dim), a, transpose=transpose)
        compare(lambda m, x: m.aminmax(x, dim=dim, keepdim=True), a, transpose=transpose)
    compare(lambda m, x: m.argmax(x, keepdim=True), a)


def test_max_binary_form_delegates_to_maximum():
    a, b = rand((3, 4), seed=6), rand((4,), seed=7)
    compare(lambda m, x, y: m.max(x, y), a, b)
    compare(lambda m, x, y: x.min(y), a, b)


def test_max_nan_propagates_with_its_index():
    a = np.array([[1.0, NAN, 3.0, NAN], [2.0, 5.0, 1.0, 0.0]])
    for name in ("max", "min", "amax", "amin", "argmax", "argmin"):
        compare(lambda m, x: getattr(m, name)(x), a)
        compare(lambda m, x: getattr(m, name)(x, 1), a)
    compare(lambda m, x: m.max(x, 0), a)


def test_max_zero_dim_and_empty_errors():
    compare(lambda m, x: m.max(x, 0), np.array(5.0))
    compare(lambda m, x: m.max(x, -1, keepdim=True), np.array(5.0))
    compare(lambda m, x: m.argmax(x, 0), np.array(5.0))
    compare(lambda m, x: m.max(x), np.zeros((0,)))
    with pytest.raises(RuntimeError, match="Expected reduction dim to be specified"):
        ember.zeros(0).max()
    with pytest.raises(IndexError, match="Expected reduction dim 0 to have non-zero size"):
        ember.zeros(0, 3).max(0)
    compare(lambda m, x: m.max(x, 1), np.zeros((0, 3)))
    compare(lambda m, x: m.max(x, 2), np.zeros((2, 3)))
    compare(lambda m, x: m.aminmax(x), np.zeros((0,)))
    compare(lambda m, x: m.argmin(x), np.zeros((0,)))


# ---------------------------------------------------------------- all / any


@pytest.mark.parametrize("dtype", ["bool", "uint8", "float32", "int64"])
def test_all_any(dtype):
    a = rand((3, 4, 2), dtype, seed=8, low=0, high=2)
    for name in ("all", "any"):
        compare(lambda m, x: getattr(m, name)(x), a)
        for dim in (0, -1, (0, 2)):
            compare(lambda m, x: getattr(m, name)(x, dim), a)
            compare(lambda m, x: getattr(x, name)(dim, keepdim=True), a)


# ---------------------------------------------------------------- norm, logsumexp


@pytest.mark.parametrize("p", ["fro", 2, 1, 0, 3, 0.5, 1.5, math.inf, -math.inf, -1])
@pytest.mark.parametrize("dim", [None, 1, (0, 1), -1])
def test_norm_values(p, dim):
    a = rand((3, 4), seed=9)
    compare(lambda m, x: m.norm(x, p, dim), a, rtol=1e-6)
    compare(lambda m, x: m.norm(x, p, dim, keepdim=True), a.astype(np.float32), rtol=1e-5)
    compare(lambda m, x: x.norm(p, dim), rand((3, 4), "complex128", seed=9), rtol=1e-6)


def test_norm_errors_dtype_and_nuclear():
    compare(lambda m, x: m.norm(x), np.array([1, 2]))
    compare(lambda m, x: m.norm(x, dtype=m.float64), np.array([1.0, 2.0], dtype=np.float32))
    compare(lambda m, x: m.norm(x, "nuc"), rand((3, 4), seed=10), rtol=1e-6)
    compare(lambda m, x: m.norm(x, "nuc", dim=(0, 2)), rand((3, 2, 4), seed=10), rtol=1e-6)
    compare(lambda m, x: m.norm(x, "fro", dim=(0, 2)), rand((3, 2, 4), seed=10))


@pytest.mark.parametrize("p", [2, 1, 3, 0.5, 1.5, math.inf, "fro"])
def test_norm_gradients(p):
    a = rand((3, 4), seed=11)
    assert_grads_match(lambda x: ember.norm(x, p, 1), lambda x: torch.norm(x, p, 1), a,
                       double_backward=p not in (math.inf,))
    assert_grads_match(lambda x: ember.norm(x, p), lambda x: torch.norm(x, p), a)


def test_norm_gradient_at_zero_is_zero_like_torch():
    a = np.zeros((2, 3))
    assert_grads_match(lambda x: ember.norm(x, dim=1), lambda x: torch.norm(x, dim=1), a)


def test_nuclear_norm_gradient():
    pytest.importorskip("ember.linalg")
    if not hasattr(ember.linalg, "svd"):
        pytest.skip("ember.linalg.svd has not landed")
    a = rand((3, 4), seed=12)
    assert_grads_match(lambda x: ember.norm(x, "nuc"), lambda x: torch.norm(x, "nuc"), a)


@pytest.mark.parametrize("dim", [0, -1, (0, 1)])
def test_logsumexp(dim):
    a = rand((3, 4), seed=13) * 50
    compare(lambda m, x: m.logsumexp(x, dim), a)
    compare(lambda m, x: x.logsumexp(dim, keepdim=True), a.astype(np.float32), rtol=1e-5)
    compare(lambda m, x: m.logsumexp(x, dim), np.array([[1, 2], [3, 4], [5, 6]]))
    compare(lambda m, x: m.logsumexp(x, 0), np.array([-math.inf, -math.inf]))
    compare(lambda m, x: m.logsumexp(x, 0), np.array([math.inf, 1.0]))
    compare(lambda m, x: m.logsumexp(x, 0), np.array([NAN, 1.0]))
    assert_grads_match(lambda x: ember.logsumexp(x, dim), lambda x: torch.logsumexp(x, dim), a,
                       double_backward=True)



def test_logsumexp_complex_gradient_as_torch():
    rng = np.random.default_rng(3)
    z = rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))
    assert_grads_match(lambda x: ember.logsumexp(x, 1), lambda x: torch.logsumexp(x, 1), z)
    x = ember.tensor(z, requires_grad=True)
    assert ember.autograd.gradcheck(lambda t: ember.logsumexp(t, 1), (x,))
    assert ember.autograd.gradgradcheck(lambda t: ember.logsumexp(t, 1), (x,))


# ---------------------------------------------------------------- gradients of reductions


@pytest.mark.parametrize("dim", [None, 1, -1, (0, 2)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_reduction_gradients(dim, keepdim):
    a = rand((2, 3, 4), seed=14)
    for name in ("sum", "mean", "nansum", "amax", "amin", "var", "std"):
        kw = {"dim": () if dim is None and name in ("amax", "amin") else dim}
        assert_grads_match(lambda x: getattr(ember, name)(x, keepdim=keepdim, **kw),
                           lambda x: getattr(torch, name)(x, keepdim=keepdim, **kw), a,
                           double_backward=True)
    if not isinstance(dim, tuple):
        d = 0 if dim is None else dim
        assert_grads_match(lambda x: ember.prod(x, d, keepdim=keepdim),
                           lambda x: torch.prod(x, d, keepdim=keepdim), a, double_backward=True)
        for name in ("max", "min", "median", "nanmedian", "mode"):
            assert_grads_match(lambda x: getattr(ember, name)(x, d, keepdim=keepdim),
                               lambda x: getattr(torch, name)(x, d, keepdim=keepdim), a,
                               double_backward=True)
        assert_grads_match(lambda x: ember.kthvalue(x, 2, d, keepdim=keepdim),
                           lambda x: torch.kthvalue(x, 2, d, keepdim=keepdim), a,
                           double_backward=True)


def test_gradients_with_ties_nan_and_zeros():
    ties = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])
    for name in ("max", "min", "amax", "amin", "median", "nanmedian"):
        assert_grads_match(lambda x: getattr(ember, name)(x), lambda x: getattr(torch, name)(x),
                           ties, double_backward=True)
    assert_grads_match(lambda x: ember.amax(x, 1), lambda x: torch.amax(x, 1), ties)
    with_nan = np.array([1.0, NAN, 3.0])
    for name in ("max", "amax", "median"):
        assert_grads_match(lambda x: getattr(ember, name)(x), lambda x: getattr(torch, name)(x),
                           with_nan)
    zeros = np.array([[1.0, 0.0, 3.0], [0.0, 0.0, 2.0], [1.5, 2.0, -3.0]])
    for dim in (0, 1):
        assert_grads_match(lambda x: ember.prod(x, dim), lambda x: torch.prod(x, dim), zeros,
                           double_backward=True)
        # (double backward of cumprod through zeros is not supported: first order only)
        assert_grads_match(lambda x: ember.cumprod(x, dim), lambda x: torch.cumprod(x, dim),
                           zeros)
    assert_grads_match(lambda x: ember.prod(x), lambda x: torch.prod(x), zeros[2:])
    assert_grads_match(lambda x: ember.prod(x), lambda x: torch.prod(x), zeros[:1])


def test_complex_gradients():
    a = rand((3, 4), "complex128", seed=15)
    for fn in (lambda m, x: m.sum(x, 1), lambda m, x: m.prod(x, 1), lambda m, x: m.var(x, 0),
               lambda m, x: m.norm(x), lambda m, x: m.mean(x), lambda m, x: m.cumsum(x, 1),
               lambda m, x: m.cumprod(x, 1)):
        assert_grads_match(lambda x: fn(ember, x), lambda x: fn(torch, x), a)


# ---------------------------------------------------------------- median, mode, quantile


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64"])
def test_median_nanmedian_values(dtype):
    a = rand((4, 7), dtype, seed=16, low=-100, high=100)
    b = rand((4, 6), dtype, seed=17, low=-100, high=100)
    for name in ("median", "nanmedian"):
        for x in (a, b):
            compare(lambda m, t: getattr(m, name)(t), x)
            compare(lambda m, t: getattr(m, name)(t, 1), x)
            compare(lambda m, t: getattr(t, name)(0, keepdim=True), x)


def test_median_nan_semantics():
    a = np.array([[1.0, NAN, 3.0, NAN, 0.0], [NAN, 5.0, 1.0, NAN, NAN], [4.0, 2.0, 1.0, 3.0, NAN]])
    for name in ("median", "nanmedian"):
        compare(lambda m, x: getattr(m, name)(x), a)
        compare(lambda m, x: getattr(m, name)(x, 1), a)
        compare(lambda m, x: getattr(m, name)(x), a[2])
    # all-NaN slices: NaN (torch's index into an all-NaN slice is an implementation detail)
    e, t = make_pair(np.full((2, 5), NAN))
    assert_same(ember.nanmedian(e, 1).values, torch.nanmedian(t, 1).values)
    assert_same(ember.nanmedian(e), torch.nanmedian(t))


def test_median_ties_values_and_index_points_at_value():
    a = np.array([2.0, 1.0, 2.0, 1.0, 2.0, 1.0])
    e, t = make_pair(a)
    r = ember.median(e, 0)
    assert_same(r.values, torch.median(t, 0).values)
    assert e[int(r.indices)].item() == r.values.item()


@pytest.mark.parametrize("dtype", ["float64", "int64", "int8", "bool"])
def test_mode(dtype):
    a = rand((4, 9), dtype, seed=18, low=0, high=4)
    compare(lambda m, x: m.mode(x), a)
    compare(lambda m, x: m.mode(x, 0, keepdim=True), a)
    compare(lambda m, x: m.mode(x), np.array([2, 1, 2, 1, 3, 1, 2]))
    compare(lambda m, x: m.mode(x, 0), np.array(3.0))


@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
def test_quantile(interpolation):
    a = rand((4, 6), seed=19)
    q = np.array([0.0, 0.25, 0.5, 0.9, 1.0])
    for name in ("quantile", "nanquantile"):
        def fn(m, x, qq, dim=None, keepdim=False, name=name):
            return getattr(m, name)(x, qq, dim, keepdim, interpolation=interpolation)
        compare(lambda m, x: fn(m, x, 0.3), a)
        compare(lambda m, x: fn(m, x, 0.5, 1, True), a)
        compare(lambda m, x, qq: fn(m, x, qq), a, q)
        compare(lambda m, x, qq: fn(m, x, qq, -1), a, q)
        compare(lambda m, x, qq: fn(m, x, qq, 0, True), a, q)
        compare(lambda m, x, qq: fn(m, x, qq, None, True), a, q)
        compare(lambda m, x: fn(m, x, 0.4, 1), np.array([[1.0, NAN, 3.0], [NAN] * 3]))
        compare(lambda m, x: fn(m, x, 0.3, 0), np.array(2.0))
    assert_grads_match(
        lambda x: ember.quantile(x, 0.3, 1, interpolation=interpolation),
        lambda x: torch.quantile(x, 0.3, 1, interpolation=interpolation), a,
        double_backward=True)
    assert_grads_match(
        lambda x: ember.quantile(x, ember.tensor(q), interpolation=interpolation),
        lambda x: torch.quantile(x, torch.from_numpy(q), interpolation=interpolation), a)


def test_quantile_errors():
    compare(lambda m, x: m.quantile(x, 0.5), np.array([1, 2]))
    compare(lambda m, x: m.quantile(x, 1.5), np.array([1.0, 2.0]))
    compare(lambda m, x: m.quantile(x, 0.5), np.zeros(0))
    compare(lambda m, x, q: m.quantile(x, q), np.array([1.0, 2.0]), np.array([0.5, 2.0]))
    compare(lambda m, x, q: m.quantile(x, q), np.array([1.0, 2.0]), np.ones((2, 2)) / 2)
    compare(lambda m, x, q: m.quantile(x, q), np.array([1.0, 2.0]),
            np.array([0.5], dtype=np.float32))
    compare(lambda m, x: m.quantile(x, 0.5, interpolation="cubic"), np.array([1.0, 2.0]))


# ---------------------------------------------------------------- scans


SCAN_DTYPES = ["float32", "float64", "int32", "uint8", "bool", "complex128"]


@pytest.mark.parametrize("dtype", SCAN_DTYPES)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_scans(dtype, dim):
    a = rand((3, 5), dtype, seed=20, low=-2, high=3)
    compare(lambda m, x: m.cumsum(x, dim), a, rtol=1e-5)
    compare(lambda m, x: m.cumprod(x, dim), a, rtol=1e-5)
    compare(lambda m, x: m.cummax(x, dim), a)
    compare(lambda m, x: m.cummin(x, dim), a)
    compare(lambda m, x: m.logcumsumexp(x, dim), a, rtol=1e-5)
    compare(lambda m, x: m.cumsum(x, dim), a, transpose=True, rtol=1e-5)
    compare(lambda m, x: m.cummax(x, dim), a, transpose=True)


def test_scan_nan_zero_dim_and_empty():
    a = np.array([1.0, 3.0, NAN, 3.0, NAN, 5.0, 0.0])
    for name in ("cummax", "cummin", "cumsum", "cumprod", "logcumsumexp"):
        compare(lambda m, x: getattr(m, name)(x, 0), a)
        compare(lambda m, x: getattr(m, name)(x, 0), np.array(2.5))
        compare(lambda m, x: getattr(m, name)(x, -1), np.array(2.5))
        compare(lambda m, x: getattr(m, name)(x, 1), np.zeros((2, 0)))
    compare(lambda m, x: m.logcumsumexp(x, 0), np.array([-1000.0, 0.0, 1000.0, -math.inf]))


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_logcumsumexp_complex_like_torch(dtype):
    """torch's complex scan keeps the imaginary part of the larger term, unwrapped (beyond
    pi), and handles infinite and nan terms as its log-add-exp does."""
    rng = np.random.default_rng(6)
    wide = (rng.standard_normal((4, 6)) * 3 + 5j * rng.standard_normal((4, 6))).astype(dtype)
    for dim in (0, 1):
        compare(lambda m, x: m.logcumsumexp(x, dim), wide, rtol=1e-5)
    inf, nan = math.inf, math.nan
    special = np.array([3j, 2 + 3j, -inf + 0j, inf + 1j, 1 + 1j, complex(nan, 0), 1j], dtype)
    compare(lambda m, x: m.logcumsumexp(x, 0), special)
    compare(lambda m, x: m.logcumsumexp(x, 0), np.array([-inf + 0j, -inf + 2j, 1], dtype))


def test_cumsum_inplace_and_out():
    e, t = make_pair(rand((3, 4), seed=21))
    e.cumsum_(1)
    t.cumsum_(1)
    assert_same(e, t)
    out = ember.empty(3, 4, dtype=ember.float64)
    ember.cumprod(e, 0, out=out)
    assert_same(out, torch.cumprod(t, 0))


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_scan_gradients(dim):
    a = rand((3, 4), seed=22)
    for name in ("cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"):
        assert_grads_match(lambda x: getattr(ember, name)(x, dim),
                           lambda x: getattr(torch, name)(x, dim), a, double_backward=True)
    ties = np.array([[1.0, 3.0, 3.0, 2.0], [2.0, 2.0, 2.0, 5.0]])
    assert_grads_match(lambda x: ember.cummax(x, -1), lambda x: torch.cummax(x, -1), ties)


# ---------------------------------------------------------------- diff


@pytest.mark.parametrize("dtype", ["float64", "int64", "bool"])
@pytest.mark.parametrize("n", [0, 1, 2, 5])
def test_diff(dtype, n):
    a = rand((3, 4), dtype, seed=23)
    compare(lambda m, x: m.diff(x, n), a)
    compare(lambda m, x: m.diff(x, n, 0), a)
    compare(lambda m, x, p: m.diff(x, n, 0, prepend=p), a, a[:2])
    compare(lambda m, x, p: x.diff(n, -1, append=p), a, a[:, :1])
    compare(lambda m, x, p, q: m.diff(x, n, 1, p, q), a, a[:, :2], a[:, :1])


def test_diff_errors_and_gradients():
    compare(lambda m, x: m.diff(x), np.array(1.0))
    compare(lambda m, x: m.diff(x, -1), np.array([1.0, 2.0]))
    a = rand((3, 5), seed=24)
    for n in (1, 2, 6):
        assert_grads_match(lambda x: ember.diff(x, n), lambda x: torch.diff(x, n), a,
                           double_backward=True)
    assert_grads_match(lambda x, p: ember.diff(x, 2, 0, prepend=p),
                       lambda x, p: torch.diff(x, 2, 0, prepend=p), a, a[:1])


# ---------------------------------------------------------------- sort, argsort, topk, kthvalue


SORT_DTYPES = ["float32", "float64", "int16", "int64", "uint8", "bool"]


@pytest.mark.parametrize("dtype", SORT_DTYPES)
@pytest.mark.parametrize("dim", [0, -1])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_stable(dtype, dim, descending):
    a = rand((4, 9), dtype, seed=25, low=-3, high=3)
    compare(lambda m, x: m.sort(x, dim=dim, descending=descending, stable=True), a)
    compare(lambda m, x: x.sort(dim=dim, descending=descending, stable=True), a, transpose=True)
    compare(lambda m, x: m.argsort(x, dim=dim, descending=descending, stable=True), a)
    compare(lambda m, x: m.msort(x), a)


def test_sort_nan_zero_dim_empty_and_complex():
    a = np.array([3.0, NAN, 1.0, -math.inf, NAN, math.inf, 0.0])
    compare(lambda m, x: m.sort(x, stable=True), a)
    compare(lambda m, x: m.sort(x, descending=True, stable=True), a)
    compare(lambda m, x: m.sort(x), np.array(2.0))
    compare(lambda m, x: m.sort(x, 0), np.zeros((0, 3)))
    compare(lambda m, x: m.sort(x), rand((3,), "complex64"))
    compare(lambda m, x: m.sort(x, 2), rand((3, 2)))


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("k", [0, 1, 3])
def test_topk_kthvalue_distinct_values(largest, k):
    a = np.random.default_rng(26).permutation(40).reshape(5, 8).astype(np.float64)
    compare(lambda m, x: m.topk(x, k, largest=largest), a)
    compare(lambda m, x: m.topk(x, k, 0, largest, True), a)
    compare(lambda m, x: x.topk(k, dim=-1, largest=largest), a.astype(np.int32))
    if k:
        compare(lambda m, x: m.kthvalue(x, k), a)
        compare(lambda m, x: m.kthvalue(x, k, 0, True), a)
        assert_grads_match(lambda x: ember.topk(x, k, largest=largest),
                           lambda x: torch.topk(x, k, largest=largest), a, double_backward=True)


def test_topk_kthvalue_errors_and_ties():
    compare(lambda m, x: m.topk(x, 6), np.array([1, 3, 3, 2, 3]))
    compare(lambda m, x: m.kthvalue(x, 0), np.array([1, 3, 3, 2, 3]))
    compare(lambda m, x: m.kthvalue(x, 6), np.array([1, 3, 3, 2, 3]))
    compare(lambda m, x: m.topk(x, 1), np.array(2.0))
    e, t = make_pair(np.array([1, 3, 3, 2, 3]))
    assert_same(ember.topk(e, 3).values, torch.topk(t, 3).values)
    assert_same(ember.kthvalue(e, 3).values, torch.kthvalue(t, 3).values)
    compare(lambda m, x: m.topk(x, 2), np.array([1.0, NAN, 3.0]))


def test_sort_gradients():
    a = rand((3, 6), seed=27)
    for dim in (0, 1):
        assert_grads_match(lambda x: ember.sort(x, dim), lambda x: torch.sort(x, dim), a,
                           double_backward=True)
        assert_grads_match(lambda x: ember.sort(x, dim, True), lambda x: torch.sort(x, dim, True),
                           a)
    assert_grads_match(lambda x: ember.msort(x), lambda x: torch.msort(x), a)


# ---------------------------------------------------------------- unique


@pytest.mark.parametrize("dtype", ["int64", "float64", "bool", "uint8"])
@pytest.mark.parametrize("inverse", [False, True])
@pytest.mark.parametrize("counts", [False, True])
def test_unique(dtype, inverse, counts):
    a = rand((4, 5), dtype, seed=28, low=0, high=4)
    compare(lambda m, x: m.unique(x, return_inverse=inverse, return_counts=counts), a)
    compare(lambda m, x: x.unique(sorted=False, return_inverse=inverse, return_counts=counts), a)
    for dim in (0, 1, -1):
        rows = np.concatenate([a, a[:2]], 0) if dim == 0 else np.concatenate([a, a[:, :2]], 1)
        compare(lambda m, x: m.unique(x, return_inverse=inverse, return_counts=counts,
                                      dim=dim), rows)
        compare(lambda m, x: m.unique_consecutive(x, return_inverse=inverse,
                                                  return_counts=counts, dim=dim), rows)
    compare(lambda m, x: m.unique_consecutive(x, return_inverse=inverse, return_counts=counts),
            np.repeat(a.ravel(), 2))


def test_unique_edge_cases():
    compare(lambda m, x: m.unique(x), np.array([3.0, NAN, NAN, 1.0]))
    compare(lambda m, x: m.unique(x, return_inverse=True, return_counts=True), np.zeros(0))
    compare(lambda m, x: m.unique(x, return_inverse=True), np.array(4))
    compare(lambda m, x: m.unique_consecutive(x, return_counts=True), np.zeros(0))
    compare(lambda m, x: m.unique(x, dim=0, return_counts=True), np.zeros((0, 3)))


# ---------------------------------------------------------------- bincount, histc, histogram


def test_bincount():
    a = np.array([1, 1, 3, 0, 7, 3])
    compare(lambda m, x: m.bincount(x), a)
    compare(lambda m, x: m.bincount(x, minlength=10), a)
    compare(lambda m, x: x.bincount(), a.astype(np.uint8))
    for w in (np.arange(6, dtype=np.float32), np.arange(6.0), np.arange(6)):
        compare(lambda m, x, y: m.bincount(x, y, 2), a, w)
    compare(lambda m, x: m.bincount(x), np.zeros(0, dtype=np.int64))
    compare(lambda m, x: m.bincount(x), np.array([1, -1]))
    compare(lambda m, x: m.bincount(x), np.array([1.0, 2.0]))
    compare(lambda m, x: m.bincount(x), np.ones((2, 2), dtype=np.int64))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_histc_histogram(dtype):
    a = rand((50,), dtype, seed=29)
    compare(lambda m, x: m.histc(x), a)
    compare(lambda m, x: m.histc(x, 7, -1, 1), a)
    compare(lambda m, x: x.histc(bins=3, min=2, max=2), a)
    compare(lambda m, x: m.histc(x, 4), np.full(5, 2.0, dtype=dtype))
    compare(lambda m, x: m.histogram(x, 5), a)
    compare(lambda m, x: m.histogram(x, 4, range=(-1.0, 2.0), density=True), a)
    compare(lambda m, x, w: m.histogram(x, 6, weight=w), a, rand((50,), dtype, seed=30) ** 2)
    compare(lambda m, x, b: m.histogram(x, b), a, np.array([-2.0, -0.5, 0.0, 3.0], dtype=dtype))
    result = ember.histogram(ember.tensor(a), 3)
    assert type(result).__name__ == "histogram" and result.bin_edges.shape == (4,)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("bins,low,high", [(100, 0, 0), (7, -10, 0), (100, 0, 10), (3, -2, 2),
                                           (257, -5, 5)])
def test_histc_values_on_edges(dtype, bins, low, high):
    """histc divides (value - min) * bins / (max - min) with each step rounded in the input's
    dtype: values on or next to bin edges land in torch's bins, half precision included."""
    values = np.concatenate([np.arange(-10, 10.25, 0.25), np.linspace(-2, 2, 13)])
    e = ember.tensor(values).to(getattr(ember, dtype))
    t = torch.tensor(values).to(getattr(torch, dtype))
    assert_same(ember.histc(e, bins, low, high), torch.histc(t, bins, low, high), rtol=0,
                atol=0)


def test_histogram_empty_input_and_unsorted_edges():
    """Without data torch's default range is [0, 1]; unsorted edges are accepted and binned by
    torch's binary search (values outside [edges[0], edges[-1]] are dropped)."""
    empty = np.zeros((5, 0, 5), dtype=np.float32)
    compare(lambda m, x: m.histogram(x, 3), empty)
    compare(lambda m, x: m.histogramdd(x, [2, 3, 1, 1, 2], density=True), empty)
    values = np.round(np.random.default_rng(4).uniform(-3.5, 3.5, (40, 2)), 1)
    for edges in ([0.5, -1.0, 2.0, 1.0, 3.0], [2.0, 1.0], [-3.0, 2.5, -1.0, 0.0]):
        edges = np.array(edges)
        compare(lambda m, x, b: m.histogram(x, b), values[:, 0], edges)
        compare(lambda m, x, b, c: m.histogramdd(x, [b, c]).hist, values, edges,
                np.array([-1.0, 0.0, 2.0]))


def test_searchsorted_empty_batches():
    for seq_shape, value_shape in [((0, 0), (0, 0)), ((0, 3), (0, 2)), ((2, 0), (2, 3)),
                                   ((3, 0), (3, 0)), ((2, 3), (2, 0))]:
        compare(lambda m, s, v: m.searchsorted(s, v), np.zeros(seq_shape), np.ones(value_shape))


def test_histc_histogram_errors():
    compare(lambda m, x: m.histc(x, 3), np.array([1, 2, 3]))
    compare(lambda m, x: m.histc(x, 3, 2, 1), np.array([1.0, 2.0]))
    compare(lambda m, x: m.histc(x, 0), np.array([1.0, 2.0]))
    compare(lambda m, x: m.histogram(x, 3), np.array([1, 2, 3]))


# ---------------------------------------------------------------- searchsorted, bucketize


@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_bucketize(right):
    rng = np.random.default_rng(31)
    seq = np.sort(rng.integers(0, 10, (3, 6)), axis=-1).astype(np.float64)
    values = rng.integers(-1, 11, (3, 4)).astype(np.float64)
    compare(lambda m, s, v: m.searchsorted(s, v, right=right), seq[0], values)
    compare(lambda m, s, v: m.searchsorted(s, v, right=right), seq, values)
    compare(lambda m, s, v: m.searchsorted(s, v, side="right" if right else "left",
                                           out_int32=True), seq, values)
    compare(lambda m, s: m.searchsorted(s, 4.0, right=right), seq[0])
    compare(lambda m, s: m.searchsorted(s, 4, right=right), seq[0].astype(np.int64))
    compare(lambda m, v, b: m.bucketize(v, b, right=right), values, seq[0])
    compare(lambda m, v, b: m.bucketize(v, b, out_int32=True, right=right), values[0], seq[0])
    order = rng.permutation(6)
    unsorted = seq[0][order]
    compare(lambda m, s, v, o: m.searchsorted(s, v, sorter=o, right=right), unsorted, values,
            np.argsort(unsorted, kind="stable"))


def test_searchsorted_errors():
    seq = np.array([1.0, 2.0, 3.0])
    compare(lambda m, s: m.searchsorted(s, 2.0, side="left", right=True), seq)
    compare(lambda m, s, v: m.searchsorted(s, v), np.ones((2, 3)), np.ones((3, 2)))
    compare(lambda m, s, v: m.searchsorted(s, v), np.array(1.0), np.ones(2))
    compare(lambda m, v, b: m.bucketize(v, b), np.ones(2), np.ones((2, 2)))
    compare(lambda m, s, v: m.searchsorted(s, v), seq.astype(np.int64), np.array([2.5]))


# ---------------------------------------------------------------- meta device


META_CASES = [
    lambda m, x: m.sum(x, (0, 2), keepdim=True), lambda m, x: m.sum(x),
    lambda m, x: m.mean(x, 1), lambda m, x: m.prod(x, -1), lambda m, x: m.var(x, 1),
    lambda m, x: m.std_mean(x, 0), lambda m, x: m.max(x), lambda m, x: m.max(x, 1),
    lambda m, x: m.min(x, 1, True), lambda m, x: m.amax(x, (0, 1)), lambda m, x: m.argmax(x),
    lambda m, x: m.argmin(x, 2, True), lambda m, x: m.aminmax(x, dim=1),
    lambda m, x: m.all(x, 1), lambda m, x: m.any(x), lambda m, x: m.norm(x, 3, 1),
    lambda m, x: m.norm(x, "nuc", (0, 1)),
    lambda m, x: m.logsumexp(x, 1), lambda m, x: m.median(x, 1), lambda m, x: m.mode(x, 0),
    lambda m, x: m.nanmedian(x, 2), lambda m, x: m.count_nonzero(x, 0),
    lambda m, x: m.cumsum(x, 1), lambda m, x: m.cumprod(x, 0), lambda m, x: m.cummax(x, 2),
    lambda m, x: m.logcumsumexp(x, 1), lambda m, x: m.diff(x, 2, 1), lambda m, x: m.sort(x, 1),
    lambda m, x: m.argsort(x), lambda m, x: m.topk(x, 2, 1), lambda m, x: m.kthvalue(x, 2, 0),
    lambda m, x: m.quantile(x, 0.5, 1), lambda m, x: m.histc(x, 5, 0, 1),
    lambda m, x: m.nansum(x, 1), lambda m, x: m.nanmean(x, 1),
]


@pytest.mark.parametrize("case", range(len(META_CASES)))
def test_meta_device(case):
    compare_meta(META_CASES[case], (3, 4, 5))


def test_meta_device_int_inputs():
    compare_meta(lambda m, x: m.sum(x, 1), (3, 4), "int32")
    compare_meta(lambda m, x: m.cumsum(x, 1), (3, 4), "int32")
    compare_meta(lambda m, x: m.all(x, 1), (3, 4), "uint8")
    compare_meta(lambda m, x: m.searchsorted(x, x), (3, 4), "int64")
