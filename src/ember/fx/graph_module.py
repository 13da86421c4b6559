"""``ember.fx.graph_module``: :class:`GraphModule`, an ``nn.Module`` whose ``forward`` is
Python code generated from a :class:`~ember.fx.Graph`."""

from __future__ import annotations

import copy
import itertools
import linecache

from ..nn.modules.module import Module
from .graph import Graph

__all__ = ["GraphModule"]

_source_counter = itertools.count()


def _copy_attribute(source, destination, target):
    """Copy the attribute at dotted path ``target`` from ``source`` to ``destination``,
    creating empty modules for the intermediate path (submodules are shared, not cloned)."""
    *path, last = target.split(".")
    for atom in path:
        source = getattr(source, atom)
        child = getattr(destination, atom, None)
        if not isinstance(child, Module):
            child = Module()
            setattr(destination, atom, child)
        destination = child
    value = getattr(source, last)
    if isinstance(value, Module) or last in getattr(source, "_parameters", {}):
        setattr(destination, last, value)
    elif last in getattr(source, "_buffers", {}):
        destination.register_buffer(last, value)
    else:
        setattr(destination, last, value)


class GraphModule(Module):
    """A module made from a graph: its ``forward`` runs the graph's generated code.

    The submodules, parameters and buffers the graph reads are taken from ``root`` (shared,
    not copied), so ``state_dict()`` and ``parameters()`` see the original tensors.

    >>> import ember, ember.fx
    >>> net = ember.nn.Sequential(ember.nn.Linear(3, 2), ember.nn.ReLU())
    >>> gm = ember.fx.symbolic_trace(net)
    >>> bool((gm(ember.ones(1, 3)) == net(ember.ones(1, 3))).all())
    True
    """

    def __new__(cls, *args, **kwargs):
        # Each instance gets a class of its own, so that recompile() can set its forward.
        for klass in cls.__mro__:
            if klass.__name__ == "GraphModuleImpl":
                cls = klass.__bases__[0]
                break
        impl = type("GraphModuleImpl", (cls,), {})
        return super().__new__(impl)

    def __init__(self, root, graph, class_name="GraphModule"):
        super().__init__()
        self.__class__.__name__ = class_name
        if isinstance(root, Module):
            if hasattr(root, "training"):
                self.training = root.training
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    _copy_attribute(root, self, node.target)
        elif isinstance(root, dict):
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    if node.target not in root:
                        raise RuntimeError(f"Node {node} referenced target {node.target} but "
                                           "that target was not provided in ``root``!")
                    self._set_path(node.target, root[node.target])
        else:
            raise RuntimeError("Unsupported type " + str(root) + " passed for root!")
        self.graph = graph

    def _set_path(self, target, value):
        *path, last = target.split(".")
        owner = self
        for atom in path:
            if not hasattr(owner, atom):
                setattr(owner, atom, Module())
            owner = getattr(owner, atom)
        setattr(owner, last, value)

    # ------------------------------------------------------------------ graph and code

    @property
    def graph(self):
        """The graph this module runs; assigning one regenerates ``forward``."""
        return self.__dict__["_graph"]

    @graph.setter
    def graph(self, new_graph):
        if not isinstance(new_graph, Graph):
            raise TypeError(f"Expected a Graph, got {type(new_graph).__name__}")
        self.__dict__["_graph"] = new_graph
        new_graph.owning_module = self
        self.recompile()

    @property
    def code(self):
        """The Python source of ``forward`` generated from the graph."""
        return self.__dict__["_code"]

    def recompile(self):
        """Regenerate ``forward`` from the graph (call it after editing the graph)."""
        python_code = self.graph.python_code(root_module="self")
        self.__dict__["_code"] = python_code.src
        filename = f"<eval_with_key>.{next(_source_counter)}"
        # Registering the source lets tracebacks show the generated lines.
        linecache.cache[filename] = (len(python_code.src), None,
                                     python_code.src.splitlines(True), filename)
        namespace = dict(python_code.globals)
        exec(compile(python_code.src, filename, "exec"), namespace)  # noqa: S102
        type(self).forward = namespace["forward"]
        return python_code

    def print_readable(self, print_output=True):
        """The generated code under a class header; printed unless ``print_output=False``."""
        body = "\n".join("    " + line if line else line for line in self.code.splitlines())
        text = f"class {type(self).__name__}(ember.nn.Module):{body}\n"
        if print_output:
            print(text)
        return text

    def __str__(self):
        return "\n".join([super().__str__(), self.code, "# To see more debug info, please "
                          "use `graph_module.print_readable()`"])

    def __deepcopy__(self, memo):
        copied_modules = Module()
        copied_modules.__dict__ = copy.deepcopy(
            {key: value for key, value in self.__dict__.items() if key != "_graph"}, memo)
        graph = Graph()
        output = graph.graph_copy(self.graph, {})
        graph.output(output)
        result = GraphModule(copied_modules, graph, type(self).__name__)
        result.__dict__.update({key: value for key, value in copied_modules.__dict__.items()
                                if key not in ("_graph", "_code")})
        result.graph = graph
        return result

    def __copy__(self):
        result = GraphModule(self, self.graph, type(self).__name__)
        result.__dict__.update(self.__dict__)
        return result

    def __reduce__(self):
        # The per-instance class cannot be pickled by name: pickle the module's state and a
        # copy of its graph not tied to this module, and rebuild (forward is generated again).
        graph = Graph(tracer_cls=self.graph._tracer_cls)
        graph.output(graph.graph_copy(self.graph, {}))
        state = {key: value for key, value in self.__dict__.items()
                 if key not in ("_graph", "_code")}
        return _rebuild_graph_module, (state, graph, type(self).__name__)


def _rebuild_graph_module(state, graph, class_name):
    """Unpickle a :class:`GraphModule`: its state, then its graph (which regenerates
    ``forward``)."""
    module = GraphModule(Module(), Graph(), class_name)
    module.__dict__.update(state)
    module.graph = graph
    return module
