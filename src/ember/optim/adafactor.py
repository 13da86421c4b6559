"""Adafactor: Adam-like steps whose second moment of a matrix is stored as a row and a column
factor (memory ``rows + columns`` instead of ``rows * columns``), with relative step sizes.

This follows torch 2.13's variant: ``lr`` caps the relative step size and scales the decoupled
weight decay; ``eps1`` (default ``finfo(dtype).eps``) bounds the variance estimate from below.
"""

from __future__ import annotations

import math

from .. import _dtype as dt
from .._tensor import Tensor
from ..ops.creation import zeros, zeros_like
from ..sparse._base import SparseTensorBase
from .adam import lerp_
from .optimizer import Optimizer, _bump, _data, _prepare, _scalar

__all__ = ["Adafactor"]


def _check_options(lr, beta2_decay, eps, d, weight_decay):
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    if not 0.0 <= lr:
        raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
    if not 0.0 >= beta2_decay:
        raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
    if eps[0] is not None and not 0.0 <= eps[0]:
        raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
    if not 0.0 <= eps[1]:
        raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
    if not 1.0 <= d:
        raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
    if not 0.0 <= weight_decay:
        raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")


def _rms(xp, array):
    """Root mean square of all elements, as a Python float (0 for an empty array)."""
    return float(xp.linalg.norm(array.ravel())) / math.sqrt(max(array.size, 1))


class Adafactor(Optimizer):
    """Adafactor (Shazeer & Stern, 2018) as in torch 2.13.

    At step ``t``: ``beta2_t = 1 - t**beta2_decay``, ``rho = min(lr, 1/sqrt(t))`` and the step
    size ``alpha = max(eps2, RMS(param)) * rho``. For parameters with 2 or more dims the
    squared gradient's running mean is kept as a row factor (mean over the last dim) and a
    column factor (mean over the second-to-last); their outer product divided by the row
    factor's mean estimates it. The update ``grad / sqrt(max(V, eps1**2))`` is scaled down to
    an RMS of at most ``d``. Weight decay is decoupled: ``param *= 1 - lr * weight_decay``.

    State per parameter: ``step`` (a float32 0-dim tensor), then ``row_var`` and ``col_var``
    (matrices and higher) or ``variance`` (vectors and scalars).

    Example::

        >>> opt = ember.optim.Adafactor(model.parameters(), lr=1e-2)
        >>> loss_fn(model(x), y).backward(); opt.step(); opt.zero_grad()
    """

    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0,
                 weight_decay=0.0, *, foreach=None, maximize=False):
        _check_options(lr, beta2_decay, eps, d, weight_decay)
        defaults = {"lr": lr, "beta2_decay": beta2_decay, "eps": eps, "d": d,
                    "weight_decay": weight_decay, "foreach": foreach, "maximize": maximize}
        super().__init__(params, defaults)

    _group_defaults_on_load = {"foreach": None}
    _step_keys = ("step",)

    def _init_state(self, p, state, group):
        state["step"] = _scalar(0.0)
        if p.grad.dim() > 1:
            rows, cols = list(p.grad.shape), list(p.grad.shape)
            rows[-1] = 1
            cols[-2] = 1
            state["row_var"] = zeros(rows, dtype=p.grad.dtype, device=p.grad.device)
            state["col_var"] = zeros(cols, dtype=p.grad.dtype, device=p.grad.device)
        else:
            state["variance"] = zeros_like(p.grad)

    def step(self, closure=None):
        """Perform one Adafactor step; ``closure`` (optional) re-evaluates and returns the loss."""
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            eps1, eps2 = group["eps"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.is_complex():
                    raise RuntimeError("Adafactor does not support complex parameters")
                if isinstance(p.grad, SparseTensorBase):
                    self._dense_gradient(p, group)  # torch's refusal
                state = self.state[p]
                if len(state) == 0:
                    self._init_state(p, state, group)
                if eps1 is None:
                    # torch fixes eps1 from the first parameter's dtype for the whole group
                    eps1 = dt.finfo(p.dtype).eps
                state["step"]._data += 1
                arrays = _prepare(p, group["maximize"])
                if arrays is not None:
                    self._update(p, *arrays, state, group, eps1, eps2)
        return loss

    @staticmethod
    def _update(p, param, grad, state, group, eps1, eps2):
        xp = p._device.xp
        lr, d = _lr_scalar(group["lr"]), group["d"]
        t = state["step"].item()
        one_minus_beta2 = t ** group["beta2_decay"]
        relative_step = 1 / t ** 0.5
        scale = max(eps2, _rms(xp, param))
        # min(lr, 1/sqrt(t)) as torch evaluates it: a tensor lr keeps its dtype's rounding
        alpha = scale * relative_step if relative_step < lr else type(lr)(scale) * lr
        if group["weight_decay"] != 0:
            param *= 1 - lr * group["weight_decay"]
        if grad.ndim > 1:
            row_var, col_var = _data(state["row_var"]), _data(state["col_var"])
            squared = grad * grad
            lerp_(row_var, squared.mean(axis=-1, keepdims=True), one_minus_beta2)
            lerp_(col_var, squared.mean(axis=-2, keepdims=True), one_minus_beta2)
            variance = row_var @ col_var
            variance /= xp.maximum(row_var.mean(axis=-2, keepdims=True), eps1)
            _bump(state["row_var"], state["col_var"])
        else:
            stored = _data(state["variance"])
            lerp_(stored, grad * grad, one_minus_beta2)
            variance = stored.copy()
            _bump(state["variance"])
        update = xp.maximum(variance, eps1 * eps1, out=variance)
        update **= -0.5
        update *= grad
        update *= -alpha / max(1.0, _rms(xp, update) / d)
        param += update.astype(param.dtype, copy=False)
        _bump(p)


def _lr_scalar(lr):
    """``lr`` as a number; a tensor ``lr`` becomes a NumPy scalar of its dtype, so that the
    arithmetic torch does with it (in that dtype) rounds the same way."""
    if isinstance(lr, Tensor):
        return lr.detach().cpu().numpy().reshape(())[()]
    return lr
