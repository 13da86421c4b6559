"""The array module of the webgpu device: the NumPy functions ember's kernels call, on
:class:`~ember.webgpu._array.WebGPUArray`.

ember's operators are written once against an array module ``xp`` (NumPy on the cpu, CuPy on
cuda); on webgpu ``xp`` is this module. What it implements runs as WGSL kernels (generated in
``_kernels.py``); any other NumPy function runs on the CPU (download, NumPy, upload): a
*fallback*, counted in ``ember.webgpu.fallback_ops()`` and warned about once per function.
With ``EMBER_WEBGPU_STRICT=1`` a fallback raises NotImplementedError naming the function, so a
test can prove a workload ran on the GPU. NumPy functions called with no device array at all
(``arange``, ``eye`` with host arguments) are not fallbacks: their result is made on the host
and uploaded, as any tensor created from host data.

Example::

    >>> x = ember.ones(3, device="webgpu")
    >>> (x + 1).cpu()
    tensor([2., 2., 2.])
"""

from __future__ import annotations

import builtins
import functools
import os
import warnings

import numpy as np

from . import _kernels as K
from ._array import Storage, WebGPUArray, contiguous_strides

ndarray = WebGPUArray
_fallback_counts = {}
_warned = set()


# ---------------------------------------------------------------- transfers and fallback


def from_host(array):
    """Upload a NumPy array (any layout) as a new contiguous device array."""
    array = np.asarray(array)
    if not array.flags.c_contiguous:
        array = array.copy()  # (ascontiguousarray would make a 0-dim array 1-dim)
    out = _new(array.shape, array.dtype)
    if array.nbytes:
        out.storage.runtime.upload(out.storage.buffer, array.tobytes())
    return out


def _new(shape, dtype):
    dtype = np.dtype(dtype)
    count = 1
    for n in shape:
        count *= int(n)
    return WebGPUArray.make(Storage(count * dtype.itemsize), shape, dtype)


def note_fallback(name):
    """Count a CPU fallback of ``name``; warn once; raise in strict mode."""
    if os.environ.get("EMBER_WEBGPU_STRICT", "") not in ("", "0"):
        raise NotImplementedError(
            f"ember.webgpu: '{name}' has no WGSL kernel and EMBER_WEBGPU_STRICT=1 forbids "
            f"running it on the CPU")
    _fallback_counts[name] = _fallback_counts.get(name, 0) + 1
    if name not in _warned:
        _warned.add(name)
        warnings.warn(f"ember.webgpu: '{name}' has no WGSL kernel yet; it runs on the CPU "
                      f"(copies to and from the device)", UserWarning, stacklevel=3)


def fallback_counts():
    return dict(_fallback_counts)


def _to_host(value):
    if isinstance(value, WebGPUArray):
        return value.get()
    if isinstance(value, (list, tuple)):
        converted = [_to_host(v) for v in value]
        return type(value)(converted) if isinstance(value, list) else tuple(converted)
    if isinstance(value, dict):
        return {k: _to_host(v) for k, v in value.items()}
    return value


def _has_device_array(value):
    if isinstance(value, WebGPUArray):
        return True
    if isinstance(value, (list, tuple)):
        return builtins.any(_has_device_array(v) for v in value)
    if isinstance(value, dict):
        return builtins.any(_has_device_array(v) for v in value.values())
    return False


def _to_device(value):
    if isinstance(value, np.ndarray):
        return from_host(value)
    if isinstance(value, np.generic):
        return from_host(np.asarray(value))
    if isinstance(value, tuple):
        return tuple(_to_device(v) for v in value)
    if isinstance(value, list):
        return [_to_device(v) for v in value]
    return value


# NumPy functions that write into their first argument
_MUTATORS = {"copyto", "put", "put_along_axis", "place", "putmask", "fill_diagonal", "at",
             "setitem"}


def fallback(function, name=None):
    """``function`` (a NumPy callable) run on host copies of the arguments, results uploaded."""
    name = name or getattr(function, "__name__", repr(function))

    def run(*args, **kwargs):
        if not _has_device_array(args) and not _has_device_array(kwargs):
            return _to_device(function(*args, **kwargs))  # a creation from host data
        note_fallback(name)
        host_args, host_kwargs = _to_host(args), _to_host(kwargs)
        result = function(*host_args, **host_kwargs)
        out = kwargs.get("out")
        if isinstance(out, tuple):
            out = out[0] if len(out) == 1 else None
        if isinstance(out, WebGPUArray):
            _write_back(out, host_kwargs["out"] if not isinstance(host_kwargs["out"], tuple)
                        else host_kwargs["out"][0])
            return out
        if name.rsplit(".", 1)[-1] in _MUTATORS and isinstance(args[0], WebGPUArray):
            _write_back(args[0], host_args[0])
        return _to_device(result)
    run.__name__ = name
    return run


def _write_back(target, host):
    copyto(target, from_host(np.asarray(host)))


class _Namespace:
    """A NumPy submodule (``xp.linalg``, ``xp.fft``, ``xp.random``): every function falls
    back."""

    def __init__(self, module, prefix, **overrides):
        self._module, self._prefix = module, prefix
        self.__dict__.update(overrides)

    def __getattr__(self, name):
        value = getattr(self._module, name)
        if callable(value) and not isinstance(value, type):
            return fallback(value, f"{self._prefix}.{name}")
        return value


def lookup(func):
    """This module's version of the NumPy function ``func`` (``__array_function__``)."""
    module = getattr(func, "__module__", "") or ""
    name = func.__name__
    if module in ("numpy", "numpy.core.multiarray", "numpy._core.multiarray") or \
            module.startswith("numpy._core") or module.startswith("numpy.core"):
        own = globals().get(name)
        if callable(own):
            return own
    return fallback(func, f"{module}.{name}" if module not in ("numpy",) else name)


def __getattr__(name):
    value = getattr(np, name)
    if isinstance(value, np.ufunc) or (callable(value) and not isinstance(value, type)):
        return fallback(value, name)
    return value


# ---------------------------------------------------------------- creation


def empty(shape, dtype=float, order="C", **_):
    return _new(_shape(shape), np.dtype(dtype))


