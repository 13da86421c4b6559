"""``ember.nested``: batches of tensors of different sizes, as ``torch.nested``.

ember builds the strided layout (torch's default): :func:`nested_tensor`,
:func:`as_nested_tensor`, :func:`narrow`, :func:`to_padded_tensor`, and on the nested tensor the
operators torch runs on that layout (pointwise ops, ``bmm``/``matmul``, ``F.linear``,
``softmax``, ``transpose``, ``reshape``...), with autograd to the components. The jagged
layout (``layout=torch.jagged``, :func:`nested_tensor_from_jagged`, :func:`masked_select`) is
not built: those raise ``NotImplementedError`` naming the strided alternative.

Example::

    >>> nt = ember.nested.nested_tensor([ember.ones(2, 3), ember.ones(1, 3)])
    >>> ember.nested.to_padded_tensor(nt, 0.0)
    tensor([[[1., 1., 1.],
             [1., 1., 1.]],
    <BLANKLINE>
            [[1., 1., 1.],
             [0., 0., 0.]]])
"""

from __future__ import annotations

from .. import _dtype as dt
from .._device import canonical
from .._tensor import Tensor, strided, tensor
from ..nn.functional import pad
from ..ops._registry import write_out
from ..ops.creation import empty
from ..ops.shape import cat, stack
from . import _ops  # noqa: F401  (registers the handlers)
from ._nested_tensor import NestedTensor

__all__ = ["to_padded_tensor", "as_nested_tensor", "nested_tensor", "nested_tensor_from_jagged",
           "narrow", "masked_select"]

_JAGGED = ("ember.nested does not build the jagged layout (torch.jagged); {what}. Use the "
           "strided layout instead: ember.nested.nested_tensor / as_nested_tensor with a list "
           "of tensors (layout=torch.strided, the default).")


def _check_layout(layout):
    if layout is None or layout is strided:
        return
    if getattr(layout, "name", None) == "jagged":
        raise NotImplementedError(_JAGGED.format(what="layout=torch.jagged is not supported"))
    raise RuntimeError(f"Specified layout is unsupported for nested tensors: {layout}")


def _component(item, dtype, device):
    """One component of a new nested tensor: a copy with no autograd history."""
    if isinstance(item, Tensor):
        return item.detach().to(device=device, dtype=dtype, copy=True)
    return tensor(item, dtype=dtype, device=device)


def _check_same_dims(parts, name):
    for index, part in enumerate(parts):
        if part.dim() != parts[0].dim():
            raise RuntimeError(f"All Tensors given to {name} must have the same dimension. "
                               f"Found dimension {part.dim()} for Tensor at index {index} and "
                               f"dimension {parts[0].dim()} for Tensor at index 0.")


def _common_dtype(parts, dtype):
    """torch's rule: the leftmost component's dtype unless ``dtype`` is given."""
    return dtype if dtype is not None else (parts[0].dtype if parts else None)


def nested_tensor(tensor_list, *, dtype=None, layout=None, device=None, requires_grad=False,
                  pin_memory=False):
    """A nested tensor (a new autograd leaf) holding copies of the tensors in ``tensor_list``.

    Example::

        >>> nt = ember.nested.nested_tensor([ember.arange(3.), ember.arange(5.)],
        ...                                 requires_grad=True)
        >>> nt.is_leaf, nt.size(0)
        (True, 2)
    """
    _check_layout(layout)
    if not isinstance(tensor_list, (list, tuple)):
        raise TypeError("Only lists (List[Tensor] and List[List...[Scalar]]) are accepted in "
                        "nested_tensor")
    parts = [_component(item, None, device) for item in tensor_list]
    _check_same_dims(parts, "nested_tensor")
    dtype = _common_dtype(parts, dtype)
    parts = [part.to(dtype) for part in parts]
    nested = NestedTensor(parts, dtype or dt.get_default_dtype(),
                          parts[0].device if parts else canonical(device or "cpu"))
    if requires_grad:
        nested.requires_grad_()
    return nested


def as_nested_tensor(ts, dtype=None, device=None, layout=None):
    """A nested tensor of the tensors ``ts`` (a list, or the rows of one tensor), keeping their
    autograd history: a gradient reaches them.

    Example::

        >>> a = ember.arange(3., requires_grad=True)
        >>> nt = ember.nested.as_nested_tensor([a, ember.arange(5.)])
        >>> nt.is_leaf
        False
    """
    is_list = isinstance(ts, (list, tuple)) and all(isinstance(t, Tensor) for t in ts)
    if isinstance(ts, NestedTensor):
        if layout is None or layout is strided:
            return ts.to(device=device, dtype=dtype) if (device or dtype) else ts
        raise RuntimeError("as_nested_tensor(): Converting between nested tensor layouts is "
                           "not supported")
    if not isinstance(ts, Tensor) and not is_list:
        raise TypeError("as_nested_tensor(): Expected first argument to be a tensor or a list "
                        "/ tuple of tensors ")
    if isinstance(ts, Tensor) and ts.dim() < 2:
        raise RuntimeError("as_nested_tensor(): Expected tensor argument to have dim() > 1")
    _check_layout(layout)
    rows = list(ts.unbind(0)) if isinstance(ts, Tensor) else list(ts)
    _check_same_dims(rows, "nested_tensor")
    dtype = _common_dtype(rows, dtype)
    # copies (torch copies a list into one buffer), differentiable back to the inputs
    parts = [row.to(device=device, dtype=dtype, copy=True) for row in rows]
    if not parts:
        return NestedTensor(parts, dtype or dt.get_default_dtype(), canonical(device or "cpu"))
    return NestedTensor._from_parts(parts)


