"""Creation operators: tensors from sizes and fill values, ``*_like``, ranges, copies and casts.

Factories take torch's keyword arguments (``dtype``, ``device``, ``requires_grad``, ``out``) and
allocate with the device's array module.
"""

from __future__ import annotations

import builtins
import math
import warnings

import numpy as np

from .. import _dtype as dt
from .._device import DEFAULT, META, canonical, check_cuda_dtype, check_webgpu_dtype
from .._shared_memory import is_shared, mark_shared
from .._tensor import (
    Tensor,
    memory_format_param,
)
from ._methods import tensor_method
from ._operands import broadcast_shapes, varargs_or_keyword
from ._registry import (
    autocast_policy,
    copyto,
    defop,
    on_device,
    write_out,
)
from ._signature import signature

__all__ = ["zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like",
           "full_like", "arange", "clone", "to_copy", "empty_strided", "linspace", "logspace",
           "eye", "tril_indices", "triu_indices", "complex", "polar", "scalar_tensor", "asarray",
           "fill"]


def parse_size(size):
    """Sizes given as ``f(2, 3)``, ``f((2, 3))`` or ``f([2, 3])``, checked as torch does."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    elif len(size) == 1 and isinstance(size[0], Tensor):
        size = tuple(size[0].tolist()) if size[0].ndim else (int(size[0]),)
    result = []
    for s in size:
        if isinstance(s, Tensor):
            s = int(s)
        if not isinstance(s, (int, np.integer)) or isinstance(s, builtins.bool):
            raise TypeError(f"empty(): argument 'size' must be tuple of ints, but found element "
                            f"of type {type(s).__name__} at pos {len(result)}")
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: "
                               f"{list(size)}")
        result.append(int(s))
    return tuple(result)


def _require_size(size, name):
    """torch refuses ``zeros()`` with no size at all (``zeros(())`` is a 0-dim tensor)."""
    if not size:
        raise TypeError(f"{name}() missing 1 required positional arguments: \"size\"")
    return parse_size(size)


def _target(dtype, device):
    dtype = dt.to_dtype(dtype) if dtype is not None else dt.get_default_dtype()
    device = canonical(device) if device is not None else DEFAULT[0]
    if device.type == "cuda":
        check_cuda_dtype(dtype)
    elif device.type == "webgpu":
        check_webgpu_dtype(dtype)
    return dtype, device


def _allocate(fill, shape, dtype, device):
    if device is META:
        return np.broadcast_to(np.zeros((), dtype.np), shape)
    xp = device.xp
    if device.type == "cuda":
        check_cuda_dtype(dtype)
        with xp.cuda.Device(device.index):
            return _fill(xp, fill, shape, dtype)
    return _fill(xp, fill, shape, dtype)


def _fill(xp, fill, shape, dtype):
    if fill is None:
        return xp.empty(shape, dtype.np)
    if fill == 0:
        return xp.zeros(shape, dtype.np)
    if dtype.category == dt._BOOL:
        fill = builtins.bool(fill)
    elif dtype.category == dt._INT:
        fill = checked_int(fill, dtype)
    elif not dtype.is_complex and isinstance(fill, builtins.complex):
        fill = _real_value(fill, dtype)
    return xp.full(shape, fill, dtype.np)


_C_NAMES = {"uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int",
            "int64": "int64_t", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
            "float32": "float", "float64": "double", "bool": "bool"}


_INT_RANGES = {d.name: (int(np.iinfo(d.np).min), int(np.iinfo(d.np).max))
               for d in dt.ALL_DTYPES if d.category == dt._INT}


def checked_int(value, dtype):
    """The Python number ``value`` as an integer of the integer ``dtype``, as torch converts it.

    A float (or a complex with no imaginary part) must lie within the dtype's range and is
    truncated toward zero. An integer may also be negative down to ``-max`` for an unsigned
    dtype, where it wraps as in two's complement; anything else raises torch's error.

    Example::

        >>> checked_int(-1, ember.uint8), checked_int(-2.7, ember.int8)
        (255, -2)
    """
    if isinstance(value, builtins.complex):
        value = _real_value(value, dtype)
    if isinstance(value, np.generic):
        value = value.item()
    low, high = _INT_RANGES[dtype.name]
    if isinstance(value, int):  # also bool
        wraps = low == 0 and -high <= value < 0
        if not (low <= value <= high or wraps):
            _overflow(dtype)
        return value % (high + 1) if wraps else int(value)
    if value != value or not low <= value <= high:
        _overflow(dtype)
    return int(value)


def _overflow(dtype):
    raise RuntimeError(f"value cannot be converted to type {_C_NAMES[dtype.name]} without "
                       "overflow")


def _real_value(value, dtype):
    if value.imag != 0:
        _overflow(dtype)
    return value.real


def _finish(result, requires_grad, out, name):
    if requires_grad:
        result.requires_grad_()
    if out is None:
        return result
    return _write_factory_out(result, out, name)


def _write_factory_out(result, out, name):
    """Factories resize ``out=`` silently (no deprecation warning, unlike pointwise ops)."""
    if isinstance(out, Tensor) and out._data.shape != result._data.shape:
        shape = result._data.shape
        if is_shared(out):
            from .._tensor_legacy import resize_shared_output

            resize_shared_output(out, shape)
        else:
            out._data = _allocate(None, shape, out.dtype, out._device)
    return write_out(result, out, name)


def _factory(fill, shape, dtype, device, requires_grad, out, name, pin_memory=False):
    if out is not None and isinstance(out, Tensor):
        dtype = out.dtype if dtype is None else dtype
        device = out._device if device is None else device
    dtype, device = _target(dtype, device)
    result = Tensor._make(_allocate(fill, shape, dtype, device), device)
    if pin_memory:
        result = _pinned(result)
    return _finish(result, requires_grad, out, name)


def _pinned(result):
    """``result`` moved into page-locked memory (``pin_memory=True``; needs a GPU)."""
    from ..cuda.pinned import check_pinning_available

    if result._device.type != "cpu":
        raise RuntimeError("Only dense CPU tensors can be pinned")
    check_pinning_available("pin_memory=True requires a CUDA or other accelerator backend; no "
                            "pinned memory allocator is available on this system.")
    return result.pin_memory()


def zeros(*sizes, size=None, out=None, dtype=None, layout=None, device=None,
          requires_grad=False, pin_memory=False):
    """A tensor of zeros.

    Example::

        >>> ember.zeros(2, 3)
        tensor([[0., 0., 0.],
                [0., 0., 0.]])
    """
    size = varargs_or_keyword("zeros", sizes, size)
    return _factory(0, _require_size(size, "zeros"), dtype, device,
                    requires_grad, out, "zeros", pin_memory)


def ones(*sizes, size=None, out=None, dtype=None, layout=None, device=None,
         requires_grad=False, pin_memory=False):
    """A tensor of ones.

    Example::

        >>> ember.ones(2, dtype=ember.int64)
        tensor([1, 1])
    """
    size = varargs_or_keyword("ones", sizes, size)
    return _factory(1, _require_size(size, "ones"), dtype, device,
                    requires_grad, out, "ones", pin_memory)


def empty(*sizes, size=None, out=None, dtype=None, layout=None, device=None,
          requires_grad=False, pin_memory=False, memory_format=None):
    """An uninitialised tensor (its values are whatever the memory held).

    Example::

        >>> ember.empty(2, 3).shape
        ember.Size([2, 3])
    """
    size = varargs_or_keyword("empty", sizes, size)
    return _factory(None, _require_size(size, "empty"), dtype, device,
                    requires_grad, out, "empty", pin_memory)


def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad=False,
                  pin_memory=False):
    """An uninitialised tensor with the given strides (in elements).

    Example::

        >>> ember.empty_strided((2, 3), (1, 2)).stride()
        (1, 2)
    """
    dtype, device = _target(dtype, device)
    size = parse_size((size,))
    stride = tuple(int(s) for s in stride)
    if len(stride) != len(size):
        raise RuntimeError(f"mismatch in length of strides and shape: {len(stride)} vs "
                           f"{len(size)}")
    if any(s < 0 for s in stride):
        raise RuntimeError("as_strided: Negative strides are not supported at the moment, got "
                           f"strides: {list(stride)}")
    extent = 1 + builtins.sum((s - 1) * st for s, st in zip(size, stride)) if all(size) else 0
    flat = _allocate(None, (extent,), dtype, device)
    if device is META:
        result = Tensor._make(np.broadcast_to(np.zeros((), dtype.np), size), device)
    else:
        array = device.xp.lib.stride_tricks.as_strided(
            flat, size, tuple(s * dtype.itemsize for s in stride))
        result = Tensor._make(array, device)
    return _finish(result, requires_grad, None, "empty_strided")


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None,
                   requires_grad=False, pin_memory=False):
    """An uninitialised dense tensor of ``size`` whose dims lie in memory in the order
    ``physical_layout`` (outermost first).

    Example::

        >>> ember.empty_permuted((2, 3, 4), (2, 0, 1)).stride()
        (3, 1, 6)
    """
    size = parse_size((size,))
    order = [int(d) for d in physical_layout]
    if sorted(order) != list(builtins.range(len(size))):
        raise RuntimeError(f"Number of dimensions in size does not match the length of the "
                           f"physical_layout; or physical_layout is not a permutation: "
                           f"{list(size)} vs {order}")
    physical = empty([size[d] for d in order], dtype=dtype, device=device)
    inverse = sorted(builtins.range(len(order)), key=order.__getitem__)
    return physical.permute(inverse).requires_grad_(requires_grad)


def _fill_dtype(fill_value):
    if isinstance(fill_value, Tensor):
        return fill_value.dtype
    if isinstance(fill_value, np.generic):
        fill_value = fill_value.item()
    return dt.scalar_dtype(fill_value)


def _scalar_value(value):
    if isinstance(value, Tensor):
        if value.numel() != 1:
            raise RuntimeError(f"a Tensor with {value.numel()} elements cannot be converted to "
                               "Scalar")
        return value.item()
    if isinstance(value, np.generic):
        return value.item()
    return value


def full(size, fill_value, *, out=None, dtype=None, layout=None, device=None,
         requires_grad=False, pin_memory=False):
    """A tensor filled with ``fill_value`` (its dtype inferred from the value, as torch does).

    A bool value gives a bool tensor, an int int64, a float the default dtype.

    Example::

        >>> ember.full((2,), 7)
        tensor([7, 7])
    """
    if dtype is None and out is None:
        dtype = _fill_dtype(fill_value)
    fill_value = _scalar_value(fill_value)
    return _factory(fill_value, parse_size((size,)), dtype, device, requires_grad, out, "full",
                    pin_memory)


def scalar_tensor(s, *, dtype=None, layout=None, device=None, requires_grad=False,
                  pin_memory=False):
    """A 0-dim tensor holding the number ``s``, in the default float dtype unless told.

    Example::

        >>> ember.scalar_tensor(3)
        tensor(3.)
    """
    s = _scalar_value(s)
    dtype, device = _target(dtype, device)
    if not dtype.is_complex and isinstance(s, builtins.complex):
        _real_value(s, dtype)
    return _factory(s, (), dtype, device, requires_grad, None, "scalar_tensor")


def _like(input, fill, dtype, device, requires_grad, memory_format=None):
    dtype = dt.to_dtype(dtype) if dtype is not None else input.dtype
    device = canonical(device) if device is not None else input._device
    result = _factory(fill, input._data.shape, dtype, device, False, None, "like")
    result = _lay_out_like(result, input, memory_format)
    return _finish(result, requires_grad, None, "like")


def _lay_out_like(result, input, memory_format):
    """``result`` (fresh, row-major) in the memory order ``memory_format`` asks for: by default
    (``preserve_format``) the order of a dense ``input`` (torch keeps its strides: a
    channels-last input gives a channels-last result)."""
    fmt = memory_format_param(memory_format, input.ndim)
    if result._device is META or input._device is META:
        return result
    if fmt is None:
        if input.is_contiguous() or result._device != input._device or not _is_dense(input):
            return result
        with on_device(result._device):
            array = result._device.xp.empty_like(input._data, dtype=result._data.dtype,
                                                 order="K")
        copyto(result._device, array, result._data)
        result._data = array
        return result
    if fmt == "contiguous":
        return result
    with on_device(result._device):
        result._data = _channels_last_copy(result._device.xp, result._data)
    return result


def _is_dense(t):
    """Non-overlapping and without gaps: a permutation of a row-major layout."""
    expected = 1
    pairs = sorted(((s, st) for s, st in zip(t.shape, t.stride()) if s != 1),
                   key=lambda p: p[1])
    for size, stride in pairs:
        if stride != expected:
            return False
        expected *= size
    return True


@signature("zeros_like(Tensor input, *, ScalarType? dtype=None, Layout? layout=None, "
           "Device? device=None, bool requires_grad=False, MemoryFormat? memory_format=None) "
           "-> Tensor", any_layout=True)
def zeros_like(input, *, dtype=None, layout=None, device=None, requires_grad=False,
               memory_format=None):
    """Zeros with the shape (and by default dtype and device) of ``input``.

    Example::

        >>> ember.zeros_like(ember.tensor([1, 2]))
        tensor([0, 0])
    """
    return _like(input, 0, dtype, device, requires_grad, memory_format)


@signature("ones_like(Tensor input, *, ScalarType? dtype=None, Layout? layout=None, "
           "Device? device=None, bool requires_grad=False, MemoryFormat? memory_format=None) "
           "-> Tensor", any_layout=True)
def ones_like(input, *, dtype=None, layout=None, device=None, requires_grad=False,
              memory_format=None):
    """Ones with the shape (and by default dtype and device) of ``input``.

    Example::

        >>> ember.ones_like(ember.tensor([1., 2.]))
        tensor([1., 1.])
    """
    return _like(input, 1, dtype, device, requires_grad, memory_format)


@signature("empty_like(Tensor input, *, ScalarType? dtype=None, Layout? layout=None, "
           "Device? device=None, bool requires_grad=False, MemoryFormat? memory_format=None) "
           "-> Tensor", any_layout=True)
def empty_like(input, *, dtype=None, layout=None, device=None, requires_grad=False,
               memory_format=None):
    """An uninitialised tensor shaped like ``input``.

    Example::

        >>> ember.empty_like(ember.zeros(2, 2)).shape
        ember.Size([2, 2])
    """
    return _like(input, None, dtype, device, requires_grad, memory_format)


@signature("full_like(Tensor input, Scalar fill_value, *, ScalarType? dtype=None, "
           "Layout? layout=None, Device? device=None, bool requires_grad=False, "
           "MemoryFormat? memory_format=None) -> Tensor", any_layout=True)
def full_like(input, fill_value, *, dtype=None, layout=None, device=None, requires_grad=False,
              memory_format=None):
    """``fill_value`` everywhere, shaped like ``input``.

    Example::

        >>> ember.full_like(ember.zeros(2), 3.5)
        tensor([3.5000, 3.5000])
    """
    return _like(input, _scalar_value(fill_value), dtype, device, requires_grad,
                 memory_format)


def _new_factory(fill, name):
    def new(self, *sizes, size=None, dtype=None, device=None, requires_grad=False,
            layout=None, pin_memory=False):
        shape = _require_size(varargs_or_keyword(name, sizes, size), name)
        return _factory(fill, shape, dtype or self.dtype, device or self._device, requires_grad,
                        None, name)
    new.__name__ = name
    new.__doc__ = f"""A tensor of the given size like :func:`{name[4:]}`, with this tensor's
    dtype and device unless given.

    Example::

        >>> ember.zeros(2, dtype=ember.int32).{name}(3).dtype
        ember.int32
    """
    return new


@tensor_method("new_full")
def _new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False,
              layout=None, pin_memory=False):
    """A tensor of ``size`` filled with ``fill_value``, with this tensor's dtype and device.

    Example::

        >>> ember.zeros(1, dtype=ember.int64).new_full((2,), 3)
        tensor([3, 3])
    """
    return _factory(_scalar_value(fill_value), parse_size((size,)), dtype or self.dtype,
                    device or self._device, requires_grad, None, "new_full")


@tensor_method("new_empty_strided")
def _new_empty_strided(self, size, stride, *, dtype=None, device=None, requires_grad=False,
                       layout=None, pin_memory=False):
    """:func:`empty_strided` with this tensor's dtype and device by default.

    Example::

        >>> ember.zeros(1).new_empty_strided((2, 2), (1, 2)).stride()
        (1, 2)
    """
    return empty_strided(size, stride, dtype=dtype or self.dtype, device=device or self._device,
                         requires_grad=requires_grad)


tensor_method(_new_factory(0, "new_zeros"), "new_zeros")
tensor_method(_new_factory(1, "new_ones"), "new_ones")
tensor_method(_new_factory(None, "new_empty"), "new_empty")


# ---------------------------------------------------------------- ranges


def _number(x):
    if isinstance(x, Tensor):
        return x.item()
    if isinstance(x, np.generic):
        return x.item()
    return x


def _is_int(x):
    return isinstance(x, (int, np.integer)) and not isinstance(x, builtins.bool)


def _range_array(device, dtype, count, values):
    """Place the float64/int64 host or device ``values(xp)`` array as ``dtype`` on ``device``."""
    if device is META:
        return np.broadcast_to(np.zeros((), dtype.np), (count,))
    xp = device.xp
    if device.type == "cuda":
        check_cuda_dtype(dtype)
        with xp.cuda.Device(device.index):
            return values(xp).astype(dtype.np)
    if device.type == "webgpu":  # computed in float64/int64 on the host, uploaded once
        check_webgpu_dtype(dtype)
        return xp.from_host(values(np).astype(dtype.np))
    return values(xp).astype(dtype.np)


def arange(start=0, end=None, step=1, *, out=None, dtype=None, layout=None, device=None,
           requires_grad=False):
    """Values from ``start`` to ``end`` (exclusive) by ``step``; int64 if all are ints.

    The length is ``ceil((end - start) / step)`` computed in double, as in torch.

    Example::

        >>> ember.arange(5)
        tensor([0, 1, 2, 3, 4])
    """
    if end is None:
        start, end = 0, start
    start, end, step = (_number(x) for x in (start, end, step))
    if dtype is None and out is not None and isinstance(out, Tensor):
        dtype = out.dtype
    if dtype is None:
        all_int = all(_is_int(x) or isinstance(x, builtins.bool) for x in (start, end, step))
        dtype = dt.int64 if all_int else dt.get_default_dtype()
    dtype, device = _target(dtype if device is not None or out is None else dtype,
                            device if device is not None or out is None else out._device)
    if dtype.category == dt._BOOL or dtype.is_complex:
        raise NotImplementedError(f"\"arange_cpu\" not implemented for '{_torch_name(dtype)}'")
    fstart, fend, fstep = builtins.float(start), builtins.float(end), builtins.float(step)
    if not (math.isfinite(fstart) and math.isfinite(fend)):
        raise RuntimeError(f"unsupported range: {start} -> {end}")
    if fstep == 0:
        raise RuntimeError("step must be nonzero")
    if not ((fstep > 0 and fend >= fstart) or (fstep < 0 and fend <= fstart)):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    if dtype.is_floating_point:
        count = math.ceil((fend - fstart) / fstep)

        def values(xp):
            return xp.arange(count, dtype=np.float64) * fstep + fstart
    else:
        istart, iend, istep = int(start), int(end), int(step)
        if dtype is dt.int64:
            if istep == 0:
                raise ValueError("step must be nonzero")
            sign = (istep > 0) - (istep < 0)
            count = _trunc_div(iend - istart + istep - sign, istep)
        else:
            count = math.ceil((fend - fstart) / fstep)

        def values(xp):
            return xp.arange(count, dtype=np.int64) * istep + istart
    count = builtins.max(0, count)
    result = Tensor._make(_range_array(device, dtype, count, values), device)
    return _finish(result, requires_grad, out, "arange")


def _trunc_div(a, b):
    """C++ integer division (rounds toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _torch_name(dtype):
    from ._registry import _short_name

    return _short_name(dtype)


def _steps_and_bounds(start, end, steps, name):
    for label, value in (("start", start), ("end", end)):
        if isinstance(value, Tensor) and value._data.ndim != 0:
            raise RuntimeError(f"{name} only supports 0-dimensional start and end tensors, but "
                               f"got {label} with {value._data.ndim} dimension(s).")
    if isinstance(steps, Tensor):
        steps = steps.item()
    if not _is_int(steps):
        raise TypeError(f"{name}() received an invalid combination of arguments - got "
                        f"({type(start).__name__}, {type(end).__name__}, "
                        f"{type(steps).__name__}), but expected (Tensor start, Tensor end, int "
                        "steps, *, Tensor out, torch.dtype dtype, torch.layout layout, "
                        "torch.device device, bool pin_memory, bool requires_grad)")
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    return _number(start), _number(end), int(steps)


def _linspace_values(xp, start, end, steps, compute, fused=True):
    """torch's symmetric formula: the first half counts up from start, the rest down from end.

    With ``fused``, real values are rounded as torch's linspace kernel rounds them (it is
    compiled for AVX2, where each ``start + step * i`` becomes one fused multiply-add;
    logspace's plain loop rounds twice): an integer dtype truncates the values, so the
    rounding decides whether ``3.9999999999999996`` or ``4.0`` is truncated.
    """
    if steps == 1:
        return xp.full((1,), start, dtype=compute)
    if compute.kind == "c":
        index = xp.arange(steps, dtype=compute)
        step = (end - start) / (steps - 1)
        up, down = start + step * index, end - step * (steps - 1 - index)
    else:
        index = xp.arange(steps, dtype=np.float64)
        start, end = builtins.float(start), builtins.float(end)
        step = (end - start) / (steps - 1)
        if fused:
            up = _fused_multiply_add(xp, step, index, start)
            down = _fused_multiply_add(xp, -step, steps - 1 - index, end)
        else:
            up, down = start + step * index, end - step * (steps - 1 - index)
    return xp.where(index < steps // 2, up, down).astype(compute, copy=False)


def _fused_multiply_add(xp, a, b, c):
    """``a * b + c`` rounded once (float64 scalars ``a``, ``c`` and array ``b``), from the
    exact error of the product (Dekker's split) and of the sum (Knuth's two-sum).

    Example::

        >>> _fused_multiply_add(np, -14 / 6, np.array([3.0]), 11.0) < 4  # 11 - 7.0000000000000004
        array([ True])
    """
    split = 134217729.0  # 2**27 + 1 cuts a double into two 26-bit halves
    with np.errstate(over="ignore", invalid="ignore"):
        a_hi = split * a - (split * a - a)
        a_lo = a - a_hi
        b_hi = split * b - (split * b - b)
        b_lo = b - b_hi
        product = a * b
        product_error = ((a_hi * b_hi - product) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo
        total = product + c
        back = total - product
        sum_error = (product - (total - back)) + (c - back)
        fused = total + (sum_error + product_error)
        # Infinite or nan terms leave the plain result (the errors are nan there).
        return xp.where(xp.isfinite(fused), fused, product + c)


def _space_bounds(start, end, steps, dtype):
    """linspace/logspace's ends as torch's kernels take them: converted to an integer
    ``dtype`` first (truncated, range-checked), so the values are spaced between whole
    numbers. One step takes only the start, no step reads neither.

    Example::

        >>> _space_bounds(-3.5, 11.7, 5, ember.int16)
        (-3, 11)
    """
    if dtype.category != dt._INT or steps == 0:
        return start, end
    return checked_int(start, dtype), end if steps == 1 else checked_int(end, dtype)


def _space_dtype(start, end, dtype):
    if dtype is not None:
        return dt.to_dtype(dtype)
    if any(isinstance(v, Tensor) and v.dtype.is_complex for v in (start, end)) or \
            any(isinstance(v, builtins.complex) for v in (start, end)):
        return dt.get_default_dtype().to_complex()
    return dt.get_default_dtype()


def linspace(start, end, steps, *, out=None, dtype=None, layout=None, device=None,
             requires_grad=False):
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive.

    Example::

        >>> ember.linspace(0, 1, 5)
        tensor([0.0000, 0.2500, 0.5000, 0.7500, 1.0000])
    """
    dtype = _space_dtype(start, end, dtype if dtype is not None or out is None else out.dtype)
    start, end, steps = _steps_and_bounds(start, end, steps, "linspace")
    if dtype.category == dt._BOOL:
        raise NotImplementedError("\"linspace_cpu\" not implemented for 'Bool'")
    device = canonical(device) if device is not None else (
        out._device if isinstance(out, Tensor) else canonical("cpu"))
    start, end = _space_bounds(start, end, steps, dtype)
    compute = np.dtype(np.complex128) if dtype.is_complex else np.dtype(np.float64)

    def values(xp):
        result = _linspace_values(xp, start, end, steps, compute)
        return xp.trunc(result) if dtype.category == dt._INT else result
    result = Tensor._make(_range_array(device, dtype, steps, values), device)
    return _finish(result, requires_grad, out, "linspace")


def logspace(start, end, steps, base=10.0, *, out=None, dtype=None, layout=None, device=None,
             requires_grad=False):
    """``steps`` values ``base ** x`` for ``x`` evenly spaced from ``start`` to ``end``.

    Example::

        >>> ember.logspace(0, 2, 3)
        tensor([  1.,  10., 100.])
    """
    dtype = _space_dtype(start, end, dtype if dtype is not None or out is None else out.dtype)
    start, end, steps = _steps_and_bounds(start, end, steps, "logspace")
    if dtype.category == dt._BOOL:
        raise NotImplementedError("\"logspace_cpu\" not implemented for 'Bool'")
    device = canonical(device) if device is not None else (
        out._device if isinstance(out, Tensor) else canonical("cpu"))
    if steps == 1 and dtype.category == dt._INT:  # torch fills in base ** start
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            only = np.power(np.float64(base), np.float64(start))
        return full((1,), checked_int(only.item(), dtype), out=out, dtype=dtype, device=device,
                    requires_grad=requires_grad)
    start, end = _space_bounds(start, end, steps, dtype)
    compute = np.dtype(np.complex128) if dtype.is_complex else np.dtype(np.float64)

    def values(xp):
        exponents = _linspace_values(xp, start, end, steps, compute, fused=False)
        # float_power rounds as the C library's pow (torch's), power's SIMD loop may not.
        power = xp.power if dtype.is_complex else xp.float_power
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            result = power(xp.asarray(base, dtype=compute), exponents)
            if dtype.category == dt._INT:  # powers beyond the dtype's range cast as in C
                return result.astype(dtype.np)
        return result
    result = Tensor._make(_range_array(device, dtype, steps, values), device)
    return _finish(result, requires_grad, out, "logspace")


def eye(n, m=None, *, out=None, dtype=None, layout=None, device=None, requires_grad=False,
        pin_memory=False):
    """A 2-D tensor with ones on the diagonal and zeros elsewhere (``n`` rows, ``m`` columns).

    Example::

        >>> ember.eye(2)
        tensor([[1., 0.],
                [0., 1.]])
    """
    if m is None:
        m = n
    if n < 0:
        raise RuntimeError(f"n must be greater or equal to 0, got {n}")
    if m < 0:
        raise RuntimeError(f"m must be greater or equal to 0, got {m}")
    if out is not None and isinstance(out, Tensor):
        dtype = out.dtype if dtype is None else dtype
        device = out._device if device is None else device
    dtype, device = _target(dtype, device)
    if device is META:
        array = np.broadcast_to(np.zeros((), dtype.np), (n, m))
    elif device.type == "cuda":
        with device.xp.cuda.Device(device.index):
            array = device.xp.eye(n, m, dtype=dtype.np)
    elif device.type == "webgpu":  # made on the host, uploaded once
        array = device.xp.from_host(np.eye(n, m, dtype=dtype.np))
    else:
        array = np.eye(n, m, dtype=dtype.np)
    return _finish(Tensor._make(array, device), requires_grad, out, "eye")


def _tri_indices(row, col, offset, dtype, device, lower, name):
    if row < 0:
        raise RuntimeError(f"row must be non-negative, got{row}")
    if col < 0:
        raise RuntimeError(f"col must be non-negative, got{col}")
    dtype = dt.to_dtype(dtype) if dtype is not None else dt.int64
    if dtype.category != dt._INT:
        raise NotImplementedError(f"\"{name}\" not implemented for '{_torch_name(dtype)}'")
    device = canonical(device) if device is not None else canonical("cpu")
    rows = np.arange(row, dtype=np.int64)[:, None]
    cols = np.arange(col, dtype=np.int64)[None, :]
    mask = (cols - rows <= offset) if lower else (cols - rows >= offset)
    r, c = np.nonzero(mask)
    host = np.stack([r, c]).astype(dtype.np) if r.size else np.zeros((2, 0), dtype.np)
    if device is META:
        return Tensor._make(np.broadcast_to(np.zeros((), dtype.np), host.shape), device)
    if device.type == "cuda":
        with device.xp.cuda.Device(device.index):
            return Tensor._make(device.xp.asarray(host), device)
    if device.type == "webgpu":
        return Tensor._make(device.xp.from_host(host), device)
    return Tensor._make(host, device)


def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The coordinates (2 x N) of the lower triangle of a ``row`` x ``col`` matrix.

    ``offset`` moves the diagonal up (positive) or down (negative).

    Example::

        >>> ember.tril_indices(3, 3)
        tensor([[0, 1, 1, 2, 2, 2],
                [0, 0, 1, 0, 1, 2]])
    """
    return _tri_indices(row, col, offset, dtype, device, True, "tril_indices")


def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The coordinates (2 x N) of the upper triangle of a ``row`` x ``col`` matrix.

    Example::

        >>> ember.triu_indices(3, 3)
        tensor([[0, 0, 0, 1, 1, 2],
                [0, 1, 2, 1, 2, 2]])
    """
    return _tri_indices(row, col, offset, dtype, device, False, "triu_indices")


# ---------------------------------------------------------------- complex and polar


def _complex_meta(re, im):
    return np.broadcast_shapes(re.shape, im.shape), dt.from_numpy_dtype(re.dtype).to_complex()


@defop("complex", meta=_complex_meta, save_inputs=False, kind="pointwise-binary",
       opt_outs={"onnx": "complex numbers: ONNX export handles real dtypes only"})
def complex_op(xp, re, im):
    shape = xp.broadcast_shapes(re.shape, im.shape) if hasattr(xp, "broadcast_shapes") else \
        np.broadcast_shapes(re.shape, im.shape)
    result = xp.empty(shape, np.complex128 if re.dtype == np.float64 else np.complex64)
    result.real = re
    result.imag = im
    return result


@complex_op.defderivative
def _complex_derivative(ctx, grad):
    need_re, need_im = ctx.needs_input_grad
    return (grad.real if need_re else None), (grad.imag if need_im else None)


def _check_complex_parts(a, b, name_a, name_b):
    for x, label in ((a, name_a), (b, name_b)):
        if not isinstance(x, Tensor):
            raise TypeError(f"complex(): argument '{label}' must be Tensor, not "
                            f"{type(x).__name__}")
    ok = (dt.float16, dt.float32, dt.float64)
    if a.dtype not in ok or b.dtype not in ok:
        raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got "
                           f"{_torch_name(a.dtype)} and {_torch_name(b.dtype)}")
    if a.dtype is not b.dtype:
        raise RuntimeError(f"Expected object of scalar type {_torch_name(a.dtype)} but got "
                           f"scalar type {_torch_name(b.dtype)} for second argument")
    if a.dtype is dt.float16:
        raise TypeError("ember has no complex32 (ComplexHalf) dtype: complex() of float16 parts "
                        "is not supported")
    broadcast_shapes(a._data.shape, b._data.shape)


def complex(real, imag, *, out=None):
    """The complex tensor ``real + imag * 1j`` from two float tensors of the same dtype.

    Example::

        >>> ember.complex(ember.tensor([1., 2.]), ember.tensor([3., 4.]))
        tensor([1.+3.j, 2.+4.j])
    """
    _check_complex_parts(real, imag, "real", "imag")
    return write_out(complex_op(real, imag), out, "complex")


@autocast_policy(cpu="fp32")
def polar(abs, angle, *, out=None):
    """The complex tensor with magnitude ``abs`` and phase ``angle``: ``abs * e^(i angle)``.

    Example::

        >>> ember.polar(ember.tensor([2.]), ember.tensor([0.]))
        tensor([2.+0.j])
    """
    _check_complex_parts(abs, angle, "abs", "angle")
    return write_out(complex_op(abs * angle.cos(), abs * angle.sin()), out, "polar")


# ================================================================ toplevel-helper section:
# range (deprecated), vander, diagflat, frombuffer

__all__ += ["range", "vander", "diagflat", "frombuffer", "empty_permuted"]

# NB: ``range`` in this whole module is torch's (defined below): use ``builtins.range``.


def range(start, end, step=1, *, out=None, dtype=None, layout=None, device=None,
          requires_grad=False):
    """Values from ``start`` to ``end`` *inclusive* by ``step``, in the default float dtype
    unless told (deprecated, as in torch: use :func:`arange`, which excludes ``end``).

    Example::

        >>> import warnings; warnings.simplefilter("ignore")
        >>> ember.range(1, 4)
        tensor([1., 2., 3., 4.])
    """
    warnings.warn("torch.range is deprecated and will be removed in a future release because "
                  "its behavior is inconsistent with Python's range builtin. Instead, use "
                  "torch.arange, which produces values in [start, end).", UserWarning,
                  stacklevel=2)
    start, end, step = (_number(x) for x in (start, end, step))
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (step > 0 and end < start) or (step < 0 and end > start):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    count = int(math.floor((end - start) / step)) + 1
    if dtype is None and out is not None and isinstance(out, Tensor):
        dtype = out.dtype
    dtype, device = _target(dtype, device)

    def values(xp):
        return start + xp.arange(count, dtype=np.float64) * step
    result = Tensor._make(_range_array(device, dtype, count, values), device)
    return _finish(result, requires_grad, out, "range")


def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of a 1-D ``x``: column ``j`` is ``x ** (N - 1 - j)`` (or
    ``x ** j`` when ``increasing``); ``N`` defaults to ``len(x)``. Integer and bool inputs give
    int64.

    Example::

        >>> ember.vander(ember.tensor([1, 2, 3]))
        tensor([[1, 1, 1],
                [4, 2, 1],
                [9, 3, 1]])
    """
    if not isinstance(x, Tensor):
        raise TypeError(f"vander(): argument 'x' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    if x.dtype.category <= dt._INT:
        x = x.to(dt.int64)
    if n == 0:
        return x.new_empty((x.shape[0], 0))
    from .reduce import cumprod
    from .shape import cat

    # powers by running products (as torch): exact for integers, differentiable at zero
    ones = x.new_ones((x.shape[0], 1))
    powers = cumprod(cat([ones, x.unsqueeze(1).expand(x.shape[0], n - 1)], 1), 1)
    return powers if increasing else powers.flip(1)


@tensor_method
def diagflat(input, offset=0):
    """A 2-D matrix with the flattened ``input`` on diagonal ``offset``, zeros elsewhere.

    Example::

        >>> ember.diagflat(ember.tensor([[1, 2]]))
        tensor([[1, 0],
                [0, 2]])
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"diagflat(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    from .linalg import diag

    return diag(input.reshape(-1), offset)


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-D CPU tensor sharing memory with an object that exposes the buffer protocol
    (``bytearray``, ``array.array``, ``memoryview``...): ``count`` elements (-1: all) of
    ``dtype`` from byte ``offset``. Read-only buffers (``bytes``) give tensors that refuse
    writes.

    Example::

        >>> import array
        >>> ember.frombuffer(array.array("i", [1, 2, 3]), dtype=ember.int32)
        tensor([1, 2, 3], dtype=ember.int32)
    """
    try:
        view = memoryview(buffer)
    except TypeError:
        raise ValueError("object does not implement Python buffer protocol.") from None
    dtype = dt.to_dtype(dtype)
    length, item = view.nbytes, dtype.itemsize
    if length == 0 or count == 0:
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    if offset < 0 or offset >= length:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than "
                         f"buffer length ({length} bytes) minus 1")
    if count < 0:
        if (length - offset) % item:
            raise ValueError(f"buffer length ({length - offset} bytes) after offset ({offset} "
                             f"bytes) must be a multiple of element size ({item})")
        count = (length - offset) // item
    elif offset + count * item > length:
        raise ValueError(f"requested buffer length ({count} * {item} bytes) after offset "
                         f"({offset} bytes) must not be greater than actual buffer length "
                         f"({length} bytes)")
    array = np.frombuffer(view.cast("B"), dtype=dtype.np, count=count, offset=offset)
    shared = mark_shared(Tensor._make(array, canonical("cpu")))
    return _finish(shared, requires_grad, None, "frombuffer")


# defined after everything here, which it imports
from ._copies import (  # noqa: E402,F401  (moved to _copies.py; importers use this path)
    _channels_last_copy,
    _copy_kernel,
    _move,
    asarray,
    clone,
    clone_op,
    contiguous,
    copy_op,
    fill,
    fill_op,
    to_copy,
    to_copy_op,
)
