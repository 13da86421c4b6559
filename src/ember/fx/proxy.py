"""``ember.fx.proxy``: the stand-in value that records what is done to it during tracing."""

from __future__ import annotations

import builtins
import dis
import inspect
import operator

from .node import map_aggregate

__all__ = ["Proxy", "Attribute", "TraceError"]


class TraceError(ValueError):
    """Raised when traced code needs a concrete value (control flow, iteration)."""


class Proxy:
    """Stands for a :class:`~ember.fx.Node` while a :class:`~ember.fx.Tracer` runs the code.

    Every operator, tensor method and (while tracing) ember function applied to a proxy adds
    a node to the graph and returns a new proxy.

    >>> import ember.fx
    >>> gm = ember.fx.symbolic_trace(lambda x: (x + 1).relu())
    >>> [node.op for node in gm.graph.nodes]
    ['placeholder', 'call_function', 'call_method', 'output']
    """

    def __init__(self, node, tracer=None):
        if tracer is None:
            from ._symbolic_trace import GraphAppendingTracer
            tracer = GraphAppendingTracer(node.graph)
        self.tracer = tracer
        self.node = node

    def __repr__(self):
        return f"Proxy({self.node.name})"

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return Attribute(self, name)

    def __call__(self, *args, **kwargs):
        return self.tracer.create_proxy("call_method", "__call__", (self,) + args, kwargs)

    def __bool__(self):
        return self.tracer.to_bool(self)

    def __iter__(self):
        return self.tracer.iter(self)

    def __len__(self):
        raise RuntimeError("'len' is not supported in symbolic tracing by default. If you want "
                           "this call to be recorded, please call ember.fx.wrap('len') at "
                           "module scope")

    def keys(self):
        return self.tracer.keys(self)

    def __deepcopy__(self, memo):
        raise TraceError("Proxy objects cannot be deep-copied during symbolic tracing")


class Attribute(Proxy):
    """``proxy.name``: a method call when called, a ``getattr`` node when used as a value."""

    def __init__(self, root, attr):
        self.root = root
        self.attr = attr
        self.tracer = root.tracer
        self._node = None

    @property
    def node(self):
        # Created lazily: most attributes are methods that are called straight away.
        if self._node is None:
            self._node = self.tracer.create_proxy("call_function", builtins.getattr,
                                                  (self.root, self.attr), {}).node
        return self._node

    def __call__(self, *args, **kwargs):
        return self.tracer.create_proxy("call_method", self.attr, (self.root,) + args, kwargs)


def unpacking_length():
    """How many values the traced code unpacks from a proxy (``a, b = proxy``), else None."""
    frame = inspect.currentframe().f_back.f_back.f_back
    for instruction in dis.get_instructions(frame.f_code):
        if instruction.offset == frame.f_lasti:
            return instruction.argval if instruction.opname == "UNPACK_SEQUENCE" else None
    return None


def _add_operator(name, function, *, reflected=False):
    if reflected:
        def dunder(self, other):
            return self.tracer.create_proxy("call_function", function, (other, self), {})
    else:
        def dunder(self, *others):
            return self.tracer.create_proxy("call_function", function, (self,) + others, {})
    dunder.__name__ = name
    setattr(Proxy, name, dunder)


_REFLECTABLE = ("add", "sub", "mul", "floordiv", "truediv", "mod", "pow", "lshift", "rshift",
                "and_", "or_", "xor", "matmul")
for _name in _REFLECTABLE:
    _plain = _name.rstrip("_")
    _add_operator(f"__{_plain}__", getattr(operator, _name))
    _add_operator(f"__r{_plain}__", getattr(operator, _name), reflected=True)
for _name in ("neg", "pos", "invert", "abs", "getitem", "eq", "ne", "lt", "le", "gt", "ge"):
    _add_operator(f"__{_name}__", getattr(operator, _name))
Proxy.__hash__ = object.__hash__
del _name, _plain


def find_proxy(args, kwargs):
    """The first :class:`Proxy` inside ``args``/``kwargs``, or ``None``."""
    found = []

    def look(value):
        if not found and isinstance(value, Proxy):
            found.append(value)
        return value

    map_aggregate(args, look)
    map_aggregate(kwargs, look)
    return found[0] if found else None
