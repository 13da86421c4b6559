"""``ember.fx.proxy``: the stand-in value that records what is done to it, and the tracer
base that turns those records into graph nodes.

:class:`TracerBase` holds what every tracer shares (making nodes and proxies, lowering Python
values to node arguments); :class:`GraphAppendingTracer` is the smallest tracer, appending to
an existing graph, for building graphs from proxies by hand.
"""

from __future__ import annotations

import builtins
import collections
import contextlib
import copy
import dataclasses
import dis
import enum
import inspect
import operator
import os
import traceback

from . import traceback as fx_traceback
from .node import Node, base_types, map_aggregate, map_arg

__all__ = ["TracerBase", "GraphAppendingTracer", "TraceError", "Proxy", "MetaProxy",
           "Attribute", "ParameterProxy", "Scope", "ScopeContextManager"]


class TraceError(ValueError):
    """Raised when traced code needs a concrete value (control flow, iteration)."""


class Scope:
    """The module a node was recorded in: its dotted path in the root and its class.

    >>> scope = Scope("layer1", None)
    >>> (scope.module_path, scope.module_type)
    ('layer1', None)
    """

    def __init__(self, module_path, module_type):
        self.module_path = module_path
        self.module_type = module_type


class ScopeContextManager:
    """Set ``scope`` to ``current_scope`` for the length of a ``with`` block, then restore it.

    >>> scope = Scope("", None)
    >>> with ScopeContextManager(scope, Scope("sub", int)):
    ...     scope.module_path
    'sub'
    >>> scope.module_path
    ''
    """

    def __init__(self, scope, current_scope):
        self._saved = copy.copy(scope)
        scope.module_path = current_scope.module_path
        scope.module_type = current_scope.module_type
        self._scope = scope

    def __enter__(self):
        return self._scope

    def __exit__(self, *exc_info):
        self._scope.module_path = self._saved.module_path
        self._scope.module_type = self._saved.module_type


_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


class TracerBase:
    """What every tracer shares: :meth:`create_node`, :meth:`create_proxy`, :meth:`create_arg`
    and the hooks for values tracing cannot know (:meth:`to_bool`, :meth:`iter`,
    :meth:`keys`). Subclasses set ``graph`` (and usually ``scope``, ``module_stack``).

    >>> import ember.fx, operator
    >>> tracer = GraphAppendingTracer(ember.fx.Graph())
    >>> x = tracer.create_proxy("placeholder", "x", (), {})
    >>> print(tracer.create_proxy("call_function", operator.neg, (x,), {}))
    Proxy(neg)
    """

    record_stack_traces = False
    check_mutable_operations = False
    trace_asserts = False
    proxy_buffer_attributes = False
    traced_func_name = "forward"

    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
        """Insert a node into ``self.graph``; override to check or change what is recorded."""
        if kind == "call_function" and self.check_mutable_operations:
            from .operator_schemas import check_for_mutable_operation
            check_for_mutable_operation(target, args, kwargs)
        node = self.graph.create_node(kind, target, args, kwargs, name, type_expr)
        scope = getattr(self, "scope", None)
        if scope is not None:
            self.node_name_to_scope[node.name] = (scope.module_path, scope.module_type)
        if fx_traceback.has_preserved_node_meta():
            self._copy_current_meta(node)
        elif getattr(self, "module_stack", None):
            node.meta["nn_module_stack"] = copy.copy(self.module_stack)
        if self.record_stack_traces and not node.stack_trace:
            node.stack_trace = _user_stack_trace()
        return node

    @staticmethod
    def _copy_current_meta(node):
        current = fx_traceback.get_current_meta()
        if current.get("stack_trace"):
            node.stack_trace = current["stack_trace"]
        for field in fx_traceback.COPIED_META_FIELDS:
            if field in current:
                node.meta[field] = copy.copy(current[field])

    def proxy(self, node):
        """Wrap ``node`` in a :class:`Proxy` bound to this tracer."""
        return Proxy(node, self)

    def create_proxy(self, kind, target, args, kwargs, name=None, type_expr=None,
                     proxy_factory_fn=None):
        """Lower the arguments (:meth:`create_arg`), make the node and return its proxy
        (made by ``proxy_factory_fn(node)`` when given)."""
        node = self.create_node(kind, target, self.create_arg(tuple(args)),
                                self.create_arg(dict(kwargs)), name, type_expr)
        return self.proxy(node) if proxy_factory_fn is None else proxy_factory_fn(node)

    def create_arg(self, a):
        """Lower a Python value to what a node stores: a proxy becomes its node, containers
        are lowered item by item, plain values (numbers, strings, dtypes, tensors...) stay;
        anything else raises ``NotImplementedError``."""
        if isinstance(a, Proxy):
            return a.node
        if hasattr(a, "__fx_create_arg__"):
            return a.__fx_create_arg__(self)
        if isinstance(a, tuple):
            lowered = [self.create_arg(item) for item in a]
            return type(a)(*lowered) if hasattr(a, "_fields") else tuple(lowered)
        if isinstance(a, list):
            return [self.create_arg(item) for item in a]
        if isinstance(a, dict):
            return {self._create_key(key): self.create_arg(value) for key, value in a.items()}
        if isinstance(a, (slice, range)):
            parts = (self.create_arg(a.start), self.create_arg(a.stop), self.create_arg(a.step))
            return type(a)(*parts)
        if isinstance(a, (Node, enum.Enum, *base_types)) or a is None or a is ...:
            return a
        if callable(a) and getattr(a, "_ember_op_packet", False):
            return a
        if dataclasses.is_dataclass(a) and not isinstance(a, type):
            fields = {field.name: self.create_arg(getattr(a, field.name))
                      for field in dataclasses.fields(a)}
            return self.create_node("call_function", type(a), (), fields)
        raise NotImplementedError(f"argument of type: {type(a)}")

    def _create_key(self, key):
        if isinstance(key, str):
            return key
        lowered = self.create_arg(key)

        def refuse(node):
            raise RuntimeError("Keys for dictionaries used as an argument cannot contain a "
                               f"Node. Got key: {node}")
        map_arg(lowered, refuse)
        return lowered

    def to_bool(self, obj):
        """Called for ``bool(proxy)`` (control flow): its value is unknown, so this raises."""
        raise TraceError("symbolically traced variables cannot be used as inputs to control flow")

    def iter(self, obj):
        """Called when a proxy is iterated other than by unpacking: raises."""
        raise TraceError("Proxy object cannot be iterated. This can be attempted when the Proxy "
                         "is used in a loop or as a *args or **kwargs function argument. See the "
                         "ember.fx docs for a more detailed explanation of what types of control "
                         "flow can be traced, and check out the Proxy docstring for help "
                         "troubleshooting Proxy iteration errors")

    def keys(self, obj):
        """Called for ``**proxy``: records a ``keys`` method call."""
        return Attribute(obj, "keys")()


