"""nn.functional: normalization (batch, instance, layer, group, RMS, local response).

Every form is a composite of ember ops (two-pass statistics: the mean first, then the mean of
squared deviations, which stays accurate when the mean is large), so gradients and double
backward come from the primitives. Per-channel factors are combined into one scale and one
shift before touching the full-size input, so the forward makes two passes over it after the
statistics. float16/bfloat16 inputs are normalised in float32 and rounded back, as torch's CPU
kernels accumulate in float32. Running statistics are updated in place without grad, with
torch's rule: ``running = (1 - momentum) * running + momentum * batch_stat``, the variance
being the unbiased one.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from ... import _dtype as dt
from ..._device import CPU
from ..._tensor import Tensor, _trace_state
from ...autograd import forward_ad as _forward_ad
from ...autograd import grad_mode
from ...func import _batching_rules as _batching
from ...ops._registry import _short_name, autocast_policy, defop
from ...ops._signature import signature
from ...ops.pointwise import _check_dtype
from ...ops.shape import pad
from ...profiler._recorder import state as _profiling
from . import _onednn

__all__ = ["batch_norm", "instance_norm", "layer_norm", "group_norm", "rms_norm",
           "local_response_norm"]

_LOW = dt.LOW_PRECISION


def _check_input(input, name):
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")


def _compute(input, kernel, deny="bic"):
    """``input`` in the dtype the statistics are computed in (float32 for half types)."""
    _check_dtype(kernel, input.dtype, deny)
    if input._data.dtype in _LOW:
        return input.float()
    return input


def _check_mixed(input, *params):
    """torch's CPU rule: parameters share the input's dtype, or are float32 for a half input."""
    params = [p for p in params if p is not None]
    if all(p._data.dtype == input._data.dtype for p in params):
        return
    if input._data.dtype in _LOW:
        if all(p._data.dtype == np.float32 for p in params):
            return
        raise RuntimeError("mixed dtype (CPU): expect parameter to have scalar type of Float")
    raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")


def _finish(y, input):
    return y.to(input.dtype) if y.dtype is not input.dtype else y


def _stat_meta(a, *, dims):
    return tuple(1 if i in dims else s for i, s in enumerate(a.shape)), a.dtype


@defop("_norm_mean", meta=_stat_meta, save_inputs=False, kind="nn")
def _mean_op(xp, a, *, dims):
    """Mean over ``dims`` (kept), accumulated in float64 as torch's CPU kernels do."""
    if a.size == 0:  # NaN like torch, without NumPy's empty-slice warning
        return xp.full(_stat_meta(a, dims=dims)[0], np.nan, dtype=a.dtype)
    acc = np.float64 if a.dtype == np.float32 else None
    return xp.mean(a, axis=dims, keepdims=True, dtype=acc).astype(a.dtype, copy=False)


@_mean_op.defonnx
def _mean_onnx(ctx, x, dims):
    return ctx.reduce("ReduceMean", x, ctx.axes(dims), True)


@_mean_op.defderivative
def _mean_derivative(ctx, grad, *, dims):
    shape = ctx.input_shapes[0]
    count = 1
    for d in dims:
        count *= shape[d]
    return (grad.expand(shape) / count,)


_mean_op.defbatch(_batching.reduction)


# the statistics of batch/instance/layer/group norm: a linear mean
_mean_op.defjvp(_forward_ad.linear_jvp(_mean_op))


def _mean(x, dims):
    return _mean_op(x, dims=tuple(dims))


def _moments(x, dims):
    """``x - mean`` and the biased variance over ``dims`` (kept as size-1 dims), two-pass."""
    mean = _mean(x, dims)
    xc = x - mean
    var = _mean(xc * xc, dims)
    return xc, mean, var


def _size_str(shape):
    return f"ember.Size({list(shape)})"


def _verify_batch_size(size):
    n = size[0]
    for s in size[2:]:
        n *= s
    if n == 1:
        raise ValueError("Expected more than 1 value per channel when training, got input size "
                         f"{_size_str(size)}")


def _verify_spatial_size(size):
    n = 1
    for s in size[2:]:
        n *= s
    if n == 1:
        raise ValueError("Expected more than 1 spatial element when training, got input size "
                         f"{_size_str(size)}")


def _numel(t):
    """``t.numel()`` without the NumPy call (``math.prod`` of the shape), for the checks that
    run on every batch norm call."""
    return math.prod(t._data.shape)


def _check_channel_vector(t, name, channels):
    if t is not None and _numel(t) != channels:
        raise RuntimeError(f"{name} should contain {channels} elements not {_numel(t)}")


def _check_affine_channels(weight, bias, channels):
    """torch's batch-norm kernel reads the first affine parameter even with no channels."""
    if channels == 0 and (weight is not None or bias is not None):
        raise IndexError("select(): index 0 out of range for tensor of size [0] at dimension 0")


def _update_running(running, stat, momentum):
    """``running <- (1 - momentum) * running + momentum * stat``, in place, without grad."""
    with grad_mode.no_grad():
        stat = stat.detach().reshape(running.shape)
        # a running statistic of another dtype (instance norm allows it) takes the update
        # computed in floating point, converted as copy_ converts
        if running.dtype.is_floating_point:
            stat = stat.to(running.dtype)
        running.copy_(running * (1.0 - momentum) + stat * momentum)


