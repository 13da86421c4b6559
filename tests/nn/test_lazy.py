"""Lazy modules and Bilinear against torch: inferred shapes, class change, initialisation,
state-dict loading, repr, outputs and gradients with the same weights."""

import numpy as np
import pytest
import torch

import ember
from conftest import assert_grads_match, assert_same, to_ember, to_torch
from ember import nn

F = nn.functional


def _copy_state(e, t):
    t.load_state_dict({k: to_torch(v) for k, v in e.state_dict().items()})


def _run_both(e, t, x_np):
    """Forward/backward both modules on the same input and cotangent; compare everything."""
    xe = ember.tensor(x_np).requires_grad_()
    xt = torch.from_numpy(x_np.copy()).requires_grad_()
    ye, yt = e(xe), t(xt)
    assert_same(ye, yt)
    cot = np.random.default_rng(1).standard_normal(tuple(yt.shape)).astype(x_np.dtype)
    ye.backward(ember.tensor(cot))
    yt.backward(torch.from_numpy(cot))
    assert_same(xe.grad, xt.grad)
    tp = dict(t.named_parameters())
    for name, p in e.named_parameters():
        assert_same(p.grad, tp[name].grad)


LAZY_CASES = [
    ("LazyLinear", (7,), {}, (5, 4), "Linear"),
    ("LazyLinear", (3,), {"bias": False}, (2, 6, 4), "Linear"),
    ("LazyConv1d", (4, 3), {"padding": 1}, (2, 3, 8), "Conv1d"),
    ("LazyConv1d", (4, 3), {}, (3, 8), "Conv1d"),
    ("LazyConv2d", (6, 3), {"stride": 2, "groups": 2}, (2, 4, 7, 7), "Conv2d"),
    ("LazyConv3d", (2, 2), {"bias": False}, (1, 3, 4, 4, 4), "Conv3d"),
    ("LazyConvTranspose1d", (4, 3), {"stride": 2}, (2, 3, 5), "ConvTranspose1d"),
    ("LazyConvTranspose2d", (4, 3), {"output_padding": 1, "stride": 2}, (1, 2, 4, 4),
     "ConvTranspose2d"),
    ("LazyConvTranspose3d", (2, 2), {}, (1, 3, 3, 3, 3), "ConvTranspose3d"),
    ("LazyBatchNorm1d", (), {}, (6, 3), "BatchNorm1d"),
    ("LazyBatchNorm1d", (), {"affine": False}, (4, 3, 5), "BatchNorm1d"),
    ("LazyBatchNorm2d", (), {"momentum": None}, (3, 4, 3, 3), "BatchNorm2d"),
    ("LazyBatchNorm3d", (), {"track_running_stats": False}, (2, 3, 2, 2, 2), "BatchNorm3d"),
    ("LazyInstanceNorm1d", (), {}, (2, 3, 6), "InstanceNorm1d"),
    ("LazyInstanceNorm2d", (), {"affine": False, "track_running_stats": False},
     (2, 3, 4, 4), "InstanceNorm2d"),
    ("LazyInstanceNorm3d", (), {}, (1, 2, 3, 3, 3), "InstanceNorm3d"),
]


@pytest.mark.filterwarnings("ignore:input's size at dim=1 does not match num_features")
@pytest.mark.parametrize("name,args,kwargs,shape,eager", LAZY_CASES)
def test_lazy_module_matches_torch(name, args, kwargs, shape, eager):
    e = getattr(nn, name)(*args, dtype=ember.float64, **kwargs)
    t = getattr(torch.nn, name)(*args, dtype=torch.float64, **kwargs)
    assert repr(e) == repr(t)
    assert e.has_uninitialized_params() == t.has_uninitialized_params()
    assert list(e.state_dict()) == list(t.state_dict())
    assert [n for n, _ in e.named_parameters()] == [n for n, _ in t.named_parameters()]
    for p in e.parameters():
        assert isinstance(p, nn.UninitializedParameter)
    x = np.random.default_rng(0).standard_normal(shape)
    # first call: both initialise; copy ember's fresh weights into torch and compare a step
    ye = e(ember.tensor(x))
    t(torch.from_numpy(x))
    assert type(e).__name__ == type(t).__name__ == eager
    assert type(e) is getattr(nn, eager)
    assert not any(isinstance(p, nn.UninitializedParameter) for p in e.parameters())
    assert not any(isinstance(b, nn.UninitializedBuffer) for b in e.buffers())
    assert not hasattr(e, "_initialize_hook") and not e._forward_pre_hooks
    assert repr(e) == repr(t)
    assert ye.dtype is ember.float64
    for (ke, ve), (kt, vt) in zip(e.state_dict().items(), t.state_dict().items()):
        assert ke == kt and tuple(ve.shape) == tuple(vt.shape) and ve.dtype.name == \
            str(vt.dtype).removeprefix("torch.")
    _copy_state(e, t)
    _run_both(e, t, x)
    e.eval()
    t.eval()
    _run_both(e, t, x)


