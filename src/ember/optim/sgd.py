"""Stochastic gradient descent, with momentum, dampening, Nesterov momentum and weight decay."""

from __future__ import annotations

from ..ops.creation import zeros_like
from ._functional import sgd  # noqa: F401  (torch's functional form)
from .optimizer import Optimizer, _bump, _check_lr, _data, _prepare, _value

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
        if fused:
            if differentiable:
                raise RuntimeError("`fused` does not support `differentiable`")
            if foreach:
                raise RuntimeError("`fused` and `foreach` cannot be `True` together.")

    _group_defaults_on_load = {"nesterov": False, "maximize": False, "foreach": None,
                               "differentiable": False, "fused": False}

    def step(self, closure=None):
        """Perform one SGD step; ``closure`` (optional) re-evaluates and returns the loss."""
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            lr = _value(group["lr"])
            weight_decay = _value(group["weight_decay"])
            momentum = group["momentum"]
            dampening = group["dampening"]
            nesterov = group["nesterov"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                arrays = _prepare(p, group["maximize"])
                state = self.state[p] if momentum != 0 else None
                if arrays is None:
                    if state is not None and "momentum_buffer" not in state:
                        state["momentum_buffer"] = zeros_like(p)
                    continue
                param, grad = arrays
                if weight_decay != 0:
                    grad = grad + weight_decay * param
                if momentum != 0:
                    buf = state.get("momentum_buffer")
                    if buf is None:
                        buf = zeros_like(p)
                        _data(buf)[...] = grad
                        state["momentum_buffer"] = buf
                    else:
                        b = _data(buf)
                        b *= momentum
                        b += (1 - dampening) * grad
                        _bump(buf)
                    grad = grad + momentum * _data(buf) if nesterov else _data(buf)
                param += -lr * grad
                _bump(p)
        return loss
