"""MaskedTensor: a tensor together with a boolean mask of which of its elements are specified.

torch's prototype ``torch.masked.MaskedTensor``. A MaskedTensor is an ordinary
:class:`ember.Tensor` as far as ``isinstance``, shapes, dtypes and autograd are concerned; every
ember function and Tensor method called on it goes to :meth:`MaskedTensor.__torch_function__`,
which applies the operation to the data and gives the result the mask torch's rules say
(``_ops_refs.py`` lists the operations, the other modules here implement the families).

How it is built: the MaskedTensor is a proxy of a plain tensor, its *data*. Every field of
:class:`~ember.Tensor` (the array, the device, the autograd node, ``.grad``...) is read from and
written to the data, so the MaskedTensor has the data's place in the autograd graph: operations
run on the plain data (recorded by autograd as usual) and their results are wrapped again.
Gradients flow back as MaskedTensors (see ``_autograd.py``), so a leaf's ``.grad`` is one, as
in torch.

Example::

    >>> data = ember.tensor([1., 2., 3.])
    >>> mt = masked_tensor(data, ember.tensor([True, False, True]))
    >>> mt * 2
    MaskedTensor(
      [  2.0000,       --,   6.0000]
    )
"""

from __future__ import annotations

import warnings

import ember

from ..._tensor import Tensor

__all__ = ["MaskedTensor", "is_masked_tensor"]

_SUPPORTED_DTYPES = ("float16", "float32", "float64", "bool", "int8", "int16", "int32", "int64")

_PROTOTYPE_WARNING = (
    "The PyTorch API of MaskedTensors is in prototype stage and will change in the near "
    "future. Please open a Github issue for features requests and see our documentation on "
    "the torch.masked module for further information about the project.")
_NON_LEAF_GRAD_WARNING = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
    "attribute won't be populated during autograd.backward(). If you indeed want the .grad "
    "field to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. "
    "If you access the non-leaf Tensor by mistake, make sure you access the leaf Tensor "
    "instead. See github.com/pytorch/pytorch/pull/30531 for more information.")
_REQUIRES_GRAD_WARNING = (
    "It is not recommended to create a MaskedTensor with a tensor that requires_grad. To avoid "
    "this, you can use data.detach().clone()")


def is_masked_tensor(obj, /):
    """True if ``obj`` is a :class:`MaskedTensor`.

    Example::

        >>> is_masked_tensor(ember.ones(2))
        False
    """
    return isinstance(obj, MaskedTensor)


# ---------------------------------------------------------------- checks and construction


def _check_tensors(data, mask):
    """Both are plain strided tensors (ember's sparse tensors are not Tensors)."""
    for value, what in ((data, "data"), (mask, "mask")):
        layout = getattr(value, "layout", ember.strided)
        if layout != ember.strided and not is_masked_tensor(value):
            raise TypeError(f"{what} layout of {layout} is not supported.")
        if is_masked_tensor(value) or not isinstance(value, Tensor):
            raise TypeError(f"{what} must be a Tensor")


def _check_members(data, mask):
    """torch's checks on a MaskedTensor's data and mask, in torch's order."""
    _check_tensors(data, mask)
    if data.layout != mask.layout:
        raise TypeError("data and mask must have the same layout.")
    if type(data) is not type(mask):
        raise TypeError(f"data and mask must have the same type. Got {type(data)} and "
                        f"{type(mask)}")
    if mask.dtype is not ember.bool:
        raise TypeError("mask must have dtype bool.")
    if data.dtype.name not in _SUPPORTED_DTYPES:
        raise TypeError(f"{data.dtype} is not supported in MaskedTensor.")
    if data.dim() != mask.dim():
        raise ValueError("data.dim() must equal mask.dim()")
    if data.size() != mask.size():
        raise ValueError("data.size() must equal mask.size()")


