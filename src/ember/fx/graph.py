"""``ember.fx.graph``: the FX graph (an ordered list of nodes), its editing API and the Python
code generated from it."""

from __future__ import annotations

import builtins
import contextlib
import inspect
import keyword
import math
import operator
import re
import typing

from .node import BINARY_SYMBOLS, UNARY_SYMBOLS, Node, map_arg, qualified_name

__all__ = ["PythonCode", "CodeGen", "Graph"]

_ILLEGAL_CHARACTERS = re.compile(r"[^0-9a-zA-Z_]+")
_NUMBERED_NAME = re.compile(r"(.*)_(\d+)$")


def _snake_case(text):
    """``"ReLU6"`` -> ``"re_lu6"``: an underscore wherever a capital follows a small letter."""
    pieces, previous_lower = [], False
    for char in text:
        if previous_lower and char.isupper():
            pieces.append("_")
        pieces.append(char.lower())
        previous_lower = char.islower()
    return "".join(pieces)


class _Namespace:
    """Hands out unique, legal Python names, numbering clashes as torch.fx does (``relu_1``)."""

    def __init__(self):
        self._used = set()
        self._counts = {}

    def create_name(self, candidate):
        candidate = _ILLEGAL_CHARACTERS.sub("_", candidate) or "_unnamed"
        if candidate[0].isdigit():
            candidate = f"_{candidate}"
        match = _NUMBERED_NAME.match(candidate)
        base, number = (match.group(1), int(match.group(2))) if match else (candidate, None)
        if not number:
            number = self._counts.get(base, 0)
        while candidate in self._used or _is_reserved(candidate):
            number += 1
            candidate = f"{base}_{number}"
        self._counts[base] = number
        self._used.add(candidate)
        return candidate

    def reserve(self, name):
        self._used.add(name)


def _is_reserved(name):
    return keyword.iskeyword(name) or name in builtins.__dict__ or name in ("ember", "self")


class _NodeList:
    """The live node sequence of a graph; iteration skips nodes erased along the way."""

    def __init__(self, graph, reverse=False):
        self._graph, self._reverse = graph, reverse

    def __len__(self):
        return len(self._graph._nodes)

    def __iter__(self):
        snapshot = list(self._graph._nodes)
        for node in reversed(snapshot) if self._reverse else snapshot:
            if not node._erased:
                yield node

    def __reversed__(self):
        return iter(_NodeList(self._graph, not self._reverse))


class PythonCode:
    """Generated source and the globals it needs (torch.fx's ``PythonCode``)."""

    def __init__(self, src, globals):
        self.src = src
        self.globals = globals


class CodeGen:
    """How a graph becomes Python source: the ``def`` line, the ``return`` statement, extra
    globals, and how inputs and outputs are adapted. Subclass it and install it with
    :meth:`Graph.set_codegen` to change the generated function's calling convention.

    >>> import ember.fx
    >>> class Doubled(CodeGen):
    ...     def generate_output(self, output_args, *, descs=None, repr_fn=repr):
    ...         return f"return ({repr_fn(output_args)}, {repr_fn(output_args)})"
    >>> g = ember.fx.Graph(); g.set_codegen(Doubled())
    >>> _ = g.output(g.placeholder("x"))
    >>> print(g.python_code("self").src.strip())
    def forward(self, x):
        return (x, x)
    """

    def __init__(self):
        self._body_transformer = None
        self._func_name = "forward"

    def gen_fn_def(self, free_vars, maybe_return_annotation, *, expanded_def=False):
        """The ``def`` line of the generated function (``self`` is added first)."""
        if not free_vars or free_vars[0] != "self":
            free_vars.insert(0, "self")
        if expanded_def:
            arguments = "".join(f"    {name},\n" for name in free_vars)
            return f"def {self._func_name}(\n{arguments}){maybe_return_annotation}:"
        return f"def {self._func_name}({', '.join(free_vars)}){maybe_return_annotation}:"

    def generate_output(self, output_args, *, descs=None, repr_fn=repr):
        """The ``return`` statement (unindented) for the graph's output value."""
        return f"return {repr_fn(output_args)}"

    def process_inputs(self, *args):
        """Turn the generated function's inputs into the graph's inputs (identity here)."""
        return args

    def process_outputs(self, outputs):
        """Turn the graph's outputs into the generated function's outputs (identity here)."""
        return outputs

    def additional_globals(self):
        """Extra ``(name, value)`` pairs the generated code needs as globals."""
        return []

    def _gen_python_code(self, nodes, root_module, namespace=None, **options):
        graph = next(iter(nodes)).graph if len(nodes) else Graph()
        return _CodeWriter(graph, root_module, self).write()