def test_lazy_linear_initialisation_distribution():
    m = nn.LazyLinear(400)
    m(ember.zeros(2, 100))
    bound = 1 / np.sqrt(100)
    w, b = m.weight.detach().numpy(), m.bias.detach().numpy()
    assert w.shape == (400, 100) and np.abs(w).max() <= bound
    assert abs(w.std() - bound / np.sqrt(3)) < 0.05 * bound and abs(w.mean()) < 0.02 * bound
    assert np.abs(b).max() <= bound and np.abs(b).max() > 0.8 * bound
    c = nn.LazyConv2d(64, 3)
    c(ember.zeros(1, 8, 5, 5))
    cb = 1 / np.sqrt(8 * 9)
    cw = c.weight.detach().numpy()
    assert np.abs(cw).max() <= cb and abs(cw.std() - cb / np.sqrt(3)) < 0.05 * cb
    bn = nn.LazyBatchNorm2d()
    bn(ember.randn(2, 5, 3, 3))
    assert bn.weight.shape == (5,) and float(bn.bias.abs().sum()) == 0
    assert int(bn.num_batches_tracked) == 1


def test_lazy_state_dict_loading():
    src = torch.nn.Linear(6, 3, dtype=torch.float64)
    e = nn.LazyLinear(3, dtype=ember.float64)
    e.load_state_dict({k: to_ember(v) for k, v in src.state_dict().items()})
    assert type(e) is nn.LazyLinear and not e.has_uninitialized_params()
    assert e.in_features == 0 and e.weight.shape == (3, 6)
    x = np.random.default_rng(0).standard_normal((2, 6))
    assert_same(e(ember.tensor(x)), src(torch.from_numpy(x)))
    assert type(e) is nn.Linear and e.in_features == 6
    # batch norm: buffers too; and a state dict from an uninitialised module keeps it lazy
    tb = torch.nn.BatchNorm1d(4)
    tb(torch.randn(5, 4))
    eb = nn.LazyBatchNorm1d()
    eb.load_state_dict({k: to_ember(v) for k, v in tb.state_dict().items()})
    assert_same(eb.running_mean, tb.running_mean)
    assert_same(eb.num_batches_tracked, tb.num_batches_tracked)
    fresh = nn.LazyLinear(3)
    fresh.load_state_dict(nn.LazyLinear(3).state_dict())
    assert fresh.has_uninitialized_params()
    assert isinstance(nn.LazyLinear(3).state_dict()["weight"], nn.UninitializedParameter)


def test_lazy_in_a_model_and_errors():
    def build(mod):
        return mod.Sequential(mod.LazyConv2d(4, 3), mod.ReLU(), mod.Flatten(), mod.LazyLinear(2))
    e, t = build(nn), build(torch.nn)
    assert repr(e) == repr(t)
    x = np.random.default_rng(0).standard_normal((2, 3, 5, 5))
    e(ember.tensor(x).float())
    t(torch.from_numpy(x).float())
    assert repr(e) == repr(t)
    assert [tuple(p.shape) for p in e.parameters()] == [tuple(p.shape) for p in t.parameters()]
    for mod, lib in ((nn, ember), (torch.nn, torch)):
        with pytest.raises(RuntimeError, match=r"Expected 3D \(unbatched\) or 4D \(batched\)"):
            mod.LazyConv2d(4, 3)(lib.zeros(3, 5))
        with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
            mod.LazyConv2d(4, 3, groups=2)(lib.zeros(1, 3, 5, 5))
        with pytest.raises(ValueError, match="expected 2D or 3D input"):
            mod.LazyBatchNorm1d()(lib.zeros(2, 3, 4, 5))


def test_lazy_meta_device():
    m = nn.LazyLinear(4, device="meta")
    y = m(ember.empty(3, 5, device="meta"))
    assert y.shape == (3, 4) and y.device.type == "meta" and m.weight.device.type == "meta"
    c = nn.LazyConv1d(2, 3, device="meta")
    assert c(ember.empty(1, 4, 9, device="meta")).shape == (1, 2, 7)


# ---------------------------------------------------------------- Bilinear


@pytest.mark.parametrize("shapes", [((5, 3), (5, 4)), ((3,), (4,)), ((2, 3, 3), (2, 3, 4)),
                                    ((0, 3), (0, 4))])
