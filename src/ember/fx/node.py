"""``ember.fx.node``: one operation of an FX graph, and the helpers that walk its arguments."""

from __future__ import annotations

import builtins
import operator
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Optional, Union

from .._device import device
from .._dtype import dtype
from .._tensor import Tensor, layout, memory_format
from .immutable_collections import immutable_dict, immutable_list

__all__ = ["Node", "map_arg", "map_aggregate", "has_side_effect"]

# The leaf values a node's arguments may hold besides nodes and containers (torch.fx's names).
BaseArgumentTypes = str | int | float | bool | complex | dtype | Tensor | device | memory_format \
    | layout
base_types = typing.get_args(BaseArgumentTypes)

# What a node calls or reads: a function, or a method/attribute/module name.
Target = Callable[..., Any] | str

# A recursive alias needs typing's Union (``|`` cannot join forward references).
Argument = Optional[Union[  # noqa: UP007, UP045
    tuple["Argument", ...], Sequence["Argument"], Mapping[str, "Argument"], slice, range,
    "Node", BaseArgumentTypes]]

# Functions whose calls dead-code elimination keeps although nothing uses their result;
# ember.fx adds its own (ember._assert, the profiler's range operators) when it is imported.
_side_effectful_functions = set()


def has_side_effect(fn):
    """Mark ``fn`` as having side effects, so that ``Graph.eliminate_dead_code`` keeps its
    calls even when their result is unused; returns ``fn`` (usable as a decorator).

    >>> @has_side_effect
    ... def log_value(x):
    ...     print(x)
    >>> log_value in _side_effectful_functions
    True
    """
    _side_effectful_functions.add(fn)
    return fn

# Operators that generated code writes as Python syntax (``add = x + y``), as torch.fx does.
BINARY_SYMBOLS = {
    operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/",
    operator.floordiv: "//", operator.mod: "%", operator.pow: "**", operator.matmul: "@",
    operator.lshift: "<<", operator.rshift: ">>", operator.and_: "&", operator.or_: "|",
    operator.xor: "^", operator.eq: "==", operator.ne: "!=", operator.lt: "<",
    operator.le: "<=", operator.gt: ">", operator.ge: ">=",
}
UNARY_SYMBOLS = {operator.neg: "-", operator.pos: "+", operator.invert: "~"}


def map_aggregate(value, fn):
    """Apply ``fn`` to every leaf of nested tuples, lists, dicts and slices; lists and dicts
    come back as :class:`~ember.fx.immutable_collections.immutable_list`/``immutable_dict``,
    as in torch.fx.

    >>> map_aggregate((1, [2, 3]), lambda v: v * 10)
    (10, [20, 30])
    """
    if isinstance(value, tuple):
        mapped = tuple(map_aggregate(item, fn) for item in value)
        return type(value)(*mapped) if hasattr(value, "_fields") else mapped
    if isinstance(value, list):
        return immutable_list(map_aggregate(item, fn) for item in value)
    if isinstance(value, dict):
        return immutable_dict((key, map_aggregate(item, fn)) for key, item in value.items())
    if isinstance(value, slice):
        return slice(map_aggregate(value.start, fn), map_aggregate(value.stop, fn),
                     map_aggregate(value.step, fn))
    return fn(value)


def map_arg(value, fn):
    """Apply ``fn`` to every :class:`Node` inside a nested argument structure.

    >>> map_arg((1, "a"), lambda node: node)
    (1, 'a')
    """
    return map_aggregate(value, lambda leaf: fn(leaf) if isinstance(leaf, Node) else leaf)


def qualified_name(function):
    """The dotted name under which generated code and graph printing show ``function``.

    >>> import operator
    >>> qualified_name(operator.add)
    'operator.add'
    """
    from ..ops._namespaces import OpOverload, OpOverloadPacket
    if isinstance(function, (OpOverload, OpOverloadPacket)):  # ember.ops.aten.add.Tensor
        return f"ember.ops.{function}"
    name = function.__name__
    if getattr(builtins, name, None) is function:
        return f"builtins.{name}"
    if getattr(operator, name, None) is function:
        return f"operator.{name}"
    import ember
    import ember.nn.functional as functional
    module = getattr(function, "__module__", "") or ""
    if module.startswith("ember.nn") and getattr(functional, name, None) is function:
        return f"ember.nn.functional.{name}"
    if getattr(ember, name, None) is function:
        return f"ember.{name}"
    if getattr(functional, name, None) is function:
        return f"ember.nn.functional.{name}"
    return f"{module}.{getattr(function, '__qualname__', name)}"


_RANDOM_SAMPLERS = ("rand", "randn", "randint", "randperm", "rand_like", "randn_like",
                    "randint_like", "normal", "poisson", "bernoulli", "multinomial")