class Graph:
    """An ordered list of :class:`~ember.fx.Node`: the intermediate form of ``ember.fx``.

    >>> import ember, ember.fx
    >>> g = ember.fx.Graph()
    >>> x = g.placeholder("x")
    >>> _ = g.output(g.call_function(ember.relu, (x,)))
    >>> print(g)  # doctest: +NORMALIZE_WHITESPACE
    graph():
        %x : [num_users=1] = placeholder[target=x]
        %relu : [num_users=1] = call_function[target=ember.relu](args = (%x,), kwargs = {})
        return relu
    """

    def __init__(self, owning_module=None, tracer_cls=None, tracer_extras=None):
        self._nodes = []
        self._tracer_extras = tracer_extras  # extra keyword arguments of the tracer's trace()
        self._namespace = _Namespace()
        self._insert = self._nodes.append
        self.owning_module = owning_module
        self._tracer_cls = tracer_cls
        self._codegen = CodeGen()

    @property
    def nodes(self):
        """The nodes in execution order (erasing while iterating is allowed)."""
        return _NodeList(self)

    def output_node(self):
        """The graph's ``output`` node (its last node)."""
        node = next(iter(reversed(self.nodes)))
        if node.op != "output":
            raise AssertionError(f"Expected output node, got op={node.op}")
        return node

    def find_nodes(self, *, op, target=None, sort=True):
        """The nodes of kind ``op`` (and with ``target``, if given), in graph order; a
        ``call_function`` search needs a target, as in torch."""
        if op == "call_function" and target is None:
            raise AssertionError("target must not be None for call_function op")
        return [node for node in self.nodes
                if node.op == op and (target is None or node.target == target)]

    # ------------------------------------------------------------------ creating nodes

    def create_node(self, op, target, args=None, kwargs=None, name=None, type_expr=None):
        """Make a node and insert it at the current insertion point.

        >>> import ember.fx
        >>> g = ember.fx.Graph()
        >>> g.create_node("placeholder", "x").name
        'x'
        """
        if op not in ("placeholder", "get_attr", "call_function", "call_method",
                      "call_module", "output", "root"):
            raise ValueError(f"Unsupported node op: {op}")
        name = self._namespace.create_name(name if name is not None
                                           else self._target_to_name(target))
        node = Node(self, name, op, target, args or (), kwargs or {}, type_expr)
        self._insert(node)
        return node

    @staticmethod
    def _target_to_name(target):
        name = target.__name__ if callable(target) else target
        if name.startswith("__") and name.endswith("__"):
            name = name[2:-2]
        return _snake_case(name)

    def placeholder(self, name, type_expr=None, default_value=inspect.Signature.empty):
        """A graph input named ``name``, optional when ``default_value`` is given."""
        args = () if default_value is inspect.Signature.empty else (default_value,)
        return self.create_node("placeholder", name, args, type_expr=type_expr)

    def get_attr(self, qualified_name, type_expr=None):
        """Read the parameter, buffer or attribute at the dotted path ``qualified_name``."""
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_function(self, the_function, args=None, kwargs=None, type_expr=None, name=None):
        """Call a free function (``ember.relu``, ``operator.add``); ``name`` chooses the
        node's name (made unique)."""
        return self.create_node("call_function", the_function, args, kwargs, name=name,
                                type_expr=type_expr)

    def call_method(self, method_name, args=None, kwargs=None, type_expr=None):
        """Call ``args[0].method_name(*args[1:], **kwargs)``."""
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_module(self, module_name, args=None, kwargs=None, type_expr=None):
        """Call the submodule at the dotted path ``module_name``."""
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def output(self, result, type_expr=None):
        """The graph's return value (nested tuples/lists/dicts of nodes allowed)."""
        return self.create_node("output", "output", (result,), type_expr=type_expr)

    def create_size_node(self, tensor_node, dim):
        """A node computing ``tensor_node.size(dim)`` (its ``meta["val"]`` filled in when
        ``tensor_node`` carries an example value)."""
        return self._shape_query(tensor_node, "size", dim)

    def create_stride_node(self, tensor_node, dim):
        """A node computing ``tensor_node.stride(dim)``."""
        return self._shape_query(tensor_node, "stride", dim)

    def create_storage_offset_node(self, tensor_node):
        """A node computing ``tensor_node.storage_offset()``."""
        return self._shape_query(tensor_node, "storage_offset")

    def _shape_query(self, tensor_node, method, *dims):
        node = self.call_method(method, (tensor_node, *dims))
        for key in ("val", "example_value"):
            example = tensor_node.meta.get(key)
            if example is not None:
                node.meta[key] = getattr(example, method)(*dims)
                break
        return node

    def materialize_symints(self, values):
        """``values`` as graph values. ember has no symbolic sizes (torch's ``SymInt``), so
        every size is a plain int and is returned as is.

        >>> Graph().materialize_symints([2, 3])
        [2, 3]
        """
        for value in values:
            if not isinstance(value, int):
                raise NotImplementedError(
                    f"Graph.materialize_symints: {type(value).__name__} is not an int; torch's "
                    "SymInt (symbolic sizes) does not exist in ember, whose sizes are ints")
        return list(values)

    def materialize_symint(self, value):
        """One value of :meth:`materialize_symints`."""
        return self.materialize_symints([value])[0]

    def node_copy(self, node, arg_transform=lambda node: node):
        """Copy ``node`` (from any graph) into this one, mapping its node arguments."""
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        copy = self.create_node(node.op, node.target, args, kwargs, node.name, node.type)
        copy.meta = dict(node.meta)
        return copy

    def graph_copy(self, g, val_map, return_output_node=False):
        """Copy every node of graph ``g`` but its output and the nodes already in
        ``val_map`` (which the copies are added to); returns the output's value, remapped
        (with ``g``'s output node too, as a pair, when ``return_output_node``)."""
        for node in g.nodes:
            if node in val_map:
                continue
            if node.op == "output":
                value = map_arg(node.args[0], val_map.__getitem__)
                return (value, node) if return_output_node else value
            val_map[node] = self.node_copy(node, val_map.__getitem__)
        return None

    # ------------------------------------------------------------------ editing

    def erase_node(self, to_erase):
        """Remove a node that nothing uses any more.

        >>> import ember.fx
        >>> g = ember.fx.Graph(); x = g.placeholder("x"); g.erase_node(x); len(g.nodes)
        0
        """
        if to_erase.users:
            raise RuntimeError(f"Tried to erase Node {to_erase} but it still had "
                               f"{len(to_erase.users)} users in the graph: "
                               f"{ {user: None for user in to_erase.users} }!")
        if to_erase.graph is not self:
            raise RuntimeError(f"Attempting to remove {to_erase} from wrong graph!")
        if to_erase._erased:
            return
        self._nodes.remove(to_erase)
        to_erase._set_args_kwargs((), {})
        to_erase._erased = True

    def _move(self, node, index):
        if node in self._nodes:
            old = self._nodes.index(node)
            self._nodes.pop(old)
            index -= old < index
        self._nodes.insert(index, node)

    def inserting_before(self, n=None):
        """Context manager: new nodes go just before node ``n`` (the start if ``None``)."""
        if n is None:
            return self._insert_point(lambda new: self._nodes.insert(0, new))
        return self._insert_point(n.prepend)

    def inserting_after(self, n=None):
        """Context manager: each new node goes just after node ``n`` (the end if ``None``).

        As in torch.fx, several nodes made inside one block land in reverse order of creation
        right after ``n``.
        """
        if n is None:
            return self._insert_point(self._nodes.append)
        return self._insert_point(n.append)

    @contextlib.contextmanager
    def _insert_point(self, insert):
        previous, self._insert = self._insert, insert
        try:
            yield
        finally:
            self._insert = previous

    def eliminate_dead_code(self, is_impure_node=None):
        """Erase nodes without users that have no side effects (``is_impure_node(node)``
        decides instead of ``node.is_impure()`` when given); True if any was erased."""
        is_impure = is_impure_node or (lambda node: node.is_impure())
        changed = False
        for node in reversed(self.nodes):
            if not node.users and not is_impure(node):
                self.erase_node(node)
                changed = True
        return changed

    def lint(self):
        """Check that the graph is well formed: arguments defined before use, names unique,
        and ``get_attr``/``call_module`` targets present in the owning module."""
        seen, names = set(), set()
        for node in self.nodes:
            if node.graph is not self:
                raise RuntimeError(f"Node '{node}' does not belong to this Graph!")
            if node.name in names:
                raise RuntimeError(f"Node redefined name {node.name}!")
            for used in node.all_input_nodes:
                if used not in seen:
                    raise RuntimeError(f"Argument '{used}' of Node '{node}' was used before "
                                       "it has been defined! Please check that Nodes in the "
                                       "graph are topologically ordered")
            if node.op in ("get_attr", "call_module") and self.owning_module is not None:
                self._check_target(node)
            seen.add(node)
            names.add(node.name)

    def _check_target(self, node):
        owner = self.owning_module
        for atom in node.target.split("."):
            if not hasattr(owner, atom):
                raise RuntimeError(f"Node {node} target {node.target} references nonexistent "
                                   f"attribute {atom} of {type(owner).__name__}")
            owner = getattr(owner, atom)

    # ------------------------------------------------------------------ printing and code

    def __str__(self):
        lines = ["graph():"]
        lines += [f"    {node.format_node()}" for node in self.nodes]
        return "\n".join(lines)

    def print_tabular(self):
        """Print one row per node: opcode, name, target, args, kwargs."""
        rows = [("opcode", "name", "target", "args", "kwargs")]
        rows += [(node.op, node.name, str(node._pretty_target()), str(node.args),
                  str(node.kwargs)) for node in self.nodes]
        widths = [max(len(row[column]) for row in rows) for column in range(5)]
        rows.insert(1, tuple("-" * width for width in widths))
        for row in rows:
            print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())

    def python_code(self, root_module, *, verbose=False, include_stride=False,
                    include_device=False, colored=False, expanded_def=False,
                    record_func=False, additional_meta=None):
        """The ``forward`` function's source and the globals it runs with, written by the
        graph's :class:`CodeGen`. ``verbose`` adds source-line comments and tensor
        dtype/shape annotations from node metadata (what ``print_readable`` shows)."""
        return _CodeWriter(self, root_module, self._codegen, expanded_def, verbose).write()

    def set_codegen(self, codegen):
        """Use ``codegen`` (a :class:`CodeGen`) to generate this graph's code."""
        self._codegen = codegen

    def on_generate_code(self, make_transformer):
        """Within the ``with`` block, generated code bodies pass through the transformer
        ``make_transformer(previous_transformer)`` returns: a function from the list of body
        lines to a new list. Also usable without ``with`` (the transformer stays).

        >>> import ember.fx
        >>> g = ember.fx.Graph(); _ = g.output(g.placeholder("x"))
        >>> add_comment = lambda previous: lambda body: ["# generated\\n"] + body
        >>> with g.on_generate_code(add_comment):
        ...     print(g.python_code("self").src.strip())
        def forward(self, x):
            # generated
            return x
        """
        previous = self._codegen._body_transformer
        self._codegen._body_transformer = make_transformer(previous)

        @contextlib.contextmanager
        def restore_on_exit():
            try:
                yield
            finally:
                self._codegen._body_transformer = previous
        return restore_on_exit()

    def process_inputs(self, *args):
        """The graph's inputs for the generated function's ``args`` (see :class:`CodeGen`)."""
        return self._codegen.process_inputs(*args)

    def process_outputs(self, out):
        """The generated function's outputs for the graph's ``out`` (see :class:`CodeGen`)."""
        return self._codegen.process_outputs(out)


