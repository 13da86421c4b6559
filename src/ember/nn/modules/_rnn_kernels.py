"""The recurrent layers' fused operators and their step loop, for :mod:`ember.nn.modules.rnn`.

An LSTM or GRU step's gate arithmetic is one op (kernel, meta rule, derivative, jvp, ONNX
symbolic), the hidden product ``h @ W^T`` one op that reads a contiguous W^T, and an unpacked
LSTM layer without projections one op over all its steps. ``_rnn`` runs every layer and
direction over the packed steps. Example::

    >>> import ember
    >>> out, h = ember.nn.RNN(3, 4)(ember.ones(5, 1, 3))  # runs _rnn here
    >>> tuple(out.shape)
    (5, 1, 4)
"""

from __future__ import annotations

import numpy as np

from ... import _dtype as dt
from ..._tensor import _trace_state
from ...autograd import forward_ad as _forward_ad
from ...autograd import grad_mode
from ...ops._registry import defop
from ...ops._vmap_rules import batching
from ...ops.linalg._onednn_gemm import matrix_product
from ...ops.shape import cat, stack
from .._functional.dropout import dropout as _dropout
from .._functional.linear import linear

# ------------------------------------------------------------------ fused cell arithmetic
#
# The pointwise part of an LSTM or GRU step is one op each (forward and backward), instead of
# the dozen ops of the composition: per-step Python overhead dominates small recurrent models.
# The forward kernel also returns a workspace (the activated gates), a non-differentiable
# output that the backward kernel reads instead of recomputing the activations. When backward
# itself is recorded (``create_graph=True``), the derivative is instead written with ember ops
# from the saved inputs, so that double backward works.

_LOW = dt.LOW_PRECISION

# why the recurrent kernels decline vmap's batching rule
_PACKED_WORKSPACE = ("not batched yet: its workspace packs every row's gates before every row's "
                     "cell values, so a batch folded into the rows would not split into one "
                     "workspace per element")
_WHOLE_LAYER = ("not batched yet: a whole recurrent layer's kernel; vmap runs it per element "
                "(each element's sequence is one call)")


def _backward_kernel_opt_outs(batch):
    """The rules a first-order backward kernel declines: vmap (for the reason ``batch``), a
    derivative of its own, and ONNX."""
    return {"batch": batch, "derivative": "a first-order backward kernel (no graph recorded)",
            "onnx": "a backward kernel: exported models run inference"}


def _sigmoid_(xp, a):
    """``a <- 1 / (1 + exp(-a))`` in place (NumPy's exp is vectorised; scipy's expit is not)."""
    xp.negative(a, out=a)
    xp.exp(a, out=a)
    xp.add(a, 1, out=a)
    xp.reciprocal(a, out=a)


def _to_compute(arrays):
    """float16/bfloat16 operands in float32 (NumPy has no fast kernels for them)."""
    if arrays[0].dtype in _LOW:
        return tuple(a.astype(np.float32) for a in arrays)
    return arrays


def _cast_back(results, dtype):
    if dtype in _LOW:
        return tuple(r.astype(dtype) for r in results)
    return results


def _ws_dtype(dtype):
    dtype = dtype.np if isinstance(dtype, dt.dtype) else np.dtype(dtype)
    return np.dtype(np.float32) if dtype in _LOW else dtype


def _blocks(ws, batch, widths):
    """Contiguous (batch, w) blocks laid one after another in the flat workspace ``ws``."""
    out, start = [], 0
    for width in widths:
        out.append(ws[start:start + batch * width].reshape(batch, width))
        start += batch * width
    return out


def _lstm_cell_into(xp, xw, hw, c, ws, h_new, c_new):
    """One LSTM step's arithmetic into the given buffers: ``ws`` (flat workspace: the
    activated gates (i, f, g, o) as one block, then tanh(c')), ``h_new`` and ``c_new``."""
    batch, hidden = c.shape
    gates, tc = _blocks(ws, batch, (4 * hidden, hidden))
    xp.add(xw, hw, out=gates)
    g = gates[:, 2 * hidden:3 * hidden]
    xp.tanh(g, out=tc)
    _sigmoid_(xp, gates)  # one pass over the whole block, then g is put back from tc
    g[...] = tc
    xp.multiply(gates[:, hidden:2 * hidden], c, out=c_new)
    c_new += gates[:, :hidden] * g
    xp.tanh(c_new, out=tc)
    xp.multiply(gates[:, 3 * hidden:], tc, out=h_new)


