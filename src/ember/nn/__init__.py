"""``ember.nn``: modules, parameters, functional layers, initialisers and utilities.

Example::

    >>> net = ember.nn.Sequential(ember.nn.Linear(4, 8), ember.nn.ReLU(), ember.nn.Linear(8, 2))
    >>> net(ember.randn(3, 4)).shape
    ember.Size([3, 2])
"""

from . import (  # noqa: F401
    attention,
    backends,
    common_types,
    cpp,
    functional,
    grad,
    init,
    intrinsic,
    parallel,
    qat,
    quantizable,
    quantized,
    utils,
)
from ._factory import factory_kwargs  # noqa: F401
from .modules import *  # noqa: F403
from .modules.module import (  # noqa: F401
    register_module_forward_hook,
    register_module_forward_pre_hook,
)
from .parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter  # noqa: F401
