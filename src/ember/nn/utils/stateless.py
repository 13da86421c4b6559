"""``ember.nn.utils.stateless``: the deprecated home of ``functional_call`` (torch 1.x).

Example::

    >>> import warnings; warnings.simplefilter("ignore")
    >>> m = ember.nn.Linear(1, 1, bias=False)
    >>> ember.nn.utils.stateless.functional_call(m, {"weight": ember.ones(1, 1)},
    ...                                          (ember.tensor([[3.]]),))
    tensor([[3.]])
"""

from __future__ import annotations

import warnings

__all__ = ["functional_call"]


def functional_call(module, parameters_and_buffers, args=None, kwargs=None, *, tie_weights=True,
                    strict=False):
    """Deprecated (torch 2.0): :func:`ember.func.functional_call`, with torch's FutureWarning.

    Example::

        >>> import warnings; warnings.simplefilter("ignore")
        >>> m = ember.nn.Linear(1, 1, bias=False)
        >>> ember.nn.utils.stateless.functional_call(m, {"weight": ember.ones(1, 1)},
        ...                                          (ember.tensor([[2.]]),))
        tensor([[2.]])
    """
    warnings.warn("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 "
                  "and will be removed in a future version of PyTorch. Please use "
                  "`torch.func.functional_call` instead which is a drop-in replacement.",
                  FutureWarning, stacklevel=2)
    from ...func import functional_call as _functional_call

    return _functional_call(module, parameters_and_buffers, args, kwargs,
                            tie_weights=tie_weights, strict=strict)