def scale_shift(x, mean, rstd, weight=None, bias=None):
    """``(x - mean) * rstd * weight + bias`` in the form torch's batch, instance and group
    norm kernels compute it, ``x * a + (bias - mean * a)`` with ``a = rstd * weight``: the
    per-channel factors are folded before the big multiply, and an infinite weight gives
    torch's NaN and infinities. Every argument broadcasts against ``x``.

    Example::

        >>> scale_shift(ember.tensor([1., 3.]), ember.tensor(2.), ember.tensor(0.5))
        tensor([-0.5000,  0.5000])
    """
    scale = rstd if weight is None else rstd * weight
    shift = mean * scale
    shift = -shift if bias is None else bias - shift
    return x * scale + shift


def _per_channel(shape, *vectors):
    """Per-channel vectors (or None) reshaped to broadcast as ``shape`` (1, C, 1, ...)."""
    return [None if v is None else v.reshape(shape) for v in vectors]


def _bn_view(a):
    """``a`` (N, C, *) as (N, C, L), a view when the layout allows."""
    return a.reshape(a.shape[0], a.shape[1], -1)


def _bn_channel_sum(a):
    """Per-channel sum of (N, C, L) ``a``: the inner (pairwise, accurate) reduction first."""
    return a.sum(axis=2).sum(axis=0)


def _bn_channel_dot(xp, a, b):
    """Per-channel sum of ``a * b`` for (N, C, L) arrays in one pass, without the product's
    temporary (``einsum`` multiplies and accumulates in one loop; 3x faster than the product
    and a sum)."""
    return xp.einsum("ncl,ncl->c", a, b)


def _bn_block_channel_sum(xp, a):
    """Per-channel sum of a cache-sized (N, C, L) block in one pass (``einsum`` walks it
    once; the two-step sum of :func:`_bn_channel_sum` is 2.5x slower on such blocks)."""
    return xp.einsum("ncl->c", a)


def _bn_plane(xp, per_channel, a3):
    """``per_channel`` (C,) spread over the (C, L) plane of one sample of (N, C, L) ``a3``,
    contiguous: NumPy broadcasts a whole plane over the samples at the speed of a same-shape
    operation, where a (C, 1) column broadcast along each row ran 2-3x slower."""
    return xp.ascontiguousarray(xp.broadcast_to(per_channel[:, None], a3.shape[1:]))


def _bn_stats_meta(x):
    c = (x.shape[1],)
    return (c, x.dtype), (c, x.dtype)


# The CPU kernels below walk the samples in blocks of about this many elements, so that each
# block's intermediate values are still in cache when the next op reads them (measured 1.5-2x
# faster than whole-array ops, which are bound by memory traffic); on a GPU one block.
_BLOCK = 1 << 16


def _sample_blocks(xp, a3):
    """Slices over the samples of (N, C, L) ``a3``, about ``_BLOCK`` elements each."""
    n = a3.shape[0]
    step = n if xp is not np else _BLOCK // max(1, a3.shape[1] * a3.shape[2])
    step = max(1, step)
    return [slice(start, start + step) for start in range(0, n, step)]


@defop("_batch_norm_stats", meta=_bn_stats_meta, multi_output=True, save_inputs=False, kind="nn")
def _bn_stats_op(xp, x):
    """Per-channel mean and biased variance of ``x`` (N, C, *), two passes (no gradient)."""
    x3 = _bn_view(x)
    count = x3.shape[0] * x3.shape[2]
    blocks = _sample_blocks(xp, x3)
    mean = sum(_bn_block_channel_sum(xp, x3[block]) for block in blocks) / count
    var = xp.zeros_like(mean)
    scratch = xp.empty(x3[blocks[0]].shape, x3.dtype)
    mean_plane = _bn_plane(xp, mean, x3)
    for block in blocks:
        xc = xp.subtract(x3[block], mean_plane, out=scratch[:x3[block].shape[0]])
        var += _bn_channel_dot(xp, xc, xc)
    var /= count
    return mean.astype(x.dtype, copy=False), var.astype(x.dtype, copy=False)


_bn_stats_op.opt_out("onnx", "training-mode batch statistics: not mapped (eval-mode BatchNorm "
                             "exports through the ops it is composed of)")


_bn_stats_op.defbatch(_batching.channels)
_bn_stats_op.opt_out("derivative", "statistics for the forward pass (no gradient)")


def _bn_train_meta(x, weight, bias, mean, var, *, eps):
    return x.shape, x.dtype


@defop("_batch_norm_train", meta=_bn_train_meta, grad_name="NativeBatchNormBackward0", kind="nn")
def _bn_train_op(xp, x, weight, bias, mean, var, *, eps):
    """Training batch norm of ``x`` (N, C, *) given its batch ``mean`` and biased ``var``.

    The normalisation and affine map are folded into one per-channel scale and shift: two
    passes over the input. Only the inputs are saved for the backward (not the output, which
    an in-place ReLU may overwrite).
    """
    x3 = _bn_view(x)
    scale = (1.0 / xp.sqrt(var + eps)) * weight.astype(x.dtype, copy=False)
    shift = bias.astype(x.dtype, copy=False) - mean * scale
    y = xp.empty(x3.shape, x.dtype)
    scale, shift = _bn_plane(xp, scale, x3), _bn_plane(xp, shift, x3)
    for block in _sample_blocks(xp, x3):
        out = y[block]
        xp.multiply(x3[block], scale, out=out)
        out += shift
    return y.reshape(x.shape)


