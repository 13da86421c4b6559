"""Calls the bad-input check found answered differently from torch, each compared with torch.

These are the semantic mismatches (not argument parsing): a default that differs, a dtype or
shape torch keeps, an error type torch raises from a kernel, a NumPy error that leaked.
"""

import math
import warnings

import numpy as np
import pytest
import torch

import ember


def _pair(shape=(3, 4), seed=0, dtype=np.float32):
    values = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return torch.tensor(values), ember.tensor(values)


def _same_outcome(fn_torch, fn_ember):
    """Both raise the same exception type, or both return equal results (NaN-aware)."""
    try:
        expected = fn_torch()
    except Exception as error:  # noqa: BLE001 - the type is what is compared
        with pytest.raises(Exception) as caught:
            fn_ember()
        assert _kind(caught.value) == _kind(error), (caught.value, error)
        return
    got = fn_ember()
    expected = expected if isinstance(expected, tuple) else (expected,)
    got = got if isinstance(got, tuple) else (got,)
    assert len(got) == len(expected)
    for e, g in zip(expected, got):
        assert isinstance(g, ember.Tensor)
        assert tuple(g.shape) == tuple(e.shape)
        assert str(g.dtype).split(".")[-1] == str(e.dtype).split(".")[-1]
        np.testing.assert_allclose(g.detach().numpy(), e.detach().numpy(), rtol=1e-5,
                                   atol=1e-6, equal_nan=True)


def _kind(error):
    """LinAlgError by name (torch's is torch._C._LinAlgError), else the builtin type."""
    if "LinAlgError" in type(error).__name__:
        assert not type(error).__module__.startswith("numpy"), "NumPy's error leaked"
        return "LinAlgError"
    return next(k for k in type(error).__mro__ if k.__module__ == "builtins").__name__


# ------------------------------------------------------------ top-level losses


@pytest.mark.parametrize("name,n_inputs", [
    ("kl_div", 2), ("binary_cross_entropy_with_logits", 2), ("hinge_embedding_loss", 2),
    ("margin_ranking_loss", 3), ("triplet_margin_loss", 3)])
@pytest.mark.parametrize("reduction", [None, 0, 1, 2])
def test_top_level_losses_reduce_nothing_by_default(name, n_inputs, reduction):
    pairs = [_pair(seed=i) for i in range(n_inputs)]
    extra = () if reduction is None else {
        "kl_div": (reduction,), "binary_cross_entropy_with_logits": (None, None, reduction),
        "hinge_embedding_loss": (1.0, reduction), "margin_ranking_loss": (0.0, reduction),
        "triplet_margin_loss": (1.0, 2.0, 1e-6, False, reduction)}[name]
    _same_outcome(lambda: getattr(torch, name)(*[t for t, _ in pairs], *extra),
                  lambda: getattr(ember, name)(*[e for _, e in pairs], *extra))


def test_cosine_embedding_loss_reduces_nothing_by_default():
    (t1, e1), (t2, e2) = _pair(seed=1), _pair(seed=2)
    target = np.array([1, -1, 1])
    _same_outcome(lambda: torch.cosine_embedding_loss(t1, t2, torch.tensor(target)),
                  lambda: ember.cosine_embedding_loss(e1, e2, ember.tensor(target)))


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.bool_, np.float64])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_hinge_embedding_loss_keeps_integer_dtypes(dtype, reduction):
    values = (np.random.default_rng(0).standard_normal((3, 4)) * 3).astype(dtype)
    target = np.where(np.random.default_rng(1).random((3, 4)) > 0.5, 1, -1).astype(dtype)
    _same_outcome(
        lambda: torch.nn.functional.hinge_embedding_loss(
            torch.tensor(values), torch.tensor(target), 1.5, reduction=reduction),
        lambda: ember.nn.functional.hinge_embedding_loss(
            ember.tensor(values), ember.tensor(target), 1.5, reduction=reduction))


# ------------------------------------------------------------ shapes and defaults


@pytest.mark.parametrize("shape", [(0, 3, 4, 4), (2, 3, 0, 4), (1, 2, 4, 4)])
def test_pixel_unshuffle_of_an_empty_input_keeps_its_shape(shape):
    values = np.zeros(shape, np.float32)
    _same_outcome(lambda: torch.pixel_unshuffle(torch.tensor(values), 2),
                  lambda: ember.pixel_unshuffle(ember.tensor(values), 2))


@pytest.mark.parametrize("kwargs", [{}, {"range": (0.0, 1.0)}, {"density": True}])
def test_histogram_defaults_to_100_bins(kwargs):
    t, e = _pair()
    _same_outcome(lambda: torch.histogram(t, **kwargs), lambda: ember.histogram(e, **kwargs))
    _same_outcome(lambda: t.histogram(**kwargs), lambda: e.histogram(**kwargs))


@pytest.mark.parametrize("values", [[1.0, math.nan], [1.0, math.inf], [-math.inf, 0.0]])
def test_histogram_of_non_finite_data_raises_as_torch(values):
    _same_outcome(lambda: torch.histogram(torch.tensor(values)),
                  lambda: ember.histogram(ember.tensor(values)))
    _same_outcome(lambda: torch.histc(torch.tensor(values)),
                  lambda: ember.histc(ember.tensor(values)))
    _same_outcome(lambda: torch.histc(torch.tensor([1.0]), 4, 0, math.inf),
                  lambda: ember.histc(ember.tensor([1.0]), 4, 0, math.inf))


@pytest.mark.parametrize("dims", [(2, 1), (2,), (1, 2, 3)])
def test_tile_method_takes_separate_ints(dims):
    t, e = _pair()
    _same_outcome(lambda: t.tile(*dims), lambda: e.tile(*dims))
    _same_outcome(lambda: t.tile(dims), lambda: e.tile(dims))
    _same_outcome(lambda: t.tile(dims=dims), lambda: e.tile(dims=dims))


# ------------------------------------------------------------ errors torch raises


@pytest.mark.parametrize("method", ["add_", "sub_", "mul_", "div_"])
@pytest.mark.parametrize("other", [(5,), (2, 3), (2, 1, 4)])
def test_inplace_arithmetic_with_a_non_broadcastable_operand(method, other):
    t, e = _pair()
    o = np.ones(other, np.float32)
    with pytest.raises(RuntimeError) as expected:
        getattr(t, method)(torch.tensor(o))
    with pytest.raises(RuntimeError) as got:
        getattr(e, method)(ember.tensor(o))
    assert str(got.value) == str(expected.value)


@pytest.mark.parametrize("name", ["svd", "svdvals", "pinv", "matrix_rank", "cond", "nuclear"])
@pytest.mark.parametrize("where", ["all", "one", "batch"])
def test_svd_family_on_nan_raises_linalg_error(name, where):
    values = np.random.default_rng(0).standard_normal((2, 3, 3)).astype(np.float32)
    if where == "all":
        values[:] = math.nan
    else:
        values[1 if where == "batch" else 0, 0, 0] = math.nan
    call = {"svd": lambda T, a: T.linalg.svd(a), "svdvals": lambda T, a: T.linalg.svdvals(a),
            "pinv": lambda T, a: T.linalg.pinv(a), "cond": lambda T, a: T.linalg.cond(a),
            "matrix_rank": lambda T, a: T.linalg.matrix_rank(a),
            "nuclear": lambda T, a: T.linalg.matrix_norm(a, "nuc")}[name]
    with pytest.raises(torch.linalg.LinAlgError) as expected:
        call(torch, torch.tensor(values))
    with pytest.raises(ember.linalg.LinAlgError) as got:
        call(ember, ember.tensor(values))
    assert str(got.value) == str(expected.value)


@pytest.mark.parametrize("name", ["svdvals", "cond", "matrix_rank"])
def test_svd_family_on_a_matrix_with_an_infinity_gives_nan_as_torch(name):
    values = np.random.default_rng(0).standard_normal((3, 3)).astype(np.float32)
    values[0, 0] = math.inf
    call = {"svdvals": lambda T, a: T.linalg.svdvals(a), "cond": lambda T, a: T.linalg.cond(a),
            "matrix_rank": lambda T, a: T.linalg.matrix_rank(a)}[name]
    _same_outcome(lambda: call(torch, torch.tensor(values)),
                  lambda: call(ember, ember.tensor(values)))


@pytest.mark.parametrize("fill", [math.nan, math.inf])
@pytest.mark.parametrize("name", ["cholesky", "linalg.cholesky"])
def test_cholesky_of_a_non_finite_matrix_raises(fill, name):
    values = np.full((3, 3), fill, np.float32)
    fn = {"cholesky": lambda T: T.cholesky, "linalg.cholesky": lambda T: T.linalg.cholesky}[name]
    _same_outcome(lambda: fn(torch)(torch.tensor(values)), lambda: fn(ember)(ember.tensor(values)))


def test_cholesky_ex_reports_a_nan_pivot():
    values = np.full((3, 3), math.nan, np.float32)
    assert int(ember.linalg.cholesky_ex(ember.tensor(values)).info) == \
        int(torch.linalg.cholesky_ex(torch.tensor(values)).info)


@pytest.mark.parametrize("name", ["eigh", "eigvalsh"])
def test_eigh_non_convergence_is_linalg_error(name):
    values = np.full((3, 3), math.nan, np.float32)
    with pytest.raises(torch.linalg.LinAlgError):
        getattr(torch.linalg, name)(torch.tensor(values))
    with pytest.raises(ember.linalg.LinAlgError, match=r"^linalg\.eigh: "):
        getattr(ember.linalg, name)(ember.tensor(values))


# ------------------------------------------------------------ dtypes and orders of checks


