"""``ember.cuda.green_contexts``: CUDA green contexts (needs a GPU).

Example::

    >>> from ember.cuda.green_contexts import GreenContext
"""

from ._unavailable import GreenContext

__all__ = ["GreenContext"]
