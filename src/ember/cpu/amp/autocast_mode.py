"""``ember.cpu.amp.autocast_mode``: torch's path of the deprecated CPU autocast alias.

Example::

    >>> from ember.cpu.amp.autocast_mode import autocast
"""

from . import autocast

__all__ = ["autocast"]
