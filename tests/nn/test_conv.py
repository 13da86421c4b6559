"""Convolutions, transposed convolutions and fold/unfold against torch (same inputs, same
weights): values, gradients of input/weight/bias (float64, double backward), dtypes, unbatched
and non-contiguous inputs, the meta device, modules (repr, state_dict, init) and errors."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as F
from conftest import assert_grads_match, assert_same, to_ember, to_torch
from ember import nn

_FN = {(1, False): "conv1d", (2, False): "conv2d", (3, False): "conv3d",
       (1, True): "conv_transpose1d", (2, True): "conv_transpose2d",
       (3, True): "conv_transpose3d"}
_SPATIAL = {1: (9,), 2: (7, 6), 3: (5, 4, 5)}
_KERNEL = {1: (3,), 2: (3, 2), 3: (2, 3, 2)}


def _arrays(k, transposed, cin, cout, groups, bias, seed, kernel=None, spatial=None, n=2):
    rng = np.random.default_rng(seed)
    kernel = kernel or _KERNEL[k]
    x = rng.standard_normal((n, cin) + (spatial or _SPATIAL[k]))
    wshape = (cin, cout // groups) if transposed else (cout, cin // groups)
    w = rng.standard_normal(wshape + kernel)
    b = rng.standard_normal(cout) if bias else None
    return x, w, b


# (k, transposed, cin, cout, stride, padding, dilation, groups, output_padding, bias)
_CASES = [
    (1, False, 2, 3, 1, 0, 1, 1, 0, True),
    (1, False, 4, 6, 2, 1, 2, 2, 0, False),
    (1, False, 3, 3, 1, "same", 2, 3, 0, True),
    (1, False, 2, 4, 3, "valid", 1, 1, 0, True),
    (2, False, 2, 3, 1, 0, 1, 1, 0, True),
    (2, False, 4, 6, (2, 1), (1, 2), (1, 2), 2, 0, True),
    (2, False, 4, 4, 1, "same", (2, 1), 4, 0, False),
    (2, False, 3, 6, 1, "same", 1, 3, 0, True),
    (2, False, 2, 2, 3, 2, 1, 1, 0, False),
    (3, False, 2, 3, 1, 0, 1, 1, 0, True),
    (3, False, 4, 4, (1, 2, 1), 1, (1, 1, 2), 2, 0, True),
    (3, False, 2, 2, 1, "same", 1, 1, 0, False),
    (1, True, 2, 3, 1, 0, 1, 1, 0, True),
    (1, True, 4, 6, 2, 1, 2, 2, 1, False),
    (1, True, 3, 3, 3, 2, 1, 3, 2, True),
    (2, True, 2, 3, 1, 0, 1, 1, 0, True),
    (2, True, 4, 6, (2, 3), (1, 0), (1, 2), 2, (1, 2), True),
    (2, True, 2, 2, 1, 1, 2, 1, 1, False),
    (3, True, 2, 3, 2, 1, 1, 1, (1, 0, 1), True),
    (3, True, 4, 2, 1, 0, (1, 2, 1), 2, 0, False),
    # >= 8 channels per group: stride-1 input gradients run as a flipped convolution
    (2, False, 8, 8, 1, 1, 1, 1, 0, True),
    (2, False, 16, 8, 1, "same", (2, 1), 2, 0, False),
    (1, False, 8, 4, 1, 3, 1, 1, 0, True),
    (2, True, 8, 16, 1, 1, 2, 1, 1, False),
    (3, True, 16, 16, 1, (0, 1, 0), (1, 2, 1), 2, 0, False),
]


def _call(lib_f, transposed, stride, padding, dilation, groups, output_padding):
    if transposed:
        return lambda x, w, b=None: lib_f(x, w, b, stride, padding, output_padding, groups,
                                          dilation)
    return lambda x, w, b=None: lib_f(x, w, b, stride, padding, dilation, groups)


@pytest.mark.filterwarnings("ignore:Using padding='same'")
@pytest.mark.parametrize("case", _CASES, ids=[str(i) for i in range(len(_CASES))])
def test_functional_values_and_grads_float64(case):
    k, transposed, cin, cout, stride, padding, dilation, groups, output_padding, bias = case
    x, w, b = _arrays(k, transposed, cin, cout, groups, bias, seed=len(str(case)))
    name = _FN[(k, transposed)]
    fe = _call(getattr(F, name), transposed, stride, padding, dilation, groups, output_padding)
    ft = _call(getattr(TF, name), transposed, stride, padding, dilation, groups, output_padding)
    arrays = (x, w) if b is None else (x, w, b)
    assert_grads_match(fe, ft, *arrays)


@pytest.mark.parametrize("case", [_CASES[5], _CASES[7], _CASES[16], _CASES[17], _CASES[21],
                                  _CASES[23]],
                         ids=["conv2d", "conv2d_same", "convT2d", "convT2d_dilated",
                              "conv2d_wide_same", "convT2d_wide"])
def test_double_backward_2d(case):
    k, transposed, cin, cout, stride, padding, dilation, groups, output_padding, bias = case
    x, w, b = _arrays(k, transposed, cin, cout, groups, True, seed=3)
    name = _FN[(k, transposed)]
    fe = _call(getattr(F, name), transposed, stride, padding, dilation, groups, output_padding)
    ft = _call(getattr(TF, name), transposed, stride, padding, dilation, groups, output_padding)
    assert_grads_match(fe, ft, x, w, b, double_backward=True)


def test_double_backward_1d_3d():
    x, w, b = _arrays(1, False, 2, 4, 2, True, seed=5)
    assert_grads_match(lambda x, w, b: F.conv1d(x, w, b, 2, 1, 1, 2),
                       lambda x, w, b: TF.conv1d(x, w, b, 2, 1, 1, 2), x, w, b,
                       double_backward=True)
    x, w, b = _arrays(3, True, 2, 2, 1, True, seed=6, spatial=(3, 3, 2))
    assert_grads_match(lambda x, w, b: F.conv_transpose3d(x, w, b, 2, 1, 1),
                       lambda x, w, b: TF.conv_transpose3d(x, w, b, 2, 1, 1), x, w, b,
                       double_backward=True)


# (k, cin, cout, kernel, stride, padding, dilation, groups): the layouts of the one-GEMM
# kernels: 1x1 (the input is its own column matrix), strided (col2im input gradient),
# grouped, dilated and asymmetric flat grids, >= 8 channels (flipped-convolution input grad)
_LAYOUTS = [
    (2, 8, 16, (1, 1), 1, 0, 1, 2),
    (2, 16, 8, (1, 1), 2, 0, 1, 1),
    (2, 16, 16, (3, 3), 2, 1, 1, 2),
    (2, 8, 8, (3, 3), 1, 1, 1, 1),
    (2, 16, 8, (3, 2), 1, (2, 0), (2, 3), 2),
    (1, 8, 8, (5,), 1, 2, 1, 1),
    (3, 8, 8, (3, 2, 3), 1, (1, 0, 2), (1, 2, 1), 1),
    (3, 8, 4, (2, 2, 2), 2, 1, 1, 2),
]


@pytest.mark.parametrize("layout", _LAYOUTS, ids=[str(i) for i in range(len(_LAYOUTS))])
def test_gemm_layouts_values_grads_and_double_backward(layout):
    k, cin, cout, kernel, stride, padding, dilation, groups = layout
    spatial = {1: (11,), 2: (9, 8), 3: (6, 5, 7)}[k]
    x, w, b = _arrays(k, False, cin, cout, groups, True, seed=11, kernel=kernel,
                      spatial=spatial, n=3)
    name = _FN[(k, False)]
    fe = _call(getattr(F, name), False, stride, padding, dilation, groups, 0)
    ft = _call(getattr(TF, name), False, stride, padding, dilation, groups, 0)
    assert_grads_match(fe, ft, x, w, b, double_backward=True)
    # float32 at a training-like size: the same kernels, float32 tolerances
    x32, w32, _ = _arrays(k, False, cin, cout, groups, False, seed=12, kernel=kernel, n=8,
                          spatial=tuple(2 * s for s in spatial))
    x32, w32 = x32.astype(np.float32), w32.astype(np.float32)
    assert_grads_match(fe, ft, x32, w32, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("xshape, wshape, geom", [
    ((5, 16, 9, 7), (12, 8, 3, 2), dict(padding=(2, 1), dilation=(2, 1), groups=2)),
    ((3, 8, 6, 5, 7), (4, 8, 3, 2, 3), dict(padding=(1, 0, 2), dilation=(1, 2, 1))),
    ((3, 8, 11), (8, 8, 5), dict(padding=2)),
], ids=["2d_grouped_dilated", "3d_asymmetric", "1d"])
def test_first_order_backward_from_shared_columns(xshape, wshape, geom):
    # stride 1 and >= 8 channels per group: both gradients come from one im2col of the
    # output gradient (convolution_backward); first order only, as a training step runs it
    rng = np.random.default_rng(13)
    x, w = rng.standard_normal(xshape), rng.standard_normal(wshape)
    name = {3: "conv1d", 4: "conv2d", 5: "conv3d"}[len(xshape)]
    assert_grads_match(lambda x, w: getattr(F, name)(x, w, **geom),
                       lambda x, w: getattr(TF, name)(x, w, **geom), x, w)
    assert_grads_match(lambda x, w: getattr(F, name)(x, w, **geom),
                       lambda x, w: getattr(TF, name)(x, w, **geom),
                       x.astype(np.float32), w.astype(np.float32), rtol=1e-4, atol=1e-4)


def test_grad_of_grad_matches_autograd_gradgradcheck():
    rng = np.random.default_rng(7)
    x = ember.tensor(rng.standard_normal((1, 2, 5, 4)), requires_grad=True)
    w = ember.tensor(rng.standard_normal((3, 2, 2, 2)), requires_grad=True)
    assert ember.autograd.gradgradcheck(lambda x, w: F.conv2d(x, w, stride=2, padding=1),
                                        (x, w))
    wt = ember.tensor(rng.standard_normal((2, 3, 2, 2)), requires_grad=True)
    assert ember.autograd.gradgradcheck(
        lambda x, w: F.conv_transpose2d(x, w, stride=2, output_padding=1), (x, wt))


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
@pytest.mark.parametrize("transposed", [False, True])
def test_dtypes(dtype, transposed):
    x, w, b = _arrays(2, transposed, 4, 6, 2, True, seed=8, spatial=(8, 7))
    ed, td = getattr(ember, dtype), getattr(torch, dtype)
    xe, we, be = (ember.tensor(a).to(ed) for a in (x, w, b))
    xt, wt, bt = (to_torch(t) for t in (xe, we, be))
    tol = {"float32": 1e-5, "float64": 1e-12, "float16": 2e-2, "bfloat16": 5e-2}[dtype]
    if transposed:
        out_e = F.conv_transpose2d(xe, we, be, stride=2, padding=1, output_padding=1, groups=2)
        out_t = TF.conv_transpose2d(xt, wt, bt, stride=2, padding=1, output_padding=1, groups=2)
    else:
        out_e = F.conv2d(xe, we, be, stride=(1, 2), padding=1, groups=2)
        out_t = TF.conv2d(xt, wt, bt, stride=(1, 2), padding=1, groups=2)
    assert out_e.dtype is ed
    assert_same(out_e, out_t.to(td), rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_half_transposed_with_big_output_padding_rounds_as_torch(dtype, k):
    """With an output_padding that reaches its stride torch runs its slow kernel, which rounds
    the columns to half and sums them in half tap by tap: ember's result is the same, bit for
    bit (as torch's OpInfo sample conv_transpose3d with dilation 4)."""
    rng = np.random.default_rng(11)
    x = rng.uniform(-9, 9, (2, 4) + (4,) * k)
    w = rng.uniform(-9, 9, (4, 2) + (4, 5, 6)[:k])
    b = rng.uniform(-9, 9, 4)
    stride, output_padding = ((2,), (3,)) if k == 1 else ((3, 2, 1)[:k], (2, 3, 1)[:k])
    geometry = dict(stride=stride, padding=(1, 2, 3)[:k], output_padding=output_padding,
                    groups=2, dilation=4)
    ed, td = getattr(ember, dtype), getattr(torch, dtype)
    name = f"conv_transpose{k}d"
    out_e = getattr(F, name)(*(ember.tensor(a).to(ed) for a in (x, w, b)), **geometry)
    out_t = getattr(TF, name)(*(torch.tensor(a).to(td) for a in (x, w, b)), **geometry)
    assert_same(out_e, out_t, rtol=0, atol=0)


def test_float32_grads():
    x, w, b = _arrays(2, False, 3, 4, 1, True, seed=9, spatial=(10, 9))
    assert_grads_match(lambda x, w, b: F.conv2d(x, w, b, padding=1),
                       lambda x, w, b: TF.conv2d(x, w, b, padding=1),
                       x.astype(np.float32), w.astype(np.float32), b.astype(np.float32),
                       rtol=1e-4, atol=1e-4)


def test_integer_and_complex_inputs():
    rng = np.random.default_rng(10)
    x = rng.integers(-5, 5, (2, 3, 6, 6))
    w = rng.integers(-3, 3, (4, 3, 3, 3))
    for dtype in (np.int64, np.int32):
        e = F.conv2d(ember.tensor(x.astype(dtype)), ember.tensor(w.astype(dtype)), padding=1)
        assert_same(e, TF.conv2d(torch.tensor(x.astype(dtype)), torch.tensor(w.astype(dtype)),
                                 padding=1))
    xc = rng.standard_normal((2, 3, 6, 5)) + 1j * rng.standard_normal((2, 3, 6, 5))
    wc = rng.standard_normal((4, 3, 2, 3)) + 1j * rng.standard_normal((4, 3, 2, 3))
    assert_grads_match(lambda x, w: F.conv2d(x, w, stride=2, padding=1),
                       lambda x, w: TF.conv2d(x, w, stride=2, padding=1), xc, wc)
    wt = rng.standard_normal((3, 2, 2, 2)) + 1j * rng.standard_normal((3, 2, 2, 2))
    assert_grads_match(lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1),
                       lambda x, w: TF.conv_transpose2d(x, w, stride=2, padding=1), xc, wt)
    with pytest.raises(NotImplementedError):
        F.conv2d(ember.ones(1, 1, 3, 3, dtype=ember.bool), ember.ones(1, 1, 2, 2,
                                                                     dtype=ember.bool))
    with pytest.raises(NotImplementedError):
        TF.conv2d(torch.ones(1, 1, 3, 3, dtype=torch.bool), torch.ones(1, 1, 2, 2,
                                                                      dtype=torch.bool))


