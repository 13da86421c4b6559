"""Adagrad: per-coordinate learning rates from the running sum of squared gradients."""

from __future__ import annotations

from ..ops.creation import full_like
from ._functional import adagrad  # noqa: F401  (torch's functional form)
from .optimizer import (
    Optimizer,
    _bump,
    _check_fused,
    _check_lr,
    _check_non_negative,
    _data,
    _number,
    _scalar,
    _value,
    _weight_decay,
)

__all__ = ["Adagrad", "adagrad"]


class Adagrad(Optimizer):
    """Adagrad: ``s += g^2``, step ``-clr * g / (sqrt(s) + eps)`` with
    ``clr = lr / (1 + (t - 1) * lr_decay)``.

    As in torch, the state (``step`` and ``sum``, filled with ``initial_accumulator_value``)
    is created for every parameter when the optimiser is built.

    Example::

        >>> opt = ember.optim.Adagrad(model.parameters(), lr=1e-2)
    """

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0,
                 eps=1e-10, foreach=None, *, maximize=False, differentiable=False, fused=None):
        _check_lr(lr)
        _check_non_negative(lr_decay=lr_decay, weight_decay=weight_decay,
                            initial_accumulator_value=initial_accumulator_value, epsilon=eps)
        defaults = {"lr": lr, "lr_decay": lr_decay, "eps": eps, "weight_decay": weight_decay,
                    "initial_accumulator_value": initial_accumulator_value,
                    "foreach": foreach, "maximize": maximize, "differentiable": differentiable,
                    "fused": fused}
        super().__init__(params, defaults)
        _check_fused(fused, foreach, differentiable)
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["step"] = _scalar(0.0)
                value = initial_accumulator_value
                if p.is_complex():
                    value = complex(value, value)
                state["sum"] = full_like(p, value)

    _group_defaults_on_load = {"foreach": None, "maximize": False, "differentiable": False,
                               "fused": None}
    _step_keys = ("step",)

    def share_memory(self):
        """Kept for torch's API: ember's state lives in ordinary memory."""

    def step(self, closure=None):
        """Perform one Adagrad step; ``closure`` (optional) re-evaluates and returns the loss."""
        return self._step_each_parameter(closure)

    def _dense_gradient(self, p, group):
        if group["weight_decay"] != 0:
            raise RuntimeError("weight_decay option is not compatible with sparse gradients")
        return p.grad.to_dense()

    def _update(self, p, state, param, grad, group):
        step = _number(state["step"])
        grad = _weight_decay(param, grad, group["weight_decay"])
        clr = _value(group["lr"]) / (1 + (step - 1) * group["lr_decay"])
        state_sum = _data(state["sum"])
        state_sum += grad * grad
        std = p._device.xp.sqrt(state_sum)
        std += group["eps"]
        update = grad * -clr
        update /= std
        param += update
        _bump(p, state["sum"])
