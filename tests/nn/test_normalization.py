"""Normalization layers and functional forms against torch: values, gradients of input and
parameters, running statistics, eval mode, errors, reprs, state dicts, meta device."""

import numpy as np
import pytest
import torch

import ember
from conftest import assert_grads_match, assert_same, to_ember, to_torch
from ember import nn

F = ember.nn.functional
TF = torch.nn.functional


def _rng(seed=0):
    return np.random.default_rng(seed)


def _pair(build, dtype=None):
    """The same module in both frameworks, torch's parameters copied from ember's."""
    e, t = build(nn), build(torch.nn)
    if dtype is not None:
        e, t = e.to(getattr(ember, dtype)), t.to(getattr(torch, dtype))
    with torch.no_grad():
        for (_, ep), (_, tp) in zip(e.named_parameters(), t.named_parameters()):
            tp.copy_(to_torch(ep))
    return e, t


def _randomize(e, t, seed=1):
    """Non-trivial affine parameters (the same in both)."""
    rng = _rng(seed)
    with torch.no_grad(), ember.no_grad():
        for (_, ep), (_, tp) in zip(e.named_parameters(), t.named_parameters()):
            values = rng.standard_normal(tuple(ep.shape))
            ep.copy_(ember.tensor(values))
            tp.copy_(torch.from_numpy(values))


def _check_module(e, t, shape, dtype="float64", steps=3, seed=0, rtol=None, atol=None):
    """Forward + backward for a few steps; outputs, input and parameter grads, buffers."""
    rng = _rng(seed)
    for _ in range(steps):
        x = (rng.standard_normal(shape) * 3 + 2).astype(dtype)
        xe = ember.tensor(x, requires_grad=True)
        xt = torch.from_numpy(x.copy()).requires_grad_()
        ye, yt = e(xe), t(xt)
        assert_same(ye, yt, rtol=rtol, atol=atol)
        g = rng.standard_normal(tuple(yt.shape)).astype(dtype)
        ye.backward(ember.tensor(g))
        yt.backward(torch.from_numpy(g))
        assert_same(xe.grad, xt.grad, rtol=rtol, atol=atol)
        for (_, ep), (_, tp) in zip(e.named_parameters(), t.named_parameters()):
            assert_same(ep.grad, tp.grad, rtol=rtol, atol=atol)
            ep.grad = None
            tp.grad = None
    for (_, eb), (_, tb) in zip(e.named_buffers(), t.named_buffers()):
        assert_same(eb, tb, rtol=rtol, atol=atol)


# ---------------------------------------------------------------- BatchNorm

BN_CASES = [("BatchNorm1d", (6, 3)), ("BatchNorm1d", (4, 3, 5)), ("BatchNorm2d", (3, 3, 4, 2)),
            ("BatchNorm3d", (2, 3, 2, 3, 2))]


@pytest.mark.parametrize("name,shape", BN_CASES)
@pytest.mark.parametrize("momentum", [0.1, None, 0.5])
@pytest.mark.parametrize("affine", [True, False])
def test_batchnorm_train_eval_running_stats(name, shape, momentum, affine):
    e, t = _pair(lambda m: getattr(m, name)(3, momentum=momentum, affine=affine), "float64")
    if affine:
        _randomize(e, t)
    _check_module(e, t, shape, steps=3)
    assert int(e.num_batches_tracked) == int(t.num_batches_tracked) == 3
    e.eval()
    t.eval()
    _check_module(e, t, shape, steps=1, seed=5)
    assert int(e.num_batches_tracked) == 3


@pytest.mark.parametrize("track", [True, False])
def test_batchnorm_track_running_stats_false_and_bias_false(track):
    e, t = _pair(lambda m: m.BatchNorm2d(3, track_running_stats=track, bias=False), "float64")
    _randomize(e, t)
    _check_module(e, t, (4, 3, 2, 2))
    e.eval()
    t.eval()
    _check_module(e, t, (4, 3, 2, 2), steps=1)
    assert repr(e) == repr(t)
    assert list(e.state_dict()) == list(t.state_dict())