@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("transposed", [False, True])
def test_unbatched_input(k, transposed):
    x, w, b = _arrays(k, transposed, 2, 4, 2, True, seed=11, n=1)
    x = x[0]
    name = _FN[(k, transposed)]
    fe = _call(getattr(F, name), transposed, 2, 1, 1, 2, 1 if transposed else 0)
    ft = _call(getattr(TF, name), transposed, 2, 1, 1, 2, 1 if transposed else 0)
    assert_grads_match(fe, ft, x, w, b)


def test_non_contiguous_inputs():
    rng = np.random.default_rng(12)
    x = rng.standard_normal((7, 3, 2, 9))
    w = rng.standard_normal((3, 4, 2, 3))

    def run(conv, lib_x, lib_w):
        xv = lib_x.permute(2, 1, 3, 0)          # (2, 3, 9, 7), strided
        wv = lib_w.transpose(0, 1)[:, :, :, ::2] if conv is not None else None  # (4, 3, 2, 2)
        return conv(xv, wv, stride=(2, 1), padding=(0, 1))
    assert_grads_match(lambda a, b: run(F.conv2d, a, b), lambda a, b: run(TF.conv2d, a, b), x,
                       w)
    xs = rng.standard_normal((2, 4, 10, 6))
    assert_grads_match(lambda a, b: F.conv_transpose2d(a[:, :, ::2], b[:, :2], stride=2),
                       lambda a, b: TF.conv_transpose2d(a[:, :, ::2], b[:, :2], stride=2),
                       xs, rng.standard_normal((4, 3, 2, 2)))


