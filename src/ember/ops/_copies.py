"""Copies and casts: ``asarray``, ``Tensor.copy_`` / ``fill_`` / ``zero_``, ``clone``,
``_to_copy`` (``Tensor.to``'s copy) and ``contiguous``.

Each write is an op with a derivative when autograd (or a trace) must see it, and a plain
array write otherwise. The factories they share live in :mod:`ember.ops.creation`, which
imports this module at its end. Example::

    >>> import ember
    >>> ember.zeros(2).copy_(ember.ones(2))
    tensor([1., 1.])
"""

from __future__ import annotations

import builtins
import warnings

import numpy as np

from .. import _dtype as dt
from .._device import META, canonical, check_cuda_dtype, check_webgpu_dtype
from .._tensor import (
    Tensor,
    _trace_state,
    channels_last_order,
    memory_format_param,
    preserve_format,
)
from ..autograd import forward_ad as _forward_ad
from ..autograd import grad_mode
from ._fusion import decline
from ._methods import tensor_method
from ._operands import broadcast_shapes
from ._registry import (
    assign_inplace,
    check_inplace_target,
    copyto,
    defop,
)
from ._signature import signature
from ._vmap_rules import batching
from .creation import _real_value, _scalar_value, _torch_name, checked_int, complex_op

# ---------------------------------------------------------------- asarray


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    """A tensor from ``obj``, sharing its memory when it can (``copy=None``), always copying
    (``copy=True``) or refusing to copy (``copy=False``, ValueError when a copy is needed).

    Example::

        >>> a = np.array([1., 2.])
        >>> ember.asarray(a)[0] = 5.; a[0]
        5.0
    """
    from .._tensor import as_tensor, tensor

    want = dt.to_dtype(dtype) if dtype is not None else None
    target = canonical(device) if device is not None else None
    if isinstance(obj, Tensor):
        same = (want is None or want is obj.dtype) and (target is None or target == obj._device)
        if same and not copy:
            result = obj
        elif copy is False:
            if want is not None and want is not obj.dtype:
                raise ValueError(f"can't alias tensor with dtype '{_torch_name(obj.dtype)}' into "
                                 f"dtype '{_torch_name(want)}'.")
            raise ValueError(f"can't alias tensor from device '{obj._device}' to '{target}'.")
        else:
            result = obj.detach().to(dtype=want or obj.dtype, device=target or obj._device,
                                     copy=True)
    elif isinstance(obj, np.ndarray) or hasattr(obj, "__cuda_array_interface__") or \
            hasattr(obj, "__array_interface__"):
        array = obj if isinstance(obj, np.ndarray) or hasattr(obj, "__cuda_array_interface__") \
            else np.asarray(obj)
        source = dt.from_numpy_dtype(array.dtype)
        if copy is False and want is not None and want is not source:
            raise ValueError(f"can't alias NumPy array with dtype '{_torch_name(source)}' into "
                             f"dtype '{_torch_name(want)}'.")
        result = tensor(array, dtype=want, device=target) if copy else \
            as_tensor(array, dtype=want, device=target)
    else:
        if copy is False:
            raise ValueError("can't alias arbitrary sequence into a tensor.")
        result = tensor(obj, dtype=want, device=target)
    if requires_grad:
        if result is obj:
            result = obj.detach()
        result.requires_grad_()
    return result


# ---------------------------------------------------------------- in-place fill and copy


def _copy_meta(dst, src):
    return dst.shape, dst.dtype


@defop("copy_", meta=_copy_meta, save_inputs=False, grad_name="CopyBackwards", kind="creation",
       opt_outs={"onnx": "an in-place write: ONNX graphs have no mutation"})
def copy_op(xp, dst, src):
    if src.dtype.kind == "c" and dst.dtype.kind != "c":
        src = src.real
    result = xp.empty(dst.shape, dst.dtype)
    xp.copyto(result, src, casting="unsafe")
    return result


copy_op.opt_out("batch", "an in-place write: vmap records none and runs the call element by "
                         "element (torch batches it in place)")


@copy_op.defderivative
def _copy_derivative(ctx, grad):
    return None, (grad if ctx.needs_input_grad[1] else None)


@defop("fill_", meta=lambda dst, *, value: (dst.shape, dst.dtype), save_inputs=False,
       grad_name="FillBackward0", kind="creation",
       opt_outs={"onnx": "an in-place write: ONNX graphs have no mutation"})
def fill_op(xp, dst, *, value):
    return xp.full(dst.shape, value, dst.dtype)


fill_op.opt_out("batch", "an in-place write: vmap records none and runs the call element by "
                         "element (torch batches it in place)")


@fill_op.defderivative
def _fill_derivative(ctx, grad, *, value):
    return (None,)