def test_batchnorm_float32_and_state_dict_roundtrip():
    e, t = _pair(lambda m: m.BatchNorm1d(5))
    _check_module(e, t, (8, 5), dtype="float32", rtol=1e-4, atol=1e-5)
    sd = e.state_dict()
    assert list(sd) == list(t.state_dict()) == ["weight", "bias", "running_mean", "running_var",
                                                "num_batches_tracked"]
    for (_, a), (_, b) in zip(sd.items(), t.state_dict().items()):
        assert_same(a, b, rtol=1e-5, atol=1e-6)
    fresh = nn.BatchNorm1d(5)
    fresh.load_state_dict({k: to_ember(v) for k, v in t.state_dict().items()})
    assert_same(fresh.running_var, t.running_var, rtol=1e-5, atol=1e-6)
    assert sd["num_batches_tracked"].dtype is ember.int64
    assert sd["num_batches_tracked"].shape == ()


def test_batchnorm_old_state_dict_without_num_batches_tracked():
    m = nn.BatchNorm1d(2)
    sd = m.state_dict()
    del sd["num_batches_tracked"]
    sd._metadata[""]["version"] = 1
    m.load_state_dict(sd)
    assert int(m.num_batches_tracked) == 0


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_batchnorm_low_precision(dtype):
    x = _rng().standard_normal((6, 3, 4)).astype(np.float32)
    xe = ember.tensor(x).to(getattr(ember, dtype))
    xt = torch.from_numpy(x).to(getattr(torch, dtype))
    for training in (True, False):
        re_, rt = ember.zeros(3), torch.zeros(3)
        ve, vt = ember.ones(3), torch.ones(3)
        assert_same(F.batch_norm(xe, re_, ve, ember.ones(3), ember.zeros(3), training),
                    TF.batch_norm(xt, rt, vt, torch.ones(3), torch.zeros(3), training))
        assert_same(re_, rt, rtol=1e-2, atol=1e-3)


def test_batchnorm_functional_grads_double_backward():
    rng = _rng(3)
    x, w, b = rng.standard_normal((5, 3, 2)), rng.standard_normal(3), rng.standard_normal(3)
    assert_grads_match(lambda x, w, b: F.batch_norm(x, None, None, w, b, True),
                       lambda x, w, b: TF.batch_norm(x, None, None, w, b, True),
                       x, w, b, double_backward=True)
    rm, rv = rng.standard_normal(3), rng.uniform(0.5, 2, 3)
    assert_grads_match(lambda x, w, b: F.batch_norm(x, ember.tensor(rm), ember.tensor(rv), w, b),
                       lambda x, w, b: TF.batch_norm(x, torch.tensor(rm), torch.tensor(rv), w, b),
                       x, w, b, double_backward=True)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "channels_last"])
