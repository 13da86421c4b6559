"""``ember.distributed.nn``: collectives that autograd differentiates, as
``torch.distributed.nn`` (see :mod:`~ember.distributed.nn.functional`).

Example::

    >>> from ember.distributed.nn import all_reduce
    >>> y = all_reduce(x)          # backward all-reduces the gradient
"""

from .functional import *  # noqa: F403
from .functional import __all__  # noqa: F401
