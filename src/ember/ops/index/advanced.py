"""``x[key]`` and ``x[key] = v``: basic indexing as a view (``_slice``), advanced indexing
(``_index``) and its transpose ``_index_put``, parsing a key into both parts, index_put, and
nonzero/nonzero_static/argwhere (a bool mask indexes as its nonzero positions)."""

from __future__ import annotations

import builtins
import numbers
import operator
import warnings
from collections.abc import Sequence

import numpy as np

from ... import _dtype as dt
from ..._device import META
from ..._tensor import Tensor, _trace_state
from ...autograd import forward_ad as _forward_ad
from ...autograd import grad_mode
from .._methods import inplace_method, tensor_method
from .._operands import scalar_tensor
from .._registry import defop, inplace, writable_array, write_out
from .._signature import signature
from .._vmap_rules import batching
from ._kernels import (
    _INDEX_INT,
    _check_range,
    _same_shape_meta,
    _short,
    _to_device,
    _ufunc_at,
    _zeros,
)
from .gather_scatter import _OOB

__all__ = ["index_put", "nonzero", "nonzero_static", "argwhere"]


# ---------------------------------------------------------------- basic indexing (views)


@defop("_slice", save_inputs=False, view=True, grad_name="SliceBackward0", kind="view")
def slice_op(xp, a, *, key):
    result = a[key]
    if None in key:
        # numpy gives inserted dims stride 0; torch (and numpy's reshape) size * next stride
        result = a[tuple(k for k in key if k is not None)].reshape(result.shape)
    return result


@slice_op.defonnx
def _slice_onnx(ctx, x, key):
    """``x[key]`` for a NumPy basic key: ints, slices, None and one Ellipsis."""
    key = key if isinstance(key, tuple) else (key,)
    ndim = len(ctx.in_dims(0))
    used = sum(1 for k in key if k is not None and k is not Ellipsis)
    items = []
    for k in key:
        if k is Ellipsis:
            items += [slice(None)] * (ndim - used)
            used = ndim  # a second Ellipsis stands for nothing
        elif isinstance(k, (int, slice)) or k is None:
            items.append(k)
        else:
            ctx.fail(f"indexing with {type(k).__name__} cannot be exported")
    return ctx.basic_index(x, items)


slice_op.defbatch(batching.basic_index)


@slice_op.defderivative
def _slice_derivative(ctx, grad, *, key):
    return (slice_backward_op(grad, shape=ctx.input_shapes[0], key=key),)


@defop("_slice_backward", meta=lambda g, *, shape, key: (shape, g.dtype), save_inputs=False,
       kind="indexing", opt_outs={"onnx": "a backward kernel: exported models run inference"})
def slice_backward_op(xp, grad, *, shape, key):
    out = xp.zeros(shape, grad.dtype)
    out[key] = grad
    return out


slice_backward_op.defbatch(batching.basic_index_backward)


@slice_backward_op.defderivative
def _slice_backward_derivative(ctx, grad, *, shape, key):
    return (slice_op(grad, key=key),)


@defop("_basic_put", meta=_same_shape_meta, save_inputs=False, grad_name="CopySlices",
       kind="indexing", opt_outs={"onnx": "an in-place write: ONNX graphs have no mutation"})
def basic_put_op(xp, a, v, *, key):
    out = a.copy()
    out[key] = v
    return out


basic_put_op.opt_out("batch", "an in-place write: vmap records none and runs the call element by "
                              "element (torch batches it in place)")


@basic_put_op.defderivative
def _basic_put_derivative(ctx, grad, *, key):
    need_a, need_v = ctx.needs_input_grad
    grad_a = grad_v = None
    if need_a:
        grad_a = basic_put_op(grad, scalar_tensor(0, grad.dtype, grad._device), key=key)
    if need_v:
        grad_v = slice_op(grad, key=key)
    return grad_a, grad_v


# ---------------------------------------------------------------- advanced indexing


