"""``ember.fx.graph_module``: :class:`GraphModule`, an ``nn.Module`` whose ``forward`` is
Python code generated from a :class:`~ember.fx.Graph`."""

from __future__ import annotations

import copy
import itertools
import linecache
import pickle

from ..nn.modules.module import Module
from .graph import Graph

__all__ = ["reduce_graph_module", "reduce_package_graph_module", "GraphModule"]

_source_counter = itertools.count()


def _indent(text, spaces):
    """Indent every line but the first by ``spaces`` (blank lines stay empty)."""
    first, *rest = text.split("\n")
    return "\n".join([first] + [" " * spaces + line if line.strip() else "" for line in rest])


def _readable(module, name):
    source = module.graph.python_code(root_module="self", verbose=True).src.lstrip("\n")
    text = _indent(f"class {name}(ember.nn.Module):\n" + source, 4)
    children = [_readable(child, child_name) for child_name, child in module.named_children()
                if isinstance(child, GraphModule)]
    return text + _indent("\n".join([""] + children), 4)


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
        # Recorded for unpickling, which traces the generated code again with this tracer.
        tracer_class = graph._tracer_cls
        self._tracer_cls = (tracer_class if tracer_class is not None
                            and "<locals>" not in tracer_class.__qualname__ else None)
        self._tracer_extras = graph._tracer_extras or {}

    def _set_path(self, target, value):
        *path, last = target.split(".")
        owner = self
        for atom in path:
            if not hasattr(owner, atom):
                setattr(owner, atom, Module())
            owner = getattr(owner, atom)
        setattr(owner, last, value)

    # ------------------------------------------------------------------ submodules

    def add_submodule(self, target, m):
        """Install module ``m`` at the dotted path ``target``, creating empty modules along
        the way; False if something on the path exists and is not a module.

        >>> import ember, ember.fx
        >>> gm = ember.fx.symbolic_trace(lambda x: x)
        >>> gm.add_submodule("blocks.act", ember.nn.ReLU()), type(gm.blocks.act).__name__
        (True, 'ReLU')
        """
        *path, name = target.split(".")
        owner = self
        for atom in path:
            child = getattr(owner, atom, None)
            if child is None:
                child = Module()
                owner.add_module(atom, child)
            if not isinstance(child, Module):
                return False
            owner = child
        owner.add_module(name, m)
        return True

    def delete_submodule(self, target):
        """Remove the submodule at the dotted path ``target``; False if there is none."""
        *path, name = target.split(".")
        owner = self
        for atom in path:
            owner = getattr(owner, atom, None)
            if not isinstance(owner, Module):
                return False
        if not isinstance(getattr(owner, name, None), Module):
            return False
        delattr(owner, name)
        return True

    def delete_all_unused_submodules(self):
        """Remove every submodule that no ``call_module``/``get_attr`` node uses (a module is
        used if it, something inside it, or one of its descendants is used)."""
        used = set()
        for node in self.graph.nodes:
            if node.op not in ("call_module", "get_attr") or not isinstance(node.target, str):
                continue
            atoms = node.target.split(".")
            used.update(".".join(atoms[:end]) for end in range(1, len(atoms) + 1))
            if node.op == "call_module":
                inner = self.get_submodule(node.target)
                used.update(f"{node.target}.{name}" for name, _ in inner.named_modules()
                            if name)
        unused = [name for name, _ in self.named_modules() if name and name not in used]
        for name in unused:
            self.delete_submodule(name)

    def to_folder(self, folder, module_name="FxModule"):
        """Write this module to ``folder`` as Python source (``module.py``, with the class
        ``module_name``) next to its submodules and state (``*.pt`` files), so that
        ``from folder.module import FxModule`` gives an ordinary module computing the same.
        """
        import os

        import ember
        os.makedirs(folder, exist_ok=True)
        ember.save(self.state_dict(), os.path.join(folder, "state_dict.pt"))
        lines = ["import ember", "import operator", "from ember import device", "",
                 f"class {module_name}(ember.nn.Module):", "    def __init__(self):",
                 "        super().__init__()", "        import os",
                 "        folder = os.path.dirname(os.path.abspath(__file__))"]
        for name, child in self.named_children():
            ember.save(child, os.path.join(folder, f"{name}.pt"))
            lines.append(f"        self.{name} = ember.load(os.path.join(folder, '{name}.pt'), "
                         "weights_only=False)")
        for name, parameter in self._parameters.items():
            lines.append(f"        self.{name} = ember.nn.Parameter(ember.empty("
                         f"{tuple(parameter.shape)}, dtype={parameter.dtype}))")
        for name, buffer in self._buffers.items():
            lines.append(f"        self.register_buffer('{name}', ember.empty("
                         f"{tuple(buffer.shape)}, dtype={buffer.dtype}))")
        lines.append("        self.load_state_dict(ember.load(os.path.join(folder, "
                     "'state_dict.pt')))")
        body = "\n".join("    " + line if line.strip() else line
                         for line in self.code.splitlines())
        with open(os.path.join(folder, "module.py"), "w") as source:
            source.write("\n".join(lines) + "\n" + body + "\n")
        with open(os.path.join(folder, "__init__.py"), "w") as init:
            init.write(f"from .module import {module_name}\n")

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

    def print_readable(self, print_output=True, include_stride=False, include_device=False,
                       colored=False, *, fast_sympy_print=False, expanded_def=False,
                       additional_meta=None):
        """The verbose generated code (source-line comments, tensor shapes from metadata)
        under a class header, followed by that of submodules that are GraphModules; printed
        unless ``print_output=False``."""
        text = _readable(self, type(self).__name__)
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
        # As torch.fx: the per-instance class cannot be pickled by name, and the graph is
        # not pickled either; the attributes (with the generated code) and the imports that
        # code needs are, and unpickling traces the code again (reduce_graph_module).
        python_code = self.recompile()
        body = {key: value for key, value in self.__dict__.items() if key != "_graph"}
        return reduce_graph_module, (body, _import_block(python_code.globals))


