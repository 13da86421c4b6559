"""dtypes and torch's type promotion, checked pairwise against torch."""

import itertools

import numpy as np
import pytest
import torch

import ember
from conftest import DTYPE_PAIRS, torch_dtype

NAMES = list(DTYPE_PAIRS)


@pytest.mark.parametrize("a,b", list(itertools.product(NAMES, NAMES)))
def test_promote_types_matches_torch(a, b):
    (ea, ta), (eb, tb) = DTYPE_PAIRS[a], DTYPE_PAIRS[b]
    assert torch_dtype(ember.promote_types(ea, eb)) == torch.promote_types(ta, tb)


@pytest.mark.parametrize("a,b", list(itertools.product(NAMES, NAMES)))
def test_can_cast_matches_torch(a, b):
    (ea, ta), (eb, tb) = DTYPE_PAIRS[a], DTYPE_PAIRS[b]
    assert ember.can_cast(ea, eb) == torch.can_cast(ta, tb)


SCALARS = [True, 3, 2.5, 1 + 2j]


def _operands(kind, name):
    e_dtype, t_dtype = DTYPE_PAIRS[name]
    if kind == "dim":
        return ember.zeros(2, dtype=e_dtype), torch.zeros(2, dtype=t_dtype)
    return ember.zeros((), dtype=e_dtype), torch.zeros((), dtype=t_dtype)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("kind", ["dim", "zero"])
@pytest.mark.parametrize("scalar", SCALARS)
def test_result_type_with_scalar(name, kind, scalar):
    e, t = _operands(kind, name)
    expected = _without_complex32(torch.result_type(t, scalar))
    assert torch_dtype(ember.result_type(e, scalar)) == expected


def _without_complex32(d):
    """ember has no complex32 (NumPy lacks it) and uses complex64 there: a documented gap."""
    return torch.complex64 if d == torch.complex32 else d


@pytest.mark.parametrize("a,b", list(itertools.product(NAMES, NAMES)))
def test_result_type_dim_with_zero_dim(a, b):
    e1, t1 = _operands("dim", a)
    e2, t2 = _operands("zero", b)
    assert torch_dtype(ember.result_type(e1, e2)) == _without_complex32(torch.result_type(t1, t2))


@pytest.mark.parametrize("name", ["float16", "bfloat16", "float32", "float64"])
def test_finfo_matches_torch(name):
    e, t = ember.finfo(DTYPE_PAIRS[name][0]), torch.finfo(DTYPE_PAIRS[name][1])
    for field in ("bits", "eps", "max", "min", "tiny", "resolution"):
        assert getattr(e, field) == getattr(t, field), field


@pytest.mark.parametrize("name", ["uint8", "int8", "int16", "int32", "int64"])
def test_iinfo_matches_torch(name):
    e, t = ember.iinfo(DTYPE_PAIRS[name][0]), torch.iinfo(DTYPE_PAIRS[name][1])
    assert (e.bits, e.min, e.max) == (t.bits, t.min, t.max)


def test_finfo_of_int_raises_type_error():
    with pytest.raises(TypeError):
        torch.finfo(torch.int32)
    with pytest.raises(TypeError):
        ember.finfo(ember.int32)


def test_aliases_and_properties():
    assert ember.float is ember.float32 and ember.double is ember.float64
    assert ember.long is ember.int64 and ember.int is ember.int32 and ember.half is ember.float16
    assert ember.cfloat is ember.complex64 and ember.short is ember.int16
    for name in NAMES:
        e, t = DTYPE_PAIRS[name]
        assert e.is_floating_point == t.is_floating_point
        assert e.is_complex == t.is_complex
        assert e.is_signed == t.is_signed
        assert e.itemsize == t.itemsize


def test_default_dtype_roundtrip():
    assert ember.get_default_dtype() is ember.float32
    try:
        ember.set_default_dtype(ember.float64)
        assert ember.tensor([1.5]).dtype is ember.float64
        assert (ember.tensor([1, 2]) / 2).dtype is ember.float64
        assert ember.tensor([1j]).dtype is ember.complex128
    finally:
        ember.set_default_dtype(ember.float32)
    with pytest.raises(TypeError):
        ember.set_default_dtype(ember.int64)


def test_tensor_dtype_inference_matches_torch():
    cases = [[1, 2], [1.0, 2], [True, False], [1j, 2], 3, 2.5, False,
             np.array([1, 2], dtype=np.int32), np.float32(2.0), [[1, 2], [3, 4]]]
    for data in cases:
        assert torch_dtype(ember.tensor(data).dtype) == torch.tensor(data).dtype, data
