"""oneDNN convolutions, GELU and layer norm for float32 NumPy arrays (optional: used when
``libdnnl`` is installed).

PyTorch's CPU convolutions come from oneDNN; NumPy's im2col + OpenBLAS GEMM reaches about
half their speed on the small channel counts of typical CNNs (the GEMMs have 6-64 rows). When
the ``onednn-cpu-gomp`` wheel (or any ``libdnnl.so.3``) is installed, the convolution kernels
of :mod:`ember.nn._functional.conv` hand float32 CPU work to oneDNN through its C API
(ctypes); otherwise, or when ``ember.backends.mkldnn.enabled`` is False, or when oneDNN has
no implementation for a geometry, they run their NumPy path.

Each call describes the NumPy operands by their plain (N, C, *S) layout and lets oneDNN pick
its own ("any") layout for the computation, as PyTorch does: operands are reordered into the
blocked layouts oneDNN's JIT kernels want, and the result is reordered back. A primitive and
its reorders are built once per geometry and kept in a small cache.

Example::

    >>> x = np.ones((1, 2, 5, 5), np.float32); w = np.ones((3, 2, 3, 3), np.float32)
    >>> y = forward(x, w, stride=(1, 1), padding=((0, 0), (0, 0)), dilation=(1, 1), groups=1)
    >>> y is None or float(y[0, 0, 0, 0]) == 18.0   # None where oneDNN is not installed
    True
"""

from __future__ import annotations

import collections
import ctypes
import ctypes.util
import os
import sys
import threading

import numpy as np

from ... import _threads
from ..._array_address import data_address

__all__ = ["available", "cpu_kernel", "forward", "backward_data", "backward_weights", "gelu",
           "gelu_backward", "layer_norm", "layer_norm_backward"]

# values of oneDNN's C API (dnnl_types.h / dnnl_common_types.h, v3)
_CPU_ENGINE, _IN_ORDER_STREAM, _F32, _FORMAT_ANY = 1, 1, 3, 1
_FORWARD_TRAINING, _CONVOLUTION_DIRECT, _QUERY_EXEC_ARG_MD = 64, 1, 255
_ELTWISE_GELU_ERF = 49
_BACKWARD, _USE_GLOBAL_STATS, _USE_SCALE_SHIFT = 128, 0x1, 0x2 | 0x4
_MEAN, _VARIANCE, _SCALE, _SHIFT, _DIFF_SCALE, _DIFF_SHIFT = 49, 50, 51, 52, 255, 256
_SRC, _DST, _WEIGHTS = 1, 17, 33
_DIFF_SRC, _DIFF_DST, _DIFF_WEIGHTS = 129, 145, 161
_MAX_DIMS = 12

_Dims = ctypes.c_int64 * _MAX_DIMS
_Handle = ctypes.c_void_p


class _ExecArg(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_int), ("memory", _Handle)]


class _OneDNNError(RuntimeError):
    pass


def _check(status):
    if status != 0:
        raise _OneDNNError(f"oneDNN call failed with status {status}")


# ---------------------------------------------------------------- the library