_bn_train_op.opt_out("onnx", "training-mode batch norm: not mapped (eval-mode BatchNorm "
                             "exports through the ops it is composed of)")


_bn_train_op.defbatch(_batching.channels)


def _bn_backward_meta(g, x, weight, mean, var, *, eps):
    c = (x.shape[1],)
    return (x.shape, x.dtype), (c, weight.dtype), (c, weight.dtype)


@defop("_batch_norm_train_backward", meta=_bn_backward_meta, multi_output=True, kind="nn")
def _bn_backward_op(xp, g, x, weight, mean, var, *, eps):
    """First-order gradients of :func:`_bn_train_op` (run only when no graph is recorded):
    with ``xc = x - mean``, ``dx = k1 * g + k2 * xc + k3`` for per-channel ``k``."""
    g3, x3 = _bn_view(g), _bn_view(x)
    count = x3.shape[0] * x3.shape[2]
    invstd = 1.0 / xp.sqrt(var + eps)
    w = weight.astype(x.dtype, copy=False)
    blocks = _sample_blocks(xp, x3)
    dot = xp.zeros_like(mean)
    gsum = xp.zeros_like(mean)
    dx = xp.empty(x3.shape, x.dtype)
    mean_plane = _bn_plane(xp, mean, x3)
    for block in blocks:  # dx holds x - mean until the second pass scales it
        xc = xp.subtract(x3[block], mean_plane, out=dx[block])
        dot += _bn_channel_dot(xp, g3[block], xc)
        gsum += _bn_block_channel_sum(xp, g3[block])
    k1 = w * invstd
    k2 = _bn_plane(xp, -k1 * invstd * invstd * dot / count, x3)
    k3 = _bn_plane(xp, -k1 * gsum / count, x3)
    k1 = _bn_plane(xp, k1, x3)
    scratch = xp.empty(x3[blocks[0]].shape, x.dtype)
    for block in blocks:
        out = dx[block]
        out *= k2
        out += k3
        out += xp.multiply(g3[block], k1, out=scratch[:out.shape[0]])
    return (dx.reshape(x.shape), (dot * invstd).astype(weight.dtype, copy=False),
            gsum.astype(weight.dtype, copy=False))


_bn_backward_op.opt_out("onnx", "a backward kernel: exported models run inference")


_bn_backward_op.defbatch(_batching.channels)
_bn_backward_op.opt_out("derivative", "a first-order backward kernel (no graph recorded)")


@_bn_train_op.defderivative
def _bn_train_derivative(ctx, grad, *, eps):
    x, weight, _, mean, var = ctx.inputs
    if not grad_mode.is_grad_enabled():
        return _bn_backward_op(grad, x, weight, mean, var, eps=eps) + (None, None)
    # Under create_graph: the same formula with ember ops, the statistics recomputed from ``x``
    # so that double backward sees their dependence on the input.
    dims = (0,) + tuple(range(2, x.ndim))
    shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    count = x.numel() // x.shape[1]
    xc, _, var = _moments(x, dims)
    invstd = (var + eps).rsqrt()
    xhat = xc * invstd
    gsum = grad.sum(dims, keepdim=True)
    gxsum = (grad * xhat).sum(dims, keepdim=True)
    w = weight.to(x.dtype).reshape(shape)
    dx = (w * invstd) * (grad - gsum / count - xhat * (gxsum / count))
    return dx, gxsum.reshape(weight.shape), gsum.reshape(weight.shape), None, None


def _bn_fused(x, running_mean, running_var, weight, bias, momentum, eps):
    """Training batch norm through :func:`_bn_train_op`, updating the running statistics."""
    mean, var = _bn_stats_op(x)
    y = _bn_train_op(x, weight, bias, mean, var, eps=float(eps))
    if running_mean is not None or running_var is not None:
        count = _numel(x) // x.shape[1]
        if _plain_running(running_mean, mean) and _plain_running(running_var, var):
            _blend_running(running_mean, mean._data, momentum)
            _blend_running(running_var, var._data * (count / (count - 1)), momentum)
            return y
        with grad_mode.no_grad():
            if running_mean is not None:
                running_mean.mul_(1.0 - momentum).add_(mean.to(running_mean.dtype),
                                                       alpha=momentum)
            if running_var is not None:
                unbiased = var * (count / (count - 1))
                running_var.mul_(1.0 - momentum).add_(unbiased.to(running_var.dtype),
                                                      alpha=momentum)
    return y


def _plain_running(running, stat):
    """Whether a running statistic (or its absence) can be updated on its array directly: a
    plain CPU tensor of the batch statistic's dtype, with no tracer or profiler watching the
    ops an update would otherwise run."""
    if running is None:
        return True
    return (type(running) is Tensor and running._device is stat._device and stat._device is CPU
            and running._data.dtype == stat._data.dtype and _trace_state.tracer is None
            and _profiling.recorder is None)