def _index_shape(shape, index_shapes, positions):
    """The shape of ``a[key]`` when index arrays of ``index_shapes`` sit at ``positions``."""
    broadcast = tuple(np.broadcast_shapes(*index_shapes))
    first, last = positions[0], positions[-1]
    if last - first + 1 == len(positions):
        return tuple(shape[:first]) + broadcast + tuple(shape[last + 1:])
    return broadcast + tuple(s for d, s in enumerate(shape) if d not in positions)


def _adv_key(ndim, idx, positions):
    key = [slice(None)] * ndim
    for p, i in zip(positions, idx):
        key[p] = i
    return tuple(key)


def _check_adv(xp, shape, idx, positions):
    for k, (p, i) in enumerate(zip(positions, idx)):
        _check_range(xp, i, shape[p], k, _OOB, IndexError, negative=True)


def _index_meta(a, *idx, positions):
    return _index_shape(a.shape, [i.shape for i in idx], positions), a.dtype


def _reads_nothing(a, idx, positions):
    """Torch checks bounds per element read: when nothing is read, nothing is out of range.
    But indices (at least one) into an empty indexed dim are out of range whatever they hold,
    as torch's advanced indexing checks on the shapes alone."""
    if 0 in np.broadcast_shapes(*(i.shape for i in idx)):
        return True
    if a.size:
        return False
    if any(a.shape[p] == 0 for p in positions):
        raise IndexError("index is out of bounds for dimension with size 0")
    return True


@defop("index", meta=_index_meta, grad_name="IndexBackward0", kind="indexing",
       opt_outs={"onnx": "not mapped yet (ONNX's GatherND computes it)"})
def index_op(xp, a, *idx, positions):
    if _reads_nothing(a, idx, positions):
        return xp.empty(_index_shape(a.shape, [i.shape for i in idx], positions), a.dtype)
    _check_adv(xp, a.shape, idx, positions)
    return a[_adv_key(a.ndim, idx, positions)]


index_op.defbatch(batching.advanced_index)


@index_op.defderivative
def _index_derivative(ctx, grad, *, positions):
    a, *idx = ctx.inputs
    grad_a = index_put_op(_zeros(a.shape, grad), grad, *idx, positions=positions,
                          accumulate=True)
    return (grad_a,) + (None,) * len(idx)


index_op.defjvp(_forward_ad.first_linear_jvp(index_op))


@defop("index_put", meta=_same_shape_meta, grad_name="IndexPutBackward0", kind="indexing",
       opt_outs={"onnx": "not mapped yet (ONNX's ScatterND computes it)"})
def index_put_op(xp, a, v, *idx, positions, accumulate):
    out = a.copy()
    if _reads_nothing(out, idx, positions):
        return out
    _check_adv(xp, out.shape, idx, positions)
    key = _adv_key(out.ndim, idx, positions)
    if accumulate:
        _ufunc_at(xp, "add", out, key, v)
    else:
        out[key] = v
    return out


index_put_op.defbatch(batching.advanced_index_put)


@index_put_op.defderivative
def _index_put_derivative(ctx, grad, *, positions, accumulate):
    _, _, *idx = ctx.inputs
    need_a, need_v = ctx.needs_input_grad[:2]
    grad_a = grad_v = None
    if need_a:
        grad_a = grad if accumulate else index_put_op(
            grad, scalar_tensor(0, grad.dtype, grad._device), *idx, positions=positions,
            accumulate=False)
    if need_v:
        grad_v = index_op(grad, *idx, positions=positions)
    return (grad_a, grad_v) + (None,) * len(idx)


# ---------------------------------------------------------------- parsing an index


_BAD_INDEX = ("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables "
              "are valid indices (got {})")
_BAD_TENSOR = "tensors used as indices must be long, int, byte or bool tensors"
_ZERO_DIM = ("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
             "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number")


_SEQUENCE_AS_TUPLE = ("Using a non-tuple sequence for multidimensional indexing is deprecated and "
                      "will be changed in pytorch 2.9; use x[tuple(seq)] instead of x[seq]. In "
                      "pytorch 2.9 this will be interpreted as tensor index, x[torch.tensor(seq)], "
                      "which will result either in an error or a different result")