def test_zero_size_batch():
    for n in (0, 2):
        xe, xt = ember.zeros(n, 3, 6, 6), torch.zeros(n, 3, 6, 6)
        we = ember.ones(4, 3, 3, 3, requires_grad=True)
        wt = torch.ones(4, 3, 3, 3, requires_grad=True)
        assert_same(F.conv2d(xe, we, padding=1), TF.conv2d(xt, wt, padding=1))
    we = ember.randn(4, 3, 3, 3, requires_grad=True)
    y = F.conv2d(ember.zeros(0, 3, 6, 6), we)
    (g,) = ember.autograd.grad(y.sum(), we)
    assert_same(g, torch.zeros(4, 3, 3, 3))


def test_meta_device():
    x = ember.empty((2, 4, 9, 8), device="meta")
    w = ember.empty((6, 2, 3, 2), device="meta")
    out = F.conv2d(x, w, ember.empty(6, device="meta"), stride=2, padding=1, groups=2)
    t = TF.conv2d(torch.empty(2, 4, 9, 8, device="meta"), torch.empty(6, 2, 3, 2, device="meta"),
                  stride=2, padding=1, groups=2)
    assert out.device.type == "meta" and tuple(out.shape) == tuple(t.shape)
    assert out.dtype is ember.float32
    wt = ember.empty((4, 3, 3, 3), device="meta", dtype=ember.float64)
    out = F.conv_transpose2d(ember.empty((2, 4, 5, 5), device="meta", dtype=ember.float64), wt,
                             stride=2, output_padding=1)
    assert tuple(out.shape) == (2, 3, 12, 12) and out.dtype is ember.float64
    assert tuple(F.unfold(ember.empty((2, 3, 6, 6), device="meta"), 3).shape) == (2, 27, 16)
    assert tuple(F.fold(ember.empty((2, 27, 16), device="meta"), 6, 3).shape) == (2, 3, 6, 6)
    m = nn.Conv3d(2, 3, 2, device="meta")
    assert m.weight.device.type == "meta"
    assert tuple(m(ember.empty((1, 2, 4, 4, 4), device="meta")).shape) == (1, 3, 3, 3, 3)