@pytest.mark.parametrize("name", ["mse_loss", "smooth_l1_loss", "huber_loss"])
@pytest.mark.parametrize("input_dtype", ["bool", "int64", "float32", "float64", "complex64"])
@pytest.mark.parametrize("target_dtype", ["bool", "int64", "float32", "float64", "complex64"])
def test_regression_losses_pick_their_kernel_by_the_promoted_dtype(name, input_dtype,
                                                                   target_dtype):
    (t, e), (tt, et) = _pair(seed=0), _pair(seed=1)
    _same_outcome(
        lambda: getattr(torch.nn.functional, name)(t.to(getattr(torch, input_dtype)),
                                                   tt.to(getattr(torch, target_dtype)),
                                                   reduction="none"),
        lambda: getattr(ember.nn.functional, name)(e.to(getattr(ember, input_dtype)),
                                                   et.to(getattr(ember, target_dtype)),
                                                   reduction="none"))


@pytest.mark.parametrize("dtype", ["int64", "bool", "complex64", "float64"])
@pytest.mark.parametrize("shape", [(3, 4), (3, 4, 2)])
def test_nll_loss_refuses_non_floating_input_as_torch(dtype, shape):
    t, e = _pair(shape)
    target = np.zeros((shape[0],) + shape[2:], np.int64)
    _same_outcome(
        lambda: torch.nn.functional.nll_loss(t.to(getattr(torch, dtype)), torch.tensor(target)),
        lambda: ember.nn.functional.nll_loss(e.to(getattr(ember, dtype)), ember.tensor(target)))


@pytest.mark.parametrize("target_shape", [(5,), (2, 4), (3, 2), (2, 2)])
@pytest.mark.parametrize("fn", ["nll_loss", "cross_entropy"])
def test_batch_size_mismatch_is_checked_first(fn, target_shape):
    t, e = _pair()
    (tt, et) = _pair(target_shape, seed=3)
    _same_outcome(lambda: getattr(torch.nn.functional, fn)(t, tt),
                  lambda: getattr(ember.nn.functional, fn)(e, et))


def test_bmm_of_a_bool_input_is_not_implemented():
    (t1, e1), (t2, e2) = _pair((1, 3, 4)), _pair((1, 4, 3), seed=1)
    _same_outcome(lambda: torch.bmm(t1.bool(), t2), lambda: ember.bmm(e1.bool(), e2))
    _same_outcome(lambda: torch.bmm(t1, t2.bool()), lambda: ember.bmm(e1, e2.bool()))


@pytest.mark.parametrize("call", [
    lambda T, x: T.cov(x.bool()), lambda T, x: T.corrcoef(x.bool()),
    lambda T, x: T.trapezoid(x.bool()), lambda T, x: T.trapezoid(x, x.bool()),
    lambda T, x: T.trapezoid(x, dx=True), lambda T, x: T.cumulative_trapezoid(x.bool()),
    lambda T, x: T.cumulative_trapezoid(x, x.bool()), lambda T, x: T.gradient(x.bool()),
    lambda T, x: T.cov(x.long()), lambda T, x: T.trapezoid(x.long()),
    lambda T, x: T.gradient(x.long())])
def test_statistics_refuse_bool_as_torch(call):
    t, e = _pair()
    _same_outcome(lambda: call(torch, t), lambda: call(ember, e))


@pytest.mark.parametrize("dims,groups,stride", [(1, 1, 1), (2, 1, 2), (2, 2, 1), (3, 1, 1)])
def test_conv_transpose_of_an_empty_batch(dims, groups, stride):
    (t, e) = _pair((0, 4) + (3,) * dims)
    (tw, ew) = _pair((4, 2) + (2,) * dims, seed=1)
    name = f"conv_transpose{dims}d"
    _same_outcome(
        lambda: getattr(torch.nn.functional, name)(t, tw, groups=groups, stride=stride),
        lambda: getattr(ember.nn.functional, name)(e, ew, groups=groups, stride=stride))


@pytest.mark.parametrize("input_dtype", ["float32", "float64", "int64", "bool", "complex64"])
@pytest.mark.parametrize("target_dtype", ["float32", "int64", "bool", "complex64"])
def test_kl_div_refuses_integral_and_complex_inputs(input_dtype, target_dtype):
    (t, e), (tt, et) = _pair(seed=0), _pair(seed=1)
    _same_outcome(
        lambda: torch.nn.functional.kl_div(t.to(getattr(torch, input_dtype)),
                                           tt.abs().to(getattr(torch, target_dtype)),
                                           reduction="sum"),
        lambda: ember.nn.functional.kl_div(e.to(getattr(ember, input_dtype)),
                                           et.abs().to(getattr(ember, target_dtype)),
                                           reduction="sum"))


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("missing", ["mean", "var", "both"])
def test_norms_want_both_running_statistics_or_neither(training, missing):
    t, e = _pair((2, 3, 4))
    stats = {lib: (None if missing in ("mean", "both") else lib.zeros(3),
                   None if missing in ("var", "both") else lib.ones(3))
             for lib in (torch, ember)}
    _same_outcome(lambda: torch.nn.functional.batch_norm(t, *stats[torch], training=training),
                  lambda: ember.nn.functional.batch_norm(e, *stats[ember], training=training))
    _same_outcome(
        lambda: torch.nn.functional.instance_norm(t, *stats[torch], use_input_stats=training),
        lambda: ember.nn.functional.instance_norm(e, *stats[ember], use_input_stats=training))


# ------------------------------------------- torch.fft / torch.linalg / torch.nn.functional

# ``lib`` is ember or torch, ``F`` its nn.functional; ``x`` a float [2, 3, 4] tensor, ``m`` a
# float [3, 3] one, ``i`` int64 indices shaped as ``x``, ``t`` int64 class targets for ``m``
BAD_ARGUMENT_CALLS = [
    # fft: typed sizes and dims (a float is refused, never truncated), the input a Tensor
    "lib.fft.fft2(x, s=(2.0, 3))", "lib.fft.fftn(x, dim=(0.0, 1))", "lib.fft.rfft2(x, dim=1.5)",
    "lib.fft.ihfftn(x, s=[2.5])", "lib.fft.fft(x, n=2.0)", "lib.fft.irfft(None)",
    "lib.fft.fftshift(x, dim=0.5)", "lib.fft.fft2(x, s=(np.int64(2), 3))",
    # linalg: every Tensor argument a Tensor, N an int
    "lib.linalg.diagonal(None)", "lib.linalg.diagonal('ab')", "lib.linalg.vecdot(m, None)",
    "lib.linalg.vecdot([1.0], m)", "lib.linalg.householder_product(m, None)",
    "lib.linalg.lu_solve(m, 'a', m)", "lib.linalg.vander(m[0], N=2.0)",
    "lib.linalg.vander(m[0], N=np.int64(3))",
    # nn.functional: int lists of pooling sizes, the Tensor arguments of losses and unpooling
    "F.adaptive_avg_pool1d(x, 2.0)", "F.adaptive_avg_pool2d(x, (2.0, 1))",
    "F.adaptive_max_pool2d(x, (2, 1.5))", "F.adaptive_avg_pool3d(x[None], 1.0)",
    "F.adaptive_avg_pool2d(x, (None, np.int64(2)))", "F.avg_pool3d(x[None], 1.0)",
    "F.max_unpool3d(x[None], i[None], 1, stride=1.0)",
    "F.max_unpool3d(x[None], i[None], 1, padding=(0.0, 0, 0))",
    "F.max_unpool2d(x, i, 1.0)", "F.max_unpool2d(x, None, 1)", "F.max_unpool3d(x[None], 'a', 1)",
    "F.max_unpool2d(i, i, 1)", "F.max_unpool2d(x.bool(), i, 1)", "F.max_unpool3d(x[None].long(), i[None], 1)",
    "F.cross_entropy(None, t)", "F.cross_entropy(m, [0, 1, 2])", "F.kl_div(m, 'a')",
    "F.kl_div(None, m)", "F.hinge_embedding_loss([1.0], m)", "F.poisson_nll_loss('a', m)",
    "F.gaussian_nll_loss(m, m, None)", "F.gaussian_nll_loss(m, m, 'a')",
    "F.gaussian_nll_loss(m, m, 0.5)",
    "F.ctc_loss(None, t, [3], [3])", "F.ctc_loss(m.log_softmax(1), [1, 2], [3], [2])",
    # dtypes the CPU kernels have no loop for; what torch computes into the input's shape/dtype
    "F.bilinear(m.bool(), m, x)", "F.bilinear(m.long(), m[0], x)",
    "F.local_response_norm(x.bool(), 2)", "F.local_response_norm(x[None].cfloat(), 2)",
    "F.local_response_norm(x.long(), 2)", "F.multi_margin_loss(m.long(), t)",
    "F.multi_margin_loss(m.bool(), t)", "F.multilabel_margin_loss(m.cfloat(), i[0, :, :3] % 3)",
    "F.soft_margin_loss(m.bool(), m)", "F.soft_margin_loss(m.long(), m)",
    "F.soft_margin_loss(m[0], m)", "F.soft_margin_loss(m, m[0])",
    "F.soft_margin_loss(m.cfloat(), m)", "F.soft_margin_loss(None, m)",
    # torch's Python pools: lp_pool unpacks its kernel and raises input to the power first,
    # the adaptive 2-d/3-d pools measure output_size against the input's dims first
    "F.lp_pool2d(x, 2, (1, 2, 3))", "F.lp_pool2d(x, 2, [2])", "F.lp_pool3d(x[None], 2, 'abc')",
    "F.lp_pool1d(x, m, 2)", "F.lp_pool1d(x, 2, [1, 2])", "F.lp_pool2d(x, 2, (1, 2.0))",
    "F.lp_pool3d(x[None], 2, 1)", "F.lp_pool2d(None, 2, (1, 2, 3))", "F.lp_pool2d([1.0], 2, m)",
    "F.lp_pool3d('a', 2, (1, 2))", "F.adaptive_max_pool2d(m, (2, 2))",
    "F.adaptive_avg_pool3d(x, (1, 1, 1))", "F.adaptive_max_pool3d(x, None)",
    "F.adaptive_avg_pool2d(m, 'abc')", "F.adaptive_avg_pool2d(x, (None, 2))",
    # embedding parses its weight before checking the indices; one_hot's class count an int
    "F.embedding(m, None)", "F.embedding(t, 'a')", "F.one_hot(t, 3.0)", "F.one_hot(t, None)",
    "F.one_hot(t, np.int64(4))",
    # prelu compares the dtypes, then the shapes, before its float-only kernel
    "F.prelu(m.long(), m[0])", "F.prelu(m.bool(), m[0, :1])", "F.prelu(m.long(), t)",
    "F.prelu(m.cfloat(), m[:2, 0])",
    # fold/unfold sizes are int lists: a float or str element is a TypeError, not truncated
    "F.fold(x[:1], (4, 2.0), 2)", "F.fold(x[:1], (4, 'a'), 2)", "F.unfold(x[None], (2, 2.0))",
    "F.fold(x[:1], (np.int64(3), 2), (1, 2))",
]


