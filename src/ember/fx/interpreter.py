"""``ember.fx.interpreter``: run a graph node by node (:class:`Interpreter`), or rebuild it
node by node (:class:`Transformer`)."""

from __future__ import annotations

import inspect

from . import traceback as fx_traceback
from ._symbolic_trace import Tracer
from .graph import Graph
from .graph_module import GraphModule
from .node import map_aggregate, map_arg
from .proxy import Proxy

__all__ = ["Interpreter", "Transformer"]


class Interpreter:
    """Executes a :class:`GraphModule` one node at a time; override a per-op method
    (``call_function``, ``call_module``...) or :meth:`run_node` to change what happens.

    >>> import ember, ember.fx
    >>> gm = ember.fx.symbolic_trace(lambda x: x * 2)
    >>> ember.fx.Interpreter(gm).run(ember.ones(2)).tolist()
    [2.0, 2.0]
    """

    def __init__(self, module, garbage_collect_values=True, graph=None):
        self.module = module
        self.graph = graph if graph is not None else module.graph
        self.submodules = dict(module.named_modules())
        self.env = {}
        self.garbage_collect_values = garbage_collect_values
        self.user_to_last_uses = self._last_uses() if garbage_collect_values else {}

    def _last_uses(self):
        seen, last_uses = set(), {}
        for node in reversed(self.graph.nodes):
            for used in node.all_input_nodes:
                if used not in seen:
                    seen.add(used)
                    last_uses.setdefault(node, []).append(used)
        return last_uses

    def run(self, *args, initial_env=None, enable_io_processing=True):
        """Run the graph on ``args`` and return what its output node returns."""
        self.env = dict(initial_env or {})
        self.args_iter = iter(args)
        for node in self.graph.nodes:
            if node in self.env:
                continue
            with fx_traceback.set_current_meta(node, f"Interpreter_{type(self).__name__}"):
                self.env[node] = self.run_node(node)
            for dead in self.user_to_last_uses.get(node, []):
                del self.env[dead]
            if node.op == "output":
                return self.env[node]
        return None

    def boxed_run(self, args_list):
        """:meth:`run` with the arguments given as a list, which is emptied (so the caller
        holds no references to the inputs while the graph runs)."""
        placeholders = [node for node in self.graph.nodes if node.op == "placeholder"]
        if len(args_list) != len(placeholders):
            detail = "extra arguments" if len(args_list) > len(placeholders) else \
                "missing arguments"
            raise RuntimeError(f"Interpreter.boxed_run expected {len(placeholders)} arguments "
                               f"for placeholders but received {len(args_list)} ({detail})")
        env = dict(zip(placeholders, args_list))
        args_list.clear()
        return self.run(initial_env=env)

    def run_node(self, n):
        """Fetch the node's arguments from the environment and call the method named by its op."""
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        return getattr(self, n.op)(n.target, args, kwargs)

    # ------------------------------------------------------------------ one method per op

    def placeholder(self, target, args, kwargs):
        """The next positional input (or the placeholder's default)."""
        if target.startswith("*"):
            return list(self.args_iter)
        try:
            return next(self.args_iter)
        except StopIteration:
            if args:
                return args[0]
            raise RuntimeError(f"Expected positional argument for parameter {target}, but one "
                               "was not passed in!") from None

    def get_attr(self, target, args, kwargs):
        """Read the attribute at the dotted path ``target`` of the module."""
        return self.fetch_attr(target)

    def call_function(self, target, args, kwargs):
        """Call ``target(*args, **kwargs)``."""
        return target(*args, **kwargs)

    def call_method(self, target, args, kwargs):
        """Call ``args[0].target(*args[1:], **kwargs)``."""
        receiver, *rest = args
        return getattr(receiver, target)(*rest, **kwargs)

    def call_module(self, target, args, kwargs):
        """Call the submodule named ``target``."""
        return self.fetch_attr(target)(*args, **kwargs)

    def output(self, target, args, kwargs):
        """The graph's result."""
        return args[0]

    # ------------------------------------------------------------------ helpers

    def fetch_attr(self, target):
        """The attribute at dotted path ``target``, with torch.fx's error when it is missing."""
        value = self.module
        for index, atom in enumerate(target.split(".")):
            if not hasattr(value, atom):
                path = ".".join(target.split(".")[:index])
                raise RuntimeError(f"Node referenced nonexistent target {path or target}")
            value = getattr(value, atom)
        return value

    def fetch_args_kwargs_from_env(self, n):
        """The node's arguments with every node replaced by its computed value."""
        return self.map_nodes_to_values(n.args, n), self.map_nodes_to_values(n.kwargs, n)

    def map_nodes_to_values(self, args, n):
        """Replace the nodes inside ``args`` by their values."""
        def value_of(node):
            if node not in self.env:
                raise RuntimeError(f"Node {n} referenced nonexistent value {node}! Run "
                                   "Graph.lint() to diagnose such issues")
            return self.env[node]
        return map_arg(args, value_of)


class _TransformerTracer(Tracer):
    """Appends to the transformed graph; every module stays a ``call_module`` node and a
    tensor argument becomes a constant attribute of the module (as when tracing)."""

    def __init__(self, graph, root):
        super().__init__()
        self.graph = graph
        self.root = root
        self._tensor_names = self._collect_tensor_names(root)
        self._constant_count = 0

    def is_leaf_module(self, m, module_qualified_name):
        return True


class Transformer(Interpreter):
    """Rebuilds a graph node by node; override the per-op methods to change nodes, then call
    :meth:`transform` for the new :class:`GraphModule`.

    >>> import ember, ember.fx, operator
    >>> class NegToAbs(ember.fx.Transformer):
    ...     def call_function(self, target, args, kwargs):
    ...         target = ember.abs if target is operator.neg else target
    ...         return super().call_function(target, args, kwargs)
    >>> gm = NegToAbs(ember.fx.symbolic_trace(lambda x: -x)).transform()
    >>> gm(ember.tensor([-2.0])).tolist()
    [2.0]
    """

    def __init__(self, module):
        super().__init__(module, garbage_collect_values=False)
        self.new_graph = Graph()
        self.new_graph.owning_module = module
        self.tracer = _TransformerTracer(self.new_graph, module)

    def placeholder(self, target, args, kwargs):
        """A placeholder of the same name in the new graph."""
        default = args[0] if args else inspect.Signature.empty
        return Proxy(self.new_graph.placeholder(target, default_value=default), self.tracer)

    def get_attr(self, target, args, kwargs):
        """A ``get_attr`` node in the new graph."""
        return self.tracer.create_proxy("get_attr", target, args, kwargs)

    def call_function(self, target, args, kwargs):
        """A ``call_function`` node in the new graph."""
        return self.tracer.create_proxy("call_function", target, args, kwargs)

    def call_method(self, target, args, kwargs):
        """A ``call_method`` node in the new graph."""
        return self.tracer.create_proxy("call_method", target, args, kwargs)

    def call_module(self, target, args, kwargs):
        """A ``call_module`` node in the new graph."""
        return self.tracer.create_proxy("call_module", target, args, kwargs)

    def transform(self):
        """Run the transformation and return the new :class:`GraphModule`."""
        with fx_traceback.preserve_node_meta():
            result = super().run()
        if result is not None:
            output = self.new_graph.output(map_aggregate(
                result, lambda value: value.node if isinstance(value, Proxy) else value))
            output.meta.update(self.graph.output_node().meta)
        return GraphModule(self.module, self.new_graph)
