"""nn.functional: loss functions.

Most losses are composites of ember ops (so gradients and double backward come from autograd).
Two are primitives: ``binary_cross_entropy`` (torch's log clamp at -100 and its clamped
backward ``(x - t) / max(x (1 - x), 1e-12)``, which a composite cannot reproduce at 0 and 1) and
``ctc_loss`` (a log-space forward/backward recursion over time, vectorised over the batch and the
extended label sequence, with torch's gradient formula).

Reductions follow torch: ``'none' | 'mean' | 'sum'`` and the deprecated ``size_average`` /
``reduce`` pair (mapped with torch's warning); weighted ``nll_loss`` / ``cross_entropy`` divide
by the summed weights of the non-ignored targets.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ... import _dtype as dt
from ..._device import META
from ..._tensor import Tensor, _trace_state
from ...autograd import forward_ad as _forward_ad
from ...autograd import grad_mode
from ...ops._registry import (
    Op,
    _check_castable,
    _short_name,
    autocast_policy,
    defop,
    first_order_backward,
)
from ...ops._signature import signature
from ...ops._util import host_values
from ...ops._vmap_rules import batching
from ...ops.creation import ones_like, zeros
from ...ops.pointwise import clamp_min, logit, minimum, where, xlogy
from ...ops.shape import broadcast_shapes, broadcast_tensors
from .activation import logsigmoid
from .distance import pairwise_distance
from .softmax import log_softmax

__all__ = ["l1_loss", "mse_loss", "cross_entropy", "nll_loss", "binary_cross_entropy",
           "binary_cross_entropy_with_logits", "kl_div", "smooth_l1_loss", "huber_loss",
           "soft_margin_loss", "multilabel_soft_margin_loss", "multilabel_margin_loss",
           "multi_margin_loss", "hinge_embedding_loss", "cosine_embedding_loss",
           "margin_ranking_loss", "triplet_margin_loss", "triplet_margin_with_distance_loss",
           "poisson_nll_loss", "gaussian_nll_loss", "ctc_loss"]

_LOW = dt.LOW_PRECISION
_F32 = np.dtype(np.float32)
_SHORT = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
          "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
          "bool": "Bool", "complex64": "ComplexFloat", "complex128": "ComplexDouble"}


# ---------------------------------------------------------------- reductions


def _legacy_reduction(size_average, reduce):
    """torch's mapping of the deprecated ``size_average`` / ``reduce`` flags (with its warning)."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if size_average and reduce:
        reduction = "mean"
    elif reduce:
        reduction = "sum"
    else:
        reduction = "none"
    warnings.warn("size_average and reduce args will be deprecated, please use "
                  f"reduction='{reduction}' instead.", stacklevel=3)
    return reduction


def _check_reduction(reduction):
    if reduction == "elementwise_mean":
        warnings.warn("reduction='elementwise_mean' is deprecated. Please use reduction='mean' "
                      "instead.", stacklevel=3)
        return "mean"
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def _reduction(size_average, reduce, reduction):
    if size_average is not None or reduce is not None:
        return _legacy_reduction(size_average, reduce)
    return _check_reduction(reduction)


def _floating_operands(input, target, kernel):
    """``input`` and ``target`` broadcast and cast to their promoted dtype, which must be
    floating: torch picks the loss ``kernel`` by that dtype and has none for the others.

    Example::

        >>> _floating_operands(ember.tensor([True]), ember.tensor([0.5]), "mse_cpu")[0]
        tensor([1.])
    """
    input, target = broadcast_tensors(input, target)
    dtype = dt.promote_types(input.dtype, target.dtype)
    if not dtype.is_floating_point:
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_SHORT[dtype.name]}\'')
    return input.to(dtype), target.to(dtype)


def _reduce(loss, reduction):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def _size(shape):
    return f"ember.Size({list(shape)})"


def _warn_size(input, target):
    if input.shape != target.shape:
        warnings.warn(f"Using a target size ({_size(target.shape)}) that is different to the "
                      f"input size ({_size(input.shape)}). This will likely lead to incorrect "
                      "results due to broadcasting. Please ensure they have the same size.",
                      stacklevel=3)


def _is_meta(t):
    return t._device is META


def _check_same_dtype(input, other, what="expected scalar type {0} but found {1}"):
    if other.dtype is not input.dtype:
        raise RuntimeError(what.format(_SHORT[input.dtype.name], _SHORT[other.dtype.name]))


def _weighted(loss, weight, reduction):
    """torch's weighted l1/mse: ``mean`` divides by the summed weights."""
    loss = loss * weight
    if reduction == "mean":
        return loss.sum() / weight.sum()
    return _reduce(loss, reduction)


def _check_weight_size(input, weight):
    if weight.shape != input.shape:
        raise ValueError("Weights and input must have the same size.")


# ---------------------------------------------------------------- regression losses


@autocast_policy("fp32")
def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean absolute error ``|input - target|`` (optionally weighted elementwise).

    Example::

        >>> F.l1_loss(ember.tensor([1., 2.]), ember.tensor([0., 4.]))
        tensor(1.5000)
    """
    _warn_size(input, target)
    reduction = _reduction(size_average, reduce, reduction)
    input, target = broadcast_tensors(input, target)
    loss = (input - target).abs()
    if weight is not None:
        _check_weight_size(input, weight)
        return _weighted(loss, weight, reduction)
    return _reduce(loss, reduction)


@autocast_policy("fp32")
def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean squared error ``(input - target) ** 2`` (optionally weighted elementwise).

    Example::

        >>> F.mse_loss(ember.tensor([1., 2.]), ember.tensor([0., 4.]))
        tensor(2.5000)
    """
    _warn_size(input, target)
    reduction = _reduction(size_average, reduce, reduction)
    if weight is None:
        input, target = _floating_operands(input, target, "mse_cpu")
    else:
        input, target = broadcast_tensors(input, target)
    diff = input - target
    loss = diff * diff
    if weight is not None:
        _check_weight_size(input, weight)
        return _weighted(loss, weight, reduction)
    return _reduce(loss, reduction)