# ---------------------------------------------------------------- errors


def _errors(lib, F_):
    x = lib.randn(2, 3, 8, 8)
    w = lib.randn(4, 3, 3, 3)
    return [
        lambda: F_.conv2d(x.double(), w),
        lambda: F_.conv2d(x, w.double()),
        lambda: F_.conv2d(x, w, lib.zeros(4).double()),
        lambda: F_.conv2d(x, lib.randn(4, 2, 3, 3)),
        lambda: F_.conv2d(x, lib.randn(4, 3, 3)),
        lambda: F_.conv2d(x[0, 0], w),
        lambda: F_.conv1d(x, w),
        lambda: F_.conv2d(x, w, groups=2),
        lambda: F_.conv2d(x, lib.randn(4, 1, 3, 3), groups=3),
        lambda: F_.conv2d(x, lib.randn(4, 3, 9, 9)),
        lambda: F_.conv2d(x, w, dilation=4),
        lambda: F_.conv2d(x, w, stride=0),
        lambda: F_.conv2d(x, w, padding=-1),
        lambda: F_.conv2d(x, w, dilation=0),
        lambda: F_.conv2d(x, w, groups=0),
        lambda: F_.conv2d(x, w, padding="same", stride=2),
        lambda: F_.conv2d(x, w, padding="foo"),
        lambda: F_.conv2d(x, w, lib.zeros(3)),
        lambda: F_.conv2d(x, w, lib.zeros(4, 1)),
        lambda: F_.conv2d(x, w, stride=(1, 1, 1)),
        lambda: F_.conv2d(x, w, stride=2.0),
        lambda: F_.conv2d(x, w, groups=1.5),
        lambda: F_.conv2d(x.numpy(), w),
        lambda: F_.conv_transpose2d(x, lib.randn(3, 2, 3, 3), output_padding=1),
        lambda: F_.conv_transpose2d(x, lib.randn(3, 2, 3, 3), output_padding=2, stride=2),
        lambda: F_.conv_transpose2d(x, lib.randn(4, 2, 3, 3)),
        lambda: F_.conv_transpose2d(x, lib.randn(3, 2, 3, 3), padding="same"),
        lambda: F_.conv_transpose2d(lib.randn(1, 3, 2, 2), lib.randn(3, 2, 3, 3), padding=2),
        lambda: F_.conv_transpose2d(lib.randn(2, 3, 2, 2), lib.randn(3, 2, 3, 3), groups=2),
        lambda: F_.conv_transpose2d(lib.randn(2, 4, 2, 2), lib.randn(4, 2, 3, 3), groups=2,
                                    bias=lib.zeros(3)),
        lambda: F_.conv_transpose1d(lib.randn(2, 3, 4), lib.randn(3, 2, 3), output_padding=1),
        lambda: F_.conv3d(lib.randn(1, 2, 3, 3, 3), lib.randn(2, 2, 2, 2, 2), padding=(1, 1)),
        lambda: F_.unfold(x[0, 0], 3),
        lambda: F_.unfold(lib.randn(2, 3, 4, 5, 6), 3),
        lambda: F_.unfold(x, 9),
        lambda: F_.unfold(x, (3, 3, 3)),
        lambda: F_.unfold(x, 3, stride=0),
        lambda: F_.unfold(x, 3, padding=-1),
        lambda: F_.unfold(x, 3, dilation=0),
        lambda: F_.unfold(x.long(), 3),
        lambda: F_.fold(lib.randn(2, 27, 35), (8, 8), 3),
        lambda: F_.fold(lib.randn(2, 26, 36), (8, 8), 3),
        lambda: F_.fold(lib.randn(2, 2, 27, 36), (8, 8), 3),
        lambda: F_.fold(lib.randn(2, 27, 36), (2, 2), 3),
        lambda: F_.fold(lib.randn(2, 27, 36).long(), 8, 3),
    ]