# Globals of generated code that are imported by a fixed statement.
_FIXED_IMPORTS = {"ember": "import ember", "operator": "import operator",
                  "inf": "from math import inf", "nan": "from math import nan",
                  "device": "from ember import device"}


def _import_block(code_globals):
    """The import statements that define ``code_globals`` (name -> value) in a fresh module.

    >>> import math
    >>> print(_import_block({"inf": math.inf, "sqrt_fn": math.sqrt}))
    from math import inf
    from math import sqrt as sqrt_fn
    """
    lines = set()
    for name, value in code_globals.items():
        if name in _FIXED_IMPORTS:
            lines.add(_FIXED_IMPORTS[name])
            continue
        module = getattr(value, "__module__", None)
        qualname = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
        if not module or not qualname or "<locals>" in qualname or "." in qualname:
            raise pickle.PicklingError(f"Cannot pickle a GraphModule whose code uses {value!r} "
                                       f"(as '{name}'): it cannot be imported by name")
        lines.add(f"from {module} import {qualname} as {name}"
                  if qualname != name else f"from {module} import {name}")
    return "\n".join(sorted(lines))


def reduce_graph_module(body, import_block):
    """Rebuild a :class:`GraphModule` from its attribute dict ``body`` (which holds the
    generated source as ``_code``) and ``import_block``, the import lines that source needs:
    the code is run to get ``forward``, and traced again, every submodule kept whole, to
    recover the graph (torch.fx's unpickling path).

    >>> import ember, ember.fx
    >>> gm = ember.fx.symbolic_trace(ember.nn.Sequential(ember.nn.ReLU()))
    >>> rebuilt = reduce_graph_module(dict(gm.__dict__), "import ember")
    >>> rebuilt.code == gm.code
    True
    """
    source = body.get("_code") or body["code"]
    namespace = {}
    exec(compile(import_block + "\n" + source, f"<eval_with_key>.{next(_source_counter)}", "exec"),
         namespace)  # noqa: S102
    return _module_from_code(namespace["forward"], body)


def reduce_package_graph_module(importer, body, generated_module_name):
    """Rebuild a :class:`GraphModule` whose generated code is the module
    ``generated_module_name`` of ``importer`` (an object with ``import_module(name)``)."""
    return _module_from_code(importer.import_module(generated_module_name).forward, body)


def _module_from_code(forward, body):
    from ._symbolic_trace import Tracer
    tracer_class = body.get("_tracer_cls") or Tracer

    class KeepModules(tracer_class):
        def is_leaf_module(self, m, module_qualified_name):
            return True

    # A module of the saved attributes whose class runs the saved code: tracing it gives
    # back the graph.
    code_only = object.__new__(type("CodeOnlyModule", (Module,), {"forward": forward}))
    object.__setattr__(code_only, "__dict__", {key: value for key, value in body.items()
                                               if key not in ("_graph", "_code")})
    graph = KeepModules().trace(code_only, **body.get("_tracer_extras", {}))
    graph._tracer_cls = body.get("_tracer_cls")
    module = GraphModule(code_only, graph, body.get("_graphmodule_cls_name", "GraphModule"))
    for key, value in code_only.__dict__.items():
        if not hasattr(module, key):
            setattr(module, key, value)
    return module


def _rebuild_graph_module(state, graph, class_name):
    """Unpickle a :class:`GraphModule`: its state, then its graph (which regenerates
    ``forward``)."""
    module = GraphModule(Module(), Graph(), class_name)
    module.__dict__.update(state)
    module.graph = graph
    return module