def test_batchnorm_fused_training_step(dtype, layout):
    """The fused training path: outputs, input/weight/bias grads and running stats vs torch."""
    rng = _rng(5)
    perm = {"contiguous": (0, 1, 2, 3), "transposed": (0, 1, 3, 2),
            "channels_last": (0, 3, 1, 2)}[layout]
    base_shape = {"contiguous": (4, 6, 5, 3), "transposed": (4, 6, 3, 5),
                  "channels_last": (4, 5, 3, 6)}[layout]
    e, t = _pair(lambda m: m.BatchNorm2d(6, momentum=0.3), dtype)
    _randomize(e, t)
    tol = {} if dtype == "float64" else {"rtol": 1e-4, "atol": 1e-5}
    for _ in range(2):
        base = rng.standard_normal(base_shape).astype(dtype) * 2 + 0.5
        be, bt = ember.tensor(base, requires_grad=True), torch.tensor(base, requires_grad=True)
        xe, xt = be.permute(*perm), bt.permute(*perm)
        g = rng.standard_normal(xe.shape).astype(dtype)
        ye, yt = e(xe), t(xt)
        assert_same(ye, yt, **tol)
        ye.backward(ember.tensor(g))
        yt.backward(torch.from_numpy(g))
        assert_same(be.grad, bt.grad, **tol)
        for (_, ep), (_, tp) in zip(e.named_parameters(), t.named_parameters()):
            assert_same(ep.grad, tp.grad, **tol)
            ep.grad = None
            tp.grad = None
    assert_same(e.running_mean, t.running_mean, **tol)
    assert_same(e.running_var, t.running_var, **tol)
    assert int(e.num_batches_tracked) == int(t.num_batches_tracked)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_batch_norm_running_statistics_values_and_versions(dtype):
    """The running statistics updated on their arrays: torch's values after several training
    calls (momentum 0.1 and 0.7) and, as in torch, no version bump."""
    rng = _rng(11)
    e_mean, e_var = ember.zeros(5, dtype=getattr(ember, dtype)), ember.ones(5, dtype=getattr(ember, dtype))
    t_mean, t_var = torch.zeros(5, dtype=getattr(torch, dtype)), torch.ones(5, dtype=getattr(torch, dtype))
    versions = (e_mean._version, e_var._version, t_mean._version, t_var._version)
    weight = rng.standard_normal(5).astype(dtype)
    bias = rng.standard_normal(5).astype(dtype)
    for momentum in (0.1, 0.7, 0.1):
        x = (rng.standard_normal((6, 5, 4, 3)) * 3 + 2).astype(dtype)
        ember.nn.functional.batch_norm(ember.tensor(x), e_mean, e_var, ember.tensor(weight),
                                       ember.tensor(bias), True, momentum)
        torch.nn.functional.batch_norm(torch.tensor(x), t_mean, t_var, torch.tensor(weight),
                                       torch.tensor(bias), True, momentum)
    tol = {"rtol": 1e-6, "atol": 1e-7} if dtype == "float32" else {}
    assert_same(e_mean, t_mean, **tol)
    assert_same(e_var, t_var, **tol)
    assert (e_mean._version - versions[0], e_var._version - versions[1]) == \
        (t_mean._version - versions[2], t_var._version - versions[3])


def test_batchnorm_fused_double_backward_4d():
    rng = _rng(6)
    x, w, b = rng.standard_normal((3, 2, 4, 3)), rng.standard_normal(2), rng.standard_normal(2)
    rm, rv = np.zeros(2), np.ones(2)
    assert_grads_match(
        lambda x, w, b: F.batch_norm(x, ember.tensor(rm), ember.tensor(rv), w, b, True, 0.2),
        lambda x, w, b: TF.batch_norm(x, torch.tensor(rm), torch.tensor(rv), w, b, True, 0.2),
        x, w, b, double_backward=True)


def test_batchnorm_fused_meta():
    m = nn.BatchNorm2d(3, device="meta")
    y = m(ember.empty(2, 3, 4, 4, device="meta", requires_grad=True))
    assert tuple(y.shape) == (2, 3, 4, 4) and y.dtype is ember.float32
    assert y.device.type == "meta"


def test_batchnorm_large_mean_is_stable():
    # against the float64 closed form: torch's own float32 error here depends on its thread
    # count (2.6e-3 on one thread, 1.4e-3 on two), so ember must be at least as close as torch
    x = (_rng().standard_normal((64, 2)) + 1e4).astype(np.float32)
    wide = x.astype(np.float64)
    exact = (wide - wide.mean(0)) / np.sqrt(wide.var(0) + 1e-5)
    ours = F.batch_norm(ember.tensor(x), None, None, training=True).numpy()
    theirs = TF.batch_norm(torch.from_numpy(x), None, None, training=True).numpy()
    error, torch_error = np.abs(ours - exact).max(), np.abs(theirs - exact).max()
    assert error <= max(torch_error, 1e-3), (error, torch_error)


