"""torch's functional optimiser API (``torch.optim.adam.adam(params, grads, ...)``, ...).

Each function performs one update of ``params`` from ``grads`` and the state tensors the caller
keeps (``exp_avgs``, ``state_steps``, ...), updating them in place as torch's do. Rather than
restate every update rule, a function runs its optimiser class's own ``step`` once with the
caller's state tensors installed as that optimiser's state: one definition of each rule.
"""

from __future__ import annotations

import importlib

__all__ = ["adadelta", "adagrad", "adam", "adamax", "adamw", "asgd", "nadam", "radam",
           "rmsprop", "rprop", "sgd"]


def _optimizer_class(module, name):
    return getattr(importlib.import_module(f"{__package__}.{module}"), name)


def _run_step(cls, params, grads, state_lists, hyper):
    """One ``cls(params, **hyper).step()`` with ``grads`` and the caller's state installed.

    ``state_lists`` maps a state key (``"exp_avg"``) to the caller's list of tensors, one per
    parameter; entries the step creates (a first momentum buffer) are written back to the list.
    """
    params = list(params)
    if len(grads) != len(params):
        raise ValueError(f"expected {len(params)} gradients, got {len(grads)}")
    optimizer = cls(params, **hyper)
    saved_grads = [p.grad for p in params]
    try:
        for i, (p, g) in enumerate(zip(params, grads)):
            p.grad = g
            installed = {key: values[i] for key, values in state_lists.items()
                         if values is not None and i < len(values) and values[i] is not None}
            if installed:
                optimizer.state[p] = installed
        optimizer.step()
        for i, p in enumerate(params):
            for key, values in state_lists.items():
                if values is not None and i < len(values) and key in optimizer.state[p]:
                    values[i] = optimizer.state[p][key]
    finally:
        for p, g in zip(params, saved_grads):
            p.grad = g


def _no_grad_scaling(grad_scale, found_inf):
    if grad_scale is not None or found_inf is not None:
        raise RuntimeError("grad_scale and found_inf are only supported by torch's fused CUDA "
                           "kernels; ember's optimisers unscale with GradScaler.unscale_ instead")


def adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, foreach=None,
         capturable=False, differentiable=False, fused=None, grad_scale=None, found_inf=None,
         has_complex=False, decoupled_weight_decay=False, *, amsgrad, beta1, beta2, lr,
         weight_decay, eps, maximize):
    """One Adam update of ``params`` (torch's functional form of :class:`~ember.optim.Adam`).

    Example::

        >>> p = ember.zeros(2); g = ember.ones(2)
        >>> m, v, step = ember.zeros(2), ember.zeros(2), ember.tensor(0.0)
        >>> adam([p], [g], [m], [v], [], [step], amsgrad=False, beta1=0.9, beta2=0.999,
        ...      lr=0.1, weight_decay=0.0, eps=1e-8, maximize=False)
        >>> p
        tensor([-0.1000, -0.1000])
    """
    _no_grad_scaling(grad_scale, found_inf)
    _run_step(_optimizer_class("adam", "Adam"), params, grads,
              {"exp_avg": exp_avgs, "exp_avg_sq": exp_avg_sqs,
               "max_exp_avg_sq": max_exp_avg_sqs if amsgrad else None, "step": state_steps},
              {"lr": lr, "betas": (beta1, beta2), "eps": eps, "weight_decay": weight_decay,
               "amsgrad": amsgrad, "maximize": maximize,
               "decoupled_weight_decay": decoupled_weight_decay})


def adamw(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, foreach=None,
          capturable=False, differentiable=False, fused=None, grad_scale=None, found_inf=None,
          has_complex=False, *, amsgrad, beta1, beta2, lr, weight_decay, eps, maximize):
    """One AdamW update (Adam with decoupled weight decay), torch's functional form.

    Example::

        >>> p, g = ember.ones(1), ember.ones(1)
        >>> adamw([p], [g], [ember.zeros(1)], [ember.zeros(1)], [], [ember.tensor(0.0)],
        ...       amsgrad=False, beta1=0.9, beta2=0.999, lr=0.1, weight_decay=0.1, eps=1e-8,
        ...       maximize=False)
    """
    adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps,
         grad_scale=grad_scale, found_inf=found_inf, decoupled_weight_decay=True,
         amsgrad=amsgrad, beta1=beta1, beta2=beta2, lr=lr, weight_decay=weight_decay, eps=eps,
         maximize=maximize)


