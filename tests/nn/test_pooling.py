"""Pooling (functional and modules) against torch: values, indices, float64 gradients and
double backward, dtypes, ceil_mode/padding/dilation edge cases, errors, meta, reprs."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as F
from conftest import assert_grads_match, assert_same, make_pair, to_ember
from ember import nn


def _rand(shape, seed=0, dtype=np.float64):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def assert_cotangent_grads_match(fe, ft, a, seed=1):
    """Double backward of a piecewise-linear op: the input gradient is linear in the cotangent
    ``g``; compare d(grad_x . v)/dg (torch's ``*_backward_backward``) with torch."""
    rng = np.random.default_rng(seed)
    e, t = make_pair(a, requires_grad=True)
    out_e, out_t = fe(e), ft(t)
    g = rng.standard_normal(tuple(out_t.shape))
    ge, gt = make_pair(g, requires_grad=True)
    (gx_e,) = ember.autograd.grad(out_e, e, ge, create_graph=True)
    (gx_t,) = torch.autograd.grad(out_t, t, gt, create_graph=True)
    v = rng.standard_normal(a.shape)
    (gg_e,) = ember.autograd.grad((gx_e * ember.tensor(v)).sum(), ge)
    (gg_t,) = torch.autograd.grad((gx_t * torch.tensor(v)).sum(), gt)
    assert_same(gg_e, gg_t)


def _distinct(shape, seed=0):
    """Values without ties, so gradients through max are unambiguous."""
    n = int(np.prod(shape))
    return np.random.default_rng(seed).permutation(n).reshape(shape).astype(np.float64) / n


# ---------------------------------------------------------------- max pooling

MAX_CASES = [
    (1, (2, 3, 9), dict(kernel_size=2)),
    (1, (3, 10), dict(kernel_size=3, stride=2, padding=1, dilation=2, ceil_mode=True)),
    (1, (2, 2, 7), dict(kernel_size=(3,), stride=(2,), ceil_mode=True)),
    (2, (2, 3, 7, 8), dict(kernel_size=2)),
    (2, (3, 7, 8), dict(kernel_size=3, stride=2, padding=1)),
    (2, (2, 2, 7, 9), dict(kernel_size=(2, 3), stride=(2, 1), padding=(1, 0),
                           dilation=(2, 1), ceil_mode=True)),
    (2, (1, 2, 6, 6), dict(kernel_size=3, stride=2, ceil_mode=True)),
    (2, (1, 2, 5, 5), dict(kernel_size=2, stride=3, ceil_mode=True)),
    (2, (1, 1, 8, 8), dict(kernel_size=3, stride=1, padding=1, dilation=3)),
    (3, (2, 2, 5, 6, 4), dict(kernel_size=2)),
    (3, (2, 5, 6, 5), dict(kernel_size=(3, 2, 2), stride=(2, 1, 2), padding=(1, 1, 0),
                           dilation=(1, 2, 1), ceil_mode=True)),
]


def _max_fn(lib_f, nd):
    return getattr(lib_f, f"max_pool{nd}d")


@pytest.mark.parametrize("nd,shape,kw", MAX_CASES)
def test_max_pool_values_indices_grads(nd, shape, kw):
    a = _distinct(shape)
    e = _max_fn(F, nd)(ember.tensor(a), return_indices=True, **kw)
    t = _max_fn(TF, nd)(torch.tensor(a), return_indices=True, **kw)
    assert_same(e, t)
    assert_grads_match(lambda x: _max_fn(F, nd)(x, **kw), lambda x: _max_fn(TF, nd)(x, **kw),
                       a)
    assert_cotangent_grads_match(lambda x: _max_fn(F, nd)(x, **kw),
                                 lambda x: _max_fn(TF, nd)(x, **kw), a)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int64", "int32", "uint8"])
def test_max_pool_dtypes(dtype):
    a = _rand((2, 3, 6, 7)) * 50
    t = torch.tensor(a).to(getattr(torch, dtype))
    e = to_ember(t)
    assert_same(F.max_pool2d(e, 3, 2, 1, return_indices=True),
                TF.max_pool2d(t, 3, 2, 1, return_indices=True))


def test_max_pool_ties_nan_and_inf_follow_torch():
    a = np.zeros((1, 1, 4, 6))
    a[0, 0, 1, 1] = np.nan
    a[0, 0, 0, 0] = np.nan  # two NaNs in one window: torch reports the last one
    a[0, 0, 2:, 3:] = -np.inf  # a window of -inf padded on the right (ceil_mode)
    a[0, 0, 3, 5] = np.nan
    e, t = make_pair(a)
    for kw in (dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
               dict(kernel_size=2, stride=1)):
        assert_same(F.max_pool2d(e, return_indices=True, **kw),
                    TF.max_pool2d(t, return_indices=True, **kw))
    b = np.full((1, 1, 3, 3), -np.inf)
    e, t = make_pair(b)
    assert_same(F.max_pool2d(e, 2, 2, 1, return_indices=True),
                TF.max_pool2d(t, 2, 2, 1, return_indices=True))


def test_max_pool_gradient_float32_and_ties():
    a = np.ones((2, 2, 4, 4), dtype=np.float32)  # all ties: the first element gets the grad
    assert_grads_match(lambda x: F.max_pool2d(x, 3, 1, 1), lambda x: TF.max_pool2d(x, 3, 1, 1),
                       a)
    assert_grads_match(lambda x: F.max_pool1d(x, 2, 1), lambda x: TF.max_pool1d(x, 2, 1),
                       _rand((2, 3, 8), dtype=np.float32))


def test_max_pool_noncontiguous_and_empty_batch():
    a = _distinct((3, 2, 6, 5))
    e, t = make_pair(a)
    assert_same(F.max_pool2d(e.transpose(0, 1), 2, return_indices=True),
                TF.max_pool2d(t.transpose(0, 1), 2, return_indices=True))
    assert_same(F.max_pool2d(e.transpose(2, 3), (2, 1)), TF.max_pool2d(t.transpose(2, 3), (2, 1)))
    e, t = make_pair(np.zeros((0, 3, 4, 4)))
    assert_same(F.max_pool2d(e, 2, return_indices=True), TF.max_pool2d(t, 2, return_indices=True))


@pytest.mark.parametrize("call", [
    lambda f, x: f.max_pool2d(x, 2, padding=2),
    lambda f, x: f.max_pool2d(x, 0, 1),
    lambda f, x: f.max_pool2d(x, 2, 0),
    lambda f, x: f.max_pool2d(x, 2, -1),
    lambda f, x: f.max_pool2d(x, 2, 1, -1),
    lambda f, x: f.max_pool2d(x, 2, dilation=0),
    lambda f, x: f.max_pool2d(x, 2, 1, 2, dilation=3),
    lambda f, x: f.max_pool2d(x, (2, 2, 2)),
    lambda f, x: f.max_pool2d(x[0, 0, :1, :1], 2),
    lambda f, x: f.max_pool2d(x[0, :, :1, :1], 2),
    lambda f, x: f.max_pool2d(x[:, :0], 2),
    lambda f, x: f.max_pool2d(x > 0, 2),
    lambda f, x: f.max_pool1d(x, 2),
    lambda f, x: f.max_pool1d(x[0, 0, 0], 2),
    lambda f, x: f.max_pool1d(x[0, :, 0], 9),
    lambda f, x: f.max_pool1d(x[0, :, 0], 2, padding=2),
    lambda f, x: f.max_pool1d(x[0, :, 0], 0),
    lambda f, x: f.max_pool1d(x[0, :, 0], 2, -1),
    lambda f, x: f.max_pool1d(x[0, :, 0], (2, 2)),
    lambda f, x: f.max_pool1d(x[0, :, 0], 2, 1, 0, 0),
    lambda f, x: f.max_pool3d(x[0], 2),
    lambda f, x: f.max_pool3d(x.unsqueeze(2), 9),
    lambda f, x: f.max_pool3d(x.unsqueeze(2), 0, 1),
    lambda f, x: f.max_pool3d(x.unsqueeze(2), 1, dilation=0),
])
def test_max_pool_errors_match_torch(call):
    a = _rand((2, 3, 5, 5))
    e, t = make_pair(a)
    with pytest.raises(Exception) as expected:
        call(TF, t)
    with pytest.raises(type(expected.value)) as actual:
        call(F, e)
    assert str(actual.value) == str(expected.value)


# ---------------------------------------------------------------- average pooling

AVG_CASES = [
    (1, (2, 3, 9), dict(kernel_size=2)),
    (1, (3, 10), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True,
                      count_include_pad=False)),
    (1, (3, 10), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    (2, (2, 3, 7, 8), dict(kernel_size=2)),
    (2, (3, 7, 8), dict(kernel_size=3, stride=2, padding=1)),
    (2, (3, 7, 8), dict(kernel_size=3, stride=2, padding=1, count_include_pad=False)),
    (2, (2, 2, 7, 9), dict(kernel_size=(2, 3), stride=(2, 1), padding=(1, 0), ceil_mode=True)),
    (2, (2, 2, 7, 9), dict(kernel_size=(2, 3), stride=(3, 2), padding=(1, 1), ceil_mode=True,
                           count_include_pad=False)),
    (2, (1, 2, 6, 6), dict(kernel_size=3, stride=2, ceil_mode=True, divisor_override=2)),
    (3, (2, 2, 5, 6, 4), dict(kernel_size=2)),
    (3, (2, 5, 6, 5), dict(kernel_size=(3, 2, 2), stride=(2, 1, 2), padding=(1, 1, 0),
                           ceil_mode=True, count_include_pad=False)),
    (3, (1, 2, 5, 6, 5), dict(kernel_size=3, stride=2, padding=1, divisor_override=5)),
]


@pytest.mark.parametrize("nd,shape,kw", AVG_CASES)
def test_avg_pool_values_grads(nd, shape, kw):
    a = _rand(shape)
    fe, ft = getattr(F, f"avg_pool{nd}d"), getattr(TF, f"avg_pool{nd}d")
    assert_grads_match(lambda x: fe(x, **kw), lambda x: ft(x, **kw), a)
    assert_cotangent_grads_match(lambda x: fe(x, **kw), lambda x: ft(x, **kw), a)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int64", "int32",
                                   "uint8", "bool"])