def test_batchnorm_errors():
    for mod, lib in ((nn, ember), (torch.nn, torch)):
        with pytest.raises(ValueError, match="expected 2D or 3D input"):
            mod.BatchNorm1d(3)(lib.zeros(2, 3, 4, 5))
        with pytest.raises(ValueError, match="expected 4D input"):
            mod.BatchNorm2d(3)(lib.zeros(2, 3, 4))
        with pytest.raises(ValueError, match="expected 5D input"):
            mod.BatchNorm3d(3)(lib.zeros(2, 3, 4))
        with pytest.raises(ValueError, match="Expected more than 1 value per channel"):
            mod.BatchNorm1d(3)(lib.zeros(1, 3))
        mod.BatchNorm1d(3).eval()(lib.zeros(1, 3))  # fine in eval mode
    for f, lib in ((F, ember), (TF, torch)):
        x = lib.ones(4, 3)
        with pytest.raises(RuntimeError, match="running_mean must be defined"):
            f.batch_norm(x, None, None, training=False)
        with pytest.raises(RuntimeError, match="running_mean should contain 3 elements not 4"):
            f.batch_norm(x, lib.zeros(4), lib.ones(4), training=True)
        with pytest.raises(RuntimeError, match="weight should contain 3 elements not 4"):
            f.batch_norm(x, None, None, lib.ones(4), training=True)
        with pytest.raises(ValueError, match="eps must be positive"):
            f.batch_norm(x, None, None, training=True, eps=0.0)
        with pytest.raises(RuntimeError, match="mixed dtype"):
            f.batch_norm(x.double(), lib.zeros(3), lib.ones(3))
        with pytest.raises(NotImplementedError):
            f.batch_norm(x.long(), None, None, training=True)


def test_batchnorm_repr_and_state_dict_match_torch():
    for kwargs in ({}, {"affine": False}, {"momentum": None, "eps": 1e-3},
                   {"track_running_stats": False}):
        e, t = nn.BatchNorm2d(4, **kwargs), torch.nn.BatchNorm2d(4, **kwargs)
        assert repr(e) == repr(t)
        assert list(e.state_dict()) == list(t.state_dict())
        for (_, a), (_, b) in zip(e.state_dict().items(), t.state_dict().items()):
            assert_same(a, b)


# ---------------------------------------------------------------- InstanceNorm


@pytest.mark.parametrize("name,shape", [("InstanceNorm1d", (3, 4, 5)), ("InstanceNorm1d", (4, 5)),
                                        ("InstanceNorm2d", (2, 4, 3, 3)),
                                        ("InstanceNorm3d", (2, 4, 2, 2, 3)),
                                        ("InstanceNorm3d", (4, 2, 2, 3))])
@pytest.mark.parametrize("affine,track", [(False, False), (True, False), (True, True),
                                          (False, True)])
def test_instancenorm(name, shape, affine, track):
    e, t = _pair(lambda m: getattr(m, name)(4, affine=affine, track_running_stats=track),
                 "float64")
    if affine:
        _randomize(e, t)
    _check_module(e, t, shape)
    e.eval()
    t.eval()
    _check_module(e, t, shape, steps=1, seed=9)
    assert repr(e) == repr(t)
    assert list(e.state_dict()) == list(t.state_dict())


def test_instancenorm_momentum_none_and_functional():
    e, t = _pair(lambda m: m.InstanceNorm1d(3, momentum=None, track_running_stats=True),
                 "float64")
    _check_module(e, t, (2, 3, 4))
    rng = _rng(4)
    x, w, b = rng.standard_normal((2, 3, 4)), rng.standard_normal(3), rng.standard_normal(3)
    assert_grads_match(lambda x, w, b: F.instance_norm(x, weight=w, bias=b),
                       lambda x, w, b: TF.instance_norm(x, weight=w, bias=b),
                       x, w, b, double_backward=True)


def test_instancenorm_errors_and_warning():
    for mod, lib, f in ((nn, ember, F), (torch.nn, torch, TF)):
        with pytest.raises(ValueError, match="expected 3D or 4D input"):
            mod.InstanceNorm2d(3)(lib.zeros(2, 3))
        with pytest.raises(ValueError, match="to match num_features"):
            mod.InstanceNorm1d(3, affine=True)(lib.zeros(2, 4, 5))
        with pytest.warns(UserWarning, match="does not match num_features"):
            mod.InstanceNorm1d(3)(lib.randn(2, 4, 5))
        with pytest.raises(ValueError, match="more than 1 spatial element"):
            f.instance_norm(lib.zeros(2, 3, 1))
        with pytest.raises(RuntimeError, match="running_mean and running_var to be defined"):
            f.instance_norm(lib.zeros(2, 3, 4), use_input_stats=False)


# ---------------------------------------------------------------- LayerNorm / GroupNorm / RMSNorm


@pytest.mark.parametrize("shape,normalized", [((4, 5), 5), ((2, 3, 4), (3, 4)), ((5,), [5]),
                                              ((2, 0, 3), (3,))])
