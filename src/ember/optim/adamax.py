"""Adamax: Adam with the infinity norm in place of the second moment."""

from __future__ import annotations

from ._functional import adamax  # noqa: F401  (torch's functional form)
from .adam import _check_betas, lerp_
from .optimizer import (
    _FLAGS_ON_LOAD,
    Optimizer,
    _bump,
    _check_lr,
    _data,
    _number,
    _scalar,
    _value,
    _weight_decay,
    _zero_state,
)

__all__ = ["Adamax", "adamax"]


class Adamax(Optimizer):
    """Adamax: ``u = max(beta2 * u, |g| + eps)``, step ``-lr / (1 - beta1^t) * m / u``.

    Example::

        >>> opt = ember.optim.Adamax(model.parameters(), lr=2e-3)
    """

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 foreach=None, *, maximize=False, differentiable=False, capturable=False):
        _check_lr(lr)
        _check_betas(betas, eps, weight_decay)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "foreach": foreach, "maximize": maximize, "differentiable": differentiable,
                    "capturable": capturable}
        super().__init__(params, defaults)

    _group_defaults_on_load = _FLAGS_ON_LOAD
    _step_keys = ("step",)

    def _init_state(self, p, state, group):
        state["step"] = _scalar(0.0)
        _zero_state(p, state, "exp_avg", "exp_inf")

    def step(self, closure=None):
        """Perform one Adamax step; ``closure`` (optional) re-evaluates and returns the loss."""
        return self._step_each_parameter(closure)

    def _update(self, p, state, param, grad, group):
        lr = _value(group["lr"])
        beta1, beta2 = group["betas"]
        grad = _weight_decay(param, grad, group["weight_decay"])
        exp_avg, exp_inf = _data(state["exp_avg"]), _data(state["exp_inf"])
        lerp_(exp_avg, grad, 1 - beta1)
        exp_inf *= beta2
        norm = abs(grad)
        norm += group["eps"]
        p._device.xp.maximum(exp_inf, norm, out=exp_inf)
        clr = lr / (1 - beta1 ** _number(state["step"]))
        update = exp_avg * -clr
        update /= exp_inf
        param += update
        _bump(p, state["exp_avg"], state["exp_inf"])