def _is_sequence(obj):
    """Whether torch reads ``obj`` as a sequence of indices (Python's sequence protocol:
    lists, tuples, ranges, strings, NumPy arrays...), to be turned into an index tensor."""
    return isinstance(obj, (Sequence, np.ndarray)) and not isinstance(obj, Tensor)


def _as_tuple(key, warn=True):
    """The elements of an index, by torch's (NumPy's old) rule: a tuple is a tuple; a short
    non-tuple sequence holding a slice, None, Ellipsis, a tensor or another sequence counts as
    a tuple too (with torch's deprecation warning); anything else is one element.

    >>> _as_tuple([0, slice(None)])  # doctest: +SKIP
    (0, slice(None, None, None))
    """
    if type(key) is tuple:
        return key
    if isinstance(key, Tensor) or type(key) is np.ndarray or not _is_sequence(key) or \
            len(key) >= 32:
        return (key,)
    for k in key:
        if k is None or k is Ellipsis or isinstance(k, (slice, Tensor)) or _is_sequence(k):
            if warn:
                warnings.warn(_SEQUENCE_AS_TUPLE, UserWarning, stacklevel=4)
            return tuple(key)
    return (key,)


def _type_name(item):
    """The type's name as torch's messages give it (``range``, ``numpy.float64``)."""
    kind = type(item)
    if kind.__module__ == "builtins" or kind.__flags__ & _HEAP_TYPE:
        return kind.__name__
    return f"{kind.__module__}.{kind.__name__}"


_HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class defined in Python, named without its module


def _sequence_index(item, device):
    """A sequence used as an index, as the index tensor torch makes of it: bool (a mask) and
    uint8 (a deprecated mask) stay, any other element type becomes int64 (floats truncate)."""
    from ..._tensor import tensor

    if isinstance(item, range):
        return tensor(np.arange(item.start, item.stop, item.step, dtype=np.int64), device=device)
    if isinstance(item, (list, tuple)) and len(item) == 0:
        return tensor([], dtype=dt.int64, device=device)
    result = tensor(item, device=device)
    if result._data.dtype not in (np.bool_, np.uint8, np.int64):
        result = result.to(dt.int64)
    return result


def _slice_bound(v):
    if v is None or type(v) is int:
        return v
    if isinstance(v, Tensor):
        return v.__index__()
    if isinstance(v, numbers.Integral):
        return int(v)
    raise TypeError("slice indices must be integers or None or have an __index__ method")


def _norm_slice(s):
    step = _slice_bound(s.step)
    if step is not None:
        if step == 0:
            raise ValueError("slice step cannot be zero")
        if step < 0:
            raise ValueError("step must be greater than zero")
    return slice(_slice_bound(s.start), _slice_bound(s.stop), step)


def _classify(item, device, tensor_scalars_as_int):
    """(kind, payload) for one element of an index."""
    if item is None:
        return "none", None
    if item is Ellipsis:
        return "ellipsis", None
    if isinstance(item, bool):
        return "bool", item
    if isinstance(item, (int, np.integer)):
        return "int", int(item)
    if isinstance(item, slice):
        return "slice", _norm_slice(item)
    if not isinstance(item, Tensor) and _is_sequence(item):
        item = _sequence_index(item, device)
    if isinstance(item, Tensor):
        kind = item._data.dtype
        if kind == np.uint8:
            warnings.warn("indexing with dtype torch.uint8 is now deprecated, please use a dtype "
                          "torch.bool instead.", UserWarning, stacklevel=4)
            item = item.to(dt.bool)
            kind = item._data.dtype
        if kind == np.bool_:
            if item._data.ndim == 0:
                return "bool", bool(item.item())
            return "mask", _to_device(item, device)
        if kind not in _INDEX_INT:
            raise IndexError(_BAD_TENSOR)
        if item._data.ndim == 0 and tensor_scalars_as_int and item._device is not META:
            return "int", int(item.item())
        return "index", _to_device(item, device)
    if hasattr(type(item), "__index__"):
        return "int", operator.index(item)
    raise IndexError(_BAD_INDEX.format(_type_name(item)))


