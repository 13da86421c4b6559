"""``ember.distributed._tensor``: the older path of :mod:`ember.distributed.tensor`.

Example::

    >>> from ember.distributed._tensor import DTensor, Shard
"""

from ..tensor import (  # noqa: F401
    DeviceMesh,
    DTensor,
    Partial,
    Placement,
    Replicate,
    Shard,
    __all__,  # noqa: F401
    distribute_module,
    distribute_tensor,
    empty,
    full,
    init_device_mesh,
    ones,
    rand,
    randn,
    zeros,
)
