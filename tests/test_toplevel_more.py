"""torch.* names a PyTorch program commonly uses: constants, layouts and memory formats,
legacy tensor types, small functions, top-level aliases and Tensor methods, against torch."""

import math
import pickle

import numpy as np
import pytest
import torch

import ember
from conftest import assert_grads_match, assert_same, make_pair

RNG = np.random.default_rng(7)


def _raises_like(fn_e, fn_t, match=None):
    """Both calls raise the same exception type (and ember's message matches ``match``)."""
    with pytest.raises(Exception) as t_err:
        fn_t()
    with pytest.raises(type(t_err.value), match=match):
        fn_e()


# ---------------------------------------------------------------- constants and types


def test_constants_equal_torch():
    for name in ("pi", "e", "inf"):
        assert getattr(ember, name) == getattr(torch, name)
    assert math.isnan(ember.nan) and ember.newaxis is torch.newaxis is None
    e, t = make_pair(np.arange(3.0))
    assert_same(e[ember.newaxis, :, None], t[torch.newaxis, :, None])


def test_strided_layout():
    assert ember.zeros(2).layout is ember.strided
    assert isinstance(ember.strided, ember.layout)
    assert repr(ember.strided) == "ember.strided"
    assert pickle.loads(pickle.dumps(ember.strided)) is ember.strided
    assert ember.zeros(2, layout=ember.strided).shape == (2,)


@pytest.mark.parametrize("shape,fmt", [((2, 3, 4, 5), "channels_last"),
                                       ((2, 3, 2, 4, 5), "channels_last_3d"),
                                       ((1, 3, 1, 1), "channels_last"),
                                       ((2, 1, 4, 5), "channels_last")])
def test_channels_last_strides_and_checks(shape, fmt):
    a = RNG.standard_normal(shape).astype(np.float32)
    e, t = make_pair(a)
    fe, ft = getattr(ember, fmt), getattr(torch, fmt)
    for make in (lambda x, f: x.contiguous(memory_format=f),
                 lambda x, f: x.clone(memory_format=f),
                 lambda x, f: x.to(memory_format=f),
                 lambda x, f: x.to(torch.float64 if isinstance(x, torch.Tensor)
                                   else ember.float64, memory_format=f)):
        re, rt = make(e, fe), make(t, ft)
        assert_same(re, rt)
        assert re.stride() == rt.stride()
        assert re.is_contiguous() == rt.is_contiguous()
        assert re.is_contiguous(memory_format=fe) == rt.is_contiguous(memory_format=ft)
        if 1 in shape:
            continue  # size-1 dims make the layout ambiguous: torch and NumPy pick differently
        # layouts carry through element-wise ops, *_like and clone (preserve_format)
        assert (re + 1).stride() == (rt + 1).stride()
        for like in ("empty_like", "zeros_like", "ones_like"):
            assert getattr(ember, like)(re).stride() == getattr(torch, like)(rt).stride()
            assert getattr(ember, like)(re, memory_format=ember.contiguous_format).stride() == \
                getattr(torch, like)(rt, memory_format=torch.contiguous_format).stride()
        assert re.clone().stride() == rt.clone().stride()
        assert re.contiguous().stride() == rt.contiguous().stride()
        assert re.clone(memory_format=ember.preserve_format).stride() == \
            rt.clone(memory_format=torch.preserve_format).stride()


def test_memory_format_gradient_and_errors():
    a = RNG.standard_normal((2, 3, 4, 5))
    assert_grads_match(lambda x: x.contiguous(memory_format=ember.channels_last) * 2,
                       lambda x: x.contiguous(memory_format=torch.channels_last) * 2, a)
    e, t = make_pair(RNG.standard_normal((2, 3)))
    for call in (lambda x, m: x.contiguous(memory_format=m.channels_last),
                 lambda x, m: x.clone(memory_format=m.channels_last),
                 lambda x, m: x.to(memory_format=m.channels_last),
                 lambda x, m: x.contiguous(memory_format=m.channels_last_3d),
                 lambda x, m: m.empty_like(x, memory_format=m.channels_last)):
        _raises_like(lambda: call(e, ember), lambda: call(t, torch), "required rank")
    assert e.contiguous(memory_format=ember.preserve_format) is e
    _raises_like(lambda: e.t().contiguous(memory_format=ember.preserve_format),
                 lambda: t.t().contiguous(memory_format=torch.preserve_format), "preserve")
    _raises_like(lambda: e.is_contiguous(memory_format=1),
                 lambda: t.is_contiguous(memory_format=1), "memory_format")
    for f in ("channels_last", "channels_last_3d", "preserve_format", "contiguous_format"):
        assert e.is_contiguous(memory_format=getattr(ember, f)) == \
            t.is_contiguous(memory_format=getattr(torch, f))
    assert repr(ember.channels_last) == "ember.channels_last"
    assert pickle.loads(pickle.dumps(ember.channels_last)) is ember.channels_last


def test_preserve_format_keeps_dense_permutations():
    e, t = make_pair(RNG.standard_normal((2, 3, 4)))
    for fe, ft in ((lambda x: x.transpose(0, 2), lambda x: x.transpose(0, 2)),
                   (lambda x: x[:, ::2], lambda x: x[:, ::2]),
                   (lambda x: x.permute(1, 2, 0), lambda x: x.permute(1, 2, 0))):
        for like in ("empty_like", "zeros_like", "ones_like"):
            assert getattr(ember, like)(fe(e)).stride() == getattr(torch, like)(ft(t)).stride()
        assert ember.full_like(fe(e), 2.0).stride() == torch.full_like(ft(t), 2.0).stride()
        assert_same(ember.zeros_like(fe(e)), torch.zeros_like(ft(t)))