def _blend_running(running, stat, momentum):
    """``running = momentum * stat + (1 - momentum) * running`` in place, computed in float64
    and rounded once as torch's CPU kernel does; like torch's, the update leaves the tensor's
    version unchanged.

    Example::

        >>> r = ember.zeros(2); _blend_running(r, np.ones(2, np.float32), 0.1); r
        tensor([0.1000, 0.1000])
    """
    if running is None:
        return
    array = running._data
    array[...] = momentum * stat.astype(np.float64) + (1.0 - momentum) * array.astype(np.float64)


def _normalize_channels(x, running_mean, running_var, weight, bias, use_input_stats, momentum,
                        eps, stat_dims, channels):
    """Shared body of batch_norm and instance_norm on ``x`` (N, C, *)."""
    shape = (1, channels) + (1,) * (x.ndim - 2)
    if use_input_stats:
        _, mean, var = _moments(x, stat_dims)
        rstd = (var + eps).rsqrt()
        if running_mean is not None or running_var is not None:
            n = 1
            for d in stat_dims:
                n *= x.shape[d]
            unbiased = var * (n / (n - 1)) if n > 1 else var * math.nan
            if 0 in stat_dims:  # batch norm: one statistic per channel
                mean_c, var_c = mean, unbiased
            else:  # instance norm: per (sample, channel), averaged over the batch
                mean_c, var_c = mean.mean(0), unbiased.mean(0)
            if running_mean is not None:
                _update_running(running_mean, mean_c, momentum)
            if running_var is not None:
                _update_running(running_var, var_c, momentum)
        return scale_shift(x, mean, rstd, *_per_channel(shape, weight, bias))
    rm = running_mean.to(x.dtype).reshape(shape)
    rstd = (running_var.to(x.dtype).reshape(shape) + eps).rsqrt()
    return scale_shift(x, rm, rstd, *_per_channel(shape, weight, bias))


def _empty_batch_norm(input, weight, bias):
    """torch's batch norm of an empty input: no statistics and no shape checks, only the
    first weight and bias entries applied (so the result keeps its place in the graph)."""
    out = input.clone()
    if weight is not None:
        out = out * weight[0]
    if bias is not None:
        out = out + bias[0]
    return out


@signature("batch_norm(Tensor input, Tensor? running_mean, Tensor? running_var, "
           "Tensor? weight=None, Tensor? bias=None, bool training=False, float momentum=0.1, "
           "float eps=1e-05) -> Tensor")
def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-05):
    """Batch normalization over every dim but the channel dim 1.

    In training the batch statistics normalise the input and update ``running_mean`` /
    ``running_var`` in place (unbiased variance); otherwise the running statistics are used.

    Example::

        >>> x = ember.randn(8, 3)
        >>> F.batch_norm(x, None, None, training=True).mean(0).abs().max() < 1e-6
        tensor(True)
    """
    _check_input(input, "batch_norm")
    if training:
        _verify_batch_size(input.shape)
    if training and eps <= 0.0:
        raise ValueError(f"batch_norm eps must be positive during training, but got {eps}")
    if eps < 0.0:
        raise ValueError(f"batch_norm eps must be non-negative, but got {eps}")
    if input.ndim < 2 and _numel(input) == 0:
        return input.clone()  # torch has nothing to normalize and returns the empty input
    if _numel(input) == 0:
        return _empty_batch_norm(input, weight, bias)
    if input.ndim < 2:
        raise IndexError(f"Dimension out of range (expected to be in range of [-{input.ndim}, "
                         f"{input.ndim - 1}], but got 1)")
    channels = input.shape[1]
    _check_channel_vector(weight, "weight", channels)
    _check_channel_vector(bias, "bias", channels)
    _check_channel_vector(running_mean, "running_mean", channels)
    _check_channel_vector(running_var, "running_var", channels)
    if not training and (running_mean is None or running_var is None):
        raise RuntimeError(f"running_{'mean' if running_mean is None else 'var'} must be "
                           "defined in evaluation mode")
    _check_running_pair(running_mean, running_var)
    x = _compute(input, "batch_norm")  # (a dtype with no kernel before mixed dtypes, as torch)
    _check_mixed(input, weight, bias, running_mean, running_var)
    _check_affine_channels(weight, bias, channels)
    if (training and weight is not None and bias is not None and _numel(input)
            and momentum is not None and _forward_ad._state.level is None):
        return _finish(_bn_fused(x, running_mean, running_var, weight, bias, momentum, eps),
                       input)
    if not training and _inference_only(x, running_mean, running_var, weight, bias):
        # the fused per-channel scale-and-shift kernel, fed the running statistics: one pass
        # in cache-sized blocks instead of a broadcast multiply and add
        return _finish(_bn_train_op(x, weight, bias, running_mean, running_var, eps=float(eps)),
                       input)
    dims = (0,) + tuple(range(2, input.ndim))
    y = _normalize_channels(x, running_mean, running_var, weight, bias, training, momentum, eps,
                            dims, channels)
    return _finish(y, input)


def _check_running_pair(running_mean, running_var):
    """torch's ValueError for one running statistic without the other (training mode)."""
    if (running_mean is None) != (running_var is None):
        raise ValueError("running_mean and running_var must either both be None or neither be "
                         "None")


