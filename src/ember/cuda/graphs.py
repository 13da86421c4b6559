"""``ember.cuda.graphs``: CUDA graph capture (needs a GPU; see ``_unavailable``).

Example::

    >>> from ember.cuda.graphs import is_current_stream_capturing
"""

from ._unavailable import (
    CUDAGraph,
    graph,
    graph_pool_handle,
    is_current_stream_capturing,
    make_graphed_callables,
)

__all__ = ["CUDAGraph", "graph", "graph_pool_handle", "is_current_stream_capturing",
           "make_graphed_callables"]
