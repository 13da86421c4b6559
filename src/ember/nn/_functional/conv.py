"""nn.functional: convolutions (conv1d/2d/3d, conv_transpose1d/2d/3d) and fold/unfold.

Convolution is im2col + GEMM: the (zero-padded) input is viewed through ``as_strided`` as its
sliding windows, the windows are copied once into a ``(C * K, N * positions)`` matrix and
multiplied by the weight in one GEMM over all samples (per group); the ``(Cout, N, ...)``
result is transposed back to ``(N, Cout, *O)`` by one copy. With stride 1 the positions are
the padded input's own flattened grid, in which every kernel tap is a constant shift, so the
im2col copy reads long contiguous runs (the few extra positions at the end of each row are
computed and cropped). A 1x1 convolution with stride 1 and no padding needs no copy: the
input is its own column matrix.
Three primitive ops share that machinery and differentiate into one another, so that
gradients of any order are convolutions:

* ``convolution(x, w)``: the forward convolution, ``y = x * w``;
* ``convolution_input_grad(gy, w)``: its adjoint in ``x`` (the transposed convolution): for
  stride 1 (and enough channels) a convolution of ``gy`` with the flipped kernel, otherwise a
  GEMM and col2im (one strided add per kernel tap, clipped to the unpadded input);
* ``convolution_weight_grad(x, gy)``: its adjoint in ``w``: one GEMM whose reduction runs over
  all samples and positions (the same column matrix of ``x`` times ``gy`` transposed).

With ``T(x, w, y) = <conv(x, w), y>`` trilinear, each op's derivative is one of the others.
``unfold``/``fold`` are the im2col/col2im pair on their own, adjoint to each other.
"""

from __future__ import annotations

import builtins
import numbers
import operator

import numpy as np

from ... import _dtype as dt
from ..._tensor import Tensor
from ...autograd import grad_mode
from ...func import _batching_rules as _batching
from ...ops._precision import is_half
from ...ops._registry import autocast_policy, defop
from ...ops._util import as_strided
from . import _onednn

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d", "unfold", "fold"]

_LOW = dt.LOW_PRECISION
_F32 = np.dtype(np.float32)


# ================================================================ kernels on xp


_strided = as_strided  # xp.lib.stride_tricks.as_strided


def _pad_zeros(xp, x, padding):
    """``x`` (N, C, *S) with ``padding`` ((lo, hi) per spatial dim) zeros around it."""
    if not any(lo or hi for lo, hi in padding):
        return x
    shape = x.shape[:2] + tuple(s + lo + hi for s, (lo, hi) in zip(x.shape[2:], padding))
    out = xp.zeros(shape, x.dtype)
    out[(slice(None), slice(None)) + tuple(slice(lo, lo + s) for s, (lo, _) in
                                           zip(x.shape[2:], padding))] = x
    return out


def _windows(xp, x, ksize, osize, stride, dilation):
    """The sliding windows of ``x`` (N, C, *P) as a view of shape (N, C, *K, *O)."""
    sn, sc = x.strides[:2]
    spatial = x.strides[2:]
    strides = (sn, sc) + tuple(s * d for s, d in zip(spatial, dilation)) \
        + tuple(s * st for s, st in zip(spatial, stride))
    return _strided(xp)(x, x.shape[:2] + tuple(ksize) + tuple(osize), strides)


# On the CPU the samples go through padding, im2col and the GEMM in chunks whose column
# matrix has about this many elements (1 MiB of float32): the GEMM reads the columns from the
# cache the copy just wrote them to, and the padded input and the columns each live in one
# buffer reused by every chunk (the padded buffer's border is zeroed once). Measured 10-30%
# faster per layer than one matrix for the whole batch. On a GPU the batch is one chunk.
_CHUNK_ELEMENTS = 1 << 18


def _sample_chunks(xp, n, per_sample):
    """``(start, stop)`` ranges of samples, each chunk's columns about ``_CHUNK_ELEMENTS``."""
    step = n if xp is not np else _CHUNK_ELEMENTS // builtins.max(per_sample, 1)
    step = builtins.max(1, builtins.min(n, step))
    return [(start, builtins.min(n, start + step)) for start in range(0, n, step)]


class _ColumnChunks:
    """im2col of ``x`` (N, C, *S) by chunks of samples: ``columns(start, stop)`` returns those
    samples' windows as a (C * K, (stop - start) * prod(grid)) matrix; ``grid`` is the output
    grid its columns run over (per sample).

    With stride 1 the grid is the padded input's own layout cut to the first dim's ``o1``
    output rows, ``(o1, P2, ..., Pk)``, and the positions are its flat index: every kernel
    tap is then a constant shift, so the copy reads long contiguous runs (small images copy
    twice as fast as window by window); positions past ``o_j`` in the trailing dims are
    computed too and cropped by :func:`_from_grid`. With a stride the grid is the output.
    """

    def __init__(self, xp, x, ksize, osize, stride, padding, dilation):
        self.xp, self.x, self.ksize = xp, x, tuple(ksize)
        n, c = x.shape[:2]
        k = len(ksize)
        self.rows = c * _prod(ksize)
        self.padded = tuple(s + lo + hi for s, (lo, hi) in zip(x.shape[2:], padding))
        self.inside = (slice(None), slice(None)) + tuple(
            slice(lo, lo + s) for s, (lo, _) in zip(x.shape[2:], padding))
        item = x.itemsize
        if all(st == 1 for st in stride):
            steps = [_prod(self.padded[j + 1:]) for j in range(k)]
            self.grid = (osize[0],) + self.padded[1:]
            reach = sum((kk - 1) * d * s for kk, d, s in zip(ksize, dilation, steps))
            # the last windows run ``slack`` elements past the padded input: zeros there
            slack = builtins.max(0, reach + _prod(self.grid) - _prod(self.padded))
            self.length = _prod(self.padded) + slack
            self.taps = tuple(d * s * item for d, s in zip(dilation, steps))
            self.positions = (item,)
            self.window_grid = (_prod(self.grid),)
        else:
            self.grid = tuple(osize)
            self.length = _prod(self.padded)
            spatial = [_prod(self.padded[j + 1:]) * item for j in range(k)]
            self.taps = tuple(s * d for s, d in zip(spatial, dilation))
            self.positions = tuple(s * st for s, st in zip(spatial, stride))
            self.window_grid = self.grid
        per_sample = self.rows * _prod(self.grid)
        self.chunks = _sample_chunks(xp, n, per_sample)
        longest = builtins.max((b - a for a, b in self.chunks), default=0)
        self.source = xp.zeros((longest, c, self.length), x.dtype)
        self.buffer = xp.empty(per_sample * longest, x.dtype)

    def columns(self, start, stop):
        xp, count = self.xp, stop - start
        source = self.source[:count]
        body = source[:, :, :_prod(self.padded)].reshape(source.shape[:2] + self.padded)
        body[self.inside] = self.x[start:stop]
        shape = (source.shape[1],) + self.ksize + (count,) + self.window_grid
        strides = (source.strides[1],) + self.taps + (source.strides[0],) + self.positions
        cols = self.buffer[:_prod(shape)].reshape(shape)
        xp.copyto(cols, _strided(xp)(source, shape, strides))
        return cols.reshape(self.rows, -1)


