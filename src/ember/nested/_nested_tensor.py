"""The nested tensor of the strided layout: a batch of tensors that share their number of dims
and dtype but not their sizes, as torch's ``torch.nested.nested_tensor([...])``.

Why a list of component tensors rather than one buffer: every operation torch allows on a
strided nested tensor works component by component (``relu``, ``bmm``, ``softmax`` over a
non-batch dim...), so running the ordinary ember operator on each component gives the values,
and autograd through them for free: a gradient reaches the components, hence the tensors a
nested tensor was made from with :func:`ember.nested.as_nested_tensor`. The class is not a
``Tensor`` subclass (sparse tensors are, see ``ember/sparse/_base.py``): it answers only
what torch answers on a nested tensor, and every other operator raises torch's
``NotImplementedError``.

Calls reach it in two ways: its own methods (``nt.relu()``, ``nt + 1``), and ember's public
functions (``ember.relu(nt)``, ``F.linear(nt, w)``), which hand a call with a nested argument to
:meth:`NestedTensor.__torch_function__`. Both look the operation up by name in ``_ops.HANDLERS``.
"""

from __future__ import annotations

import inspect

from .. import _dtype as dt
from .._tensor import Tensor, strided
from ..sparse._base import wrap_dim

_NOT_IMPLEMENTED = ("Could not run 'aten::{name}' with arguments from the 'NestedTensorCPU' "
                    "backend. This could be because the operator doesn't exist for this "
                    "backend, or was omitted during the selective/custom build process (if "
                    "using custom build).")
_NO_SIZES = "Internal error: NestedTensorImpl doesn't support sizes. Please file an issue."


def not_implemented(name):
    """torch's error for an operator that has no kernel for nested tensors.

    Example::

        >>> str(not_implemented('exp')).split(' with')[0]
        "Could not run 'aten::exp'"
    """
    return NotImplementedError(_NOT_IMPLEMENTED.format(name=name.strip("_")))