def _bad_call_outcome(lib, call):
    rng = np.random.default_rng(0)
    x = lib.tensor(rng.standard_normal((2, 3, 4)).astype(np.float32))
    m = lib.tensor(rng.standard_normal((3, 3)).astype(np.float32))
    i = lib.arange(24).reshape(2, 3, 4)
    t = lib.tensor([0, 1, 2])
    F = lib.nn.functional
    try:
        result = eval(call, {"lib": lib, "F": F, "np": np, "x": x, "m": m, "i": i, "t": t})  # noqa: S307
    except Exception as error:  # noqa: BLE001 - the exception type is what is compared
        return type(error).__name__, str(error)
    return "ok", result


@pytest.mark.parametrize("call", BAD_ARGUMENT_CALLS)
def test_bad_arguments_of_fft_linalg_and_functional_raise_torchs_type(call):
    ours, theirs = _bad_call_outcome(ember, call), _bad_call_outcome(torch, call)
    assert ours[0] == theirs[0], (call, ours, theirs)
    if ours[0] == "ok":
        np.testing.assert_allclose(ours[1].detach().numpy(), theirs[1].detach().numpy(),
                                   rtol=1e-5, atol=1e-6)
    else:
        assert ours[0] != "AttributeError" and ours[1]


# ------------------------------------------------------------ Python types as dtypes

PYTHON_TYPE_CALLS = {
    "zeros": lambda lib, d: lib.zeros(2, dtype=d),
    "ones": lambda lib, d: lib.ones((2,), dtype=d),
    "full": lambda lib, d: lib.full((2,), 1, dtype=d),
    "empty": lambda lib, d: lib.empty(2, dtype=d).zero_(),
    "tensor": lambda lib, d: lib.tensor([1, 0], dtype=d),
    "as_tensor": lambda lib, d: lib.as_tensor([1, 0], dtype=d),
    "arange": lambda lib, d: lib.arange(2, dtype=d),
    "zeros_like": lambda lib, d: lib.zeros_like(lib.ones(2), dtype=d),
    "new_ones": lambda lib, d: lib.ones(2).new_ones(2, dtype=d),
    "to": lambda lib, d: lib.ones(2).to(d),
    "to_keyword": lambda lib, d: lib.ones(2).to(dtype=d),
    "sum": lambda lib, d: lib.ones(2, dtype=lib.int64).sum(dtype=d),
    "type": lambda lib, d: lib.ones(2).type(d),
}


@pytest.mark.parametrize("python_type", [float, int, bool, complex])
@pytest.mark.parametrize("call", sorted(PYTHON_TYPE_CALLS))
def test_python_types_as_dtypes_mean_what_they_mean_in_torch(call, python_type):
    """``float`` is float64 (not the default dtype), ``complex`` complex128, ``int`` int64,
    ``bool`` bool, through every factory and conversion; ``Tensor.type`` refuses them."""
    make = PYTHON_TYPE_CALLS[call]
    _same_outcome(lambda: make(torch, python_type), lambda: make(ember, python_type))


@pytest.mark.parametrize("name", ["broadcast_tensors", "block_diag", "cartesian_prod",
                                  "chain_matmul", "meshgrid"])
@pytest.mark.parametrize("packing", [list, tuple])
def test_tensor_varargs_take_one_list_only_where_torch_does(name, packing):
    """torch's ``broadcast_tensors(*tensors)`` refuses one list of tensors (a TypeError
    naming element 0); ``meshgrid`` unpacks it."""
    (t, e) = _pair(shape=(2, 2))

    def outcome(lib, x):
        result = getattr(lib, name)(packing([x, x]))
        return result if isinstance(result, tuple) else (result,)

    _same_outcome(lambda: outcome(torch, t), lambda: outcome(ember, e))


# ------------------------------------------------------------ omitted versus None

OVERLOAD_ARGUMENTS = [((), {}), ((1,), {}), ((1, True), {}), ((), {"dim": 0}), ((1.5,), {}),
                      (("a",), {}), ((None,), {}), (([1],), {}), ((), {"dim": None}),
                      ((np.int64(1),), {})]


@pytest.mark.parametrize("name", ["max", "min"])
@pytest.mark.parametrize("args,kwargs", OVERLOAD_ARGUMENTS)
def test_max_min_overloads_refuse_what_torch_refuses(name, args, kwargs):
    """An int dim or a tensor: an explicit None, a float, a str or a list is a TypeError."""
    (t, e) = _pair(shape=(2, 3))

    def call(lib, x):
        result = getattr(lib, name)(x, *args, **kwargs)
        return tuple(result) if isinstance(result, tuple) else result

    _same_outcome(lambda: call(torch, t), lambda: call(ember, e))


@pytest.mark.parametrize("name", ["trapezoid", "trapz", "cumulative_trapezoid"])
@pytest.mark.parametrize("args,kwargs", [
    ((), {}), (("x",), {}), ((), {"x": "x"}), ((), {"dx": 0.5}), ((None,), {}),
    ((), {"x": None}), ((), {"dx": None}), (("x",), {"dx": 2.0}), ((2.0,), {})])
def test_trapezoid_tells_an_omitted_x_from_none(name, args, kwargs):
    (ty, ey), (tx, ex) = _pair(shape=(5,), seed=1), _pair(shape=(5,), seed=2)

    def call(lib, y, x):
        fill = {"x": x}
        return getattr(lib, name)(y, *[fill.get(a, a) if isinstance(a, str) else a
                                       for a in args],
                                  **{k: fill.get(v, v) if isinstance(v, str) else v
                                     for k, v in kwargs.items()})

    _same_outcome(lambda: call(torch, ty, tx), lambda: call(ember, ey, ex))


# ------------------------------------------------------------ this session's fixed families

def _eye(lib, dtype="float32"):
    return lib.eye(3).to(getattr(lib, dtype))