def _user_stack_trace():
    """The formatted stack without ember's own frames (for ``record_stack_traces``)."""
    frames = [frame for frame in traceback.extract_stack()[:-2]
              if not frame.filename.startswith(_EMBER_DIR)]
    return "".join(traceback.format_list(frames)).strip()


class GraphAppendingTracer(TracerBase):
    """A tracer that appends nodes to an existing ``graph``: wrap its nodes in
    :class:`Proxy` objects and operate on them to add more.

    >>> import ember, ember.fx
    >>> graph = ember.fx.Graph()
    >>> tracer = GraphAppendingTracer(graph)
    >>> x = ember.fx.Proxy(graph.placeholder("x"), tracer)
    >>> _ = graph.output((x * 2).node)
    >>> [node.op for node in graph.nodes]
    ['placeholder', 'call_function', 'output']
    """

    def __init__(self, graph):
        super().__init__()
        self.graph = graph
        self.scope = Scope("", None)
        self.module_stack = collections.OrderedDict()
        self.node_name_to_scope = {}


def assert_fn(x):
    """What a traced ``assert`` records (with ``trace_asserts``)."""
    if not x:
        raise AssertionError("Assertion failed")


def _is_tensor_method_or_property(function):
    """Whether ``function`` is a method of ``ember.Tensor`` or a property's getter."""
    try:
        from ..overrides import is_tensor_method_or_property
    except ImportError:
        from .._tensor import Tensor
        attribute = inspect.getattr_static(Tensor, getattr(function, "__name__", ""), None)
        if isinstance(attribute, property):
            return function in (attribute.fget, attribute.__get__)
        return attribute is function or getattr(attribute, "__func__", None) is function
    return is_tensor_method_or_property(function)


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
        if self.tracer.trace_asserts and _is_assert_test(inspect.currentframe().f_back):
            self.tracer.create_proxy("call_function", assert_fn, (self,), {})
            return True
        return self.tracer.to_bool(self)

    def __iter__(self):
        count = unpacking_length(inspect.currentframe().f_back)
        if count is not None:
            return (self[index] for index in range(count))
        return self.tracer.iter(self)

    @classmethod
    def __torch_function__(cls, orig_method, types, args=None, kwargs=None):
        """Record a call of an ember function (or Tensor method) on proxies as a node of the
        proxies' tracer: ``call_method`` for a Tensor method, ``call_function`` otherwise."""
        args, kwargs = args or (), kwargs or {}
        tracers = {}

        def note_tracer(value):
            if isinstance(value, cls):
                tracers[value.tracer] = None
            return value

        map_aggregate(args, note_tracer)
        map_aggregate(kwargs, note_tracer)
        if len(tracers) > 1:
            raise RuntimeError(f"Found multiple different tracers {list(tracers)} while "
                               f"trying to trace operations {orig_method}")
        tracer = next(iter(tracers))
        if _is_tensor_method_or_property(orig_method):
            return tracer.create_proxy("call_method", orig_method.__name__, args, kwargs)
        return tracer.create_proxy("call_function", orig_method, args, kwargs)

    def __len__(self):
        raise RuntimeError("'len' is not supported in symbolic tracing by default. If you want "
                           "this call to be recorded, please call ember.fx.wrap('len') at "
                           "module scope")

    def keys(self):
        return self.tracer.keys(self)

    def __deepcopy__(self, memo):
        raise TraceError("Proxy objects cannot be deep-copied during symbolic tracing")

    def __getstate__(self):
        return self.__dict__

    def __setstate__(self, state):
        self.__dict__ = state


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