def _parse(self, key, tensor_scalars_as_int=True):
    """Split an index into a basic key (ints, slices, None, Ellipsis-terminated) applied as a
    view, and advanced index tensors with their dims in that view."""
    device = self._device
    items = [_classify(k, device, tensor_scalars_as_int) for k in _as_tuple(key)]
    shape = self._data.shape
    ndim = len(shape)
    consumed = 0
    ellipses = 0
    for kind, payload in items:
        if kind in ("int", "slice", "index"):
            consumed += 1
        elif kind == "mask":
            consumed += payload._data.ndim
        elif kind == "ellipsis":
            ellipses += 1
    if consumed > ndim:
        if ndim == 0:
            raise IndexError(_ZERO_DIM)
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    basic, idx, positions = [], [], []
    d = v = 0
    for kind, payload in items:
        if kind == "int":
            size = shape[d]
            if not -size <= payload < size:
                raise IndexError(f"index {payload} is out of bounds for dimension {d} with size "
                                 f"{size}")
            basic.append(payload)
            d += 1
        elif kind == "slice":
            basic.append(payload)
            d += 1
            v += 1
        elif kind == "none":
            basic.append(None)
            v += 1
        elif kind == "ellipsis":
            n = ndim - consumed if ellipses else 0  # torch: only the first one expands
            ellipses = 0
            basic.extend([slice(None)] * n)
            d += n
            v += n
        elif kind == "bool":
            from ..creation import zeros

            basic.append(None)
            idx.append(zeros(1 if payload else 0, dtype=dt.int64, device=device))
            positions.append(v)
            v += 1
        elif kind == "index":
            basic.append(slice(None))
            idx.append(payload)
            positions.append(v)
            d += 1
            v += 1
        else:
            mask = payload
            k = mask._data.ndim
            for j in range(k):
                if mask._data.shape[j] != shape[d + j]:
                    raise IndexError(f"The shape of the mask {list(mask.shape)} at index {j} does "
                                     f"not match the shape of the indexed tensor {list(shape)} at "
                                     f"index {d + j}")
            basic.extend([slice(None)] * k)
            idx.extend(nonzero(mask, as_tuple=True))
            positions.extend(range(v, v + k))
            d += k
            v += k
    if len(idx) > 1:
        shapes = [i._data.shape for i in idx]
        try:
            np.broadcast_shapes(*shapes)
        except ValueError:
            raise IndexError("shape mismatch: indexing tensors could not be broadcast together "
                             "with shapes " + ", ".join(str(list(s)) for s in shapes)) from None
    trivial = all(type(b) is slice and b == _FULL for b in basic)
    return tuple(basic) + (Ellipsis,), trivial, idx, tuple(positions)


def _has_tensor_index(key):
    """Whether an index holds index tensors or masks (not just Python bools): torch then
    requires a value of the same dtype."""
    return any(isinstance(k, Tensor) or _is_sequence(k) for k in _as_tuple(key, warn=False))


_FULL = slice(None)


@tensor_method("__getitem__")
def _getitem(self, key):
    """``self[key]``: a view for ints, slices, None and Ellipsis; a copy with index tensors,
    lists or bool masks (torch's rules and errors)."""
    if type(key) is int:
        shape = self._data.shape
        if not shape:
            raise IndexError(_ZERO_DIM)
        if not -shape[0] <= key < shape[0]:
            raise IndexError(f"index {key} is out of bounds for dimension 0 with size "
                             f"{shape[0]}")
        return slice_op(self, key=(key, Ellipsis))
    if type(key) is slice and self._data.ndim:
        return slice_op(self, key=(_norm_slice(key), Ellipsis))
    basic, trivial, idx, positions = _parse(self, key)
    if not idx:
        return slice_op(self, key=basic)
    source = self if trivial else slice_op(self, key=basic)
    return index_op(source, *idx, positions=positions)