@pytest.mark.parametrize("affine,bias", [(True, True), (True, False), (False, True)])
def test_layernorm_module(shape, normalized, affine, bias):
    e, t = _pair(lambda m: m.LayerNorm(normalized, elementwise_affine=affine, bias=bias),
                 "float64")
    if affine:
        _randomize(e, t)
    _check_module(e, t, shape, steps=1)
    assert repr(e) == repr(t)
    assert list(e.state_dict()) == list(t.state_dict())


@pytest.mark.parametrize("transpose", [False, True])
def test_layer_norm_functional_grads(transpose):
    rng = _rng(2)
    x, w, b = rng.standard_normal((4, 3, 6)), rng.standard_normal(6), rng.standard_normal(6)
    if transpose:
        x = x.transpose(2, 1, 0).copy()
        pass
        fe = lambda x, w, b: F.layer_norm(x.transpose(0, 2), [6], w, b, eps=1e-3)  # noqa: E731
        ft = lambda x, w, b: TF.layer_norm(x.transpose(0, 2), [6], w, b, eps=1e-3)  # noqa: E731
    else:
        fe = lambda x, w, b: F.layer_norm(x, [6], w, b)  # noqa: E731
        ft = lambda x, w, b: TF.layer_norm(x, [6], w, b)  # noqa: E731
    assert_grads_match(fe, ft, x, w, b, double_backward=True)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_norms_dtypes(dtype):
    x = _rng().standard_normal((3, 4, 6)).astype(np.float32)
    w = _rng(1).standard_normal(6).astype(np.float32)
    xe, xt = ember.tensor(x).to(getattr(ember, dtype)), torch.from_numpy(x).to(getattr(torch,
                                                                                         dtype))
    we, wt = ember.tensor(w).to(getattr(ember, dtype)), torch.from_numpy(w).to(getattr(torch,
                                                                                         dtype))
    tol = {} if dtype == "float32" else {"rtol": 1e-2, "atol": 1e-2}
    assert_same(F.layer_norm(xe, [6], we, we), TF.layer_norm(xt, [6], wt, wt), **tol)
    assert_same(F.rms_norm(xe, [6], we), TF.rms_norm(xt, [6], wt), **tol)
    assert_same(F.group_norm(xe.transpose(1, 2), 3), TF.group_norm(xt.transpose(1, 2), 3), **tol)
    assert_same(F.local_response_norm(xe, 2), TF.local_response_norm(xt, 2), **tol)


def test_layer_norm_errors():
    for f, lib in ((F, ember), (TF, torch)):
        with pytest.raises(RuntimeError, match=r"expected input with shape \[\*, 4\]"):
            f.layer_norm(lib.zeros(4, 3), [4])
        with pytest.raises(RuntimeError, match="Expected weight to be of same shape"):
            f.layer_norm(lib.zeros(4, 3), [3], lib.ones(4))
        with pytest.raises(NotImplementedError):
            f.layer_norm(lib.zeros(4, 3, dtype=lib.long), [3])
        with pytest.raises(RuntimeError, match="mixed dtype"):
            f.layer_norm(lib.zeros(4, 3, dtype=lib.float64), [3], lib.ones(3))
        with pytest.raises(RuntimeError, match=r"expected input with shape \[\*4\]"):
            f.rms_norm(lib.zeros(4, 3), [4])


@pytest.mark.parametrize("shape,groups", [((2, 6, 5), 3), ((3, 4), 2), ((2, 4, 2, 3), 4),
                                          ((2, 4, 3), 1), ((0, 4, 3), 2)])
@pytest.mark.parametrize("affine", [True, False])
def test_groupnorm_module(shape, groups, affine):
    channels = shape[1]
    e, t = _pair(lambda m: m.GroupNorm(groups, channels, affine=affine), "float64")
    if affine:
        _randomize(e, t)
    _check_module(e, t, shape, steps=1)
    assert repr(e) == repr(t)
    assert list(e.state_dict()) == list(t.state_dict())