def test_avg_pool_dtypes(dtype):
    a = _rand((2, 3, 6, 7)) * 50
    t = torch.tensor(a).to(getattr(torch, dtype))
    e = to_ember(t)
    calls = [lambda f, x: f.avg_pool2d(x, 3, 2, 1),
             lambda f, x: f.avg_pool2d(x, 2, count_include_pad=False, padding=1,
                                       divisor_override=3),
             lambda f, x: f.avg_pool2d(x, 2, 1, count_include_pad=False, padding=1),
             lambda f, x: f.avg_pool1d(x[0], 3),
             lambda f, x: f.avg_pool3d(x.unsqueeze(0), 2)]
    for call in calls:
        try:
            expected = call(TF, t)
        except NotImplementedError as error:
            with pytest.raises(NotImplementedError, match=str(error).split(" ")[0]):
                call(F, e)
            continue
        assert_same(call(F, e), expected)


@pytest.mark.parametrize("call", [
    lambda f, x: f.avg_pool2d(x, 2, padding=2),
    lambda f, x: f.avg_pool2d(x, 0, 1),
    lambda f, x: f.avg_pool2d(x, 2, 0),
    lambda f, x: f.avg_pool2d(x, 2, 1, -1),
    lambda f, x: f.avg_pool2d(x, 2, divisor_override=0),
    lambda f, x: f.avg_pool2d(x, (2, 2, 2)),
    lambda f, x: f.avg_pool2d(x[0, :, :1, :1], 2),
    lambda f, x: f.avg_pool2d(x[0, 0, 0], 2),
    lambda f, x: f.avg_pool2d(x > 0, 2),
    lambda f, x: f.avg_pool2d(x.to(torch.uint8 if isinstance(x, torch.Tensor)
                                   else ember.uint8), 2),
    lambda f, x: f.avg_pool1d(x, 2),
    lambda f, x: f.avg_pool1d(x[0, :, 0], (2, 2)),
    lambda f, x: f.avg_pool1d(x[0, :, 0], 0),
    lambda f, x: f.avg_pool1d(x[0, :, :1, 0], 2),
    lambda f, x: f.avg_pool1d(x[0, :, 0], 2, padding=2),
    lambda f, x: f.avg_pool3d(x[0, 0], 2),
    lambda f, x: f.avg_pool3d(x.unsqueeze(2)[:, :0], 2),
    lambda f, x: f.avg_pool2d(x[:, :0], 2),
    lambda f, x: f.avg_pool2d(x[0, :0], 2),
    lambda f, x: f.avg_pool3d(x.unsqueeze(2), (2, 2)),
    lambda f, x: f.avg_pool3d(x.unsqueeze(2), 0, 1),
])
def test_avg_pool_errors_match_torch(call):
    e, t = make_pair(_rand((2, 3, 5, 5)))
    with pytest.raises(Exception) as expected:
        call(TF, t)
    with pytest.raises(type(expected.value)) as actual:
        call(F, e)
    assert str(actual.value) == str(expected.value)


