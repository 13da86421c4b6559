"""``ember.distributed._tensor.device_mesh``: the older path of
:mod:`ember.distributed.device_mesh`.

Example::

    >>> from ember.distributed._tensor.device_mesh import init_device_mesh
"""

from ..device_mesh import DeviceMesh, init_device_mesh

__all__ = ["DeviceMesh", "init_device_mesh"]
