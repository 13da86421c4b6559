"""Adam (and, with ``decoupled_weight_decay=True``, AdamW), with AMSGrad and maximize."""

from __future__ import annotations

from .._tensor import Tensor
from ._functional import adam  # noqa: F401  (torch's functional form)
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
    _zero_state,
)

__all__ = ["Adam", "adam"]


def _check_betas(betas, eps, weight_decay):
    """torch's checks of the Adam family's ``eps``, ``betas`` and ``weight_decay``."""
    _check_non_negative(epsilon=eps)
    for i, beta in enumerate(betas[:2]):
        if not 0.0 <= beta < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {beta}")
    _check_non_negative(weight_decay=weight_decay)


def lerp_(target, end, weight):
    """``target += weight * (end - target)`` in place (torch's lerp for a weight below 0.5)."""
    if abs(weight) < 0.5:
        diff = end - target
        diff *= weight
        target += diff
    else:
        diff = end - target
        diff *= 1 - weight
        target[...] = end - diff


def ema_sq_(target, grad, beta):
    """``target = beta * target + (1 - beta) * grad * grad`` in place."""
    target *= beta
    target += (1 - beta) * grad * grad


def _update_moments(state, grad, beta1, beta2):
    """Adam's moment estimates updated in place: ``m = lerp(m, g, 1 - beta1)`` and
    ``v = beta2 v + (1 - beta2) g^2``; returns the arrays of ``state['exp_avg']`` and
    ``state['exp_avg_sq']`` (shared by Adam, RAdam and NAdam).

    Example::

        >>> exp_avg, exp_avg_sq = _update_moments(state, grad, 0.9, 0.999)
    """
    exp_avg, exp_avg_sq = _data(state["exp_avg"]), _data(state["exp_avg_sq"])
    lerp_(exp_avg, grad, 1 - beta1)
    ema_sq_(exp_avg_sq, grad, beta2)
    return exp_avg, exp_avg_sq


class Adam(Optimizer):
    """Adam: adaptive moment estimation, with torch's bias-corrected update.

    ``m = lerp(m, g, 1 - beta1)``, ``v = beta2 v + (1 - beta2) g^2`` and the step is
    ``-lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)``. ``amsgrad`` uses the
    running maximum of ``v``; ``decoupled_weight_decay`` shrinks the weights by
    ``1 - lr * weight_decay`` instead of adding ``weight_decay * p`` to the gradient (AdamW).

    Example::

        >>> opt = ember.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.999))
        >>> opt.zero_grad(); loss_fn(model(x), y).backward(); opt.step()
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None, decoupled_weight_decay=False):
        _check_lr(lr)
        _check_betas(betas, eps, weight_decay)
        if not ((isinstance(betas[0], float) and isinstance(betas[1], float))
                or (isinstance(betas[0], Tensor) and isinstance(betas[1], Tensor))):
            raise ValueError("betas must be either both floats or both Tensors")
        for i in (0, 1):
            if isinstance(betas[i], Tensor) and betas[i].numel() != 1:
                raise ValueError(f"Tensor betas[{i}] must be 1-element")
        betas = tuple(_value(b) for b in betas)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "amsgrad": amsgrad, "maximize": maximize, "foreach": foreach,
                    "capturable": capturable, "differentiable": differentiable, "fused": fused,
                    "decoupled_weight_decay": decoupled_weight_decay}
        super().__init__(params, defaults)
        _check_fused(fused, foreach, differentiable)

    _group_defaults_on_load = {"amsgrad": False, "maximize": False, "foreach": None,
                               "capturable": False, "differentiable": False,
                               "decoupled_weight_decay": False, "fused": None}
    _step_keys = ("step",)

    def _init_state(self, p, state, group):
        state["step"] = _scalar(0.0)
        _zero_state(p, state, "exp_avg", "exp_avg_sq")
        if group["amsgrad"]:
            _zero_state(p, state, "max_exp_avg_sq")

    _sparse_refusal = "Adam does not support sparse gradients, please consider SparseAdam instead"

    def step(self, closure=None):
        """Perform one Adam step; ``closure`` (optional) re-evaluates and returns the loss."""
        return self._step_each_parameter(closure)

    def _update(self, p, state, param, grad, group):
        lr = _value(group["lr"])
        beta1, beta2 = (_value(b) for b in group["betas"])
        step = _number(state["step"])
        grad = _weight_decay(param, grad, group["weight_decay"], lr,
                             group["decoupled_weight_decay"])
        exp_avg, exp_avg_sq = _update_moments(state, grad, beta1, beta2)
        step_size = lr / (1 - beta1 ** step)
        bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
        xp = p._device.xp
        if group["amsgrad"]:
            max_sq = _data(state["max_exp_avg_sq"])
            xp.maximum(max_sq, exp_avg_sq, out=max_sq)
            _bump(state["max_exp_avg_sq"])
            denom = xp.sqrt(max_sq)
        else:
            denom = xp.sqrt(exp_avg_sq)
        denom /= bias_correction2_sqrt
        denom += group["eps"]
        update = exp_avg * -step_size
        update /= denom
        param += update
        _bump(p, state["exp_avg"], state["exp_avg_sq"])