# ---------------------------------------------------------------- adaptive pooling


@pytest.mark.parametrize("nd,shape,size", [
    (1, (2, 3, 9), 4), (1, (3, 5), 7), (1, (2, 3, 6), 3), (1, (2, 3, 6), (1,)),
    (2, (2, 3, 7, 8), 3), (2, (3, 7, 8), (2, 5)), (2, (2, 3, 7, 8), (None, 3)),
    (2, (2, 3, 5, 4), 7), (2, (2, 3, 6, 4), (3, 2)), (2, (1, 2, 5, 5), 1),
    (3, (2, 2, 5, 6, 4), (2, 3, 3)), (3, (2, 5, 6, 5), 1), (3, (1, 2, 3, 4, 5), (5, None, 2)),
])
def test_adaptive_pool_values_grads(nd, shape, size):
    a = _distinct(shape)
    fe, ft = getattr(F, f"adaptive_avg_pool{nd}d"), getattr(TF, f"adaptive_avg_pool{nd}d")
    assert_grads_match(lambda x: fe(x, size), lambda x: ft(x, size), a)
    assert_cotangent_grads_match(lambda x: fe(x, size), lambda x: ft(x, size), a)
    fe, ft = getattr(F, f"adaptive_max_pool{nd}d"), getattr(TF, f"adaptive_max_pool{nd}d")
    e, t = make_pair(a)
    assert_same(fe(e, size, return_indices=True), ft(t, size, return_indices=True))
    assert_grads_match(lambda x: fe(x, size), lambda x: ft(x, size), a)
    assert_cotangent_grads_match(lambda x: fe(x, size), lambda x: ft(x, size), a)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_adaptive_pool_dtypes_nan_empty_batch(dtype):
    a = _rand((2, 3, 7, 6))
    a[0, 0, 1, 1] = a[0, 0, 1, 2] = np.nan
    t = torch.tensor(a).to(getattr(torch, dtype))
    e = to_ember(t)
    assert_same(F.adaptive_avg_pool2d(e, (3, 4)), TF.adaptive_avg_pool2d(t, (3, 4)),
                atol=1e-2 if dtype != "float32" else None, rtol=1e-2 if dtype != "float32"
                else None)
    assert_same(F.adaptive_max_pool2d(e, (3, 4), True), TF.adaptive_max_pool2d(t, (3, 4), True))
    e, t = make_pair(np.zeros((0, 3, 4)))
    assert_same(F.adaptive_max_pool1d(e, 2, True), TF.adaptive_max_pool1d(t, 2, True))
    assert_same(F.adaptive_avg_pool1d(e, 2), TF.adaptive_avg_pool1d(t, 2))
    e, t = make_pair(np.zeros((3, 4)))
    assert_same(F.adaptive_avg_pool1d(e, 0), TF.adaptive_avg_pool1d(t, 0))


