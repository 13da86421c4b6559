"""SparseAdam: Adam for sparse gradients (rows of an embedding), updating only the rows present.

The moments of the rows a gradient touches are updated lazily, as in torch: the rows the
gradient does not touch keep their moments and values. A dense gradient is refused with
torch's error (use :class:`~ember.optim.Adam`).
"""

from __future__ import annotations

import math

from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from ..ops.creation import zeros_like
from .optimizer import Optimizer

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    """Adam restricted to the rows of each step's sparse gradient (torch's "lazy" Adam).

    Example::

        >>> emb = ember.nn.Embedding(10, 3)
        >>> opt = SparseAdam(emb.parameters(), lr=1e-3)
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 < lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        for i in (0, 1):
            if not 0.0 <= betas[i] < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {betas[i]}")
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps, "maximize": maximize})
        self._refuse("is_sparse", "SparseAdam requires dense parameter tensors", "Sparse")
        self._refuse("is_complex", "SparseAdam does not support complex parameters", "Complex")

    def _refuse(self, test, reason, kind):
        found = [[g, i] for g, group in enumerate(self.param_groups)
                 for i, p in enumerate(group["params"])
                 if (p.is_sparse if test == "is_sparse" else p.is_complex())]
        if found:
            raise ValueError(f"{kind} params at indices {found}: {reason}")

    def step(self, closure=None):
        """Update the rows present in each parameter's sparse gradient."""
        loss = self._eval_closure(closure)
        with no_grad():
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    if not getattr(p.grad, "is_sparse", False):
                        raise RuntimeError("SparseAdam does not support dense gradients, please "
                                           "consider Adam instead")
                    grad = p.grad.coalesce()
                    values = -grad.values() if group["maximize"] else grad.values()
                    _update_rows(p, self.state[p], grad.indices()[0], values, group)
        return loss


def _update_rows(param, state, rows, grad_rows, group):
    """One lazy Adam step on ``param[rows]`` with the gradient rows ``grad_rows``."""
    if len(state) == 0:
        state["step"] = 0
        state["exp_avg"] = zeros_like(param)
        state["exp_avg_sq"] = zeros_like(param)
    state["step"] += 1
    beta1, beta2 = group["betas"]
    exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
    new_avg = exp_avg[rows] + (grad_rows - exp_avg[rows]) * (1 - beta1)
    new_sq = exp_avg_sq[rows] + (grad_rows * grad_rows - exp_avg_sq[rows]) * (1 - beta2)
    exp_avg[rows] = new_avg
    exp_avg_sq[rows] = new_sq
    step = state["step"]
    step_size = group["lr"] * math.sqrt(1 - beta2 ** step) / (1 - beta1 ** step)
    param[rows] = param[rows] - step_size * new_avg / (new_sq.sqrt() + group["eps"])
