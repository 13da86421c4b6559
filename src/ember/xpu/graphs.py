"""``ember.xpu.graphs``: torch's path of the XPU graph names (see :mod:`ember.xpu`).

Example::

    >>> from ember.xpu.graphs import XPUGraph
"""

from . import (  # noqa: F401  (re-exported under torch's path)
    XPUGraph,
    graph,
    graph_pool_handle,
    is_current_stream_capturing,
    make_graphed_callables,
)

__all__ = ["is_current_stream_capturing", "graph_pool_handle", "XPUGraph", "graph",
           "make_graphed_callables"]