def _lstm_cell_kernel(xp, xw, hw, c):
    dtype = xw.dtype
    xw, hw, c = _to_compute((xw, hw, c))
    batch, hidden = c.shape
    ws = xp.empty(5 * batch * hidden, xw.dtype)
    h_new, c_new = xp.empty((batch, hidden), xw.dtype), xp.empty((batch, hidden), xw.dtype)
    _lstm_cell_into(xp, xw, hw, c, ws, h_new, c_new)
    h_new, c_new = _cast_back((h_new, c_new), dtype)
    return h_new, c_new, ws


def _lstm_cell_meta(xw, hw, c):
    batch, hidden = c.shape
    return ((batch, hidden), xw.dtype), ((batch, hidden), xw.dtype), \
        ((5 * batch * hidden,), _ws_dtype(xw.dtype))


_lstm_cell_op = defop("_lstm_cell", meta=_lstm_cell_meta, save_inputs=True, save_output=True,
                      multi_output=True, differentiable_outputs=(0, 1),
                      grad_name="LstmCellBackward0", kind="nn")(_lstm_cell_kernel)


@_lstm_cell_op.defonnx
def _lstm_cell_onnx(ctx, xw, hw, c):
    # gates (input, forget, cell, output) = xw + hw; c' = f c + i g; h' = o tanh(c')
    gates = ctx.op("Add", xw, hw)
    i, f, g, o = ctx.op("Split", gates, ctx.int64s([ctx.static(ctx.in_dims(2)[1])] * 4),
                        outputs=4, axis=1)
    i, f, o, g = ctx.op("Sigmoid", i), ctx.op("Sigmoid", f), ctx.op("Sigmoid", o), \
        ctx.op("Tanh", g)
    c_new = ctx.op("Add", ctx.op("Mul", f, c), ctx.op("Mul", i, g))
    h_new = ctx.op("Mul", o, ctx.op("Tanh", c_new))
    return h_new, c_new, None  # the third output is the backward pass's workspace


_lstm_cell_op.opt_out("batch", _PACKED_WORKSPACE)


def _lstm_cell_backward_into(xp, gh, gc, c, ws, d):
    """One LSTM step's backward: the gate gradients into ``d`` (batch, 4, hidden); returns the
    gradient of the previous cell state."""
    batch, hidden = c.shape
    gates, tc = _blocks(ws, batch, (4 * hidden, hidden))
    act = gates.reshape(batch, 4, hidden)
    i, f, g, o = act[:, 0], act[:, 1], act[:, 2], act[:, 3]
    dc = tc * tc
    xp.subtract(1, dc, out=dc)
    dc *= o
    dc *= gh
    dc += gc                                  # gradient of c' (through h' and directly)
    xp.multiply(dc, g, out=d[:, 0])           # gradients of the activated gates ...
    xp.multiply(dc, c, out=d[:, 1])
    xp.multiply(dc, i, out=d[:, 2])
    xp.multiply(gh, tc, out=d[:, 3])
    slope = xp.subtract(1, act)               # ... times the slopes of the activations:
    slope *= act                              # s * (1 - s) for sigmoid,
    xp.multiply(g, g, out=slope[:, 2])
    xp.subtract(1, slope[:, 2], out=slope[:, 2])  # 1 - g^2 for tanh
    d *= slope
    dc *= f
    return dc


def _lstm_cell_backward_kernel(xp, gh, gc, c, ws):
    dtype = gh.dtype
    gh, gc, c = _to_compute((gh, gc, c))
    batch, hidden = c.shape
    d = xp.empty((batch, 4, hidden), ws.dtype)
    dc = _lstm_cell_backward_into(xp, gh, gc, c, ws, d)
    return _cast_back((d.reshape(batch, 4 * hidden), dc), dtype)


def _lstm_cell_backward_meta(gh, gc, c, ws):
    batch, hidden = c.shape
    return ((batch, 4 * hidden), gh.dtype), ((batch, hidden), gh.dtype)


_lstm_cell_backward_op = defop("_lstm_cell_backward", meta=_lstm_cell_backward_meta,
                               multi_output=True, kind="nn",
                               opt_outs=_backward_kernel_opt_outs(_PACKED_WORKSPACE))(
                                   _lstm_cell_backward_kernel)