@pytest.mark.parametrize("bias", [True, False])
def test_bilinear_functional_grads(shapes, bias):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(shapes[0]), rng.standard_normal(shapes[1])
    w, bb = rng.standard_normal((2, 3, 4)), rng.standard_normal(2)
    if bias:
        assert_grads_match(F.bilinear, torch.nn.functional.bilinear, a, b, w, bb,
                           double_backward=True)
    else:
        assert_grads_match(F.bilinear, torch.nn.functional.bilinear, a, b, w,
                           double_backward=True)


def test_bilinear_float32_and_noncontiguous():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((4, 6)).astype(np.float32)
    b = rng.standard_normal((6, 5)).astype(np.float32)
    w = rng.standard_normal((3, 6, 5)).astype(np.float32)
    x2 = ember.tensor(b.T.copy()).T[:4]  # a transposed (non-contiguous) view
    assert not x2.is_contiguous()
    out = F.bilinear(ember.tensor(a), x2, ember.tensor(w))
    ref = torch.nn.functional.bilinear(torch.from_numpy(a), torch.from_numpy(b)[:4],
                                       torch.from_numpy(w))
    assert_same(out, ref, rtol=1e-5, atol=1e-5)


def test_bilinear_errors_match_torch():
    w = np.zeros((6, 4, 5))
    bad = [((3, 4), (2, 5), w, None), ((3, 3), (3, 5), w, None), ((3, 4), (3, 4), w, None),
           ((3, 4), (3, 5), np.zeros((6, 4)), None), ((3, 4), (3, 5), w, np.zeros(5)),
           ((2, 3, 4), (3, 5), w, None)]
    for s1, s2, weight, bias in bad:
        e_args = [ember.zeros(*s1, dtype=ember.float64), ember.zeros(*s2, dtype=ember.float64),
                  ember.tensor(weight)] + ([] if bias is None else [ember.tensor(bias)])
        t_args = [torch.zeros(*s1, dtype=torch.float64), torch.zeros(*s2, dtype=torch.float64),
                  torch.from_numpy(weight)] + ([] if bias is None else [torch.from_numpy(bias)])
        with pytest.raises(Exception) as te:
            torch.nn.functional.bilinear(*t_args)
        with pytest.raises(te.type) as ee:
            F.bilinear(*e_args)
        assert str(ee.value).split(":")[0] == str(te.value).split(":")[0]
    with pytest.raises(RuntimeError, match="same dtype"):
        F.bilinear(ember.zeros(2, 4), ember.zeros(2, 5, dtype=ember.float64), ember.zeros(6, 4, 5))


def test_bilinear_module():
    ember.manual_seed(0)
    e = nn.Bilinear(20, 30, 40)
    t = torch.nn.Bilinear(20, 30, 40)
    assert repr(e) == repr(t) and list(e.state_dict()) == list(t.state_dict())
    assert repr(nn.Bilinear(2, 3, 4, bias=False)) == repr(torch.nn.Bilinear(2, 3, 4, bias=False))
    assert [tuple(p.shape) for p in e.parameters()] == [tuple(p.shape) for p in t.parameters()]
    bound = 1 / np.sqrt(20)
    w = e.weight.detach().numpy()
    assert np.abs(w).max() <= bound and abs(w.std() - bound / np.sqrt(3)) < 0.03 * bound
    assert np.abs(e.bias.detach().numpy()).max() <= bound
    _copy_state(e, t)
    rng = np.random.default_rng(0)
    x1 = ember.tensor(rng.standard_normal((8, 20)).astype(np.float32), requires_grad=True)
    x2 = ember.tensor(rng.standard_normal((8, 30)).astype(np.float32), requires_grad=True)
    t1, t2 = to_torch(x1).requires_grad_(), to_torch(x2).requires_grad_()
    ye, yt = e(x1, x2), t(t1, t2)
    assert_same(ye, yt, rtol=1e-5, atol=1e-5)
    ye.sum().backward()
    yt.sum().backward()
    assert_same(x1.grad, t1.grad, rtol=1e-5, atol=1e-5)
    assert_same(e.weight.grad, t.weight.grad, rtol=1e-5, atol=1e-5)
    assert_same(e.bias.grad, t.bias.grad, rtol=1e-5, atol=1e-5)
    m = nn.Bilinear(3, 4, 5, device="meta", dtype=ember.float64)
    y = m(ember.empty(2, 3, device="meta", dtype=ember.float64),
          ember.empty(2, 4, device="meta", dtype=ember.float64))
    assert y.shape == (2, 5) and y.dtype is ember.float64
