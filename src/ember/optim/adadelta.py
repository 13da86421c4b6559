"""Adadelta: step sizes from running averages of squared gradients and squared updates."""

from __future__ import annotations

from ._functional import adadelta  # noqa: F401  (torch's functional form)
from .optimizer import (
    _FLAGS_ON_LOAD,
    Optimizer,
    _bump,
    _check_lr,
    _check_non_negative,
    _data,
    _scalar,
    _value,
    _weight_decay,
    _zero_state,
)

__all__ = ["Adadelta", "adadelta"]


class Adadelta(Optimizer):
    """Adadelta: ``v = rho v + (1 - rho) g^2``, ``delta = sqrt(u + eps) / sqrt(v + eps) * g``,
    ``u = rho u + (1 - rho) delta^2``, step ``-lr * delta``.

    Example::

        >>> opt = ember.optim.Adadelta(model.parameters(), lr=1.0, rho=0.9)
    """

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *,
                 capturable=False, maximize=False, differentiable=False):
        _check_lr(lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        _check_non_negative(epsilon=eps, weight_decay=weight_decay)
        defaults = {"lr": lr, "rho": rho, "eps": eps, "weight_decay": weight_decay,
                    "maximize": maximize, "capturable": capturable, "foreach": foreach,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    _group_defaults_on_load = _FLAGS_ON_LOAD
    _step_keys = ("step",)

    def _init_state(self, p, state, group):
        state["step"] = _scalar(0.0)
        _zero_state(p, state, "square_avg", "acc_delta")

    def step(self, closure=None):
        """Perform one Adadelta step; ``closure`` (optional) re-evaluates and returns the loss."""
        return self._step_each_parameter(closure)

    def _update(self, p, state, param, grad, group):
        rho, eps = group["rho"], group["eps"]
        grad = _weight_decay(param, grad, group["weight_decay"])
        xp = p._device.xp
        square_avg, acc_delta = _data(state["square_avg"]), _data(state["acc_delta"])
        square_avg *= rho
        square_avg += (1 - rho) * grad * grad
        std = xp.sqrt(square_avg + eps)
        delta = xp.sqrt(acc_delta + eps)
        delta /= std
        delta *= grad
        acc_delta *= rho
        acc_delta += (1 - rho) * delta * delta
        param += -_value(group["lr"]) * delta
        _bump(p, state["square_avg"], state["acc_delta"])
