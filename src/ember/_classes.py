"""``ember.classes``: torch's namespaces of custom C++ classes (``torch.classes``).

In torch a shared library registers TorchScript classes (``torch::class_<...>``) that Python
reaches as ``torch.classes.<namespace>.<Class>``. ember has no TorchScript runtime, so no
library can register one: a namespace is made for any name, as in torch, and asking it for a
class raises torch's ``RuntimeError`` for a class that is not registered.
``load_library`` loads a library into the process all the same (it is
``ember.ops.load_library``; the paths are in ``loaded_libraries``).

Example::

    >>> import ember
    >>> ember.classes.my_namespace.MyStack
    Traceback (most recent call last):
    ...
    RuntimeError: Tried to instantiate class 'my_namespace.MyStack', but it does not exist! Ensure that it is registered via torch::class_
"""  # noqa: E501 - torch's message is one line

from __future__ import annotations

import types


class _ClassNamespace(types.ModuleType):
    """``ember.classes.<namespace>``: the classes registered under one namespace (none)."""

    def __init__(self, name):
        super().__init__(f"ember.classes.{name}")
        self.name = name

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(f"module {self.__name__!r} has no attribute {attr!r}")
        raise RuntimeError(f"Tried to instantiate class '{self.name}.{attr}', but it does not "
                           f"exist! Ensure that it is registered via torch::class_")


class _Classes(types.ModuleType):
    """``ember.classes``: a namespace per name, made on first use.

    Example::

        >>> ember.classes.loaded_libraries is ember.ops.loaded_libraries
        True
    """

    __file__ = "_classes.py"

    def __init__(self):
        super().__init__("ember.classes")

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(f"module 'ember.classes' has no attribute {name!r}")
        namespace = _ClassNamespace(name)
        setattr(self, name, namespace)
        return namespace

    @property
    def loaded_libraries(self):
        """The paths of the libraries loaded with ``load_library`` (shared with ember.ops)."""
        from .ops import loaded_libraries
        return loaded_libraries

    def load_library(self, path):
        """Load the shared library at ``path`` (see ``ember.ops.load_library``).

        Example::

            >>> ember.classes.load_library("/no/such/lib.so")
            Traceback (most recent call last):
            ...
            OSError: Could not load this library: /no/such/lib.so
        """
        from .ops import load_library
        load_library(path)


classes = _Classes()