class MetaProxy(Proxy):
    """A proxy that also computes each result's value on stand-in tensors: every node it
    records gets ``meta["val"]``, computed from its inputs' ``meta["val"]`` inside
    ``fake_mode`` (any context manager; none by default)."""

    def __init__(self, node, tracer=None, fake_mode=None):
        super().__init__(node, tracer)
        self.fake_mode = fake_mode

    def __repr__(self):
        return f"MetaProxy({self.node.name})"

    @classmethod
    def __torch_function__(cls, orig_method, types, args=None, kwargs=None):
        args, kwargs = args or (), kwargs or {}
        meta_proxy = next((arg for arg in args if isinstance(arg, MetaProxy)), None)
        if meta_proxy is None:
            raise AssertionError("No MetaProxy found in arguments, but one is expected.")
        proxy = super().__torch_function__(orig_method, types, args, kwargs)
        values = [arg.node.meta["val"] if isinstance(arg, Proxy) else arg for arg in args]
        with meta_proxy.fake_mode or contextlib.nullcontext():
            proxy.node.meta["val"] = orig_method(*values, **kwargs)
        return MetaProxy(proxy.node, proxy.tracer, meta_proxy.fake_mode)


class ParameterProxy(Proxy):
    """The proxy of a parameter read during tracing (with ``param_shapes_constant``): its
    ``shape``, ``size()``, ``dim()``, ``ndim``, ``numel()`` and ``nelement()`` answer from the
    real parameter, so code that tests them can be traced."""

    def __init__(self, tracer, node, name, param):
        from ..nn.parameter import Parameter
        super().__init__(node, tracer)
        if not isinstance(param, Parameter):
            raise AssertionError(f"Expected Parameter, got {type(param)}")
        self.param = param
        self.name = name

    def __repr__(self):
        return f"ParameterProxy({self.name})"

    @property
    def shape(self):
        return self.param.shape

    def size(self):
        return self.param.size()

    def dim(self):
        return self.param.dim()

    @property
    def ndim(self):
        return self.param.ndim

    def numel(self):
        return self.param.numel()

    def nelement(self):
        return self.param.nelement()


def _instruction_at(frame):
    for instruction in dis.get_instructions(frame.f_code):
        if instruction.offset == frame.f_lasti:
            return instruction
    return None


def unpacking_length(frame):
    """How many values the code of ``frame`` unpacks from a proxy (``a, b = proxy``), else
    None."""
    instruction = _instruction_at(frame)
    if instruction is not None and instruction.opname == "UNPACK_SEQUENCE":
        return instruction.argval
    return None


def _is_assert_test(frame):
    """Whether ``frame`` is testing the condition of an ``assert`` statement."""
    instructions = list(dis.get_instructions(frame.f_code))
    for index, instruction in enumerate(instructions):
        if instruction.offset == frame.f_lasti:
            following = instructions[index + 1:index + 3]
            return any(item.opname == "LOAD_ASSERTION_ERROR" for item in following)
    return False


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