def sgd(params, d_p_list, momentum_buffer_list, has_sparse_grad=False, foreach=None, fused=None,
        grad_scale=None, found_inf=None, *, weight_decay, momentum, lr, dampening, nesterov,
        maximize):
    """One SGD update; a ``None`` momentum buffer is created and stored back into the list.

    Example::

        >>> p, bufs = ember.ones(2), [None]
        >>> sgd([p], [ember.ones(2)], bufs, weight_decay=0.0, momentum=0.9, lr=0.5,
        ...     dampening=0.0, nesterov=False, maximize=False)
        >>> p, bufs[0]
        (tensor([0.5000, 0.5000]), tensor([1., 1.]))
    """
    _no_grad_scaling(grad_scale, found_inf)
    _run_step(_optimizer_class("sgd", "SGD"), params, d_p_list,
              {"momentum_buffer": momentum_buffer_list},
              {"lr": lr, "momentum": momentum, "dampening": dampening,
               "weight_decay": weight_decay, "nesterov": nesterov, "maximize": maximize})


def adadelta(params, grads, square_avgs, acc_deltas, state_steps, capturable=False, foreach=None,
             differentiable=False, has_complex=False, *, lr, rho, eps, weight_decay, maximize):
    """One Adadelta update, torch's functional form of :class:`~ember.optim.Adadelta`.

    Example::

        >>> p = ember.ones(1)
        >>> adadelta([p], [ember.ones(1)], [ember.zeros(1)], [ember.zeros(1)],
        ...          [ember.tensor(0.0)], lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.0,
        ...          maximize=False)
    """
    _run_step(_optimizer_class("adadelta", "Adadelta"), params, grads,
              {"square_avg": square_avgs, "acc_delta": acc_deltas, "step": state_steps},
              {"lr": lr, "rho": rho, "eps": eps, "weight_decay": weight_decay,
               "maximize": maximize})


def adagrad(params, grads, state_sums, state_steps, fused=None, grad_scale=None, found_inf=None,
            has_sparse_grad=False, foreach=None, differentiable=False, has_complex=False, *, lr,
            weight_decay, lr_decay, eps, maximize):
    """One Adagrad update, torch's functional form of :class:`~ember.optim.Adagrad`.

    Example::

        >>> p = ember.ones(1)
        >>> adagrad([p], [ember.ones(1)], [ember.zeros(1)], [ember.tensor(0.0)], lr=0.1,
        ...         weight_decay=0.0, lr_decay=0.0, eps=1e-10, maximize=False)
    """
    _no_grad_scaling(grad_scale, found_inf)
    _run_step(_optimizer_class("adagrad", "Adagrad"), params, grads,
              {"sum": state_sums, "step": state_steps},
              {"lr": lr, "lr_decay": lr_decay, "weight_decay": weight_decay, "eps": eps,
               "maximize": maximize})


def adamax(params, grads, exp_avgs, exp_infs, state_steps, foreach=None, maximize=False,
           differentiable=False, capturable=False, has_complex=False, *, eps, beta1, beta2, lr,
           weight_decay):
    """One Adamax update, torch's functional form of :class:`~ember.optim.Adamax`.

    Example::

        >>> p = ember.ones(1)
        >>> adamax([p], [ember.ones(1)], [ember.zeros(1)], [ember.zeros(1)], [ember.tensor(0.0)],
        ...        eps=1e-8, beta1=0.9, beta2=0.999, lr=0.1, weight_decay=0.0)
    """
    _run_step(_optimizer_class("adamax", "Adamax"), params, grads,
              {"exp_avg": exp_avgs, "exp_inf": exp_infs, "step": state_steps},
              {"lr": lr, "betas": (beta1, beta2), "eps": eps, "weight_decay": weight_decay,
               "maximize": maximize})


def asgd(params, grads, axs, mus, etas, state_steps, foreach=None, maximize=False,
         differentiable=False, capturable=False, has_complex=False, *, lambd, lr, t0, alpha,
         weight_decay):
    """One averaged-SGD update, torch's functional form of :class:`~ember.optim.ASGD`.

    Example::

        >>> p = ember.ones(1)
        >>> asgd([p], [ember.ones(1)], [ember.zeros(1)], [ember.tensor(1.0)],
        ...      [ember.tensor(0.01)], [ember.tensor(0.0)], lambd=1e-4, lr=0.01, t0=1e6,
        ...      alpha=0.75, weight_decay=0.0)
    """
    _run_step(_optimizer_class("asgd", "ASGD"), params, grads,
              {"ax": axs, "mu": mus, "eta": etas, "step": state_steps},
              {"lr": lr, "lambd": lambd, "alpha": alpha, "t0": t0, "weight_decay": weight_decay,
               "maximize": maximize})