@pytest.mark.parametrize("call", [
    lambda f, x: f.adaptive_avg_pool2d(x, -1),
    lambda f, x: f.adaptive_avg_pool2d(x.long(), 2),
    lambda f, x: f.adaptive_avg_pool2d(x[0, 0, 0], 2),
    lambda f, x: f.adaptive_avg_pool2d(x[:, :, :0], 2),
    lambda f, x: f.adaptive_avg_pool1d(x[0, 0, 0], 2),
    lambda f, x: f.adaptive_avg_pool1d(x[0, :, 0], (2, 2)),
    lambda f, x: f.adaptive_avg_pool1d(x[0, :, :0, 0], 2),
    lambda f, x: f.adaptive_avg_pool3d(x[0, 0], 2),
    lambda f, x: f.adaptive_max_pool2d(x.long(), 2),
    lambda f, x: f.adaptive_max_pool2d(x[:, :0], 2),
    lambda f, x: f.adaptive_max_pool2d(x, (2, 2, 2)),
    lambda f, x: f.adaptive_max_pool1d(x[0, :, 0], (2, 2)),
    lambda f, x: f.adaptive_max_pool3d(x[0, 0], 2),
    lambda f, x: f.adaptive_max_pool1d(x[0, :, :0, 0], 2),
    lambda f, x: f.adaptive_max_pool1d(x[:, :0, :, 0], 2),
    lambda f, x: f.adaptive_avg_pool3d(x.unsqueeze(2)[:, :0], 2),
])
def test_adaptive_pool_errors_match_torch(call):
    e, t = make_pair(_rand((2, 3, 5, 5)))
    with pytest.raises(Exception) as expected:
        call(TF, t)
    with pytest.raises(type(expected.value)) as actual:
        call(F, e)
    assert str(actual.value) == str(expected.value)