@autocast_policy("fp32")
def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """``0.5 d**2 / beta`` where ``|d| < beta``, else ``|d| - 0.5 beta`` (``d = input - target``).

    Example::

        >>> F.smooth_l1_loss(ember.tensor([0.5, 3.]), ember.tensor([0., 0.]), reduction="none")
        tensor([0.1250, 2.5000])
    """
    _warn_size(input, target)
    reduction = _reduction(size_average, reduce, reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    input, target = broadcast_tensors(input, target)
    if beta == 0.0:  # torch computes l1_loss then
        return _reduce((input - target).abs(), reduction)
    input, target = _floating_operands(input, target, "smooth_l1_cpu")
    diff = input - target
    absolute = diff.abs()
    loss = where(absolute < beta, diff * diff * (0.5 / beta), absolute - 0.5 * beta)
    return _reduce(loss, reduction)


@autocast_policy("fp32")
def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """``0.5 d**2`` where ``|d| < delta``, else ``delta (|d| - 0.5 delta)``.

    Example::

        >>> F.huber_loss(ember.tensor([0.5, 3.]), ember.tensor([0., 0.]), reduction="none")
        tensor([0.1250, 2.5000])
    """
    _warn_size(input, target)
    reduction = _check_reduction(reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    out_dtype = input.dtype  # torch's kernel writes the loss in input's dtype
    _check_castable(dt.promote_types(input.dtype, target.dtype), out_dtype)
    input, target = _floating_operands(input, target, "huber_cpu")
    diff = input - target
    absolute = diff.abs()
    loss = where(absolute < delta, diff * diff * 0.5, (absolute - 0.5 * delta) * delta)
    loss = loss.to(out_dtype)
    if weight is not None:
        _check_weight_size(input, weight)
        loss = loss * weight
    return _reduce(loss, reduction)


@autocast_policy("fp32")
@signature("poisson_nll_loss(Tensor input, Tensor target, PyObject log_input=True, "
           "PyObject full=False, PyObject size_average=None, PyObject eps=1e-8, "
           "PyObject reduce=None, PyObject reduction='mean') -> Tensor")
def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean"):
    """Negative log likelihood of a Poisson distribution with rate ``exp(input)`` (or ``input``).

    With ``full``, Stirling's approximation ``t log t - t + 0.5 log(2 pi t)`` is added for
    targets above 1.

    Example::

        >>> F.poisson_nll_loss(ember.tensor([0., 1.]), ember.tensor([1., 2.]))
        tensor(0.3591)
    """
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not a valid value for reduction")
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        stirling = target * target.log() - target + (target * (2 * math.pi)).log() * 0.5
        loss = loss + stirling.masked_fill(target <= 1, 0)
    return _reduce(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """Negative log likelihood of a Gaussian: ``0.5 (log var + (input - target)**2 / var)``.

    ``var`` may have ``input``'s shape, lack its last dimension, or differ from it in one
    dimension of size 1 (homoscedastic); it is clamped to ``eps`` (without blocking its
    gradient), as in torch.

    Example::

        >>> F.gaussian_nll_loss(ember.tensor([1., 2.]), ember.tensor([0., 2.]), ember.ones(2))
        tensor(0.2500)
    """
    if not isinstance(var, (Tensor, float)):
        raise TypeError(f"gaussian_nll_loss(): argument 'var' (position 3) must be Tensor or "
                        f"float, not {type(var).__name__}")
    if isinstance(var, float):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = var * ones_like(input)
    elif not _is_meta(var) and bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    if var.shape != input.shape:
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif not (input.dim() == var.dim()
                  and sum(v for i, v in zip(input.shape, var.shape) if i != v) == 1):
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    # Clamp the value only: torch clamps a clone under no_grad, so the gradient passes through.
    var_value = var.detach()
    var = var + (var_value.clamp(min=eps) - var_value)
    diff = input - target
    loss = (var.log() + diff * diff / var) * 0.5
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


@autocast_policy("fp32")
@signature("kl_div(Tensor input, Tensor target, PyObject size_average=None, PyObject reduce=None, "
           "PyObject reduction='mean', bool log_target=False) -> Tensor")
def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """Kullback-Leibler divergence ``target * (log target - input)`` (``input`` is log-probs).

    ``reduction='batchmean'`` divides the sum by the batch size (the mathematical KL); ``'mean'``
    divides by the number of elements (with torch's warning).

    Example::

        >>> F.kl_div(ember.tensor([-1., -2.]), ember.tensor([0.5, 0.5]), reduction="sum")
        tensor(0.8069)
    """
    if size_average is not None or reduce is not None:
        mode = _legacy_reduction(size_average, reduce)
    else:
        if reduction == "mean":
            warnings.warn("reduction: 'mean' divides the total loss by both the batch size and "
                          "the support size.'batchmean' divides only by the batch size, and "
                          "aligns with the KL div math definition.'mean' will be changed to "
                          "behave the same as 'batchmean' in the next major release.",
                          stacklevel=2)
        mode = "sum" if reduction == "batchmean" else _check_reduction(reduction)
    if input.dtype.is_complex or target.dtype.is_complex:
        raise RuntimeError("kl_div: Complex inputs not supported.")
    if not (input.dtype.is_floating_point and target.dtype.is_floating_point):
        raise RuntimeError("kl_div: Integral inputs not supported.")
    if log_target:
        loss = target.exp() * (target - input)
    else:
        loss = xlogy(target, target) - target * input
    loss = _reduce(loss, mode)
    if reduction == "batchmean" and input.dim() != 0:
        loss = loss / input.shape[0]
    return loss


# ---------------------------------------------------------------- binary classification


def _bce_meta(x, t):
    return x.shape, x.dtype


@defop("binary_cross_entropy", meta=_bce_meta, kind="nn")
def _bce_op(xp, x, t):
    input_ok, target_ok = host_values(xp, xp.all((x >= 0) & (x <= 1)),
                                      xp.all((t >= 0) & (t <= 1)))
    if not input_ok:
        raise RuntimeError("all elements of input should be between 0 and 1")
    if not target_ok:
        raise RuntimeError("all elements of target should be between 0 and 1")
    dtype = x.dtype
    if dtype in _LOW:
        x, t = x.astype(_F32), t.astype(_F32)
    with np.errstate(divide="ignore"):
        log_x = xp.maximum(xp.log(x), -100)
        log_1mx = xp.maximum(xp.log1p(-x), -100)
    loss = (t - 1) * log_1mx - t * log_x
    return loss.astype(dtype, copy=False)


_bce_op.opt_out("onnx", "not mapped yet (a loss: exported models rarely compute one)")


_bce_op.defbatch(batching.same_shape)


@_bce_op.defderivative
def _bce_derivative(ctx, grad):
    x, t = ctx.inputs
    need_x, need_t = ctx.needs_input_grad
    grad_x = grad * (x - t) / clamp_min(x * (1 - x), 1e-12) if need_x else None
    grad_t = -grad * logit(x) if need_t else None
    return grad_x, grad_t


def _refuse_weight_grads(function, **weights):
    """torch's RuntimeError when a weight that requires grad meets grad mode: its binary
    cross-entropy kernels have no derivative for their weights, and refuse them up front.

    Example::

        >>> _refuse_weight_grads("binary_cross_entropy", weight=ember.ones(2))  # no grad: fine
    """
    if not grad_mode.state.enabled:
        return
    for name, weight in weights.items():
        if weight is not None and weight.requires_grad:
            raise RuntimeError(f"The function '{function}' is not differentiable with respect "
                               f"to argument '{name}'. This input cannot have requires_grad "
                               "True.")


@autocast_policy(cpu="fp32", cuda="banned")
def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    """``-(t log x + (1 - t) log(1 - x))`` for probabilities ``x``; logs are clamped at -100.

    Example::

        >>> F.binary_cross_entropy(ember.tensor([0.5, 0.9]), ember.tensor([1., 1.]))
        tensor(0.3993)
    """
    reduction = _reduction(size_average, reduce, reduction)
    if target.shape != input.shape:
        raise ValueError(f"Using a target size ({_size(target.shape)}) that is different to the "
                         f"input size ({_size(input.shape)}) is deprecated. Please ensure they "
                         "have the same size.")
    _check_same_dtype(input, target, "Found dtype {1} but expected {0}")
    if weight is not None:
        weight = weight.expand(np.broadcast_shapes(tuple(target.shape), tuple(weight.shape)))
    _refuse_weight_grads("binary_cross_entropy", weight=weight)
    loss = _bce_op(input, target)
    if weight is not None:
        if weight.shape != loss.shape:  # torch scales the loss in place
            raise RuntimeError(f"output with shape {list(loss.shape)} doesn't match the "
                               f"broadcast shape {list(weight.shape)}")
        loss = loss * weight
    return _reduce(loss, reduction)


@autocast_policy("fp32")
def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    """Sigmoid and binary cross entropy in one stable step (``pos_weight`` scales positives).

    Example::

        >>> F.binary_cross_entropy_with_logits(ember.tensor([0., 2.]), ember.tensor([1., 0.]))
        tensor(1.4093)
    """
    reduction = _reduction(size_average, reduce, reduction)
    if target.shape != input.shape:
        raise ValueError(f"Target size ({_size(target.shape)}) must be the same as input size "
                         f"({_size(input.shape)})")
    _refuse_weight_grads("binary_cross_entropy_with_logits", weight=weight,
                         pos_weight=pos_weight)
    # in place as torch computes it, so each product keeps the type and shape of its left
    # operand: an integer target is torch's cast error, a float64 input gives a float32 loss
    log_sig = logsigmoid(input)
    if pos_weight is not None:
        log_sig.mul_((pos_weight - 1).mul(target).add_(1))
    loss = (1 - target).mul_(input).sub_(log_sig)
    if weight is not None:
        loss.mul_(weight)
    if loss.dtype.is_complex and loss.requires_grad:  # (a complex target)
        raise RuntimeError("binary_cross_entropy_with_logits does not support automatic "
                           "differentiation for outputs with complex dtype.")
    return _reduce(loss, reduction)


@autocast_policy("fp32")
@signature("soft_margin_loss(Tensor input, Tensor target, PyObject size_average=None, "
           "PyObject reduce=None, PyObject reduction='mean') -> Tensor")
def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Two-class logistic loss ``log(1 + exp(-target * input))``, computed stably.

    Example::

        >>> F.soft_margin_loss(ember.tensor([1., -1.]), ember.tensor([1., 1.]))
        tensor(0.8133)
    """
    reduction = _reduction(size_average, reduce, reduction)
    _check_written_into_input(input, target)
    if input.dtype.is_complex:  # no stable form needed (nor logsigmoid kernel) for complex
        return _reduce((-(target * input)).exp().log1p(), reduction)
    return _reduce(-logsigmoid(target * input), reduction)


def _check_written_into_input(input, target):
    """torch's soft_margin_loss computes into a tensor shaped and typed as ``input``
    (``neg(input).mul_(target)``): a bool input, a ``target`` broadcasting beyond ``input``'s
    shape or promoting past its dtype are its RuntimeErrors."""
    if input.dtype is dt.bool:
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If "
                           "you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")
    shape = tuple(broadcast_shapes(input.shape, target.shape))
    if shape != tuple(input.shape):
        raise RuntimeError(f"output with shape {list(input.shape)} doesn't match the broadcast "
                           f"shape {list(shape)}")
    _check_castable(dt.promote_types(input.dtype, target.dtype), input.dtype)


def _check_floating_kernel(input, kernel):
    """torch's CPU kernel ``kernel`` has float and double loops only (ints, bools and complex
    numbers are its NotImplementedError)."""
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{_short_name(input.dtype)}'")


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean"):
    """One-vs-all logistic loss averaged over classes (the last dimension).

    Example::

        >>> F.multilabel_soft_margin_loss(ember.tensor([[0., 2.]]), ember.tensor([[1., 0.]]))
        tensor(1.4093)
    """
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.dim() - 1
    loss = loss.sum(dim=class_dim) / input.shape[class_dim]
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    return _reduce(loss, reduction)


@autocast_policy("fp32")
@signature("hinge_embedding_loss(Tensor input, Tensor target, PyObject margin=1.0, "
           "PyObject size_average=None, PyObject reduce=None, PyObject reduction='mean') "
           "-> Tensor")
def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,
                         reduction="mean"):
    """``input`` where ``target == 1``, ``max(0, margin - input)`` where ``target == -1``.

    Example::

        >>> F.hinge_embedding_loss(ember.tensor([0.3, 0.2]), ember.tensor([1., -1.]))
        tensor(0.5500)
    """
    reduction = _reduction(size_average, reduce, reduction)
    zero = input.new_zeros(())
    # The margin takes input's dtype first, as in torch's kernel: an int64 loss stays int64.
    margin_part = where(target != 1, clamp_min(input.new_full((), margin) - input, 0), zero)
    self_part = where(target != -1, input, zero)
    return _reduce(margin_part + self_part, reduction)


@autocast_policy("fp32")
def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                        reduction="mean"):
    """``max(0, -target * (input1 - input2) + margin)``.

    Example::

        >>> F.margin_ranking_loss(ember.tensor([1., 2.]), ember.tensor([2., 1.]),
        ...                       ember.tensor([1., 1.]))
        tensor(0.5000)
    """
    reduction = _reduction(size_average, reduce, reduction)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError("margin_ranking_loss : All input tensors should have same dimension "
                           f"but got sizes: input1: {_size(input1.shape)}, input2: "
                           f"{_size(input2.shape)}, target: {_size(target.shape)} ")
    return _reduce(clamp_min(-target * (input1 - input2) + margin, 0), reduction)


@autocast_policy("fp32")
@signature("cosine_embedding_loss(Tensor input1, Tensor input2, Tensor target, float margin=0, "
           "PyObject size_average=None, PyObject reduce=None, str reduction='mean') -> Tensor")
def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                          reduction="mean"):
    """``1 - cos(x1, x2)`` where ``target == 1``, ``max(0, cos(x1, x2) - margin)`` where -1.

    Example::

        >>> F.cosine_embedding_loss(ember.tensor([[1., 0.]]), ember.tensor([[0., 1.]]),
        ...                         ember.tensor([1]))
        tensor(1.)
    """
    reduction = _reduction(size_average, reduce, reduction)
    target_dim = target.dim()
    if target_dim > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    want = 2 if target_dim == 1 else 1
    if input1.dim() != want or input2.dim() != want:
        raise RuntimeError(f"{target_dim}D target tensor expects {want}D input tensors, but found "
                           f"inputs with sizes {list(input1.shape)} and {list(input2.shape)}.")
    eps = 1e-12
    dot = (input1 * input2).sum(target_dim)
    norm1 = (input1 * input1).sum(target_dim) + eps
    norm2 = (input2 * input2).sum(target_dim) + eps
    cos = dot / (norm1 * norm2).sqrt()
    zero = cos.new_zeros(())
    loss = where(target == 1, 1 - cos, zero) + where(target == -1, clamp_min(cos - margin, 0),
                                                     zero)
    return _reduce(loss, reduction)


# ---------------------------------------------------------------- triplet losses


def _check_triplet_dims(anchor, positive, negative):
    a, p, n = anchor.dim(), positive.dim(), negative.dim()
    if not a == p == n:
        raise RuntimeError("The anchor, positive, and negative tensors are expected to have the "
                           f"same number of dimensions, but got: anchor {a}D, positive {p}D, and "
                           f"negative {n}D inputs")


@autocast_policy("fp32")
@signature("triplet_margin_loss(Tensor anchor, Tensor positive, Tensor negative, "
           "float margin=1.0, float p=2, float eps=1e-06, bool swap=False, "
           "PyObject size_average=None, PyObject reduce=None, str reduction='mean') -> Tensor")
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    """``max(0, d(a, p) - d(a, n) + margin)`` with the p-norm distance ``d``.

    Example::

        >>> a, p, n = ember.zeros(1, 2), ember.ones(1, 2), ember.full((1, 2), 2.)
        >>> F.triplet_margin_loss(a, p, n)
        tensor(0.)
    """
    reduction = _reduction(size_average, reduce, reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    _check_triplet_dims(anchor, positive, negative)
    dist_pos = pairwise_distance(anchor, positive, p, eps)
    dist_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        dist_neg = minimum(dist_neg, pairwise_distance(positive, negative, p, eps))
    return _reduce(clamp_min(dist_pos - dist_neg + margin, 0), reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin=1.0, swap=False, reduction="mean"):
    """:func:`triplet_margin_loss` with any ``distance_function(x1, x2)`` (default: L2).

    Example::

        >>> a, p, n = ember.zeros(1, 2), ember.ones(1, 2), ember.full((1, 2), 2.)
        >>> F.triplet_margin_with_distance_loss(a, p, n, margin=2.0)
        tensor(0.5858)
    """
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    _check_triplet_dims(anchor, positive, negative)
    if distance_function is None:
        distance_function = pairwise_distance
    dist_pos = distance_function(anchor, positive)
    dist_neg = distance_function(anchor, negative)
    if swap:
        dist_neg = minimum(dist_neg, distance_function(positive, negative))
    return _reduce(clamp_min(margin + dist_pos - dist_neg, 0), reduction)


# ---------------------------------------------------------------- class-index losses


def _check_class_target(target, name="target"):
    if target.dtype not in (dt.int64, dt.uint8):
        raise RuntimeError(f"expected {name} dtype to be Long or Byte, but got "
                           f"{_SHORT[target.dtype.name]}")


def _check_nll_shapes(input, target):
    if input.dim() < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.dim()})")
    if input.dim() >= 2:  # torch compares the batch sizes first
        batch = target.shape[0] if target.dim() else 1
        if input.shape[0] != batch:
            raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target "
                             f"batch_size ({batch}).")
    if input.dim() == 1 or input.dim() == 2:
        if target.dim() > 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if input.dim() >= 3:
        expected = (input.shape[0],) + tuple(input.shape[2:])
        if tuple(target.shape) != expected:
            if input.dim() == 4:
                raise RuntimeError(f"size mismatch (got input: {list(input.shape)} , target: "
                                   f"{list(target.shape)}")
            raise RuntimeError(f"Expected target size {list(expected)}, got "
                               f"{list(target.shape)}")


def _nll_terms(logp, target, weight, ignore_index, class_dim):
    """Per-element ``-w[t] * logp[t]`` (0 where ignored), the per-element weights, the mask."""
    n_classes = logp.shape[class_dim]
    if weight is not None:
        if weight.numel() != n_classes:
            raise RuntimeError(f"weight tensor should be defined either for all {n_classes} "
                               "classes or no classes but got weight tensor of shape: "
                               f"{list(weight.shape)}")
        _check_same_dtype(logp, weight)
    mask = target != ignore_index
    safe = where(mask, target, 0)
    if not _is_meta(target):
        _check_targets(target, mask, safe, n_classes)
    if safe.dtype is not dt.int64:
        safe = safe.to(dt.int64)
    picked = logp.gather(class_dim, safe.unsqueeze(class_dim)).squeeze(class_dim)
    zero = logp.new_zeros(())
    if weight is None:
        w = mask.to(logp.dtype)
        loss = where(mask, -picked, zero)
    else:
        w = where(mask, weight.reshape(-1).take(safe), zero)
        loss = where(mask, -picked * w, zero)
    return loss, w, mask


def _check_targets(target, mask, safe, n_classes):
    """torch's IndexError for a class index outside ``[0, n_classes)`` that is not ignored
    (``safe``: the targets with the ignored ones 0). On webgpu it is raised at the next host
    read rather than waiting for the device in the middle of a step, as CUDA checks targets
    asynchronously."""
    xp = target._device.xp
    defer = None if xp is np else getattr(xp, "defer_range_check", None)
    if defer is not None:
        defer(safe._data, 0, n_classes, lambda t: IndexError(f"Target {t} is out of bounds."))
        return
    bad = mask & ((target < 0) | (target >= n_classes))
    if bool(bad.any()):
        raise IndexError(f"Target {int(target[bad][0])} is out of bounds.")


def _check_nll_input(logp):
    """torch's kernels take floating inputs only (they are picked by the input's dtype)."""
    if not logp.dtype.is_floating_point:
        kernel = "nll_loss2d_forward_out_frame" if logp.dim() >= 3 else "nll_loss_out_frame"
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{_SHORT[logp.dtype.name]}'")


def _nll(logp, target, weight, ignore_index, reduction):
    _check_nll_shapes(logp, target)  # torch checks the shapes before the dtypes
    _check_class_target(target)
    _check_nll_input(logp)
    class_dim = 0 if logp.dim() == 1 else 1
    if weight is None and _targets_all_kept(target, logp.shape[class_dim], ignore_index):
        if target.dtype is not dt.int64:
            target = target.to(dt.int64)
        picked = logp.gather(class_dim, target.unsqueeze(class_dim)).squeeze(class_dim)
        return _reduce(-picked, reduction)
    loss, w, _ = _nll_terms(logp, target, weight, ignore_index, class_dim)
    if reduction == "mean":
        return loss.sum() / w.sum()
    return _reduce(loss, reduction)


def _targets_all_kept(target, n_classes, ignore_index):
    """Whether every class index of a CPU ``target`` is in ``[0, n_classes)`` and none can be
    ``ignore_index``: then no mask, weights or per-element checks are needed, and the loss is
    a gather and a reduction (a dozen fewer ops in each training step). Read on the host array
    itself, so not while a tracer (vmap) records: it must see the check as a host read.

    Example: targets ``[0, 2]`` of 3 classes with ``ignore_index=-100`` are all kept.
    """
    data = target._data
    if _trace_state.tracer is not None or type(data) is not np.ndarray or data.size == 0 \
            or 0 <= ignore_index < n_classes:
        return False
    return bool(data.min() >= 0) and bool(data.max() < n_classes)


@autocast_policy("fp32")
@signature("nll_loss(Tensor input, Tensor target, Tensor? weight=None, "
           "PyObject size_average=None, int ignore_index=-100, PyObject reduce=None, "
           "str reduction='mean') -> Tensor")
def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    """Negative log likelihood ``-input[n, target[n]]`` for log-probabilities ``input``.

    ``input`` is (C), (N, C) or (N, C, d1, ...); ``mean`` divides by the summed class weights
    of the targets that are not ``ignore_index``.

    Example::

        >>> F.nll_loss(ember.tensor([[-1., -2.], [-3., -0.5]]), ember.tensor([0, 1]))
        tensor(0.7500)
    """
    reduction = _reduction(size_average, reduce, reduction)
    return _nll(input, target, weight, ignore_index, reduction)


# ---------------------------------------------------------------- fused cross entropy


def _cross_entropy_kernel(xp, logits, target, *, reduction):
    """``log(sum(exp(x - m))) - (x[target] - m)`` for each row of (N, C) ``logits`` (m the
    row's maximum, or the array's: see :func:`_softmax_shift`), reduced; also the
    exponentials ``exp(x - m)`` and their row sums, which the backward scales into
    ``softmax - onehot`` in one pass. Four passes over the logits where log_softmax, gather
    and their backwards took nine.

    Example: logits ``[[2, 0], [0, 2]]`` with targets ``[0, 1]`` give ``log(1 + e^-2)``.
    """
    rows = xp.arange(logits.shape[0])
    exps = xp.subtract(logits, _softmax_shift(logits))
    picked = exps[rows, target]   # x[target] - m, as log_softmax's shifted values
    xp.exp(exps, out=exps)
    sums = xp.matmul(exps, xp.ones(logits.shape[1], logits.dtype))
    loss = xp.log(sums) - picked
    if reduction == "mean":
        loss = loss.mean(dtype=loss.dtype)
    elif reduction == "sum":
        loss = loss.sum(dtype=loss.dtype)
    return loss, exps, sums


def _softmax_shift(logits):
    """What to subtract from (N, C) ``logits`` before exponentiating: the largest value of the
    whole array where every value lies within ``log(C)`` of it, else each row's maximum (also
    for infinities and NaN, whose span is not finite).

    A whole-array max and min and a scalar subtraction cost about a third of a per-row max and
    its broadcast subtraction. Within that span nothing underflows, the shifted values are
    rounded by at most half an ulp of ``log(C)``, and every row's loss is at least
    ``log(1 + (C - 1) / C)``, so the loss keeps float32's relative precision.
    """
    top = logits.max()
    if top - logits.min() < math.log(logits.shape[1]):
        return top
    return logits.max(axis=1, keepdims=True)


def _cross_entropy_meta(logits, target, *, reduction):
    n = logits.shape[0]
    loss_shape = (n,) if reduction == "none" else ()
    return (loss_shape, logits.dtype), (logits.shape, logits.dtype), ((n,), logits.dtype)


_cross_entropy_op = Op("_cross_entropy_fused", _cross_entropy_kernel, meta=_cross_entropy_meta,
                       save_inputs=True, save_output=True, multi_output=True,
                       differentiable_outputs=(0,), kind="nn", grad_name="NllLossBackward0")
_cross_entropy_op.opt_out("jvp", "forward-mode AD runs the composite ops (the op is not used "
                                 "while a forward-mode level is active)")
_cross_entropy_op.opt_out("batch", "vmap traces the composite ops (the op is not used while "
                                   "a trace records)")
_cross_entropy_op.opt_out("onnx", "not used while a trace records: an export sees "
                                  "log_softmax and nll_loss")


def _cross_entropy_backward_kernel(xp, grad, exps, sums, target, *, reduction):
    """``(softmax - onehot(target)) * grad`` (divided by N for ``mean``) from the saved
    exponentials and row sums: one scaling pass, then the targets' entries."""
    n = exps.shape[0]
    per_row = grad / n if reduction == "mean" else grad
    out = exps * (per_row / sums)[:, None]
    out[xp.arange(n), target] -= per_row
    return out