FAMILY_CALLS = {
    # a missing kernel for a dtype: torch's NotImplementedError, in torch's order of checks
    "cumsum_ of bool": lambda lib: lib.ones(3).bool().cumsum_(0),
    "cumprod_ of int32": lambda lib: lib.tensor([1, 2, 100, 3], dtype=lib.int32).cumprod_(0),
    "cumsum dtype=bool": lambda lib: lib.ones(3).cumsum(0, dtype=lib.bool),
    "cholesky of int64": lambda lib: lib.cholesky(_eye(lib, "int64")),
    "cholesky_solve of bool and float": lambda lib: lib.cholesky_solve(_eye(lib, "bool"),
                                                                        _eye(lib)),
    "householder_product of int64": lambda lib: lib.linalg.householder_product(
        _eye(lib, "int64"), _eye(lib, "int64")[0]),
    "cross of bool": lambda lib: lib.linalg.cross(_eye(lib, "bool"), _eye(lib)),
    "conv1d of bool with a bias": lambda lib: lib.conv1d(
        lib.ones(1, 3, 4).bool(), lib.ones(3, 3, 3), lib.ones(3)),
    "conv_transpose1d of bool": lambda lib: lib.conv_transpose1d(
        lib.ones(1, 3, 4).bool(), lib.ones(3, 3, 3), lib.ones(3)),
    "grid_sample of int64": lambda lib: lib.nn.functional.grid_sample(
        lib.ones(1, 1, 3, 3).long(), lib.zeros(1, 2, 2, 2), align_corners=False),
    "batch_norm of int64": lambda lib: lib.nn.functional.batch_norm(
        lib.ones(2, 3).long(), lib.zeros(3), lib.ones(3)),
    "native_batch_norm, one running stat": lambda lib: lib.native_batch_norm(
        lib.ones(4, 3), None, None, lib.zeros(3), None, True, 0.1, 1e-5),
    "max_pool2d of a 2-D bool input": lambda lib: lib.max_pool2d(lib.ones(3, 4).bool(), 2),
    # shapes and argument types
    "clamp, bounds that do not broadcast": lambda lib: lib.clamp(lib.ones(2, 3),
                                                                 min=lib.ones(4, 5)),
    "clamp_min(None)": lambda lib: lib.clamp_min(lib.ones(2), None),
    "scatter of a str": lambda lib: lib.zeros(3).scatter(0, lib.tensor([0]), "abc"),
    "index_add, 0-dim source": lambda lib: lib.zeros(3).index_add(0, lib.tensor([0, 1]),
                                                                   lib.tensor(1.)),
    "index_fill of an empty tensor": lambda lib: lib.zeros(0, 2).index_fill(
        0, lib.tensor([0]), 1.0),
    "index_fill of a 0x0 tensor": lambda lib: lib.zeros(0, 0).index_fill(
        0, lib.tensor([0]), 1.0),
    "einsum with one argument": lambda lib: lib.einsum(lib.ones(2)),
    "embedding_bag, float indices": lambda lib: lib.embedding_bag(
        lib.ones(5, 2), lib.ones(3), lib.tensor([0])),
    "ctc_loss, targets for another batch": lambda lib: lib.nn.functional.ctc_loss(
        lib.zeros(5, 2, 4).log_softmax(2), lib.ones(3, 2, dtype=lib.int64), [5, 5], [2, 2]),
    "binary_cross_entropy_with_logits, broadcast target": lambda lib:
        lib.binary_cross_entropy_with_logits(lib.zeros(3, 4), lib.ones(1, 4)),
    "binary_cross_entropy_with_logits, target too big": lambda lib:
        lib.binary_cross_entropy_with_logits(lib.zeros(1, 4), lib.ones(3, 4)),
    "affine_grid_generator of a 2-d size": lambda lib: lib.affine_grid_generator(
        lib.ones(1, 2, 3), [3, 4], False),
    "split of a str": lambda lib: lib.split("abc", 2),
    "diff with n=0 and a bad dim": lambda lib: lib.diff(lib.ones(3), 0, 9),
    "roll of an empty tensor, bad dim": lambda lib: lib.roll(lib.ones(0, 2), 1, 9),
    "istft with a float n_fft": lambda lib: lib.istft(lib.ones(6, 3, dtype=lib.complex64),
                                                      10.5),
    "unravel_index of a float size": lambda lib: lib.unravel_index(lib.tensor([1]), (4.5, 5)),
    "histogram with float bins": lambda lib: lib.histogram(lib.ones(3), 2.5),
    "tensordot with float dims": lambda lib: lib.tensordot(lib.ones(2, 2), lib.ones(2, 2),
                                                           dims=1.5),
    "hspmm of None": lambda lib: lib.hspmm(None, lib.ones(2, 2)),
    "sparse_mask with a dense mask": lambda lib: lib.ones(2, 2).sparse_mask(lib.ones(2, 2)),
    "sparse_resize_ with a float sparse_dim": lambda lib: lib.ones(2).sparse_resize_(
        (2,), 1.5, 0),
    "values() with a keyword": lambda lib: lib.ones(2).values(bogus=1),
}


@pytest.mark.parametrize("name", sorted(FAMILY_CALLS))
def test_family_checks_answer_as_torch(name):
    make = FAMILY_CALLS[name]

    def run(lib):
        result = make(lib)
        return tuple(result) if isinstance(result, (tuple, list)) else result

    _same_outcome(lambda: run(torch), lambda: run(ember))


@pytest.mark.parametrize("sizes", [(3, 4), (12,), ((3, 4),), ([3, 4],), ((12,),), ([3.0, 4],)])
@pytest.mark.filterwarnings("ignore:non-inplace resize is deprecated")
def test_deprecated_resize_multiplies_its_arguments_as_torch_does(sizes):
    # torch's Tensor.resize never unpacks a single list, so that form is always refused.
    t, e = _pair()
    _same_outcome(lambda: t.resize(*sizes), lambda: e.resize(*sizes))


@pytest.mark.parametrize("fill", [math.nan, math.inf, None])
@pytest.mark.parametrize("dtype", [np.float32, np.bool_])
def test_matrix_power_zero_is_the_identity_whatever_the_matrix_holds(fill, dtype):
    values = np.random.default_rng(0).standard_normal((2, 3, 3)).astype(np.float32)
    if fill is not None:
        values[0, 1, 1] = fill
    values = values.astype(dtype)
    t, e = torch.tensor(values), ember.tensor(values)
    _same_outcome(lambda: torch.linalg.matrix_power(t, 0), lambda: ember.linalg.matrix_power(e, 0))
    if dtype is np.float32:
        t.requires_grad_(), e.requires_grad_()
        torch.linalg.matrix_power(t, 0).sum().backward()
        ember.linalg.matrix_power(e, 0).sum().backward()
        np.testing.assert_array_equal(e.grad.numpy(), t.grad.numpy())


@pytest.mark.parametrize("name", ["var_mean", "std_mean"])
@pytest.mark.parametrize("shape, dim, keepdim", [
    ((7,), None, False), ((), None, False), ((4, 6), 1, False), ((4, 6), 0, True),
    ((3, 4, 5), (0, 2), False), ((3, 4, 5), (2, 0), True), ((0, 3), 0, False)])
@pytest.mark.filterwarnings("ignore:std_mean|var_mean")
def test_mean_of_var_mean_follows_welford_on_infinities(name, shape, dim, keepdim):
    # torch's running mean turns an infinity into NaN unless it is the last element reduced.
    values = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    values[np.random.default_rng(2).random(shape) < 0.2] = np.inf
    if values.size:
        values.flat[-1] = -np.inf
    t, e = torch.tensor(values), ember.tensor(values)
    args = () if dim is None else (dim,)
    kwargs = {} if dim is None else {"keepdim": keepdim}
    _same_outcome(lambda: getattr(torch, name)(t, *args, **kwargs),
                  lambda: getattr(ember, name)(e, *args, **kwargs))


def _filled(shape, fill=None, dtype=np.float32, at=None):
    values = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    if fill is not None and at is None:
        values[...] = fill
    elif fill is not None:
        values.flat[at] = fill
    return values.astype(dtype)


_NATIVE_NORM_CALLS = {
    "layer_norm complex": lambda m, w: m.native_layer_norm(
        m.tensor(_filled((2, 4, 3), dtype=np.complex64)), [4, 3], None, None, 1e-5),
    "layer_norm complex, float weight": lambda m, w: m.native_layer_norm(
        m.tensor(_filled((2, 4, 3), dtype=np.complex64)), [4, 3], w((4, 3)), None, 1e-5),
    "layer_norm int64": lambda m, w: m.native_layer_norm(
        m.tensor(_filled((2, 4, 3), dtype=np.int64)), [4, 3], None, None, 1e-5),
    "layer_norm shape mismatch": lambda m, w: m.native_layer_norm(
        m.tensor(_filled((0, 2, 3))), [1, 2, 3], None, None, 1e-5),
    "layer_norm weight shape": lambda m, w: m.native_layer_norm(
        m.tensor(_filled((2, 4, 3))), [4, 3], w((3,)), None, 1e-5),
    "layer_norm empty batch": lambda m, w: m.native_layer_norm(
        m.tensor(_filled((0, 4, 3))), [4, 3], w((4, 3)), w((4, 3)), 1e-5),
    "layer_norm inf": lambda m, w: m.native_layer_norm(
        m.tensor(_filled((2, 4, 3), math.inf)), [4, 3], w((4, 3)), w((4, 3)), 1e-5),
    "layer_norm one inf": lambda m, w: m.native_layer_norm(
        m.tensor(_filled((2, 4, 3), math.inf, at=5)), [4, 3], None, None, 1e-5),
    "group_norm complex": lambda m, w: m.native_group_norm(
        m.tensor(_filled((2, 4, 3), dtype=np.complex64)), None, None, 2, 4, 3, 2, 1e-5),
    "group_norm complex, float weight": lambda m, w: m.native_group_norm(
        m.tensor(_filled((2, 4, 3), dtype=np.complex64)), w((4,)), None, 2, 4, 3, 2, 1e-5),
    "group_norm numel": lambda m, w: m.native_group_norm(
        m.tensor(_filled((0, 4, 3))), None, None, 2, 4, 3, 2, 1e-5),
    "group_norm empty batch": lambda m, w: m.native_group_norm(
        m.tensor(_filled((0, 4, 3))), None, None, 0, 4, 3, 2, 1e-5),
    "group_norm inf": lambda m, w: m.native_group_norm(
        m.tensor(_filled((2, 4, 3), math.inf)), w((4,)), w((4,)), 2, 4, 3, 2, 1e-5),
    "group_norm one inf": lambda m, w: m.native_group_norm(
        m.tensor(_filled((2, 4, 3), math.inf, at=1)), None, None, 2, 4, 3, 2, 1e-5),
}


@pytest.mark.parametrize("case", sorted(_NATIVE_NORM_CALLS))
def test_native_norms_check_and_average_as_torch(case):
    # torch checks shapes, mixed parameter dtypes, then the kernel's dtype; its saved mean is
    # the running (Welford) one, NaN once an infinity is followed by other elements.
    call = _NATIVE_NORM_CALLS[case]
    _same_outcome(lambda: call(torch, lambda s: torch.ones(s)),
                  lambda: call(ember, lambda s: ember.ones(s)))


@pytest.mark.parametrize("shape, dim", [
    ((0, 3), 0), ((3, 0), 0), ((3, 0), 1), ((0, 3), 1), ((0, 3), -1), ((2, 0, 3), 1),
    ((2, 0, 3), 2), ((4,), 0), ((2, 3, 4), 1), ((2, 3, 4), 2), ((2, 3, 4), 0)])
