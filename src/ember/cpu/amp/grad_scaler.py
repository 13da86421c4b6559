"""``ember.cpu.amp.grad_scaler``: torch's path of the deprecated CPU GradScaler alias.

Example::

    >>> from ember.cpu.amp.grad_scaler import GradScaler
"""

from . import GradScaler

__all__ = ["GradScaler"]