_cross_entropy_backward_op = Op("_cross_entropy_fused_backward", _cross_entropy_backward_kernel,
                                meta=lambda grad, exps, sums, target, *, reduction:
                                (exps.shape, exps.dtype), save_inputs=False, kind="nn",
                                opt_outs=first_order_backward("the composite loss"))


@_cross_entropy_op.defderivative
def _cross_entropy_derivative(ctx, g_loss, g_exps, g_sums, *, reduction):
    logits, target = ctx.inputs
    if g_loss is None:
        return (None, None)
    if not grad_mode.state.enabled and _forward_ad._state.level is None:
        _, exps, sums = ctx.output
        return (_cross_entropy_backward_op(g_loss, exps, sums, target, reduction=reduction),
                None)
    # create_graph: differentiate a replay of the composite, so that the gradient is itself
    # differentiable in the logits
    from ...autograd import grad as _grad

    loss = _cross_entropy_composite(logits, target, reduction)
    return (_grad(loss, [logits], g_loss, create_graph=True)[0], None)


def _cross_entropy_composite(logits, target, reduction):
    picked = log_softmax(logits, 1).gather(1, target.unsqueeze(1)).squeeze(1)
    return _reduce(-picked, reduction)


def _fused_cross_entropy_applies(input, target, weight, ignore_index, label_smoothing):
    """Whether :data:`_cross_entropy_op` computes this call: float32/float64 (N, C) NumPy
    logits, in-range int64 class indices (N) none of which can be ignored, no weight or
    smoothing, and nothing recording the composite ops."""
    if weight is not None or label_smoothing != 0.0 or _forward_ad._state.level is not None:
        return False
    if input.dim() != 2 or target.dim() != 1 or target.dtype is not dt.int64:
        return False
    if input._device._xp is not np or input._data.dtype not in (np.float32, np.float64):
        return False
    return target.shape[0] == input.shape[0] and input.shape[1] > 0 \
        and _targets_all_kept(target, input.shape[1], ignore_index)