@pytest.mark.parametrize("power", [2, 3])
def test_norm_except_dim_flattens_as_torch(shape, dim, power):
    # torch moves dim first and flattens the rest with -1: ambiguous when dim is empty.
    t, e = _pair(shape)
    _same_outcome(lambda: torch.norm_except_dim(t, power, dim),
                  lambda: ember.norm_except_dim(e, power, dim))


@pytest.mark.parametrize("fill, at, range_", [
    (math.nan, (1, 0), None), (math.inf, (1, 1), None), (-math.inf, (0, 0), None),
    (math.inf, (1, 1), [0., 1., 0., 1.]), (None, None, [0., math.inf, 0., 1.]),
    (None, None, [0., 1., math.nan, 1.])])
def test_histogramdd_refuses_a_range_that_is_not_finite(fill, at, range_):
    t, e = _pair((5, 2))
    if fill is not None:
        t[at], e[at] = fill, fill
    _same_outcome(lambda: torch.histogramdd(t, bins=3, range=range_).hist,
                  lambda: ember.histogramdd(e, bins=3, range=range_).hist)


_EMPTY_INDEXING = {
    "read, empty indexed dim": (lambda m, x: x[m.tensor([1])], (0, 4)),
    "read, empty other dim": (lambda m, x: x[m.tensor([5])], (2, 0)),
    "read, second dim empty": (lambda m, x: x[:, m.tensor([5])], (2, 0)),
    "read, no index": (lambda m, x: x[m.tensor([], dtype=m.long)], (0, 4)),
    "read, indexed dim not empty": (lambda m, x: x[:, m.tensor([1])], (0, 4)),
    "index_put": (lambda m, x: m.index_put(x, (m.tensor([1, 2]),), m.tensor(1.)), (0, 4)),
    "index_put accumulate": (
        lambda m, x: m.index_put(x, (m.tensor([0]),), m.tensor(1.), accumulate=True), (0, 4)),
    "index_put both dims": (
        lambda m, x: m.index_put(x, (m.tensor([0]), m.tensor([0])), m.tensor(1.)), (2, 0)),
    "index_put_": (lambda m, x: x.index_put_((m.tensor([1, 2]),), m.tensor(1.)), (0, 4)),
    "setitem": (lambda m, x: x.__setitem__(m.tensor([1]), 1.) or x, (0, 4)),
}


@pytest.mark.parametrize("case", sorted(_EMPTY_INDEXING))
def test_indices_into_an_empty_dim_are_out_of_range(case):
    # torch refuses on the shapes alone: an indexed dim of size 0 with indices to look up.
    call, shape = _EMPTY_INDEXING[case]
    t, e = _pair(shape)
    _same_outcome(lambda: call(torch, t), lambda: call(ember, e))


_EMPTY_NORM_CALLS = {
    "instance_norm, empty batch, weight": lambda m, x: m.nn.functional.instance_norm(
        x((0, 3, 4)), weight=m.ones(3)),
    "instance_norm, empty batch, bias": lambda m, x: m.nn.functional.instance_norm(
        x((0, 3, 4)), bias=m.ones(3)),
    "instance_norm, empty batch": lambda m, x: m.nn.functional.instance_norm(x((0, 3, 4))),
    "instance_norm, empty batch, running stats": lambda m, x: m.nn.functional.instance_norm(
        x((0, 3, 4)), m.zeros(3), m.ones(3)),
    "instance_norm, no channels, weight": lambda m, x: m.nn.functional.instance_norm(
        x((2, 0, 4)), weight=m.ones(0)),
    "instance_norm, empty spatial, weight": lambda m, x: m.nn.functional.instance_norm(
        x((2, 3, 0)), weight=m.ones(3)),
    "batch_norm, no channels, weight": lambda m, x: m.nn.functional.batch_norm(
        x((2, 0, 4)), None, None, weight=m.ones(0), training=True),
    "batch_norm, no channels, running stats": lambda m, x: m.nn.functional.batch_norm(
        x((2, 0, 4)), m.zeros(0), m.ones(0), training=False),
    "batch_norm, empty batch, weight": lambda m, x: m.nn.functional.batch_norm(
        x((0, 3, 4)), None, None, weight=m.ones(3), training=True),
}


@pytest.mark.parametrize("case", sorted(_EMPTY_NORM_CALLS))
def test_batch_norm_family_with_no_channels_reads_its_affine_parameter(case):
    # instance norm is batch norm over batch * channels: none of them with a weight or bias
    # is torch's IndexError
    call = _EMPTY_NORM_CALLS[case]
    _same_outcome(lambda: call(torch, lambda s: torch.tensor(_filled(s))),
                  lambda: call(ember, lambda s: ember.tensor(_filled(s))))


@pytest.mark.parametrize("grow", [
    lambda m, x: x.resize_(3, 4), lambda m, x: x.resize_as_(m.ones(5, 4)),
    lambda m, x: x.resize_((2, 6))])
def test_an_ordinary_tensor_grows_in_place(grow):
    # (torch refuses only storage shared with NumPy, which the bad-input check used to make)
    t, e = torch.empty(0, 4), ember.empty(0, 4)
    assert tuple(grow(ember, e).shape) == tuple(grow(torch, t).shape)


@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 3.0, math.inf])
@pytest.mark.parametrize("fill", [math.nan, math.inf, None])
def test_cdist_keeps_nan_and_inf_as_torch(p, fill):
    t1, e1 = _pair((2, 5, 3), seed=4)
    t2, e2 = _pair((2, 6, 3), seed=5)
    if fill is not None:
        t1[0, 1, 2], e1[0, 1, 2] = fill, fill
    t1.requires_grad_(), e1.requires_grad_()
    _same_outcome(lambda: torch.cdist(t1, t2, p), lambda: ember.cdist(e1, e2, p))
    if fill is None or p == math.inf:
        torch.cdist(t1, t2, p).sum().backward()
        ember.cdist(e1, e2, p).sum().backward()
        np.testing.assert_allclose(e1.grad.numpy(), t1.grad.numpy(), rtol=1e-4, atol=1e-5)


_CDIST_MAX_CASES = {  # (x1, x2): NaN and inf differences, ties, and no columns at all
    "a NaN difference": ([[0.0, math.nan, 1.0]], [[1.0, 1.0, 3.0], [0.5, 0.2, 0.1]]),
    "only NaN differences": ([[math.nan, math.nan]], [[1.0, 1.0]]),
    "NaN on both sides": ([[math.nan, 2.0]], [[math.nan, 0.0]]),
    "NaN in x2": ([[0.0, 2.0]], [[1.0, math.nan]]),
    "an infinite difference": ([[math.inf, 0.0]], [[1.0, 1.0]]),
    "inf minus inf": ([[math.inf, 0.0]], [[math.inf, 1.0]]),
    "tied maxima": ([[0.0, 0.0], [1.0, 3.0]], [[1.0, -1.0], [2.0, 2.0]]),
    "equal rows": ([[1.0, 2.0]], [[1.0, 2.0]]),
    "no columns": (np.zeros((2, 0)), np.zeros((3, 0))),
    "batched and broadcast": (np.arange(12.0).reshape(2, 1, 3, 2) % 4,
                              np.arange(8.0).reshape(1, 2, 2, 2) % 3),
}


@pytest.mark.parametrize("case", sorted(_CDIST_MAX_CASES))
def test_cdist_max_norm_forward_and_backward_as_torch(case):
    # torch's p=inf kernel keeps a running max from 0 that a NaN never enters; its backward
    # gives each tied maximum the whole gradient and makes NaN and inf - inf NaN
    a, b = (np.asarray(v, np.float32) for v in _CDIST_MAX_CASES[case])
    results = []
    for lib in (torch, ember):
        x1, x2 = lib.tensor(a, requires_grad=True), lib.tensor(b, requires_grad=True)
        d = lib.cdist(x1, x2, p=math.inf)
        weights = np.arange(1, d.numel() + 1, dtype=np.float32).reshape(tuple(d.shape))
        d.backward(lib.tensor(weights))
        results.append([v.detach().numpy() for v in (d, x1.grad, x2.grad)])
    for expected, got in zip(*results):
        np.testing.assert_array_equal(got, expected)


def _cholesky_inputs():
    rng = np.random.default_rng(6)
    for n in (1, 3, 5):
        for trial in range(12):
            b = rng.standard_normal((n, n))
            x = b @ b.T + (0.1 if trial % 2 else -2.0) * np.eye(n)
            if trial % 4 == 3:
                x.flat[rng.integers(n * n)] = (math.inf, math.nan, -math.inf)[trial % 3]
            if trial in (0, 2):
                x[...] = math.inf if trial == 0 else math.nan
            yield f"n{n}-{trial}", x.astype(np.float32)
    c = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))
    yield "complex not positive-definite", (c @ c.conj().T - 3 * np.eye(3)).astype(np.complex64)


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("name, values", list(_cholesky_inputs()))
def test_cholesky_ex_leaves_lapacks_partial_factor(name, values, upper):
    # a failing column stops the factorization: earlier columns computed, its pivot stored,
    # later ones the input's triangle; NaN below an infinite pivot
    got = ember.linalg.cholesky_ex(ember.tensor(values), upper=upper)
    expected = torch.linalg.cholesky_ex(torch.tensor(values), upper=upper)
    assert got.info.item() == expected.info.item()
    np.testing.assert_allclose(got.L.numpy(), expected.L.numpy(), rtol=1e-4, atol=1e-4,
                               equal_nan=True)