def _shape(shape):
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(int(n) for n in shape)


def full(shape, fill_value, dtype=None, order="C", **_):
    if isinstance(fill_value, WebGPUArray):
        return broadcast_to(fill_value, _shape(shape)).astype(dtype or fill_value.dtype)
    dtype = np.dtype(dtype) if dtype is not None else np.asarray(fill_value).dtype
    shape = _shape(shape)
    if dtype in K.COMPUTE and len(shape) <= K.MAX_DIMS:
        value = np.asarray(fill_value).astype(dtype)[()].item()  # NumPy's cast of the value
        result = _elementwise("a", [value], K.COMPUTE[dtype], dtype, shape=shape)
        if result is not None:
            return result
    out = _new(shape, dtype)
    copyto(out, fill_value)
    return out


def zeros(shape, dtype=float, order="C", **_):
    out = _new(_shape(shape), np.dtype(dtype))
    if out.size:
        runtime = out.storage.runtime
        runtime.clear(out.storage.buffer)
    return out


def ones(shape, dtype=float, order="C", **_):
    return full(shape, 1, dtype)


def empty_like(a, dtype=None, order="K", subok=True, shape=None, **_):
    return empty(a.shape if shape is None else shape, dtype or a.dtype)


def zeros_like(a, dtype=None, order="K", subok=True, shape=None, **_):
    return zeros(np.shape(a) if shape is None else shape, dtype or _dtype_of(a))


def ones_like(a, dtype=None, order="K", subok=True, shape=None, **_):
    return full(np.shape(a) if shape is None else shape, 1, dtype or _dtype_of(a))


def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, **_):
    return full(np.shape(a) if shape is None else shape, fill_value, dtype or _dtype_of(a))


def _dtype_of(a):
    return a.dtype if hasattr(a, "dtype") else np.asarray(a).dtype


def shape(a):
    return a.shape if isinstance(a, WebGPUArray) else np.shape(a)


def ndim(a):
    return a.ndim if isinstance(a, WebGPUArray) else np.ndim(a)


def size(a, axis=None):
    return a.size if axis is None else a.shape[axis]


def asarray(a, dtype=None, order=None, copy=None, **_):
    if isinstance(a, WebGPUArray):
        if dtype is None or np.dtype(dtype) == a.dtype:
            return a.copy() if copy else a
        return a.astype(dtype)
    return from_host(np.asarray(a, dtype=dtype))


def array(a, dtype=None, copy=True, order="K", **_):
    if isinstance(a, WebGPUArray):
        return a.astype(dtype or a.dtype)
    return from_host(np.array(a, dtype=dtype))


def ascontiguousarray(a, dtype=None, **_):
    a = asarray(a)
    if dtype is not None and np.dtype(dtype) != a.dtype:
        return a.astype(dtype)
    return a if a.is_c_contiguous() else ascontiguous_copy(a)


def may_share_memory(a, b, max_work=None):
    return (isinstance(a, WebGPUArray) and isinstance(b, WebGPUArray)
            and a.storage is b.storage)


shares_memory = may_share_memory


def asnumpy(a):
    return a.get() if isinstance(a, WebGPUArray) else np.asarray(a)


# ---------------------------------------------------------------- views


def reshape(a, shape, order="C", **_):
    a = asarray(a)
    shape = list(_shape(shape))
    if -1 in shape:
        known = 1
        for n in shape:
            if n != -1:
                known *= n
        shape[shape.index(-1)] = a.size // known if known else 0
    if int(np.prod(shape)) != a.size:
        raise ValueError(f"cannot reshape array of size {a.size} into shape {tuple(shape)}")
    strides = _view_strides(a, shape)
    if strides is None:
        a = ascontiguous_copy(a)
        strides = contiguous_strides(shape)
    return a.view_of(shape, strides, a.offset)