@tensor_method("copy_")
def _copy_(self, src, non_blocking=False):
    """Copy ``src`` into this tensor in place (broadcast, cast, moved across devices).

    Autograd follows it: the gradient flows to ``src``, none to the overwritten values.

    Example::

        >>> x = ember.zeros(2, 3); x.copy_(ember.tensor([1, 2, 3])); x[1]
        tensor([1., 2., 3.])
    """
    if not isinstance(src, Tensor):
        raise TypeError(f"copy_(): argument 'src' (position 1) must be Tensor, not "
                        f"{type(src).__name__}")
    shape = self._data.shape
    if src._data.shape != shape:
        broadcast = broadcast_shapes(shape, src._data.shape)
        if broadcast != shape:
            raise RuntimeError(f"output with shape {list(shape)} doesn't match the broadcast "
                               f"shape {list(broadcast)}")
    if src._device is not self._device:
        if src._device is META and self._device is not META:
            raise NotImplementedError("Cannot copy out of meta tensor; no data!")
        src = src.to(self._device)
    if self._device.type == "cpu" and src._data is not self._data and \
            _partial_overlap(self._data, src._data):
        raise RuntimeError("unsupported operation: some elements of the input tensor and the "
                           "written-to tensor refer to a single memory location. Please clone() "
                           "the tensor before performing the operation.")
    check_inplace_target(self)
    if src._data.dtype.kind == "c" and self._data.dtype.kind != "c":
        warnings.warn("Casting complex values to real discards the imaginary part", UserWarning,
                      stacklevel=2)
    # recorded as an op when autograd or ember.jit.trace must see the write
    if (grad_mode.state.enabled and (self._rg or src._rg)) or _trace_state.tracer is not None:
        return assign_inplace(self, copy_op(self, src), check_dtype=False)
    if self._device is not META:
        data = src._data
        if data.dtype.kind == "c" and self._data.dtype.kind != "c":
            data = data.real
        copyto(self._device, self._data, data)
    self._vc[0] += 1
    if _forward_ad._state.level is not None:
        _forward_ad.write_tangent(self, src)
    return self


def _partial_overlap(a, b):
    """Whether ``a`` and ``b`` share memory other than as the very same elements."""
    if not np.may_share_memory(a, b):
        return False
    if (a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
            and a.strides == b.strides and a.shape == b.shape):
        return False
    try:
        return np.shares_memory(a, b, max_work=100_000)
    except np.exceptions.TooHardError:
        return True


@tensor_method("fill_")
def _fill_(self, value):
    """Fill this tensor with ``value`` (a number or a 0-dim tensor) in place.

    Example::

        >>> ember.zeros(3).fill_(2)
        tensor([2., 2., 2.])
    """
    if isinstance(value, Tensor):
        if value._data.ndim != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor "
                               f"with {value._data.ndim} dimensions.")
        if value._rg or value._device is not self._device or _forward_ad.is_dual(value):
            return _copy_(self, value)
        value = value.item() if value._device is not META else 0
    value = _checked_fill_value(_scalar_value(value), self.dtype)
    check_inplace_target(self, expanded_ok=True)  # torch fills expanded tensors too
    if (grad_mode.state.enabled and self._rg) or _trace_state.tracer is not None:
        return assign_inplace(self, fill_op(self, value=value), check_dtype=False)
    if self._device is not META:
        self._data.fill(value)
    self._vc[0] += 1
    if _forward_ad._state.level is not None:
        _forward_ad.write_tangent(self, None)
    return self


def _checked_fill_value(value, dtype):
    if dtype.category == dt._BOOL:
        return builtins.bool(value)
    if dtype.category == dt._INT:
        return checked_int(value, dtype)
    if not dtype.is_complex and isinstance(value, builtins.complex):
        return _real_value(value, dtype)
    return value


@tensor_method("zero_")
def _zero_(self):
    """Fill this tensor with zeros in place.

    Example::

        >>> ember.ones(2).zero_()
        tensor([0., 0.])
    """
    return _fill_(self, 0)


def fill(input, value):
    """A copy of ``input`` filled with ``value``.

    Example::

        >>> ember.fill(ember.zeros(2), 3.)
        tensor([3., 3.])
    """
    return _fill_(input.clone(), value)


# ---------------------------------------------------------------- copies and casts


@defop("clone", meta=lambda a, **_: (a.shape, a.dtype), save_inputs=False, kind="pointwise-unary",
       onnx="Identity")
def clone_op(xp, a, *, memory_format=None):
    if memory_format in ("channels_last", "channels_last_3d"):
        return _channels_last_copy(xp, a)
    return a.copy(order="C" if memory_format == "contiguous" else "K")


clone_op.defbatch(batching.clone)


def _channels_last_copy(xp, a):
    """A copy of an N, C, spatial... array whose memory runs N, spatial..., C."""
    order = channels_last_order(a.ndim)
    inverse = tuple(order.index(d) for d in builtins.range(a.ndim))
    # copy(), not ascontiguousarray: a fresh array gives size-1 dims torch's strides too
    return a.transpose(order).copy(order="C").transpose(inverse)


@clone_op.defderivative
def _clone_derivative(ctx, grad, **_):
    return (grad,)


