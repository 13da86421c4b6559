"""Less common nn pieces against torch: SyncBatchNorm (one process and two gloo processes),
DataParallel, AdaptiveLogSoftmaxWithLoss, fractional max pooling, CrossMapLRN2d, the deprecated
nn.init aliases, BatchNorm fusion and weight memory formats."""

import multiprocessing
import queue
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from _sync_bn_worker import sync_bn_rank

import ember
import ember.nn.functional as F
from conftest import assert_same, make_pair, to_ember
from ember import nn


def _rand(shape, seed=0, dtype=np.float64):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _copy_state(e_module, t_module):
    """Give the ember module the torch module's parameters and buffers."""
    e_module.load_state_dict({k: to_ember(v) for k, v in t_module.state_dict().items()})


def _outcome(call):
    try:
        call()
    except Exception as error:  # noqa: BLE001  (the exception is the outcome)
        return type(error).__name__, str(error)
    return "ok", ""


# ---------------------------------------------------------------- nn.init deprecated aliases

INIT_ALIASES = ["uniform", "normal", "constant", "eye", "dirac", "xavier_uniform",
                "xavier_normal", "kaiming_uniform", "kaiming_normal", "orthogonal", "sparse"]


def test_init_aliases_are_torchs_set():
    torch_aliases = {n for n in dir(torch.nn.init) if not n.startswith("_")
                     and hasattr(torch.nn.init, n + "_")}
    assert torch_aliases == set(INIT_ALIASES)
    assert all(callable(getattr(nn.init, name)) for name in INIT_ALIASES)


ALIAS_ARGS = {"constant": (0.3,), "sparse": (0.5,)}


@pytest.mark.parametrize("name", INIT_ALIASES)
def test_init_alias_warns_like_torch_and_fills_like_the_underscore_form(name):
    shape = (3, 4, 3) if name == "dirac" else (4, 5)
    args = ALIAS_ARGS.get(name, ())
    with warnings.catch_warnings(record=True) as theirs:
        warnings.simplefilter("always")
        getattr(torch.nn.init, name)(torch.empty(shape), *args)
    ember.manual_seed(7)
    with warnings.catch_warnings(record=True) as ours:
        warnings.simplefilter("always")
        filled = getattr(nn.init, name)(ember.empty(shape), *args)
    ember.manual_seed(7)
    expected = getattr(nn.init, name + "_")(ember.empty(shape), *args)
    assert [(w.category, str(w.message)) for w in ours] == \
        [(w.category, str(w.message)) for w in theirs]
    assert ours[0].filename == __file__  # the warning points at the caller's line
    assert filled.tolist() == expected.tolist()


# ---------------------------------------------------------------- BatchNorm fusion


def _trained_bn(lib, bn):
    """Non-trivial running statistics and affine parameters."""
    with lib.no_grad():
        bn.running_mean.copy_(lib.linspace(-1, 1, bn.num_features))
        bn.running_var.copy_(lib.linspace(0.5, 2, bn.num_features))
        if bn.affine:
            bn.weight.copy_(lib.linspace(0.5, 1.5, bn.num_features))
            bn.bias.copy_(lib.linspace(-0.2, 0.3, bn.num_features))
    return bn.eval()


