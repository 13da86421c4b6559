"""Shared test helpers: PyTorch is the oracle; every test compares ember against it."""

import numpy as np
import pytest
import torch

import ember

torch.set_default_dtype(torch.float32)


def to_torch(t):
    """An ember tensor as a torch tensor with the same values and dtype."""
    if t.dtype is ember.bfloat16:
        return torch.from_numpy(t.detach().float().numpy().copy()).to(torch.bfloat16)
    return torch.from_numpy(np.ascontiguousarray(t.detach().cpu().numpy()).copy())


def to_ember(t):
    """A torch tensor as an ember tensor with the same values and dtype."""
    if t.dtype == torch.bfloat16:
        return ember.tensor(t.detach().float().numpy()).to(ember.bfloat16)
    return ember.tensor(t.detach().numpy().copy())


DTYPE_PAIRS = {
    "bool": (ember.bool, torch.bool), "uint8": (ember.uint8, torch.uint8),
    "int8": (ember.int8, torch.int8), "int16": (ember.int16, torch.int16),
    "int32": (ember.int32, torch.int32), "int64": (ember.int64, torch.int64),
    "float16": (ember.float16, torch.float16), "bfloat16": (ember.bfloat16, torch.bfloat16),
    "float32": (ember.float32, torch.float32), "float64": (ember.float64, torch.float64),
    "complex64": (ember.complex64, torch.complex64),
    "complex128": (ember.complex128, torch.complex128),
}


def torch_dtype(d):
    """The torch dtype with the same name as ember dtype ``d``."""
    return DTYPE_PAIRS[d.name][1]


def assert_same(actual, expected, rtol=None, atol=None, check_dtype=True):
    """Assert an ember result equals torch's: values, shape and dtype (tuples recursively)."""
    if isinstance(expected, (tuple, list)):
        assert isinstance(actual, (tuple, list)), f"expected a sequence, got {type(actual)}"
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_same(a, e, rtol=rtol, atol=atol, check_dtype=check_dtype)
        return
    if not isinstance(expected, torch.Tensor):
        assert actual == expected or (actual != actual and expected != expected), \
            f"{actual} != {expected}"
        return
    assert isinstance(actual, ember.Tensor), f"expected an ember Tensor, got {type(actual)}"
    assert tuple(actual.shape) == tuple(expected.shape), \
        f"shape {tuple(actual.shape)} != torch's {tuple(expected.shape)}"
    if check_dtype:
        assert actual.dtype.name == str(expected.dtype).removeprefix("torch."), \
            f"dtype {actual.dtype} != torch's {expected.dtype}"
    torch.testing.assert_close(to_torch(actual), expected.detach(), rtol=rtol, atol=atol,
                               check_dtype=False, equal_nan=True)


@pytest.fixture(params=["cpu"] + (["cuda"] if ember.cuda.is_available() else []))
def device(request):
    """Every device test runs on cpu, and on cuda when a GPU is present."""
    return request.param
