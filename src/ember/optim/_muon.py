"""Muon: momentum SGD whose 2-D updates are orthogonalised by a Newton-Schulz iteration."""

from __future__ import annotations

import math

from .. import _dtype as dt
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from ..ops.creation import zeros_like
from .optimizer import Optimizer

__all__ = ["Muon"]

_DEFAULT_NS = (3.4445, -4.7750, 2.0315)


def _orthogonalize(grad, ns_coefficients, ns_steps, eps):
    """Approximate ``U V^T`` of ``grad = U S V^T`` by ``ns_steps`` quintic Newton-Schulz steps
    in bfloat16 (torch's coefficients and precision)."""
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if grad.dim() != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = ns_coefficients
    tall = grad.shape[0] > grad.shape[1]
    x = grad.to(dt.bfloat16)
    x = x.T if tall else x
    x = x / x.norm().clamp(min=eps)
    for _ in range(ns_steps):
        # each step rounds to bfloat16 once, after an exact float32 multiply-add, as torch's
        # bfloat16 ``addmm`` does
        gram = _mm_add(x, x.T)
        poly = _mm_add(gram, gram, c, gram, b)
        x = _mm_add(poly, x, 1.0, x, a)
    return x.T if tall else x


def _mm_add(left, right, alpha=1.0, bias=None, beta=0.0):
    """``beta * bias + alpha * left @ right`` computed in float32, rounded to bfloat16."""
    product = left.float() @ right.float()
    total = alpha * product if bias is None else beta * bias.float() + alpha * product
    return total.to(dt.bfloat16)


def _adjusted_lr(lr, adjust_lr_fn, shape):
    rows, cols = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        return lr * math.sqrt(max(1, rows / cols))
    if adjust_lr_fn == "match_rms_adamw":
        return lr * 0.2 * math.sqrt(max(rows, cols))
    return lr


class Muon(Optimizer):
    """Muon (MomentUm Orthogonalized by Newton-Schulz) for 2-D parameters, torch's update rule.

    ``buf = lerp(buf, g, 1 - momentum)``; the update is ``lerp(g, buf, momentum)`` (Nesterov)
    or ``buf``, orthogonalised, scaled by ``lr`` (adjusted to the shape by ``adjust_lr_fn``),
    after decoupled weight decay.

    Example::

        >>> opt = Muon([ember.nn.Parameter(ember.randn(4, 3))], lr=0.02)
    """

    def __init__(self, params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
                 ns_coefficients=_DEFAULT_NS, eps=1e-7, ns_steps=5, adjust_lr_fn=None):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ("original", "match_rms_adamw"):
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = {"lr": lr, "weight_decay": weight_decay, "momentum": momentum,
                    "nesterov": nesterov, "ns_coefficients": ns_coefficients, "eps": eps,
                    "ns_steps": ns_steps, "adjust_lr_fn": adjust_lr_fn}
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.dim() != 2:
                    raise ValueError("Muon only supports 2D parameters whereas we found a "
                                     f"parameter with size: {p.size()}")

    def step(self, closure=None):
        """Perform one Muon step; ``closure`` (optional) re-evaluates and returns the loss."""
        loss = self._eval_closure(closure)
        with no_grad():
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        self._update(p, group)
        return loss

    def _update(self, p, group):
        if p.is_complex():
            raise RuntimeError("Muon does not support complex parameters")
        grad, lr, momentum = p.grad, float(group["lr"]), group["momentum"]
        state = self.state[p]
        if "momentum_buffer" not in state:
            state["momentum_buffer"] = zeros_like(grad)
        buf = state["momentum_buffer"]
        buf.lerp_(grad, 1 - momentum)
        update = grad.lerp(buf, momentum) if group["nesterov"] else buf
        update = _orthogonalize(update, group["ns_coefficients"], group["ns_steps"], group["eps"])
        p.mul_(1 - lr * group["weight_decay"])
        p.add_(update.to(p.dtype), alpha=-_adjusted_lr(lr, group["adjust_lr_fn"], p.shape))
