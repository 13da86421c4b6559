"""Where Tensor's methods come from: :func:`tensor_method`, called next to each operator.

``_tensor.py`` defines the Tensor class itself (its data, metadata, autograd fields and
conversions). Every other method and dunder (``Tensor.add``, ``Tensor.__add__``,
``Tensor.sum``, ``Tensor.view``...) is installed by :func:`tensor_method` in the file that
defines its operator, and recorded in :data:`METHODS`, so one look-up finds it::

    >>> import ember
    >>> from ember.ops._methods import METHODS
    >>> METHODS["view"].__module__       # the file that defines Tensor.view
    'ember.ops.shape.views'

A property (``Tensor.T``, ``Tensor.real``) is recorded by its getter. ``ember.overrides`` later
wraps each method for ``__torch_function__`` (``Tensor.view.__wrapped__`` is the recorded
function); the wrapper's ``__module__`` stays ``ember._tensor`` so that it pickles by reference.
"""

from __future__ import annotations

from .._tensor import Tensor
from ._registry import inplace

#: ``name -> function`` for every Tensor attribute installed outside ``_tensor.py``'s class
#: body (a property by its getter); ``METHODS[name].__module__`` is the defining module.
METHODS = {}


def _implementation(value):
    """The function a reader looks for behind ``value``: a property's getter, a classmethod's
    function, else ``value`` itself."""
    if isinstance(value, property):
        return value.fget
    if isinstance(value, (classmethod, staticmethod)):
        return value.__func__
    return value


def tensor_method(fn=None, name=None):
    """Install ``fn`` as ``Tensor.<name>`` (default ``fn.__name__``), record it in
    :data:`METHODS`, and return ``fn`` unchanged.

    Call it as a function or use it as a decorator, with or without a name (the names here
    are made up)::

        >>> def doubled(self):
        ...     return self * 2
        >>> _ = tensor_method(doubled)                       # Tensor.doubled
        >>> _ = tensor_method(property(doubled), "twice")    # Tensor.twice, a property
        >>> @tensor_method("halved")
        ... def _halved(self):
        ...     return self / 2
        >>> ember.ones(2).doubled().halved(), ember.ones(2).twice
        (tensor([1., 1.]), tensor([2., 2.]))
    """
    if fn is None or isinstance(fn, str):  # a decorator: @tensor_method or @tensor_method("x")
        given = fn if isinstance(fn, str) else name
        return lambda function: tensor_method(function, given)
    name = name or _implementation(fn).__name__
    setattr(Tensor, name, fn)
    METHODS[name] = _implementation(fn)
    return fn


def inplace_method(fn, name=None):
    """The in-place method ``x.<name>_(...)`` of the function ``fn``: ``fn(x, ...)`` written
    back into ``x`` (``name`` defaults to ``fn.__name__``). Declare it under ``fn``, as
    ``tensor_method(inplace_method(index_fill), "index_fill_")``::

        >>> index_fill_ = inplace_method(ember.ops.index.index_fill)
        >>> x = ember.zeros(3)
        >>> index_fill_(x, 0, ember.tensor([1]), 5.0) is x, x
        (True, tensor([0., 5., 0.]))
    """
    name = name or fn.__name__

    def method(self, *args, **kwargs):
        return inplace(fn, self, *args, **kwargs)
    method.__name__ = name + "_"
    method.__doc__ = f"In-place version of :func:`{name}`."
    return method
