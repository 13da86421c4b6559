"""``ember.nn.utils``: gradient clipping, parameter/vector conversion and helper submodules.

Example::

    >>> net = ember.nn.Linear(3, 2)
    >>> net(ember.randn(4, 3)).sum().backward()
    >>> total = ember.nn.utils.clip_grad_norm_(net.parameters(), max_norm=1.0)
"""

import importlib as _importlib

from . import clip_grad, convert_parameters, parametrizations, parametrize  # noqa: F401
from .clip_grad import (  # noqa: F401
    clip_grad_norm,
    clip_grad_norm_,
    clip_grad_value_,
    clip_grads_with_norm_,
    get_total_norm,
)
from .convert_parameters import parameters_to_vector, vector_to_parameters  # noqa: F401
from .fusion import (  # noqa: F401
    fuse_conv_bn_eval,
    fuse_conv_bn_weights,
    fuse_linear_bn_eval,
    fuse_linear_bn_weights,
)
from .memory_format import (  # noqa: F401
    convert_conv2d_weight_memory_format,
    convert_conv3d_weight_memory_format,
)
from .spectral_norm import remove_spectral_norm, spectral_norm  # noqa: F401
from .weight_norm import remove_weight_norm, weight_norm  # noqa: F401

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_",
           "get_total_norm", "parameters_to_vector", "vector_to_parameters",
           "remove_spectral_norm", "remove_weight_norm", "spectral_norm", "weight_norm",
           "fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
           "fuse_linear_bn_weights", "convert_conv2d_weight_memory_format",
           "convert_conv3d_weight_memory_format"]


def __getattr__(name):
    """Import submodules written elsewhere (``rnn``, ...) on first attribute access."""
    try:
        return _importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None

from . import stateless  # noqa: E402,F401  (deprecated functional_call)
from .init import skip_init  # noqa: E402,F401

__all__ += ["skip_init"]
