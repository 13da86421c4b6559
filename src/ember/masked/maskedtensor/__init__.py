"""torch.masked.maskedtensor: MaskedTensor and the operations it supports.

Example::

    >>> from ember.masked.maskedtensor import MaskedTensor, is_masked_tensor
    >>> is_masked_tensor(ember.ones(1))
    False
"""

from . import binary, passthrough, reductions, unary  # noqa: F401  (torch's submodules)
from .core import MaskedTensor, is_masked_tensor  # noqa: F401
from .creation import as_masked_tensor, masked_tensor  # noqa: F401
