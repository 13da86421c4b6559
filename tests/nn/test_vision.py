"""Vision ops and layers against torch: padding modules, pixel/channel shuffle, interpolate /
Upsample, grid_sample, affine_grid (values, float64 gradients, errors, reprs, meta)."""

import warnings

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


def assert_linear_double_backward(fe, ft, a, seed=1):
    """For ops linear in their input: d(grad_x . v)/d(cotangent) vs torch."""
    rng = np.random.default_rng(seed)
    e, t = make_pair(a, requires_grad=True)
    out_e, out_t = fe(e), ft(t)
    ge, gt = make_pair(rng.standard_normal(tuple(out_t.shape)), requires_grad=True)
    (gx_e,) = ember.autograd.grad(out_e, e, ge, create_graph=True)
    (gx_t,) = torch.autograd.grad(out_t, t, gt, create_graph=True)
    v = rng.standard_normal(a.shape)
    (gg_e,) = ember.autograd.grad((gx_e * ember.tensor(v)).sum(), ge)
    (gg_t,) = torch.autograd.grad((gx_t * torch.tensor(v)).sum(), gt)
    assert_same(gg_e, gg_t)


def _same_error(call_e, call_t):
    with pytest.raises(Exception) as expected:
        call_t()
    with pytest.raises(type(expected.value)) as actual:
        call_e()
    return str(actual.value), str(expected.value)


# ---------------------------------------------------------------- padding modules

PAD_MODULES = [
    ("ZeroPad1d", (2,), (2, 3, 5)), ("ZeroPad1d", ((1, -1),), (3, 5)),
    ("ZeroPad2d", ((1, 2, 0, 3),), (2, 3, 4, 5)), ("ZeroPad3d", (1,), (1, 2, 3, 4, 2)),
    ("ConstantPad1d", (2, 3.5), (2, 3, 5)), ("ConstantPad2d", ((1, 0, 2, 1), -1), (3, 4, 5)),
    ("ConstantPad3d", (1, 0.0), (2, 3, 4, 2)),
    ("ReflectionPad1d", (2,), (2, 3, 5)), ("ReflectionPad2d", ((1, 1, 2, 0),), (2, 3, 4, 5)),
    ("ReflectionPad3d", (1,), (1, 2, 3, 4, 2)),
    ("ReplicationPad1d", ((3, 1),), (3, 5)), ("ReplicationPad2d", (2,), (2, 3, 4, 5)),
    ("ReplicationPad3d", ((1, 0, 2, 1, 0, 3),), (2, 3, 4, 2)),
    ("CircularPad1d", (2,), (2, 3, 5)), ("CircularPad2d", ((1, 2, 0, 3),), (2, 3, 4, 5)),
    ("CircularPad3d", (1,), (1, 2, 3, 4, 2)),
]


@pytest.mark.parametrize("name,args,shape", PAD_MODULES)
def test_padding_modules(name, args, shape):
    me, mt = getattr(nn, name)(*args), getattr(torch.nn, name)(*args)
    assert repr(me) == repr(mt)
    assert me.padding == mt.padding
    assert list(me.state_dict()) == []
    a = _rand(shape)
    assert_grads_match(me, mt, a)
    assert_grads_match(me, mt, a.astype(np.float32))


def test_circular_pad_checks_input_dims():
    for nd in (1, 2, 3):
        e, t = make_pair(np.zeros((2,) * (nd + 3)))
        message_e, message_t = _same_error(lambda: getattr(nn, f"CircularPad{nd}d")(1)(e),
                                           lambda: getattr(torch.nn, f"CircularPad{nd}d")(1)(t))
        assert message_e == message_t


# ---------------------------------------------------------------- shuffles


