"""``ember.cuda.gds``: GPUDirect Storage file I/O (needs a GPU).

Example::

    >>> from ember.cuda.gds import GdsFile
"""

from ._unavailable import _gpu_class, _needs_gpu

__all__ = ["gds_register_buffer", "gds_deregister_buffer", "GdsFile"]

gds_register_buffer = _needs_gpu("gds.gds_register_buffer")
gds_deregister_buffer = _needs_gpu("gds.gds_deregister_buffer")
GdsFile = _gpu_class("gds.GdsFile")