@_lstm_cell_op.defderivative
def _lstm_cell_derivative(ctx, gh, gc, gws):
    xw, hw, c = ctx.inputs
    if not grad_mode.state.enabled:
        d, dc = _lstm_cell_backward_op(gh, gc, c, ctx.output[2])
        return d, d, dc
    # create_graph: the same formulas with ember ops, differentiable in everything
    i, f, g, o = (xw + hw).chunk(4, 1)
    i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
    tc = (f * c + i * g).tanh()
    dc = gc + gh * o * (1 - tc * tc)
    d = cat([dc * g * i * (1 - i), dc * c * f * (1 - f), dc * i * (1 - g * g),
             gh * tc * o * (1 - o)], 1)
    return d, d, dc * f


def _gru_cell_kernel(xp, xw, hw, h, b=None):
    dtype = xw.dtype
    xw, hw, h = _to_compute((xw, hw, h))
    batch, hidden = h.shape
    # flat workspace: r and z as one block, n, then W_hn h + b_hn
    ws = xp.empty(4 * batch * hidden, xw.dtype)
    rz, n, hn = _blocks(ws, batch, (2 * hidden, hidden, hidden))
    xp.add(xw[:, :2 * hidden], hw[:, :2 * hidden], out=rz)
    if b is not None:
        b = b.astype(xw.dtype, copy=False)
        xp.add(rz, b[:2 * hidden], out=rz)
        xp.add(hw[:, 2 * hidden:], b[2 * hidden:], out=hn)
    else:
        hn[...] = hw[:, 2 * hidden:]
    _sigmoid_(xp, rz)
    xp.multiply(rz[:, :hidden], hn, out=n)
    xp.add(n, xw[:, 2 * hidden:], out=n)
    xp.tanh(n, out=n)
    h_new = h - n
    h_new *= rz[:, hidden:]
    h_new += n
    return _cast_back((h_new,), dtype)[0], ws


def _gru_cell_meta(xw, hw, h, b=None):
    batch, hidden = h.shape
    return ((batch, hidden), xw.dtype), ((4 * batch * hidden,), _ws_dtype(xw.dtype))


_gru_cell_op = defop("_gru_cell", meta=_gru_cell_meta, save_inputs=True, save_output=True,
                     multi_output=True, differentiable_outputs=(0,),
                     grad_name="GruCellBackward0", kind="nn")(_gru_cell_kernel)


@_gru_cell_op.defonnx
def _gru_cell_onnx(ctx, xw, hw, h, b=None):
    # r, z = sigmoid(x_rz + h_rz); n = tanh(x_n + r * h_n); h' = (h - n) z + n
    if b is not None:
        hw = ctx.op("Add", hw, b)
    sizes = ctx.int64s([ctx.static(ctx.in_dims(2)[1])] * 3)
    x_r, x_z, x_n = ctx.op("Split", xw, sizes, outputs=3, axis=1)
    h_r, h_z, h_n = ctx.op("Split", hw, sizes, outputs=3, axis=1)
    r = ctx.op("Sigmoid", ctx.op("Add", x_r, h_r))
    z = ctx.op("Sigmoid", ctx.op("Add", x_z, h_z))
    n = ctx.op("Tanh", ctx.op("Add", x_n, ctx.op("Mul", r, h_n)))
    return ctx.op("Add", ctx.op("Mul", ctx.op("Sub", h, n), z), n), None


_gru_cell_op.opt_out("batch", _PACKED_WORKSPACE)


def _gru_cell_backward_kernel(xp, gh, h, ws):
    dtype = gh.dtype
    gh, h = _to_compute((gh, h))
    batch, hidden = h.shape
    rz, n, hn = _blocks(ws, batch, (2 * hidden, hidden, hidden))
    r, z = rz[:, :hidden], rz[:, hidden:]
    dx = xp.empty((batch, 3 * hidden), ws.dtype)
    drz, dn = dx[:, :2 * hidden], dx[:, 2 * hidden:]
    dr, dz = drz[:, :hidden], drz[:, hidden:]
    xp.multiply(n, n, out=dn)
    xp.subtract(1, dn, out=dn)
    dn *= xp.subtract(1, z)
    dn *= gh                                  # gradient through n = tanh(...)
    xp.subtract(h, n, out=dz)
    dz *= gh                                  # gradient of z
    xp.multiply(dn, hn, out=dr)               # gradient of r
    slope = xp.subtract(1, rz)
    slope *= rz
    drz *= slope                              # through r, z = sigmoid(...)
    dhw = xp.empty_like(dx)
    dhw[:, :2 * hidden] = drz
    xp.multiply(dn, r, out=dhw[:, 2 * hidden:])
    return _cast_back((dx, dhw, gh * z), dtype)