@pytest.mark.parametrize("shape,r", [((2, 8, 3, 4), 2), ((9, 2, 3), 3), ((2, 1, 4, 1, 1), 1)])
def test_pixel_shuffle_roundtrip_and_grads(shape, r):
    a = _rand(shape)
    assert_grads_match(lambda x: F.pixel_shuffle(x, r), lambda x: TF.pixel_shuffle(x, r), a)
    b = _rand(shape[:-3] + (shape[-3] // (r * r), shape[-2] * r, shape[-1] * r))
    assert_grads_match(lambda x: F.pixel_unshuffle(x, r), lambda x: TF.pixel_unshuffle(x, r), b)
    me, mt = nn.PixelShuffle(r), torch.nn.PixelShuffle(r)
    assert repr(me) == repr(mt)
    assert repr(nn.PixelUnshuffle(r)) == repr(torch.nn.PixelUnshuffle(r))
    e, t = make_pair(a)
    assert_same(nn.PixelUnshuffle(r)(me(e)), torch.nn.PixelUnshuffle(r)(mt(t)))
    e, t = make_pair(np.zeros((0,) + shape))  # empty batch (torch's backward refuses it)
    assert_same(F.pixel_shuffle(e, r), TF.pixel_shuffle(t, r))


@pytest.mark.parametrize("shape,g", [((2, 6, 3, 4), 3), ((2, 4, 5), 2), ((1, 6, 2, 2, 2), 6)])
def test_channel_shuffle(shape, g):
    a = _rand(shape)
    assert_grads_match(lambda x: F.channel_shuffle(x, g), lambda x: TF.channel_shuffle(x, g), a)
    me, mt = nn.ChannelShuffle(g), torch.nn.ChannelShuffle(g)
    assert repr(me) == repr(mt)
    assert_same(me(ember.tensor(a)), mt(torch.tensor(a)))


@pytest.mark.parametrize("call", [
    lambda f, x: f.pixel_shuffle(x, 2), lambda f, x: f.pixel_shuffle(x[0, 0], 2),
    lambda f, x: f.pixel_shuffle(x, 0), lambda f, x: f.pixel_shuffle(x, -1),
    lambda f, x: f.pixel_unshuffle(x[..., :5, :4], 2),
    lambda f, x: f.pixel_unshuffle(x[..., :4, :5], 2),
    lambda f, x: f.pixel_unshuffle(x[0, 0], 2), lambda f, x: f.pixel_unshuffle(x, 0),
    lambda f, x: f.channel_shuffle(x, 2), lambda f, x: f.channel_shuffle(x[0, 0], 2),
    lambda f, x: f.channel_shuffle(x, 0), lambda f, x: f.channel_shuffle(x, -3),
])
def test_shuffle_errors_match_torch(call):
    e, t = make_pair(_rand((2, 3, 6, 6)))
    message_e, message_t = _same_error(lambda: call(F, e), lambda: call(TF, t))
    assert message_e == message_t


# ---------------------------------------------------------------- interpolate

INTERP = [
    ((2, 3, 7), dict(size=12, mode="nearest")),
    ((2, 3, 7), dict(scale_factor=2.5, mode="nearest-exact")),
    ((2, 3, 7), dict(scale_factor=1.45, mode="nearest")),
    ((2, 3, 7), dict(scale_factor=0.7, mode="linear")),
    ((2, 3, 7), dict(size=4, mode="linear", align_corners=True)),
    ((2, 3, 7), dict(size=1, mode="linear", align_corners=True)),
    ((2, 3, 7), dict(size=13, mode="area")),
    ((2, 3, 7), dict(scale_factor=1.7, mode="linear", recompute_scale_factor=True)),
    ((2, 3, 5, 6), dict(size=(9, 4), mode="bilinear")),
    ((2, 3, 5, 6), dict(scale_factor=(2, 1.5), mode="bicubic")),
    ((2, 3, 5, 6), dict(size=(3, 11), mode="bicubic", align_corners=True)),
    ((2, 3, 5, 6), dict(scale_factor=3, mode="nearest")),
    ((2, 3, 4, 6), dict(scale_factor=(2.2, 1.0), mode="nearest")),
    ((2, 3, 5, 6), dict(size=(7, 5), mode="nearest-exact")),
    ((2, 3, 5, 6), dict(size=(2, 3), mode="area")),
    ((2, 3, 5, 6), dict(scale_factor=0.5, mode="area")),
    ((2, 3, 5, 6), dict(scale_factor=2, mode="bilinear", align_corners=True)),
    ((1, 2, 3, 4, 5), dict(size=(5, 3, 7), mode="trilinear")),
    ((1, 2, 3, 4, 5), dict(scale_factor=2, mode="trilinear", align_corners=True)),
    # (torch's nearest-3d backward ignores scale_factor when in == out size while its forward
    # uses it, so a (1.3, ...) factor on a size-3 dim makes torch's gradient inconsistent)
    ((1, 2, 3, 4, 5), dict(scale_factor=(1.7, 0.5, 2), mode="nearest")),
    ((1, 2, 3, 4, 5), dict(size=(2, 5, 3), mode="nearest-exact")),
]


@pytest.mark.parametrize("shape,kw", INTERP)
def test_interpolate_values_and_grads(shape, kw):
    a = _rand(shape)
    fe = lambda x: F.interpolate(x, **kw)  # noqa: E731
    ft = lambda x: TF.interpolate(x, **kw)  # noqa: E731
    assert_grads_match(fe, ft, a)
    assert_linear_double_backward(fe, ft, a)
    e, t = make_pair(a.astype(np.float32))
    assert_same(fe(e), ft(t))
    # non-contiguous input (torch's oracle on a contiguous copy: its nearest-3d indices
    # depend on the memory format)
    e, t = make_pair(a.swapaxes(0, 1).copy())
    assert_same(fe(e.transpose(0, 1)), ft(t.transpose(0, 1).contiguous()))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "uint8", "int64"])
