"""Containers: Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict."""

from __future__ import annotations

import operator
from collections import OrderedDict
from itertools import islice

from ..._tensor import Tensor
from ..parameter import Parameter
from .module import Module

__all__ = ["Container", "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]


def _index(idx, size, kind):
    idx = operator.index(idx)
    if not -size <= idx < size:
        raise IndexError(f"index {idx} is out of range")
    return idx % size if size else idx


class Container(Module):
    """torch's oldest container: submodules given as keyword arguments (use Sequential or
    ModuleDict in new code).

    Example::

        >>> Container(fc=ember.nn.Linear(2, 2)).fc
        Linear(in_features=2, out_features=2, bias=True)
    """

    def __init__(self, **kwargs):
        super().__init__()
        for key, value in kwargs.items():
            self.add_module(key, value)


class Sequential(Module):
    """Modules applied one after the other; built from modules or an OrderedDict of them.

    Example::

        >>> net = ember.nn.Sequential(ember.nn.Linear(4, 8), ember.nn.ReLU())
        >>> net[0]
        Linear(in_features=4, out_features=8, bias=True)
    """

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, module in args[0].items():
                self.add_module(name, module)
        else:
            for i, module in enumerate(args):
                self.add_module(str(i), module)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        i = _index(idx, len(self), "Sequential")
        return next(islice(self._modules.values(), i, None))

    def __setitem__(self, idx, module):
        key = list(self._modules)[_index(idx, len(self), "Sequential")]
        setattr(self, key, module)

    def __delitem__(self, idx):
        if isinstance(idx, slice):
            for key in list(self._modules)[idx]:
                delattr(self, key)
        else:
            delattr(self, list(self._modules)[_index(idx, len(self), "Sequential")])
        self._modules = OrderedDict((str(i), m) for i, m in enumerate(self._modules.values()))

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __add__(self, other):
        if not isinstance(other, Sequential):
            raise ValueError("add operator supports only objects of Sequential class")
        return Sequential(*self, *other)

    def append(self, module):
        """Add ``module`` at the end."""
        self.add_module(str(len(self)), module)
        return self

    def insert(self, index, module):
        """Insert ``module`` before position ``index``."""
        modules = list(self._modules.values())
        n = len(modules)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        modules.insert(index % (n + 1) if index < 0 else index, module)
        self._modules = OrderedDict((str(i), m) for i, m in enumerate(modules))
        return self

    def extend(self, sequential):
        """Append every module of ``sequential``."""
        for module in sequential:
            self.append(module)
        return self

    def pop(self, key):
        """Remove and return the module at ``key``."""
        module = self[key]
        del self[key]
        return module

    def forward(self, input):
        for module in self._modules.values():
            input = module(input)
        return input


class ModuleList(Module):
    """A list of modules, registered so that their parameters are found.

    Example::

        >>> layers = ember.nn.ModuleList([ember.nn.Linear(2, 2) for _ in range(3)])
        >>> len(list(layers.parameters()))
        6
    """

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])
        return self._modules[str(_index(idx, len(self), "ModuleList"))]

    def __setitem__(self, idx, module):
        setattr(self, str(_index(idx, len(self), "ModuleList")), module)

    def __delitem__(self, idx):
        keys = list(self._modules)
        for key in (keys[idx] if isinstance(idx, slice) else [keys[_index(idx, len(self), "")]]):
            delattr(self, key)
        self._modules = OrderedDict((str(i), m) for i, m in enumerate(self._modules.values()))

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __iadd__(self, modules):
        return self.extend(modules)

    def __add__(self, other):
        return ModuleList(list(self) + list(other))

    def append(self, module):
        """Add ``module`` at the end."""
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        """Append every module in ``modules``."""
        for module in modules:
            self.append(module)
        return self

    def insert(self, index, module):
        """Insert ``module`` before ``index``."""
        modules = list(self._modules.values())
        modules.insert(index, module)
        self._modules = OrderedDict((str(i), m) for i, m in enumerate(modules))

    def pop(self, key):
        """Remove and return the module at ``key``."""
        module = self[key]
        del self[key]
        return module

    def __repr__(self):
        """Like torch: runs of identical consecutive modules print once, as ``(0-2): 3 x ...``."""
        if not self._modules:
            return "ModuleList()"
        from .module import _addindent

        lines, reprs = [], [repr(m) for m in self._modules.values()]
        start = 0
        while start < len(reprs):
            end = start
            while end + 1 < len(reprs) and reprs[end + 1] == reprs[start]:
                end += 1
            text = _addindent(reprs[start], 2)
            if end > start:
                lines.append(f"({start}-{end}): {end - start + 1} x {text}")
            else:
                lines.append(f"({start}): {text}")
            start = end + 1
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"


