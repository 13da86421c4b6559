"""RAdam: Adam with a rectified adaptive learning rate (Liu et al.)."""

from __future__ import annotations

from ._functional import radam  # noqa: F401  (torch's functional form)
from .adam import _check_betas, _update_moments
from .optimizer import (
    Optimizer,
    _bump,
    _check_lr,
    _number,
    _scalar,
    _value,
    _weight_decay,
    _zero_state,
)

__all__ = ["RAdam", "radam"]


class RAdam(Optimizer):
    """RAdam: plain momentum SGD while the variance estimate is unreliable (``rho_t <= 5``),
    then Adam scaled by the rectification term. ``decoupled_weight_decay`` gives RAdamW.

    Example::

        >>> opt = ember.optim.RAdam(model.parameters(), lr=1e-3)
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False,
                 capturable=False, differentiable=False):
        _check_lr(lr)
        _check_betas(betas, eps, weight_decay)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "maximize": maximize, "foreach": foreach, "capturable": capturable,
                    "decoupled_weight_decay": decoupled_weight_decay,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    _group_defaults_on_load = {"foreach": None, "maximize": False, "differentiable": False,
                               "decoupled_weight_decay": False, "capturable": False}
    _step_keys = ("step",)

    def _init_state(self, p, state, group):
        state["step"] = _scalar(0.0)
        _zero_state(p, state, "exp_avg", "exp_avg_sq")

    def step(self, closure=None):
        """Perform one RAdam step; ``closure`` (optional) re-evaluates and returns the loss."""
        return self._step_each_parameter(closure)

    def _update(self, p, state, param, grad, group):
        lr = _value(group["lr"])
        beta1, beta2 = group["betas"]
        step = _number(state["step"])
        grad = _weight_decay(param, grad, group["weight_decay"], lr,
                             group["decoupled_weight_decay"])
        exp_avg, exp_avg_sq = _update_moments(state, grad, beta1, beta2)
        bias_correction1 = 1 - beta1 ** step
        bias_correction2 = 1 - beta2 ** step
        update = exp_avg / bias_correction1
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
        update *= lr
        if rho_t > 5.0:
            rect = ((rho_t - 4) * (rho_t - 2) * rho_inf
                    / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
            adaptive = p._device.xp.sqrt(exp_avg_sq)
            adaptive += group["eps"]
            update *= (bias_correction2 ** 0.5) / adaptive
            update *= rect
        param -= update
        _bump(p, state["exp_avg"], state["exp_avg_sq"])
