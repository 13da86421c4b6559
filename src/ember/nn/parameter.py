"""``nn.Parameter`` and ``nn.Buffer``: tensors that modules register automatically."""

from __future__ import annotations

from .._tensor import Tensor
from ..overrides import _disabled_torch_function_impl

__all__ = ["Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer",
           "UninitializedTensorMixin",
           "is_lazy"]


def _share(cls, data):
    """A new ``cls`` instance that shares ``data``'s memory and version counter."""
    obj = object.__new__(cls)
    obj._data = data._data
    obj._device = data._device
    obj._rg = False
    obj.grad_fn = None
    obj._output_nr = 0
    obj._vc = data._vc
    obj._base = None
    return obj


class Parameter(Tensor):
    """A tensor that is a module's learnable parameter (requires grad by default).

    Assigning one as a module attribute registers it in ``module.parameters()``.

    Example::

        >>> w = ember.nn.Parameter(ember.zeros(2))
        >>> w.requires_grad
        True
    """

    _ember_wraps_data = True
    # results of operations on a parameter are plain tensors, as in torch
    __torch_function__ = _disabled_torch_function_impl

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            from ..ops.creation import empty

            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter data must be a Tensor, got {type(data).__name__}")
        if cls is Parameter and getattr(data, "_spec", None) is not None:
            # a DTensor stays one (a DTensor that is a Parameter), as in torch
            from ..distributed.tensor._api import as_parameter

            return as_parameter(data, requires_grad=requires_grad)
        if cls is Parameter and hasattr(type(data), "_as_parameter"):
            return data._as_parameter(requires_grad)  # a sparse tensor: no dense memory
        obj = _share(cls, data.detach())
        if requires_grad:
            obj.requires_grad_(True)
        return obj

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __reduce_ex__(self, protocol):
        from .._utils import _reduce_parameter  # torch's reduction (see ember._utils)

        return _reduce_parameter(self)

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.detach().clone(), self._rg)
        if self.grad is not None:
            result._grad = self.grad.detach().clone()
        memo[id(self)] = result
        return result


def _rebuild_parameter(data, requires_grad):
    """Reads the parameters pickled by earlier ember versions."""
    return Parameter(data, requires_grad)


class Buffer(Tensor):
    """Marks a tensor to be registered as a module buffer when assigned as an attribute.

    Example::

        >>> m.running = ember.nn.Buffer(ember.zeros(3))   # same as register_buffer
    """

    __torch_function__ = _disabled_torch_function_impl

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            from ..ops.creation import empty

            data = empty(0)
        obj = _share(cls, data.detach())
        obj.persistent = persistent
        return obj


class UninitializedTensorMixin:
    """Base of the lazy modules' placeholders: no shape until :meth:`materialize` gives one,
    then the object becomes a ``cls_to_become`` (Parameter or Tensor) in place.

    Example::

        >>> p = UninitializedParameter()
        >>> p.materialize((2, 3)); type(p).__name__, tuple(p.shape)
        ('Parameter', (2, 3))
    """

    cls_to_become = None

    def materialize(self, shape, device=None, dtype=None):
        """Give the placeholder its shape (fresh, uninitialised memory) and its final class."""
        from ..ops.creation import empty

        data = empty(shape, device=device or self._lazy_device, dtype=dtype or self._lazy_dtype)
        self._data, self._device = data._data, data._device
        self.__class__ = self.cls_to_become

    def __repr__(self):
        return f"<{self.__class__.__name__}>"


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A parameter whose shape is not known yet (used by lazy modules)."""

    cls_to_become = Parameter

    def __new__(cls, requires_grad=True, device=None, dtype=None):
        from ..ops.creation import empty

        obj = super().__new__(cls, empty(0, device=device, dtype=dtype), requires_grad)
        obj._lazy_device, obj._lazy_dtype = device, dtype
        return obj


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer whose shape is not known yet (used by lazy modules)."""

    __torch_function__ = _disabled_torch_function_impl
    cls_to_become = Tensor

    def __new__(cls, requires_grad=False, device=None, dtype=None):
        from ..ops.creation import empty

        obj = _share(cls, empty(0, device=device, dtype=dtype))
        obj._lazy_device, obj._lazy_dtype = device, dtype
        return obj


def is_lazy(param):
    """Whether ``param`` is an uninitialized (lazy) parameter or buffer."""
    return isinstance(param, (UninitializedParameter, UninitializedBuffer))
