"""Rprop: resilient backpropagation (sign-based steps with adaptive per-weight step sizes)."""

from __future__ import annotations

from ..ops.creation import full_like
from ._functional import rprop  # noqa: F401  (torch's functional form)
from .optimizer import (
    _FLAGS_ON_LOAD,
    Optimizer,
    _bump,
    _check_lr,
    _data,
    _scalar,
    _value,
    _zero_state,
)

__all__ = ["Rprop", "rprop"]


class Rprop(Optimizer):
    """Rprop: each step size grows by ``etas[1]`` while the gradient keeps its sign and shrinks
    by ``etas[0]`` when it flips (that step is then skipped), clamped to ``step_sizes``.

    Example::

        >>> opt = ember.optim.Rprop(model.parameters(), lr=1e-2, etas=(0.5, 1.2))
    """

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        _check_lr(lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = {"lr": lr, "etas": etas, "step_sizes": step_sizes, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable,
                    "capturable": capturable}
        super().__init__(params, defaults)

    _group_defaults_on_load = _FLAGS_ON_LOAD
    _step_keys = ("step",)

    def _init_state(self, p, state, group):
        state["step"] = _scalar(0.0)
        _zero_state(p, state, "prev")
        lr = _value(group["lr"])
        state["step_size"] = full_like(p.grad, complex(lr, lr) if p.is_complex() else lr)

    def step(self, closure=None):
        """Perform one Rprop step; ``closure`` (optional) re-evaluates and returns the loss."""
        return self._step_each_parameter(closure)

    def _update(self, p, state, param, grad, group):
        etaminus, etaplus = group["etas"]
        step_size_min, step_size_max = group["step_sizes"]
        xp = p._device.xp
        prev, step_size = _data(state["prev"]), _data(state["step_size"])
        sign = xp.sign(grad * prev)
        factor = xp.where(sign > 0, etaplus,
                          xp.where(sign < 0, etaminus,
                                   xp.where(sign == 0, 1, sign))).astype(sign.dtype)
        step_size *= factor
        xp.clip(step_size, step_size_min, step_size_max, out=step_size)
        grad = xp.where(factor == factor.dtype.type(etaminus), 0, grad).astype(grad.dtype)
        param += -1 * xp.sign(grad) * step_size
        prev[...] = grad
        _bump(p, state["prev"], state["step_size"])
