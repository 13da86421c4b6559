"""RMSprop, optionally centred and with momentum."""

from __future__ import annotations

from ._functional import rmsprop  # noqa: F401  (torch's functional form)
from .adam import lerp_
from .optimizer import (
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

__all__ = ["RMSprop", "rmsprop"]


class RMSprop(Optimizer):
    """RMSprop: ``v = alpha v + (1 - alpha) g^2``, step ``-lr * g / (sqrt(v) + eps)``.

    ``centered`` subtracts the squared running mean of ``g`` from ``v``; ``momentum`` keeps a
    buffer ``b = momentum * b + g / (sqrt(v) + eps)`` and steps ``-lr * b``.

    Example::

        >>> opt = ember.optim.RMSprop(model.parameters(), lr=1e-2, momentum=0.9)
    """

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                 centered=False, capturable=False, foreach=None, maximize=False,
                 differentiable=False):
        _check_lr(lr)
        _check_non_negative(epsilon=eps, momentum=momentum, weight_decay=weight_decay,
                            alpha=alpha)
        defaults = {"lr": lr, "momentum": momentum, "alpha": alpha, "eps": eps,
                    "centered": centered, "weight_decay": weight_decay,
                    "capturable": capturable, "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    _group_defaults_on_load = {"momentum": 0, "centered": False, "foreach": None,
                               "maximize": False, "differentiable": False, "capturable": False}
    _step_keys = ("step",)

    def _init_state(self, p, state, group):
        state["step"] = _scalar(0.0)
        _zero_state(p, state, "square_avg")
        if group["momentum"] > 0:
            _zero_state(p, state, "momentum_buffer")
        if group["centered"]:
            _zero_state(p, state, "grad_avg")

    def step(self, closure=None):
        """Perform one RMSprop step; ``closure`` (optional) re-evaluates and returns the loss."""
        return self._step_each_parameter(closure)

    def _update(self, p, state, param, grad, group):
        lr, alpha, momentum = _value(group["lr"]), group["alpha"], group["momentum"]
        grad = _weight_decay(param, grad, group["weight_decay"])
        xp = p._device.xp
        square_avg = _data(state["square_avg"])
        square_avg *= alpha
        square_avg += (1 - alpha) * grad * grad
        if group["centered"]:
            grad_avg = _data(state["grad_avg"])
            lerp_(grad_avg, grad, 1 - alpha)
            avg = xp.sqrt(square_avg + -1 * grad_avg * grad_avg)
            _bump(state["grad_avg"])
        else:
            avg = xp.sqrt(square_avg)
        avg += group["eps"]
        if momentum > 0:
            buf = _data(state["momentum_buffer"])
            buf *= momentum
            buf += grad / avg
            param += -lr * buf
            _bump(state["momentum_buffer"])
        else:
            update = grad * -lr
            update /= avg
            param += update
        _bump(p, state["square_avg"])