class NestedTensor:
    """A batch of tensors of different sizes (torch's nested tensor, strided layout).

    Build one with :func:`ember.nested.nested_tensor` (a new leaf) or
    :func:`ember.nested.as_nested_tensor` (keeps the components' autograd history).

    Example::

        >>> nt = ember.nested.nested_tensor([ember.ones(2, 3), ember.ones(4, 3)])
        >>> nt.size(0), nt.size(2), nt.dim()
        (2, 3, 3)
        >>> nt.to_padded_tensor(0.0).shape
        ember.Size([2, 4, 3])
    """

    __slots__ = ("_parts", "_owns", "_dtype", "_device", "__weakref__")

    def __init__(self, parts, dtype, device, owns_parts=False):
        self._parts = tuple(parts)
        self._dtype = dtype
        self._device = device
        # True when the components are this tensor's own autograd leaves (a nested leaf that
        # requires grad): then ``.grad`` is read from theirs.
        self._owns = owns_parts

    @classmethod
    def _from_parts(cls, parts, like=None):
        """A nested tensor of ``parts`` (results of an operation: not a leaf)."""
        parts = tuple(parts)
        if parts:
            return cls(parts, parts[0].dtype, parts[0].device)
        return cls(parts, like._dtype, like._device)

    # ------------------------------------------------------------ metadata

    is_nested = True
    is_sparse = False
    is_quantized = False
    is_meta = False

    @property
    def layout(self):
        return strided

    @property
    def dtype(self):
        return self._dtype

    @property
    def device(self):
        return self._device

    @property
    def is_cuda(self):
        return self._device.type == "cuda"

    @property
    def is_cpu(self):
        return self._device.type == "cpu"

    def dim(self):
        """The number of dims, the batch dim included.

        Example::

            >>> ember.nested.nested_tensor([ember.ones(2, 3), ember.ones(4, 3)]).dim()
            3
        """
        return self._parts[0].dim() + 1 if self._parts else 1

    @property
    def ndim(self):
        return self.dim()

    def size(self, dim=None):
        """The size of one dim; a dim where the components differ has none (``RuntimeError``).

        Example::

            >>> nt = ember.nested.nested_tensor([ember.ones(2, 3), ember.ones(4, 3)])
            >>> nt.size(0), nt.size(-1)
            (2, 3)
        """
        if dim is None:
            raise RuntimeError(_NO_SIZES)
        dim = wrap_dim(dim, self.dim())
        if dim == 0:
            return len(self._parts)
        sizes = {part.shape[dim - 1] for part in self._parts}
        if len(sizes) != 1:
            raise RuntimeError(f"Given dimension {dim} is irregular and does not have a size.")
        return sizes.pop()

    @property
    def shape(self):
        raise RuntimeError(_NO_SIZES)

    def stride(self, dim=None):
        raise RuntimeError("Internal error: NestedTensorImpl doesn't support strides. "
                           "Please file an issue.")

    def numel(self):
        """The number of elements of all the components together.

        Example::

            >>> ember.nested.nested_tensor([ember.ones(2, 3), ember.ones(4, 3)]).numel()
            18
        """
        return sum(part.numel() for part in self._parts)

    nelement = numel

    def element_size(self):
        return self._dtype.itemsize

    def is_contiguous(self, memory_format=None):
        """Whether the components lie one after the other, each row-major.

        Example::

            >>> nt = ember.nested.nested_tensor([ember.ones(2, 3), ember.ones(4, 3)])
            >>> nt.is_contiguous(), nt.transpose(1, 2).is_contiguous()
            (True, False)
        """
        return all(part.is_contiguous() for part in self._parts)

    def _nested_tensor_size(self):
        """The sizes of the components, one row each (an int64 tensor), as torch's."""
        from .._tensor import tensor

        return tensor([list(part.shape) for part in self._parts], dtype=dt.int64)

    def _nested_tensor_strides(self):
        """Each component's strides, one row each (an int64 tensor), as torch's."""
        from .._tensor import tensor

        return tensor([list(part.stride()) for part in self._parts], dtype=dt.int64)

    def _as_buffer(self):
        """``(buffer, sizes, strides, offsets)``: the components packed one after the other in
        a 1-D tensor, as torch saves a nested tensor."""
        from .._tensor import tensor
        from ..ops.shape import cat

        flat = [part.detach().contiguous().reshape(-1) for part in self._parts]
        buffer = cat(flat) if flat else tensor([], dtype=self._dtype)
        strides = [list(part.contiguous().stride()) for part in self._parts]
        offsets, start = [], 0
        for piece in flat:
            offsets.append(start)
            start += piece.numel()
        return (buffer, self._nested_tensor_size(), tensor(strides, dtype=dt.int64),
                tensor(offsets, dtype=dt.int64))

    @classmethod
    def _from_buffer(cls, buffer, sizes, strides, offsets):
        """The nested tensor whose components are views of ``buffer`` (torch's
        ``_nested_view_from_buffer``)."""
        parts = [buffer.as_strided(size, stride, offset) for size, stride, offset in
                 zip(sizes.tolist(), strides.tolist(), offsets.tolist())]
        return cls(parts, buffer.dtype, buffer.device)

    def unbind(self, dim=0):
        """The components, as views of this nested tensor.

        Example::

            >>> nt = ember.nested.nested_tensor([ember.ones(2), ember.ones(3)])
            >>> [t.shape for t in nt.unbind()]
            [ember.Size([2]), ember.Size([3])]
        """
        dim = wrap_dim(dim, self.dim())
        if dim != 0:
            raise RuntimeError(f"NestedTensor can only be unbound along dimension 0 got "
                               f"dimension {dim} instead.")
        return tuple(part[...] for part in self._parts)

    def to_padded_tensor(self, padding, output_size=None):
        """A dense tensor of the components padded with ``padding`` (see
        :func:`ember.nested.to_padded_tensor`).

        Example::

            >>> nt = ember.nested.nested_tensor([ember.ones(1), ember.ones(2)])
            >>> nt.to_padded_tensor(0.0)
            tensor([[1., 0.],
                    [1., 1.]])
        """
        from . import to_padded_tensor

        return to_padded_tensor(self, padding, output_size)

    def __iter__(self):
        return iter(self.unbind())

    def __len__(self):
        raise RuntimeError(_NO_SIZES)

    def __bool__(self):
        if self.numel() == 1:
            return bool(next(p for p in self._parts if p.numel()))
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")

    def item(self):
        if self.numel() != 1:
            raise RuntimeError(f"a Tensor with {self.numel()} elements cannot be converted "
                               "to Scalar")
        return next(p for p in self._parts if p.numel()).item()

    __hash__ = object.__hash__

    # ------------------------------------------------------------ autograd

    @property
    def requires_grad(self):
        return any(part.requires_grad for part in self._parts)

    @requires_grad.setter
    def requires_grad(self, flag):
        self.requires_grad_(flag)

    @property
    def is_leaf(self):
        return self._owns or not self.requires_grad

    @property
    def grad_fn(self):
        if self._owns:
            return None
        return next((p.grad_fn for p in self._parts if p.grad_fn is not None), None)

    def requires_grad_(self, requires_grad=True):
        """Make this nested tensor an autograd leaf (or stop it being one).

        Example::

            >>> nt = ember.nested.nested_tensor([ember.ones(2), ember.ones(3)])
            >>> nt.requires_grad_().requires_grad
            True
        """
        if not self.is_leaf:
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to "
                "use a computed variable in a subgraph that doesn't require differentiation "
                "use var_no_grad = var.detach().")
        if requires_grad and not self._owns:
            self._parts = tuple(part.detach() for part in self._parts)
        for part in self._parts:
            part.requires_grad_(requires_grad)
        self._owns = bool(requires_grad)
        return self

    @property
    def grad(self):
        if not self._owns or all(part.grad is None for part in self._parts):
            return None
        from ..ops.creation import zeros_like

        return NestedTensor._from_parts(
            [p.grad if p.grad is not None else zeros_like(p) for p in self._parts], self)

    @grad.setter
    def grad(self, value):
        if value is None:
            for part in self._parts:
                part.grad = None
            return
        if not isinstance(value, NestedTensor):
            raise RuntimeError("assigned grad has data of a different type")
        for part, grad in zip(self._parts, value._parts):
            part.grad = grad

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Send ``gradient`` (a nested tensor of this one's sizes) back to the components.

        Example::

            >>> a = ember.ones(2, requires_grad=True)
            >>> nt = ember.nested.as_nested_tensor([a, ember.ones(3)])
            >>> nt.backward(ember.nested.nested_tensor([ember.ones(2), ember.ones(3)]))
            >>> a.grad
            tensor([1., 1.])
        """
        from ..autograd import backward

        if gradient is None:
            if self.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            gradient = self.__class__._from_parts(
                [part.new_ones(part.shape) for part in self._parts], self)
        if not isinstance(gradient, NestedTensor):
            raise RuntimeError("Expected both self and other to be nested, but got a nested "
                               "self and non-nested other")
        pairs = [(p, g) for p, g in zip(self._parts, gradient._parts) if p.requires_grad]
        if not pairs:
            raise RuntimeError("element 0 of tensors does not require grad and does not have "
                               "a grad_fn")
        backward([p for p, _ in pairs], [g for _, g in pairs], retain_graph=retain_graph,
                 create_graph=create_graph, inputs=inputs)

    # ------------------------------------------------------------ dispatch

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        """ember's public functions hand a call with a nested argument here."""
        from ._ops import HANDLERS

        if not all(issubclass(t, (cls, Tensor)) for t in types):
            return NotImplemented
        handler = HANDLERS.get(func.__name__)
        if handler is None:
            raise not_implemented(func.__name__)
        return handler(func, args, kwargs or {})

    def __getattr__(self, name):
        if name.startswith("_") or not hasattr(Tensor, name):
            raise AttributeError(f"'NestedTensor' object has no attribute '{name}'")
        if _is_property(name):  # Tensor.mT, .nbytes...: computed here, or torch's error
            from ._ops import PROPERTIES

            if name not in PROPERTIES:
                raise not_implemented("permute" if name == "T" else name)  # torch's op
            return PROPERTIES[name](self)
        return self._method(name)

    def _method(self, name):
        """Tensor method ``name`` bound to this nested tensor: the methods torch runs on nested
        tensors go through their handler, the rest raise torch's error when called."""
        from ._ops import HANDLERS

        method = getattr(Tensor, name)
        handler = HANDLERS.get(name)

        def bound(*args, **kwargs):
            if handler is None:
                raise not_implemented(name)
            return handler(method, (self, *args), kwargs)

        bound.__name__ = name
        return bound

    def __repr__(self):
        lines = ["nested_tensor(["]
        for index, part in enumerate(self._parts):
            text = repr(part.detach())
            if part.requires_grad:  # torch marks every component of a nested tensor in a graph
                text = text[:-1] + ", requires_grad=True)"
            comma = "," if index < len(self._parts) - 1 else ""
            lines.append("  " + text.replace("\n", "\n  ") + comma)
        if not self._parts:
            lines.append("")
        close = "])"
        if self._owns:
            close = "], requires_grad=True)"
        elif self.grad_fn is not None:
            close = f"], grad_fn=<{self.grad_fn.name()}>)"
        lines.append(close)
        return "\n".join(lines)


def _is_property(name):
    """Whether ``Tensor.<name>`` is an attribute read without a call (a property)."""
    attribute = inspect.getattr_static(Tensor, name, None)
    return attribute is not None and hasattr(attribute, "__get__") and \
        not callable(attribute) and not isinstance(attribute, (staticmethod, classmethod))


def _install_operators():
    """The Python operators (``nt + 1``, ``-nt``, ``nt @ other``...): each is the Tensor
    operator of that name, run through its handler (or torch's error when it has none)."""

    def make(name):
        def operator(self, *args):
            return self._method(name)(*args)

        operator.__name__ = name
        return operator

    for name in ("__add__", "__radd__", "__iadd__", "__sub__", "__rsub__", "__isub__",
                 "__mul__", "__rmul__", "__imul__", "__truediv__", "__rtruediv__",
                 "__itruediv__", "__matmul__", "__rmatmul__", "__neg__", "__abs__", "__pos__",
                 "__pow__", "__rpow__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__",
                 "__ge__", "__getitem__", "__setitem__", "__floordiv__", "__mod__",
                 "__and__", "__or__", "__xor__", "__invert__"):
        setattr(NestedTensor, name, make(name))


_install_operators()