def _lu_inputs():
    rng = np.random.default_rng(7)
    for shape in [(3, 3), (5, 5), (4, 3), (3, 5), (2, 4, 4)]:
        for trial in range(12):
            x = rng.standard_normal(shape).astype(np.float32)
            kind = trial % 6
            if kind < 2:
                x[...] = (math.inf, math.nan)[kind]
            else:
                for _ in range(1 + trial % 3):
                    x.flat[rng.integers(x.size)] = (math.inf, -math.inf, math.nan, 0.0)[kind - 2]
            yield f"{shape}-{trial}", x


@pytest.mark.parametrize("name, values", list(_lu_inputs()))
def test_lu_factor_of_infinities_and_nan_follows_lapack(name, values):
    # torch's LAPACK divides by an infinite pivot (NaN below it) and skips NaN when choosing
    # a pivot unless it comes first
    _same_outcome(lambda: torch.linalg.lu_factor_ex(torch.tensor(values)),
                  lambda: ember.linalg.lu_factor_ex(ember.tensor(values)))
    _same_outcome(lambda: torch.linalg.lu(torch.tensor(values)),
                  lambda: ember.linalg.lu(ember.tensor(values)))


@pytest.mark.parametrize("shape", [(3, 3), (5, 5), (4, 3), (3, 5), (2, 4, 4), (1, 3), (3, 1)])
@pytest.mark.parametrize("fill", [math.inf, -math.inf, math.nan])
def test_geqrf_of_a_non_finite_matrix_follows_lapack(shape, fill):
    # torch's LAPACK takes column norms scaled by the largest entry: inf / inf is NaN
    values = np.full(shape, fill, np.float32)
    _same_outcome(lambda: torch.geqrf(torch.tensor(values)),
                  lambda: ember.geqrf(ember.tensor(values)))


def _householder_inputs():
    rng = np.random.default_rng(8)
    for shape, k in [((3, 3), 3), ((5, 5), 3), ((4, 3), 2), ((2, 4, 3), 3)]:
        for case in range(6):
            x = rng.standard_normal(shape).astype(np.float32)
            t = rng.standard_normal(shape[:-2] + (k,)).astype(np.float32)
            if case < 2:
                x[...], t[...] = ((math.inf, math.inf), (math.nan, math.nan))[case]
            elif case < 4:
                x.flat[rng.integers(x.size)] = (math.inf, math.nan)[case - 2]
            elif case == 4:
                t.flat[rng.integers(t.size)] = math.inf
            yield f"{shape}-{k}-{case}", x, t


@pytest.mark.parametrize("name, values, tau", list(_householder_inputs()))
def test_householder_product_applies_reflectors_as_lapack(name, values, tau):
    # org2r applies H_i to rows i: of columns i: only, and writes column i as e_i - tau v
    _same_outcome(lambda: torch.linalg.householder_product(torch.tensor(values), torch.tensor(tau)),
                  lambda: ember.linalg.householder_product(ember.tensor(values),
                                                           ember.tensor(tau)))


@pytest.mark.parametrize("shape", [(3, 3), (5, 5), (4, 3), (3, 5), (2, 4, 4)])
@pytest.mark.parametrize("fill", [math.inf, -math.inf, math.nan])
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_qr_of_a_non_finite_matrix_follows_lapack(shape, fill, mode):
    # geqr2's reflectors (norms scaled by the largest entry) and org2r's product of them
    values = np.full(shape, fill, np.float32)
    _same_outcome(lambda: torch.linalg.qr(torch.tensor(values), mode=mode),
                  lambda: ember.linalg.qr(ember.tensor(values), mode=mode))


def _ldl_inputs():
    rng = np.random.default_rng(11)
    for n in [1, 2, 3, 5, 9]:
        for trial in range(10):
            x = rng.standard_normal((n, n)).astype(np.float32 if trial % 2 else np.float64)
            x = x + x.T
            kind = trial % 5
            if kind < 2:
                x[...] = (math.inf, math.nan)[kind]
            else:
                for _ in range(1 + trial % 3):
                    i, j = rng.integers(n, size=2)
                    x[i, j] = x[j, i] = (math.inf, -math.inf, math.nan)[kind - 2]
            yield f"{n}-{trial}", x


@pytest.mark.parametrize("name, values", list(_ldl_inputs()))
def test_ldl_factor_of_infinities_and_nan_follows_lapack(name, values):
    # torch's library lets a NaN win the Bunch-Kaufman pivot search (so all-NaN matrices take
    # 2x2 pivots) and leaves the trailing matrix alone after an infinite pivot
    _same_outcome(lambda: torch.linalg.ldl_factor_ex(torch.tensor(values)),
                  lambda: ember.linalg.ldl_factor_ex(ember.tensor(values)))
    _same_outcome(lambda: torch.linalg.ldl_factor(torch.tensor(values)),
                  lambda: ember.linalg.ldl_factor(ember.tensor(values)))


@pytest.mark.parametrize("pivots_shape, ld_batch", [((7,), ()), ((4,), ()), ((2, 5), ()),
                                                    ((5,), (3,)), ((2, 5), (2,))])
def test_ldl_solve_wants_pivots_shaped_as_ld_without_its_last_dim(pivots_shape, ld_batch):
    # torch checks pivots.shape == LD.shape[:-1] exactly: pivots never broadcast
    def call(lib):
        ld = lib.eye(5).expand(*ld_batch, 5, 5)
        return lib.linalg.ldl_solve(ld, lib.ones(pivots_shape, dtype=lib.int32), lib.ones(5, 5))
    _same_outcome(lambda: call(torch), lambda: call(ember))


@pytest.mark.parametrize("lu_shape, pivots, unpack_pivots", [
    ((3, 5), [1, 2, 3, 9, 0], True), ((3, 5), [3, 1, 2, 9, 0], True), ((0, 5), [1, 1, 1], True),
    ((3, 3), [1, 1, 1, 1, 1], True), ((3, 5), [1, 2], True), ((3, 5), [9, 9, 9], False),
    ((3, 5), [1.0, 2.0, 3.0], False), ((3, 5), [1.0, 2.0, 3.0], True), ((4, 2), [4, 3, 0], True),
])
def test_lu_unpack_reads_only_the_first_min_m_n_pivots(lu_shape, pivots, unpack_pivots):
    # torch's kernel swaps rows for the first min(m, n) pivots only (range-checking just those)
    # and checks the pivots' dtype only when it unpacks them
    def call(lib):
        lu = lib.arange(math.prod(lu_shape), dtype=lib.float32).reshape(lu_shape)
        dtype = lib.float32 if isinstance(pivots[0], float) else lib.int32
        return lib.lu_unpack(lu, lib.tensor(pivots, dtype=dtype), unpack_pivots=unpack_pivots)
    _same_outcome(lambda: call(torch), lambda: call(ember))


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("shape, dtype", [((0, 5), "float32"), ((2, 0, 3), "float32"),
                                          ((0,), "float32"), ((5, 0), "float64"),
                                          ((0, 5), "int64")])
def test_deprecated_cholesky_returns_an_empty_input_unchecked(shape, dtype):
    # torch.cholesky (not linalg.cholesky) returns an empty input's like before its checks
    _same_outcome(lambda: torch.cholesky(torch.empty(shape, dtype=getattr(torch, dtype))),
                  lambda: ember.cholesky(ember.empty(shape, dtype=getattr(ember, dtype))))
    _same_outcome(lambda: torch.empty(shape).cholesky(upper=True),
                  lambda: ember.empty(shape).cholesky(upper=True))
    _same_outcome(lambda: torch.linalg.cholesky(torch.empty(shape)),
                  lambda: ember.linalg.cholesky(ember.empty(shape)))


@pytest.mark.parametrize("name, shape, output_size", [
    ("adaptive_avg_pool1d", (0, 8, 8), 5), ("adaptive_avg_pool1d", (2, 8, 8), 0),
    ("adaptive_avg_pool1d", (2, 8, 8), 1), ("adaptive_avg_pool1d", (2, 8, 8), 3),
    ("adaptive_avg_pool2d", (0, 8, 8), (2, 2)), ("adaptive_avg_pool2d", (2, 8, 8), (0, 3)),
    ("adaptive_avg_pool2d", (2, 8, 8), (1, 1)), ("adaptive_avg_pool2d", (2, 8, 8), (None, 1)),
    ("adaptive_avg_pool3d", (0, 2, 8, 8), (2, 2, 2)), ("adaptive_avg_pool3d", (2, 2, 8, 8), 1),
])
@pytest.mark.parametrize("dtype", ["bool", "int64", "complex64", "float32"])
def test_adaptive_avg_pool_dtype_checks_follow_torch(name, shape, output_size, dtype):
    # torch takes the mean for a 1x1 output (complex passes, integers fail in mean), and its
    # 1-d/2-d kernel returns an empty output before looking for a loop for the dtype
    def call(lib):
        x = lib.ones(shape).to(getattr(lib, dtype))
        return getattr(lib.nn.functional, name)(x, output_size)
    _same_outcome(lambda: call(torch), lambda: call(ember))


@pytest.mark.parametrize("call", [
    "lib.empty(0, 4), None, None, None, None", "lib.empty(0, 4, 5), None, None, None, None",
    "lib.empty(3, 0), None, None, None, None",
    "lib.empty(0, 4), lib.ones(5) * 2, lib.ones(5), None, None",
    "lib.empty(0, 4), lib.ones(0), None, None, None",
    "lib.empty(0, 4), None, None, lib.ones(3), lib.ones(3)",
    "lib.empty(0, 4, dtype=lib.long), lib.ones(4), None, None, None",
    "lib.empty(0, 4, dtype=lib.bool), None, None, lib.ones(4), lib.ones(4)",
])
@pytest.mark.parametrize("training", [False, True])
def test_batch_norm_of_an_empty_input_only_applies_the_first_weight_and_bias(call, training):
    # torch skips every check on an empty input (no running stats needed in evaluation, any
    # length of weight or running stats) and returns input * weight[0] + bias[0]
    def run(lib):
        return lib.batch_norm(*eval(f"({call})", {"lib": lib}), training, 0.5, 1e-5, False)  # noqa: S307
    _same_outcome(lambda: run(torch), lambda: run(ember))