def _exception(fn):
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the oracle's type is what we compare
        return exc
    return None


_KEYWORDS = {3: "2 channels", 7: "6 channels", 8: "divisible by 3", 9: "Kernel size",
             10: "(9 x 9)", 17: "bias", 19: "stride", 24: "output padding",
             25: "transposed=1", 27: "too small", 34: "sliding blocks", 40: "sliding blocks",
             41: "divisible"}


def test_errors_match_torch():
    rng_e, rng_t = _errors(ember, F), _errors(torch, TF)
    for i, (fe, ft) in enumerate(zip(rng_e, rng_t)):
        te, tt = _exception(fe), _exception(ft)
        assert tt is not None, i
        assert type(te) is type(tt), (i, te, tt)
        if i in _KEYWORDS:
            assert _KEYWORDS[i] in str(te) and _KEYWORDS[i] in str(tt), (i, te, tt)


# ---------------------------------------------------------------- unfold / fold


@pytest.mark.parametrize("geom", [dict(kernel_size=2), dict(kernel_size=(2, 3), stride=(1, 2)),
                                  dict(kernel_size=3, padding=1, dilation=2, stride=2),
                                  dict(kernel_size=(1, 2), padding=(2, 0), dilation=(1, 3))])
def test_unfold_fold_vs_torch(geom):
    rng = np.random.default_rng(13)
    x = rng.standard_normal((2, 3, 9, 8))
    assert_grads_match(lambda a: F.unfold(a, **geom), lambda a: TF.unfold(a, **geom), x,
                       double_backward=True)
    assert_grads_match(lambda a: F.unfold(a, **geom), lambda a: TF.unfold(a, **geom), x[0])
    blocks = TF.unfold(torch.from_numpy(x), **geom)
    cols = rng.standard_normal(tuple(blocks.shape))
    assert_grads_match(lambda a: F.fold(a, (9, 8), **geom), lambda a: TF.fold(a, (9, 8), **geom),
                       cols, double_backward=True)
    assert_grads_match(lambda a: F.fold(a, [9, 8], **geom), lambda a: TF.fold(a, [9, 8], **geom),
                       cols[1])
    for dtype in ("float32", "float16", "bfloat16", "complex64", "bool"):
        xe = ember.tensor(x).to(getattr(ember, dtype))
        assert_same(F.unfold(xe, **geom), TF.unfold(to_torch(xe), **geom))
        ce = ember.tensor(cols).to(getattr(ember, dtype))
        tol = 1e-2 if dtype in ("float16", "bfloat16") else None
        assert_same(F.fold(ce, (9, 8), **geom), TF.fold(to_torch(ce), (9, 8), **geom), rtol=tol,
                    atol=tol)
    assert_same(F.unfold(ember.tensor(x > 0), **geom),
                TF.unfold(torch.from_numpy(x > 0), **geom))


