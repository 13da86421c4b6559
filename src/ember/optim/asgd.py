"""ASGD: averaged stochastic gradient descent (Polyak-Ruppert averaging)."""

from __future__ import annotations

import numpy as np

from .._device import META
from ..sparse._base import SparseTensorBase
from ._functional import asgd  # noqa: F401  (torch's functional form)
from .optimizer import (
    _FLAGS_ON_LOAD,
    Optimizer,
    _bump,
    _check_lr,
    _check_non_negative,
    _data,
    _prepare,
    _scalar,
    _value,
    _weight_decay,
    _zero_state,
)

__all__ = ["ASGD", "asgd"]


class ASGD(Optimizer):
    """Averaged SGD: SGD with step ``eta_t = lr / (1 + lambd * lr * t)^alpha`` and a running
    average ``ax`` of the iterates, started after ``t0`` steps.

    Example::

        >>> opt = ember.optim.ASGD(model.parameters(), lr=1e-2, t0=100)
    """

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0,
                 foreach=None, maximize=False, differentiable=False, capturable=False):
        _check_lr(lr)
        _check_non_negative(weight_decay=weight_decay)
        defaults = {"lr": lr, "lambd": lambd, "alpha": alpha, "t0": t0,
                    "weight_decay": weight_decay, "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable, "capturable": capturable}
        super().__init__(params, defaults)

    _group_defaults_on_load = _FLAGS_ON_LOAD
    _step_keys = ("step", "eta", "mu")

    def _init_state(self, p, state, group):
        lr = _value(group["lr"])
        # as torch, ASGD keeps its scalars on the parameter's device
        state["step"] = _scalar(0.0).to(p.device)
        state["eta"] = _scalar(lr).to(p.device)
        state["mu"] = _scalar(1.0).to(p.device)
        _zero_state(p, state, "ax")

    def _count_step(self, p, state, group):
        if p._device is not META:
            state["step"]._data += 1

    def step(self, closure=None):
        """Perform one ASGD step; ``closure`` (optional) re-evaluates and returns the loss."""
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            lr = _value(group["lr"])
            lambd, alpha, t0 = group["lambd"], group["alpha"], group["t0"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                if isinstance(p.grad, SparseTensorBase):
                    self._dense_gradient(p, group)  # torch's refusal
                state = self._state_for_step(p, group)
                arrays = _prepare(p, group["maximize"])
                if arrays is not None:
                    param, grad = arrays
                    grad = _weight_decay(param, grad, group["weight_decay"])
                    eta = state["eta"].item()
                    param *= 1 - lambd * eta
                    param += -eta * grad
                    ax = _data(state["ax"])
                    mu = state["mu"].item()
                    if mu != 1:
                        ax += (param - ax) * mu
                    else:
                        ax[...] = param
                    _bump(p, state["ax"])
                # reached for meta parameters too, whose step cannot be read (as in torch)
                step = state["step"].item()
                # torch goes through a float32 tensor even when the state is float64
                state["eta"]._data[...] = np.float32(lr / ((1 + lambd * lr * step) ** alpha))
                state["mu"]._data[...] = np.float32(1 / max(1, step - t0))
        return loss