# ---------------------------------------------------------------- lp pooling, unpooling


@pytest.mark.parametrize("nd,shape,args", [
    (1, (2, 3, 9), (2, 3)), (1, (3, 8), (3.0, 2, 1, True)), (2, (2, 3, 7, 8), (2, 2)),
    (2, (3, 7, 8), (1.5, (2, 3), (1, 2), True)), (3, (2, 2, 5, 6, 4), (2, 2)),
])
def test_lp_pool(nd, shape, args):
    a = np.abs(_rand(shape)) + 0.1
    fe, ft = getattr(F, f"lp_pool{nd}d"), getattr(TF, f"lp_pool{nd}d")
    assert_grads_match(lambda x: fe(x, *args), lambda x: ft(x, *args), a, double_backward=True)


@pytest.mark.parametrize("nd,shape,kw,output_size", [
    (1, (2, 3, 8), dict(kernel_size=2), None),
    (1, (3, 9), dict(kernel_size=3, stride=2, padding=1), [9]),
    (2, (2, 3, 7, 8), dict(kernel_size=2), (7, 8)),
    (2, (3, 7, 8), dict(kernel_size=3, stride=2, padding=1), (7, 8)),
    (2, (2, 3, 7, 8), dict(kernel_size=2, stride=2), (2, 3, 7, 8)),
    (3, (2, 2, 5, 6, 4), dict(kernel_size=2), None),
])
def test_max_unpool_roundtrip_and_grads(nd, shape, kw, output_size):
    a = _distinct(shape)
    e, t = make_pair(a)
    ve, ie = getattr(F, f"max_pool{nd}d")(e, return_indices=True, **kw)
    vt, it = getattr(TF, f"max_pool{nd}d")(t, return_indices=True, **kw)
    fe, ft = getattr(F, f"max_unpool{nd}d"), getattr(TF, f"max_unpool{nd}d")
    assert_same(fe(ve, ie, output_size=output_size, **kw),
                ft(vt, it, output_size=output_size, **kw))
    assert_grads_match(lambda v: fe(v, ie, output_size=output_size, **kw),
                       lambda v: ft(v, it, output_size=output_size, **kw), vt.detach().numpy())
    assert_cotangent_grads_match(lambda v: fe(v, ie, output_size=output_size, **kw),
                                 lambda v: ft(v, it, output_size=output_size, **kw),
                                 vt.detach().numpy())
    me, mt = getattr(nn, f"MaxUnpool{nd}d")(**kw), getattr(torch.nn, f"MaxUnpool{nd}d")(**kw)
    assert repr(me) == repr(mt)
    assert_same(me(ve, ie, output_size), mt(vt, it, output_size))


