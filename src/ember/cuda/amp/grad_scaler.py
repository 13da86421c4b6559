"""``ember.cuda.amp.grad_scaler``: torch's path of the deprecated CUDA GradScaler alias.

Example::

    >>> from ember.cuda.amp.grad_scaler import GradScaler
"""

from . import GradScaler

__all__ = ["GradScaler"]