def _make(cls, data, mask):
    """A MaskedTensor over ``data`` and ``mask`` as they are (no copy, no warning)."""
    _check_members(data, mask)
    self = object.__new__(cls)
    fields = self.__dict__
    fields["_masked_data"] = data
    fields["_masked_mask"] = mask
    return self


def _wrap(data, mask):
    """The MaskedTensor that an operation returns: ``data`` (a fresh result, kept as it is,
    with its autograd history) under ``mask``.

    Warns as every MaskedTensor creation in torch does, from this one line, so that Python's
    default filter shows the warning once, not once per operation."""
    warnings.warn(_PROTOTYPE_WARNING, UserWarning, stacklevel=1)
    return _make(MaskedTensor, data, mask)


def _new(cls, data, mask, requires_grad, stacklevel):
    """A leaf MaskedTensor over copies of ``data`` and ``mask``; the warnings point
    ``stacklevel`` frames up (at the user's call)."""
    _check_tensors(data, mask)
    warnings.warn(_PROTOTYPE_WARNING, UserWarning, stacklevel=stacklevel)
    if data.requires_grad:
        warnings.warn(_REQUIRES_GRAD_WARNING, UserWarning, stacklevel=stacklevel)
    _check_members(data, mask)
    copy = data.detach().clone()
    if requires_grad:
        copy.requires_grad_()
    return _make(cls, copy, mask.clone())


def _forward_field(name):
    """A property that reads and writes Tensor's field ``name`` on the MaskedTensor's data."""

    def get(self):
        return getattr(self.__dict__["_masked_data"], name)

    def set(self, value):
        setattr(self.__dict__["_masked_data"], name, value)

    def delete(self):
        delattr(self.__dict__["_masked_data"], name)

    return property(get, set, delete)


# ---------------------------------------------------------------- printing


def _format_element(value):
    return f"{value:8.4f}" if isinstance(value, float) else str(value)


def _indent(text):
    return "\n".join("  " + line for line in text.split("\n"))


def _nested_str(values, keep, depth):
    """torch's layout: one bracketed line per innermost row, ``--`` for masked-out elements,
    padded to the row's widest element (at least 8 wide)."""
    if depth == 1:
        items = [_format_element(v) for v in values]
        width = max(len(item) if kept else 8 for item, kept in zip(items, keep))
        return "[" + ", ".join(item if kept else "--".rjust(width)
                               for item, kept in zip(items, keep)) + "]"
    rows = [_indent(_nested_str(v, k, depth - 1)) for v, k in zip(values, keep)]
    return "[\n" + ",\n".join(rows) + "\n]"


# ---------------------------------------------------------------- the class