def _gru_cell_backward_meta(gh, h, ws):
    batch, hidden = h.shape
    spec = ((batch, 3 * hidden), gh.dtype)
    return spec, spec, ((batch, hidden), gh.dtype)


_gru_cell_backward_op = defop("_gru_cell_backward", meta=_gru_cell_backward_meta,
                              multi_output=True, kind="nn",
                              opt_outs=_backward_kernel_opt_outs(_PACKED_WORKSPACE))(
                                  _gru_cell_backward_kernel)


@_gru_cell_op.defderivative
def _gru_cell_derivative(ctx, gh, gws):
    saved = ctx.inputs
    xw, hw, h = saved[:3]
    b = saved[3] if len(saved) > 3 else None
    if not grad_mode.state.enabled:
        dx, dhw, dh = _gru_cell_backward_op(gh, h, ctx.output[1])
    else:
        # create_graph: the same formulas with ember ops, differentiable in everything
        x_r, x_z, x_n = xw.chunk(3, 1)
        h_r, h_z, h_n = (hw if b is None else hw + b).chunk(3, 1)
        r, z = (x_r + h_r).sigmoid(), (x_z + h_z).sigmoid()
        n = (x_n + r * h_n).tanh()
        dn = gh * (1 - z) * (1 - n * n)
        dz = gh * (h - n) * z * (1 - z)
        dr = dn * h_n * r * (1 - r)
        dx = cat([dr, dz, dn], 1)
        dhw = cat([dr, dz, dn * r], 1)
        dh = gh * z
    if b is None:
        return dx, dhw, dh
    return dx, dhw, dh, dhw.sum(0)


def _recurrent_mm_kernel(xp, h, w_t, w, b=None):
    dtype = h.dtype
    if dtype in _LOW:
        h, w_t = h.astype(np.float32), w_t.astype(np.float32)
    out = matrix_product(xp, h, w_t)
    if b is not None:
        out += b  # in place: no second (N, G) array, as BLAS's beta would do
    return out.astype(dtype) if dtype in _LOW else out


def _recurrent_mm_meta(h, w_t, w, b=None):
    return (h.shape[0], w_t.shape[1]), h.dtype


# ``h @ W^T (+ b)`` given both W^T and W, so that both the forward's product and the
# backward's ``grad @ W`` can read a contiguous matrix (the caller passes W^T contiguous where
# it is reused): BLAS is much slower on a transposed operand for these skinny shapes. The
# gradient goes to W^T (and from there to W); W's own input is there only for its layout. The
# bias is added inside the kernel (the input projection of a whole sequence is large).
_recurrent_mm_op = defop("_recurrent_mm", meta=_recurrent_mm_meta,
                         grad_name="AddmmBackward0", kind="nn",
                         autocast={"cuda": "lower"})(_recurrent_mm_kernel)


@_recurrent_mm_op.defonnx
def _recurrent_mm_onnx(ctx, h, w_t, w, b=None):
    product = ctx.op("MatMul", h, w_t)
    return product if b is None else ctx.op("Add", product, b)


_recurrent_mm_op.defbatch(batching.samples)


@_recurrent_mm_op.defderivative
def _recurrent_mm_derivative(ctx, grad):
    h, w_t, w = ctx.inputs[:3]
    need = ctx.needs_input_grad
    return ((grad.matmul(w) if need[0] else None), (h.t().matmul(grad) if need[1] else None),
            None, (grad.sum(0) if len(need) > 3 and need[3] else None))


def _weight_mm_kernel(xp, h, w, b=None, b2=None):
    if b2 is not None:  # the cells' two biases, summed first as ``b_ih + b_hh`` was
        b = xp.add(b, b2)
    return _recurrent_mm_kernel(xp, h, w.T, w, b)


def _weight_mm_meta(h, w, b=None, b2=None):
    return (h.shape[0], w.shape[0]), h.dtype


# ``h @ W^T (+ b (+ b2))`` from W itself: the cells' products (whose W^T would be a fresh view
# each step, one more op in the forward and one more node in the backward; so would the sum of
# the two biases). The arithmetic is :data:`_recurrent_mm_op`'s on the same arrays, and W's
# gradient is the same transposed product, so results do not change.
_weight_mm_op = defop("_weight_mm", meta=_weight_mm_meta, grad_name="AddmmBackward0",
                      kind="nn", autocast={"cuda": "lower"})(_weight_mm_kernel)


@_weight_mm_op.defonnx
def _weight_mm_onnx(ctx, h, w, b=None, b2=None):
    product = ctx.op("MatMul", h, ctx.op("Transpose", w, perm=[1, 0]))
    if b2 is not None:
        b = ctx.op("Add", b, b2)
    return product if b is None else ctx.op("Add", product, b)