def test_fold_unfold_modules():
    x = np.random.default_rng(14).standard_normal((2, 12, 12))
    for e, t in ((nn.Fold((4, 5), (2, 2)), torch.nn.Fold((4, 5), (2, 2))),
                 (nn.Fold(5, 2, dilation=2, padding=1, stride=1),
                  torch.nn.Fold(5, 2, dilation=2, padding=1, stride=1))):
        assert repr(e) == repr(t)
        if e.output_size == (4, 5):
            assert_same(e(ember.tensor(x)), t(torch.from_numpy(x)))
    u, ut = nn.Unfold((2, 3), padding=1), torch.nn.Unfold((2, 3), padding=1)
    assert repr(u) == repr(ut)
    y = np.random.default_rng(15).standard_normal((2, 5, 3, 4))
    assert_same(u(ember.tensor(y)), ut(torch.from_numpy(y)))
    assert list(u.state_dict()) == [] == list(ut.state_dict())


# ---------------------------------------------------------------- modules


def _module_pair(name, *args, dtype=None, **kwargs):
    e = getattr(nn, name)(*args, dtype=dtype and getattr(ember, dtype), **kwargs)
    t = getattr(torch.nn, name)(*args, dtype=dtype and getattr(torch, dtype), **kwargs)
    with torch.no_grad():
        for (_, ep), (_, tp) in zip(e.named_parameters(), t.named_parameters()):
            tp.copy_(to_torch(ep))
    return e, t


