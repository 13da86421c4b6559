"""``ember.fx``: symbolic tracing of modules into editable graphs (torch.fx's core).

``symbolic_trace(module)`` runs ``forward`` on :class:`Proxy` values and records every call as
a :class:`Node` of a :class:`Graph`; a :class:`GraphModule` runs the Python code generated
from that graph, and :class:`Interpreter`/:class:`Transformer` run or rebuild it node by node.
"""

from . import passes, subgraph_rewriter  # noqa: F401
from ._symbolic_trace import Tracer, _side_effectful_functions, symbolic_trace, wrap
from .graph import Graph
from .graph_module import GraphModule
from .interpreter import Interpreter, Transformer
from .node import Node, map_arg
from .proxy import Proxy, TraceError
from .subgraph_rewriter import replace_pattern

__all__ = ["symbolic_trace", "Tracer", "wrap", "Graph", "GraphModule", "Node", "Proxy",
           "TraceError", "Interpreter", "Transformer", "map_arg", "replace_pattern"]


def _register_side_effects():
    import ember
    for name in ("_assert", "manual_seed"):
        if hasattr(ember, name):
            _side_effectful_functions.add(getattr(ember, name))


_register_side_effects()