@pytest.mark.parametrize("conv_kind,bias,affine", [
    ("Conv2d", True, True), ("Conv2d", False, False), ("Conv1d", True, True),
    ("Conv3d", False, True), ("ConvTranspose2d", True, True),
])
def test_fuse_conv_bn_eval_matches_torch(conv_kind, bias, affine):
    make_conv = {"Conv1d": lambda L: L.nn.Conv1d(3, 4, 3, bias=bias),
                 "Conv2d": lambda L: L.nn.Conv2d(3, 4, 3, bias=bias),
                 "Conv3d": lambda L: L.nn.Conv3d(3, 4, 2, bias=bias),
                 "ConvTranspose2d": lambda L: L.nn.ConvTranspose2d(3, 4, 3, bias=bias)}
    bn_kind = {"Conv1d": "BatchNorm1d", "Conv3d": "BatchNorm3d"}.get(conv_kind, "BatchNorm2d")
    t_conv = make_conv[conv_kind](torch).double().eval()
    e_conv = make_conv[conv_kind](ember).double().eval()
    _copy_state(e_conv, t_conv)
    t_bn = _trained_bn(torch, getattr(torch.nn, bn_kind)(4, affine=affine).double())
    e_bn = getattr(nn, bn_kind)(4, affine=affine).double()
    _copy_state(e_bn, t_bn)
    e_bn.eval()
    transpose = conv_kind.startswith("ConvTranspose")
    t_fused = torch.nn.utils.fuse_conv_bn_eval(t_conv, t_bn, transpose=transpose)
    e_fused = nn.utils.fuse_conv_bn_eval(e_conv, e_bn, transpose=transpose)
    assert type(e_fused) is type(e_conv) and e_fused is not e_conv
    assert isinstance(e_fused.weight, nn.Parameter) and isinstance(e_fused.bias, nn.Parameter)
    assert_same(e_fused.weight, t_fused.weight)
    assert_same(e_fused.bias, t_fused.bias)
    spatial = {"Conv1d": (6,), "Conv3d": (4, 4, 4)}.get(conv_kind, (5, 5))
    x = _rand((2, 3, *spatial))
    assert_same(e_fused(ember.tensor(x)), t_bn(t_conv(torch.tensor(x))), rtol=1e-10,
                atol=1e-12)


def test_fuse_linear_bn_eval_matches_torch():
    for features in (3, 1):
        t_lin = torch.nn.Linear(5, 3).double().eval()
        e_lin = nn.Linear(5, 3).double().eval()
        _copy_state(e_lin, t_lin)
        t_bn = _trained_bn(torch, torch.nn.BatchNorm1d(features).double())
        e_bn = nn.BatchNorm1d(features).double()
        _copy_state(e_bn, t_bn)
        e_bn.eval()
        t_fused = torch.nn.utils.fuse_linear_bn_eval(t_lin, t_bn)
        e_fused = nn.utils.fuse_linear_bn_eval(e_lin, e_bn)
        assert_same(e_fused.weight, t_fused.weight)
        assert_same(e_fused.bias, t_fused.bias)


def test_fuse_weights_functions_and_errors_match_torch():
    w, b, rm, rv = _rand((4, 2, 3)), None, _rand(4, 1), np.abs(_rand(4, 2)) + 0.1
    ours = nn.utils.fuse_conv_bn_weights(ember.tensor(w), b, ember.tensor(rm),
                                         ember.tensor(rv), 1e-3, None, None)
    theirs = torch.nn.utils.fuse_conv_bn_weights(torch.tensor(w), b, torch.tensor(rm),
                                                 torch.tensor(rv), 1e-3, None, None)
    assert_same(list(ours), list(theirs))
    ours = nn.utils.fuse_linear_bn_weights(ember.tensor(w[:, :, 0]), None, ember.tensor(rm),
                                           ember.tensor(rv), 1e-3, ember.tensor(rv),
                                           ember.tensor(rm))
    theirs = torch.nn.utils.fuse_linear_bn_weights(torch.tensor(w[:, :, 0]), None,
                                                   torch.tensor(rm), torch.tensor(rv), 1e-3,
                                                   torch.tensor(rv), torch.tensor(rm))
    assert_same(list(ours), list(theirs))
    for make in (lambda L: L.nn.utils.fuse_conv_bn_eval(L.nn.Conv2d(2, 2, 1),
                                                        L.nn.BatchNorm2d(2)),
                 lambda L: L.nn.utils.fuse_linear_bn_eval(L.nn.Linear(2, 3).eval(),
                                                          L.nn.BatchNorm1d(2).eval()),
                 lambda L: L.nn.utils.fuse_linear_bn_eval(
                     L.nn.Linear(2, 3).eval(),
                     L.nn.BatchNorm1d(3, track_running_stats=False).eval())):
        assert _outcome(lambda: make(ember)) == _outcome(lambda: make(torch))