@pytest.mark.parametrize("mode", ["nearest", "bilinear", "nearest-exact", "bicubic"])
def test_interpolate_dtypes(dtype, mode):
    t = torch.tensor(_rand((2, 3, 4, 5)) * 20).to(getattr(torch, dtype))
    e = to_ember(t)
    try:
        expected = TF.interpolate(t, size=(7, 3), mode=mode)
    except (RuntimeError, NotImplementedError) as error:
        with pytest.raises(type(error)):
            F.interpolate(e, size=(7, 3), mode=mode)
        return
    atol = 0 if dtype == "uint8" else 5e-2  # uint8: torch's fixed-point kernel, exactly
    assert_same(F.interpolate(e, size=(7, 3), mode=mode), expected, atol=atol, rtol=2e-2)


RESIZES = [
    ((2, 3, 27, 26), dict(size=(13, 9))),
    ((1, 4, 9, 8), dict(size=(20, 15))),
    ((1, 1, 30, 30), dict(scale_factor=0.3)),
    ((1, 5, 11, 13), dict(scale_factor=(0.5, 2.3))),
    ((1, 2, 30, 7), dict(size=(12, 7), align_corners=True)),
    ((1, 1, 4, 4), dict(size=(5, 5), align_corners=True)),
]


@pytest.mark.parametrize("antialias", [False, True])
@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("shape, kw", RESIZES)
def test_interpolate_uint8_matches_torch_exactly(shape, kw, mode, antialias):
    """torch's integer kernel: fixed-point weights, taps folded at the edges (antialias:
    normalised over the window), rounding after each dim."""
    pixels = np.random.default_rng(sum(shape)).integers(0, 256, shape).astype(np.uint8)
    e, t = ember.tensor(pixels), torch.from_numpy(pixels)
    expected = TF.interpolate(t, mode=mode, antialias=antialias, **kw)
    assert_same(F.interpolate(e, mode=mode, antialias=antialias, **kw), expected, atol=0,
                rtol=0)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("shape, kw", RESIZES)
def test_interpolate_antialias_values_and_grads(shape, kw, mode):
    kw = dict(kw, mode=mode, antialias=True)
    fe = lambda x: F.interpolate(x, **kw)  # noqa: E731
    ft = lambda x: TF.interpolate(x, **kw)  # noqa: E731
    assert_grads_match(fe, ft, _rand(shape))
    e, t = make_pair(_rand(shape).astype(np.float32))
    assert_same(fe(e), ft(t))


@pytest.mark.parametrize("call", [
    lambda f, x: f.interpolate(x, size=4, scale_factor=2),
    lambda f, x: f.interpolate(x),
    lambda f, x: f.interpolate(x, size=(2, 3, 4)),
    lambda f, x: f.interpolate(x, size=(2.5, 3)),
    lambda f, x: f.interpolate(x, scale_factor=(2, 2, 2)),
    lambda f, x: f.interpolate(x, size=4, mode="nearest", align_corners=True),
    lambda f, x: f.interpolate(x, size=4, recompute_scale_factor=True),
    lambda f, x: f.interpolate(x, size=4, mode="linear"),
    lambda f, x: f.interpolate(x, size=4, mode="trilinear"),
    lambda f, x: f.interpolate(x[0], size=4, mode="bilinear"),
    lambda f, x: f.interpolate(x[0, 0], size=4),
    lambda f, x: f.interpolate(x, size=4, mode="cubic"),
    lambda f, x: f.interpolate(x, size=0),
    lambda f, x: f.interpolate(x, scale_factor=0.1),
    lambda f, x: f.interpolate(x, size=4, mode="nearest", antialias=True),
])
def test_interpolate_errors_match_torch(call):
    e, t = make_pair(_rand((2, 3, 5, 6)))
    message_e, message_t = _same_error(lambda: call(F, e), lambda: call(TF, t))
    assert message_e.split("(")[0] == message_t.split("(")[0]