@pytest.mark.parametrize("call", [
    lambda f, lib, x, i: f.max_unpool2d(
        x[:, :1], i[:, :1] + (i[:, :1] == i[:, :1].max()).long() * 60, 2),
    lambda f, lib, x, i: f.max_unpool2d(x, i, 2, output_size=(9, 9)),
    lambda f, lib, x, i: f.max_unpool2d(x, i, 2, output_size=(4, 4, 4)),
    lambda f, lib, x, i: f.max_unpool2d(x, i, 2, output_size=[1, 2, 9, 9]),
    lambda f, lib, x, i: f.max_unpool2d(x, i.int(), 2),
    lambda f, lib, x, i: f.max_unpool2d(x, i[0], 2),
])
def test_max_unpool_errors_match_torch(call):
    a = _distinct((1, 2, 4, 4))
    e, t = make_pair(a)
    ve, ie = F.max_pool2d(e, 2, return_indices=True)
    vt, it = TF.max_pool2d(t, 2, return_indices=True)
    with pytest.raises(Exception) as expected:
        call(TF, torch, vt, it)
    with pytest.raises(type(expected.value)) as actual:
        call(F, ember, ve, ie)
    assert str(actual.value) == str(expected.value)


# ---------------------------------------------------------------- meta device and modules


def test_meta_shapes_and_dtypes():
    x = ember.empty(2, 3, 9, 10, device="meta")
    t = torch.empty(2, 3, 9, 10, device="meta")
    calls = [lambda f, x: f.max_pool2d(x, 3, 2, 1, ceil_mode=True, return_indices=True),
             lambda f, x: f.avg_pool2d(x, 3, 2, 1),
             lambda f, x: f.adaptive_avg_pool2d(x, (3, 4)),
             lambda f, x: f.adaptive_max_pool2d(x, (3, 4), True),
             lambda f, x: f.max_pool1d(x[0], 2),
             lambda f, x: f.avg_pool3d(x, 2),
             lambda f, x: f.lp_pool2d(x, 2, 3)]
    for call in calls:
        re, rt = call(F, x), call(TF, t)
        re = re if isinstance(re, tuple) else (re,)
        rt = rt if isinstance(rt, tuple) else (rt,)
        for a, b in zip(re, rt):
            assert a.device.type == "meta"
            assert tuple(a.shape) == tuple(b.shape)
            assert a.dtype.name == str(b.dtype).removeprefix("torch.")


