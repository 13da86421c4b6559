"""oneDNN inference convolutions with their epilogue fused: ``relu(conv(x, w) + bias +
residual)`` in one primitive (optional: used when ``libdnnl`` is installed, see
:mod:`._onednn`).

``ember.compile``'s inference passes turn a convolution followed by a per-channel shift (a
folded BatchNorm or the convolution's bias), a residual of the output's shape and a ReLU
into one step (``_inductor/inference.py``). On NumPy that step writes the shift, the residual
and the ReLU into the convolution's output with three more passes over memory. oneDNN does
them inside the convolution's own loop as *post-ops*, as PyTorch's inference path does: the
bias is the primitive's bias argument, the residual is a ``sum`` post-op (the destination
memory holds the residual before the primitive runs and the convolution adds into it), the
ReLU an ``eltwise`` post-op. The weight is reordered into oneDNN's layout once and kept while
its tensor's version (a ``key`` from the caller) stays the same.

Example::

    >>> x = np.ones((1, 1, 3, 3), np.float32); w = -np.ones((1, 1, 1, 1), np.float32)
    >>> y = conv_bias_sum_relu(x, w, np.ones(1, np.float32), None, True, stride=(1, 1),
    ...                        padding=((0, 0), (0, 0)), dilation=(1, 1), groups=1)
    >>> y is None or float(y.max()) == 0.0   # None where oneDNN is not installed
    True
"""

from __future__ import annotations

import ctypes
import threading

import numpy as np

from ..._array_address import data_address
from . import _onednn
from ._onednn import _DST, _SRC, _WEIGHTS, _check, _Dims, _ExecArg, _Handle

__all__ = ["conv_bias_sum_relu", "Blocked", "as_array"]

# values of oneDNN's C API (dnnl_types.h, v3)
_FORWARD_INFERENCE, _CONVOLUTION_DIRECT, _BIAS, _ELTWISE_RELU, _F32 = 96, 1, 41, 0x20, 3


def conv_bias_sum_relu(x, w, bias, residual, relu, *, stride, padding, dilation, groups,
                       weight_key=None, blocked_out=False):
    """``relu(conv(x, w) + bias + residual)`` for C-contiguous float32 arrays in one oneDNN
    primitive, each of ``bias`` (Cout,), ``residual`` (the output's shape) and the ReLU
    optional; None where oneDNN is not available or has no implementation. ``weight_key``
    (hashable; None: no caching) names the weight's current values: while it stays the same
    the weight is not reordered again. ``x`` and ``residual`` may be :class:`Blocked` results
    of an earlier call; with ``blocked_out`` the result stays in oneDNN's layout too (a
    :class:`Blocked`) where that layout is not the plain one.

    Example::

        >>> y = conv_bias_sum_relu(np.ones((1, 1, 2, 2), np.float32),
        ...                        np.ones((1, 1, 2, 2), np.float32), None,
        ...                        np.ones((1, 1, 1, 1), np.float32), False, stride=(1, 1),
        ...                        padding=((0, 0), (0, 0)), dilation=(1, 1), groups=1)
        >>> y is None or float(y[0, 0, 0, 0]) == 5.0
        True
    """
    if not _onednn.available() or groups != 1:
        return None
    y_shape = (x.shape[0], w.shape[0]) + tuple(
        (s + lo + hi - d * (k - 1) - 1) // st + 1 for s, (lo, hi), d, k, st in
        zip(x.shape[2:], padding, dilation, w.shape[2:], stride))
    if residual is not None and tuple(residual.shape) != y_shape:
        return None
    if any(size <= 0 for shape in (x.shape, w.shape, y_shape) for size in shape):
        return None
    key = ("fused", tuple(x.shape), tuple(w.shape), y_shape, tuple(stride), tuple(padding),
           tuple(dilation), bias is not None, residual is not None, bool(relu))
    with _onednn._load_lock:
        plan = _onednn._cached_plan(key, lambda: _FusedPlan(_onednn._library, key))
    if plan is None:
        return None
    if bias is not None:
        bias = np.ascontiguousarray(bias, np.float32).reshape(-1)
    if residual is not None and not isinstance(residual, Blocked):
        residual = np.ascontiguousarray(residual, np.float32)
    if not isinstance(x, Blocked):
        x = np.ascontiguousarray(x)
    return plan.run(x, np.ascontiguousarray(w), bias, residual, y_shape, weight_key,
                    blocked_out)


class Blocked:
    """A convolution's result left in the layout oneDNN chose for it (``buffer``), for the
    next fused convolution to read without reordering it to the plain layout and back.

    Example::

        >>> x = np.ones((1, 8, 4, 4), np.float32); w = np.ones((8, 8, 1, 1), np.float32)
        >>> geometry = dict(stride=(1, 1), padding=((0, 0), (0, 0)), dilation=(1, 1), groups=1)
        >>> y = conv_bias_sum_relu(x, w, None, None, False, blocked_out=True, **geometry)
        >>> y is None or float(as_array(y)[0, 0, 0, 0]) == 8.0
        True
    """

    __slots__ = ("buffer", "plan", "shape")
    dtype = np.dtype(np.float32)

    def __init__(self, buffer, plan, shape):
        self.buffer, self.plan, self.shape = buffer, plan, shape

    def plain(self):
        """The values as a C-contiguous array."""
        y = np.empty(self.shape, np.float32)
        self.plan.to_plain(self.buffer, y)
        return y