def test_convert_conv_weight_memory_format_matches_torch_strides():
    def build(L):
        return L.nn.Sequential(L.nn.Conv2d(3, 4, 3),
                               L.nn.Sequential(L.nn.ConvTranspose2d(4, 2, 2)),
                               L.nn.Conv3d(2, 2, 1))

    e_net, t_net = build(ember), build(torch)
    _copy_state(e_net, t_net)
    e_net = nn.utils.convert_conv2d_weight_memory_format(e_net, ember.channels_last)
    t_net = torch.nn.utils.convert_conv2d_weight_memory_format(t_net, torch.channels_last)
    nn.utils.convert_conv3d_weight_memory_format(e_net, ember.channels_last_3d)
    torch.nn.utils.convert_conv3d_weight_memory_format(t_net, torch.channels_last_3d)
    for (name, ep), (_, tp) in zip(e_net.named_parameters(), t_net.named_parameters()):
        assert ep.stride() == tp.stride(), name
        assert isinstance(ep, nn.Parameter)
        assert_same(ep, tp)
    x = _rand((1, 3, 6, 6), dtype=np.float32)
    assert_same(e_net[1](e_net[0](ember.tensor(x))), t_net[1](t_net[0](torch.tensor(x))),
                rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- fractional max pooling


def _samples(shape, seed=1, dtype=np.float64):
    return np.random.default_rng(seed).random(shape).astype(dtype)


FRACTIONAL_CASES = [
    (2, (2, 3, 11, 9), 2, {"output_size": (5, 4)}),
    (2, (2, 3, 11, 9), (3, 2), {"output_size": (9, 8)}),
    (2, (3, 7, 8), 3, {"output_size": 4}),
    (2, (2, 2, 10, 12), 2, {"output_ratio": (0.5, 0.5)}),
    (2, (2, 2, 10, 12), 3, {"output_ratio": (0.4, 0.7)}),
    (2, (1, 1, 5, 5), 2, {"output_size": 1}),
    (3, (2, 2, 7, 9, 8), (2, 3, 2), {"output_size": (4, 5, 3)}),
    (3, (2, 6, 6, 6), 2, {"output_ratio": (0.5, 0.5, 0.5)}),
]


@pytest.mark.parametrize("nd,shape,kernel,options", FRACTIONAL_CASES)
def test_fractional_max_pool_matches_torch_given_samples(nd, shape, kernel, options):
    batch, channels = (shape[0], shape[1]) if len(shape) == nd + 2 else (1, shape[0])
    x = _rand(shape)
    s = _samples((batch, channels, nd))
    e, t = make_pair(x, requires_grad=True)
    e_fn = getattr(F, f"fractional_max_pool{nd}d")
    t_fn = getattr(TF, f"fractional_max_pool{nd}d")
    e_out, e_idx = e_fn(e, kernel, return_indices=True, _random_samples=ember.tensor(s),
                        **options)
    t_out, t_idx = t_fn(t, kernel, return_indices=True, _random_samples=torch.tensor(s),
                        **options)
    assert_same(e_out, t_out)
    assert_same(e_idx, t_idx)
    g = _rand(tuple(t_out.shape), seed=3)
    e_out.backward(ember.tensor(g))
    t_out.backward(torch.tensor(g))
    assert_same(e.grad, t.grad)
    with_indices = getattr(F, f"fractional_max_pool{nd}d_with_indices")
    assert_same(with_indices(ember.tensor(x), kernel, _random_samples=ember.tensor(s),
                             **options), (t_out, t_idx))


def test_fractional_max_pool_float32_and_ties_and_nans_match_torch():
    x = np.round(_rand((2, 2, 9, 9), dtype=np.float32))  # many ties
    x[0, 0, 2, 3] = x[0, 0, 4, 4] = x[1, 1, 0, 0] = np.nan
    x[1, 0, :4, :4] = -np.inf
    s = _samples((2, 2, 2), dtype=np.float32)
    e_out, e_idx = F.fractional_max_pool2d(ember.tensor(x), 3, output_size=5,
                                           return_indices=True, _random_samples=ember.tensor(s))
    t_out, t_idx = TF.fractional_max_pool2d(torch.tensor(x), 3, output_size=5,
                                            return_indices=True,
                                            _random_samples=torch.tensor(s))
    assert_same(e_out, t_out)
    assert_same(e_idx, t_idx)


def test_fractional_max_pool_modules_and_random_windows():
    s = _samples((2, 3, 2))
    e_mod = nn.FractionalMaxPool2d(3, output_size=(4, 5), return_indices=True,
                                   _random_samples=ember.tensor(s))
    t_mod = torch.nn.FractionalMaxPool2d(3, output_size=(4, 5), return_indices=True,
                                         _random_samples=torch.tensor(s))
    assert list(e_mod.state_dict()) == list(t_mod.state_dict()) == ["_random_samples"]
    assert repr(e_mod) == repr(t_mod)
    x = _rand((2, 3, 9, 10))
    assert_same(e_mod(ember.tensor(x)), t_mod(torch.tensor(x)))
    # Without samples, windows are random: the output still picks input values at its indices.
    out, idx = nn.FractionalMaxPool3d(2, output_ratio=0.5, return_indices=True)(
        ember.tensor(_rand((2, 3, 8, 6, 6))))
    assert out.shape == (2, 3, 4, 3, 3)
    flat = ember.tensor(_rand((2, 3, 8, 6, 6))).flatten(2)
    assert_same(flat.gather(2, idx.flatten(2)).shape, torch.Size([2, 3, 36]))


FRACTIONAL_ERRORS = [
    lambda L: L.nn.functional.fractional_max_pool2d(L.ones(2, 3, 8, 8), 3, output_size=7),
    lambda L: L.nn.functional.fractional_max_pool2d(L.ones(2, 3, 8, 8), (2, 5),
                                                    output_size=(4, 5)),
    lambda L: L.nn.functional.fractional_max_pool2d(L.ones(2, 3, 0, 8), 2, output_size=4,
                                                    _random_samples=L.rand(2, 3, 2)),
    lambda L: L.nn.functional.fractional_max_pool2d(L.ones(8, 8), 2, output_size=4,
                                                    _random_samples=L.rand(1, 8, 2)),
    lambda L: L.nn.functional.fractional_max_pool2d(L.ones(2, 3, 8, 8), 2, output_size=4,
                                                    _random_samples=L.rand(2, 3, 3)),
    lambda L: L.nn.functional.fractional_max_pool2d(L.ones(2, 3, 8, 8), 2, output_size=4,
                                                    _random_samples=L.rand(1, 3, 2)),
    lambda L: L.nn.functional.fractional_max_pool2d(L.ones(2, 3, 8, 8), 2, output_size=4,
                                                    _random_samples=L.rand(2, 2, 2)),
    lambda L: L.nn.functional.fractional_max_pool2d(L.ones(2, 3, 8, 8), 2, output_size=4,
                                                    _random_samples=L.rand(2, 3)),
    lambda L: L.nn.functional.fractional_max_pool2d(L.ones(2, 3, 8, 8), 2, output_size=4,
                                                    _random_samples=L.rand(2, 3, 2).double()),
    lambda L: L.nn.functional.fractional_max_pool2d(L.ones(2, 3, 8, 8), 2),
    lambda L: L.nn.functional.fractional_max_pool2d(L.ones(2, 3, 8, 8), 2,
                                                    output_ratio=(0.5, 0.5, 0.5)),
    lambda L: L.nn.functional.fractional_max_pool3d(L.ones(2, 3, 8, 8, 8), 3,
                                                    output_size=(4, 4, 7)),
    lambda L: L.nn.functional.fractional_max_pool3d(L.ones(2, 3, 0, 8, 8), 3, output_size=4,
                                                    _random_samples=L.rand(2, 3, 3)),
    lambda L: L.nn.functional.fractional_max_pool3d(L.ones(2, 3, 8, 8, 8), 2),
    lambda L: L.nn.FractionalMaxPool2d(2, output_ratio=1.5),
    lambda L: L.nn.FractionalMaxPool2d(2),
    lambda L: L.nn.FractionalMaxPool3d(2),
    lambda L: L.nn.FractionalMaxPool2d(2, output_size=3, output_ratio=0.5),
    lambda L: L.nn.FractionalMaxPool3d(2, output_ratio=(0.5, 0.5, 1.0)),
]


@pytest.mark.parametrize("make", FRACTIONAL_ERRORS)
def test_fractional_max_pool_errors_match_torch(make):
    ours, theirs = _outcome(lambda: make(ember)), _outcome(lambda: make(torch))
    assert theirs[0] != "ok"
    assert ours == theirs


# ---------------------------------------------------------------- CrossMapLRN2d


@pytest.mark.parametrize("size", [2, 3, 4, 5, 7])
@pytest.mark.parametrize("channels", [1, 3, 8])
def test_cross_map_lrn2d_values_and_gradients_match_torch(size, channels):
    x = _rand((2, channels, 3, 4), seed=size * 10 + channels)
    g = _rand((2, channels, 3, 4), seed=1)
    e, t = make_pair(x, requires_grad=True)
    e_out = nn.CrossMapLRN2d(size, alpha=0.5, beta=0.75, k=1.5)(e)
    t_out = torch.nn.CrossMapLRN2d(size, alpha=0.5, beta=0.75, k=1.5)(t)
    assert_same(e_out, t_out, rtol=1e-12, atol=1e-12)
    e_out.backward(ember.tensor(g))
    t_out.backward(torch.tensor(g))
    assert_same(e.grad, t.grad, rtol=1e-12, atol=1e-12)


def test_cross_map_lrn2d_float32_repr_and_error():
    x = _rand((2, 6, 5, 5), dtype=np.float32)
    assert_same(nn.CrossMapLRN2d(5)(ember.tensor(x)), torch.nn.CrossMapLRN2d(5)(torch.tensor(x)))
    assert repr(nn.CrossMapLRN2d(3, 1e-3)) == repr(torch.nn.CrossMapLRN2d(3, 1e-3))
    assert _outcome(lambda: nn.CrossMapLRN2d(3)(ember.ones(2, 3, 4))) == \
        _outcome(lambda: torch.nn.CrossMapLRN2d(3)(torch.ones(2, 3, 4)))


# ---------------------------------------------------------------- AdaptiveLogSoftmaxWithLoss


def _asm_pair(head_bias=True, cutoffs=(5, 12, 20), n_classes=30, div_value=2.0):
    t = torch.nn.AdaptiveLogSoftmaxWithLoss(16, n_classes, list(cutoffs), div_value=div_value,
                                            head_bias=head_bias).double()
    e = nn.AdaptiveLogSoftmaxWithLoss(16, n_classes, list(cutoffs), div_value=div_value,
                                      head_bias=head_bias).double()
    assert list(e.state_dict()) == list(t.state_dict())
    _copy_state(e, t)
    return e, t


@pytest.mark.parametrize("head_bias", [True, False])
def test_adaptive_log_softmax_forward_and_gradients_match_torch(head_bias):
    e_asm, t_asm = _asm_pair(head_bias)
    x = _rand((12, 16))
    y = np.random.default_rng(1).integers(0, 30, 12)
    y[:3] = [0, 29, 12]  # both ends and a cluster boundary
    e, t = make_pair(x, requires_grad=True)
    e_res, t_res = e_asm(e, ember.tensor(y)), t_asm(t, torch.tensor(y))
    assert type(e_res).__name__ == type(t_res).__name__ and e_res._fields == t_res._fields
    assert_same(e_res.output, t_res.output)
    assert_same(e_res.loss, t_res.loss)
    e_res.loss.backward()
    t_res.loss.backward()
    assert_same(e.grad, t.grad)
    for (name, ep), (_, tp) in zip(e_asm.named_parameters(), t_asm.named_parameters()):
        assert_same(ep.grad, tp.grad), name
    assert repr(e_asm) == repr(t_asm)


def test_adaptive_log_softmax_unbatched_log_prob_and_predict_match_torch():
    e_asm, t_asm = _asm_pair(cutoffs=(3, 8), n_classes=12, div_value=4.0)
    x = _rand(16, seed=4)
    assert_same(e_asm(ember.tensor(x), ember.tensor(5)).output,
                t_asm(torch.tensor(x), torch.tensor(5)).output)
    for seed in range(6):  # rows whose best head entry is in the shortlist, a cluster, or mixed
        batch = _rand((7, 16), seed=seed) * (seed + 1)
        assert_same(e_asm.log_prob(ember.tensor(batch)), t_asm.log_prob(torch.tensor(batch)))
        assert_same(e_asm.predict(ember.tensor(batch)), t_asm.predict(torch.tensor(batch)))
    with torch.no_grad():
        t_asm.head.bias.copy_(torch.tensor([0.0, 0.0, 0.0, 50.0, 0.0]))  # everything clusters
    _copy_state(e_asm, t_asm)
    batch = _rand((5, 16))
    assert_same(e_asm.predict(ember.tensor(batch)), t_asm.predict(torch.tensor(batch)))


ASM_ERRORS = [
    lambda L: L.nn.AdaptiveLogSoftmaxWithLoss(8, 10, []),
    lambda L: L.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [5, 3]),
    lambda L: L.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [0, 3]),
    lambda L: L.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 10]),
    lambda L: L.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 3]),
    lambda L: L.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3])(L.ones(4, 8), L.tensor([0, 1, 10, 2])),
    lambda L: L.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3])(L.ones(4, 8), L.tensor([0, 1])),
    lambda L: L.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3])(L.ones(2, 2, 8), L.tensor([0, 1])),
    lambda L: L.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3])(L.ones(2, 8), L.tensor(1)),
    lambda L: L.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3])(L.ones(2, 8), L.ones(2, 2).long()),
]