class _Library:
    """The loaded ``libdnnl``, its CPU engine and one in-order stream."""

    def __init__(self, path):
        self.lib = lib = ctypes.CDLL(path)
        lib.dnnl_primitive_desc_query_md.restype = _Handle
        lib.dnnl_primitive_desc_query_md.argtypes = [_Handle, ctypes.c_int, ctypes.c_int]
        lib.dnnl_memory_desc_get_size.restype = ctypes.c_size_t
        lib.dnnl_memory_desc_get_size.argtypes = [_Handle]
        lib.dnnl_memory_desc_equal.argtypes = [_Handle, _Handle]
        lib.dnnl_memory_set_data_handle.argtypes = [_Handle, _Handle]
        lib.dnnl_primitive_execute.argtypes = [_Handle, _Handle, ctypes.c_int,
                                               ctypes.POINTER(_ExecArg)]
        lib.dnnl_stream_wait.argtypes = [_Handle]
        for name in ("dnnl_memory_desc_destroy", "dnnl_primitive_desc_destroy",
                     "dnnl_primitive_destroy", "dnnl_memory_destroy"):
            getattr(lib, name).argtypes = [_Handle]
        self.engine = _Handle()
        _check(lib.dnnl_engine_create(ctypes.byref(self.engine), _CPU_ENGINE, ctypes.c_size_t(0)))
        self.stream = _Handle()
        _check(lib.dnnl_stream_create(ctypes.byref(self.stream), self.engine,
                                      ctypes.c_uint(_IN_ORDER_STREAM)))

    def plain_desc(self, shape):
        """The memory descriptor of a C-contiguous float32 array of ``shape``."""
        strides, step = [], 1
        for size in reversed(shape):
            strides.append(step)
            step *= size
        desc = _Handle()
        _check(self.lib.dnnl_memory_desc_create_with_strides(
            ctypes.byref(desc), len(shape), _Dims(*shape), _F32, _Dims(*reversed(strides))))
        return desc

    def any_desc(self, shape):
        """A descriptor of ``shape`` whose layout the primitive chooses."""
        desc = _Handle()
        _check(self.lib.dnnl_memory_desc_create_with_tag(
            ctypes.byref(desc), len(shape), _Dims(*shape), _F32, _FORMAT_ANY))
        return desc

    def memory(self, desc):
        """A memory object of ``desc`` whose data pointer is set before each run."""
        memory = _Handle()
        _check(self.lib.dnnl_memory_create(ctypes.byref(memory), desc, self.engine, None))
        return memory

    def primitive(self, desc):
        primitive = _Handle()
        _check(self.lib.dnnl_primitive_create(ctypes.byref(primitive), desc))
        return primitive

    def reorder(self, source, target):
        """A primitive copying memory of descriptor ``source`` into the layout ``target``."""
        desc = _Handle()
        _check(self.lib.dnnl_reorder_primitive_desc_create(
            ctypes.byref(desc), source, self.engine, target, self.engine, None))
        try:
            return self.primitive(desc)
        finally:
            self.lib.dnnl_primitive_desc_destroy(desc)

    def free_descs(self, *descs):
        """Destroy memory descriptors (memory objects and primitives keep their own copies)."""
        for desc in descs:
            if desc:
                self.lib.dnnl_memory_desc_destroy(desc)


def _candidate_paths():
    """Where ``libdnnl.so.3`` may be: $EMBER_ONEDNN_LIBRARY, the environment's lib folder (the
    ``onednn-cpu-gomp`` wheel installs there), then the system's library path."""
    explicit = os.environ.get("EMBER_ONEDNN_LIBRARY")
    if explicit:
        yield explicit
    for prefix in dict.fromkeys((sys.prefix, sys.base_prefix)):
        yield os.path.join(prefix, "lib", "libdnnl.so.3")
    found = ctypes.util.find_library("dnnl")
    if found:
        yield found


_library = None
_load_attempted = False
_load_lock = threading.Lock()


def _load():
    """The library, loaded on first use; None when absent or turned off (EMBER_ONEDNN=0)."""
    global _library, _load_attempted
    if _load_attempted:
        return _library
    with _load_lock:
        if not _load_attempted:
            if os.environ.get("EMBER_ONEDNN", "1") != "0":
                _passive_openmp_threads()
                for path in _candidate_paths():
                    if os.path.exists(path) or os.sep not in path:
                        try:
                            _library = _Library(path)
                        except (OSError, AttributeError, _OneDNNError):
                            continue
                        _follow_thread_setting()
                        os.register_at_fork(after_in_child=_after_fork_in_child)
                        break
            _load_attempted = True
    return _library