class _CodeWriter:
    """Turns a graph into the source of ``def forward(self, ...)``, in torch.fx's style."""

    def __init__(self, graph, root_module, codegen, expanded_def=False, verbose=False):
        import ember
        self.graph = graph
        self.root = root_module
        self.codegen = codegen
        self.expanded_def = expanded_def
        self.verbose = verbose
        self._previous_summary = None
        self.globals = {"ember": ember, "operator": operator, "inf": math.inf,
                        "nan": math.nan, "device": ember.device}
        self.globals.update(codegen.additional_globals())
        self.wrapped = {}
        self.global_names = _Namespace()
        for name in list(self.globals) + [node.name for node in graph.nodes]:
            self.global_names.reserve(name)

    def write(self):
        parameters, body = [], []
        last_uses = self._last_uses()
        for node in self.graph.nodes:
            if node.op == "placeholder":
                parameters.append(self._parameter(node))
                if node.name != node.target.lstrip("*"):
                    body.append(f"{node.name} = {node.target.lstrip('*')}")
                continue
            if self.verbose and node.op != "output":
                self._add_summary(node, body)
            line = self._statement(node)
            dead = last_uses.get(node, [])
            if node.op != "output" and not node.users:
                dead = dead + [node]
            if dead and node.op != "output":
                line += ";  " + " = ".join(dead_node.name for dead_node in dead) + " = None"
            body.append(line)
        if not any(node.op == "output" for node in self.graph.nodes):
            body.append("pass")
        body = [line + "\n" for line in body]
        if self.codegen._body_transformer is not None:
            body = self.codegen._body_transformer(body)
        code = "".join(body).strip("\n")
        outputs = [node for node in self.graph.nodes if node.op == "output"]
        returns = (f" -> {self._type_repr(outputs[0].type)}"
                   if outputs and outputs[0].type is not None else "")
        definition = self.codegen.gen_fn_def([self.root] + parameters, returns,
                                             expanded_def=self.expanded_def)
        wrap_lines = ""
        if self.wrapped:
            import ember.fx
            wrap = self._function_name(ember.fx.wrap)
            wrap_lines = "\n".join(f'{wrap}("{name}")' for name in self.wrapped)
        source = f"\n{wrap_lines}\n\n{definition}\n" + "".join(
            f"    {line}\n" for line in code.split("\n")) + "    "
        return PythonCode(source, self.globals)

    def _last_uses(self):
        assigned, last_uses = set(), {}
        for node in reversed(self.graph.nodes):
            for used in node.all_input_nodes:
                if used not in assigned:
                    assigned.add(used)
                    last_uses.setdefault(node, []).append(used)
        return last_uses

    def _add_summary(self, node, body):
        """Verbose code: a comment with the source line of each run of nodes (torch.fx's
        ``# File: ..., code: ...``) and their ``custom`` annotations."""
        custom = node.meta.get("custom") or {}
        shortened = {key: (str(value)[:40] + "..." if len(str(value)) > 40 else value)
                     for key, value in custom.items()}
        annotation = f" Annotation: {shortened}" if shortened else ""
        source = _summarise_stack_trace(node.stack_trace)
        summary = f"#{annotation} {source or 'No stacktrace found for following nodes'}"
        if summary != self._previous_summary:
            self._previous_summary = summary
            body += ["", summary]

    def _annotation(self, node):
        """`` : type`` for a typed node; in verbose code, a tensor's dtype and shape from
        its metadata (``: "f32[4, 2]"``), as torch.fx writes them."""
        if self.verbose:
            described = _describe_example_value(node.meta.get(
                "val", node.meta.get("tensor_meta", node.meta.get("example_value"))))
            if described is not None:
                return f': "{described}"'
        return self._type_annotation(node.type)

    def _type_annotation(self, type_expr):
        return "" if type_expr is None else f" : {self._type_repr(type_expr)}"

    def _parameter(self, node):
        annotated = node.target + self._annotation(node)
        if node.args:
            return f"{annotated} = {self._expression(node.args[0])}"
        return annotated

    def _type_repr(self, type_expr):
        """Source text for a type annotation, adding the globals it needs."""
        import ember
        origin, members = typing.get_origin(type_expr), typing.get_args(type_expr)
        if origin is not None and members:
            if type(type_expr).__module__ == "typing" and getattr(type_expr, "_name", None):
                name = self._add_global(f"typing_{type_expr._name}",
                                        getattr(typing, type_expr._name))
            else:
                name = self._type_repr(origin)
            return f"{name}[{', '.join(self._type_repr(member) for member in members)}]"
        if not isinstance(type_expr, type):
            return repr(type_expr)
        if getattr(builtins, type_expr.__name__, None) is type_expr:
            return type_expr.__name__
        if getattr(ember, type_expr.__name__, None) is type_expr:
            return f"ember.{type_expr.__name__}"
        return self._add_global(type_expr.__name__, type_expr)

    def _statement(self, node):
        if node.op == "output":
            return self.codegen.generate_output(node.args[0], repr_fn=self._expression)
        return f"{node.name}{self._annotation(node)} = {self._value(node)}"

    def _value(self, node):
        """The expression a (non-output) node computes."""
        args, kwargs = node.args, node.kwargs
        if node.op == "get_attr":
            return _format_target(self.root, node.target)
        if node.op == "call_module":
            return (f"{_format_target(self.root, node.target)}"
                    f"({self._call_arguments(args, kwargs)})")
        if node.op == "call_method":
            return (f"{self._expression(args[0])}.{node.target}"
                    f"({self._call_arguments(args[1:], kwargs)})")
        if node.meta.get("is_wrapped", False):  # registered with wrap(): say so in the code
            self.wrapped.setdefault(self._function_name(node.target))
        return self._function_call(node.target, args, kwargs)

    def _function_call(self, function, args, kwargs):
        if not kwargs:
            if function in BINARY_SYMBOLS and len(args) == 2:
                return (f"{self._expression(args[0])} {BINARY_SYMBOLS[function]} "
                        f"{self._expression(args[1])}")
            if function in UNARY_SYMBOLS and len(args) == 1:
                return f"{UNARY_SYMBOLS[function]}{self._expression(args[0])}"
            if function is operator.getitem and len(args) == 2:
                return f"{self._expression(args[0])}[{self._expression(args[1])}]"
            if (function is builtins.getattr and len(args) == 2 and isinstance(args[1], str)
                    and args[1].isidentifier()):
                return f"{self._expression(args[0])}.{args[1]}"
        return f"{self._function_name(function)}({self._call_arguments(args, kwargs)})"

    def _function_name(self, function):
        name = qualified_name(function)
        if name.startswith("builtins."):
            return name[len("builtins."):]
        head = name.split(".")[0]
        if head in ("ember", "operator"):
            return name
        # torch.fx's global name: the module and name, dots made underscores
        # (``__main___sigmoid_lowp``).
        name = getattr(function, "__name__", "fn")
        module = getattr(function, "__module__", None)
        return self._add_global(f"{module}.{name}" if module else name, function)

    def _add_global(self, hint, value):
        for existing, known in self.globals.items():
            if known is value:
                return existing
        name = self.global_names.create_name(hint)
        self.globals[name] = value
        return name

    def _call_arguments(self, args, kwargs):
        pieces = [self._expression(arg) for arg in args]
        pieces += [f"{key} = {self._expression(value)}" for key, value in kwargs.items()]
        return ", ".join(pieces)

    def _expression(self, value):
        import ember
        if isinstance(value, Node):
            return value.name
        if isinstance(value, tuple) and not hasattr(value, "_fields"):
            inner = ", ".join(self._expression(item) for item in value)
            return f"({inner},)" if len(value) == 1 else f"({inner})"
        if isinstance(value, list):
            return "[" + ", ".join(self._expression(item) for item in value) + "]"
        if isinstance(value, dict):
            return "{" + ", ".join(f"{self._expression(key)}: {self._expression(item)}"
                                   for key, item in value.items()) + "}"
        if isinstance(value, slice):
            return (f"slice({self._expression(value.start)}, {self._expression(value.stop)}, "
                    f"{self._expression(value.step)})")
        if value is None or value is Ellipsis or isinstance(value, (bool, int, float, str)):
            return repr(value)
        if isinstance(value, ember.dtype):
            return repr(value)
        if isinstance(value, ember.device):
            return f"device({str(value)!r})"
        return self._add_global(f"_{type(value).__name__.lower()}_constant", value)