def _is_random_sampler(target):
    """Whether ``target`` is one of ember's random samplers (torch's ``_RANDOM_FUNCTIONS``)."""
    import ember
    name = getattr(target, "__name__", None)
    return name in _RANDOM_SAMPLERS and getattr(ember, name, None) is target


def type_repr(obj):
    """How a node's type prints: ``module.Name`` for a class (``ember.Tensor`` for ember's
    public classes, the bare name for builtins), ``repr`` for anything else.

    >>> type_repr(int), type_repr(list[int])
    ('int', 'list[int]')
    """
    import types

    import ember
    if isinstance(obj, type) and not isinstance(obj, types.GenericAlias):
        if obj.__module__ == "builtins":
            return obj.__qualname__
        if getattr(ember, obj.__name__, None) is obj:
            return f"ember.{obj.__name__}"
        return f"{obj.__module__}.{obj.__qualname__}"
    if obj is ...:
        return "..."
    if isinstance(obj, types.FunctionType):
        return obj.__name__
    return repr(obj)


class Node:
    """One operation in a :class:`~ember.fx.Graph`.

    ``op`` is one of ``placeholder``, ``get_attr``, ``call_function``, ``call_method``,
    ``call_module`` and ``output``; ``target`` is what it calls or reads; ``users`` are the
    nodes that take this one as an argument.

    >>> import ember.fx
    >>> g = ember.fx.Graph()
    >>> x = g.placeholder("x")
    >>> (x.op, x.target, x.name)
    ('placeholder', 'x', 'x')
    """

    def __init__(self, graph, name, op, target, args, kwargs, return_type=None):
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self.type = return_type
        self.users = {}
        self.meta = {}
        self._input_nodes = {}
        self._args = ()
        self._kwargs = {}
        self._erased = False
        self._set_args_kwargs(tuple(args), dict(kwargs))

    # ------------------------------------------------------------------ arguments and uses

    @property
    def args(self):
        """The positional arguments; assigning them updates the users of the nodes involved."""
        return self._args

    @args.setter
    def args(self, new_args):
        self._set_args_kwargs(tuple(new_args), self._kwargs)

    @property
    def kwargs(self):
        """The keyword arguments; assigning them updates the users of the nodes involved."""
        return self._kwargs

    @kwargs.setter
    def kwargs(self, new_kwargs):
        self._set_args_kwargs(self._args, dict(new_kwargs))

    def _set_args_kwargs(self, args, kwargs):
        for old_input in self._input_nodes:
            old_input.users.pop(self, None)
        self._input_nodes = {}
        def note_input(node):
            self._input_nodes.setdefault(node)
            return node

        args = map_arg(args, note_input)
        kwargs = map_arg(kwargs, note_input)
        self._args, self._kwargs = args, kwargs
        for new_input in self._input_nodes:
            new_input.users.setdefault(self)

    @property
    def all_input_nodes(self):
        """Every node this one reads, in order of first appearance."""
        return list(self._input_nodes)

    def update_arg(self, idx, arg):
        """Replace positional argument ``idx`` with ``arg``."""
        args = list(self._args)
        args[idx] = arg
        self.args = args

    def update_kwarg(self, key, arg):
        """Set keyword argument ``key`` to ``arg``."""
        self.kwargs = {**self._kwargs, key: arg}

    def insert_arg(self, idx, arg):
        """Insert ``arg`` into the positional arguments at index ``idx``.

        >>> import ember.fx, operator
        >>> g = ember.fx.Graph(); x = g.placeholder("x")
        >>> add = g.call_function(operator.add, (x,)); add.insert_arg(1, 2); add.args
        (x, 2)
        """
        if not 0 <= idx <= len(self._args):
            raise AssertionError("insert_args index must be between 0 and len(self.args)")
        self.args = self._args[:idx] + (arg,) + self._args[idx:]

    @property
    def stack_trace(self):
        """The user source location recorded for this node (``meta["stack_trace"]``), or
        ``None``."""
        return self.meta.get("stack_trace")

    @stack_trace.setter
    def stack_trace(self, trace):
        self.meta["stack_trace"] = trace

    def normalized_arguments(self, root, arg_types=None, kwarg_types=None,
                             normalize_to_only_use_kwargs=False):
        """The call's arguments bound to the target's signature, as an
        :class:`~ember.fx.operator_schemas.ArgsKwargsPair` (``None`` if it cannot be bound).

        >>> import ember, ember.fx
        >>> g = ember.fx.Graph(); x = g.placeholder("x")
        >>> s = g.call_function(ember.sum, (x, 0))
        >>> s.normalized_arguments(None, normalize_to_only_use_kwargs=True).kwargs
        {'input': x, 'dim': 0, 'keepdim': False, 'dtype': None}
        """
        from .operator_schemas import normalize_function, normalize_module
        if self.op == "call_function":
            return normalize_function(self.target, self.args, self.kwargs, arg_types,
                                      kwarg_types, normalize_to_only_use_kwargs)
        if self.op == "call_module":
            return normalize_module(root, self.target, self.args, self.kwargs,
                                    normalize_to_only_use_kwargs)
        return None

    def replace_input_with(self, old_input, new_input):
        """Make this node read ``new_input`` wherever it read ``old_input``."""
        swap = lambda node: new_input if node is old_input else node  # noqa: E731
        self._set_args_kwargs(map_arg(self._args, swap), map_arg(self._kwargs, swap))

    def replace_all_uses_with(self, replace_with, delete_user_cb=lambda user: True, *,
                              propagate_meta=False):
        """Make every user of this node read ``replace_with`` instead; returns those users.
        With ``propagate_meta``, ``replace_with`` (whose meta must be empty) also takes this
        node's meta.

        >>> import ember.fx, operator
        >>> g = ember.fx.Graph(); x = g.placeholder("x")
        >>> y = g.call_function(operator.neg, (x,)); out = g.output(y)
        >>> _ = y.replace_all_uses_with(x); out.args
        (x,)
        """
        if propagate_meta:
            if replace_with.meta:
                raise AssertionError("Called node.replace_all_uses_with(replace_with, "
                                     "propagate_meta=True), but replace_with already has "
                                     ".meta keys")
            replace_with.meta.update(self.meta)
        users = [user for user in self.users if delete_user_cb(user)]
        for user in users:
            user.replace_input_with(self, replace_with)
        return users

    # ------------------------------------------------------------------ position in the graph

    @property
    def next(self):
        """The node after this one (the graph's root sentinel past the end is ``None``)."""
        order = self.graph._nodes
        index = order.index(self) + 1
        return order[index] if index < len(order) else None

    @property
    def prev(self):
        """The node before this one, or ``None`` at the start."""
        order = self.graph._nodes
        index = order.index(self)
        return order[index - 1] if index > 0 else None

    def prepend(self, x):
        """Move node ``x`` to just before this one."""
        self.graph._move(x, self.graph._nodes.index(self))

    def append(self, x):
        """Move node ``x`` to just after this one."""
        self.graph._move(x, self.graph._nodes.index(self) + 1)

    def is_impure(self, impure_random=True):
        """Whether dead-code elimination must keep this node even without users: inputs and
        output, calls with side effects, and the random samplers (which advance the
        generator; torch keeps them whatever ``impure_random`` says)."""
        if self.op in ("placeholder", "output"):
            return True
        if self.op == "call_module":
            module = self.graph.owning_module
            return module is not None and getattr(module.get_submodule(self.target),
                                                  "_is_impure", False)
        if self.op == "call_function":
            return self.target in _side_effectful_functions or _is_random_sampler(self.target)
        return False

    # ------------------------------------------------------------------ printing

    def _pretty_target(self):
        return qualified_name(self.target) if callable(self.target) else self.target

    def format_node(self, placeholder_names=None, maybe_return_typename=None, *,
                    include_tensor_metadata=False):
        """The node as one line of the graph's printed form, as torch.fx prints it. Given
        ``placeholder_names`` (a non-empty list), a placeholder is added to it instead (as
        ``name: type``) and None returned; given ``maybe_return_typename`` (a one-item list),
        the output's type is written into it as `` -> type``."""
        typename = f"{type_repr(self.type)} " if self.type else ""
        head = f"%{self.name} : {typename}[num_users={len(self.users)}] = "
        if self.op == "placeholder" and placeholder_names:  # torch: only a non-empty list
            placeholder_names.append(self.target + (f": {type_repr(self.type)}"
                                                    if self.type else ""))
            return None
        if self.op == "output" and self.type and maybe_return_typename:
            maybe_return_typename[0] = f" -> {type_repr(self.type)}"
        if self.op == "placeholder":
            default = f"(default={self.args[0]})" if self.args else ""
            return f"{head}placeholder[target={self.target}]{default}"
        if self.op == "get_attr":
            return f"{head}get_attr[target={self.target}]"
        if self.op == "output":
            return f"return {_format_arg(self.args[0], percent=False)}"
        kwargs = "{" + ", ".join(f"{key}: {_format_arg(value)}"
                                 for key, value in self.kwargs.items()) + "}"
        return (f"{head}{self.op}[target={self._pretty_target()}]"
                f"(args = {_format_arg(self.args)}, kwargs = {kwargs})")

    def __repr__(self):
        return self.name


def _format_arg(value, percent=True):
    if isinstance(value, Node):
        return f"%{value.name}" if percent else value.name
    if isinstance(value, tuple):
        inner = ", ".join(_format_arg(item, percent) for item in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, list):
        return "[" + ", ".join(_format_arg(item, percent) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{key}: {_format_arg(item, percent)}"
                               for key, item in value.items()) + "}"
    return str(value)
