"""``ember.cuda.comm``: torch's path of the multi-device copy helpers (see
:mod:`ember.nn.parallel.comm`).

Example::

    >>> from ember.cuda.comm import broadcast
"""

from ..nn.parallel.comm import (
    broadcast,
    broadcast_coalesced,
    gather,
    reduce_add,
    reduce_add_coalesced,
    scatter,
)

__all__ = ["broadcast", "broadcast_coalesced", "reduce_add", "reduce_add_coalesced", "scatter",
           "gather"]