MODULES = [
    ("MaxPool1d", (2,), {}, (2, 3, 9)),
    ("MaxPool2d", (3, 2, 1), dict(ceil_mode=True), (2, 3, 9, 8)),
    ("MaxPool2d", ((2, 3),), dict(return_indices=True, dilation=(1, 2)), (2, 3, 9, 8)),
    ("MaxPool3d", (2,), {}, (1, 2, 4, 5, 6)),
    ("AvgPool1d", (3, 2, 1), dict(count_include_pad=False), (2, 3, 9)),
    ("AvgPool2d", (3, 2, 1), dict(divisor_override=4), (2, 3, 9, 8)),
    ("AvgPool3d", (2,), dict(ceil_mode=True), (1, 2, 5, 5, 6)),
    ("AdaptiveAvgPool1d", (4,), {}, (2, 3, 9)),
    ("AdaptiveAvgPool2d", ((None, 3),), {}, (2, 3, 9, 8)),
    ("AdaptiveAvgPool3d", (2,), {}, (1, 2, 4, 5, 6)),
    ("AdaptiveMaxPool1d", (4,), dict(return_indices=True), (2, 3, 9)),
    ("AdaptiveMaxPool2d", (3,), {}, (2, 3, 9, 8)),
    ("AdaptiveMaxPool3d", ((2, 3, 1),), {}, (1, 2, 4, 5, 6)),
    ("LPPool1d", (2, 3), {}, (2, 3, 9)),
    ("LPPool2d", (2.5, (2, 3), 1), {}, (2, 3, 9, 8)),
    ("LPPool3d", (2, 2), {}, (1, 2, 4, 5, 6)),
]


@pytest.mark.parametrize("name,args,kw,shape", MODULES)
def test_modules_match_torch(name, args, kw, shape):
    me, mt = getattr(nn, name)(*args, **kw), getattr(torch.nn, name)(*args, **kw)
    assert repr(me) == repr(mt)
    assert list(me.state_dict()) == list(mt.state_dict()) == []
    a = np.abs(_distinct(shape)) + 0.05
    for train in (True, False):
        me.train(train)
        mt.train(train)
        assert_grads_match(me, mt, a)
        assert_grads_match(me, mt, a.astype(np.float32))


# ---------------------------------------------------------------- max pooling: exact tie/NaN rules
# The separable kernel (running max over the last dim, then the earlier ones) must pick torch's
# element everywhere: the first maximum in scan order, the last NaN, the first valid position of
# an all -inf window; the values keep the winner's sign of zero.

STRESS_CASES = [
    (1, (2, 3, 11), dict(kernel_size=3, stride=2, padding=1)),
    (1, (2, 12), dict(kernel_size=2, dilation=3, ceil_mode=True)),
    (2, (2, 3, 8, 8), dict(kernel_size=2)),
    (2, (2, 3, 9, 7), dict(kernel_size=3, stride=2, padding=1)),
    (2, (1, 2, 9, 9), dict(kernel_size=(3, 2), stride=(1, 3), padding=(1, 1), ceil_mode=True)),
    (2, (1, 2, 10, 9), dict(kernel_size=2, stride=2, padding=1, dilation=2)),
    (2, (2, 2, 7, 7), dict(kernel_size=3, stride=3, ceil_mode=True)),
    (3, (1, 2, 5, 6, 7), dict(kernel_size=2, stride=2, padding=1)),
    (3, (2, 4, 5, 6), dict(kernel_size=(2, 3, 2), stride=(1, 2, 2), padding=(0, 1, 1),
                           dilation=(2, 1, 1))),
]
_SPECIAL = np.array([-np.inf, -1.0, -0.0, 0.0, 1.0, np.inf, np.nan])


