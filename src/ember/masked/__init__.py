"""torch.masked: reductions and normalizations that skip the elements a mask marks out, and
the MaskedTensor prototype (:mod:`ember.masked.maskedtensor`).

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
from .maskedtensor.core import MaskedTensor, is_masked_tensor
from .maskedtensor.creation import as_masked_tensor, masked_tensor

__all__ = ["amax", "amin", "argmax", "argmin", "as_masked_tensor", "cumprod", "cumsum",
           "is_masked_tensor", "log_softmax", "logaddexp", "logsumexp", "masked_tensor",
           "MaskedTensor", "mean", "median", "norm", "normalize", "prod", "softmax", "softmin",
           "std", "sum", "var"]