def test_group_norm_functional_grads_and_errors():
    rng = _rng(5)
    x, w, b = rng.standard_normal((2, 6, 3)), rng.standard_normal(6), rng.standard_normal(6)
    assert_grads_match(lambda x, w, b: F.group_norm(x, 2, w, b, eps=1e-2),
                       lambda x, w, b: TF.group_norm(x, 2, w, b, eps=1e-2),
                       x, w, b, double_backward=True)
    for mod, f, lib in ((nn, F, ember), (torch.nn, TF, torch)):
        with pytest.raises(ValueError, match="must be divisible by num_groups"):
            mod.GroupNorm(4, 6)
        with pytest.raises(RuntimeError, match="divisible by num_groups"):
            f.group_norm(lib.zeros(2, 6, 3), 4)
        with pytest.raises(RuntimeError, match="Expected at least 2 dimensions"):
            f.group_norm(lib.zeros(6), 3)
        with pytest.raises(RuntimeError, match="Expected weight to be a vector"):
            f.group_norm(lib.zeros(2, 6, 3), 3, lib.ones(5))
        with pytest.raises(ValueError, match="Expected more than 1 value per channel"):
            f.group_norm(lib.zeros(1, 6), 6)


@pytest.mark.parametrize("shape,normalized", [((4, 5), 5), ((2, 3, 4), (3, 4))])
@pytest.mark.parametrize("eps", [None, 1e-3])
@pytest.mark.parametrize("affine", [True, False])
def test_rmsnorm_module(shape, normalized, eps, affine):
    e, t = _pair(lambda m: m.RMSNorm(normalized, eps=eps, elementwise_affine=affine), "float64")
    if affine:
        _randomize(e, t)
    _check_module(e, t, shape, steps=1)
    assert repr(e) == repr(t)
    assert list(e.state_dict()) == list(t.state_dict())


def test_rms_norm_functional_grads_small_values():
    rng = _rng(6)
    x, w = rng.standard_normal((3, 4)) * 1e-9, rng.standard_normal(4)  # eps=None matters here
    assert_grads_match(lambda x, w: F.rms_norm(x, [4], w), lambda x, w: TF.rms_norm(x, [4], w),
                       x, w, double_backward=True)
    x32 = (rng.standard_normal((3, 4)) * 1e-4).astype(np.float32)
    assert_same(F.rms_norm(ember.tensor(x32), [4]), TF.rms_norm(torch.from_numpy(x32), [4]))


# ---------------------------------------------------------------- LocalResponseNorm


@pytest.mark.parametrize("shape", [(2, 5, 4), (2, 6, 3, 3), (1, 4, 2, 2, 3), (0, 3, 4)])
@pytest.mark.parametrize("size,alpha,beta,k", [(2, 1e-4, 0.75, 1.0), (3, 0.5, 0.5, 2.0),
                                               (8, 1.0, 1.5, 0.5)])
def test_local_response_norm(shape, size, alpha, beta, k):
    e, t = _pair(lambda m: m.LocalResponseNorm(size, alpha, beta, k))
    _check_module(e, t, shape, steps=1)
    assert repr(e) == repr(t)
    x = _rng(7).standard_normal(shape)
    assert_grads_match(lambda x: F.local_response_norm(x, size, alpha, beta, k),
                       lambda x: TF.local_response_norm(x, size, alpha, beta, k), x,
                       double_backward=True)


def test_local_response_norm_errors():
    for f, lib in ((F, ember), (TF, torch)):
        with pytest.raises(ValueError, match="Expected 3D or higher dimensionality"):
            f.local_response_norm(lib.zeros(2, 3), 2)


# ---------------------------------------------------------------- init, meta device


def test_initial_values_and_factory_kwargs():
    for m in (nn.BatchNorm1d(4), nn.GroupNorm(2, 4), nn.LayerNorm(4), nn.RMSNorm(4),
              nn.InstanceNorm1d(4, affine=True)):
        assert_same(m.weight, torch.ones(4))
        if getattr(m, "bias", None) is not None:
            assert_same(m.bias, torch.zeros(4))
    m = nn.BatchNorm2d(3, dtype=ember.float64)
    assert m.weight.dtype is ember.float64 and m.running_var.dtype is ember.float64
    assert m.num_batches_tracked.dtype is ember.int64
    assert m.weight.requires_grad and not m.running_mean.requires_grad


