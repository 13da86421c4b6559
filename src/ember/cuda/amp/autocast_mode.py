"""``ember.cuda.amp.autocast_mode``: torch's path of the deprecated CUDA autocast aliases.

Example::

    >>> from ember.cuda.amp.autocast_mode import autocast
"""

from . import autocast, custom_bwd, custom_fwd

__all__ = ["autocast", "custom_fwd", "custom_bwd"]
