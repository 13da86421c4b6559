"""``ember.fx``: symbolic tracing of modules into editable graphs (torch.fx's core).

``symbolic_trace(module)`` runs ``forward`` on :class:`Proxy` values and records every call as
a :class:`Node` of a :class:`Graph`; a :class:`GraphModule` runs the Python code generated
from that graph, and :class:`Interpreter`/:class:`Transformer` run or rebuild it node by node.
"""

from . import passes, subgraph_rewriter  # noqa: F401
from ._symbolic_trace import Tracer, symbolic_trace, wrap
from .graph import Graph
from .graph_module import GraphModule
from .interpreter import Interpreter, Transformer
from .node import Node, _side_effectful_functions, has_side_effect, map_arg
from .proxy import Proxy, TraceError  # noqa: F401  (ember.fx.TraceError, as before)
from .subgraph_rewriter import replace_pattern

__all__ = ["symbolic_trace", "Tracer", "wrap", "Graph", "GraphModule", "Interpreter",
           "Transformer", "Node", "Proxy", "replace_pattern", "has_side_effect", "map_arg"]


def _register_side_effects():
    import ember
    for name in ("_assert", "manual_seed"):
        if hasattr(ember, name):
            _side_effectful_functions.add(getattr(ember, name))
    profiler_ops = ember.ops.profiler
    _side_effectful_functions.update((profiler_ops._record_function_enter,
                                      profiler_ops._record_function_enter_new,
                                      profiler_ops._record_function_exit))


_register_side_effects()