LEGACY = ["FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor",
          "IntTensor", "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor"]


@pytest.mark.parametrize("name", LEGACY)
def test_legacy_tensor_types(name):
    E, T = getattr(ember, name), getattr(torch, name)
    assert E.dtype.name == str(T.dtype).removeprefix("torch.")
    assert E.__name__ == T.__name__ and E.is_cuda is T.is_cuda is False
    for args in ((2, 3), ((2, 3),), ([1, 0, 2],), (ember.Size([2, 1]),), ()):
        targs = tuple(torch.Size(a) if isinstance(a, ember.Size) else a for a in args)
        re, rt = E(*args), T(*targs)
        assert re.shape == rt.shape and re.dtype.name == str(rt.dtype)[6:]
        if args and isinstance(args[0], list):
            assert_same(re, rt)
    assert isinstance(E([1]), E) and isinstance(T([1]), T)
    for other in LEGACY:
        assert isinstance(E([1]), getattr(ember, other)) == isinstance(T([1]),
                                                                        getattr(torch, other))
    assert not isinstance(1, E) and not issubclass(E, ember.Tensor) and not issubclass(
        T, torch.Tensor)
    same = E([1])
    assert E(same).data_ptr() == same.data_ptr()
    assert ember.zeros(2).type(E).dtype is E.dtype
    assert ember.zeros(2).type(E).type() == torch.zeros(2).type(T).type().replace(
        "torch", "torch")


def test_legacy_tensor_type_errors():
    _raises_like(lambda: ember.FloatTensor(ember.tensor([1, 2])),
                 lambda: torch.FloatTensor(torch.tensor([1, 2])), "expected")
    _raises_like(lambda: ember.FloatTensor(2, device="meta"),
                 lambda: torch.FloatTensor(2, device="meta"), "legacy constructor")
    assert_same(ember.LongTensor([1.5, 2]), torch.LongTensor([1.5, 2]))
    assert repr(ember.FloatTensor) == "<class 'ember.FloatTensor'>"


# ---------------------------------------------------------------- switches and predicates


def test_switches():
    assert ember.is_warn_always_enabled() is torch.is_warn_always_enabled() is False
    ember.set_warn_always(True)
    assert ember.is_warn_always_enabled() is True
    ember.set_warn_always(False)
    _raises_like(lambda: ember.set_warn_always(1), lambda: torch.set_warn_always(1), "bool")
    assert ember.is_anomaly_enabled() is torch.is_anomaly_enabled() is False
    ember.set_anomaly_enabled(True, False)
    assert ember.is_anomaly_enabled() and not ember.is_anomaly_check_nan_enabled()
    assert ember.autograd.anomaly_mode.is_anomaly_enabled()
    ember.set_anomaly_enabled(False)
    assert not ember.is_anomaly_enabled() and ember.is_anomaly_check_nan_enabled()
    assert ember.set_flush_denormal(False) is False  # NumPy cannot flush: "unsupported"
    _raises_like(lambda: ember.set_flush_denormal(1), lambda: torch.set_flush_denormal(1))


def test_predicates():
    e, t = make_pair(np.zeros((2, 3), np.float32))
    assert ember.get_device(e) == torch.get_device(t) == -1
    assert ember.is_same_size(e, e[0:2]) == torch.is_same_size(t, t[0:2]) is True
    assert e.is_same_size(e.t()) == t.is_same_size(t.t()) is False
    _raises_like(lambda: ember.is_same_size(e, 1), lambda: torch.is_same_size(t, 1), "Tensor")
    for dt in ("uint8", "bool", "int8", "float32", "complex64"):
        assert ember.is_signed(e.to(getattr(ember, dt))) == torch.is_signed(
            t.to(getattr(torch, dt)))
    assert ember.is_inference(e) == torch.is_inference(t) == e.is_inference() is False
    for value in ([0.0], [3], [[True]]):
        ee, tt = make_pair(np.array(value))
        assert ember.is_nonzero(ee) == torch.is_nonzero(tt) == ee.is_nonzero()
    for value in ([], [1, 2]):
        ee, tt = make_pair(np.array(value))
        _raises_like(lambda: ember.is_nonzero(ee), lambda: torch.is_nonzero(tt), "ambiguous")
    x = ember.ones(2, requires_grad=True)
    assert ember.detach(x).requires_grad is False


# ---------------------------------------------------------------- in-place aliases


@pytest.mark.parametrize("name,args", [
    ("abs_", ()), ("exp_", ()), ("sigmoid_", ()), ("tanh_", ()), ("neg_", ()), ("sqrt_", ()),
    ("clamp_", (-0.5, 0.5)), ("clamp_min_", (0.1,)), ("fill_", (3.0,)), ("zero_", ()),
    ("relu_", ()), ("round_", ()), ("trunc_", ()), ("square_", ()), ("frac_", ()),
    ("nan_to_num_", ()), ("logit_", ()), ("reciprocal_", ()), ("log1p_", ()), ("rsqrt_", ()),
    ("sinc_", ()), ("deg2rad_", ()), ("selu_", ()), ("celu_", (0.5,)),
    ("threshold_", (0.2, -1.0)), ("xlogy_", (2.0,))])
def test_inplace_aliases(name, args):
    a = np.abs(RNG.standard_normal(5)).astype(np.float32) + 0.1
    e, t = make_pair(a)
    re, rt = getattr(ember, name)(e, *args), getattr(torch, name)(t, *args)
    assert re is e and rt is t
    assert_same(e, t)
    _raises_like(lambda: getattr(ember, name)(1.0, *args), lambda: getattr(torch, name)(1.0, *args),
                 "Tensor")