@autocast_policy("fp32")
@signature("cross_entropy(Tensor input, Tensor target, Tensor? weight=None, "
           "PyObject size_average=None, int ignore_index=-100, PyObject reduce=None, "
           "PyObject reduction='mean', float label_smoothing=0.0) -> Tensor")
def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    """``nll_loss(log_softmax(input, 1), target)``, with class-probability targets and label
    smoothing as in torch.

    ``target`` holds class indices ((N) or (N, d1, ...), or () for an unbatched (C) input), or
    class probabilities with ``input``'s shape.

    Example::

        >>> F.cross_entropy(ember.tensor([[2., 0.], [0., 2.]]), ember.tensor([0, 1]))
        tensor(0.1269)
    """
    reduction = _reduction(size_average, reduce, reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    class_dim = 0 if input.dim() == 1 else 1
    if tuple(input.shape) == tuple(target.shape):
        return _cross_entropy_probs(input, target, weight, ignore_index, reduction,
                                    label_smoothing, class_dim)
    if _fused_cross_entropy_applies(input, target, weight, ignore_index, label_smoothing):
        return _cross_entropy_op(input, target, reduction=reduction)[0]
    logp = log_softmax(input, class_dim)
    if label_smoothing == 0.0:
        return _nll(logp, target, weight, ignore_index, reduction)
    _check_nll_shapes(logp, target)
    _check_class_target(target)
    loss, w, mask = _nll_terms(logp, target, weight, ignore_index, class_dim)
    n_classes = input.shape[class_dim]
    if weight is not None:
        shape = [1] * input.dim()
        shape[class_dim] = n_classes
        smooth = -(logp * weight.reshape(shape)).sum(class_dim)
    else:
        smooth = -logp.sum(class_dim)
    smooth = where(mask, smooth, smooth.new_zeros(()))
    if reduction == "mean":
        nll = loss.sum() / w.sum()
        smooth = smooth.sum() / (w.sum() if weight is not None else mask.sum())
    else:
        nll = _reduce(loss, reduction)
        smooth = _reduce(smooth, reduction)
    return nll * (1 - label_smoothing) + smooth * (label_smoothing / n_classes)


def _cross_entropy_probs(input, target, weight, ignore_index, reduction, label_smoothing,
                         class_dim):
    if target.dtype.category < dt._FLOAT:
        raise RuntimeError("Expected floating point type for target with class probabilities, "
                           f"got {_SHORT[target.dtype.name]}")
    if ignore_index >= 0:
        raise RuntimeError("ignore_index is not supported for floating point target")
    n_classes = input.shape[class_dim]
    if weight is not None and weight.numel() != n_classes:
        raise RuntimeError(f"weight tensor should be defined either for all {n_classes} classes "
                           f"or no classes but got weight tensor of shape: {list(weight.shape)}")
    logp = log_softmax(input, class_dim)
    if label_smoothing > 0.0:
        target = target * (1 - label_smoothing) + label_smoothing / n_classes
    terms = logp * target
    if weight is not None:
        shape = [1] * input.dim()
        shape[class_dim] = n_classes
        terms = terms * weight.reshape(shape)
    loss = -terms.sum(class_dim)
    if reduction == "mean":
        return loss.sum() / (input.numel() // n_classes if n_classes else 0)
    return _reduce(loss, reduction)


def _check_long(target):
    if target.dtype is not dt.int64:
        raise RuntimeError(f"expected scalar type Long but found {_SHORT[target.dtype.name]}")


@autocast_policy("fp32")
@signature("multi_margin_loss(Tensor input, Tensor target, Scalar p=1, Scalar margin=1.0, "
           "Tensor? weight=None, PyObject size_average=None, PyObject reduce=None, "
           "str reduction='mean') -> Tensor")
def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None,
                      reduce=None, reduction="mean"):
    """Multi-class hinge loss ``sum_{i != y} max(0, margin - x[y] + x[i]) ** p / C``.

    Example::

        >>> F.multi_margin_loss(ember.tensor([[0.1, 0.2, 0.4, 0.8]]), ember.tensor([3]))
        tensor(0.3250)
    """
    reduction = _reduction(size_average, reduce, reduction)
    if p != 1 and p != 2:
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    ndim = input.dim()
    if not ((input.numel() > 0 and ndim <= 1) or (ndim == 2 and input.shape[1] > 0)):
        raise RuntimeError("Expected non-empty vector or matrix with optional 0-dim batch size, "
                           f"but got: {list(input.shape)}")
    n_frames = 1 if ndim <= 1 else input.shape[0]
    n_classes = input.numel() if ndim <= 1 else input.shape[1]
    if target.dim() > 1 or target.numel() != n_frames:
        raise RuntimeError("multi_margin_loss: target tensor should be 1-D with size equal to "
                           "the number of input samples (batch size). Expected target size "
                           f"[{n_frames}], but got {list(target.shape)}. Input has shape "
                           f"{list(input.shape)}.")
    _check_long(target)
    _check_floating_kernel(input, "multi_margin_loss_cpu_kernel")
    if weight is not None and weight.numel() != n_classes:
        raise RuntimeError(f"inconsistent weight size, expected {n_classes} but got "
                           f"{list(weight.shape)}")
    if not _is_meta(target) and bool(((target < 0) | (target >= n_classes)).any()):
        raise RuntimeError("target out of range")
    x = input.reshape(n_frames, n_classes)
    y = target.reshape(n_frames, 1)
    x_y = x.gather(1, y)
    z = clamp_min(x - x_y + margin, 0)
    if p == 2:
        z = z * z
    if weight is not None:
        z = z * weight.take(y)
    not_target = zeros((n_frames, n_classes), dtype=dt.bool, device=input.device).scatter(
        1, y, True).logical_not()
    loss = where(not_target, z, z.new_zeros(())).sum(1) / n_classes
    if reduction == "none":
        return loss.reshape(target.shape)
    return _reduce(loss, reduction)


@autocast_policy("fp32")
@signature("multilabel_margin_loss(Tensor input, Tensor target, PyObject size_average=None, "
           "PyObject reduce=None, str reduction='mean') -> Tensor")
def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Multi-label hinge loss: ``target`` lists the positive classes of each sample, ended by the
    first -1; every (positive, negative) pair contributes ``max(0, 1 - (x[pos] - x[neg])) / C``.

    Example::

        >>> F.multilabel_margin_loss(ember.tensor([[0.1, 0.2, 0.4, 0.8]]),
        ...                          ember.tensor([[3, 0, -1, 1]]))
        tensor(0.8500)
    """
    reduction = _reduction(size_average, reduce, reduction)
    ndim = input.dim()
    if not ((input.numel() > 0 and ndim <= 1) or (ndim == 2 and input.shape[1] > 0)):
        raise RuntimeError("Expected non-empty vector or matrix with optional 0-dim batch size, "
                           f"but got: {list(input.shape)}")
    if tuple(target.shape) != tuple(input.shape):
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: "
                           f"{list(input.shape)}")
    if target.dtype.is_complex:  # torch first checks the target's range, with no complex min
        raise NotImplementedError(f"\"min_all\" not implemented for "
                                  f"'{_short_name(target.dtype)}'")
    _check_long(target)
    _check_floating_kernel(input, "multilabel_margin_loss_forward_out_frame")
    n_frames = 1 if ndim <= 1 else input.shape[0]
    n_classes = input.numel() if ndim <= 1 else input.shape[1]
    x = input.reshape(n_frames, n_classes)
    y = target.reshape(n_frames, n_classes)
    # Targets count up to (not including) the first -1 of each row.
    valid = (y == -1).to(dt.int64).cumsum(1) == 0
    if not _is_meta(target) and bool(((y < -1) | (y >= n_classes)).any()):
        raise RuntimeError("argument #2 'target' is out of range")
    safe = where(valid, y, 0)
    is_target = _scatter_any(safe, valid, n_frames, n_classes, input.device)
    x_pos = x.gather(1, safe)                                    # (N, J)
    hinge = clamp_min(1 - x_pos.unsqueeze(2) + x.unsqueeze(1), 0)  # (N, J, C)
    pairs = valid.unsqueeze(2) & is_target.logical_not().unsqueeze(1)
    loss = where(pairs, hinge, hinge.new_zeros(())).sum((1, 2)) / n_classes
    if ndim <= 1:
        loss = loss.reshape(())
    return _reduce(loss, reduction)


def _scatter_any(index, valid, rows, cols, device):
    """A (rows, cols) bool mask: True at ``index[r, j]`` for every valid ``j``."""
    counts = zeros((rows, cols), dtype=dt.int64, device=device)
    counts = counts.scatter_add(1, index, valid.to(dt.int64))
    return counts > 0


# ---------------------------------------------------------------- CTC


def _logsumexp3(xp, a, b, c):
    """Elementwise ``log(exp(a) + exp(b) + exp(c))``, exact for -inf entries."""
    m = xp.maximum(xp.maximum(a, b), c)
    m = xp.where(m == -np.inf, 0, m)
    return xp.log(xp.exp(a - m) + xp.exp(b - m) + xp.exp(c - m)) + m


def _ctc_setup(xp, lp, targets, input_lengths, target_lengths, blank):
    """Extended labels (N, S) (blanks interleaved), allowed skips, emissions (T, N, S)."""
    n = lp.shape[1]
    tl = xp.asarray(target_lengths, dtype=np.int64).reshape(n)
    max_len = max(target_lengths, default=0)
    positions = xp.arange(max_len, dtype=np.int64)
    inside = positions[None, :] < tl[:, None]
    if targets.ndim == 1:
        offsets = xp.cumsum(tl) - tl
        index = xp.minimum(offsets[:, None] + positions[None, :], max(targets.shape[0] - 1, 0))
        labels = targets[index] if targets.shape[0] else xp.zeros(index.shape, np.int64)
    else:
        labels = targets[:, :max_len]
    labels = xp.where(inside, labels.astype(np.int64), blank)
    ext = xp.full((n, 2 * max_len + 1), blank, dtype=np.int64)
    ext[:, 1::2] = labels
    skip = xp.zeros(ext.shape, dtype=bool)
    skip[:, 3::2] = labels[:, 1:] != labels[:, :-1]
    emit = lp[:, xp.arange(n)[:, None], ext]
    return tl, ext, skip, emit


def _ctc_alpha(xp, emit, skip):
    steps, n, s = emit.shape
    alpha = xp.full(emit.shape, -np.inf, dtype=emit.dtype)
    alpha[0, :, :min(2, s)] = emit[0, :, :min(2, s)]
    pad1 = xp.full((n, 1), -np.inf, dtype=emit.dtype)
    pad2 = xp.full((n, 2), -np.inf, dtype=emit.dtype)
    for t in range(1, steps):
        prev = alpha[t - 1]
        one = xp.concatenate((pad1, prev[:, :-1]), axis=1)
        two = xp.where(skip, xp.concatenate((pad2, prev[:, :-2]), axis=1)[:, :s], -np.inf)
        alpha[t] = _logsumexp3(xp, prev, one, two) + emit[t]
    return alpha


def _ctc_nll(xp, alpha, il, tl):
    n = alpha.shape[1]
    rows = xp.arange(n)
    last = xp.maximum(il - 1, 0)
    end = alpha[last, rows, 2 * tl]
    before = xp.where(tl > 0, alpha[last, rows, xp.maximum(2 * tl - 1, 0)], -np.inf)
    log_likelihood = xp.logaddexp(end, before)
    empty = xp.where(tl == 0, 0.0, -np.inf).astype(alpha.dtype)
    return -xp.where(il == 0, empty, log_likelihood)


def _ctc_meta(lp, targets, *, input_lengths, target_lengths, blank, zero_infinity):
    steps, n = lp.shape[0], lp.shape[1]
    return ((n,), lp.dtype), ((steps, n, 2 * max(target_lengths, default=0) + 1), lp.dtype)


def _ctc_kernel(xp, lp, targets, *, input_lengths, target_lengths, blank, zero_infinity):
    dtype = lp.dtype
    if dtype in _LOW:
        lp = lp.astype(_F32)
    il = xp.asarray(input_lengths, dtype=np.int64).reshape(lp.shape[1])
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        tl, _, skip, emit = _ctc_setup(xp, lp, targets, input_lengths, target_lengths, blank)
        alpha = _ctc_alpha(xp, emit, skip)
        nll = _ctc_nll(xp, alpha, il, tl)
    return nll.astype(dtype, copy=False), alpha.astype(dtype, copy=False)


_ctc_op = defop("ctc_loss", meta=_ctc_meta, multi_output=True, differentiable_outputs=(0,),
                save_output=True, kind="nn")(_ctc_kernel)
_ctc_op.opt_out("onnx", "ONNX has no CTC loss operator")


_ctc_op.opt_out("batch", "not batched yet: the input and target lengths are Python parameters of "
                         "one call, so a batch would need them per element")


@defop("ctc_loss_backward", meta=lambda grad, lp, *rest, **params: (lp.shape, lp.dtype), kind="nn")
def _ctc_backward_op(xp, grad, lp, targets, nll, alpha, *, input_lengths, target_lengths, blank,
                     zero_infinity):
    dtype = lp.dtype
    if dtype in _LOW:
        lp, grad, nll, alpha = (a.astype(_F32) for a in (lp, grad, nll, alpha))
    steps, n, classes = lp.shape
    il = xp.asarray(input_lengths, dtype=np.int64).reshape(n)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        tl, ext, skip, emit = _ctc_setup(xp, lp, targets, input_lengths, target_lengths, blank)
        s = ext.shape[1]
        positions = xp.arange(s)[None, :]
        finals = (positions == 2 * tl[:, None]) | ((positions == 2 * tl[:, None] - 1)
                                                    & (tl[:, None] > 0))
        skip_next = xp.zeros_like(skip)
        skip_next[:, :-2] = skip[:, 2:]
        beta = xp.full(emit.shape, -np.inf, dtype=emit.dtype)
        pad1 = xp.full((n, 1), -np.inf, dtype=emit.dtype)
        pad2 = xp.full((n, 2), -np.inf, dtype=emit.dtype)
        following = xp.full((n, s), -np.inf, dtype=emit.dtype)
        for t in range(steps - 1, -1, -1):
            one = xp.concatenate((following[:, 1:], pad1), axis=1)
            two = xp.where(skip_next, xp.concatenate((following[:, 2:], pad2), axis=1)[:, :s],
                           -np.inf)
            current = _logsumexp3(xp, following, one, two) + emit[t]
            start = xp.where(finals, emit[t], -np.inf)
            current = xp.where((il == t + 1)[:, None], start, current)
            current = xp.where((il <= t)[:, None], -np.inf, current)
            beta[t] = current
            following = current
        both = alpha + beta
        top = both.max(axis=2, keepdims=True) if s else xp.zeros((steps, n, 1), emit.dtype)
        top = xp.where(top == -np.inf, 0, top)
        cells = (xp.arange(steps)[:, None, None] * n + xp.arange(n)[None, :, None]) * classes \
            + ext[None, :, :]
        sums = xp.bincount(cells.reshape(-1), weights=xp.exp(both - top).reshape(-1),
                           minlength=steps * n * classes).reshape(steps, n, classes)
        log_gamma = xp.log(sums) + top
        out = xp.exp(lp) - xp.exp(log_gamma + nll[None, :, None] - lp)
        out = out * grad[None, :, None]
        keep = xp.arange(steps)[:, None] < il[None, :]
        if zero_infinity:
            keep = keep & ~xp.isinf(nll)[None, :]
        out = xp.where(keep[:, :, None], out, 0)
    return out.astype(dtype, copy=False)


_ctc_backward_op.opt_out("batch", "not batched yet: the input and target lengths are Python "
                                  "parameters of one call, so a batch would need them per element")
_ctc_backward_op.opt_out("derivative", "the backward kernel of ctc_loss (first order)")
_ctc_backward_op.opt_out("onnx", "a backward kernel: exported models run inference")


@_ctc_op.defderivative
def _ctc_derivative(ctx, grad, _grad_alpha, **params):
    lp, targets = ctx.inputs
    nll, alpha = ctx.output
    return _ctc_backward_op(grad, lp, targets, nll.detach(), alpha.detach(), **params), None


def _lengths(value, name, batch):
    if isinstance(value, Tensor):
        if value.dtype.category >= dt._FLOAT:
            raise RuntimeError(f"{name} must be integral")
        values = [int(v) for v in value.reshape(-1).tolist()]
    elif isinstance(value, int):
        values = [value]
    else:
        values = [int(v) for v in value]
    if len(values) != batch:
        raise RuntimeError(f"{name} must be of size batch_size")
    return tuple(values)


@autocast_policy("fp32")
@signature("ctc_loss(Tensor log_probs, Tensor targets, PyObject input_lengths, "
           "PyObject target_lengths, int blank=0, PyObject reduction='mean', "
           "bool zero_infinity=False) -> Tensor", overloaded=True)
def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
             zero_infinity=False):
    """Connectionist Temporal Classification loss of log-probabilities ``(T, N, C)`` (or
    ``(T, C)``) against label sequences.

    ``targets`` is padded ``(N, S)`` or the concatenation of all sequences; the lengths are
    tensors or sequences of ints. ``'mean'`` divides each loss by its target length, then
    averages over the batch. The gradient is torch's ``exp(log_probs) - posterior``, the
    gradient through a preceding ``log_softmax``.

    Example::

        >>> lp = ember.randn(5, 1, 3).log_softmax(2)
        >>> F.ctc_loss(lp, ember.tensor([[1, 2]]), [5], [2]).shape
        ember.Size([])
    """
    reduction = _check_reduction(reduction)
    if log_probs.dtype.category < dt._FLOAT or log_probs.dtype.category > dt._FLOAT:
        raise NotImplementedError(f'"ctc_loss_cpu" not implemented for '
                                  f"'{_SHORT[log_probs.dtype.name]}'")
    unbatched = log_probs.dim() == 2
    padded_rows = targets.shape[0] if targets.dim() >= 2 else None  # (one per sequence)
    if unbatched:
        log_probs = log_probs.unsqueeze(1)
        targets = targets.unsqueeze(0)
    if log_probs.dim() != 3:
        raise RuntimeError(f"ctc_loss: expected log_probs to be 2-D or 3-D, got "
                           f"{log_probs.dim()}-D")
    if log_probs.numel() == 0:
        raise RuntimeError("log_probs tensor must not be empty")
    steps, batch, classes = log_probs.shape
    if not 0 <= blank < classes:
        raise RuntimeError("blank must be in label range")
    input_lengths = _lengths(input_lengths, "input_lengths", batch)
    target_lengths = _lengths(target_lengths, "target_lengths", batch)
    where_ = " (while checking arguments for ctc_loss_allocate_outputs)"
    if padded_rows is not None and padded_rows != batch:
        raise RuntimeError(f"Expected tensor to have size {batch} at dimension 0, but got size "
                           f"{padded_rows} for argument #2 'targets'{where_}")
    for value in input_lengths:
        if value < 0:
            raise RuntimeError(f"Expected input_lengths to have value at least 0, but got value "
                               f"{value}{where_}")
        if value > steps:
            raise RuntimeError(f"Expected input_lengths to have value at most {steps}, but got "
                               f"value {value}{where_}")
    for value in target_lengths:
        if value < 0:
            raise RuntimeError(f"Expected target_lengths to have value at least 0, but got value "
                               f"{value}{where_}")
    if targets.dtype is not dt.int64:
        targets = targets.to(dt.int64)
    longest = max(target_lengths, default=0)
    if targets.dim() == 2 and targets.shape[1] < longest:
        raise RuntimeError(f"Expected tensor to have size at least {longest} at dimension 1, but "
                           f"got size {targets.shape[1]} for argument #2 'targets'{where_}")
    if targets.dim() == 1 and targets.shape[0] < sum(target_lengths):
        raise RuntimeError(f"Expected tensor to have size at least {sum(target_lengths)} at "
                           f"dimension 0, but got size {targets.shape[0]} for argument #2 "
                           f"'targets'{where_}")
    nll, _ = _ctc_op(log_probs, targets, input_lengths=input_lengths,
                     target_lengths=target_lengths, blank=int(blank),
                     zero_infinity=bool(zero_infinity))
    if zero_infinity:
        nll = where(nll == math.inf, nll.new_zeros(()), nll)
    if reduction == "mean":
        lengths = nll.new_tensor(target_lengths).clamp(min=1)
        loss = (nll / lengths).mean()
    else:
        loss = _reduce(nll, reduction)
    if unbatched and reduction == "none":
        loss = loss.squeeze(0)
    return loss
