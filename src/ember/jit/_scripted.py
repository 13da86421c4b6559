"""What ``ember.jit.script(module)`` returns: :class:`ScriptedModule` runs the compiled
``forward`` and :class:`ScriptMethod` the exported methods, on the module's own parameters and
buffers, after checking the arguments against the annotations as TorchScript does.
"""

from __future__ import annotations

import contextlib

from .._tensor import Tensor
from ..nn.modules.module import Module
from ._ir import CALL, IF, LOOP, WHILE, Graph
from ._module import ScriptModule, run_graph

__all__ = ["ScriptedModule", "ScriptMethod", "bind_arguments", "type_matches", "python_calls"]


def _split_args(text):
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch == "["
        depth -= ch == "]"
        if ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    return parts + [text[start:]]


def type_matches(type_text, value):
    """Whether ``value`` has the TorchScript type ``type_text`` (unknown types accept all).

    Example::

        >>> type_matches("Optional[List[int]]", [1, 2])
        True
    """
    head, _, rest = type_text.partition("[")
    inner = _split_args(rest[:-1]) if rest else []
    if head == "Tensor":
        return isinstance(value, Tensor)
    if head == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if head == "float":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if head in ("bool", "str"):
        return isinstance(value, {"bool": bool, "str": str}[head])
    if head == "Optional":
        return value is None or type_matches(inner[0], value)
    if head == "List":
        return isinstance(value, list) and all(type_matches(inner[0], v) for v in value)
    if head == "Tuple":
        return isinstance(value, tuple) and len(value) == len(inner) and all(
            type_matches(t, v) for t, v in zip(inner, value))
    return True


def _python_type(value):
    if isinstance(value, Tensor):
        return "Tensor"
    if isinstance(value, (list, tuple)) and value:
        inner = ", ".join(dict.fromkeys(_python_type(v) for v in value))
        return f"{'List' if isinstance(value, list) else 'Tuple'}[{inner}]"
    return type(value).__name__


def bind_arguments(method, signature, args, kwargs):
    """The arguments of a call, checked against ``signature`` (``[(name, type, default,
    has_default)]``) and completed with defaults; raises RuntimeError as torch does."""
    declaration = f"{method}(" + ", ".join(f"{t} {n}" for n, t, _, _ in signature) + ")"
    if len(args) > len(signature):
        raise RuntimeError(f"{method}() expected at most {len(signature) + 1} argument(s) but "
                           f"received {len(args) + 1} argument(s). Declaration: {declaration}")
    bound = []
    for position, (name, type_text, default, has_default) in enumerate(signature):
        if position < len(args):
            value = args[position]
        elif name in kwargs:
            value = kwargs[name]
        elif has_default:
            value = default
        else:
            raise RuntimeError(f"{method}() is missing value for argument '{name}'. "
                               f"Declaration: {declaration}")
        if not type_matches(type_text, value):
            raise RuntimeError(f"{method}() Expected a value of type '{type_text}' for argument "
                               f"'{name}' but instead found type '{_python_type(value)}'.\n"
                               f"Position: {position + 1}\nDeclaration: {declaration}")
        if type_text in ("float", "Optional[float]") and isinstance(value, int) \
                and not isinstance(value, bool):
            value = float(value)  # an int given for a float is converted, as TorchScript does
        bound.append(value)
    unknown = set(kwargs) - {n for n, _, _, _ in signature}
    if unknown:
        raise RuntimeError(f"{method}() got an unexpected keyword argument "
                           f"'{sorted(unknown)[0]}'. Declaration: {declaration}")
    return bound


@contextlib.contextmanager
def _grad_mode_kept():
    """Restore the grad mode if a scripted ``with ember.no_grad()`` body raised."""
    from ..autograd.grad_mode import state

    enabled = state.enabled
    try:
        yield
    finally:
        if state.enabled != enabled:
            state.enabled = enabled


class ScriptMethod:
    """A compiled method of a :class:`ScriptedModule` (``scripted.forward``, exported ones).

    Example::

        >>> scripted.double(ember.ones(2, 4), 3)  # doctest: +SKIP
    """

    def __init__(self, owner, name, graph, signature):
        self.owner = owner
        self.name = name
        self.graph = graph
        self.signature = signature
        self._plan = None

    def __call__(self, *args, **kwargs):
        from ._module import _Plan

        bound = bind_arguments(self.name, self.signature, args, kwargs)
        if self._plan is None:
            self._plan = _Plan(self.graph)
        with _grad_mode_kept():
            return run_graph(self._plan, bound, self.owner._attr, self.graph.constants)

    @property
    def code(self):
        """TorchScript-like source of the method."""
        return _typed_code(self.graph, self.name, self.signature)


