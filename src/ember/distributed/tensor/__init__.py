"""``ember.distributed.tensor``: DTensor, placements and meshes, as ``torch.distributed.tensor``.

ember's :class:`DTensor` holds this rank's local piece and computes on it; layouts change
through ``redistribute``/``full_tensor``/``from_local``/``to_local`` (see ``_api.py``).

Example::

    >>> from ember.distributed.tensor import Shard, distribute_tensor, init_device_mesh
    >>> dt = distribute_tensor(ember.arange(4.), init_device_mesh("cpu", (2,)), [Shard(0)])
"""

from ..device_mesh import DeviceMesh, init_device_mesh
from ._api import DTensor, distribute_module, distribute_tensor
from ._factories import empty, full, ones, rand, randn, zeros
from .placement_types import Partial, Placement, Replicate, Shard

__all__ = ["DTensor", "distribute_tensor", "distribute_module", "Shard", "Replicate", "Partial",
           "Placement", "DeviceMesh", "init_device_mesh", "ones", "empty", "full", "rand",
           "randn", "zeros"]