@pytest.mark.parametrize("nd,shape,kw", STRESS_CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("nan", [False, True])
def test_max_pool_ties_nan_inf_signed_zero_everywhere(nd, shape, kw, dtype, nan):
    rng = np.random.default_rng(sum(shape))
    a = _SPECIAL[rng.integers(0, 7 if nan else 6, shape)].astype(dtype)
    e, t = make_pair(a, requires_grad=True)
    values_e, index_e = _max_fn(F, nd)(e, return_indices=True, **kw)
    values_t, index_t = _max_fn(TF, nd)(t, return_indices=True, **kw)
    assert_same((values_e, index_e), (values_t, index_t))
    np.testing.assert_array_equal(np.signbit(values_e.detach().numpy()),
                                  np.signbit(values_t.detach().numpy()))
    g = rng.standard_normal(tuple(values_t.shape)).astype(dtype)
    values_e.backward(ember.tensor(g))
    values_t.backward(torch.from_numpy(g))
    assert_same(e.grad, t.grad)


@pytest.mark.parametrize("nd,shape,kw", STRESS_CASES[::2])
def test_max_pool_integer_ties(nd, shape, kw):
    a = np.random.default_rng(3).integers(-2, 2, shape)
    e, t = make_pair(a)
    assert_same(_max_fn(F, nd)(e, return_indices=True, **kw),
                _max_fn(TF, nd)(t, return_indices=True, **kw))
    lowest = np.full(shape, np.iinfo(np.int64).min)  # padding holds the lowest value too
    lowest.flat[::3] = 0
    e, t = make_pair(lowest)
    assert_same(_max_fn(F, nd)(e, return_indices=True, **kw),
                _max_fn(TF, nd)(t, return_indices=True, **kw))


@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                                dict(kernel_size=2, stride=3, padding=1, ceil_mode=True)])
def test_max_pool_double_backward_disjoint_and_overlapping(kw):
    # the backward's own derivative (the disjoint case puts, the overlapping one sums)
    a = _distinct((2, 3, 7, 8))
    assert_grads_match(lambda x: F.max_pool2d(x, **kw), lambda x: TF.max_pool2d(x, **kw), a)
    assert_cotangent_grads_match(lambda x: F.max_pool2d(x, **kw),
                                 lambda x: TF.max_pool2d(x, **kw), a)


class _NotNumpy:
    """NumPy under another name: the kernels take their CuPy (``xp is not np``) paths."""

    def __getattr__(self, name):
        return getattr(np, name)


def test_pooling_kernels_gpu_paths_match_cpu():
    from ember.nn._functional import adaptive_pooling as A
    from ember.nn._functional import pooling as P

    rng = np.random.default_rng(5)
    a = _SPECIAL[rng.integers(0, 7, (2, 3, 9, 8))].astype(np.float32)
    xp = _NotNumpy()
    for kw in (dict(kernel=(2, 2), stride=(2, 2), padding=(0, 0), dilation=(1, 1)),
               dict(kernel=(3, 2), stride=(2, 1), padding=(1, 1), dilation=(1, 2))):
        out = tuple(P._pool_out(n, k, s, p, d, True) for n, k, s, p, d in
                    zip(a.shape[-2:], kw["kernel"], kw["stride"], kw["padding"],
                        kw["dilation"]))
        for expected, actual in zip(P._max_pool_kernel(np, a, nd=2, out=out, **kw),
                                    P._max_pool_kernel(xp, a, nd=2, out=out, **kw)):
            np.testing.assert_array_equal(actual, expected)
        g = rng.standard_normal(out).astype(np.float32)
        index = P._max_pool_kernel(np, a, nd=2, out=out, **kw)[1]
        if kw["stride"] == kw["kernel"]:
            np.testing.assert_array_equal(
                P._scatter_kernel(xp, np.broadcast_to(g, index.shape), index, nd=2,
                                  shape=a.shape, unique=True),
                P._scatter_kernel(np, np.broadcast_to(g, index.shape), index, nd=2,
                                  shape=a.shape))
    for expected, actual in zip(A._adaptive_max_kernel(np, a, nd=2, out=(4, 3)),
                                A._adaptive_max_kernel(xp, a, nd=2, out=(4, 3))):
        np.testing.assert_array_equal(actual, expected)
    kw = dict(nd=2, kernel=(3, 3), stride=(2, 2), padding=(1, 1), out=(5, 4),
              count_include_pad=False, divisor_override=None)
    b = rng.standard_normal(a.shape)
    np.testing.assert_array_equal(P._avg_pool_kernel(xp, b, **kw),
                                  P._avg_pool_kernel(np, b, **kw))
    g = rng.standard_normal((2, 3, 5, 4))
    np.testing.assert_array_equal(P._avg_pool_backward_kernel(xp, g, shape=a.shape, **kw),
                                  P._avg_pool_backward_kernel(np, g, shape=a.shape, **kw))