def _view_strides(a, shape):
    """Strides that show ``a``'s elements in ``shape`` without a copy, or None (NumPy's rule:
    merge runs of contiguous dims)."""
    if a.is_c_contiguous():
        return contiguous_strides(shape)
    old = [(n, s) for n, s in zip(a.shape, a.estrides) if n != 1]
    new_strides, i = [], 0
    for n in shape:
        if n == 1:
            new_strides.append(0)
            continue
        if i >= len(old):
            return None
        size, stride = old[i]
        if size == n:
            new_strides.append(stride)
            i += 1
        elif size > n and size % n == 0:  # split one dim
            old[i] = (size // n, stride)
            new_strides.append(stride * (size // n))
        else:  # merge dims that are contiguous with each other
            total, j = size, i
            while total < n and j + 1 < len(old) and old[j][1] == old[j + 1][0] * old[j + 1][1]:
                j += 1
                total *= old[j][0]
            if total != n:
                return None
            new_strides.append(old[j][1])
            i = j + 1
    return new_strides


def transpose(a, axes=None):
    return a.transpose(axes) if axes is not None else a.transpose()


def swapaxes(a, axis1, axis2):
    return a.swapaxes(axis1, axis2)


def moveaxis(a, source, destination):
    source = [s % a.ndim for s in np.atleast_1d(source)]
    destination = [d % a.ndim for d in np.atleast_1d(destination)]
    order = [n for n in range(a.ndim) if n not in source]
    for dest, src in sorted(zip(destination, source)):
        order.insert(dest, src)
    return a.transpose(order)


def expand_dims(a, axis):
    axes = sorted(x % (a.ndim + len(np.atleast_1d(axis))) for x in np.atleast_1d(axis))
    shape, strides = list(a.shape), list(a.estrides)
    for ax in axes:
        shape.insert(ax, 1)
        strides.insert(ax, 0)
    return a.view_of(shape, strides, a.offset)


def squeeze(a, axis=None):
    if axis is None:
        axes = [i for i, n in enumerate(a.shape) if n == 1]
    else:
        axes = [x % a.ndim for x in np.atleast_1d(axis)]
        if builtins.any(a.shape[x] != 1 for x in axes):
            raise ValueError("cannot select an axis to squeeze out which has size not equal to "
                             "one")
    keep = [i for i in range(a.ndim) if i not in axes]
    return a.view_of([a.shape[i] for i in keep], [a.estrides[i] for i in keep], a.offset)


def broadcast_to(a, shape, subok=False):
    a = asarray(a)
    shape = _shape(shape)
    lead = len(shape) - a.ndim
    if lead < 0:
        raise ValueError("cannot broadcast a non-scalar to a scalar array")
    strides = [0] * lead
    for n, m, s in zip(a.shape, shape[lead:], a.estrides):
        if n == m:
            strides.append(s)
        elif n == 1:
            strides.append(0)
        else:
            raise ValueError(f"operands could not be broadcast together with remapped shapes "
                             f"[original->remapped]: {a.shape} and requested shape {shape}")
    return a.view_of(shape, strides, a.offset)


def as_strided(x, shape=None, strides=None, subok=False, writeable=True):
    item = x.dtype.itemsize
    shape = x.shape if shape is None else shape
    strides = x.strides if strides is None else strides
    return x.view_of(shape, [s // item for s in strides], x.offset)


class _StrideTricks:
    as_strided = staticmethod(as_strided)

    def __getattr__(self, name):
        return fallback(getattr(np.lib.stride_tricks, name), f"lib.stride_tricks.{name}")


class _Lib:
    stride_tricks = _StrideTricks()

    def __getattr__(self, name):
        return _Namespace(getattr(np.lib, name), f"lib.{name}")


lib = _Lib()
linalg = _Namespace(np.linalg, "linalg")
fft = _Namespace(np.fft, "fft")
random = _Namespace(np.random, "random")


def _basic_index(index):
    """``index`` as a tuple if it is basic indexing (ints, slices, None, Ellipsis)."""
    if not isinstance(index, tuple):
        index = (index,)
    for item in index:
        if item is None or item is Ellipsis or isinstance(item, slice):
            continue
        if isinstance(item, (int, np.integer)) and not isinstance(item, (bool, np.bool_)):
            continue
        return None
    return index


def getitem(a, index):
    """``a[index]``: a view for basic indexing, a CPU fallback otherwise."""
    items = _basic_index(index)
    axis = _single_array_axis(index, a.ndim)
    if axis is not None:  # one integer array, other dims whole: NumPy's take along that dim
        return take(a, index[axis] if isinstance(index, tuple) else index, axis=axis)
    if items is None:
        return fallback(lambda x, i: x[i], "getitem")(a, index)
    consumed = builtins.sum(1 for i in items if i is not None and i is not Ellipsis)
    if consumed > a.ndim:
        raise IndexError(f"too many indices for array: array is {a.ndim}-dimensional, but "
                         f"{consumed} were indexed")
    if Ellipsis in items:
        at = items.index(Ellipsis)
        items = items[:at] + (slice(None),) * (a.ndim - consumed) + items[at + 1:]
    shape, strides, offset, dim = [], [], a.offset, 0
    for item in items:
        if item is None:
            shape.append(1)
            strides.append(0)
        elif isinstance(item, slice):
            start, stop, step = item.indices(a.shape[dim])
            shape.append(len(range(start, stop, step)))
            strides.append(a.estrides[dim] * step)
            offset += start * a.estrides[dim]
            dim += 1
        else:
            n = int(item)
            if not -a.shape[dim] <= n < a.shape[dim]:
                raise IndexError(f"index {n} is out of bounds for axis {dim} with size "
                                 f"{a.shape[dim]}")
            offset += (n % a.shape[dim]) * a.estrides[dim]
            dim += 1
    shape.extend(a.shape[dim:])
    strides.extend(a.estrides[dim:])
    return a.view_of(shape, strides, offset)


def _single_array_axis(index, ndim):
    """The dim that ``index`` picks with one integer device array while taking every other
    dim whole (``a[idx]``, ``a[:, idx]``), else None."""
    key = index if isinstance(index, tuple) else (index,)
    arrays = [i for i, k in enumerate(key) if isinstance(k, WebGPUArray)]
    if len(arrays) != 1 or len(key) > ndim or not ndim:
        return None
    position = arrays[0]
    if key[position].dtype not in (np.int64, np.int32):
        return None
    whole = slice(None)
    if builtins.any(k != whole for i, k in enumerate(key) if i != position
                    and not isinstance(k, WebGPUArray)):
        return None
    return position


def setitem(a, index, value):
    """``a[index] = value``: a strided write for basic indexing, a put for integer arrays
    (one per dim, or one among whole slices), a CPU fallback otherwise."""
    if _basic_index(index) is not None:
        copyto(getitem(a, index), value)
        return
    if _put(a, index, value):
        return

    def write(x, i, v):
        x[i] = v
    fallback(write, "setitem")(a, index, value)


# ---------------------------------------------------------------- copies


def _params_for(shape, operands, scalars=()):
    """Params words: count, ndim, shape (padded), per operand its offset and strides (padded),
    then the scalars."""
    count = 1
    for n in shape:
        count *= n
    words = [count, len(shape)] + list(shape) + [1] * (K.MAX_DIMS - len(shape))
    for offset, strides in operands:
        strides = list(strides)
        words += [offset] + strides + [0] * (K.MAX_DIMS - len(strides))
    return words + list(scalars)


def _groups(threads):
    blocks = builtins.max(1, (threads + K.WORKGROUP - 1) // K.WORKGROUP)
    if blocks <= 65535:
        return (blocks, 1, 1)
    return (65535, (blocks + 65534) // 65535, 1)


def _run(source, out, inputs, words, threads):
    runtime = out.storage.runtime
    buffers = [runtime.params(words), out.storage.buffer]
    buffers += [x.storage.buffer for x in inputs]
    runtime.dispatch(source, buffers, _groups(threads))


def ascontiguous_copy(a):
    """A contiguous copy of ``a`` (the strided-copy kernel)."""
    out = _new(a.shape, a.dtype)
    if a.size == 0:
        return out
    if _copy_whole_words(out, a):
        return out
    if a.ndim > K.MAX_DIMS:
        return fallback(np.ascontiguousarray, "ascontiguousarray")(a)
    if a.storage.buffer.size > a.storage.runtime.max_binding:  # split into bindings
        if a.dtype.itemsize in (4, 8):
            _write_windowed(a.dtype.itemsize, out, a)
            return out
        if a.dtype in K.COMPUTE:
            return _elementwise("a", [a], K.COMPUTE[a.dtype], a.dtype)
    itemsize = a.dtype.itemsize
    words = _params_for(a.shape, [(a.offset, a.estrides)])
    threads = a.size if itemsize >= 4 else (a.size * itemsize + 3) // 4
    _run(K.strided_copy(itemsize), out, [a], words, threads)
    return out


def astype(a, dtype, copy=True):
    dtype = np.dtype(dtype)
    if dtype == a.dtype:
        return a.copy() if copy else a
    if dtype in K.COMPUTE and a.dtype in K.COMPUTE and a.ndim <= K.MAX_DIMS:
        result = _elementwise("a", [a], K.COMPUTE[a.dtype], dtype, cast=True)
        if result is not None:
            return result
    return fallback(lambda x: x.astype(dtype), f"astype({a.dtype}->{dtype})")(a)


def copyto(dst, src, casting="unsafe", where=True):
    """``dst[...] = src`` (broadcast, cast as ``unsafe``): the strided-write kernel."""
    if where is not True:
        return fallback(np.copyto, "copyto")(dst, src, casting=casting, where=where)
    if dst.size == 0:
        return None
    itemsize = dst.dtype.itemsize
    if not isinstance(src, WebGPUArray) and np.ndim(src) == 0 and dst.dtype in K.COMPUTE:
        src = full((), src, dst.dtype)  # a fill: a kernel, not an upload
    if not isinstance(src, WebGPUArray):
        src = from_host(np.asarray(src).astype(dst.dtype))
    elif src.dtype != dst.dtype:
        src = astype(src, dst.dtype)
    if src.storage is dst.storage:  # the source may overlap the destination
        src = ascontiguous_copy(src)
    if _copy_whole_words(dst, src):
        return None
    if itemsize in (1, 2) and dst.ndim <= K.MAX_DIMS:
        src = broadcast_to(src, dst.shape)
        words = _params_for(dst.shape, [(dst.offset, dst.estrides), (src.offset, src.estrides)])
        _run(K.strided_write_narrow(itemsize), dst, [src], words, dst.size)
        return None
    if itemsize not in (4, 8) or dst.ndim > K.MAX_DIMS:
        note_fallback(f"copyto({dst.dtype})")
        host = dst.storage
        whole = np.frombuffer(host.runtime.download(host.buffer, host.nbytes), np.uint8).copy()
        view = np.lib.stride_tricks.as_strided(whole.view(dst.dtype)[dst.offset:], dst.shape,
                                               dst.strides)
        view[...] = src.get()
        host.runtime.upload(host.buffer, whole.tobytes())
        return None
    src = broadcast_to(src, dst.shape)
    limit = dst.storage.runtime.max_binding
    if dst.storage.buffer.size > limit or src.storage.buffer.size > limit:
        _write_windowed(itemsize, dst, src)
        return None
    words = _params_for(dst.shape, [(dst.offset, dst.estrides), (src.offset, src.estrides)])
    _run(K.strided_write(itemsize), dst, [src], words, dst.size)
    return None


def _write_windowed(itemsize, dst, src):
    """``copyto``'s strided write when a buffer is larger than one binding, in blocks of
    runs along ``dst``'s two dims of largest stride (each run halved along the dim that
    spreads the part that does not fit) so that both parts fit a binding window each."""
    runtime, limit = dst.storage.runtime, dst.storage.runtime.max_binding
    if dst.ndim == 0:
        dst, src = reshape(dst, (1,)), reshape(src, (1,))
    order = sorted(range(dst.ndim), key=lambda d: -abs(dst.estrides[d]) * (dst.shape[d] > 1))
    dst, src = dst.transpose(order), src.transpose(order)
    if dst.ndim == 1:
        dst, src = expand_dims(dst, 1), expand_dims(src, 1)

    def fits(view):
        binding = _window(view)[0]
        return not isinstance(binding, tuple) or binding[2] <= limit

    def block(x, r0, rows, c0, cols):
        return getitem(x, (slice(r0, r0 + rows), slice(c0, c0 + cols)))

    rows, cols = dst.shape[0], dst.shape[1]
    while not (fits(block(dst, 0, rows, 0, cols)) and fits(block(src, 0, rows, 0, cols))):
        wide = dst if not fits(block(dst, 0, rows, 0, cols)) else src
        if rows > 1 and (cols == 1 or rows * abs(wide.estrides[0]) >= cols * abs(
                wide.estrides[1])):
            rows = (rows + 1) // 2
        elif cols > 1:
            cols = (cols + 1) // 2
        else:
            raise RuntimeError(f"ember.webgpu: this copy cannot be split into bindings of "
                               f"{limit} bytes")
    for r0 in range(0, dst.shape[0], rows):
        for c0 in range(0, dst.shape[1], cols):
            target, source = block(dst, r0, rows, c0, cols), block(src, r0, rows, c0, cols)
            (out, out_at), (into, into_at) = _window(target), _window(source)
            words = _params_for(target.shape, [(out_at, target.estrides),
                                               (into_at, source.estrides)])
            runtime.dispatch(K.strided_write(itemsize), [runtime.params(words), out, into],
                             _groups(target.size))


def _copy_whole_words(dst, src):
    """``dst[...] = src`` as a buffer copy when both are contiguous, of one shape and dtype,
    and start and end on word boundaries (as an in-place op's result does); False otherwise.

    Example::

        >>> a = ember.zeros(4, device="webgpu")._data
        >>> _copy_whole_words(a, ember.ones(4, device="webgpu")._data), a.get()
        (True, array([1., 1., 1., 1.], dtype=float32))
    """
    itemsize = dst.dtype.itemsize
    start, source_start, nbytes = dst.offset * itemsize, src.offset * itemsize, dst.nbytes
    if (src.shape != dst.shape or (start | source_start | nbytes) & 3
            or not dst.is_c_contiguous() or not src.is_c_contiguous()):
        return False
    dst.storage.runtime.copy(src.storage.buffer, dst.storage.buffer, nbytes, source_start, start)
    return True


# ---------------------------------------------------------------- pointwise


@functools.lru_cache(maxsize=4096)
def _pointwise_source(expr, specs, ct, out_ct, out_itemsize, expr_ct, access=None):
    """The elementwise template's source with the helper functions (made once per key)."""
    return _helpers() + K.elementwise(expr, specs, ct, out_ct, out_itemsize, expr_ct, access)


def _access(x, out_shape):
    """How the elementwise kernel reads array ``x`` for an output of ``out_shape`` (see
    ``_kernels.ACCESS_INDEX``), and ``x`` as it reads it: linearly when ``x`` is contiguous
    and of the output's shape, one element when it has one, else through broadcast strides.

    Example::

        >>> a = ember.ones(2, 3, device="webgpu")._data
        >>> [_access(x, (2, 3))[0] for x in (a, a.T.T, a[:1, :1], a[:, ::2])]
        ['linear', 'linear', 'single', 'strided']
    """
    if x.shape == out_shape and x.is_c_contiguous():
        return "linear", x
    if x.size == 1:
        return "single", x
    return "strided", broadcast_to(x, out_shape)


def _helpers():
    return """
fn nan() -> f32 { return bitcast<f32>(0x7fc00000u); }
// NaN tests on the bits: a compiler may fold x != x away
fn isnan_(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }
fn inf() -> f32 { return bitcast<f32>(0x7f800000u); }
fn expm1_(x: f32) -> f32 {
    let u = exp(x);
    if (u == 1.0) { return x; }
    let um1 = u - 1.0;
    if (um1 == -1.0) { return -1.0; }
    if (abs(x) > 1.0) { return um1; }
    return um1 * x / log(u);
}
fn log1p_(x: f32) -> f32 {
    let u = 1.0 + x;
    if (u == 1.0) { return x; }
    if (x < -1.0) { return nan(); }
    if (u == 0.0) { return -inf(); }
    if (abs(x) > 0.5) { return log(u); }
    return log(u) * x / (u - 1.0);
}
fn log_(x: f32) -> f32 {
    if (x < 0.0 || isnan_(x)) { return nan(); }
    if (x == 0.0) { return -inf(); }
    if (x == inf()) { return x; }
    return log(x);
}
// erfc by Numerical Recipes' Chebyshev fit (relative error under 1.2e-7 in exact
// arithmetic), erf near 0 by its Taylor series (1 - erfc would lose the small values)
fn erfc_(x: f32) -> f32 {
    let z = abs(x);
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t * exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418
        + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587
        + t * (-0.82215223 + t * 0.17087277)))))))));
    return select(2.0 - r, r, x >= 0.0);
}
fn erf_(x: f32) -> f32 {
    if (abs(x) < 0.5) {
        let x2 = x * x;
        return 1.1283791670955126 * x * (1.0 - x2 * (0.3333333333 - x2 * (0.1 - x2 * (
            0.0238095238 - x2 * (0.0046296296 - x2 * 0.0007575758)))));
    }
    return 1.0 - erfc_(x);
}
fn sqrt_(x: f32) -> f32 { if (x < 0.0) { return nan(); } return sqrt(x); }
fn tanh_(x: f32) -> f32 {
    if (isnan_(x)) { return x; }
    let e = expm1_(-2.0 * abs(x));
    return sign(x) * (-e / (2.0 + e));
}
fn pow_(x: f32, y: f32) -> f32 {
    if (y == 0.0) { return 1.0; }
    if (y == 1.0) { return x; }
    if (y == 2.0) { return x * x; }
    if (isnan_(x) || isnan_(y)) { return nan(); }
    if (y == 0.5 && x >= 0.0) { return sqrt(x); }
    if (x == 0.0) { if (y > 0.0) { return 0.0; } return inf(); }
    let r = exp2(y * log2(abs(x)));
    if (x < 0.0) {
        if (floor(y) != y) { return nan(); }
        if (abs(y) < 16777216.0 && (i32(y) & 1) == 1) { return -r; }
    }
    return r;
}
fn fmod_floor(a: f32, b: f32) -> f32 {
    let r = a - floor(a / b) * b;
    return r;
}
fn imod(a: i32, b: i32) -> i32 {
    if (b == 0) { return 0; }
    let r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) { return r + b; }
    return r;
}
fn idiv(a: i32, b: i32) -> i32 {
    if (b == 0) { return 0; }
    let q = a / b;
    let r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) { return q - 1; }
    return q;
}
fn maxn(a: f32, b: f32) -> f32 {
    if (isnan_(a)) { return a; }
    if (isnan_(b)) { return b; }
    return max(a, b);
}
fn minn(a: f32, b: f32) -> f32 {
    if (isnan_(a)) { return a; }
    if (isnan_(b)) { return b; }
    return min(a, b);
}
fn fmax_(a: f32, b: f32) -> f32 {
    if (isnan_(a)) { return b; }
    if (isnan_(b)) { return a; }
    return max(a, b);
}
fn fmin_(a: f32, b: f32) -> f32 {
    if (isnan_(a)) { return b; }
    if (isnan_(b)) { return a; }
    return min(a, b);
}
"""


# name: (arity, kind, {compute type or "*": WGSL}); kinds: "arith" (computes and returns the
# promoted dtype), "float" (the promoted dtype must be float32), "compare" (returns bool),
# "logical" (computes on bools), "where" (condition, then two values)
_F = "f32"
_POINTWISE = {
    "add": (2, "arith", {"bool": "a || b", "i64": "add64(a, b)", "*": "a + b"}),
    "subtract": (2, "arith", {"f32": "a - b", "i32": "a - b", "u32": "a - b",
                              "i64": "sub64(a, b)"}),
    "multiply": (2, "arith", {"bool": "a && b", "f32": "a * b", "i32": "a * b", "u32": "a * b",
                              "i64": "mul64(a, b)"}),
    "square": (1, "arith", {_F: "a * a", "i32": "a * a", "u32": "a * a", "bool": "a",
                            "i64": "mul64(a, a)"}),
    "true_divide": (2, "float", {_F: "a / b"}),
    "divide": (2, "float", {_F: "a / b"}),
    "maximum": (2, "arith", {_F: "maxn(a, b)", "bool": "a || b", "i64": "max64(a, b)",
                             "*": "max(a, b)"}),
    "minimum": (2, "arith", {_F: "minn(a, b)", "bool": "a && b", "i64": "min64(a, b)",
                             "*": "min(a, b)"}),
    "fmax": (2, "arith", {_F: "fmax_(a, b)", "bool": "a || b", "i64": "max64(a, b)",
                          "*": "max(a, b)"}),
    "fmin": (2, "arith", {_F: "fmin_(a, b)", "bool": "a && b", "i64": "min64(a, b)",
                          "*": "min(a, b)"}),
    "power": (2, "arith", {_F: "pow_(a, b)"}),
    "float_power": (2, "arith", {_F: "pow_(a, b)"}),
    "arctan2": (2, "float", {_F: "atan2(a, b)"}),
    "remainder": (2, "arith", {_F: "fmod_floor(a, b)", "i32": "imod(a, b)"}),
    "mod": (2, "arith", {_F: "fmod_floor(a, b)", "i32": "imod(a, b)"}),
    "floor_divide": (2, "arith", {_F: "floor(a / b)", "i32": "idiv(a, b)"}),
    "less": (2, "compare", {"i64": "lt64(a, b)", "*": "a < b"}),
    "less_equal": (2, "compare", {"i64": "!lt64(b, a)", "*": "a <= b"}),
    "greater": (2, "compare", {"i64": "lt64(b, a)", "*": "a > b"}),
    "greater_equal": (2, "compare", {"i64": "!lt64(a, b)", "*": "a >= b"}),
    "equal": (2, "compare", {"i64": "eq64(a, b)", "*": "a == b"}),
    "not_equal": (2, "compare", {"i64": "!eq64(a, b)", "*": "a != b"}),
    "logical_and": (2, "logical", {"bool": "a && b"}),
    "logical_or": (2, "logical", {"bool": "a || b"}),
    "logical_xor": (2, "logical", {"bool": "a != b"}),
    "logical_not": (1, "logical", {"bool": "!a"}),
    "bitwise_and": (2, "arith", {"bool": "a && b", "i32": "a & b", "u32": "a & b"}),
    "bitwise_or": (2, "arith", {"bool": "a || b", "i32": "a | b", "u32": "a | b"}),
    "bitwise_xor": (2, "arith", {"bool": "a != b", "i32": "a ^ b", "u32": "a ^ b"}),
    "invert": (1, "arith", {"bool": "!a", "i32": "~a", "u32": "~a"}),
    "bitwise_not": (1, "arith", {"bool": "!a", "i32": "~a", "u32": "~a"}),
    "negative": (1, "arith", {_F: "-a", "i32": "-a", "u32": "0u - a", "i64": "neg64(a)"}),
    "positive": (1, "arith", {"*": "a"}),
    "conjugate": (1, "arith", {"*": "a"}),
    "conj": (1, "arith", {"*": "a"}),
    "absolute": (1, "arith", {_F: "abs(a)", "i32": "abs(a)", "u32": "a", "bool": "a",
                              "i64": "abs64(a)"}),
    "abs": (1, "arith", {_F: "abs(a)", "i32": "abs(a)", "u32": "a", "bool": "a",
                         "i64": "abs64(a)"}),
    "fabs": (1, "float", {_F: "abs(a)"}),
    "sign": (1, "arith", {_F: "select(sign(a), a, isnan_(a))", "i32": "sign(a)",
                          "u32": "min(a, 1u)"}),
    "exp": (1, "float", {_F: "exp(a)"}),
    "exp2": (1, "float", {_F: "exp2(a)"}),
    "expm1": (1, "float", {_F: "expm1_(a)"}),
    "log": (1, "float", {_F: "log_(a)"}),
    "log2": (1, "float", {_F: "select(log_(a) * 1.4426950408889634, log2(a), a > 0.0)"}),
    "log10": (1, "float", {_F: "log_(a) * 0.4342944819032518"}),
    "log1p": (1, "float", {_F: "log1p_(a)"}),
    "sqrt": (1, "float", {_F: "sqrt_(a)"}),
    "reciprocal": (1, "float", {_F: "1.0 / a"}),
    "sin": (1, "float", {_F: "sin(a)"}),
    "cos": (1, "float", {_F: "cos(a)"}),
    "tan": (1, "float", {_F: "tan(a)"}),
    "arcsin": (1, "float", {_F: "select(asin(a), nan(), abs(a) > 1.0)"}),
    "arccos": (1, "float", {_F: "select(acos(a), nan(), abs(a) > 1.0)"}),
    "arctan": (1, "float", {_F: "atan(a)"}),
    "tanh": (1, "float", {_F: "tanh_(a)"}),
    "sinh": (1, "float", {_F: "select(sinh(a), a, abs(a) < 1e-4)"}),
    "cosh": (1, "float", {_F: "cosh(a)"}),
    "floor": (1, "arith", {_F: "floor(a)", "*": "a"}),
    "ceil": (1, "arith", {_F: "ceil(a)", "*": "a"}),
    "trunc": (1, "arith", {_F: "trunc(a)", "*": "a"}),
    "rint": (1, "arith", {_F: "round(a)", "*": "a"}),
    "isnan": (1, "compare", {_F: "isnan_(a)", "i64": "false", "*": "false"}),
    "isinf": (1, "compare", {_F: "(bitcast<u32>(a) & 0x7fffffffu) == 0x7f800000u",
                             "i64": "false", "*": "false"}),
    "isfinite": (1, "compare", {_F: "(bitcast<u32>(a) & 0x7fffffffu) < 0x7f800000u",
                                "i64": "true", "*": "true"}),
    "where": (3, "where", {"*": "select(c, b, a)"}),
}


def _operand_dtype(x):
    return x.dtype if isinstance(x, WebGPUArray) else x


def _promoted(operands):
    try:
        return np.result_type(*[_operand_dtype(x) for x in operands])
    except TypeError:
        return None


def _scalar_word(value, ct):
    """``value`` as a params word for compute type ``ct``, or None if it does not fit."""
    if ct == "f32":
        return K._float_bits(float(value))  # an int: the params cache keys by int words
    if ct == "bool":
        return int(bool(value))
    if isinstance(value, float) and not float(value).is_integer():
        return None
    value = int(value)
    if ct == "i64":
        if not -2**63 <= value < 2**63:
            return None
        return [value & 0xFFFFFFFF, (value >> 32) & 0xFFFFFFFF]
    low, high = (-2**31, 2**31 - 1) if ct == "i32" else (0, 255)
    return value if low <= value <= high else None


def _pointwise(name):
    arity, kind, exprs = _POINTWISE[name]

    def ufunc(*args, out=None, **kwargs):
        operands = args[:arity]
        extra = args[arity:]
        if extra and out is None and len(extra) == 1 and isinstance(extra[0], WebGPUArray):
            out = extra[0]
            extra = ()
        result = None
        wanted = kwargs.get("dtype")
        if wanted is not None and set(kwargs) == {"dtype"} and kind == "arith":
            # NumPy computes in ``dtype``: the array operands are cast to it first
            wanted = np.dtype(wanted)
            operands = [astype(x, wanted, copy=False) if isinstance(x, WebGPUArray) else x
                        for x in operands]
            result = _try_pointwise(name, kind, exprs, operands)
            if result is not None and result.dtype != wanted:
                result = None
        elif not extra and not kwargs and _has_device_array(operands):
            result = _try_pointwise(name, kind, exprs, operands)
        if result is None:
            return fallback(getattr(np, name), name)(*args, out=out, **kwargs) if out is not None \
                else fallback(getattr(np, name), name)(*args, **kwargs)
        if out is not None:
            copyto(out, result)
            return out
        return result
    ufunc.__name__ = name
    return ufunc


def _try_pointwise(name, kind, exprs, operands):
    operands = [from_host(x) if isinstance(x, np.ndarray) else x for x in operands]
    for x in operands:
        if isinstance(x, np.generic) and x.dtype.kind in "biuf":
            continue  # a NumPy scalar: its dtype takes part in the promotion
        if not isinstance(x, WebGPUArray) and not isinstance(x, (bool, int, float)):
            return None  # other objects keep NumPy's rules
        if isinstance(x, WebGPUArray) and x.ndim > K.MAX_DIMS:
            return None
    values = operands[1:] if kind == "where" else operands
    dtype = _promoted(values)
    if dtype is None or dtype not in K.COMPUTE:
        return None
    ct = K.COMPUTE[dtype]
    if kind == "float" and dtype not in (np.float32, np.float16):
        return None
    if kind == "logical":
        ct = "bool"
    if kind == "compare" and ct == "bool" and name not in ("equal", "not_equal"):
        ct = "u32"
    expr = exprs.get(ct, exprs.get("*"))
    if expr is None:
        return None
    if kind == "float" and ct == "f32":  # NaN in, NaN out (drivers' builtins may not)
        nan_in = " || ".join(f"isnan_({name})" for name in "abc"[:len(operands)])
        expr = f"select({expr}, nan(), {nan_in})"
    out_dtype = np.dtype(np.bool_) if kind in ("compare", "logical") else dtype
    return _elementwise(expr, operands, ct, out_dtype,
                        condition=kind == "where")


def _elementwise(expr, operands, ct, out_dtype, condition=False, shape=None, cast=False):
    """Run the elementwise template: ``expr`` over broadcast ``operands`` (into ``shape`` if
    given: a fill needs no array operand)."""
    arrays = [x for x in operands if isinstance(x, WebGPUArray)]
    out_shape = np.broadcast_shapes(*[x.shape for x in arrays]) if shape is None else shape
    out = _new(out_shape, out_dtype)
    if out.size == 0:
        return out
    specs, layouts, scalars, access, views = [], [], [], [], []
    for position, x in enumerate(operands):
        own_ct = "bool" if condition and position == 0 else ct
        if isinstance(x, WebGPUArray):
            how, x = _access(x, out_shape)
            access.append(how)
            views.append(x)
            specs.append(("buffer", x.dtype.itemsize, K.COMPUTE.get(x.dtype)))
            if specs[-1][2] is None:
                return None
            layouts.append((x.offset, x.estrides))
        else:
            word = _scalar_word(x.item() if isinstance(x, np.generic) else x, own_ct)
            if word is None:
                return None
            specs.append(("scalar", None, own_ct, own_ct))
            scalars.extend(word if isinstance(word, list) else [word])
    if condition:  # the condition converts to bool, the values to the compute type
        specs[0] = specs[0][:3] + ("bool",)
    try:
        source = _pointwise_source(expr, tuple(specs), ct, K.COMPUTE[out_dtype],
                                   out_dtype.itemsize, ct if cast else None, tuple(access))
    except ValueError:  # a conversion WGSL cannot do exactly (int64 to float): NumPy does it
        return None
    per = builtins.max(4 // out_dtype.itemsize, 1)
    limit = out.storage.runtime.max_binding
    if out.storage.buffer.size > limit or builtins.any(x.storage.buffer.size > limit
                                                       for x in views):
        # a large permuted operand (a transposed gradient) spreads every run of output rows
        # over its whole buffer: it is made contiguous first (copies tile two dims)
        copied = [ascontiguous_copy(x) if isinstance(x, WebGPUArray) and x.dtype.itemsize
                  in (4, 8) and x.storage.buffer.size > limit and not x.is_c_contiguous()
                  and 0 not in x.estrides else x for x in operands]
        if builtins.any(c is not x for c, x in zip(copied, operands)):
            return _elementwise(expr, copied, ct, out_dtype, condition, shape, cast)
        _run_windowed(source, out, views, access, scalars, per)
        return out
    words = _params_for(out_shape, layouts, scalars)
    _run(source, out, arrays, words, (out.size + per - 1) // per)
    return out


def _run_windowed(source, out, views, access, scalars, per):
    """The elementwise kernel ``source`` over chunks of the output small enough that every
    operand's elements for a chunk fit one binding (a tensor over 128 MiB on lavapipe): the
    output and its same-shaped contiguous operands split as flat ranges, or, with a strided
    (broadcast) operand, as runs of whole rows of the first dim."""
    widest = builtins.max([out.dtype.itemsize] + [x.dtype.itemsize for x in views])
    budget = out.storage.runtime.max_binding // 2 // widest // 32 * 32  # elements per chunk
    if "strided" not in access:
        flat_out = reshape(out, (-1,))
        flat = [reshape(x, (-1,)) if how == "linear" else x for x, how in zip(views, access)]
        for start in range(0, out.size, budget):
            stop = builtins.min(start + budget, out.size)
            _run_window(source, flat_out[start:stop],
                        [x[start:stop] if how == "linear" else x
                         for x, how in zip(flat, access)], scalars, per)
        return
    row = out.size // out.shape[0]
    step = int(32 // np.gcd(row * out.dtype.itemsize, 32))  # chunks start on 32-byte bounds
    rows = budget // row // step * step
    limit = out.storage.runtime.max_binding

    def parts(start, stop):
        return [x[start:stop] if how != "single" else x for x, how in zip(views, access)]

    # a strided operand may spread a chunk's elements wider than the output's: fewer rows
    while rows and not builtins.all(_window(x)[0][2] <= limit for x in parts(0, rows)
                                    if isinstance(_window(x)[0], tuple)):
        rows = rows // 2 // step * step
    if rows == 0 and out.ndim > 1:  # one row of the first dim is too large: each on its own
        _run_windowed_rows(source, out, views, access, scalars, per)
        return
    if rows == 0:
        raise RuntimeError(f"ember.webgpu: this operation over rows of {row} elements cannot "
                           f"be split into bindings of {limit} bytes")
    for start in range(0, out.shape[0], rows):
        stop = builtins.min(start + rows, out.shape[0])
        _run_window(source, out[start:stop], parts(start, stop), scalars, per)


def _run_windowed_rows(source, out, views, access, scalars, per):
    """The elementwise kernel ``source`` over each index of ``out``'s first dim, split
    further along the next dims (attention's scores with one batch item larger than a
    binding). A row that does not start on a 32-byte boundary, where windows start, is
    computed into a new array and copied into place."""
    aligned = (out.size // out.shape[0] * out.dtype.itemsize) % 32 == 0 and \
        (out.offset * out.dtype.itemsize) % 32 == 0
    for index in range(out.shape[0]):
        target = out[index] if aligned else _new(out.shape[1:], out.dtype)
        _run_windowed(source, target, [x[index] if how != "single" else x
                                       for x, how in zip(views, access)], access, scalars, per)
        if not aligned:
            copyto(out[index], target)


def _run_window(source, out, views, scalars, per):
    """One dispatch of an elementwise kernel with each array bound as the window it reads."""
    runtime = out.storage.runtime
    target, _ = _window(out, whole=False)  # the chunk's first element (32-byte aligned)
    bound, layouts = [], []
    for x in views:
        binding, offset = _window(x)
        bound.append(binding)
        layouts.append((offset, x.estrides))
    words = _params_for(out.shape, layouts, scalars)
    runtime.dispatch(source, [runtime.params(words), target] + bound,
                     _groups((out.size + per - 1) // per))


def _window(x, whole=True):
    """``x``'s buffer as a binding covering the elements ``x`` reaches, and ``x``'s offset
    counted from the window's start (with ``whole``, the whole buffer when it fits one
    binding).

    Bindings start on 32-byte boundaries (the adapter's offset alignment), so a window of a
    1- or 2-byte dtype still starts on a word.
    """
    buffer = x.storage.buffer
    if whole and buffer.size <= x.storage.runtime.max_binding:
        return buffer, x.offset
    item = x.dtype.itemsize
    low = x.offset + builtins.sum((n - 1) * s for n, s in zip(x.shape, x.estrides) if s < 0)
    high = x.offset + builtins.sum((n - 1) * s for n, s in zip(x.shape, x.estrides) if s > 0)
    start = low * item // 32 * 32
    end = builtins.min(((high + 1) * item + 3) // 4 * 4, buffer.size)
    return (buffer, start, end - start), x.offset - start // item


for _name in _POINTWISE:
    globals()[_name] = _pointwise(_name)


def clip(a, a_min=None, a_max=None, out=None, **kwargs):
    result = a
    if a_min is not None:
        result = maximum(result, a_min)  # noqa: F821 (made from the table)
    if a_max is not None:
        result = minimum(result, a_max)  # noqa: F821
    if out is not None:
        copyto(out, result)
        return out
    return result if result is not a else a.copy()


def round(a, decimals=0, out=None):  # noqa: A001 (NumPy's name)
    if decimals:
        return fallback(np.round, "round")(a, decimals, out=out)
    return rint(a, out=out)  # noqa: F821


around = round


# in-place operators (``a += b`` inside kernels must write into ``a``'s memory)
def _inplace(name):
    def method(self, other):
        copyto(self, globals()[name](self, other))
        return self
    return method


for _dunder, _fn in (("add", "add"), ("sub", "subtract"), ("mul", "multiply"),
                     ("truediv", "true_divide"), ("floordiv", "floor_divide"),
                     ("mod", "remainder"), ("pow", "power"), ("and", "bitwise_and"),
                     ("or", "bitwise_or"), ("xor", "bitwise_xor")):
    setattr(WebGPUArray, f"__i{_dunder}__", _inplace(_fn))


# defined after everything here, which it imports
from ._xp_compound import (  # noqa: E402,F401  (moved to _xp_compound.py; importers use this path)
    _put,
    all,
    amax,
    amin,
    any,
    argmax,
    argmin,
    argsort,
    concatenate,
    cuda,
    cumprod,
    cumsum,
    defer_range_check,
    dot,
    einsum,
    flip,
    matmul,
    max,
    mean,
    min,
    prod,
    result_type,
    scipy_special,
    stack,
    sum,
    take,
    take_along_axis,
    ufunc_at,
)