def _inference_only(x, running_mean, running_var, weight, bias):
    """Whether evaluation-mode batch norm may run the fused kernel: an affine map whose
    parameters and statistics share ``x``'s dtype, and no gradient to record (the kernel's
    derivative is the training one, which treats the statistics as ``x``'s own). Traces (jit,
    vmap's batching) record the composite ops, which they know how to replay."""
    tensors = (x, running_mean, running_var, weight, bias)
    if weight is None or bias is None or not x.numel() or _forward_ad._state.level is not None \
            or _trace_state.tracer is not None:
        return False
    if any(t._data.dtype != x._data.dtype for t in tensors[1:]):
        return False
    return not (grad_mode.is_grad_enabled() and any(t.requires_grad for t in tensors))


@signature("instance_norm(Tensor input, Tensor? running_mean=None, Tensor? running_var=None, "
           "Tensor? weight=None, Tensor? bias=None, bool use_input_stats=True, "
           "float momentum=0.1, float eps=1e-05) -> Tensor")
def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-05):
    """Instance normalization: each (sample, channel) slice normalised over its spatial dims.

    With running statistics, their update averages the per-instance statistics over the batch.

    Example::

        >>> F.instance_norm(ember.randn(2, 3, 5)).shape
        ember.Size([2, 3, 5])
    """
    _check_input(input, "instance_norm")
    if use_input_stats:
        _verify_spatial_size(input.shape)
    if input.ndim < 2:
        raise IndexError(f"Dimension out of range (expected to be in range of [-{input.ndim}, "
                         f"{input.ndim - 1}], but got 1)")
    if not use_input_stats and (running_mean is None or running_var is None):
        raise RuntimeError("Expected running_mean and running_var to be defined when "
                           "use_input_stats is false")
    channels = input.shape[1]
    _check_channel_vector(weight, "weight", channels)
    _check_channel_vector(bias, "bias", channels)
    _check_channel_vector(running_mean, "running_mean", channels)
    _check_channel_vector(running_var, "running_var", channels)
    _check_running_pair(running_mean, running_var)
    x = _compute(input, "batch_norm")  # (a dtype with no kernel before mixed dtypes, as torch)
    _check_mixed(input, weight, bias, *_checked_running_stats(input, running_mean, running_var))
    # torch runs it as batch norm over the batch's (sample, channel) pairs
    _check_affine_channels(weight, bias, input.shape[0] * channels)
    dims = tuple(range(2, input.ndim))
    y = _normalize_channels(x, running_mean, running_var, weight, bias, use_input_stats,
                            momentum, eps, dims, channels)
    return _finish(y, input)


def _checked_running_stats(input, running_mean, running_var):
    """The running statistics torch's instance norm holds to the parameters' dtype: both
    when ``running_mean`` has it (or is None), none otherwise (torch then reads them in any
    dtype and writes the update back converted)."""
    if running_mean is None or running_mean._data.dtype == input._data.dtype or (
            input._data.dtype in _LOW and running_mean._data.dtype == np.float32):
        return running_mean, running_var
    return ()


def _normalized_dims(input, normalized_shape, star="*, "):
    if isinstance(normalized_shape, numbers.Integral):
        normalized_shape = (int(normalized_shape),)
    normalized_shape = tuple(int(s) for s in normalized_shape)
    k = len(normalized_shape)
    if k == 0 or input.ndim < k or tuple(input.shape[input.ndim - k:]) != normalized_shape:
        shape = list(normalized_shape)
        inner = ", ".join(str(s) for s in shape)
        raise RuntimeError(f"Given normalized_shape={shape}, expected input with shape "
                           f"[{star}{inner}], but got input of size{list(input.shape)}")
    return normalized_shape, tuple(range(input.ndim - k, input.ndim))


def _check_affine_shape(t, name, normalized_shape):
    if t is not None and tuple(t.shape) != normalized_shape:
        raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got "
                           f"{name} of shape {list(t.shape)} and normalized_shape = "
                           f"{list(normalized_shape)}")


