"""The placeholders of torch's quantization stack (ember.nn.intrinsic, qat, quantizable,
quantized) raise NotImplementedError naming the torch API, and are AttributeErrors too: code
that probes names (``hasattr``, pickle's search of every loaded module for an object's home,
which torch.compile's kernel cache key runs) behaves as with torch."""

import pickle
import sys

import pytest
import torch

import ember

_NAMESPACES = ["intrinsic", "qat", "quantizable", "quantized"]


@pytest.mark.parametrize("namespace", _NAMESPACES)
def test_a_missing_name_is_both_errors(namespace):
    module = getattr(ember.nn, namespace)
    with pytest.raises(NotImplementedError, match=f"torch.nn.{namespace}.NoSuchName"):
        module.NoSuchName  # noqa: B018
    assert hasattr(module, "NoSuchName") == hasattr(getattr(torch.nn, namespace), "NoSuchName")


def _homeless():
    """A function whose module pickle must search for."""


def test_pickle_finds_a_function_whose_module_is_unknown():
    _homeless.__module__ = None
    try:
        data = pickle.dumps(_homeless)
    finally:
        _homeless.__module__ = __name__
    assert pickle.loads(data) is sys.modules[__name__]._homeless
    assert any(name.startswith("ember.nn.") for name in sys.modules)