def _value_for(self, value, target_shape, advanced, strict=True):
    """``value`` as a tensor (or scalar) of ``self``'s dtype that broadcasts to the target."""
    if not isinstance(value, Tensor):
        if isinstance(value, (numbers.Number, np.generic)):
            return value
        from ..._tensor import tensor

        value = tensor(value, dtype=self.dtype, device=self._device)
    elif value._data.ndim == 0 and value._data.dtype != self._data.dtype and \
            not (value._rg and grad_mode.state.enabled) and value._device is not META:
        return value.item()  # a 0-dim tensor acts as a scalar (cast to self's dtype)
    vshape = value._data.shape
    while len(vshape) > len(target_shape) and vshape[0] == 1:
        vshape = vshape[1:]
    if vshape != value._data.shape:
        value = value.reshape(vshape)
    try:
        ok = np.broadcast_shapes(vshape, target_shape) == tuple(target_shape)
    except ValueError:
        ok = False
    if not ok:
        if advanced:
            raise RuntimeError(f"shape mismatch: value tensor of shape {list(value.shape)} cannot "
                               f"be broadcast to indexing result of shape {list(target_shape)}")
        from ..shape import expand

        expand(value, target_shape)  # raises torch's expand error
        raise RuntimeError(f"expand: cannot broadcast {list(vshape)} to {list(target_shape)}")
    if value._data.dtype != self._data.dtype:
        if advanced and strict:
            raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                               f"{_short(self)} for the destination and {_short(value)} for the "
                               f"source.")
        value = value.to(self.dtype)
    if value._device is not self._device:
        value = value.to(self._device)
    return value


def _functional_put(x, value, basic, trivial, idx, positions, accumulate=False):
    """The value of ``x`` after ``x[key] = value`` (or ``+=`` with ``accumulate``), out of
    place and differentiable w.r.t. ``x`` and ``value``."""
    if not idx:
        return basic_put_op(x, value, key=basic)
    if trivial:
        return index_put_op(x, value, *idx, positions=positions, accumulate=accumulate)
    part = index_put_op(slice_op(x, key=basic), value, *idx, positions=positions,
                        accumulate=accumulate)
    return basic_put_op(x, part, key=basic)


@tensor_method("__setitem__")
def _setitem(self, key, value):
    """``self[key] = value``: writes in place (bumping the version); recorded by autograd as an
    out-of-place put written back, so gradients reach both ``self`` and ``value``."""
    basic, trivial, idx, positions = _parse(self, key)
    view_shape = self._data[basic].shape
    target_shape = _index_shape(view_shape, [i._data.shape for i in idx], positions) if idx \
        else view_shape
    value = _value_for(self, value, target_shape, builtins.bool(idx),
                       strict=builtins.bool(idx) and _has_tensor_index(key))
    # recorded as an op when autograd or ember.jit.trace must see the write
    recording = (grad_mode.state.enabled and (
        self._rg or (isinstance(value, Tensor) and value._rg))) or _trace_state.tracer is not None
    if not recording:
        if self._device is not META:
            xp = self._device.xp
            data = value._data if isinstance(value, Tensor) else value
            if xp is not np and isinstance(value, Tensor):
                data = data.copy()
            view = writable_array(self._data[basic])
            if idx and not _reads_nothing(view, [i._data for i in idx], positions):
                arrays = [i._data for i in idx]
                _check_adv(xp, view.shape, arrays, positions)
                view[_adv_key(view.ndim, arrays, positions)] = data
            elif not idx:
                view[...] = data
        self._vc[0] += 1
        return
    if not isinstance(value, Tensor):
        value = scalar_tensor(value, self.dtype, self._device)
    inplace(_functional_put, self, value, basic, trivial, idx, positions)


# ---------------------------------------------------------------- index_put


@tensor_method
@signature("index_put(Tensor input, PyObject indices, Tensor values, bool accumulate=False) "
           "-> Tensor")