def _passive_openmp_threads():
    """Let oneDNN's idle OpenMP threads sleep instead of spinning (unless the environment says
    otherwise), read by GNU OpenMP when it loads with libdnnl: ember calls oneDNN between
    OpenBLAS GEMMs, whose own threads then found every core taken by GOMP threads spinning
    for the next parallel region (GPT step on 2 threads: 2x slower with active waiting,
    10-20% faster than without oneDNN with passive)."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def _follow_thread_setting():
    """oneDNN runs on OpenMP, loaded only now: its pool takes ember's thread count and the BLAS
    pools drop to one thread (see ``ember._threads``), also when the count is the default
    (later changes reach it through ``ember.set_num_threads``)."""
    _threads.apply_thread_limits()


def _after_fork_in_child():
    """GNU OpenMP's thread pool does not survive ``fork``: a child that entered a parallel
    region with the parent's threads would wait for them forever (DataLoader workers, Hogwild
    processes). The child runs oneDNN on one thread, with primitives built anew (the parent's
    bake in its thread count)."""
    global _load_lock
    _load_lock = threading.Lock()   # another thread of the parent may have held it
    _PLANS.clear()
    try:
        ctypes.CDLL("libgomp.so.1").omp_set_num_threads(1)
    except (OSError, AttributeError):  # a oneDNN built on another runtime
        pass


_switches = None


def available():
    """Whether oneDNN kernels (convolutions, GELU, layer norm) are in use: the library loads
    and ``ember.backends.mkldnn.enabled`` is True.

    Example::

        >>> available() in (True, False)
        True
    """
    global _switches
    if _switches is None:
        from ...backends.mkldnn import _flags as _switches
    return _switches["enabled"] and (_library is not None or _load() is not None)


# ---------------------------------------------------------------- convolution plans


class _Plan:
    """One convolution primitive for one geometry, with the reorders around it.

    ``operands`` lists, for each of the three arrays in the caller's order, its exec argument,
    its plain memory object and, when oneDNN computes in another layout, the inner descriptor
    and the reorder into (inputs) or out of (the output) that layout.
    """

    def __init__(self, library, descriptor, roles, shapes):
        self.library = library
        self.primitive = library.primitive(descriptor)
        self.lock = threading.Lock()
        self.operands = []
        for (arg, is_output), shape in zip(roles, shapes):
            plain = library.plain_desc(shape)
            try:
                self.operands.append(self._operand(descriptor, arg, plain, is_output))
            finally:
                library.free_descs(plain)

    def _operand(self, descriptor, arg, plain, is_output):
        library = self.library
        inner = _Handle(library.lib.dnnl_primitive_desc_query_md(
            descriptor, _QUERY_EXEC_ARG_MD, arg))   # owned by ``descriptor``
        outer_memory = library.memory(plain)
        if library.lib.dnnl_memory_desc_equal(inner, plain):
            return arg, outer_memory, None, None, 0, is_output
        size = library.lib.dnnl_memory_desc_get_size(inner)
        reorder = library.reorder(inner, plain) if is_output else library.reorder(plain, inner)
        return arg, outer_memory, library.memory(inner), reorder, size, is_output

    def close(self):
        """Free the primitive, the reorders and the memory objects."""
        lib = self.library.lib
        with self.lock:
            lib.dnnl_primitive_destroy(self.primitive)
            for _, outer, inner, reorder, _, _ in self.operands:
                lib.dnnl_memory_destroy(outer)
                if inner is not None:
                    lib.dnnl_memory_destroy(inner)
                    lib.dnnl_primitive_destroy(reorder)
            self.operands = []

    def run(self, arrays):
        """Compute with ``arrays`` (C-contiguous float32, the output among them)."""
        lib, stream = self.library.lib, self.library.stream
        scratch = []
        with self.lock:
            exec_args, after = [], []
            for (arg, outer, inner, reorder, size, is_output), array in zip(self.operands, arrays):
                lib.dnnl_memory_set_data_handle(outer, data_address(array))
                if inner is None:
                    exec_args.append(_ExecArg(arg, outer))
                    continue
                buffer = _aligned_bytes(size)
                scratch.append(buffer)
                lib.dnnl_memory_set_data_handle(inner, data_address(buffer))
                exec_args.append(_ExecArg(arg, inner))
                pair = (_ExecArg(_SRC, inner), _ExecArg(_DST, outer)) if is_output else \
                    (_ExecArg(_SRC, outer), _ExecArg(_DST, inner))
                if is_output:
                    after.append((reorder, pair))
                else:
                    _check(lib.dnnl_primitive_execute(reorder, stream, 2, (_ExecArg * 2)(*pair)))
            _check(lib.dnnl_primitive_execute(self.primitive, stream, len(exec_args),
                                              (_ExecArg * len(exec_args))(*exec_args)))
            for reorder, pair in after:
                _check(lib.dnnl_primitive_execute(reorder, stream, 2, (_ExecArg * 2)(*pair)))
            _check(lib.dnnl_stream_wait(stream))


def cpu_kernel(op):
    """Decorator: make ``fn(*arrays, **params)``, oneDNN's form of ``op`` (None where oneDNN
    declines the case), ``op``'s CPU kernel (:meth:`ember.ops._registry.Op.defkernel`): it runs
    for float32 arrays while oneDNN is :func:`available`; everything else runs ``op``'s generic
    kernel.

    Example::

        @cpu_kernel(convolution_op)
        def _(x, w, *, stride, padding, dilation, groups):
            return forward(x, w, stride=stride, padding=padding, dilation=dilation,
                           groups=groups)
    """
    generic = op.generic_kernel

    def decorate(fn):
        def kernel(xp, *arrays, **params):
            if all(a.dtype == _F32_DTYPE for a in arrays) and available():
                out = fn(*arrays, **params)
                if out is not None:
                    return out
            return generic(xp, *arrays, **params)
        kernel.__name__ = kernel.__qualname__ = f"{op.name}_cpu_kernel"
        kernel.__doc__ = fn.__doc__
        op.defkernel("cpu", kernel)
        return fn
    return decorate


_F32_DTYPE = np.dtype(np.float32)


def _aligned_bytes(size):
    """``size`` bytes of NumPy memory starting on a 64-byte boundary (oneDNN's vector loads)."""
    raw = np.empty(size + 64, np.uint8)
    start = (-data_address(raw)) % 64
    return raw[start:start + size]


_PLANS = collections.OrderedDict()
_MAX_PLANS = 256
_NO_PLAN = object()   # cached: oneDNN has no implementation for this geometry


def _plan(kind, shapes, stride, padding, dilation):
    """The cached plan for convolution ``kind`` ('forward', 'backward_data',
    'backward_weights') of plain shapes (x, w, y); None where oneDNN has none."""
    return _cached_plan((kind, shapes, stride, padding, dilation),
                        lambda: _build(_library, kind, shapes, stride, padding, dilation))


def _cached_plan(key, build):
    """The plan cached under ``key`` and the thread count, made by ``build()`` on first use;
    None where oneDNN has no implementation (remembered too). Call with ``_load_lock`` held.
    A primitive splits its work for the OpenMP thread count of its making and keeps that split
    (made at 2 threads it ran on 2 after ``set_num_threads(1)``), so each count has its own."""
    key = (key, _threads._num_threads)
    plan = _PLANS.get(key)
    if plan is None:
        try:
            plan = build()
        except _OneDNNError:
            plan = _NO_PLAN
        _PLANS[key] = plan
        while len(_PLANS) > _MAX_PLANS:
            _, oldest = _PLANS.popitem(last=False)
            if oldest is not _NO_PLAN:
                oldest.close()
    else:
        _PLANS.move_to_end(key)
    return None if plan is _NO_PLAN else plan


def _build(library, kind, shapes, stride, padding, dilation):
    descs = [library.any_desc(shape) for shape in shapes]
    forward_desc, descriptor = _Handle(), _Handle()
    try:
        return _build_with(library, kind, shapes, stride, padding, dilation, descs,
                           forward_desc, descriptor)
    finally:
        library.free_descs(*descs)
        for desc in (forward_desc, descriptor):
            if desc:
                library.lib.dnnl_primitive_desc_destroy(desc)


def _build_with(library, kind, shapes, stride, padding, dilation, descs, forward_desc,
                descriptor):
    lib = library.lib
    x_any, w_any, y_any = descs
    geometry = (_Dims(*stride), _Dims(*(d - 1 for d in dilation)),
                _Dims(*(lo for lo, _ in padding)), _Dims(*(hi for _, hi in padding)))
    _check(lib.dnnl_convolution_forward_primitive_desc_create(
        ctypes.byref(forward_desc), library.engine, _FORWARD_TRAINING, _CONVOLUTION_DIRECT,
        x_any, w_any, None, y_any, *geometry, None))
    if kind == "forward":
        return _Plan(library, forward_desc, ((_SRC, False), (_WEIGHTS, False), (_DST, True)),
                     shapes)
    if kind == "backward_data":
        _check(lib.dnnl_convolution_backward_data_primitive_desc_create(
            ctypes.byref(descriptor), library.engine, _CONVOLUTION_DIRECT, x_any, w_any, y_any,
            *geometry, forward_desc, None))
        roles = ((_DIFF_SRC, True), (_WEIGHTS, False), (_DIFF_DST, False))
    else:
        _check(lib.dnnl_convolution_backward_weights_primitive_desc_create(
            ctypes.byref(descriptor), library.engine, _CONVOLUTION_DIRECT, x_any, w_any, None,
            y_any, *geometry, forward_desc, None))
        roles = ((_SRC, False), (_DIFF_WEIGHTS, True), (_DIFF_DST, False))
    return _Plan(library, descriptor, roles, shapes)


# ---------------------------------------------------------------- the three convolutions


def _weight_shape(w_shape, groups):
    """oneDNN's grouped weight shape (G, Cout/G, C/G, *K) for (Cout, C/G, *K)."""
    if groups == 1:
        return tuple(w_shape)
    return (groups, w_shape[0] // groups) + tuple(w_shape[1:])


def _run(kind, x_shape, w_shape, y_shape, arrays, stride, padding, dilation, groups):
    if any(size == 0 for shape in (x_shape, w_shape, y_shape) for size in shape):
        return False
    shapes = (tuple(x_shape), _weight_shape(w_shape, groups), tuple(y_shape))
    with _load_lock:
        plan = _plan(kind, shapes, tuple(stride), tuple(padding), tuple(dilation))
    if plan is None:
        return False
    plan.run(arrays)
    return True


def forward(x, w, *, stride, padding, dilation, groups, out_shape=None):
    """``conv(x, w)`` for float32 ``x`` (N, C, *S) and ``w`` (Cout, C/G, *K), or None when
    oneDNN cannot compute it. ``padding`` is ((lo, hi), ...) per spatial dim.

    Example::

        >>> y = forward(np.ones((1, 1, 3, 3), np.float32), np.ones((1, 1, 2, 2), np.float32),
        ...             stride=(1, 1), padding=((0, 0), (0, 0)), dilation=(1, 1), groups=1)
        >>> y is None or y.shape == (1, 1, 2, 2)
        True
    """
    if out_shape is None:
        out_shape = (x.shape[0], w.shape[0]) + tuple(
            (s + lo + hi - d * (k - 1) - 1) // st + 1 for s, (lo, hi), d, k, st in
            zip(x.shape[2:], padding, dilation, w.shape[2:], stride))
    x, w = np.ascontiguousarray(x), np.ascontiguousarray(w)
    y = np.empty(out_shape, np.float32)
    done = _run("forward", x.shape, w.shape, y.shape, (x, w, y), stride, padding, dilation,
                groups)
    return y if done else None


def backward_data(gy, w, shape, *, stride, padding, dilation, groups):
    """The input gradient (of ``shape``) of a convolution whose output gradient is ``gy``,
    or None when oneDNN cannot compute it (also the transposed convolution of ``gy``).

    Example::

        >>> gx = backward_data(np.ones((1, 1, 2, 2), np.float32),
        ...                    np.ones((1, 1, 2, 2), np.float32), (1, 1, 3, 3), stride=(1, 1),
        ...                    padding=((0, 0), (0, 0)), dilation=(1, 1), groups=1)
        >>> gx is None or float(gx[0, 0, 1, 1]) == 4.0
        True
    """
    gy, w = np.ascontiguousarray(gy), np.ascontiguousarray(w)
    gx = np.empty(shape, np.float32)
    done = _run("backward_data", gx.shape, w.shape, gy.shape, (gx, w, gy), stride, padding,
                dilation, groups)
    return gx if done else None


def backward_weights(x, gy, w_shape, *, stride, padding, dilation, groups):
    """The weight gradient (of ``w_shape``) of a convolution of ``x`` whose output gradient
    is ``gy``, or None when oneDNN cannot compute it.

    Example::

        >>> gw = backward_weights(np.ones((1, 1, 3, 3), np.float32),
        ...                       np.ones((1, 1, 2, 2), np.float32), (1, 1, 2, 2),
        ...                       stride=(1, 1), padding=((0, 0), (0, 0)), dilation=(1, 1),
        ...                       groups=1)
        >>> gw is None or float(gw[0, 0, 0, 0]) == 4.0
        True
    """
    x, gy = np.ascontiguousarray(x), np.ascontiguousarray(gy)
    gw = np.empty(w_shape, np.float32)
    done = _run("backward_weights", x.shape, w_shape, gy.shape, (x, gw, gy), stride, padding,
                dilation, groups)
    return gw if done else None


# ---------------------------------------------------------------- GELU


def _build_gelu(library, kind, size):
    """The eltwise plan of (erf) GELU over ``size`` contiguous float32 values: 'forward'
    (src, dst) or 'backward' (src, diff_dst, diff_src); the backward needs the forward's
    descriptor as its hint."""
    lib, algorithm = library.lib, _ELTWISE_GELU_ERF
    plain = library.plain_desc((size,))
    forward_desc, descriptor = _Handle(), _Handle()
    try:
        _check(lib.dnnl_eltwise_forward_primitive_desc_create(
            ctypes.byref(forward_desc), library.engine, _FORWARD_TRAINING, algorithm, plain,
            plain, ctypes.c_float(0.0), ctypes.c_float(0.0), None))
        if kind == "forward":
            return _Plan(library, forward_desc, ((_SRC, False), (_DST, True)), ((size,),) * 2)
        _check(lib.dnnl_eltwise_backward_primitive_desc_create(
            ctypes.byref(descriptor), library.engine, algorithm, plain, plain, plain,
            ctypes.c_float(0.0), ctypes.c_float(0.0), forward_desc, None))
        roles = ((_SRC, False), (_DIFF_DST, False), (_DIFF_SRC, True))
        return _Plan(library, descriptor, roles, ((size,),) * 3)
    finally:
        library.free_descs(plain)
        for desc in (forward_desc, descriptor):
            if desc:
                lib.dnnl_primitive_desc_destroy(desc)


def _run_gelu(kind, arrays):
    size = arrays[0].size
    if size == 0 or _load() is None:
        return False
    with _load_lock:
        plan = _cached_plan(("gelu", kind, size), lambda: _build_gelu(_library, kind, size))
    if plan is None:
        return False
    plan.run(arrays)
    return True


def gelu(x):
    """``x * Phi(x)`` of a float32 array as one oneDNN kernel (the same values as torch's
    CPU kernel, bit for bit), or None when oneDNN cannot compute it.

    Example::

        >>> y = gelu(np.array([0.0, 1.0], np.float32))
        >>> y is None or abs(float(y[1]) - 0.8413447) < 1e-6
        True
    """
    x = np.ascontiguousarray(x)
    y = np.empty(x.shape, np.float32)
    return y if _run_gelu("forward", (x, y)) else None


def gelu_backward(grad, x):
    """``grad * gelu'(x)`` for float32 arrays of one shape as one oneDNN kernel, or None when
    oneDNN cannot compute it.

    Example::

        >>> g = gelu_backward(np.ones(1, np.float32), np.zeros(1, np.float32))
        >>> g is None or float(g[0]) == 0.5
        True
    """
    grad, x = np.ascontiguousarray(grad), np.ascontiguousarray(x)
    result = np.empty(x.shape, np.float32)
    return result if _run_gelu("backward", (x, grad, result)) else None


# ---------------------------------------------------------------- layer normalization


def _build_layer_norm(library, kind, rows, size, eps):
    """The layer-norm plan over a (rows, size) float32 array with per-column scale and shift:
    'forward' (x, scale, shift, mean, variance -> y), given each row's mean and variance,
    'forward_stats' (x, scale, shift -> y, mean, variance), which computes them, or
    'backward' (x, dy, scale, mean, variance -> dx, dscale, dshift)."""
    lib = library.lib
    data, stats = library.plain_desc((rows, size)), library.plain_desc((rows,))
    forward_desc, descriptor = _Handle(), _Handle()
    # the forward takes the statistics as inputs; the backward differentiates through them
    flags = _USE_GLOBAL_STATS | _USE_SCALE_SHIFT if kind == "forward" else _USE_SCALE_SHIFT
    try:
        _check(lib.dnnl_layer_normalization_forward_primitive_desc_create(
            ctypes.byref(forward_desc), library.engine, _FORWARD_TRAINING, data, data, stats,
            ctypes.c_float(eps), ctypes.c_uint(flags), None))
        if kind == "forward":
            roles = ((_SRC, False), (_SCALE, False), (_SHIFT, False), (_MEAN, False),
                     (_VARIANCE, False), (_DST, True))
            shapes = ((rows, size), (size,), (size,), (rows,), (rows,), (rows, size))
            return _Plan(library, forward_desc, roles, shapes)
        if kind == "forward_stats":
            roles = ((_SRC, False), (_SCALE, False), (_SHIFT, False), (_DST, True),
                     (_MEAN, True), (_VARIANCE, True))
            shapes = ((rows, size), (size,), (size,), (rows, size), (rows,), (rows,))
            return _Plan(library, forward_desc, roles, shapes)
        _check(lib.dnnl_layer_normalization_backward_primitive_desc_create(
            ctypes.byref(descriptor), library.engine, _BACKWARD, data, data, data, stats,
            ctypes.c_float(eps), ctypes.c_uint(flags), forward_desc, None))
        roles = ((_SRC, False), (_DIFF_DST, False), (_SCALE, False), (_SHIFT, False),
                 (_MEAN, False), (_VARIANCE, False), (_DIFF_SRC, True), (_DIFF_SCALE, True),
                 (_DIFF_SHIFT, True))
        shapes = ((rows, size), (rows, size), (size,), (size,), (rows,), (rows,), (rows, size),
                  (size,), (size,))
        return _Plan(library, descriptor, roles, shapes)
    finally:
        library.free_descs(data, stats)
        for desc in (forward_desc, descriptor):
            if desc:
                lib.dnnl_primitive_desc_destroy(desc)


def _run_layer_norm(kind, rows, size, eps, arrays):
    if rows == 0 or size == 0 or _load() is None:
        return False
    with _load_lock:
        plan = _cached_plan(("layer_norm", kind, rows, size, eps),
                            lambda: _build_layer_norm(_library, kind, rows, size, eps))
    if plan is None:
        return False
    plan.run(tuple(np.ascontiguousarray(a, np.float32) for a in arrays))
    return True


def layer_norm(x, weight, bias, mean, variance, eps):
    """``(x - mean) / sqrt(variance + eps) * weight + bias`` over the rows of a (rows, size)
    float32 array, given each row's statistics, as one oneDNN kernel; None when oneDNN cannot
    compute it.

    Example::

        >>> x = np.array([[1.0, 3.0]], np.float32); one = np.ones(2, np.float32)
        >>> y = layer_norm(x, one, 0 * one, np.array([2.0], np.float32),
        ...                np.array([1.0], np.float32), 0.0)
        >>> y is None or y.tolist() == [[-1.0, 1.0]]
        True
    """
    y = np.empty(x.shape, np.float32)
    done = _run_layer_norm("forward", *x.shape, eps, (x, weight, bias, mean, variance, y))
    return y if done else None


def layer_norm_with_stats(x, weight, bias, eps):
    """:func:`layer_norm` with each row's statistics computed by the same kernel: (y, mean,
    variance) of a (rows, size) float32 array, or None when oneDNN cannot compute them.

    Example::

        >>> x = np.array([[1.0, 3.0]], np.float32); one = np.ones(2, np.float32)
        >>> found = layer_norm_with_stats(x, one, 0 * one, 0.0)
        >>> found is None or [a.tolist() for a in found] == [[[-1.0, 1.0]], [2.0], [1.0]]
        True
    """
    rows, size = x.shape
    results = (np.empty(x.shape, np.float32), np.empty(rows, np.float32),
               np.empty(rows, np.float32))
    done = _run_layer_norm("forward_stats", rows, size, eps, (x, weight, bias) + results)
    return results if done else None


def layer_norm_backward(grad, x, weight, mean, variance, eps):
    """The gradients (input, weight, bias) of :func:`layer_norm` for the output gradient
    ``grad``, as one oneDNN kernel; None when oneDNN cannot compute them.

    Example::

        >>> x = np.array([[1.0, 3.0]], np.float32); one = np.ones(2, np.float32)
        >>> grads = layer_norm_backward(one[None], x, one, np.array([2.0], np.float32),
        ...                             np.array([1.0], np.float32), 0.0)
        >>> grads is None or grads[2].tolist() == [1.0, 1.0]
        True
    """
    rows, size = x.shape
    results = (np.empty(x.shape, np.float32), np.empty(size, np.float32),
               np.empty(size, np.float32))
    # the kernel wants the shift among its inputs although the gradients do not depend on it
    done = _run_layer_norm("backward", rows, size, eps,
                           (x, grad, weight, weight, mean, variance) + results)
    return results if done else None