def _typed_code(graph, name, signature):
    text = graph.python_code(name, method=True)
    header, _, body = text.partition("\n")
    params = ", ".join(["self"] + [f"v{n}: {t}" for n, t, _, _ in signature])
    return f"def {name}({params}):\n{body}"


class ScriptedModule(ScriptModule):
    """A module compiled by ``ember.jit.script``: ``forward`` and the exported methods run
    their graphs on the module's own parameters and buffers.

    Example::

        >>> scripted = ember.jit.script(ember.nn.Sequential(ember.nn.Linear(2, 2)))
        >>> scripted(ember.ones(1, 2)).shape
        ember.Size([1, 2])
    """

    def __init__(self, graph, attributes, training, name, signatures, methods=None,
                 constants=None, library=None):
        super().__init__(graph, attributes, training, name)
        for prefix in sorted(training or {}, key=lambda p: p.count(".")):
            if prefix:
                self._child(prefix, training[prefix])
        self._rebuild_library(library or {})
        object.__setattr__(self, "_constants", dict(constants or {}))
        for prefix, values in self._constants.items():
            owner = self._module_at(prefix)
            for attr, value in values.items():
                object.__setattr__(owner, attr, value)
        object.__setattr__(self, "_signatures", dict(signatures))
        object.__setattr__(self, "_methods", dict(methods or {}))
        for method, method_graph in self._methods.items():
            object.__setattr__(self, method,
                               ScriptMethod(self, method, method_graph, signatures[method]))

    def _rebuild_library(self, specs):
        """Put back ember's own layers (``_script_library.py``) where the graph calls them;
        the layer at ``""`` (the scripted module is one) shares this module's tables."""
        from ._script_library import rebuild

        object.__setattr__(self, "_library_root", None)
        object.__setattr__(self, "_library_prefixes", sorted(specs))
        for prefix, spec in specs.items():
            layer = rebuild(spec, self._module_at(prefix))
            if not prefix:
                object.__setattr__(self, "_library_root", layer)
                continue
            *path, leaf = prefix.split(".")
            self._module_at(".".join(path))._modules[leaf] = layer

    def _library_layers(self):
        """``{prefix: layer}`` of the rebuilt layers (for saving)."""
        return {p: self._library_root if not p else self._module_at(p)
                for p in self._library_prefixes}

    def _module_at(self, prefix):
        owner = self
        for part in prefix.split(".") if prefix else ():
            owner = owner._modules[part]
        return owner

    def _child(self, prefix, training):
        owner = self
        *path, leaf = prefix.split(".")
        for part in path:
            owner = owner._modules[part]
        if leaf not in owner._modules:
            child = Module()
            child.training = training
            owner.add_module(leaf, child)

    def _attr(self, dotted):
        owner = self
        *path, leaf = dotted.split(".")
        for part in path:
            owner = owner._modules[part]
        if leaf == "training":
            return owner.training
        if leaf == "__self__":  # the module an ignored method or a layer's call runs on
            if owner is self and self._library_root is not None:
                self._library_root.training = self.training
                return self._library_root
            return owner
        found = owner._modules.get(leaf)
        if found is not None:  # one of ember's layers, called by the graph
            return found
        return super()._attr(dotted)

    def forward(self, *args, **kwargs):
        """Run the compiled ``forward``."""
        bound = bind_arguments("forward", self._signatures["forward"], args, kwargs)
        with _grad_mode_kept():
            return run_graph(self._get_plan(), bound, self._attr, self._graph.constants)

    @property
    def code(self):
        """TorchScript-like source of ``forward``."""
        return _typed_code(self._graph, "forward", self._signatures["forward"])




def python_calls(graph):
    """The ``@ember.jit.ignore`` methods a graph calls as Python (dotted names)."""
    found = []
    for n in graph.nodes:
        if n.kind == CALL and n.params["fn"].startswith("python:"):
            found.append(n.params["fn"][len("python:"):])
        for block in n.params.values() if n.kind in (IF, LOOP, WHILE) else ():
            if isinstance(block, Graph):
                found += python_calls(block)
    return found