@pytest.mark.parametrize("make", ASM_ERRORS)
def test_adaptive_log_softmax_errors_match_torch(make):
    ours, theirs = _outcome(lambda: make(ember)), _outcome(lambda: make(torch))
    assert theirs[0] != "ok"
    assert (ours[0], ours[1].replace("ember.", "torch.")) == theirs


# ---------------------------------------------------------------- DataParallel


def test_data_parallel_on_cpu_is_torchs_transparent_wrapper():
    t_inner = torch.nn.Linear(4, 3)
    e_inner = nn.Linear(4, 3)
    _copy_state(e_inner, t_inner)
    e_dp, t_dp = nn.DataParallel(e_inner), torch.nn.DataParallel(t_inner)
    assert e_dp.module is e_inner and e_dp.device_ids == t_dp.device_ids == []
    assert hasattr(e_dp, "output_device") == hasattr(t_dp, "output_device")
    assert list(e_dp.state_dict()) == list(t_dp.state_dict()) == ["module.weight",
                                                                   "module.bias"]
    assert repr(e_dp) == repr(t_dp)
    x = _rand((5, 4), dtype=np.float32)
    e, t = make_pair(x, requires_grad=True)
    assert_same(e_dp(e), t_dp(t))
    e_dp(e).sum().backward()
    t_dp(t).sum().backward()
    assert_same(e_inner.weight.grad, t_inner.weight.grad)
    assert _outcome(lambda: nn.parallel.data_parallel(e_inner, ember.tensor(x))) == \
        _outcome(lambda: torch.nn.parallel.data_parallel(t_inner, torch.tensor(x)))
    assert nn.parallel.DataParallel is nn.DataParallel