@pytest.mark.parametrize("call", [
    "F.embedding_bag(w, i)", "F.embedding_bag(w, lib.tensor([0, 1, 3]), lib.tensor([0, 2]))",
    "F.embedding_bag(w, i, mode='max')", "F.embedding_bag(w, i, None, per_sample_weights=w)",
    "F.embedding_bag(w, i.int())", "F.embedding_bag(w.double(), i)",
])
def test_embedding_bag_accepts_the_old_weight_first_order_with_a_warning(call):
    # torch swaps weight and input when weight is int64 and input floating (the old order)
    def run(lib):
        w, i = lib.arange(12.0).reshape(4, 3), lib.tensor([[0, 1], [2, 3]])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = eval(call, {"lib": lib, "F": lib.nn.functional, "w": w, "i": i})  # noqa: S307
        return result, [str(w.message) for w in caught if "Argument order" in str(w.message)]
    expected_warnings = []
    def torch_call():
        result, seen = run(torch)
        expected_warnings.extend(seen)
        return result
    def ember_call():
        result, seen = run(ember)
        assert seen == expected_warnings
        return result
    _same_outcome(torch_call, ember_call)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("padding", ["same", "valid", 0])
@pytest.mark.parametrize("input_dtype, bias_dtype", [
    ("bool", "float32"), ("int64", "float32"), ("float64", "float32"), ("float32", "float64"),
    ("float32", "int64"), ("float32", None),
])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_conv_with_string_padding_adds_the_bias_in_place(k, input_dtype, bias_dtype, padding):
    # with padding "same"/"valid" torch convolves first (its dtype errors come first) and adds
    # the bias in place afterwards: any bias dtype, cast to the result's
    def run(lib):
        x = lib.arange(float(4 ** k)).reshape((1, 1) + (4,) * k).to(getattr(lib, input_dtype))
        bias = None if bias_dtype is None else lib.full((1,), 2).to(getattr(lib, bias_dtype))
        conv = getattr(lib.nn.functional, f"conv{k}d")
        return conv(x, lib.ones((1, 1) + (2,) * k), bias, padding=padding)
    _same_outcome(lambda: run(torch), lambda: run(ember))


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("which", ["weight", "bias", "running_mean", "running_var"])
@pytest.mark.parametrize("size", [5, 7])
def test_native_batch_norm_reads_one_entry_per_channel_of_longer_vectors(training, which, size):
    # torch's CPU kernel reads entry c of each per-channel vector for the C channels only: a
    # longer vector's tail is ignored and, for running stats, left as it was
    def run(lib):
        x = lib.arange(125.0).reshape(5, 5, 5) / 10
        vectors = {"weight": lib.ones(5) * 1.5, "bias": lib.ones(5) * 0.5,
                   "running_mean": lib.zeros(5), "running_var": lib.ones(5)}
        vectors[which] = lib.arange(float(size)) + 1
        out = lib.native_batch_norm(x, *vectors.values(), training, 0.5, 0.6)
        return (*out, vectors["running_mean"], vectors["running_var"])
    _same_outcome(lambda: run(torch), lambda: run(ember))


@pytest.mark.parametrize("call", [
    "x.to_mkldnn(bogus=1)", "x.to_mkldnn('a')", "x.hash_tensor(bogus=1)", "x.hash_tensor('a')",
    "x[:0].hash_tensor()", "x.hash_tensor(0, keepdim='a')",
])
def test_refused_methods_check_their_arguments_as_torch_first(call):
    # ember refuses to_mkldnn and hash_tensor, but only after torch's own argument checks
    def run(lib):
        return eval(call, {"x": lib.ones(3)})  # noqa: S307
    with pytest.raises(Exception) as expected:
        run(torch)
    with pytest.raises(Exception) as got:
        run(ember)
    assert type(got.value) is type(expected.value)


def _qr_single_nonfinite_inputs():
    rng = np.random.default_rng(5)
    for shape in [(2, 2), (3, 3), (4, 3), (3, 4), (5, 5)]:
        for trial in range(12):
            x = rng.standard_normal(shape).astype(np.float32)
            for _ in range(1 + trial % 2):
                x.flat[rng.integers(x.size)] = (math.inf, -math.inf, math.nan)[trial % 3]
            yield f"{shape}-{trial}", x


@pytest.mark.parametrize("name, values", list(_qr_single_nonfinite_inputs()))
def test_qr_of_one_or_two_non_finite_entries_follows_lapack(name, values):
    # torch's library: lapy2 of two infinities is NaN and of (NaN, y) is |y| sqrt(2); SIGN of a
    # NaN is negative; larf/ger leave alone the rows past v's last non-zero and the columns
    # whose v^T C is zero
    _same_outcome(lambda: torch.geqrf(torch.tensor(values)),
                  lambda: ember.geqrf(ember.tensor(values)))
    for mode in ("reduced", "complete"):
        _same_outcome(lambda: torch.linalg.qr(torch.tensor(values), mode=mode),
                      lambda: ember.linalg.qr(ember.tensor(values), mode=mode))


# ------------------------------------------------------------ wrong dtypes of a second tensor


def _t(lib, values, dtype):
    return lib.tensor(np.asarray(values)).to(getattr(lib, dtype))


_INPLACE_CASTS = {  # torch checks that the result fits self before it looks for a kernel
    "atan2_ complex other": lambda m: m.ones(3).atan2_(_t(m, [1, 2, 3], "complex64")),
    "bitwise_and_ complex other": lambda m: m.ones(3).bitwise_and_(_t(m, [1, 2, 3],
                                                                     "complex64")),
    "fmod_ complex other": lambda m: m.ones(3).fmod_(_t(m, [1, 2, 3], "complex64")),
    "clamp_ complex min": lambda m: m.ones(3).clamp_(_t(m, [1, 2, 3], "complex64")),
    "xlogy_ complex other": lambda m: m.ones(3).xlogy_(_t(m, [1, 2, 3], "complex64")),
    "gcd_ float other on int": lambda m: _t(m, [4, 6], "int64").gcd_(m.ones(2)),
    "gcd_ of floats": lambda m: m.ones(2).gcd_(m.ones(2)),
    "atan2_ of complex tensors": lambda m: _t(m, [1, 2], "complex64").atan2_(
        _t(m, [1, 2], "complex64")),
    "gt_ complex other": lambda m: m.ones(3).gt_(_t(m, [1, 2, 3], "complex64")),
    "ldexp_ bool other": lambda m: m.ones(3).ldexp_(_t(m, [1, 0, 1], "bool")),
}


@pytest.mark.parametrize("case", sorted(_INPLACE_CASTS))
def test_in_place_ops_check_the_cast_before_the_kernel_as_torch(case):
    _same_outcome(lambda: _INPLACE_CASTS[case](torch), lambda: _INPLACE_CASTS[case](ember))


@pytest.mark.parametrize("input_dtype", ["float32", "int64", "bool"])
@pytest.mark.parametrize("other_dtype", ["bool", "int64", "uint8", "float32"])
def test_ldexp_refuses_a_bool_exponent_of_a_floating_input_as_torch(input_dtype, other_dtype):
    def call(lib):
        return lib.ldexp(_t(lib, [1, 2, 3], input_dtype), _t(lib, [1, 0, 1], other_dtype))
    _same_outcome(lambda: call(torch), lambda: call(ember))


_BCE_CASES = [  # (input dtype, target dtype, {argument: (values, dtype)})
    ("float32", "float32", {}), ("float64", "float32", {}), ("float32", "float64", {}),
    ("float16", "float32", {}), ("float32", "float16", {}), ("float32", "int64", {}),
    ("float32", "bool", {}), ("float32", "complex64", {}),
    ("float32", "complex64", {"pos_weight": ([1.0, 2.0, 3.0, 4.0], "float32")}),
    ("float32", "float32", {"pos_weight": ([1.0, 2.0, 3.0, 4.0], "float64")}),
    ("float32", "float32", {"weight": ([1.0, 2.0, 3.0, 4.0], "float64")}),
    ("float32", "float32", {"weight": ([1, 2, 3, 4], "int64")}),
    ("float32", "float32", {"weight": ([1, 2, 3, 4], "complex64")}),
    ("float32", "float32", {"weight": (np.ones((2, 3, 4)), "float32")}),
]


