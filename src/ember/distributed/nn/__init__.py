"""``ember.distributed.nn``: collectives that autograd differentiates, as
``torch.distributed.nn`` (see :mod:`~ember.distributed.nn.functional`), and
:class:`~ember.distributed.nn.api.remote_module.RemoteModule` (a module on an RPC worker).

Example::

    >>> from ember.distributed.nn import all_reduce
    >>> y = all_reduce(x)          # backward all-reduces the gradient
"""

from .api.remote_module import RemoteModule  # noqa: F401
from .functional import *  # noqa: F403
from .functional import __all__  # noqa: F401
