"""Stochastic gradient descent, with momentum, dampening, Nesterov momentum and weight decay."""

from __future__ import annotations

from .._device import META
from ..ops.creation import zeros_like
from ._functional import sgd  # noqa: F401  (torch's functional form)
from .optimizer import (
    Optimizer,
    _add_scaled_,
    _bump,
    _check_fused,
    _check_lr,
    _data,
    _value,
    _weight_decay,
    _zero_state,
)

__all__ = ["SGD", "sgd"]


class SGD(Optimizer):
    """Stochastic gradient descent (optionally with momentum), with torch's update rule.

    ``buf = momentum * buf + (1 - dampening) * g``; the step is ``-lr * buf`` (or
    ``-lr * (g + momentum * buf)`` with ``nesterov``), where ``g`` includes weight decay.

    Example::

        >>> opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        >>> opt.zero_grad(); loss_fn(model(x), y).backward(); opt.step()
    """

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False,
                 *, maximize=False, foreach=None, differentiable=False, fused=None):
        _check_lr(lr)
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {"lr": lr, "momentum": momentum, "dampening": dampening,
                    "weight_decay": weight_decay, "nesterov": nesterov, "maximize": maximize,
                    "foreach": foreach, "differentiable": differentiable, "fused": fused}
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)
        _check_fused(fused, foreach, differentiable)

    _group_defaults_on_load = {"nesterov": False, "maximize": False, "foreach": None,
                               "differentiable": False, "fused": False}

    def _state_for_step(self, p, group):
        """The state only with momentum (no step counter); the buffer is made from the first
        gradient, except on the meta device, where it is made empty."""
        if group["momentum"] == 0:
            return None
        state = self.state[p]
        if p._device is META and "momentum_buffer" not in state:
            _zero_state(p, state, "momentum_buffer")
        return state

    def step(self, closure=None):
        """Perform one SGD step; ``closure`` (optional) re-evaluates and returns the loss."""
        return self._step_each_parameter(closure)

    def _dense_gradient(self, p, group):
        if group["weight_decay"] != 0:  # torch adds the dense parameter to the sparse gradient
            raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) "
                               "instead.")
        return p.grad.to_dense()

    def _update(self, p, state, param, grad, group):
        momentum = group["momentum"]
        grad = _weight_decay(param, grad, _value(group["weight_decay"]))
        if momentum != 0:
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = zeros_like(p)
                _data(buf)[...] = grad
                state["momentum_buffer"] = buf
            else:
                b = _data(buf)
                b *= momentum
                _add_scaled_(b, grad, 1 - group["dampening"])
                _bump(buf)
            grad = grad + momentum * _data(buf) if group["nesterov"] else _data(buf)
        _add_scaled_(param, grad, -_value(group["lr"]))
        _bump(p)