_weight_mm_op.defbatch(batching.samples)


@_weight_mm_op.defderivative
def _weight_mm_derivative(ctx, grad):
    h, w = ctx.inputs[:2]
    need = ctx.needs_input_grad
    bias = grad.sum(0) if any(need[2:]) else None
    # W's gradient as grad^T @ h (torch's addmm formula): one transposed view, not two
    return ((grad.matmul(w) if need[0] else None), (grad.t().matmul(h) if need[1] else None),
            *(bias if needed else None for needed in need[2:]))


def _total(*terms):
    total = None
    for term in terms:
        if term is not None:
            total = term if total is None else total + term
    return total


def _or_zeros(tangents, primals):
    return [p.new_zeros(p.shape) if t is None else t for t, p in zip(tangents, primals)]


# Forward-mode rules (``Op.jvp``), written with ember ops on the inputs like the derivatives.

def _recurrent_mm_jvp(primals, tangents, result):
    (h, w_t), (t_h, t_wt) = primals[:2], tangents[:2]  # W's tangent arrives through W^T's
    t_b = tangents[3] if len(tangents) > 3 else None
    return _total(None if t_h is None else t_h.matmul(w_t),
                  None if t_wt is None else h.matmul(t_wt), t_b)


def _lstm_cell_jvp(primals, tangents, results):
    xw, hw, c = primals
    t_xw, t_hw, t_c = _or_zeros(tangents, primals)
    i, f, g, o = (xw + hw).chunk(4, 1)
    i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
    d_i, d_f, d_g, d_o = (t_xw + t_hw).chunk(4, 1)
    tc = results[1].tanh()
    t_c_new = d_f * f * (1 - f) * c + f * t_c + d_i * i * (1 - i) * g + i * d_g * (1 - g * g)
    t_h_new = d_o * o * (1 - o) * tc + o * (1 - tc * tc) * t_c_new
    return t_h_new, t_c_new, None


def _gru_cell_jvp(primals, tangents, results):
    xw, hw, h = primals[:3]
    b = primals[3] if len(primals) > 3 else None
    t_xw, t_hw, t_h = _or_zeros(tangents[:3], primals[:3])
    if b is not None:
        hw = hw + b
        if tangents[3] is not None:
            t_hw = t_hw + tangents[3]
    x_r, x_z, x_n = xw.chunk(3, 1)
    h_r, h_z, h_n = hw.chunk(3, 1)
    r, z = (x_r + h_r).sigmoid(), (x_z + h_z).sigmoid()
    n = (x_n + r * h_n).tanh()
    d_xr, d_xz, d_xn = t_xw.chunk(3, 1)
    d_hr, d_hz, d_hn = t_hw.chunk(3, 1)
    t_r = (d_xr + d_hr) * r * (1 - r)
    t_z = (d_xz + d_hz) * z * (1 - z)
    t_n = (d_xn + t_r * h_n + r * d_hn) * (1 - n * n)
    return t_n * (1 - z) + t_z * (h - n) + z * t_h, None


def _weight_mm_jvp(primals, tangents, result):
    (h, w), (t_h, t_w) = primals[:2], tangents[:2]
    return _total(None if t_h is None else t_h.matmul(w.t()),
                  None if t_w is None else h.matmul(t_w.t()), *tangents[2:])


_recurrent_mm_op.jvp = _recurrent_mm_jvp
_weight_mm_op.jvp = _weight_mm_jvp
_lstm_cell_op.jvp = _lstm_cell_jvp
_gru_cell_op.jvp = _gru_cell_jvp


def _hidden_mm(h, w_t, w):
    """``h @ w_t`` (``w_t`` is ``w^T``, contiguous, or None for a cell's one step) through
    :data:`_recurrent_mm_op` (:data:`_weight_mm_op` when None)."""
    if w_t is None:
        if h._data.dtype is w._data.dtype:
            return _weight_mm_op(h, w)
        w_t = w.t()
    if h._data.dtype is w_t._data.dtype:
        return _recurrent_mm_op(h, w_t, w)
    return h.matmul(w_t)  # torch's error for mismatched dtypes


# ------------------------------------------------------------------ one step of each cell
#
# ``xw`` is the step's input projection from ``_project``; ``w_hh`` (and ``w_hr``, or None) is
# a pair ``(W^T contiguous, W)`` for :func:`_hidden_mm`. Except for GRU (whose b_hn sits inside
# ``r * (...)``), b_hh is folded into ``xw`` up front.


