"""``torch.cpp``: bindings of torch's C++ frontend (``torch::nn::Module`` and its ordered
dicts). ember has no C++ frontend, so these classes exist for ``isinstance`` checks and
refuse to be made; C++ code reaches ember through ``ember.utils.cpp_extension`` instead.

Example::

    >>> import ember.cpp
    >>> isinstance(ember.nn.Linear(1, 1), ember.cpp.nn.Module)
    False
"""

from __future__ import annotations

import types

__all__ = ["OrderedModuleDict", "OrderedTensorDict", "nn"]


class _CppFrontendType:
    """A C++-frontend type: nothing in ember is one, and none can be made."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError(
            f"torch.cpp.{type(self).__qualname__} wraps torch's C++ frontend, which ember does "
            "not have; write the module in Python, or compile C++ operators with "
            "ember.utils.cpp_extension")


class OrderedModuleDict(_CppFrontendType):
    """torch::OrderedDict<std::string, Module> (C++ frontend only)."""


class OrderedTensorDict(_CppFrontendType):
    """torch::OrderedDict<std::string, Tensor> (C++ frontend only)."""


class _CppModule(_CppFrontendType):
    """torch::nn::Module (C++ frontend only)."""


_CppModule.__name__ = _CppModule.__qualname__ = "Module"
nn = types.ModuleType("ember.cpp.nn", "torch.cpp.nn: the C++ frontend's Module type.")
nn.Module = _CppModule
_CppModule.__qualname__ = "nn.Module"