# ---------------------------------------------------------------- SyncBatchNorm


@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5), (2, 3, 4, 4), (2, 3, 2, 3, 2)])
@pytest.mark.parametrize("momentum", [0.1, None])
def test_sync_batchnorm_in_one_process_is_batchnorm_like_torch(shape, momentum):
    t_bn = torch.nn.SyncBatchNorm(3, momentum=momentum).double()
    e_bn = nn.SyncBatchNorm(3, momentum=momentum).double()
    assert list(e_bn.state_dict()) == list(t_bn.state_dict())
    assert repr(e_bn) == repr(t_bn)
    for step in range(3):
        x = _rand(shape, seed=step)
        e, t = make_pair(x, requires_grad=True)
        assert_same(e_bn(e), t_bn(t))
        (e_bn(e) ** 3).sum().backward()
        (t_bn(t) ** 3).sum().backward()
        assert_same(e.grad, t.grad)
    for name, value in t_bn.state_dict().items():
        assert_same(e_bn.state_dict()[name], value)
    e_bn.eval()
    t_bn.eval()
    x = _rand(shape, seed=9)
    assert_same(e_bn(ember.tensor(x)), t_bn(torch.tensor(x)))


SYNC_BN_ERRORS = [
    lambda L: L.nn.SyncBatchNorm(3)(L.ones(3)),
    lambda L: L.nn.SyncBatchNorm(0)(L.ones(2, 0, 4)),
]