def to_padded_tensor(input, padding, output_size=None, out=None):
    """A dense tensor of the components, each padded with ``padding`` at the end of every dim
    up to the largest size (or to ``output_size``).

    Example::

        >>> nt = ember.nested.nested_tensor([ember.ones(1), ember.ones(2)])
        >>> ember.nested.to_padded_tensor(nt, -1.0)
        tensor([[ 1., -1.],
                [ 1.,  1.]])
    """
    if not isinstance(input, NestedTensor):
        raise NotImplementedError(
            "Could not run 'aten::to_padded_tensor' with arguments from the 'CPU' backend. "
            "This could be because the operator doesn't exist for this backend, or was "
            "omitted during the selective/custom build process (if using custom build).")
    result = _padded(input, padding, output_size)
    if out is not None:
        return write_out(result, out, "to_padded_tensor")
    return result


def _padded(nested, padding, output_size):
    parts = nested._parts
    if not parts:
        return empty(0, dtype=nested.dtype, device=nested.device)
    widest = [max(sizes) for sizes in zip(*(part.shape for part in parts))]
    if output_size is not None:
        output_size = list(output_size)
        if len(output_size) != nested.dim():
            raise RuntimeError("Length of output_size does not match NestedTensor dims. "
                               "Broadcasting is not supported.")
        if output_size[0] < len(parts) or any(
                want < have for want, have in zip(output_size[1:], widest)):
            raise RuntimeError("Value in output_size is less than NestedTensor padded size. "
                               "Truncation is not supported.")
        widest = output_size[1:]
    padded = [pad(part, _pad_widths(part.shape, widest), value=float(padding))
              for part in parts]
    result = stack(padded)
    if output_size is not None and output_size[0] > len(parts):
        filler = result.new_full((output_size[0] - len(parts), *widest), float(padding))
        result = cat([result, filler])
    return result


def _pad_widths(shape, widest):
    """``F.pad``'s widths (last dim first) that grow ``shape`` to ``widest`` at the end."""
    widths = []
    for have, want in zip(reversed(shape), reversed(widest)):
        widths += [0, want - have]
    return widths


def narrow(tensor, dim, start, length, layout=strided):
    """A nested tensor of the rows ``start .. start + length`` of ``tensor`` along ``dim``
    (torch's strided layout supports ``dim=0`` only).

    Example::

        >>> ember.nested.narrow(ember.zeros(4, 2), 0, 1, 2).size(0)
        2
    """
    if not isinstance(start, (int, Tensor)):
        raise RuntimeError("start must be an integer or a tensor")
    if not isinstance(length, (int, Tensor)):
        raise RuntimeError("length must be an integer or a tensor")
    if layout is not strided and getattr(layout, "name", None) == "jagged":
        raise NotImplementedError(_JAGGED.format(what="narrow with layout=torch.jagged is "
                                                      "not supported"))
    if layout is not strided:
        raise RuntimeError(f"Specified layout is unsupported for nested narrow: {layout}")
    if isinstance(start, Tensor) or isinstance(length, Tensor):
        raise RuntimeError("start and length must be integers for the strided layout NT impl")
    return as_nested_tensor(list(tensor.unbind(0))).narrow(dim, start, length)


def nested_tensor_from_jagged(values, offsets=None, lengths=None, jagged_dim=None,
                              min_seqlen=None, max_seqlen=None):
    """torch's jagged-layout constructor: not built in ember (``NotImplementedError``).

    The strided equivalent of ``nested_tensor_from_jagged(values, offsets)``::

        >>> values, offsets = ember.arange(5.), [0, 2, 5]
        >>> nt = ember.nested.as_nested_tensor(
        ...     [values[a:b] for a, b in zip(offsets[:-1], offsets[1:])])
        >>> nt.size(0)
        2

    Example::

        >>> ember.nested.nested_tensor_from_jagged(ember.ones(3), ember.tensor([0, 1, 3]))
        Traceback (most recent call last):
        NotImplementedError: ember.nested does not build the jagged layout ...
    """
    raise NotImplementedError(_JAGGED.format(
        what="nested_tensor_from_jagged is not supported; split values at the offsets and "
             "pass the pieces to as_nested_tensor"))


def masked_select(tensor, mask):
    """torch's masked select into a jagged nested tensor: not built in ember
    (``NotImplementedError``).

    The strided equivalent keeps the selected elements of each row::

        >>> x, keep = ember.arange(6.).reshape(2, 3), ember.tensor([[1, 0, 1], [0, 0, 1]]) > 0
        >>> nt = ember.nested.as_nested_tensor([r[m] for r, m in zip(x, keep)])
        >>> nt.size(0)
        2

    Example::

        >>> ember.nested.masked_select(ember.ones(2, 2), ember.ones(2, 2) > 0)
        Traceback (most recent call last):
        NotImplementedError: ember.nested does not build the jagged layout ...
    """
    raise NotImplementedError(_JAGGED.format(
        what="masked_select returns a jagged nested tensor; select each row with "
             "row[row_mask] and pass the rows to as_nested_tensor"))
