"""Adagrad: per-coordinate learning rates from the running sum of squared gradients."""

from __future__ import annotations

from ..ops.creation import full_like
from ._functional import adagrad  # noqa: F401  (torch's functional form)
from .optimizer import Optimizer, _bump, _check_lr, _data, _prepare, _scalar, _value

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
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(f"Invalid initial_accumulator_value value: "
                             f"{initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        defaults = {"lr": lr, "lr_decay": lr_decay, "eps": eps, "weight_decay": weight_decay,
                    "initial_accumulator_value": initial_accumulator_value,
                    "foreach": foreach, "maximize": maximize, "differentiable": differentiable,
                    "fused": fused}
        super().__init__(params, defaults)
        if fused:
            if differentiable:
                raise RuntimeError("`fused` does not support `differentiable`")
            if foreach:
                raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
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
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            lr = _value(group["lr"])
            eps, weight_decay, lr_decay = group["eps"], group["weight_decay"], group["lr_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                state["step"]._data += 1
                arrays = _prepare(p, group["maximize"])
                if arrays is None:
                    continue
                param, grad = arrays
                step = state["step"].item()
                if weight_decay != 0:
                    grad = grad + weight_decay * param
                clr = lr / (1 + (step - 1) * lr_decay)
                state_sum = _data(state["sum"])
                state_sum += grad * grad
                std = p._device.xp.sqrt(state_sum)
                std += eps
                update = grad * -clr
                update /= std
                param += update
                _bump(p, state["sum"])
        return loss