def as_array(value):
    """``value`` as a plain NumPy array (a :class:`Blocked` reordered back).

    Example::

        >>> as_array(np.ones(2))
        array([1., 1.])
    """
    return value.plain() if isinstance(value, Blocked) else value


class _FusedPlan:
    """One inference convolution with bias/sum/ReLU post-ops for one geometry, the reorders
    of its source, weight and destination, and the weight last reordered."""

    def __init__(self, library, key):
        _, x_shape, w_shape, y_shape, stride, padding, dilation, has_bias, has_sum, relu = key
        self.library = library
        lib = library.lib
        descs = [library.any_desc(s) for s in (x_shape, w_shape, y_shape)]
        bias_desc = library.plain_desc((w_shape[0],)) if has_bias else None
        post_ops, attr, descriptor = _Handle(), _Handle(), _Handle()
        try:
            _check(lib.dnnl_post_ops_create(ctypes.byref(post_ops)))
            if has_sum:
                _check(lib.dnnl_post_ops_append_sum(post_ops, ctypes.c_float(1.0), 0, _F32))
            if relu:
                _check(lib.dnnl_post_ops_append_eltwise(post_ops, _ELTWISE_RELU,
                                                        ctypes.c_float(0.0),
                                                        ctypes.c_float(0.0)))
            _check(lib.dnnl_primitive_attr_create(ctypes.byref(attr)))
            _check(lib.dnnl_primitive_attr_set_post_ops(attr, post_ops))
            _check(lib.dnnl_convolution_forward_primitive_desc_create(
                ctypes.byref(descriptor), library.engine, _FORWARD_INFERENCE,
                _CONVOLUTION_DIRECT, descs[0], descs[1], bias_desc, descs[2],
                _Dims(*stride), _Dims(*(d - 1 for d in dilation)),
                _Dims(*(lo for lo, _ in padding)), _Dims(*(hi for _, hi in padding)), attr))
            self.primitive = library.primitive(descriptor)
            self.src = self._operand(descriptor, _SRC, x_shape, (True,))
            self.weights = self._operand(descriptor, _WEIGHTS, w_shape, (True,))
            self.dst = self._operand(descriptor, _DST, y_shape, (has_sum, False))
            self.bias = library.memory(bias_desc) if has_bias else None
        finally:
            library.free_descs(*descs, bias_desc)
            if descriptor:
                lib.dnnl_primitive_desc_destroy(descriptor)
            if attr:
                lib.dnnl_primitive_attr_destroy(attr)
            if post_ops:
                lib.dnnl_post_ops_destroy(post_ops)
        self.has_sum = has_sum
        self.cached_weight = None   # (key, the array, oneDNN's copy of it)
        self.layouts = {}   # id(producing plan) -> (that plan, whether its results fit as is)
        self.lock = threading.Lock()

    def _operand(self, descriptor, arg, shape, directions):
        """(plain memory, inner memory or None, inner size, reorders) for ``arg``: one
        reorder per entry of ``directions``, into the primitive's layout (True) or back out
        of it (False); no inner memory where the primitive takes the plain layout."""
        library = self.library
        lib = library.lib
        plain = library.plain_desc(shape)
        try:
            inner = _Handle(lib.dnnl_primitive_desc_query_md(descriptor,
                                                             _onednn._QUERY_EXEC_ARG_MD, arg))
            outer = library.memory(plain)
            if lib.dnnl_memory_desc_equal(inner, plain):
                return outer, None, 0, ()
            reorders = tuple(library.reorder(plain, inner) if into else
                             library.reorder(inner, plain) for into in directions)
            return outer, library.memory(inner), lib.dnnl_memory_desc_get_size(inner), reorders
        finally:
            library.free_descs(plain)

    def close(self):
        """Free the primitive, the reorders and the memory objects (the plan cache calls
        this when it drops the plan)."""
        lib = self.library.lib
        with self.lock:
            lib.dnnl_primitive_destroy(self.primitive)
            for outer, inner, _, reorders in (self.src, self.weights, self.dst):
                lib.dnnl_memory_destroy(outer)
                if inner is not None:
                    lib.dnnl_memory_destroy(inner)
                for reorder in reorders:
                    lib.dnnl_primitive_destroy(reorder)
            if self.bias is not None:
                lib.dnnl_memory_destroy(self.bias)
            self.cached_weight = None

    def run(self, x, w, bias, residual, y_shape, weight_key, blocked_out):
        """Compute the plain result (or a :class:`Blocked` one); ``residual`` is added before
        the ReLU (the sum post-op adds the convolution into what the destination holds)."""
        lib, stream = self.library.lib, self.library.stream
        if isinstance(x, Blocked) and not self._reads(x, self.src):
            x = x.plain()
        if isinstance(residual, Blocked) and not self._reads(residual, self.dst):
            residual = residual.plain()
        scratch = []   # reorder buffers, alive until the stream is done
        with self.lock:
            src = self._into(self.src, x, 0, scratch)
            weights = self._weight(w, weight_key, scratch)
            outer, inner, size, reorders = self.dst
            y = None
            if inner is None or not blocked_out:
                y = np.empty(y_shape, np.float32)
                lib.dnnl_memory_set_data_handle(outer, data_address(y))
            if inner is None:
                dst = outer
                if self.has_sum:
                    np.copyto(y, residual)
            elif isinstance(residual, Blocked):
                dst = self._buffer_for(inner, size, scratch)
                np.copyto(scratch[-1], residual.buffer)
            elif self.has_sum:
                dst = self._into(self.dst, residual, 0, scratch)
            else:
                dst = self._buffer_for(inner, size, scratch)
            dst_buffer = scratch[-1] if inner is not None else None
            args = [_ExecArg(_SRC, src), _ExecArg(_WEIGHTS, weights), _ExecArg(_DST, dst)]
            if self.bias is not None:
                lib.dnnl_memory_set_data_handle(self.bias, data_address(bias))
                args.append(_ExecArg(_BIAS, self.bias))
            _check(lib.dnnl_primitive_execute(self.primitive, stream, len(args),
                                              (_ExecArg * len(args))(*args)))
            if y is not None and inner is not None:
                lib.dnnl_memory_set_data_handle(outer, data_address(y))  # (_into moved it)
                _reorder(lib, stream, reorders[-1], inner, outer)
            _check(lib.dnnl_stream_wait(stream))
        return y if y is not None else Blocked(dst_buffer, self, y_shape)

    def to_plain(self, buffer, y):
        """Reorder ``buffer``, a result of this plan in its own layout, into ``y``."""
        lib, stream = self.library.lib, self.library.stream
        outer, inner, _, reorders = self.dst
        with self.lock:
            lib.dnnl_memory_set_data_handle(inner, data_address(buffer))
            lib.dnnl_memory_set_data_handle(outer, data_address(y))
            _reorder(lib, stream, reorders[-1], inner, outer)
            _check(lib.dnnl_stream_wait(stream))

    def _reads(self, blocked, operand):
        """Whether ``operand`` (the source or the destination) takes ``blocked``'s layout as
        it is (remembered per producing plan)."""
        known = self.layouts.get(id(blocked.plan))
        if known is None or known[0] is not blocked.plan:
            inner = operand[1]
            theirs = blocked.plan.dst[1]
            same = inner is not None and bool(self.library.lib.dnnl_memory_desc_equal(
                _memory_desc(self.library, inner), _memory_desc(self.library, theirs)))
            known = self.layouts[id(blocked.plan)] = (blocked.plan, same)
        return known[1]

    def _buffer_for(self, inner, size, scratch):
        buffer = _onednn._aligned_bytes(size)
        scratch.append(buffer)
        self.library.lib.dnnl_memory_set_data_handle(inner, data_address(buffer))
        return inner

    def _into(self, operand, array, which, scratch):
        """The memory the primitive reads ``array`` from: its own, or a fresh buffer in the
        primitive's layout that ``array`` is reordered into (a :class:`Blocked` ``array`` of
        that layout is read where it is)."""
        lib = self.library.lib
        outer, inner, size, reorders = operand
        if isinstance(array, Blocked):
            lib.dnnl_memory_set_data_handle(inner, data_address(array.buffer))
            scratch.append(array.buffer)
            return inner
        lib.dnnl_memory_set_data_handle(outer, data_address(array))
        if inner is None:
            return outer
        self._buffer_for(inner, size, scratch)
        _reorder(lib, self.library.stream, reorders[which], outer, inner)
        return inner

    def _weight(self, w, key, scratch):
        """The weight memory, reordered only when ``key`` (or the array) changed."""
        outer, inner, size, reorders = self.weights
        cached = self.cached_weight
        if inner is not None and key is not None and cached is not None and \
                cached[0] == key and cached[1] is w:
            self.library.lib.dnnl_memory_set_data_handle(inner, data_address(cached[2]))
            return inner
        memory = self._into(self.weights, w, 0, scratch)
        if inner is not None and key is not None:
            self.cached_weight = (key, w, scratch[-1])
        return memory


def _reorder(lib, stream, reorder, source, target):
    pair = (_ExecArg * 2)(_ExecArg(_SRC, source), _ExecArg(_DST, target))
    _check(lib.dnnl_primitive_execute(reorder, stream, 2, pair))


def _memory_desc(library, memory):
    """The descriptor of a memory object (owned by the memory)."""
    desc = _Handle()
    _check(library.lib.dnnl_memory_get_memory_desc(memory, ctypes.byref(desc)))
    return desc