def _ln_stats_meta(x, *, size, eps):
    rows = (x.size // size if size else 0,)
    return (rows, x.dtype), (rows, x.dtype)


@defop("_layer_norm_stats", meta=_ln_stats_meta, multi_output=True, save_inputs=False, kind="nn")
def _ln_stats_op(xp, x, *, size, eps):
    """Mean and ``1 / sqrt(var + eps)`` of each row of ``x`` viewed as (M, size), two passes
    (no gradient: :func:`_ln_train_op` takes them as constants)."""
    rows = x.reshape(-1, size)
    if rows.dtype.kind == "f" and rows.dtype.itemsize >= 4:
        # a matrix-vector product with ones: BLAS sums short rows 5x faster than NumPy
        mean = xp.matmul(rows, xp.ones(size, rows.dtype)) / size
    else:
        mean = rows.mean(axis=1)
    xc = rows - mean[:, None]
    var = xp.einsum("md,md->m", xc, xc) / size
    rstd = 1.0 / xp.sqrt(var + eps)
    return mean.astype(x.dtype, copy=False), rstd.astype(x.dtype, copy=False)


def _rows(ctx, x, size):
    return ctx.op("Reshape", x, ctx.int64s([-1, size]))


@_ln_stats_op.defonnx
def _ln_stats_onnx(ctx, x, size, eps):
    # each row of x viewed as (-1, size): its mean and 1 / sqrt(biased variance + eps)
    dtype = ctx.out_dtype()
    rows = _rows(ctx, x, size)
    mean = ctx.reduce("ReduceMean", rows, [1], False)
    centred = ctx.op("Sub", rows, ctx.unsqueeze(mean, [1]))
    variance = ctx.reduce("ReduceMean", ctx.op("Mul", centred, centred), [1], False)
    rstd = ctx.op("Reciprocal", ctx.op("Sqrt", ctx.op("Add", variance, ctx.scalar(eps, dtype))))
    return mean, rstd


_ln_stats_op.defbatch(_batching.layer_norm_stats)
_ln_stats_op.opt_out("derivative", "statistics for the forward pass (no gradient)")


@defop("_layer_norm", grad_name="NativeLayerNormBackward0",
       meta=lambda x, weight, bias, mean, rstd, *, size, eps: (x.shape, x.dtype), kind="nn")
def _ln_train_op(xp, x, weight, bias, mean, rstd, *, size, eps):
    """Layer norm of ``x`` given each row's ``mean`` and ``rstd`` (made with ``eps``, which
    the derivative needs again): four passes (on the CPU one oneDNN kernel)."""
    y = x.reshape(-1, size) - mean[:, None]
    y *= rstd[:, None]
    y *= weight.reshape(-1).astype(x.dtype, copy=False)
    y += bias.reshape(-1).astype(x.dtype, copy=False)
    return y.reshape(x.shape)


@_onednn.cpu_kernel(_ln_train_op)
def _ln_train_onednn(x, weight, bias, mean, rstd, *, size, eps):
    """oneDNN's layer norm (it takes variances)."""
    y = _onednn.layer_norm(x.reshape(-1, size), weight.reshape(-1), bias.reshape(-1), mean,
                           _variance(rstd, eps), eps)
    return None if y is None else y.reshape(x.shape)


@_ln_train_op.defonnx
def _ln_onnx(ctx, x, weight, bias, mean, rstd, size, eps):
    normed = ctx.op("Mul", ctx.op("Sub", _rows(ctx, x, size), ctx.unsqueeze(mean, [1])),
                    ctx.unsqueeze(rstd, [1]))
    flat = ctx.int64s([-1])
    y = ctx.op("Add", ctx.op("Mul", normed, ctx.op("Reshape", weight, flat)),
               ctx.op("Reshape", bias, flat))
    return ctx.op("Reshape", y, ctx.op("Shape", x))  # back to x's shape, whatever its size


def _variance(rstd, eps):
    """Each row's variance from its ``rstd = 1 / sqrt(var + eps)`` (oneDNN takes variances)."""
    variance = rstd * rstd
    np.reciprocal(variance, out=variance)
    variance -= eps
    return variance




def _ln_backward_meta(g, x, weight, mean, rstd, *, size, eps=None):
    return (x.shape, x.dtype), (weight.shape, weight.dtype), (weight.shape, weight.dtype)


@defop("_layer_norm_backward", meta=_ln_backward_meta, multi_output=True, kind="nn")
def _ln_backward_op(xp, g, x, weight, mean, rstd, *, size, eps=None):
    """First-order gradients of :func:`_ln_train_op` (run only when no graph is recorded):
    with ``xhat = (x - mean) * rstd`` and ``gw = g * weight``, per row
    ``dx = rstd * (gw - mean(gw) - xhat * mean(gw * xhat))`` (on the CPU one oneDNN kernel)."""
    g2 = g.reshape(-1, size)
    xhat = x.reshape(-1, size) - mean[:, None]
    xhat *= rstd[:, None]
    gw = g2 * weight.reshape(-1).astype(x.dtype, copy=False)
    row_mean = gw.mean(axis=1)
    row_dot = xp.einsum("md,md->m", gw, xhat) / size
    dweight = xp.einsum("md,md->d", g2, xhat)
    xhat *= row_dot[:, None]
    gw -= row_mean[:, None]
    gw -= xhat
    gw *= rstd[:, None]
    dbias = g2.sum(axis=0)
    return (gw.reshape(x.shape), dweight.reshape(weight.shape).astype(weight.dtype, copy=False),
            dbias.reshape(weight.shape).astype(weight.dtype, copy=False))


@_onednn.cpu_kernel(_ln_backward_op)
def _ln_backward_onednn(g, x, weight, mean, rstd, *, size, eps=None):
    """oneDNN's layer-norm backward (it needs ``eps`` to rebuild the variances)."""
    if eps is None:
        return None
    grads = _onednn.layer_norm_backward(g.reshape(-1, size), x.reshape(-1, size),
                                        weight.reshape(-1), mean, _variance(rstd, eps), eps)
    if grads is None:
        return None
    dx, dweight, dbias = grads
    return dx.reshape(x.shape), dweight.reshape(weight.shape), dbias.reshape(weight.shape)


_ln_backward_op.opt_out("onnx", "a backward kernel: exported models run inference")


_ln_backward_op.defbatch(_batching.layer_norm_backward)
_ln_backward_op.opt_out("derivative", "a first-order backward kernel (no graph recorded)")


@_ln_train_op.defderivative
def _ln_train_derivative(ctx, grad, *, size, eps):
    x, weight, _, mean, rstd = ctx.inputs
    if not grad_mode.is_grad_enabled():
        return _ln_backward_op(grad, x, weight, mean, rstd, size=size, eps=eps) + (None, None)
    return _ln_composite_grads(grad, x, weight, eps) + (None, None)


def _ln_composite_grads(grad, x, weight, eps):
    """Layer norm's (dx, dweight, dbias) under create_graph: the first-order formula with
    ember ops, the statistics recomputed from ``x`` so that double backward sees their
    dependence on the input."""
    k = weight.ndim
    dims = tuple(range(x.ndim - k, x.ndim))
    batch = tuple(range(x.ndim - k))
    xc, _, var = _moments(x, dims)
    xhat = xc * (var + eps).rsqrt()
    gw = grad * weight.to(x.dtype)
    dx = (var + eps).rsqrt() * (gw - _mean(gw, dims) - xhat * _mean(gw * xhat, dims))
    dweight = (grad * xhat).sum(batch) if batch else grad * xhat
    dbias = grad.sum(batch) if batch else grad
    return dx, dweight, dbias


_ln_train_op.defbatch(_batching.layer_norm)


# One op for the whole forward, as torch's native_layer_norm: on the CPU one oneDNN kernel
# computes the statistics and normalises (the two ops above took a NumPy statistics pass
# first: GPT bench, (1024, 128) rows, ~180 -> ~90 us a call). ember.compile's graphs record
# it as eager code runs it; other traces (jit, vmap, ONNX) record the two ops, which the
# exporters and vmap know.

def _ln_native_meta(x, weight, bias, *, size, eps):
    rows = (x.size // size if size else 0,)
    return (x.shape, x.dtype), (rows, x.dtype), (rows, x.dtype)


@defop("native_layer_norm", meta=_ln_native_meta, multi_output=True, save_output=True,
       differentiable_outputs=(0,), kind="nn", grad_name="NativeLayerNormBackward0")
def _ln_native_op(xp, x, weight, bias, *, size, eps):
    """(layer norm of ``x``, each row's mean, each row's ``1 / sqrt(var + eps)``)."""
    mean, rstd = _ln_stats_op.generic_kernel(xp, x, size=size, eps=eps)
    return _ln_train_op.generic_kernel(xp, x, weight, bias, mean, rstd, size=size,
                                       eps=eps), mean, rstd


@_onednn.cpu_kernel(_ln_native_op)
def _ln_native_onednn(x, weight, bias, *, size, eps):
    """oneDNN's layer norm computing the statistics too (it gives variances)."""
    found = _onednn.layer_norm_with_stats(x.reshape(-1, size), weight.reshape(-1),
                                          bias.reshape(-1), eps)
    if found is None:
        return None
    y, mean, variance = found
    variance += np.float32(eps)
    np.sqrt(variance, out=variance)
    return y.reshape(x.shape), mean, np.reciprocal(variance, out=variance)


@_ln_native_op.defderivative
def _ln_native_derivative(ctx, grad, grad_mean, grad_rstd, *, size, eps):
    x, weight, _ = ctx.inputs
    if not grad_mode.is_grad_enabled():
        _, mean, rstd = ctx.output
        return _ln_backward_op(grad, x, weight, mean, rstd, size=size, eps=eps)
    return _ln_composite_grads(grad, x, weight, eps)


_ln_native_op.opt_out("jvp", "forward-mode AD runs the composite ops (layer_norm takes this "
                             "op only while no forward-mode level is active)")
_ln_native_op.opt_out("batch", "vmap records the two ops _layer_norm_stats and _layer_norm "
                               "(only ember.compile's traces record this op)")
_ln_native_op.opt_out("onnx", "an export traces the two ops _layer_norm_stats and "
                              "_layer_norm (only ember.compile's traces record this op)")


@autocast_policy(cuda="fp32")
@signature("layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, "
           "Tensor? bias=None, float eps=1e-05) -> Tensor")
def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05):
    """Layer normalization over the last ``len(normalized_shape)`` dims.

    Example::

        >>> F.layer_norm(ember.tensor([[1., 2., 3.]]), [3])
        tensor([[-1.2247,  0.0000,  1.2247]])
    """
    _check_input(input, "layer_norm")
    normalized_shape, dims = _normalized_dims(input, normalized_shape)
    _check_affine_shape(weight, "weight", normalized_shape)
    _check_affine_shape(bias, "bias", normalized_shape)
    _check_mixed(input, weight, bias)
    x = _compute(input, "LayerNormKernelImpl")
    if weight is not None and bias is not None and x.numel() and \
            _forward_ad._state.level is None:
        size = x.numel() // math.prod(x.shape[:x.ndim - len(dims)])
        tracer = _trace_state.tracer
        if tracer is None or getattr(tracer, "whole_kernels", False):  # (ember.compile's)
            return _finish(_ln_native_op(x, weight, bias, size=size, eps=float(eps))[0], input)
        mean, rstd = _ln_stats_op(x, size=size, eps=float(eps))
        return _finish(_ln_train_op(x, weight, bias, mean, rstd, size=size, eps=float(eps)),
                       input)
    xc, _, var = _moments(x, dims)
    y = xc * (var + eps).rsqrt()
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return _finish(y, input)


@autocast_policy(cuda="fp32")
@signature("group_norm(Tensor input, int num_groups, Tensor? weight=None, Tensor? bias=None, "
           "float eps=1e-05) -> Tensor")
def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05):
    """Group normalization: channels split into ``num_groups`` groups normalised together.

    Example::

        >>> F.group_norm(ember.randn(2, 4, 3), 2).shape
        ember.Size([2, 4, 3])
    """
    _check_input(input, "group_norm")
    if input.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received "
                           f"{input.ndim}")
    n, channels = input.shape[0], input.shape[1]
    if num_groups <= 0 or channels % num_groups:
        raise RuntimeError("Expected number of channels in input to be divisible by num_groups, "
                           f"but got input of shape {list(input.shape)} and "
                           f"num_groups={num_groups}")
    _verify_batch_size([n * channels // num_groups, num_groups] + list(input.shape[2:]))
    for t, name in ((weight, "weight"), (bias, "bias")):
        if t is not None and (t.ndim != 1 or t.numel() != channels):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of "
                               f"channels in input, but got {name} of shape {list(t.shape)} and "
                               f"input of shape {list(input.shape)}")
    _check_mixed(input, weight, bias)
    x = _compute(input, "GroupNormKernelImpl")
    group_size = input.numel() // max(n * num_groups, 1) if n * num_groups else 0
    grouped = x.reshape(n, num_groups, group_size)
    _, mean, var = _moments(grouped, (2,))
    y = group_scale_shift(x, mean, (var + eps).rsqrt(), weight, bias)
    return _finish(y, input)


def group_scale_shift(x, mean, rstd, weight, bias):
    """:func:`scale_shift` of ``x`` (N, C, *) with one ``mean``/``rstd`` per sample and group
    (shaped (N, groups, ...)) and per-channel ``weight``/``bias``.

    Example::

        >>> x = ember.tensor([[[1.], [3.]]])
        >>> mean, rstd = ember.tensor([[2.]]), ember.tensor([[1.]])
        >>> group_scale_shift(x, mean, rstd, None, None).flatten()
        tensor([-1.,  1.])
    """
    n, channels, groups = x.shape[0], x.shape[1], mean.shape[1]
    per_group = (n, groups, channels // groups, math.prod(x.shape[2:]))
    stat_shape = (n, groups, 1, 1)
    vector_shape = (1, groups, channels // groups, 1)
    affine = [None if v is None else v.reshape(vector_shape) for v in (weight, bias)]
    y = scale_shift(x.reshape(per_group), mean.reshape(stat_shape), rstd.reshape(stat_shape),
                    *affine)
    return y.reshape(x.shape)


@signature("rms_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, "
           "float? eps=None) -> Tensor")
def rms_norm(input, normalized_shape, weight=None, eps=None):
    """Root-mean-square normalization over the last dims: ``x / sqrt(mean(x**2) + eps)``.

    ``eps=None`` means the machine epsilon of the computation dtype (float32 for half types).

    Example::

        >>> F.rms_norm(ember.tensor([[3., 4.]]), [2], eps=0.0)
        tensor([[0.8485, 1.1314]])
    """
    _check_input(input, "rms_norm")
    normalized_shape, dims = _normalized_dims(input, normalized_shape, star="*")
    _check_affine_shape(weight, "weight", normalized_shape)
    x = _compute(input, "rms_norm", deny="bi")  # complex too: torch squares without conj
    if eps is None:
        eps = float(np.finfo(x._data.dtype).eps)
    y = x * (_mean(x * x, dims) + eps).rsqrt()
    y = _finish(y, input)
    if weight is not None:  # torch multiplies in place: the result keeps the input's dtype
        y = _finish(y * weight, input)
    return y


@signature("local_response_norm(Tensor input, int size, float alpha=0.0001, float beta=0.75, "
           "float k=1.0) -> Tensor")
def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """Local response normalization across channels (dim 1).

    ``input / (k + alpha * mean of input**2 over a window of size channels) ** beta``, the
    window zero-padded at the edges (the mean always divides by ``size``).

    Example::

        >>> F.local_response_norm(ember.ones(1, 4, 2), 2).shape
        ember.Size([1, 4, 2])
    """
    _check_input(input, "local_response_norm")
    ndim = input.ndim
    if ndim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality                          input "
                         f"(got {ndim} dimensions)")
    if input.numel() == 0:
        return input
    if input.dtype is dt.bool or input.dtype.is_complex:  # torch's average pooling has no kernel
        kernel = "avg_pool2d" if ndim == 3 else "avg_pool3d_out_frame"
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{_short_name(input.dtype)}'")
    sq = input * input
    widths = [0, 0] * (ndim - 2) + [size // 2, (size - 1) // 2]
    windows = pad(sq, tuple(widths)).unfold(1, size, 1)
    total = windows.sum(-1)
    # torch averages an integer input with its integer pooling (a floor division)
    mean = total / size if input.dtype.is_floating_point else total // size
    div = (mean * alpha + k).pow(beta)
    return input / div