_STACK_FRAME = re.compile(r'^File "(.+)", line (\d+), in (.+)$')


def _summarise_stack_trace(stack_trace):
    """``File: path:line in function, code: source`` for the innermost frame of a recorded
    stack trace, or None."""
    if not stack_trace:
        return None
    lines = stack_trace.strip().split("\n")
    for index in range(len(lines) - 2, -1, -1):
        frame = _STACK_FRAME.match(lines[index].strip())
        if frame:
            path, line, function = frame.groups()
            return f"File: {path}:{line} in {function}, code: {lines[index + 1].strip()}"
    return None


def _dtype_abbreviation(dtype):
    """torch's short dtype names: ``f32``, ``bf16``, ``i64``, ``u8``, ``b8``, ``c64``."""
    kind = ("b" if dtype.name == "bool" else "bf" if dtype.name == "bfloat16"
            else "c" if dtype.is_complex else "f" if dtype.is_floating_point
            else "i" if dtype.is_signed else "u")
    return f"{kind}{dtype.itemsize * 8}"


def _describe_example_value(value):
    """``f32[4, 2]`` for a tensor or ``TensorMetadata`` (``Parameter(f32[2])`` for a tensor
    subclass), else None."""
    import ember

    from .passes.shape_prop import TensorMetadata
    if not isinstance(value, (ember.Tensor, TensorMetadata)):
        return None
    text = f"{_dtype_abbreviation(value.dtype)}[{', '.join(str(n) for n in value.shape)}]"
    if isinstance(value, ember.Tensor) and type(value) is not ember.Tensor:
        return f"{type(value).__name__}({text})"
    return text


def _format_target(root, target):
    expression = root
    for atom in target.split("."):
        expression = (f"{expression}.{atom}" if atom.isidentifier()
                      else f'getattr({expression}, "{atom}")')
    return expression