@pytest.mark.parametrize("make", SYNC_BN_ERRORS)
def test_sync_batchnorm_errors_match_torch(make):
    ours, theirs = _outcome(lambda: make(ember)), _outcome(lambda: make(torch))
    assert theirs[0] != "ok" and ours == theirs


def test_convert_sync_batchnorm_matches_torch():
    def build(L):
        return L.nn.Sequential(L.nn.Conv2d(2, 3, 1), L.nn.BatchNorm2d(3, momentum=0.3),
                               L.nn.Sequential(L.nn.BatchNorm1d(3, affine=False)))

    e_net, t_net = build(ember), build(torch)
    e_net[1].eval()
    t_net[1].eval()
    e_bn_weight = e_net[1].weight
    e_conv = nn.SyncBatchNorm.convert_sync_batchnorm(e_net, process_group="group")
    t_conv = torch.nn.SyncBatchNorm.convert_sync_batchnorm(t_net, process_group="group")
    assert repr(e_conv) == repr(t_conv)
    assert list(e_conv.state_dict()) == list(t_conv.state_dict())
    assert e_conv[1].weight is e_bn_weight and e_conv[1].process_group == "group"
    assert e_conv[1].training == t_conv[1].training is False
    single = nn.SyncBatchNorm.convert_sync_batchnorm(nn.BatchNorm1d(4))
    assert type(single) is nn.SyncBatchNorm


