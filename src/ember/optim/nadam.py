"""NAdam: Adam with Nesterov momentum (Dozat), with momentum decay and decoupled weight decay."""

from __future__ import annotations

import numpy as np

from ._functional import nadam  # noqa: F401  (torch's functional form)
from .adam import _check_betas, _update_moments
from .optimizer import (
    Optimizer,
    _bump,
    _check_lr,
    _check_non_negative,
    _number,
    _scalar,
    _value,
    _weight_decay,
    _zero_state,
)

__all__ = ["NAdam", "nadam"]


class NAdam(Optimizer):
    """NAdam, with torch's momentum schedule ``mu_t = beta1 (1 - 0.5 * 0.96^(t psi))``.

    ``momentum_decay`` is ``psi``; ``decoupled_weight_decay`` gives NAdamW.

    Example::

        >>> opt = ember.optim.NAdam(model.parameters(), lr=2e-3)
    """

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 momentum_decay=4e-3, decoupled_weight_decay=False, *, foreach=None,
                 maximize=False, capturable=False, differentiable=False):
        _check_lr(lr)
        _check_betas(betas, eps, weight_decay)
        _check_non_negative(momentum_decay=momentum_decay)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "momentum_decay": momentum_decay,
                    "decoupled_weight_decay": decoupled_weight_decay, "maximize": maximize,
                    "foreach": foreach, "capturable": capturable,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    _group_defaults_on_load = {"maximize": False, "foreach": None, "capturable": False,
                               "differentiable": False, "decoupled_weight_decay": False}
    _step_keys = ("step", "mu_product")

    def _init_state(self, p, state, group):
        state["step"] = _scalar(0.0)
        state["mu_product"] = _scalar(1.0)
        _zero_state(p, state, "exp_avg", "exp_avg_sq")

    def _count_step(self, p, state, group):
        """Advance ``step`` and multiply the momentum product by this step's ``mu``."""
        state["step"]._data += 1
        mu = self._momentum(group, _number(state["step"]))
        # the running product is a float32 tensor in torch: round as it does
        mu_product = state["mu_product"]
        mu_product._data[...] = mu_product._data * np.float32(mu)

    @staticmethod
    def _momentum(group, step):
        """torch's momentum schedule ``mu_t = beta1 (1 - 0.5 * 0.96^(t psi))``."""
        return group["betas"][0] * (1.0 - 0.5 * (0.96 ** (step * group["momentum_decay"])))

    def step(self, closure=None):
        """Perform one NAdam step; ``closure`` (optional) re-evaluates and returns the loss."""
        return self._step_each_parameter(closure)

    def _update(self, p, state, param, grad, group):
        lr = _value(group["lr"])
        beta1, beta2 = group["betas"]
        step = _number(state["step"])
        mu, mu_next = self._momentum(group, step), self._momentum(group, step + 1)
        bias_correction2 = 1 - beta2 ** step
        grad = _weight_decay(param, grad, group["weight_decay"], lr,
                             group["decoupled_weight_decay"])
        exp_avg, exp_avg_sq = _update_moments(state, grad, beta1, beta2)
        denom = p._device.xp.sqrt(exp_avg_sq / bias_correction2)
        denom += group["eps"]
        prod = _number(state["mu_product"])
        prod_next = prod * mu_next
        update = grad * (-lr * (1.0 - mu) / (1.0 - prod))
        update /= denom
        param += update
        update = exp_avg * ((-lr * mu_next) / (1.0 - prod_next))
        update /= denom
        param += update
        _bump(p, state["exp_avg"], state["exp_avg_sq"])