@pytest.mark.parametrize("case", range(len(_BCE_CASES)))
@pytest.mark.parametrize("requires_grad", [False, True])
def test_bce_with_logits_computes_in_place_as_torch(case, requires_grad):
    # torch's kernel is (1 - target).mul_(input).sub_(log_sigmoid(input)): the loss takes the
    # target's dtype, and an integer target is the in-place cast error
    input_dtype, target_dtype, extra = _BCE_CASES[case]
    rng = np.random.default_rng(case)
    x, y = rng.standard_normal((3, 4)), (rng.random((3, 4)) > 0.5).astype(float)

    def call(lib):
        kwargs = {k: _t(lib, v, d) for k, (v, d) in extra.items()}
        input = _t(lib, x, input_dtype).requires_grad_(requires_grad)
        return lib.nn.functional.binary_cross_entropy_with_logits(
            input, _t(lib, y, target_dtype), reduction="none", **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch: complex to real casts
        _same_outcome(lambda: call(torch), lambda: call(ember))


_NORM_DTYPES = ["float32", "float64", "int64", "bool", "complex64", "float16"]


@pytest.mark.parametrize("slot", range(4))
@pytest.mark.parametrize("dtype", _NORM_DTYPES)
@pytest.mark.parametrize("training", [True, False])
def test_native_batch_norm_parameters_share_the_input_dtype_as_torch(slot, dtype, training):
    def call(lib):
        params = [lib.ones(3) for _ in range(4)]
        params[slot] = _t(lib, [1, 2, 3], dtype)
        x = _t(lib, np.arange(24.0).reshape(2, 3, 4) % 5, "float32")
        return lib.native_batch_norm(x, *params, training, 0.1, 1e-5)[0]
    _same_outcome(lambda: call(torch), lambda: call(ember))


@pytest.mark.parametrize("mean_dtype", _NORM_DTYPES[:4])
@pytest.mark.parametrize("var_dtype", _NORM_DTYPES[:4])
@pytest.mark.parametrize("use_input_stats", [True, False])
def test_instance_norm_running_statistics_of_any_dtype_as_torch(mean_dtype, var_dtype,
                                                                  use_input_stats):
    # torch holds the running statistics to the input's dtype only when running_mean has it
    results = []
    for lib in (torch, ember):
        stats = [_t(lib, [1, 0, 2], mean_dtype), _t(lib, [1, 2, 3], var_dtype)]
        x = _t(lib, np.arange(24.0).reshape(2, 3, 4) ** 1.5 % 7, "float32")
        try:
            y = lib.nn.functional.instance_norm(x, *stats, use_input_stats=use_input_stats,
                                                momentum=0.5)
        except RuntimeError:
            results.append("RuntimeError")
            continue
        results.append([y.numpy()] + [s.double().numpy() for s in stats])
    assert type(results[0]) is type(results[1])
    if results[0] != "RuntimeError":
        for expected, got in zip(*results):
            np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", ["lengths", "offsets"])
@pytest.mark.parametrize("dtype", ["int32", "int64", "int16", "float32", "bool", "complex64"])
@pytest.mark.parametrize("unsafe", [False, True])
def test_segment_reduce_index_dtypes_as_torch(kind, dtype, unsafe):
    values = [2, 4] if kind == "lengths" else [0, 2, 6]

    def call(lib):
        data = _t(lib, np.arange(6.0), "float32")
        return lib.segment_reduce(data, "sum", unsafe=unsafe, **{kind: _t(lib, values, dtype)})
    _same_outcome(lambda: call(torch), lambda: call(ember))


@pytest.mark.parametrize("dtype", ["int64", "int32", "float32", "complex64"])
def test_multilabel_margin_loss_target_dtypes_as_torch(dtype):
    def call(lib):
        x = _t(lib, np.arange(8.0).reshape(2, 4) / 8, "float32")
        return lib.nn.functional.multilabel_margin_loss(
            x, _t(lib, [[1, 2, -1, 0], [0, -1, 0, 0]], dtype))
    _same_outcome(lambda: call(torch), lambda: call(ember))


@pytest.mark.parametrize("dtype", ["int32", "int64", "int16", "uint8", "float32", "bool"])
def test_ldl_solve_takes_pivots_of_any_integer_type_as_torch(dtype):
    a = np.array([[4.0, 1.0, 2.0], [1.0, 3.0, 0.5], [2.0, 0.5, 5.0]], dtype=np.float32)
    b = np.arange(6.0, dtype=np.float32).reshape(3, 2)

    def call(lib):
        ld, pivots = lib.linalg.ldl_factor(lib.tensor(a))
        return lib.linalg.ldl_solve(ld, pivots.to(getattr(lib, dtype)), lib.tensor(b))
    _same_outcome(lambda: call(torch), lambda: call(ember))


_GRID_POINTS = [[0.1, 0.2], [math.nan, 0.3], [0.3, math.nan], [math.inf, 0.0], [-math.inf, 0.5],
                [0.2, math.inf], [math.nan, math.nan], [2.0, 0.1], [-1.5, -1.2]]


@pytest.mark.parametrize("mode,nd", [("bilinear", 2), ("nearest", 2), ("bicubic", 2),
                                     ("bilinear", 3), ("nearest", 3)])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_at_nan_and_infinite_points_as_torch(mode, nd, padding_mode,
                                                         align_corners):
    # torch's 2-D kernel gives NaN for a non-finite point with zeros padding and clips one to
    # 0 with border/reflection; its 3-D kernel skips it (0) or clips it to the far edge
    points = np.array([p + [0.1] * (nd - 2) for p in _GRID_POINTS], np.float32)
    image = np.arange(1.0, 5 ** nd + 1, dtype=np.float32).reshape((1, 1) + (5,) * nd)

    def call(lib):
        grid = lib.tensor(points.reshape((1,) * (nd - 1) + (len(points), nd)))
        return lib.nn.functional.grid_sample(lib.tensor(image), grid, mode=mode,
                                             padding_mode=padding_mode,
                                             align_corners=align_corners)
    _same_outcome(lambda: call(torch), lambda: call(ember))


_NORM_CALLS = {
    "native_batch_norm train": lambda m, x, w, b: m.native_batch_norm(
        x, w, b, m.zeros(2), m.ones(2), True, 0.1, 1e-5)[0],
    "native_batch_norm eval": lambda m, x, w, b: m.native_batch_norm(
        x, w, b, m.tensor([0.5, 1.0]), m.ones(2), False, 0.1, 1e-5)[0],
    "batch_norm train": lambda m, x, w, b: m.nn.functional.batch_norm(x, None, None, w, b, True),
    "batch_norm eval": lambda m, x, w, b: m.nn.functional.batch_norm(
        x, m.tensor([0.5, 1.0]), m.ones(2), w, b, False),
    "instance_norm": lambda m, x, w, b: m.nn.functional.instance_norm(x, weight=w, bias=b),
    "group_norm 1 group": lambda m, x, w, b: m.nn.functional.group_norm(x, 1, w, b),
    "group_norm 2 groups": lambda m, x, w, b: m.nn.functional.group_norm(x, 2, w, b),
    "native_group_norm": lambda m, x, w, b: m.native_group_norm(x, w, b, 2, 2, 3, 1, 1e-5)[0],
    "group_norm no affine": lambda m, x, w, b: m.nn.functional.group_norm(x * w[0], 2),
}


@pytest.mark.parametrize("call", sorted(_NORM_CALLS))
@pytest.mark.parametrize("weight", [[math.inf, math.inf], [math.nan, 1.0], [-math.inf, 2.0],
                                    [0.5, 2.0]])
def test_norms_with_non_finite_weights_compute_as_torch(call, weight):
    # torch's kernels compute x * a + (bias - mean * a) with a = rstd * weight
    x = np.array([[[1.0, -2.0, 3.0], [0.5, 0.5, 0.5]], [[-1.0, 4.0, 0.0], [2.0, -3.0, 1.0]]],
                 np.float32)

    def run(lib):
        w, b = lib.tensor(np.float32(weight)), lib.tensor(np.float32([0.5, -1.0]))
        return _NORM_CALLS[call](lib, lib.tensor(x), w, b)
    _same_outcome(lambda: run(torch), lambda: run(ember))


def _nan_boundary_cases():
    rng = np.random.default_rng(11)
    for trial in range(40):
        n = int(rng.integers(0, 8))
        boundaries = np.sort(rng.integers(-3, 4, size=n).astype(np.float32))
        boundaries[n - int(rng.integers(0, n + 1)) if n else 0:] = np.nan  # NaN sorted last
        if trial % 5 == 0 and n:
            boundaries[int(rng.integers(0, n))] = np.nan  # and one inside
        values = rng.integers(-4, 5, size=5).astype(np.float32)
        values[:2] = [np.nan, np.inf] if trial % 2 else values[:2]
        yield boundaries, values
    batched = np.sort(rng.integers(-3, 4, size=(2, 3, 5)).astype(np.float32), -1)
    batched[..., 3:] = np.nan
    yield batched, rng.integers(-4, 5, size=(2, 3, 4)).astype(np.float32)


@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_and_bucketize_with_nan_boundaries_as_torch(right):
    # every comparison with a NaN boundary is false in torch's binary search
    for boundaries, values in _nan_boundary_cases():
        for name in ("searchsorted", "bucketize"):  # (bucketize: 1-D boundaries only)
            def call(lib):
                b, v = lib.tensor(boundaries), lib.tensor(values)
                args = (b, v) if name == "searchsorted" else (v, b)
                return getattr(lib, name)(*args, right=right)
            _same_outcome(lambda: call(torch), lambda: call(ember))


@pytest.mark.parametrize("shape", [(5, 5), (5, 3), (3, 5)])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("transpose", [True, False])
@pytest.mark.parametrize("fill", [None, math.inf, math.nan])
def test_ormqr_with_a_non_finite_scale_as_torch(shape, left, transpose, fill):
    # LAPACK applies each reflector to the rows (columns) from its own on, and skips tau == 0
    rng = np.random.default_rng(3)
    m = shape[0]
    a = rng.standard_normal(shape).astype(np.float32)
    reflectors, tau = torch.geqrf(torch.tensor(a))
    tau = tau.numpy().copy()
    if fill is not None:
        tau[tau.size // 2] = fill
    c = rng.standard_normal((m, 4) if left else (4, m)).astype(np.float32)

    def call(lib):
        return lib.ormqr(lib.tensor(reflectors.numpy()), lib.tensor(tau), lib.tensor(c), left,
                         transpose)
    _same_outcome(lambda: call(torch), lambda: call(ember))
