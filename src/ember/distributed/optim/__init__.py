"""``ember.distributed.optim``: optimizers over parameters that live on other workers.

:class:`DistributedOptimizer` groups the parameter RRefs by owner, builds one ordinary optimizer
on each owner (through ``rpc.remote``), and ``step(context_id)`` runs them all, each with the
gradients that distributed autograd accumulated in that context on its worker.

Example::

    >>> from ember.distributed.optim import DistributedOptimizer
    >>> opt = DistributedOptimizer(ember.optim.SGD, param_rrefs, lr=0.05)
    >>> with dist_autograd.context() as context_id:
    ...     dist_autograd.backward(context_id, [loss])
    ...     opt.step(context_id)
"""

from __future__ import annotations

import threading

from .. import autograd as dist_autograd
from .. import rpc

__all__ = ["DistributedOptimizer"]


class _LocalOptimizer:
    """The optimizer on one owner, over the parameters it holds."""

    # steps of different contexts on one worker must not interleave (torch holds one lock)
    _lock = threading.Lock()

    def __init__(self, optimizer_class, local_params_rref, *args, **kwargs):
        self._params = [rref.local_value() for rref in local_params_rref]
        self.optim = optimizer_class(self._params, *args, **kwargs)

    def step(self, autograd_ctx_id):
        grads = dist_autograd.get_gradients(autograd_ctx_id)
        with _LocalOptimizer._lock:
            for param, grad in grads.items():
                param.grad = grad
            self.optim.step()


def _new_local_optimizer(optimizer_class, local_params_rref, args, kwargs):
    return rpc.RRef(_LocalOptimizer(optimizer_class, local_params_rref, *args, **kwargs))


def _local_optimizer_step(local_optim_rref, autograd_ctx_id):
    local_optim_rref.local_value().step(autograd_ctx_id)


class DistributedOptimizer:
    """Steps the parameters behind ``params_rref`` with ``optimizer_class`` on their owners.

    Extra arguments go to ``optimizer_class`` (``lr=...``). ``step(context_id)`` uses the
    gradients of that distributed autograd context, not ``.grad``.

    Example::

        >>> opt = DistributedOptimizer(ember.optim.SGD, [rpc.RRef(w)], lr=0.1)
        >>> with dist_autograd.context() as context_id:
        ...     dist_autograd.backward(context_id, [(w * 2).sum()])
        ...     opt.step(context_id)                      # w -= 0.1 * 2
    """

    def __init__(self, optimizer_class, params_rref, *args, **kwargs):
        by_owner = {}
        for rref in params_rref:
            by_owner.setdefault(rref.owner(), []).append(rref)
        futures = [rpc.rpc_async(owner, _new_local_optimizer,
                                 args=(optimizer_class, rrefs, args, kwargs))
                   for owner, rrefs in by_owner.items()]
        self.remote_optimizers = [fut.wait() for fut in futures]

    def step(self, context_id):
        """One step of every owner's optimizer with the gradients of ``context_id``."""
        dist_autograd._lookup(context_id)  # a clear error for an unknown context
        futures = [rpc.rpc_async(opt.owner(), _local_optimizer_step, args=(opt, context_id))
                   for opt in self.remote_optimizers]
        errors = []
        for fut in futures:
            try:
                fut.wait()
            except Exception as e:  # noqa: BLE001 - wait for all, then raise the first
                errors.append(e)
        if errors:
            raise errors[0]