def _compare_module(e, t, x, rtol=None, atol=None, **call):
    xe = ember.tensor(x).requires_grad_()
    xt = torch.from_numpy(x.copy()).requires_grad_()
    ye, yt = e(xe, **call), t(xt, **call)
    assert_same(ye, yt, rtol=rtol, atol=atol)
    g = np.random.default_rng(0).standard_normal(tuple(yt.shape)).astype(x.dtype)
    ye.backward(ember.tensor(g))
    yt.backward(torch.from_numpy(g))
    assert_same(xe.grad, xt.grad, rtol=rtol, atol=atol)
    for (n1, pe), (n2, pt) in zip(e.named_parameters(), t.named_parameters()):
        assert n1 == n2
        assert_same(pe.grad, pt.grad, rtol=rtol, atol=atol)


@pytest.mark.parametrize("padding_mode", ["zeros", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_conv_modules_padding_modes(padding_mode, k):
    name = f"Conv{k}d"
    spatial = {1: (10,), 2: (7, 8), 3: (5, 6, 4)}[k]
    x = np.random.default_rng(16 + k).standard_normal((2, 4) + spatial)
    for kwargs in (dict(padding=1, stride=2), dict(padding="same", dilation=2, groups=2),
                   dict(padding=(2,) * k, bias=False, kernel_size=2),
                   dict(padding="valid", groups=4)):
        kwargs = {"kernel_size": 3, **kwargs}
        e, t = _module_pair(name, 4, 4, padding_mode=padding_mode, dtype="float64", **kwargs)
        assert repr(e) == repr(t)
        _compare_module(e, t, x)
        e.eval()
        t.eval()
        assert_same(e(ember.tensor(x)), t(torch.from_numpy(x)))
    e, t = _module_pair(name, 4, 6, 3, padding=1, padding_mode=padding_mode)
    _compare_module(e, t, x[0].astype(np.float32), rtol=1e-4, atol=1e-4)  # unbatched, float32


@pytest.mark.parametrize("k", [1, 2, 3])
def test_conv_transpose_modules(k):
    name = f"ConvTranspose{k}d"
    spatial = {1: (6,), 2: (4, 5), 3: (3, 4, 3)}[k]
    x = np.random.default_rng(20 + k).standard_normal((2, 4) + spatial)
    for kwargs in (dict(stride=2, padding=1, output_padding=1),
                   dict(groups=2, dilation=2, bias=False),
                   dict(stride=(3,) * k, padding=1, groups=4, output_padding=(2,) * k)):
        e, t = _module_pair(f"ConvTranspose{k}d", 4, 4, 3, dtype="float64", **kwargs)
        assert repr(e) == repr(t)
        _compare_module(e, t, x)
    e, t = _module_pair(name, 4, 2, 3, stride=2, dtype="float64")
    size = [2 * s + 1 + 1 for s in spatial]
    _compare_module(e, t, x, output_size=size)
    _compare_module(e, t, x, output_size=[2, 2] + size)
    for lib, mod in ((ember, e), (torch, t)):
        with pytest.raises(ValueError, match="valid sizes range"):
            mod(lib.zeros((2, 4) + spatial, dtype=lib.float64), output_size=[s + 5 for s in size])
        with pytest.raises(ValueError, match="output_size must have"):
            mod(lib.zeros((2, 4) + spatial, dtype=lib.float64), output_size=[1] * (k + 1))
    e, t = _module_pair(name, 4, 2, 2)
    _compare_module(e, t, x[0].astype(np.float32), rtol=1e-4, atol=1e-4)


def test_module_state_dict_and_attributes():
    cases = [("Conv1d", (3, 6, 4), dict(groups=3)), ("Conv2d", (4, 8, (3, 2)), dict(bias=False)),
             ("Conv3d", (2, 4, 3), dict(padding="same", padding_mode="reflect")),
             ("ConvTranspose1d", (3, 6, 4), dict(groups=3)),
             ("ConvTranspose2d", (4, 8, (3, 2)), dict(stride=2, output_padding=1)),
             ("ConvTranspose3d", (2, 4, 3), dict(bias=False, dilation=(1, 2, 1)))]
    for name, args, kwargs in cases:
        e, t = getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)
        assert repr(e) == repr(t)
        assert list(e.state_dict()) == list(t.state_dict())
        for (_, a), (_, b) in zip(e.state_dict().items(), t.state_dict().items()):
            assert tuple(a.shape) == tuple(b.shape)
            assert a.dtype.name == str(b.dtype).removeprefix("torch.")
        for attr in ("in_channels", "out_channels", "kernel_size", "stride", "padding",
                     "dilation", "transposed", "output_padding", "groups", "padding_mode"):
            assert getattr(e, attr) == getattr(t, attr), (name, attr)
        assert list(e._reversed_padding_repeated_twice) == \
            list(t._reversed_padding_repeated_twice)
    e = nn.Conv2d(2, 3, 3, dtype=ember.float64)
    assert e.weight.dtype is ember.float64 and e.bias.dtype is ember.float64
    e.load_state_dict({k: to_ember(v) for k, v in
                       torch.nn.Conv2d(2, 3, 3, dtype=torch.float64).state_dict().items()})


@pytest.mark.parametrize("name, args", [("Conv2d", (16, 32, 3)), ("ConvTranspose2d", (32, 8, 3)),
                                        ("Conv1d", (8, 64, 5, 1, 0, 1, 2))])
def test_init_distributions(name, args):
    m = getattr(nn, name)(*args)
    w = m.weight.detach().numpy()
    fan_in = w.shape[1] * int(np.prod(w.shape[2:]))
    w_bound = 1 / math.sqrt(fan_in)  # kaiming_uniform with a=sqrt(5): sqrt(6 / 6) / sqrt(fan_in)
    b = m.bias.detach().numpy()
    assert np.abs(w).max() <= w_bound and np.abs(b).max() <= w_bound
    assert np.abs(w).max() > 0.9 * w_bound
    assert abs(w.mean()) < 0.05 * w_bound
    assert abs(w.std() - w_bound / math.sqrt(3)) < 0.05 * w_bound  # uniform(-a, a): std a/sqrt3
    t = getattr(torch.nn, name)(*args)
    assert tuple(t.weight.shape) == w.shape


def test_module_constructor_errors_match_torch():
    bad = [dict(args=(2, 2, 3), kwargs=dict(padding_mode="foo")),
           dict(args=(2, 2, 3), kwargs=dict(padding="foo")),
           dict(args=(2, 2, 3), kwargs=dict(padding="same", stride=2)),
           dict(args=(3, 2, 3), kwargs=dict(groups=2)),
           dict(args=(2, 3, 3), kwargs=dict(groups=2)),
           dict(args=(2, 2, 3), kwargs=dict(groups=0))]
    for case in bad:
        for mod in (nn, torch.nn):
            with pytest.raises(ValueError):
                mod.Conv2d(*case["args"], **case["kwargs"])
    for mod in (nn, torch.nn):
        with pytest.raises(ValueError, match="zeros"):
            mod.ConvTranspose2d(2, 2, 3, padding_mode="reflect")
        m = mod.ConvTranspose2d(2, 2, 3, padding="same")  # accepted here, refused in forward
        with pytest.raises(TypeError):
            m((ember if mod is nn else torch).zeros(1, 2, 4, 4))
        with pytest.raises(RuntimeError, match="channels"):
            mod.Conv2d(2, 4, 3)((ember if mod is nn else torch).zeros(1, 3, 5, 5))


def test_lenet_shaped_training_step_matches_torch():
    class Net:
        def __init__(self, mod):
            self.c1, self.c2 = mod.Conv2d(1, 6, 5), mod.Conv2d(6, 16, 5, stride=2)
            self.fc = mod.Linear(16 * 10 * 10, 10)
            self.params = [self.c1.weight, self.c1.bias, self.c2.weight, self.c2.bias,
                           self.fc.weight, self.fc.bias]

        def __call__(self, x):
            y = self.c2(self.c1(x).relu())
            return self.fc(y.reshape(y.shape[0], -1))
    e, t = Net(nn), Net(torch.nn)
    with torch.no_grad():
        for ep, tp in zip(e.params, t.params):
            tp.copy_(to_torch(ep))
    x = np.random.default_rng(30).standard_normal((8, 1, 28, 28)).astype(np.float32)
    xe, xt = ember.tensor(x), torch.from_numpy(x)
    assert_same(e(xe), t(xt), rtol=1e-4, atol=1e-4)
    e(xe).square().sum().backward()
    t(xt).square().sum().backward()
    for ep, tp in zip(e.params, t.params):
        assert_same(ep.grad, tp.grad, rtol=1e-3, atol=1e-3)