def _from_grid(out, n, grid, osize):
    """A GEMM result (Cout, N * prod(grid)) as an (N, Cout, *O) view (cropped, transposed)."""
    out = out.reshape((out.shape[0], n) + tuple(grid))
    out = out[(slice(None), slice(None)) + tuple(slice(0, o) for o in osize)]
    return out.swapaxes(0, 1)


def _to_grid(xp, gy, grid, groups):
    """``gy`` (N, Cout, *O) as (G, N * prod(grid), Cout/G): transposed for the weight-gradient
    GEMM, zero at the grid positions past the output."""
    n, cout = gy.shape[:2]
    osize = gy.shape[2:]
    k = len(osize)
    make = xp.empty if tuple(grid) == tuple(osize) else xp.zeros
    out = make((groups, n) + tuple(grid) + (cout // groups,), gy.dtype)
    parts = gy.reshape((n, groups, cout // groups) + tuple(osize))
    order = (1, 0) + tuple(range(3, 3 + k)) + (2,)
    out[(slice(None), slice(None)) + tuple(slice(0, o) for o in osize)] = parts.transpose(order)
    return out.reshape(groups, n * _prod(grid), cout // groups)


def _tap_range(t, d, st, o, s, lo):
    """For kernel tap ``t`` of one spatial dim: the output positions whose input index lies
    inside the unpadded input (a slice of ``o`` positions) and the input slice they hit, or
    None when there are none."""
    off = t * d - lo                        # input index of output position 0
    first = builtins.max(0, -(off // st))   # ceil(-off / st)
    last = builtins.min(o - 1, (s - 1 - off) // st)
    if last < first:
        return None
    return slice(first, last + 1), slice(first * st + off, last * st + off + 1, st)


def _col2im(xp, cols, shape, ksize, osize, stride, padding, dilation):
    """col2im: ``cols`` (N, C, *K, *O) summed into an (N, C, *S) array, one strided add per
    kernel tap straight into the unpadded result (taps are clipped to the input, so there is
    no padded buffer to crop)."""
    if all(k == 1 for k in ksize) and all(st == 1 for st in stride) \
            and not any(lo for lo, _ in padding) and tuple(osize) == tuple(shape[2:]):
        return cols.reshape(shape)
    out = xp.zeros(shape, cols.dtype)
    for tap in np.ndindex(*ksize):
        src = [slice(None), slice(None), *tap]
        dst = [slice(None), slice(None)]
        for t, d, st, o, s, (lo, _) in zip(tap, dilation, stride, osize, shape[2:], padding):
            hit = _tap_range(t, d, st, o, s, lo)
            if hit is None:
                break
            src.append(hit[0])
            dst.append(hit[1])
        else:
            out[tuple(dst)] += cols[tuple(src)]
    return out


def _prod(values):
    result = 1
    for v in values:
        result *= v
    return result


def _grouped_weight(w, groups):
    """(Cout, C/G, *K) as (G, Cout/G, C/G * K)."""
    return w.reshape(groups, w.shape[0] // groups, _prod(w.shape[1:]))


def _compute(kernel):
    """Run ``kernel`` in float32 for float16/bfloat16 arrays and round back, as torch's CPU."""
    def run(xp, a, b, **params):
        low = a.dtype if a.dtype in _LOW else None
        if low is not None:
            a, b = a.astype(_F32), b.astype(_F32)
        out = kernel(xp, a, b, **params)
        return out.astype(low) if low is not None else out
    run.__name__ = kernel.__name__
    return run


def _out_size(size, k, stride, padding, dilation):
    return (size + padding[0] + padding[1] - dilation * (k - 1) - 1) // stride + 1


def _conv_meta(x, w, *, stride, padding, dilation, groups):
    osize = tuple(_out_size(s, k, st, p, d) for s, k, st, p, d in
                  zip(x.shape[2:], w.shape[2:], stride, padding, dilation))
    return (x.shape[0], w.shape[0]) + osize, x.dtype


# Each GEMM runs once over all samples: (Cout/G, C/G * K) @ (C/G * K, N * positions) per group.
# One large GEMM keeps BLAS busier than one small GEMM per sample (measured 1.3-1.8x faster
# for 32-64 channels on 8x8-16x16 images); its (Cout, N, ...) result costs one transposing
# copy back to (N, Cout, ...), which is K times smaller than the columns.


def _is_pointwise(ksize, stride, padding):
    return all(k == 1 for k in ksize) and all(st == 1 for st in stride) \
        and not any(lo or hi for lo, hi in padding)


def _forward(xp, x, w, osize, stride, padding, dilation, groups):
    """The convolution of ``x`` (N, C, *S) with ``w`` (Cout, C/G, *K): (N, Cout, *O)."""
    n, c = x.shape[:2]
    cout = w.shape[0]
    ksize = w.shape[2:]
    if _is_pointwise(ksize, stride, padding):
        # a 1x1 convolution: the input is its own column matrix, one GEMM per sample, no copy
        x4 = x.reshape(n, groups, c // groups, _prod(osize))
        return xp.matmul(_grouped_weight(w, groups), x4).reshape((n, cout) + tuple(osize))
    weight = _grouped_weight(w, groups)
    source = _ColumnChunks(xp, x, ksize, osize, stride, padding, dilation)
    out = xp.empty((n, cout) + tuple(osize), xp.result_type(x, w))
    for start, stop in source.chunks:
        cols = source.columns(start, stop)
        result = xp.matmul(weight, cols.reshape(groups, source.rows // groups, -1))
        out[start:stop] = _from_grid(result.reshape(cout, -1), stop - start, source.grid, osize)
    return out


@defop("convolution", meta=_conv_meta, kind="nn")
@_compute
def convolution_op(xp, x, w, *, stride, padding, dilation, groups):
    shape = _conv_meta(x, w, stride=stride, padding=padding, dilation=dilation,
                       groups=groups)[0]
    return _forward(xp, x, w, shape[2:], stride, padding, dilation, groups)


@_onednn.cpu_kernel(convolution_op)
def _convolution_onednn(x, w, **geometry):
    """oneDNN's convolution, PyTorch's own CPU kernel."""
    return _onednn.forward(x, w, **geometry, out_shape=_conv_meta(x, w, **geometry)[0])


@convolution_op.defonnx
def _convolution_onnx(ctx, x, weight, stride, padding, dilation, groups):
    kernel = [ctx.static(s) for s in ctx.in_dims(1)[2:]]
    return ctx.op("Conv", x, weight, kernel_shape=kernel, strides=list(stride),
                  pads=[p[0] for p in padding] + [p[1] for p in padding],
                  dilations=list(dilation), group=groups)


def _flipped_weight(xp, w, groups):
    """``w`` (Cout, C/G, *K) flipped in space, its channels swapped within each group:
    (C, Cout/G, *K), the weight of the input gradient as a convolution."""
    k = w.ndim - 2
    cout, cg = w.shape[:2]
    wf = w.reshape((groups, cout // groups, cg) + w.shape[2:])
    wf = wf[(slice(None),) * 3 + (slice(None, None, -1),) * k].swapaxes(1, 2)
    return xp.ascontiguousarray(wf).reshape((groups * cg, cout // groups) + w.shape[2:])


def _flipped_pads(w, shape, osize, padding, dilation):
    """The padding of ``gy`` (output size ``osize``) that makes the stride-1 input gradient a
    convolution with the flipped kernel: the kernel's reach less the forward padding."""
    reach = [d * (k - 1) for d, k in zip(dilation, w.shape[2:])]
    return tuple((r - lo, s - o + lo) for r, (lo, _), s, o in
                 zip(reach, padding, shape[2:], osize))


def _flipped_conv(xp, gy, w, pads, dilation, groups):
    """``gy`` (N, Cout, *O) convolved (stride 1) with ``w`` (Cout, C/G, *K) flipped in space,
    its channels swapped within each group: the input gradient of a stride-1 convolution."""
    k = w.ndim - 2
    osize = tuple(o + lo + hi - d * (kk - 1) for o, (lo, hi), d, kk in
                  zip(gy.shape[2:], pads, dilation, w.shape[2:]))
    return _forward(xp, gy, _flipped_weight(xp, w, groups), osize, (1,) * k, pads, dilation,
                    groups)


def _input_grad_flat(xp, gy, w, shape, padding, dilation, groups):
    """Stride-1 input gradient as a GEMM and col2im on the flattened padded grid.

    ``gy`` (N, Cout, O1, ..., Ok) is embedded in a zero grid (N, Cout, O1, P2, ..., Pk) with the
    padded input's sizes ``Pj``; in that grid's flat index every kernel tap is a constant
    shift, so col2im is one contiguous add per tap (the zero columns only ever land in the
    padding, or past its end in a little slack), then one crop."""
    n, cout = gy.shape[:2]
    c = shape[1]
    ksize = w.shape[2:]
    padded = tuple(s + lo + hi for s, (lo, hi) in zip(shape[2:], padding))
    grid = (gy.shape[2],) + padded[1:]
    steps = [_prod(padded[j + 1:]) for j in range(len(padded))]
    length = _prod(grid)
    g = xp.zeros((n, cout) + grid, gy.dtype)
    g[(slice(None), slice(None)) + tuple(slice(0, o) for o in gy.shape[2:])] = gy
    wt = xp.ascontiguousarray(xp.swapaxes(_grouped_weight(w, groups), 1, 2))  # (G, CK/G, Cout/G)
    cols = xp.matmul(wt, g.reshape(n, groups, cout // groups, length))
    cols = cols.reshape(n, c, _prod(ksize), length)
    total = _prod(padded)
    slack = builtins.max(0, sum((k - 1) * d * s for k, d, s in zip(ksize, dilation, steps)) +
                         length - total)
    buf = xp.zeros((n, c, total + slack), cols.dtype)
    for i, tap in enumerate(np.ndindex(*ksize)):
        off = sum(t * d * s for t, d, s in zip(tap, dilation, steps))
        buf[:, :, off:off + length] += cols[:, :, i]
    buf = buf[:, :, :total].reshape((n, c) + padded)
    crop = (slice(None), slice(None)) + tuple(slice(lo, lo + s) for s, (lo, _) in
                                              zip(shape[2:], padding))
    return xp.ascontiguousarray(buf[crop])


@defop("convolution_input_grad", grad_name="ConvolutionBackward0",
       meta=lambda gy, w, *, shape, stride, padding, dilation, groups: (shape, gy.dtype), kind="nn")
@_compute
def convolution_input_grad_op(xp, gy, w, *, shape, stride, padding, dilation, groups):
    n = gy.shape[0]
    if gy.size == 0:  # an empty batch: nothing flows back
        return xp.zeros(shape, gy.dtype)
    if all(st == 1 for st in stride) and w.shape[1] >= 8:
        # stride 1: the adjoint is itself a convolution of gy (padded by the kernel extent less
        # the padding) with the flipped kernel, channels swapped: an im2col copy and a GEMM
        # instead of a GEMM and one strided add per tap (unless the GEMM would have very few
        # rows: C/G input channels)
        pads = _flipped_pads(w, shape, gy.shape[2:], padding, dilation)
        if all(lo >= 0 and hi >= 0 for lo, hi in pads):
            return _flipped_conv(xp, gy, w, pads, dilation, groups)
        if gy.ndim > 3:
            return _input_grad_flat(xp, gy, w, shape, padding, dilation, groups)
    osize = gy.shape[2:]
    ksize = w.shape[2:]
    k = len(ksize)
    cout = gy.shape[1]
    # one GEMM over all samples: (C/G * K, Cout/G) @ (Cout/G, N * O) per group, gy transposed
    # to (Cout, N, O) first; the columns come out as (C, *K, N, *O), viewed as (N, C, *K, *O)
    wt = xp.ascontiguousarray(xp.swapaxes(_grouped_weight(w, groups), 1, 2))  # (G, CK/G, Cout/G)
    gyt = xp.ascontiguousarray(gy.reshape(n, cout, -1).swapaxes(0, 1))
    cols = xp.matmul(wt, gyt.reshape(groups, cout // groups, -1))      # (G, C/G * K, N * O)
    cols = cols.reshape((shape[1],) + tuple(ksize) + (n,) + tuple(osize))
    cols = xp.moveaxis(cols, 1 + k, 0)
    return _col2im(xp, cols, shape, ksize, osize, stride, padding, dilation)


@_onednn.cpu_kernel(convolution_input_grad_op)
def _convolution_input_grad_onednn(gy, w, *, shape, **geometry):
    """oneDNN's backward-data convolution."""
    return _onednn.backward_data(gy, w, shape, **geometry)


@convolution_input_grad_op.defonnx
def _conv_transpose_onnx(ctx, x, weight, shape, stride, padding, dilation, groups):
    # the transposed convolution is the gradient of a convolution with respect to its input;
    # ``shape`` is the full output size, of which ONNX needs the extra ``output_padding``
    kernel = [ctx.static(s) for s in ctx.in_dims(1)[2:]]
    sizes = [ctx.static(s) for s in ctx.in_dims(0)[2:]]
    out = [ctx.static(s) for s in shape[2:]]
    extra = [o - ((i - 1) * s - p[0] - p[1] + d * (k - 1) + 1)
             for o, i, s, p, d, k in zip(out, sizes, stride, padding, dilation, kernel)]
    return ctx.op("ConvTranspose", x, weight, kernel_shape=kernel, strides=list(stride),
                  pads=[p[0] for p in padding] + [p[1] for p in padding],
                  dilations=list(dilation), group=groups,
                  output_padding=extra if any(extra) else None)


@defop("convolution_weight_grad", grad_name="ConvolutionBackward0",
       meta=lambda x, gy, *, ksize, stride, padding, dilation, groups:
       ((gy.shape[1], x.shape[1] // groups) + tuple(ksize), x.dtype), kind="nn")
@_compute
def convolution_weight_grad_op(xp, x, gy, *, ksize, stride, padding, dilation, groups):
    # dw^T = cols (C/G * K, N * grid) @ gy^T (N * grid, Cout/G) per group: one GEMM per chunk
    # of samples whose long dimension is the reduction, both operands contiguous in the order
    # BLAS reads them (the other orientation, gy @ cols^T, measured 2-5x slower); gy^T is a
    # cheap copy, K times smaller than the columns.
    cout = gy.shape[1]
    source = _ColumnChunks(xp, x, ksize, gy.shape[2:], stride, padding, dilation)
    dwt = xp.zeros((groups, source.rows // groups, cout // groups), xp.result_type(x, gy))
    for start, stop in source.chunks:
        cols = source.columns(start, stop).reshape(groups, source.rows // groups, -1)
        dwt += xp.matmul(cols, _to_grid(xp, gy[start:stop], source.grid, groups))
    dw = xp.ascontiguousarray(xp.swapaxes(dwt, 1, 2))
    return dw.reshape((cout, x.shape[1] // groups) + tuple(ksize))


@_onednn.cpu_kernel(convolution_weight_grad_op)
def _convolution_weight_grad_onednn(x, gy, *, ksize, groups, **geometry):
    """oneDNN's backward-weights convolution."""
    w_shape = (gy.shape[1], x.shape[1] // groups) + tuple(ksize)
    return _onednn.backward_weights(x, gy, w_shape, groups=groups, **geometry)


convolution_weight_grad_op.opt_out("onnx", "a backward kernel: exported models run inference")


def _shares_columns(x, w, stride, padding, dilation, groups):
    """Whether :func:`convolution_backward_op` applies: a float32/float64 stride-1
    convolution whose input gradient is a flipped convolution (>= 8 channels per group)."""
    if x.dtype not in (dt.float32, dt.float64) or any(st != 1 for st in stride) \
            or w.shape[1] < 8:
        return False
    pads = _flipped_pads(w, x.shape, _conv_meta(x, w, stride=stride, padding=padding,
                                                 dilation=dilation, groups=1)[0][2:],
                         padding, dilation)
    return all(lo >= 0 and hi >= 0 for lo, hi in pads)


def _backward_meta(gy, x, w, *, stride, padding, dilation, groups):
    return (x.shape, x.dtype), (w.shape, w.dtype)


@defop("convolution_backward", meta=_backward_meta, multi_output=True,
       grad_name="ConvolutionBackward0", kind="nn")
def convolution_backward_op(xp, gy, x, w, *, stride, padding, dilation, groups):
    """Both first-order gradients of a stride-1 convolution from one im2col of ``gy``.

    The input gradient is the flipped convolution of ``gy``: its columns (Cout * K, N * grid)
    run over the input's own grid. The same columns give the weight gradient:
    ``dw[co, ci, t] = sum_{n, s} gy_padded[n, co, s + flip(t)] * x[n, ci, s]``, a GEMM with
    ``x`` transposed onto that grid, so ``x`` needs no im2col of its own. Run only when no
    graph is recorded (create_graph uses the two differentiable ops). With oneDNN the two
    gradients are its backward-data and backward-weights convolutions.
    """
    n, c = x.shape[:2]
    cout = w.shape[0]
    k = w.ndim - 2
    ksize = tuple(w.shape[2:])
    pads = _flipped_pads(w, x.shape, gy.shape[2:], padding, dilation)
    flipped = _grouped_weight(_flipped_weight(xp, w, groups), groups)   # (G, C/G, Cout/G*K)
    source = _ColumnChunks(xp, gy, ksize, x.shape[2:], (1,) * k, pads, dilation)
    gx = xp.empty(x.shape, xp.result_type(gy, w))
    dwt = xp.zeros((groups, source.rows // groups, c // groups), xp.result_type(gy, x))
    for start, stop in source.chunks:
        cols = source.columns(start, stop).reshape(groups, source.rows // groups, -1)
        gx[start:stop] = _from_grid(xp.matmul(flipped, cols).reshape(c, -1), stop - start,
                                    source.grid, x.shape[2:])
        dwt += xp.matmul(cols, _to_grid(xp, x[start:stop], source.grid, groups))
    # (G, Cout/G, *K flipped, C/G) -> (Cout, C/G, *K)
    dw = dwt.reshape((cout, ) + ksize + (c // groups,))
    dw = dw[(slice(None),) + (slice(None, None, -1),) * k]
    dw = xp.ascontiguousarray(xp.moveaxis(dw, -1, 1))
    return gx, dw


@_onednn.cpu_kernel(convolution_backward_op)
def _convolution_backward_onednn(gy, x, w, **geometry):
    """oneDNN's backward-data and backward-weights convolutions."""
    gx = _onednn.backward_data(gy, w, x.shape, **geometry)
    dw = _onednn.backward_weights(x, gy, w.shape, **geometry)
    return None if gx is None or dw is None else (gx, dw)


convolution_backward_op.opt_out("onnx", "a backward kernel: exported models run inference")


convolution_backward_op.defbatch(_batching.convolution_backward)
convolution_backward_op.opt_out("derivative", "a fused first-order backward kernel")


def _conj(t):
    return t.conj() if t.dtype.is_complex else t


def _fit(y, shape):
    """Trim a convolution result to ``shape`` (a transposed conv with output_padding >= stride
    has positions no window reaches)."""
    for d in range(2, len(shape)):
        if y.shape[d] != shape[d]:
            y = y.narrow(d, 0, shape[d])
    return y


@convolution_op.defderivative
def _conv_derivative(ctx, grad, **geom):
    x, w = ctx.inputs
    if ctx.needs_input_grad[0] and ctx.needs_input_grad[1] and \
            not grad_mode.is_grad_enabled() and _shares_columns(x, w, **geom):
        return convolution_backward_op(grad, _conj(x), _conj(w), **geom)
    gx = gw = None
    if ctx.needs_input_grad[0]:
        gx = convolution_input_grad_op(grad, _conj(w), shape=tuple(x.shape), **geom)
    if ctx.needs_input_grad[1]:
        gw = convolution_weight_grad_op(_conj(x), grad, ksize=tuple(w.shape[2:]), **geom)
    return gx, gw


convolution_op.defbatch(_batching.convolution)


@convolution_input_grad_op.defderivative
def _conv_input_grad_derivative(ctx, grad, *, shape, **geom):
    gy, w = ctx.inputs
    dgy = dw = None
    if ctx.needs_input_grad[0]:
        dgy = _fit(convolution_op(grad, _conj(w), **geom), tuple(gy.shape))
    if ctx.needs_input_grad[1]:
        dw = convolution_weight_grad_op(grad, _conj(gy), ksize=tuple(w.shape[2:]), **geom)
    return dgy, dw


convolution_input_grad_op.defbatch(_batching.convolution_input_grad)


@convolution_weight_grad_op.defderivative
def _conv_weight_grad_derivative(ctx, grad, *, ksize, **geom):
    x, gy = ctx.inputs
    dx = dgy = None
    if ctx.needs_input_grad[0]:
        dx = convolution_input_grad_op(_conj(gy), grad, shape=tuple(x.shape), **geom)
    if ctx.needs_input_grad[1]:
        dgy = _fit(convolution_op(_conj(x), grad, **geom), tuple(gy.shape))
    return dx, dgy


convolution_weight_grad_op.defbatch(_batching.convolution_weight_grad)


# ---------------------------------------------------------------- im2col / col2im (unfold/fold)


def _im2col_meta(x, *, ksize, osize, stride, padding, dilation):
    return (x.shape[0], x.shape[1] * _prod(ksize), _prod(osize)), x.dtype


@defop("im2col", meta=_im2col_meta, save_inputs=False, grad_name="Im2ColBackward0", kind="nn")
def im2col_op(xp, x, *, ksize, osize, stride, padding, dilation):
    win = _windows(xp, _pad_zeros(xp, x, padding), ksize, osize, stride, dilation)
    return win.reshape(_im2col_meta(x, ksize=ksize, osize=osize, stride=stride,
                                    padding=padding, dilation=dilation)[0])


im2col_op.opt_out("onnx", "not mapped yet (torch composes it from Gather nodes)")


im2col_op.defbatch(_batching.samples)


@defop("col2im", save_inputs=False, grad_name="Col2ImBackward0",
       meta=lambda cols, *, shape, ksize, osize, stride, padding, dilation: (shape, cols.dtype),
       kind="nn")
def col2im_op(xp, cols, *, shape, ksize, osize, stride, padding, dilation):
    cols = cols.reshape(tuple(shape[:2]) + tuple(ksize) + tuple(osize))
    return _col2im(xp, cols, shape, ksize, osize, stride, padding, dilation)


col2im_op.opt_out("onnx", "not mapped yet (ONNX's Col2Im, opset 18, computes it)")


col2im_op.defbatch(_batching.samples)


@im2col_op.defderivative
def _im2col_derivative(ctx, grad, **geom):
    return (col2im_op(grad, shape=ctx.input_shapes[0], **geom),)


@col2im_op.defderivative
def _col2im_derivative(ctx, grad, *, shape, **geom):
    return (im2col_op(grad, **geom),)


# ================================================================ argument checking


def _check_tensor(value, name, arg, position):
    if not isinstance(value, Tensor):
        raise TypeError(f"{name}(): argument '{arg}' (position {position}) must be Tensor, not "
                        f"{type(value).__name__}")


def _ints(value, k, arg, name):
    """An int or sequence of ints as a k-tuple, with torch's errors."""
    if isinstance(value, (numbers.Integral,)) and not isinstance(value, bool):
        return (int(value),) * k
    if isinstance(value, (tuple, list)) and all(
            isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in value):
        value = tuple(int(v) for v in value)
        if len(value) == 1:
            return value * k
        if len(value) != k:
            raise RuntimeError(f"expected {arg} to be a single integer value or a list of {k} "
                               f"values to match the convolution dimensions, but got "
                               f"{arg}={list(value)}")
        return value
    if isinstance(value, Tensor) and value.ndim <= 1 and not value.dtype.is_floating_point:
        return _ints(value.tolist(), k, arg, name)
    raise TypeError(f"{name}(): argument '{arg}' must be tuple of ints, not "
                    f"{type(value).__name__}")


def _dim_message(name, k):
    return f"Expected {k + 1}D (unbatched) or {k + 2}D (batched) input to {name}, but got input " \
        "of size: "


# the CPU kernel torch names when it has none for a bool input
_BOOL_KERNELS = {"conv1d": "slow_conv2d_cpu", "conv2d": "slow_conv2d_cpu",
                 "conv3d": "compute_columns3d",
                 "conv_transpose1d": "slow_conv_transpose2d_out_cpu",
                 "conv_transpose2d": "slow_conv_transpose2d_out_cpu",
                 "conv_transpose3d": "slow_conv_transpose3d_out_cpu"}


def _check_dtypes(input, weight, bias, name, transposed=False):
    """torch's order: a weight of too few dims, a bool input (no kernel) for a transposed
    convolution, the bias's dtype, a bool input, then the weight's dtype."""
    if weight.ndim < 3:
        raise RuntimeError("weight should have at least three dimensions")
    if transposed and input.dtype is dt.bool:
        raise dt.no_kernel_for(_BOOL_KERNELS.get(name, "slow_conv_transpose2d_out_cpu"), dt.bool)
    if bias is not None and bias.dtype is not input.dtype:
        raise RuntimeError(f"Input type ({input.dtype.name.replace('float64', 'double')}) and "
                           f"bias type ({bias.dtype.name.replace('float64', 'double')}) should "
                           "be the same".replace("float32", "float"))
    if input.dtype is dt.bool:
        raise dt.no_kernel_for(_BOOL_KERNELS.get(name, "slow_conv2d_cpu"), dt.bool)
    if input.dtype is not weight.dtype:
        if input.dtype.is_floating_point and weight.dtype.is_floating_point:
            raise RuntimeError(f"Input type ({_legacy(input)}) and weight type "
                               f"({_legacy(weight)}) should be the same or input should be a "
                               "MKLDNN tensor and weight is a dense tensor")
        raise RuntimeError(f"expected scalar type {_scalar_name(input)} but found "
                           f"{_scalar_name(weight)}")


_SCALAR_NAMES = {"float64": "Double", "float32": "Float", "float16": "Half",
                 "bfloat16": "BFloat16", "int64": "Long", "int32": "Int", "int16": "Short",
                 "int8": "Char", "uint8": "Byte", "bool": "Bool", "complex64": "ComplexFloat",
                 "complex128": "ComplexDouble"}


def _scalar_name(t):
    return _SCALAR_NAMES[t.dtype.name]


def _legacy(t):
    return f"torch.{_SCALAR_NAMES[t.dtype.name]}Tensor"


def _batched(input, k, name):
    if input.ndim == k + 2:
        return input, False
    if input.ndim == k + 1:
        return input.unsqueeze(0), True
    raise RuntimeError(_dim_message(name, k) + f"{list(input.shape)}")


def _check_geometry(stride, padding, dilation, groups):
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(p < 0 for pair in padding for p in pair):
        raise RuntimeError("negative padding is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError("non-positive dilation is not supported")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")


def _check_weight(input, weight, bias, k, groups, transposed):
    if weight.ndim != k + 2:
        raise RuntimeError(f"Expected {k + 2}-dimensional weight for {k + 2}-dimensional input "
                           f"{list(input.shape)}, but got {weight.ndim}-dimensional weight of "
                           f"size {list(weight.shape)} instead")
    wshape = list(weight.shape)
    if weight.shape[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} "
                           f"at dimension 0, but got weight of size [{wshape}] instead")
    prefix = "Given transposed=1, " if transposed else f"Given groups={groups}, "
    channels = weight.shape[0] if transposed else weight.shape[1] * groups
    if input.shape[1] != channels:
        raise RuntimeError(f"{prefix}weight of size {wshape}, expected input"
                           f"{list(input.shape)} to have {channels} channels, but got "
                           f"{input.shape[1]} channels instead")
    if bias is not None:
        out_channels = weight.shape[1] * groups if transposed else weight.shape[0]
        if bias.ndim != 1 or bias.shape[0] != out_channels:
            prefix = "Given transposed=1, " if transposed else "Given "
            raise RuntimeError(f"{prefix}weight of size {wshape}, expected bias to be "
                               f"1-dimensional with {out_channels} elements, but got bias of "
                               f"size {list(bias.shape)} instead")


def _add_bias(out, bias, k):
    if bias is None:
        return out
    return out + bias.reshape((-1,) + (1,) * k)


def _same_padding(ksize, dilation):
    pads = []
    for kk, d in zip(ksize, dilation):
        total = d * (kk - 1)
        pads.append((total // 2, total - total // 2))
    return tuple(pads)


def _conv(input, weight, bias, stride, padding, dilation, groups, k, name):
    _check_tensor(input, name, "input", 1)
    _check_tensor(weight, name, "weight", 2)
    if bias is not None:
        _check_tensor(bias, name, "bias", 3)
    if isinstance(groups, bool) or not isinstance(groups, numbers.Integral):
        raise TypeError(f"{name}(): argument 'groups' must be int, not {type(groups).__name__}")
    groups = int(groups)
    stride = _ints(stride, k, "stride", name)
    dilation = _ints(dilation, k, "dilation", name)
    # torch's string-padding path convolves without the bias and adds it in place afterwards,
    # so the bias's dtype is neither checked against the input's nor promotes the result
    bias_added_in_place = isinstance(padding, str) and bias is not None
    if isinstance(padding, str):
        if padding == "valid":
            padding = ((0, 0),) * k
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            padding = None
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    else:
        padding = tuple((p, p) for p in _ints(padding, k, "padding", name))
    input, unbatched = _batched(input, k, name)
    _check_dtypes(input, weight, None if bias_added_in_place else bias, name)
    if padding is None:
        padding = _same_padding(weight.shape[2:], dilation) if weight.ndim == k + 2 else \
            ((0, 0),) * k
    _check_geometry(stride, padding, dilation, groups)
    _check_weight(input, weight, bias, k, groups, transposed=False)
    padded = [s + lo + hi for s, (lo, hi) in zip(input.shape[2:], padding)]
    kernel = [d * (kk - 1) + 1 for kk, d in zip(weight.shape[2:], dilation)]
    if any(p < kk for p, kk in zip(padded, kernel)):
        raise RuntimeError(f"Calculated padded input size per channel: "
                           f"({' x '.join(map(str, padded))}). Kernel size: "
                           f"({' x '.join(map(str, kernel))}). Kernel size can't be greater "
                           "than actual input size")
    out = convolution_op(input, weight, stride=stride, padding=padding, dilation=dilation,
                         groups=groups)
    out = _add_bias(out, bias.to(out.dtype) if bias_added_in_place else bias, k)
    return out.squeeze(0) if unbatched else out


def _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, k,
                    name):
    _check_tensor(input, name, "input", 1)
    _check_tensor(weight, name, "weight", 2)
    if bias is not None:
        _check_tensor(bias, name, "bias", 3)
    if isinstance(groups, bool) or not isinstance(groups, numbers.Integral):
        raise TypeError(f"{name}(): argument 'groups' must be int, not {type(groups).__name__}")
    groups = int(groups)
    stride = _ints(stride, k, "stride", name)
    padding = _ints(padding, k, "padding", name)
    output_padding = _ints(output_padding, k, "output_padding", name)
    dilation = _ints(dilation, k, "dilation", name)
    input, unbatched = _batched(input, k, name)
    _check_dtypes(input, weight, bias, name, transposed=True)
    _check_geometry(stride, tuple((p, p) for p in padding), dilation, groups)
    if any(p < 0 for p in output_padding):
        raise RuntimeError("negative output_padding is not supported")
    if any(op >= s and op >= d for op, s, d in zip(output_padding, stride, dilation)):
        names = ("depth", "height", "width")[3 - k:] if k > 1 else ("width",)
        if k == 1:
            raise RuntimeError(f"output padding must be smaller than either stride or dilation, "
                               f"but got output_padding={output_padding[0]}, stride="
                               f"{stride[0]}, dilation={dilation[0]}")
        parts = [f"output_padding_{n}: {v}" for n, v in zip(names, output_padding)] \
            + [f"stride_{n}: {v}" for n, v in zip(names, stride)] \
            + [f"dilation_{n}: {v}" for n, v in zip(names, dilation)]
        raise RuntimeError("output padding must be smaller than either stride or dilation, but "
                           f"got {' '.join(parts)}")
    _check_weight(input, weight, bias, k, groups, transposed=True)
    size = tuple((i - 1) * s - 2 * p + d * (kk - 1) + op + 1 for i, s, p, d, kk, op in
                 zip(input.shape[2:], stride, padding, dilation, weight.shape[2:],
                     output_padding))
    if any(s <= 0 for s in size):
        raise RuntimeError(f"Given input size per channel: "
                           f"({' x '.join(map(str, input.shape[2:]))}). Calculated output size "
                           f"per channel: ({' x '.join(map(str, size))}). Output size is too "
                           "small")
    shape = (input.shape[0], weight.shape[1] * groups) + size
    pairs = tuple((p, p) for p in padding)
    if is_half(input) and any(op >= st for op, st in zip(output_padding, stride)):
        out = _transposed_in_half(input, weight, shape, stride, pairs, dilation, groups)
    else:
        out = convolution_input_grad_op(input, weight, shape=shape, stride=stride,
                                        padding=pairs, dilation=dilation, groups=groups)
    out = _add_bias(out, bias, k)
    return out.squeeze(0) if unbatched else out


def _transposed_in_half(input, weight, shape, stride, padding, dilation, groups):
    """A half-precision transposed convolution as torch's slow CPU kernel computes it (torch
    takes that kernel, not oneDNN, when an output_padding reaches its stride): the columns
    ``weight^T @ input`` in float32, rounded to half, then summed into the output in half
    precision one kernel tap after another (col2im)."""
    n, cin = input.shape[:2]
    ksize, osize = tuple(weight.shape[2:]), tuple(input.shape[2:])
    rows = weight.shape[1] * _prod(ksize)  # Cout/G * K
    w = weight.float().reshape(groups, cin // groups, rows).transpose(1, 2)
    x = input.float().reshape(n, groups, cin // groups, _prod(osize))
    cols = w.unsqueeze(0).matmul(x).reshape(n, groups * rows, _prod(osize)).to(input.dtype)
    return col2im_op(cols, shape=shape, ksize=ksize, osize=osize, stride=stride,
                     padding=padding, dilation=dilation)


# ================================================================ public functions


@autocast_policy("lower")
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution (cross-correlation) of ``input`` (N, C_in, L) or (C_in, L) with
    ``weight`` (C_out, C_in / groups, kL).

    ``padding`` is an int, a tuple, ``'valid'`` (none) or ``'same'`` (output as long as the
    input; stride 1 only).

    Example::

        >>> F.conv1d(ember.ones(1, 2, 5), ember.ones(3, 2, 3)).shape
        ember.Size([1, 3, 3])
    """
    return _conv(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


@autocast_policy("lower")
def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution (cross-correlation) of ``input`` (N, C_in, H, W) or (C_in, H, W) with
    ``weight`` (C_out, C_in / groups, kH, kW).

    ``padding`` is an int, a tuple, ``'valid'`` (none) or ``'same'`` (output as large as the
    input; stride 1 only).

    Example::

        >>> F.conv2d(ember.ones(1, 1, 28, 28), ember.ones(6, 1, 5, 5)).shape
        ember.Size([1, 6, 24, 24])
    """
    return _conv(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


@autocast_policy("lower")
def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D convolution (cross-correlation) of ``input`` (N, C_in, D, H, W) or (C_in, D, H, W)
    with ``weight`` (C_out, C_in / groups, kD, kH, kW).

    Example::

        >>> F.conv3d(ember.ones(1, 2, 4, 4, 4), ember.ones(3, 2, 3, 3, 3)).shape
        ember.Size([1, 3, 2, 2, 2])
    """
    return _conv(input, weight, bias, stride, padding, dilation, groups, 3, "conv3d")


@autocast_policy("lower")
def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """1-D transposed convolution ("deconvolution") of ``input`` (N, C_in, L) with ``weight``
    (C_in, C_out / groups, kL): the gradient of :func:`conv1d` with respect to its input.

    Output length: ``(L - 1) * stride - 2 * padding + dilation * (kL - 1) + output_padding + 1``.

    Example::

        >>> F.conv_transpose1d(ember.ones(1, 2, 4), ember.ones(2, 3, 3), stride=2).shape
        ember.Size([1, 3, 9])
    """
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups,
                           dilation, 1, "conv_transpose1d")


@autocast_policy("lower")
def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """2-D transposed convolution of ``input`` (N, C_in, H, W) with ``weight``
    (C_in, C_out / groups, kH, kW): the gradient of :func:`conv2d` with respect to its input.

    Example::

        >>> F.conv_transpose2d(ember.ones(1, 4, 5, 5), ember.ones(4, 2, 3, 3), stride=2).shape
        ember.Size([1, 2, 11, 11])
    """
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups,
                           dilation, 2, "conv_transpose2d")


@autocast_policy("lower")
def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """3-D transposed convolution of ``input`` (N, C_in, D, H, W) with ``weight``
    (C_in, C_out / groups, kD, kH, kW).

    Example::

        >>> F.conv_transpose3d(ember.ones(1, 2, 3, 3, 3), ember.ones(2, 1, 2, 2, 2)).shape
        ember.Size([1, 1, 4, 4, 4])
    """
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups,
                           dilation, 3, "conv_transpose3d")


# ---------------------------------------------------------------- unfold / fold


def _fold_int(value, pos, arg, name):
    """One element of a fold/unfold size list: an int (NumPy and 0-dim integer tensors too), a
    float or str refused with torch's TypeError rather than truncated or left to ``int()``."""
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{name}(): argument '{arg}' must be tuple of ints, but found element "
                        f"of type {type(value).__name__} at pos {pos}") from None


def _fold_ints(value, arg, name):
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return (int(value),) * 2
    if isinstance(value, (tuple, list)):
        value = tuple(_fold_int(v, i, arg, name) for i, v in enumerate(value))
        if len(value) != 2:
            raise RuntimeError(f"It is expected {arg} equals to 2, but got size {len(value)}")
        return value
    raise TypeError(f"{name}(): argument '{arg}' must be tuple of ints, not "
                    f"{type(value).__name__}")


def _fold_geometry(kernel_size, dilation, padding, stride, name):
    ksize = _fold_ints(kernel_size, "kernel_size", name)
    dilation = _fold_ints(dilation, "dilation", name)
    padding = _fold_ints(padding, "padding", name)
    stride = _fold_ints(stride, "stride", name)
    if any(k <= 0 for k in ksize):
        raise RuntimeError(f"kernel size should be greater than zero, but got kernel_height: "
                           f"{ksize[0]} kernel_width: {ksize[1]}")
    if any(s <= 0 for s in stride):
        raise RuntimeError(f"stride should be greater than zero, but got stride_height: "
                           f"{stride[0]} stride_width: {stride[1]}")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"dilation should be greater than zero, but got dilation_height: "
                           f"{dilation[0]} dilation_width: {dilation[1]}")
    if any(p < 0 for p in padding):
        raise RuntimeError(f"padding should be non-negative, but got pad_height: {padding[0]} "
                           f"pad_width: {padding[1]}")
    return ksize, dilation, padding, stride


def _check_fold_dtype(input, what):
    if input.dtype.category == dt._INT:
        raise NotImplementedError(f"\"{what}_out_cpu\" not implemented for "
                                  f"'{_scalar_name(input)}'")


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Extract sliding local blocks (im2col): (N, C, H, W) -> (N, C * kH * kW, L), where ``L``
    is the number of block positions.

    Example::

        >>> F.unfold(ember.ones(1, 2, 4, 4), kernel_size=2).shape
        ember.Size([1, 8, 9])
    """
    _check_tensor(input, "unfold", "input", 1)
    ksize, dilation, padding, stride = _fold_geometry(kernel_size, dilation, padding, stride,
                                                      "unfold")
    if input.ndim < 3:
        rank = builtins.max(input.ndim, 1)
        raise IndexError(f"Dimension out of range (expected to be in range of [{-rank}, "
                         f"{rank - 1}], but got 2)")
    if input.ndim not in (3, 4) or any(s == 0 for s in input.shape[1:]):
        raise RuntimeError("Expected 3D or 4D (batch mode) tensor with possibly 0 batch size "
                           f"and other non-zero dimensions for input, but got: "
                           f"{list(input.shape)}")
    _check_fold_dtype(input, "im2col")
    unbatched = input.ndim == 3
    if unbatched:
        input = input.unsqueeze(0)
    osize = tuple((s + 2 * p - d * (k - 1) - 1) // st + 1 for s, p, d, k, st in
                  zip(input.shape[2:], padding, dilation, ksize, stride))
    if any(o < 1 for o in osize):
        raise RuntimeError(f"Given input with spatial size ({input.shape[2]}, {input.shape[3]}), "
                           f"kernel_size=({ksize[0]}, {ksize[1]}), dilation=({dilation[0]}, "
                           f"{dilation[1]}), padding=({padding[0]}, {padding[1]}), calculated "
                           f"shape of the array of sliding blocks as ({osize[0]}, {osize[1]}), "
                           "but its components must be at least one.")
    out = im2col_op(input, ksize=ksize, osize=osize, stride=stride,
                    padding=tuple((p, p) for p in padding), dilation=dilation)
    return out.squeeze(0) if unbatched else out


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Combine sliding local blocks into a tensor, summing overlaps (col2im):
    (N, C * kH * kW, L) -> (N, C, H, W) with ``(H, W) = output_size``.

    Example::

        >>> F.fold(ember.ones(1, 8, 9), output_size=(4, 4), kernel_size=2).shape
        ember.Size([1, 2, 4, 4])
    """
    _check_tensor(input, "fold", "input", 1)
    output_size = _fold_ints(output_size, "output_size", "fold")
    ksize, dilation, padding, stride = _fold_geometry(kernel_size, dilation, padding, stride,
                                                      "fold")
    if input.ndim not in (2, 3) or any(s == 0 for s in input.shape[1:]):
        raise RuntimeError("Expected 2D or 3D (batch mode) tensor for input with possibly 0 "
                           f"batch size and non-zero dimensions for input, but got: "
                           f"{list(input.shape)}")
    _check_fold_dtype(input, "col2im")
    unbatched = input.ndim == 2
    if unbatched:
        input = input.unsqueeze(0)
    n, ck, length = input.shape
    kprod = ksize[0] * ksize[1]
    if ck % kprod:
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product "
                           f"of kernel_size, but got input.size(1)={ck} and "
                           f"kernel_size=({ksize[0]}, {ksize[1]}).")
    osize = tuple((s + 2 * p - d * (k - 1) - 1) // st + 1 for s, p, d, k, st in
                  zip(output_size, padding, dilation, ksize, stride))
    if any(o < 1 for o in osize):
        raise RuntimeError(f"Given output_size=({output_size[0]}, {output_size[1]}), "
                           f"kernel_size=({ksize[0]}, {ksize[1]}), dilation=({dilation[0]}, "
                           f"{dilation[1]}), padding=({padding[0]}, {padding[1]}), calculated "
                           f"shape of the array of sliding blocks as ({osize[0]}, {osize[1]}), "
                           "but its components must be at least one.")
    if osize[0] * osize[1] != length:
        raise RuntimeError(f"Given output_size=({output_size[0]}, {output_size[1]}), "
                           f"kernel_size=({ksize[0]}, {ksize[1]}), dilation=({dilation[0]}, "
                           f"{dilation[1]}), padding=({padding[0]}, {padding[1]}), "
                           f"stride=({stride[0]}, {stride[1]}), expected size of input's "
                           f"dimension 2 to match the calculated number of sliding blocks "
                           f"{osize[0]} * {osize[1]} = {osize[0] * osize[1]}, but got "
                           f"input.size(2)={length}.")
    shape = (n, ck // kprod) + output_size
    out = col2im_op(input, shape=shape, ksize=ksize, osize=osize, stride=stride,
                    padding=tuple((p, p) for p in padding), dilation=dilation)
    return out.squeeze(0) if unbatched else out
