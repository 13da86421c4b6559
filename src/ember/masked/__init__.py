"""torch.masked: reductions and normalizations that skip the elements a mask marks out.

See :mod:`ember.masked._ops` for the semantics. Example::

    >>> x = ember.tensor([1., 2., 3.])
    >>> ember.masked.mean(x, mask=ember.tensor([True, False, True]))
    tensor(2.)
"""

from ._ops import (  # noqa: F401  (private helpers torch's own test code reaches for)
    _canonical_dim,
    _input_mask,
    _output_mask,
    amax,
    amin,
    argmax,
    argmin,
    cumprod,
    cumsum,
    log_softmax,
    logaddexp,
    logsumexp,
    mean,
    median,
    norm,
    normalize,
    prod,
    softmax,
    softmin,
    std,
    sum,
    var,
)

__all__ = ["amax", "amin", "argmax", "argmin", "cumprod", "cumsum", "log_softmax", "logaddexp",
           "logsumexp", "mean", "median", "norm", "normalize", "prod", "softmax", "softmin",
           "std", "sum", "var"]