def _step_tanh(xw, h, c, w_hh, b_hh, w_hr):
    return (xw + _hidden_mm(h, *w_hh)).tanh(), None


def _step_relu(xw, h, c, w_hh, b_hh, w_hr):
    return (xw + _hidden_mm(h, *w_hh)).relu(), None


def _step_lstm(xw, h, c, w_hh, b_hh, w_hr):
    hw = _hidden_mm(h, *w_hh)
    if c._data.dtype is hw._data.dtype and xw._data.dtype is hw._data.dtype:
        h, c, _ = _lstm_cell_op(xw, hw, c)
    else:  # mixed dtypes (a float64 c with float32 weights): promote as the ops do
        i, f, g, o = (xw + hw).chunk(4, 1)
        c = f.sigmoid() * c + i.sigmoid() * g.tanh()
        h = o.sigmoid() * c.tanh()
    if w_hr is not None:
        h = _hidden_mm(h, *w_hr)
    return h, c


def _step_gru(xw, h, c, w_hh, b_hh, w_hr):
    hw = _hidden_mm(h, *w_hh)
    if xw._data.dtype is hw._data.dtype and (b_hh is None or b_hh._data.dtype is hw._data.dtype):
        if b_hh is None:
            return _gru_cell_op(xw, hw, h)[0], None
        return _gru_cell_op(xw, hw, h, b_hh)[0], None
    if b_hh is not None:
        hw = hw + b_hh
    x_r, x_z, x_n = xw.chunk(3, 1)
    h_r, h_z, h_n = hw.chunk(3, 1)
    r = (x_r + h_r).sigmoid()
    z = (x_z + h_z).sigmoid()
    n = (x_n + r * h_n).tanh()
    return n + z * (h - n), None


_STEPS = {"RNN_TANH": _step_tanh, "RNN_RELU": _step_relu, "LSTM": _step_lstm, "GRU": _step_gru}


def _project(mode, x, w_ih, b_ih, b_hh):
    """``x @ W_ih^T + b_ih`` (+ ``b_hh`` where the cell adds it straight to the gates)."""
    dtype = w_ih._data.dtype
    if b_ih is not None and mode != "GRU":
        if x._data.dtype is dtype and b_ih._data.dtype is dtype and b_hh._data.dtype is dtype \
                and dtype not in _LOW:
            return _weight_mm_op(x, w_ih, b_ih, b_hh)  # the biases summed in the kernel
        b_ih = b_ih + b_hh
    if x._data.dtype is not dtype or (b_ih is not None and b_ih._data.dtype is not dtype):
        return linear(x, w_ih, b_ih)  # promotes, or raises torch's error
    if b_ih is None:
        return _weight_mm_op(x, w_ih)
    return _weight_mm_op(x, w_ih, b_ih)


# ------------------------------------------------------------------ one LSTM layer as one op
#
# Unpacked LSTM layers without projections run all their steps in one op: the forward loops
# over the steps inside the kernel (no per-step tensors or graph nodes), and the first-order
# backward loops back in one kernel, collecting the gate gradients of every step so that the
# hidden-to-hidden weight gradient is one GEMM over the whole sequence instead of one skinny
# GEMM (and one accumulation) per step.


def _layer_order(steps, reverse):
    return range(steps - 1, -1, -1) if reverse else range(steps)


def _lstm_layer_kernel(xp, xw, h0, c0, w_t, w, *, steps, reverse):
    """All ``steps`` of an LSTM layer: ``xw`` (steps * B, 4H) input projections (biases in),
    ``w_t`` = W_hh^T (H, 4H) contiguous. Returns the outputs (steps * B, H), the last h and c,
    the cell state after every step and every step's workspace (for the backward)."""
    batch, hidden = h0.shape
    out = xp.empty((steps, batch, hidden), xw.dtype)
    cs = xp.empty((steps, batch, hidden), xw.dtype)
    ws = xp.empty((steps, 5 * batch * hidden), xw.dtype)
    hw = xp.empty((batch, 4 * hidden), xw.dtype)
    xw3 = xw.reshape(steps, batch, 4 * hidden)
    h, c = h0, c0
    for t in _layer_order(steps, reverse):
        matrix_product(xp, h, w_t, out=hw)
        _lstm_cell_into(xp, xw3[t], hw, c, ws[t], out[t], cs[t])
        h, c = out[t], cs[t]
    return out.reshape(steps * batch, hidden), h.copy(), c.copy(), cs, ws