def _gather_rank_results(results, n, timeout=120):
    answers = {}
    for _ in range(n):
        try:
            rank, *payload = results.get(timeout=timeout)
        except queue.Empty:
            break
        answers[rank] = payload
    return answers


def test_sync_batchnorm_over_two_gloo_processes_matches_full_batch_batchnorm(tmp_path):
    x, g = _rand((7, 3, 4)), _rand((7, 3, 4), seed=5)
    rows = [(0, 3), (3, 7)]  # unequal shares: the counts must be summed, not assumed equal
    ctx = multiprocessing.get_context("spawn")
    results = ctx.Queue()
    procs = [ctx.Process(target=sync_bn_rank,
                         args=(r, 2, str(tmp_path / "init"), x, g, rows, results))
             for r in range(2)]
    for p in procs:
        p.start()
    answers = _gather_rank_results(results, 2)
    for p in procs:
        p.join(timeout=30)
        if p.is_alive():
            p.kill()
            p.join()
    assert sorted(answers) == [0, 1], answers
    for rank, payload in answers.items():
        assert len(payload) == 7, f"rank {rank} failed: {payload}"

    # The reference: one torch BatchNorm over the whole batch, the same two steps.
    t_bn = torch.nn.BatchNorm1d(3, momentum=0.3).double()
    t = torch.tensor(x, requires_grad=True)
    for _ in range(2):
        t_out = t_bn(t)
    t_out.backward(torch.tensor(g))
    out = np.concatenate([answers[0][0], answers[1][0]])
    grad = np.concatenate([answers[0][1], answers[1][1]])
    np.testing.assert_allclose(out, t_out.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(grad, t.grad.numpy(), rtol=1e-10, atol=1e-12)
    # Each rank's parameter gradient is its share; DDP's all-reduce would sum them.
    np.testing.assert_allclose(answers[0][2] + answers[1][2], t_bn.weight.grad.numpy(),
                               rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(answers[0][3] + answers[1][3], t_bn.bias.grad.numpy(),
                               rtol=1e-10, atol=1e-12)
    for rank in (0, 1):
        np.testing.assert_allclose(answers[rank][4], t_bn.running_mean.numpy(), rtol=1e-10)
        np.testing.assert_allclose(answers[rank][5], t_bn.running_var.numpy(), rtol=1e-10)
        assert answers[rank][6] == int(t_bn.num_batches_tracked) == 2