class MaskedTensor(Tensor):
    """A tensor whose elements are either specified (mask ``True``) or not (``False``).

    ``MaskedTensor(data, mask, requires_grad=False)`` copies ``data`` and ``mask`` (a bool
    tensor of the same shape). Operations act on the specified elements: pointwise ops keep
    the mask (binary ones require equal masks), reductions skip unspecified elements and
    mask out results with no specified element. Use :func:`masked_tensor` or
    :func:`as_masked_tensor` to make one.

    Example::

        >>> mt = MaskedTensor(ember.tensor([1., 5., 3.]), ember.tensor([True, False, True]))
        >>> mt.amax()
        MaskedTensor(  3.0000, True)
    """

    # ember.save writes it as torch writes its MaskedTensor: an empty wrapper, then its
    # attributes (the data and the mask)
    _saved_as_wrapper_subclass = True

    def __new__(cls, data, mask, requires_grad=False):
        return _new(cls, data, mask, requires_grad, stacklevel=3)

    # ------------------------------------------------------------ data and mask

    def get_data(self):
        """The data, masked-out elements included: a plain tensor sharing this one's memory,
        through which gradients reach this MaskedTensor.

        Example::

            >>> masked_tensor(ember.tensor([1., 2.]), ember.tensor([True, False])).get_data()
            tensor([1., 2.])
        """
        from ...ops.shape import _alias
        from ._autograd import GetData, gated

        data = gated(self, gate=GetData)
        return _alias(data) if data is self._masked_data else data

    def get_mask(self):
        """The boolean mask (``True``: the element is specified).

        Example::

            >>> masked_tensor(ember.tensor([1., 2.]), ember.tensor([True, False])).get_mask()
            tensor([ True, False])
        """
        return self._masked_mask

    def to_tensor(self, value):
        """A plain tensor: the data with every masked-out element replaced by ``value``.

        Example::

            >>> masked_tensor(ember.tensor([1., 2.]), ember.tensor([True, False])).to_tensor(0)
            tensor([1., 0.])
        """
        return self.get_data().masked_fill(~self._masked_mask, value)

    def is_sparse_coo(self):
        """False: ember's MaskedTensors are strided."""
        return self.layout == ember.sparse_coo

    def is_sparse_csr(self):
        """False: ember's MaskedTensors are strided."""
        return self.layout == ember.sparse_csr

    @property
    def is_sparse(self):
        return self.is_sparse_coo() or self.is_sparse_csr()

    def _set_data_mask(self, data, mask):
        """Replace the data and the mask (checked as at creation)."""
        _check_members(data, mask)
        self.__dict__["_masked_data"] = data
        self.__dict__["_masked_mask"] = mask

    @classmethod
    def unary(cls, fn, data, mask):
        """``fn`` applied to ``data``, under ``mask``."""
        return cls(fn(data), mask)

    @staticmethod
    def _from_values(data, mask):
        """The MaskedTensor of :func:`as_masked_tensor`: gradients flow back to ``data``."""
        warnings.warn(_PROTOTYPE_WARNING, UserWarning, stacklevel=3)
        _check_members(data, mask)
        return _make(MaskedTensor, data.clone(), mask.clone())

    # ------------------------------------------------------------ autograd

    @property
    def grad(self):
        """The accumulated gradient, as a MaskedTensor (torch's warning for a tensor that is
        not a leaf and does not retain its gradient)."""
        if not self.is_leaf and not self.retains_grad:
            warnings.warn(_NON_LEAF_GRAD_WARNING, UserWarning, stacklevel=2)
        grad = self._masked_data.grad
        if grad is None or is_masked_tensor(grad):
            return grad
        return _make(MaskedTensor, grad, self._masked_mask)

    @grad.setter
    def grad(self, value):
        Tensor.grad.fset(self._masked_data, value)

    @grad.deleter
    def grad(self):
        self._masked_data._grad = None

    # ------------------------------------------------------------ printing

    def __repr__(self):
        data, mask = self._masked_data.tolist(), self._masked_mask.tolist()
        if self._masked_data.dim() == 0:
            shown = _format_element(data) if mask else "--"
            return f"MaskedTensor({shown}, {mask})"
        text = _nested_str(data, mask, self._masked_data.dim())
        return "MaskedTensor(\n" + _indent(text) + "\n)"

    __str__ = __repr__

    def __lt__(self, other):
        # torch's own __lt__: the left operand's mask, without comparing masks
        return _wrap(self._masked_data < _plain(other), self._masked_mask)

    # ------------------------------------------------------------ dispatch

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        from ._ops_refs import dispatch

        return dispatch(func, args, kwargs or {})


for _name in Tensor.__slots__:
    if _name not in ("__dict__", "__weakref__"):
        setattr(MaskedTensor, _name, _forward_field(_name))
del _name


def _plain(value):
    """The data of a MaskedTensor, anything else as it is."""
    return value._masked_data if is_masked_tensor(value) else value


def _rebuild_masked_tensor(data, mask, requires_grad):
    """Unpickle a MaskedTensor (what ``__reduce_ex__`` names)."""
    result = _make(MaskedTensor, data, mask)
    if requires_grad:
        result.requires_grad_()
    return result