def _lstm_layer_meta(xw, h0, c0, w_t, w, *, steps, reverse):
    batch, hidden = h0.shape
    state = ((batch, hidden), xw.dtype)
    return ((steps * batch, hidden), xw.dtype), state, state, \
        ((steps, batch, hidden), xw.dtype), ((steps, 5 * batch * hidden), xw.dtype)


_lstm_layer_op = defop("_lstm_layer", meta=_lstm_layer_meta, save_inputs=True,
                       save_output=True, multi_output=True, differentiable_outputs=(0, 1, 2),
                       grad_name="MkldnnRnnLayerBackward0", kind="nn")(_lstm_layer_kernel)
_lstm_layer_op.opt_out("onnx", "not used while a trace records: an export unrolls the cells")


_lstm_layer_op.opt_out("batch", _WHOLE_LAYER)


def _lstm_layer_backward_kernel(xp, g_out, g_h, g_c, h0, c0, w, out, cs, ws, *, steps,
                                reverse):
    """First-order gradients of :func:`_lstm_layer_kernel`: of ``xw``, ``h0``, ``c0`` and
    ``w_t``."""
    batch, hidden = h0.shape
    g3 = g_out.reshape(steps, batch, hidden)
    out3 = out.reshape(steps, batch, hidden)
    gates = xp.empty((steps, batch, 4, hidden), out.dtype)
    gh, gc = g_h.copy(), g_c
    forward = list(_layer_order(steps, reverse))
    for k in range(steps - 1, -1, -1):
        t = forward[k]
        gh += g3[t]
        c_prev = c0 if k == 0 else cs[forward[k - 1]]
        gc = _lstm_cell_backward_into(xp, gh, gc, c_prev, ws[t], gates[t])
        gh = matrix_product(xp, gates[t].reshape(batch, 4 * hidden), w)
    # the hidden state each step read, in step order: h0 first in the direction of the loop
    h_prev = xp.empty((steps, batch, hidden), out.dtype)
    if reverse:
        h_prev[:-1], h_prev[-1] = out3[1:], h0
    else:
        h_prev[0], h_prev[1:] = h0, out3[:-1]
    d_xw = gates.reshape(steps * batch, 4 * hidden)
    d_w_t = matrix_product(xp, h_prev.reshape(steps * batch, hidden).T, d_xw)
    return d_xw, gh, gc, d_w_t


def _lstm_layer_backward_meta(g_out, g_h, g_c, h0, c0, w, out, cs, ws, *, steps, reverse):
    batch, hidden = h0.shape
    state = ((batch, hidden), g_out.dtype)
    return ((steps * batch, 4 * hidden), g_out.dtype), state, state, \
        ((hidden, 4 * hidden), g_out.dtype)


_lstm_layer_backward_op = defop("_lstm_layer_backward", meta=_lstm_layer_backward_meta,
                                multi_output=True, kind="nn",
                                opt_outs=_backward_kernel_opt_outs(_WHOLE_LAYER))(
                                    _lstm_layer_backward_kernel)


@_lstm_layer_op.defderivative
def _lstm_layer_derivative(ctx, g_out, g_h, g_c, g_cs, g_ws, *, steps, reverse):
    xw, h0, c0, w_t, w = ctx.inputs
    if not grad_mode.state.enabled:
        out, _, _, cs, ws = ctx.output
        grads = _lstm_layer_backward_op(g_out, g_h, g_c, h0, c0, w, out, cs, ws, steps=steps,
                                        reverse=reverse)
        return (*grads, None)
    # create_graph: replay the steps with the per-step ops and differentiate the replay, so
    # that the gradient is itself differentiable in the inputs
    from ...autograd import grad as _grad

    inputs = [t for t in (xw, h0, c0, w_t) if t.requires_grad]
    chunks = xw.split(h0.shape[0])
    h, c = h0, c0
    outs = [None] * steps
    for t in _layer_order(steps, reverse):
        h, c = _step_lstm(chunks[t], h, c, (w_t, w), None, None)
        outs[t] = h
    found = iter(_grad((cat(outs), h, c), inputs, (g_out, g_h, g_c), create_graph=True,
                       allow_unused=True))
    return tuple(next(found) if t.requires_grad else None for t in (xw, h0, c0, w_t)) + (None,)