UPSAMPLE = [
    (dict(scale_factor=2), (2, 3, 4, 5)),
    (dict(size=(3, 4), mode="bilinear", align_corners=True), (2, 3, 4, 5)),
    (dict(scale_factor=(2.0, 3.0), mode="bicubic"), (1, 2, 3, 4)),
    (dict(size=7, mode="linear", recompute_scale_factor=None), (2, 3, 4)),
    (dict(scale_factor=1.5, mode="trilinear"), (1, 2, 3, 4, 2)),
]


@pytest.mark.parametrize("kw,shape", UPSAMPLE)
def test_upsample_modules(kw, shape):
    me, mt = nn.Upsample(**kw), torch.nn.Upsample(**kw)
    assert repr(me) == repr(mt)
    assert_grads_match(me, mt, _rand(shape))
    a = _rand((2, 3, 4, 5))
    for name, kw in (("UpsamplingNearest2d", dict(scale_factor=2)),
                     ("UpsamplingBilinear2d", dict(size=(5, 7)))):
        me, mt = getattr(nn, name)(**kw), getattr(torch.nn, name)(**kw)
        assert repr(me) == repr(mt)
        assert_grads_match(me, mt, a)


def test_deprecated_upsample_functions():
    a = _rand((1, 2, 3, 4))
    e, t = make_pair(a)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_same(F.upsample(e, scale_factor=2, mode="bilinear"),
                    TF.upsample(t, scale_factor=2, mode="bilinear"))
        assert_same(F.upsample_nearest(e, size=(5, 5)), TF.upsample_nearest(t, size=(5, 5)))
        assert_same(F.upsample_bilinear(e, scale_factor=2),
                    TF.upsample_bilinear(t, scale_factor=2))
    with pytest.warns(UserWarning, match="deprecated"):
        F.upsample(e, scale_factor=2)


# ---------------------------------------------------------------- grid_sample / affine_grid


@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [True, False])
@pytest.mark.parametrize("nd", [2, 3])
def test_grid_sample_bilinear(padding_mode, align_corners, nd):
    rng = np.random.default_rng(nd)
    x = rng.standard_normal((2, 3) + ((5, 6) if nd == 2 else (3, 4, 5)))
    grid = rng.uniform(-1.3, 1.3, (2,) + ((4, 7) if nd == 2 else (2, 3, 4)) + (nd,))
    assert_grads_match(
        lambda a, g: F.grid_sample(a, g, "bilinear", padding_mode, align_corners),
        lambda a, g: TF.grid_sample(a, g, "bilinear", padding_mode, align_corners), x, grid)
    e, t = make_pair(x.astype(np.float32))
    ge, gt = make_pair(grid.astype(np.float32))
    assert_same(F.grid_sample(e, ge, "bilinear", padding_mode, align_corners),
                TF.grid_sample(t, gt, "bilinear", padding_mode, align_corners))


@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [True, False])
def test_grid_sample_nearest(padding_mode, align_corners):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, 5, 6))
    grid = rng.uniform(-1.3, 1.3, (2, 4, 7, 2))
    ge, gt = make_pair(grid)
    assert_grads_match(lambda a: F.grid_sample(a, ge, "nearest", padding_mode, align_corners),
                       lambda a: TF.grid_sample(a, gt, "nearest", padding_mode, align_corners),
                       x)
    x5 = rng.standard_normal((1, 2, 3, 4, 5))
    grid5 = rng.uniform(-1.1, 1.1, (1, 2, 3, 4, 3))
    (e, t), (g5e, g5t) = make_pair(x5), make_pair(grid5)
    assert_same(F.grid_sample(e, g5e, "nearest", padding_mode, align_corners),
                TF.grid_sample(t, g5t, "nearest", padding_mode, align_corners))