class ModuleDict(Module):
    """An ordered dict of modules, registered under their keys.

    Example::

        >>> heads = ember.nn.ModuleDict({"cls": ember.nn.Linear(4, 3)})
        >>> list(heads.keys())
        ['cls']
    """

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        del self._modules[key]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key):
        return key in self._modules

    def clear(self):
        """Remove every module."""
        self._modules.clear()

    def pop(self, key):
        """Remove and return the module under ``key``."""
        module = self[key]
        del self[key]
        return module

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def update(self, modules):
        """Add modules from a mapping or an iterable of (key, module) pairs."""
        items = modules.items() if hasattr(modules, "items") else modules
        for key, module in items:
            self[key] = module


class ParameterList(Module):
    """A list of parameters, registered so that ``parameters()`` finds them.

    Example::

        >>> ps = ember.nn.ParameterList([ember.nn.Parameter(ember.zeros(2))])
        >>> len(list(ps.parameters()))
        1
    """

    def __init__(self, values=None):
        super().__init__()
        self._size = 0
        if values is not None:
            self.extend(values)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return ParameterList([self[i] for i in range(len(self))[idx]])
        return getattr(self, str(_index(idx, len(self), "ParameterList")))

    def __setitem__(self, idx, param):
        idx = _index(idx, len(self), "ParameterList")
        if isinstance(param, Tensor) and not isinstance(param, Parameter):
            param = Parameter(param)
        setattr(self, str(idx), param)

    def __len__(self):
        return self._size

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __iadd__(self, parameters):
        return self.extend(parameters)

    def append(self, value):
        """Add a parameter (a plain tensor is wrapped in a Parameter)."""
        self._size += 1
        self[self._size - 1] = value
        return self

    def extend(self, values):
        """Append every value."""
        for value in values:
            self.append(value)
        return self

    def extra_repr(self):
        lines = []
        for i, p in enumerate(self):
            if isinstance(p, Tensor):
                size = "x".join(str(s) for s in p.size())
                kind = "Parameter" if isinstance(p, Parameter) else "Tensor"
                lines.append(f"({i}): {kind} containing: [{p.type()} of size {size}]")
            else:
                lines.append(f"({i}): Object of type: {type(p).__name__}")
        return "\n".join(lines)


class ParameterDict(Module):
    """An ordered dict of parameters, registered under their keys.

    Example::

        >>> pd = ember.nn.ParameterDict({"scale": ember.nn.Parameter(ember.ones(1))})
        >>> list(pd.keys())
        ['scale']
    """

    def __init__(self, parameters=None):
        super().__init__()
        self._keys = {}
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key):
        return getattr(self, key)

    def __setitem__(self, key, value):
        self._keys[key] = None
        if isinstance(value, Tensor) and not isinstance(value, Parameter):
            value = Parameter(value)
        setattr(self, key, value)

    def __delitem__(self, key):
        del self._keys[key]
        delattr(self, key)

    def __len__(self):
        return len(self._keys)

    def __iter__(self):
        return iter(self._keys)

    def __contains__(self, key):
        return key in self._keys

    def keys(self):
        return self._keys.keys()

    def items(self):
        return ((k, self[k]) for k in self._keys)

    def values(self):
        return (self[k] for k in self._keys)

    def pop(self, key):
        """Remove and return the parameter under ``key``."""
        value = self[key]
        del self[key]
        return value

    def get(self, key, default=None):
        return self[key] if key in self else default

    def update(self, parameters):
        """Add parameters from a mapping or an iterable of (key, value) pairs."""
        items = parameters.items() if hasattr(parameters, "items") else parameters
        for key, value in items:
            self[key] = value

    def extra_repr(self):
        lines = []
        for k, p in self.items():
            size = "x".join(str(s) for s in p.size())
            kind = "Parameter" if isinstance(p, Parameter) else "Tensor"
            lines.append(f"({k}): {kind} containing: [{p.type()} of size {size}]")
        return "\n".join(lines)