clone_op.defjvp(_forward_ad.linear_jvp(clone_op))


@tensor_method
@signature("type_as(Tensor self, Tensor other) -> Tensor")
def type_as(self, other):
    """This tensor converted to ``other``'s dtype.

    Example::

        >>> ember.tensor([1.5]).type_as(ember.tensor([1]))
        tensor([1])
    """
    return self.to(other.dtype)


@tensor_method
@signature("clone(Tensor input, *, MemoryFormat? memory_format=None) -> Tensor",
           any_layout=True)
def clone(input, *, memory_format=None):
    """A copy of ``input`` with its own memory, still connected to the graph.

    Example::

        >>> a = ember.tensor([1, 2]); b = a.clone(); b[0] = 5; a
        tensor([1, 2])
    """
    if memory_format is None:
        return clone_op(input)
    return clone_op(input, memory_format=memory_format_param(memory_format, input.ndim))


def _copy_kernel(xp, a, *, dtype, device):
    target = dtype.np if dtype is not None else a.dtype
    if device is None:
        if xp is not np and hasattr(a, "storage"):
            check_webgpu_dtype(target)
        elif xp is not np:
            check_cuda_dtype(target)
        if xp is np and target.kind in "iub" and a.dtype.kind in "fc":
            with np.errstate(over="ignore", invalid="ignore"):  # torch casts silently
                return a.astype(target, copy=True)
        return a.astype(target, copy=True)
    if device.type == "webgpu":  # host or device array to the webgpu device
        check_webgpu_dtype(target)
        if hasattr(a, "storage"):
            return a.astype(target)
        return device.xp.asarray(a.get() if hasattr(a, "get") else a, target)
    if hasattr(a, "storage") and device.type == "cpu":  # webgpu to the host: a download
        return a.get().astype(target, copy=False)
    if device.type == "cuda":
        check_cuda_dtype(target)
        cupy = device.xp
        with cupy.cuda.Device(device.index):
            if xp is np:  # host to device
                return cupy.asarray(a, dtype=target)
            # device to device: ndarray.copy() lands on the current device, even from another
            return a.copy().astype(target, copy=False)
    if xp is not np:  # to the host: the copy is the op itself
        return xp.asnumpy(a).astype(target, copy=False)
    return a.astype(target, copy=True)


@defop("_to_copy", meta=lambda a, *, dtype, device: (a.shape, dtype or a.dtype),
       save_inputs=False, grad_name="ToCopyBackward0", kind="pointwise-unary", onnx="Identity")
def to_copy_op(xp, a, *, dtype, device):
    return _copy_kernel(xp, a, dtype=dtype, device=device)


@to_copy_op.defderivative
def _to_copy_derivative(ctx, grad, *, dtype, device):
    shape, np_dtype, source_device = ctx._input_meta[0]
    source_dtype = dt.from_numpy_dtype(np_dtype)
    if grad._data.dtype.kind == "c" and np_dtype.kind != "c":
        grad = grad.real
    return (grad.to(dtype=source_dtype, device=source_device),)


to_copy_op.defjvp(_forward_ad.linear_jvp(to_copy_op))


def to_copy(input, dtype=None, device=None):
    """A copy of ``input`` converted to ``dtype`` and/or moved to ``device``."""
    if device is not None and device != input._device:
        result = _move(input, device, dtype)
    else:
        result = to_copy_op(input, dtype=dtype, device=None)
    return result


def _move(input, device, dtype):
    from ..autograd import grad_mode
    from ..autograd.graph import record

    source = input._data
    if device is META:
        array = np.broadcast_to(np.zeros((), (dtype or input.dtype).np), source.shape)
    elif input._device is META:
        raise NotImplementedError("Cannot copy out of meta tensor; no data!")
    else:
        array = _copy_kernel(None, source, dtype=dtype, device=device)
    result = Tensor._make(array, device)
    if input._rg and grad_mode.state.enabled:
        record(to_copy_op, (input,), {"dtype": dtype, "device": device}, result)
    return result


@tensor_method
def contiguous(input, memory_format=None):
    """``input`` itself if contiguous (in ``memory_format``: by default row-major), else a
    copy that is.

    Example::

        >>> ember.zeros(2, 3).t().contiguous().is_contiguous()
        True
    """
    if memory_format is preserve_format:
        if input.is_contiguous():
            return input
        raise RuntimeError("preserve memory format is unsupported by the contiguous operator")
    fmt = memory_format_param(memory_format, input.ndim, "contiguous")
    if fmt == "contiguous":
        return input if input.is_contiguous() else clone_op(input, memory_format="contiguous")
    if input.is_contiguous(memory_format=memory_format):
        return input
    return clone_op(input, memory_format=fmt)


# Fusion (``ops/_fusion.py``): copies and casts (the memory layout or dtype is their point)
# are not steps of a fused element-wise chain
decline("a copy or a cast: its memory layout or dtype is the point, which a fused chain's "
        "one buffer of one dtype does not keep", complex_op, clone_op, to_copy_op)