@pytest.mark.parametrize("call", [
    lambda f, lib, x, g: f.grid_sample(x, g, mode="cubic", align_corners=False),
    lambda f, lib, x, g: f.grid_sample(x, g, padding_mode="wrap", align_corners=False),
    lambda f, lib, x, g: f.grid_sample(x, g.float(), align_corners=False),
    lambda f, lib, x, g: f.grid_sample(x[0], g, align_corners=False),
    lambda f, lib, x, g: f.grid_sample(x, g[:1].expand(1, 4, 7, 2).contiguous()[:, :, :, :1],
                                       align_corners=False),
    lambda f, lib, x, g: f.grid_sample(x[:1], g, align_corners=False),
    lambda f, lib, x, g: f.grid_sample(x.unsqueeze(2), g.unsqueeze(1), mode="bicubic",
                                       align_corners=False),
])
def test_grid_sample_errors_match_torch(call):
    rng = np.random.default_rng(0)
    e, t = make_pair(rng.standard_normal((2, 3, 5, 6)))
    ge, gt = make_pair(rng.uniform(-1, 1, (2, 4, 7, 2)))
    message_e, message_t = _same_error(lambda: call(F, ember, e, ge),
                                       lambda: call(TF, torch, t, gt))
    assert message_e == message_t


def test_grid_sample_align_corners_default_warns():
    e = ember.ones(1, 1, 2, 2)
    with pytest.warns(UserWarning, match="align_corners=False"):
        F.grid_sample(e, ember.zeros(1, 1, 1, 2))
    with pytest.warns(UserWarning, match="align_corners=False"):
        F.affine_grid(ember.zeros(1, 2, 3), (1, 1, 2, 2))


@pytest.mark.parametrize("size,align_corners", [((2, 3, 4, 5), True), ((2, 3, 4, 5), False),
                                                ((2, 1, 3, 2, 4), False),
                                                ((2, 1, 3, 2, 4), True), ((2, 1, 1, 5), False)])
def test_affine_grid(size, align_corners):
    theta = _rand((2, 2, 3) if len(size) == 4 else (2, 3, 4))
    assert_grads_match(lambda th: F.affine_grid(th, size, align_corners),
                       lambda th: TF.affine_grid(th, size, align_corners), theta)
    e, t = make_pair(theta.astype(np.float32))
    grid_e, grid_t = F.affine_grid(e, size, align_corners), TF.affine_grid(t, size, align_corners)
    assert_same(grid_e, grid_t)
    x = _rand(size, dtype=np.float32)
    assert_same(F.grid_sample(ember.tensor(x), grid_e, align_corners=align_corners),
                TF.grid_sample(torch.tensor(x), grid_t, align_corners=align_corners))


@pytest.mark.parametrize("call", [
    lambda f, lib, th: f.affine_grid(th.long(), (2, 1, 3, 3), False),
    lambda f, lib, th: f.affine_grid(th, (2, 1, 3, 3, 3), False),
    lambda f, lib, th: f.affine_grid(th[..., :2], (2, 1, 3, 3), False),
    lambda f, lib, th: f.affine_grid(th, (2, 1, 3), False),
    lambda f, lib, th: f.affine_grid(th, (2, 1, 0, 3), False),
])
def test_affine_grid_errors_match_torch(call):
    e, t = make_pair(_rand((2, 2, 3)))
    message_e, message_t = _same_error(lambda: call(F, ember, e), lambda: call(TF, torch, t))
    assert message_e.replace("ember.", "torch.") == message_t


def test_meta_device():
    calls = [lambda f, lib, x: f.interpolate(x, scale_factor=2, mode="bilinear"),
             lambda f, lib, x: f.interpolate(x, size=(3, 7), mode="nearest"),
             lambda f, lib, x: f.pixel_shuffle(x, 2),
             lambda f, lib, x: f.pad(x, (1, 2, 3, 4), mode="reflect")]
    for call in calls:
        e = call(F, ember, ember.empty(2, 4, 5, 6, device="meta"))
        t = call(TF, torch, torch.empty(2, 4, 5, 6, device="meta"))
        assert e.device.type == "meta"
        assert tuple(e.shape) == tuple(t.shape) and e.dtype.name == "float32"