def nadam(params, grads, exp_avgs, exp_avg_sqs, mu_products, state_steps,
          decoupled_weight_decay=False, foreach=None, capturable=False, differentiable=False,
          has_complex=False, maximize=False, *, beta1, beta2, lr, weight_decay, momentum_decay,
          eps):
    """One NAdam update, torch's functional form of :class:`~ember.optim.NAdam`.

    Example::

        >>> p = ember.ones(1)
        >>> nadam([p], [ember.ones(1)], [ember.zeros(1)], [ember.zeros(1)], [ember.tensor(1.0)],
        ...       [ember.tensor(0.0)], beta1=0.9, beta2=0.999, lr=0.1, weight_decay=0.0,
        ...       momentum_decay=4e-3, eps=1e-8)
    """
    _run_step(_optimizer_class("nadam", "NAdam"), params, grads,
              {"exp_avg": exp_avgs, "exp_avg_sq": exp_avg_sqs, "mu_product": mu_products,
               "step": state_steps},
              {"lr": lr, "betas": (beta1, beta2), "eps": eps, "weight_decay": weight_decay,
               "momentum_decay": momentum_decay, "decoupled_weight_decay": decoupled_weight_decay,
               "maximize": maximize})


def radam(params, grads, exp_avgs, exp_avg_sqs, state_steps, decoupled_weight_decay=False,
          foreach=None, differentiable=False, capturable=False, has_complex=False,
          maximize=False, *, beta1, beta2, lr, weight_decay, eps):
    """One RAdam update, torch's functional form of :class:`~ember.optim.RAdam`.

    Example::

        >>> p = ember.ones(1)
        >>> radam([p], [ember.ones(1)], [ember.zeros(1)], [ember.zeros(1)], [ember.tensor(0.0)],
        ...       beta1=0.9, beta2=0.999, lr=0.1, weight_decay=0.0, eps=1e-8)
    """
    _run_step(_optimizer_class("radam", "RAdam"), params, grads,
              {"exp_avg": exp_avgs, "exp_avg_sq": exp_avg_sqs, "step": state_steps},
              {"lr": lr, "betas": (beta1, beta2), "eps": eps, "weight_decay": weight_decay,
               "decoupled_weight_decay": decoupled_weight_decay, "maximize": maximize})


def rmsprop(params, grads, square_avgs, grad_avgs, momentum_buffer_list, state_steps,
            foreach=None, maximize=False, differentiable=False, capturable=False,
            has_complex=False, *, lr, alpha, eps, weight_decay, momentum, centered):
    """One RMSprop update, torch's functional form of :class:`~ember.optim.RMSprop`.

    Example::

        >>> p = ember.ones(1)
        >>> rmsprop([p], [ember.ones(1)], [ember.zeros(1)], [], [], [ember.tensor(0.0)],
        ...         lr=0.01, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0,
        ...         centered=False)
    """
    _run_step(_optimizer_class("rmsprop", "RMSprop"), params, grads,
              {"square_avg": square_avgs, "grad_avg": grad_avgs if centered else None,
               "momentum_buffer": momentum_buffer_list if momentum > 0 else None,
               "step": state_steps},
              {"lr": lr, "alpha": alpha, "eps": eps, "weight_decay": weight_decay,
               "momentum": momentum, "centered": centered, "maximize": maximize})


def rprop(params, grads, prevs, step_sizes, state_steps, foreach=None, capturable=False,
          maximize=False, differentiable=False, has_complex=False, *, step_size_min,
          step_size_max, etaminus, etaplus):
    """One Rprop update, torch's functional form of :class:`~ember.optim.Rprop`.

    Example::

        >>> p = ember.ones(1)
        >>> rprop([p], [ember.ones(1)], [ember.zeros(1)], [ember.full((1,), 0.01)],
        ...       [ember.tensor(0.0)], step_size_min=1e-6, step_size_max=50.0, etaminus=0.5,
        ...       etaplus=1.2)
    """
    _run_step(_optimizer_class("rprop", "Rprop"), params, grads,
              {"prev": prevs, "step_size": step_sizes, "step": state_steps},
              {"etas": (etaminus, etaplus), "step_sizes": (step_size_min, step_size_max),
               "maximize": maximize})