@pytest.mark.parametrize("build,shape", [(lambda m: m.BatchNorm2d(3), (2, 3, 4, 4)),
                                         (lambda m: m.InstanceNorm2d(3), (2, 3, 4, 4)),
                                         (lambda m: m.LayerNorm([4, 4]), (2, 3, 4, 4)),
                                         (lambda m: m.GroupNorm(3, 3), (2, 3, 4, 4)),
                                         (lambda m: m.RMSNorm(4), (2, 3, 4, 4)),
                                         (lambda m: m.LocalResponseNorm(2), (2, 3, 4, 4))])
def test_meta_device(build, shape):
    e, t = build(nn).to("meta"), build(torch.nn).to("meta")
    ye = e(ember.empty(shape, device="meta"))
    yt = t(torch.empty(shape, device="meta"))
    assert ye.device.type == "meta"
    assert tuple(ye.shape) == tuple(yt.shape)
    assert ye.dtype.name == str(yt.dtype).removeprefix("torch.")


# ---------------------------------------------------------------- ReLU (dedicated op, speed)


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16"])
def test_relu_op_values_and_grads(dtype):
    rng = _rng(7)
    x = rng.standard_normal((3, 4, 5))
    x[0, 0, :2] = 0.0
    g = rng.standard_normal((3, 4, 5))
    g[0, 0, 0], g[1, 1, 1] = np.nan, np.inf  # at y = 0 and maybe y > 0: torch zeroes / keeps
    x[1, 1, 1] = -1.0
    td = getattr(torch, dtype)
    xt = torch.tensor(x).to(td).requires_grad_()
    xe = to_ember(xt.detach()).requires_grad_()
    ye, yt = F.relu(xe), TF.relu(xt)
    assert_same(ye, yt)
    gt = torch.tensor(g).to(td)
    ye.backward(to_ember(gt))
    yt.backward(gt)
    assert_same(xe.grad, xt.grad)


def test_relu_op_double_backward_and_layouts():
    x = _rng(8).standard_normal((4, 6)).T
    assert_grads_match(F.relu, TF.relu, x, double_backward=True)
    assert_grads_match(lambda x: F.relu(x).sum(), lambda x: TF.relu(x).sum(), x)


def test_relu_op_meta_and_inplace_after_batchnorm():
    y = F.relu(ember.empty(2, 3, device="meta"))
    assert tuple(y.shape) == (2, 3) and y.device.type == "meta"
    x = _rng(9).standard_normal((4, 3, 2, 2))
    e, t = _pair(lambda m: m.Sequential(m.BatchNorm2d(3), m.ReLU(inplace=True)), "float64")
    xe, xt = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    e(xe).sum().backward()
    t(xt).sum().backward()
    assert_same(xe.grad, xt.grad)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_layer_norm_first_order_grads_multi_dim(dtype):
    # first-order backward (no create_graph) runs the fused kernel; two normalized dims
    rng = _rng(4)
    x = (rng.standard_normal((5, 3, 4, 6)) * 2 + 1).astype(dtype)
    w, b = rng.standard_normal((4, 6)).astype(dtype), rng.standard_normal((4, 6)).astype(dtype)
    tol = {} if dtype == "float64" else {"rtol": 1e-5, "atol": 1e-5}
    assert_grads_match(lambda x, w, b: F.layer_norm(x, [4, 6], w, b, eps=1e-4),
                       lambda x, w, b: TF.layer_norm(x, [4, 6], w, b, eps=1e-4), x, w, b,
                       **tol)