def _fused_layer_applies(step, xw, sizes, h0, c0, w_hh, w_hr):
    """Whether :data:`_lstm_layer_op` runs this layer: an LSTM without projections on an
    unpacked batch, one float32/float64 dtype throughout, and no trace or forward-mode AD
    recording the steps (the ONNX exporter and vmap know the per-step ops)."""
    if step is not _step_lstm or w_hr is not None or c0 is None or len(set(sizes)) != 1:
        return False
    dtype = xw._data.dtype
    if dtype not in (np.float32, np.float64) or h0.shape[0] != sizes[0]:
        return False
    if any(t._data.dtype != dtype for t in (h0, c0, w_hh)):
        return False
    tracer = _trace_state.tracer
    return (tracer is None or getattr(tracer, "whole_kernels", False)) and \
        _forward_ad._state.level is None


def _run_direction(step, xw, sizes, h0, c0, w_hh, b_hh, w_hr, reverse):
    """One layer in one direction over packed steps.

    ``xw`` is the (N, G) input projection of all steps; ``sizes`` the batch size of each step
    (non-increasing). Returns the (N, H_out) outputs and the final (h, c) of every sequence.
    """
    if _fused_layer_applies(step, xw, sizes, h0, c0, w_hh, w_hr):
        out, h, c, _, _ = _lstm_layer_op(xw, h0, c0, w_hh.t().contiguous(), w_hh,
                                         steps=len(sizes), reverse=reverse)
        return out, h, c
    # W^T made contiguous once per call (see _hidden_mm)
    w_hh = (w_hh.t().contiguous(), w_hh)
    w_hr = None if w_hr is None else (w_hr.t().contiguous(), w_hr)
    chunks = xw.split(list(sizes)) if len(sizes) > 1 else (xw,)
    outs = []
    if not reverse:
        h, c = h0, c0
        done_h, done_c = [], []
        for t, size in enumerate(sizes):
            rows = h.shape[0]
            if size < rows:
                h, h_end = h.split([size, rows - size])
                done_h.append(h_end)
                if c is not None:
                    c, c_end = c.split([size, rows - size])
                    done_c.append(c_end)
            h, c = step(chunks[t], h, c, w_hh, b_hh, w_hr)
            outs.append(h)
        if done_h:
            h = cat([h] + done_h[::-1])
            if c is not None:
                c = cat([c] + done_c[::-1])
        out = cat(outs) if len(outs) > 1 else outs[0]
        return out, h, c
    full = h0.shape[0]
    last = sizes[-1]
    h = h0 if last == full else h0.narrow(0, 0, last)
    c = c0 if c0 is None or last == full else c0.narrow(0, 0, last)
    for t in range(len(sizes) - 1, -1, -1):
        size = sizes[t]
        rows = h.shape[0]
        if size > rows:
            h = cat([h, h0.narrow(0, rows, size - rows)])
            if c is not None:
                c = cat([c, c0.narrow(0, rows, size - rows)])
        h, c = step(chunks[t], h, c, w_hh, b_hh, w_hr)
        outs.append(h)
    out = cat(outs[::-1]) if len(outs) > 1 else outs[0]
    return out, h, c


def _rnn(mode, data, sizes, hx, cx, weights, has_bias, has_proj, num_layers, dropout, training,
         bidirectional):
    """All layers and directions on packed ``data`` (N, input_size); ``hx``/``cx`` are
    ``(layers * directions, B, *)`` tensors. Returns (output ``(N, H_out * dirs)``, h_n, c_n)."""
    step = _STEPS[mode]
    dirs = 2 if bidirectional else 1
    per = 2 + (2 if has_bias else 0) + (1 if has_proj else 0)
    h0s = hx.unbind(0)
    c0s = cx.unbind(0) if cx is not None else None
    layer_input = data
    h_n, c_n = [], []
    for layer in range(num_layers):
        outs = []
        for direction in range(dirs):
            k = layer * dirs + direction
            w = weights[k * per:(k + 1) * per]
            w_ih, w_hh = w[0], w[1]
            b_ih, b_hh = (w[2], w[3]) if has_bias else (None, None)
            w_hr = w[-1] if has_proj else None
            xw = _project(mode, layer_input, w_ih, b_ih, b_hh)
            out, h, c = _run_direction(step, xw, sizes, h0s[k], None if c0s is None else c0s[k],
                                       w_hh, b_hh, w_hr, direction == 1)
            outs.append(out)
            h_n.append(h)
            c_n.append(c)
        layer_input = outs[0] if dirs == 1 else cat(outs, 1)
        if dropout > 0 and training and layer < num_layers - 1:
            layer_input = _dropout(layer_input, dropout, True)
    return layer_input, stack(h_n), (stack(c_n) if cx is not None else None)
