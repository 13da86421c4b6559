"""``ember.distributed.nn``: :class:`RemoteModule`, a module that lives on another RPC worker.

Example::

    >>> from ember.distributed.nn import RemoteModule
    >>> emb = RemoteModule("ps", ember.nn.EmbeddingBag, args=(100, 16), kwargs={"mode": "sum"})
    >>> out = emb(indices, offsets)             # runs on "ps", the result comes back here
"""

from .api.remote_module import RemoteModule

__all__ = ["RemoteModule"]