def test_layer_norm_grad_fn_and_double_backward_multi_dim():
    rng = _rng(5)
    x, w, b = rng.standard_normal((2, 3, 4)), rng.standard_normal((3, 4)), \
        rng.standard_normal((3, 4))
    assert_grads_match(lambda x, w, b: F.layer_norm(x, [3, 4], w, b),
                       lambda x, w, b: TF.layer_norm(x, [3, 4], w, b), x, w, b,
                       double_backward=True)
    xe = ember.tensor(x, requires_grad=True)
    xt = torch.tensor(x, requires_grad=True)
    ones, zeros = ember.ones(4, dtype=ember.float64), ember.zeros(4, dtype=ember.float64)
    assert F.layer_norm(xe, [4], ones, zeros).grad_fn.name() == \
        TF.layer_norm(xt, [4], torch.ones(4, dtype=torch.float64),
                      torch.zeros(4, dtype=torch.float64)).grad_fn.name()


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_batch_norm_training_over_several_sample_blocks(dtype):
    # 7 samples of 8 x 40 x 40: the CPU kernels walk them in blocks of 5 and 2
    e, t = _pair(lambda m: m.BatchNorm2d(8), dtype=dtype)
    _randomize(e, t)
    tol = {} if dtype == "float64" else {"rtol": 1e-4, "atol": 1e-4}
    _check_module(e.train(), t.train(), (7, 8, 40, 40), dtype=dtype, steps=2, **tol)


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16"])
def test_batch_norm_eval_fused_and_composite_paths_match_torch(dtype):
    # eval mode without grad runs the fused kernel on the running statistics; with an input
    # that requires grad it runs the composite formula (its gradient is not the training one)
    rng = _rng(6)
    x = (rng.standard_normal((7, 8, 40, 40)) * 2 + 1).astype(dtype)
    stats = [rng.standard_normal(8).astype(np.float32 if dtype == "float16" else dtype),
             rng.uniform(0.5, 2, 8).astype(np.float32 if dtype == "float16" else dtype)]
    params = [rng.standard_normal(8).astype(stats[0].dtype) for _ in range(2)]
    tol = {"rtol": 1e-2, "atol": 1e-2} if dtype == "float16" else {"rtol": 1e-5, "atol": 1e-5}
    args_e = [ember.tensor(a) for a in stats + params]
    args_t = [torch.tensor(a) for a in stats + params]
    with ember.no_grad():
        ours = F.batch_norm(ember.tensor(x), *args_e, training=False, eps=1e-3)
    theirs = TF.batch_norm(torch.tensor(x), *args_t, training=False, eps=1e-3)
    assert ours.dtype == getattr(ember, dtype)
    np.testing.assert_allclose(ours.float().numpy(), theirs.float().numpy(), **tol)
    if dtype != "float16":
        assert_grads_match(
            lambda x, w, b: F.batch_norm(x, args_e[0], args_e[1], w, b, training=False),
            lambda x, w, b: TF.batch_norm(x, args_t[0], args_t[1], w, b, training=False),
            x, params[0], params[1], **tol)


@pytest.mark.parametrize("onednn", [True, False])
@pytest.mark.parametrize("shape", [(16, 64, 128), (3, 5, 7, 6)])
def test_layer_norm_float32_on_onednn_and_numpy_against_torch(onednn, shape):
    # with libdnnl the float32 forward (given the statistics) and first-order backward are one
    # oneDNN kernel each; rows with a large offset and a constant row (variance far below eps)
    from ember.nn._functional import _onednn
    if onednn and not _onednn.available():
        pytest.skip("libdnnl is not installed")
    rng = _rng(3)
    k = 2 if len(shape) == 4 else 1
    x = (rng.standard_normal(shape) * 3 + 1).astype(np.float32)
    x.reshape(-1, *shape[-k:])[0] = 0.25
    x.reshape(-1, *shape[-k:])[1] += 100
    w, b, grad = (rng.standard_normal(s).astype(np.float32) for s in
                  (shape[-k:], shape[-k:], shape))
    results = []
    for lib, enabled in ((ember, onednn), (torch, None)):
        xs, ws, bs = (lib.tensor(a, requires_grad=True) for a in (x, w, b))
        with ember.backends.mkldnn.flags(enabled=enabled if lib is ember else True):
            y = lib.nn.functional.layer_norm(xs, shape[-k:], ws, bs, eps=1e-5)
            # first order: the backward kernel; under create_graph: the composite ops
            grads = lib.autograd.grad(y, (xs, ws, bs), lib.tensor(grad), retain_graph=True)
            again = lib.autograd.grad(y, (xs, ws), lib.tensor(grad), create_graph=True)
            second = lib.autograd.grad((again[0] ** 2).sum(), (xs, ws))
        results.append([t.detach().numpy() for t in (y, *grads, *second)])
    for mine, theirs in zip(*results):
        np.testing.assert_allclose(mine, theirs, rtol=2e-5, atol=2e-4)
