"""``ember.nn.cpp``: torch's wrappers that present a C++-frontend module as an ``nn.Module``.

ember has no C++ frontend; the wrappers delegate to any object with the same surface
(``_parameters``, ``_buffers``, ``_modules`` mappings, ``forward``), such as a module built
with ``ember.utils.cpp_extension``.

Example::

    >>> from ember.nn.cpp import OrderedDictWrapper
    >>> class Holder: params = {"w": 1}
    >>> list(OrderedDictWrapper(Holder(), "params").keys())
    ['w']
"""

from __future__ import annotations

from .. import nn  # torch.nn.cpp exposes the nn package itself under this name
from .modules.module import Module

__all__ = ["ModuleWrapper", "OrderedDictWrapper", "nn"]


class OrderedDictWrapper:
    """A read-only mapping view of ``getattr(cpp_module, attr)``, re-read on every access.

    Example::

        >>> class Holder: params = {"w": 1}
        >>> OrderedDictWrapper(Holder(), "params")["w"]
        1
    """

    def __init__(self, cpp_module, attr):
        self.cpp_module = cpp_module
        self.attr = attr

    @property
    def cpp_dict(self):
        return getattr(self.cpp_module, self.attr)

    def items(self):
        return self.cpp_dict.items()

    def keys(self):
        return self.cpp_dict.keys()

    def values(self):
        return self.cpp_dict.values()

    def __iter__(self):
        return iter(self.cpp_dict)

    def __len__(self):
        return len(self.cpp_dict)

    def __contains__(self, key):
        return key in self.cpp_dict

    def __getitem__(self, key):
        return self.cpp_dict[key]


class ModuleWrapper(Module):
    """An ``nn.Module`` whose parameters, buffers, submodules and methods are another object's.

    Example::

        >>> inner = ember.nn.Linear(2, 3)
        >>> ModuleWrapper(inner)(ember.ones(1, 2)).shape
        ember.Size([1, 3])
    """

    def __init__(self, cpp_module):
        # set first: Module.__init__ assigns ``training``, which this class forwards to cpp_module
        object.__setattr__(self, "cpp_module", cpp_module)
        super().__init__()
        object.__setattr__(self, "_parameters", OrderedDictWrapper(cpp_module, "_parameters"))
        object.__setattr__(self, "_buffers", OrderedDictWrapper(cpp_module, "_buffers"))
        object.__setattr__(self, "_modules", OrderedDictWrapper(cpp_module, "_modules"))
        for name in dir(cpp_module):
            if not name.startswith("_") and name not in ("training",) and not hasattr(Module, name):
                object.__setattr__(self, name, getattr(cpp_module, name))

    def forward(self, *args, **kwargs):
        return self.cpp_module(*args, **kwargs)

    @property
    def training(self):
        return self.cpp_module.training

    @training.setter
    def training(self, mode):
        self.cpp_module.training = mode

    def __repr__(self):
        return repr(self.cpp_module)