def index_put(input, indices, values, accumulate=False):
    """``input`` with ``values`` put at ``indices`` (a tuple of index tensors, one per leading
    dim); ``accumulate=True`` adds instead, summing repeated indices.

    Example::

        >>> ember.zeros(3).index_put((ember.tensor([0, 0]),), ember.tensor(1.), accumulate=True)
        tensor([2., 0., 0.])
    """
    if not isinstance(indices, (tuple, list)):
        raise TypeError(f"index_put(): argument 'indices' must be tuple of Tensors, not "
                        f"{type(indices).__name__}")
    if not isinstance(values, Tensor):
        raise TypeError(f"index_put(): argument 'values' must be Tensor, not "
                        f"{type(values).__name__}")
    if values._data.dtype != input._data.dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{_short(input)} for the destination and {_short(values)} for the "
                           f"source.")
    for k, i in enumerate(indices):
        if not isinstance(i, Tensor):
            raise TypeError(f"expected Tensor as element {k} in argument 0, but got "
                            f"{type(i).__name__}")
    key = tuple(indices)
    basic, trivial, idx, positions = _parse(input, key, tensor_scalars_as_int=False)
    if not idx:
        values = _value_for(input, values, input._data.shape, True)
        return input + values if accumulate else basic_put_op(input, values, key=basic)
    target = _index_shape(input._data.shape, [i._data.shape for i in idx], positions)
    values = _value_for(input, values, target, True)
    return index_put_op(input, values, *idx, positions=positions,
                        accumulate=builtins.bool(accumulate))


tensor_method(inplace_method(index_put), "index_put_")


# ---------------------------------------------------------------- nonzero / argwhere


def _nonzero_meta(a):
    raise NotImplementedError("The register_meta function for torch.nonzero() raises "
                              "unimplemented by default, as a correct data-independent "
                              "implementation does not exist.")


@defop("nonzero", meta=_nonzero_meta, kind="indexing",
       opt_outs={"onnx": "not mapped yet (ONNX's NonZero computes it)"})
def nonzero_op(xp, a):
    return xp.argwhere(a).astype(np.int64, copy=False)


nonzero_op.opt_out("batch", "its shape depends on the values: vmap runs it element by element")
nonzero_op.opt_out("derivative", "an index result has no gradient")


@defop("nonzero_tuple", meta=_nonzero_meta, multi_output=True, kind="indexing",
       opt_outs={"onnx": "not mapped yet (ONNX's NonZero computes it)"})
def nonzero_tuple_op(xp, a):
    if a.ndim == 0:
        a = a.reshape(1)
    return tuple(i.astype(np.int64, copy=False) for i in xp.nonzero(a))


nonzero_tuple_op.opt_out("batch", "its shape depends on the values: vmap runs it per element")
nonzero_tuple_op.opt_out("derivative", "an index result has no gradient")


@tensor_method
@signature("nonzero(Tensor input, *, Tensor? out=None, bool as_tuple=False) -> Tensor")
def nonzero(input, *, out=None, as_tuple=False):
    """The indices of the non-zero elements: an ``(n, ndim)`` tensor, or with ``as_tuple``
    one 1-D tensor per dim.

    Example::

        >>> ember.nonzero(ember.tensor([0, 3, 0, 5]))
        tensor([[1],
                [3]])
    """
    if as_tuple:
        return nonzero_tuple_op(input)
    return write_out(nonzero_op(input), out, "nonzero")


@tensor_method
def nonzero_static(input, *, size, fill_value=-1):
    """The ``(size, ndim)`` indices of the first ``size`` non-zero elements, rows past the
    last one filled with ``fill_value`` (a fixed output shape, as torch).

    Example::

        >>> ember.nonzero_static(ember.tensor([0, 3, 0]), size=2)
        tensor([[ 1],
                [-1]])
    """
    if size < 0:
        raise RuntimeError(f"nonzero_static: 'size' must be an non-negative integer, but got "
                           f"{size}")
    found = nonzero_op(input)[:size]
    if found.shape[0] == size:
        return found.clone()
    from ..creation import full
    from ..shape import cat

    padding = full((size - found.shape[0], input.dim()), fill_value, dtype=found.dtype,
                   device=found.device)
    return cat([found, padding])


@tensor_method
@signature("argwhere(Tensor input) -> Tensor")
def argwhere(input):
    """The indices of the non-zero elements as an ``(n, ndim)`` tensor.

    Example::

        >>> ember.argwhere(ember.tensor([[0, 1], [1, 0]]))
        tensor([[0, 1],
                [1, 0]])
    """
    return nonzero_op(input)
