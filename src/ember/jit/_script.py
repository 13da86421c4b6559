"""``ember.jit.script`` for functions: a subset of Python compiled from the AST into the graph IR.

The subset: assignments to names (``a = ...``, ``a, b = ...``, ``a += ...``), ``if``/``else``
(on tensors or Python values), ``for i in range(...)`` loops, one ``return`` at the end;
expressions built from names, literals, arithmetic and comparison operators, subscripts,
tensor attributes and methods, and calls of ember's public functions (``ember.*``,
``ember.nn.functional.*``, ``ember.linalg.*``, ``ember.special.*``) and of a few builtins.

Nodes:

* ``call`` nodes call a function by its public name (``ember.relu``, ``operator.add``,
  ``builtins.range``) or a method of a tensor (``method:sum``), with their arguments given by a
  template (``{"v": i}``: the node's i-th input, ``{"c": literal}``); the public functions
  dispatch to the primitives, so the graph is not tied to the shapes of any example;
* ``if`` nodes hold two blocks (sub-graphs over the node's inputs) and return the values the
  branches assign; ``loop`` nodes hold one block run for each value of a ``range``, carrying
  the values the body reassigns.

Loading a scripted graph resolves names only inside those namespaces, calls methods only on
ember tensors and reads no attribute whose name starts with ``_``.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import operator
import textwrap
import warnings

from .._tensor import Tensor
from ._ir import Graph, Node
from ._script_library import CALL_METHOD, call_method
from .frontend import UnsupportedNodeError

__all__ = ["script_function", "resolve", "CALL", "IF", "LOOP"]

CALL, IF, LOOP = "call", "if", "loop"

_BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "truediv",
           ast.FloorDiv: "floordiv", ast.Mod: "mod", ast.Pow: "pow", ast.MatMult: "matmul",
           ast.BitAnd: "and_", ast.BitOr: "or_", ast.BitXor: "xor"}
_CMPOPS = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq",
           ast.NotEq: "ne"}
_UNARY = {ast.USub: "neg", ast.UAdd: "pos", ast.Invert: "invert", ast.Not: "not_"}
_OPERATOR_NAMES = set(_BINOPS.values()) | set(_CMPOPS.values()) | set(_UNARY.values()) | {
    "getitem", "setitem", "is_", "is_not", "contains", "truth"} | {
    "i" + name.rstrip("_") for name in _BINOPS.values()}
_BUILTIN_NAMES = {"range", "len", "float", "int", "bool", "min", "max", "abs", "slice",
                  "tuple", "list", "str"}


def _raise(kind, message):
    """A scripted ``raise``: ``ember.jit.Error`` naming the builtin exception type, as
    torch's interpreter raises ``torch.jit.Error("builtins.ValueError: ...")``."""
    from ._annotations import Error

    error = getattr(builtins, kind, None)
    if not (isinstance(error, type) and issubclass(error, Exception)):
        kind = "RuntimeError"
    raise Error(f"builtins.{kind}: {message}")


def _set_grad(enabled):
    """Set the grad mode (a scripted ``with ember.no_grad()``); returns the previous one."""
    from ..autograd.grad_mode import state

    previous = state.enabled
    state.enabled = bool(enabled)
    return previous


# the methods of TorchScript's List type a scripted method may call
LIST_METHODS = frozenset({"append", "extend", "insert", "pop", "clear", "reverse", "index",
                          "count", "copy", "remove"})
# the types a scripted ``isinstance`` tests at run time, by TorchScript's names
TYPE_NAMES = {"int": int, "float": float, "bool": bool, "str": str, "list": list,
              "tuple": tuple, "dict": dict, "NoneType": type(None), "Tensor": Tensor}


def _isinstance(value, names):
    """A scripted ``isinstance(value, types)``: a bool is not an int nor a float, as in
    TorchScript's types."""
    for name in names:
        if name in ("int", "float") and isinstance(value, bool):
            continue
        if isinstance(value, TYPE_NAMES[name]):
            return True
    return False


_HELPERS = {"jit.tuple": lambda *items: items, "jit.list": lambda *items: list(items),
            "jit.zip": lambda *items: list(zip(*items)),
            "jit.enumerate": lambda items, start=0: list(enumerate(items, start)),
            "jit.isinstance": _isinstance,
            # a list or dict literal is a new one on every run (the code may add to it)
            "jit.identity": lambda value: type(value)(value) if isinstance(value, (list, dict))
            else value,
            "jit.dict": lambda *pairs: dict(zip(pairs[::2], pairs[1::2])),
            "jit.format": lambda *parts: "".join(str(p) for p in parts),
            "jit.raise": _raise, "jit.set_grad": _set_grad,
            "jit.warn": lambda message: warnings.warn(message, stacklevel=3)}


def _namespaces():
    import ember
    import ember.linalg
    import ember.nn.functional
    import ember.special

    return {"ember": ember, "ember.nn.functional": ember.nn.functional,
            "ember.linalg": ember.linalg, "ember.special": ember.special,
            "ember.nn.utils.rnn": ember.nn.utils.rnn}


def resolve(name, where="<graph>"):
    """The callable a ``call`` node names (only from the allowed namespaces)."""
    if name.startswith("method:"):
        method = name[len("method:"):]
        if method.startswith("_"):
            raise RuntimeError(f"ember.jit: refusing private method {method!r} in {where}")

        def call(receiver, *args, **kwargs):
            if not (isinstance(receiver, Tensor) or isinstance(receiver, list)
                    and method in LIST_METHODS):
                raise RuntimeError(f"ember.jit: method {method!r} called on a "
                                   f"{type(receiver).__name__}, not a Tensor")
            return getattr(receiver, method)(*args, **kwargs)
        return call
    if name.startswith("attr:"):
        attr = name[len("attr:"):]
        if attr.startswith("_"):
            raise RuntimeError(f"ember.jit: refusing private attribute {attr!r} in {where}")

        def read(receiver):
            if not isinstance(receiver, Tensor):
                raise RuntimeError(f"ember.jit: attribute {attr!r} read from a "
                                   f"{type(receiver).__name__}, not a Tensor")
            return getattr(receiver, attr)
        return read
    if name.startswith(CALL_METHOD) and name.endswith('"]'):
        return call_method(name[len(CALL_METHOD):-2], where)
    if name in _HELPERS:
        return _HELPERS[name]
    module, _, attr = name.rpartition(".")
    if module == "operator" and attr in _OPERATOR_NAMES:
        return getattr(operator, attr)
    if module == "builtins" and attr in _BUILTIN_NAMES:
        return getattr(builtins, attr)
    space = _namespaces().get(module)
    if space is not None and not attr.startswith("_") and _allowed(getattr(space, attr, None)):
        return getattr(space, attr)
    raise RuntimeError(f"ember.jit: unknown function '{name}' in {where}; refusing to load")


# functions a graph may call: computations only (ember.save/load and other I/O live elsewhere)
_ALLOWED_MODULES = ("ember.ops.", "ember.nn._functional", "ember.nn.functional",
                    "ember.special", "ember.linalg", "ember.fft", "ember._tensor",
                    "ember.nn.utils.rnn")


def _allowed(obj):
    # a public function is ember.overrides' wrapper: judge the code it runs
    obj = getattr(obj, "__torch_function_implementation__", obj)
    return callable(obj) and isinstance(getattr(obj, "__module__", None), str) and \
        obj.__module__.startswith(_ALLOWED_MODULES)


_NAMES = {}


def _public_name(obj):
    if not _NAMES:
        for module, space in _namespaces().items():
            for attr, value in vars(space).items():
                if not attr.startswith("_") and _allowed(value):
                    _NAMES.setdefault(id(value), (value, f"{module}.{attr}"))
                    # the function a public wrapper runs (``nn.Conv2d._function``) calls
                    # the same thing under the wrapper's name
                    inner = getattr(value, "__torch_function_implementation__", None)
                    if inner is not None:
                        _NAMES.setdefault(id(inner), (inner, f"{module}.{attr}"))
    found = _NAMES.get(id(obj))
    if found is not None and found[0] is obj:
        return found[1]
    if obj in (range, len, float, int, bool, min, max, abs, slice, tuple, list, str):
        return f"builtins.{obj.__name__}"
    return None


class _Unsupported(UnsupportedNodeError):
    pass


class _Compiler:
    """Compiles one function body into a graph (blocks recursively)."""

    def __init__(self, fn):
        self.fn = fn
        self.globals = fn.__globals__
        self.closure = inspect.getclosurevars(fn).nonlocals if fn.__closure__ else {}
        self.filename = inspect.getsourcefile(fn) or "<string>"

    def fail(self, node, what):
        raise _Unsupported(f"ember.jit.script: {what} is not supported (line "
                           f"{getattr(node, 'lineno', '?')} of {self.fn.__qualname__}); "
                           "use ember.jit.trace for code outside the scriptable subset")

    # ---------------------------------------------------------- blocks

    def compile_function(self):
        source = textwrap.dedent(inspect.getsource(self.fn))
        tree = ast.parse(source)
        fdef = tree.body[0]
        if not isinstance(fdef, ast.FunctionDef):
            self.fail(fdef, "a lambda")
        args = fdef.args
        if args.vararg or args.kwarg or args.kwonlyargs or args.defaults or args.posonlyargs:
            self.fail(fdef, "*args, **kwargs, keyword-only or default arguments")
        graph = Graph()
        env = {}
        for a in args.args:
            v = graph.new_value(name=a.arg)
            graph.inputs.append(v)
            env[a.arg] = v
        body = [s for s in fdef.body if not _is_docstring(s)]
        if not body or not isinstance(body[-1], ast.Return) or body[-1].value is None:
            self.fail(fdef, "a function that does not end with `return <value>`")
        self.block(graph, body[:-1], env)
        graph.output = self.output_tree(graph, body[-1].value, env)
        graph.output = _map_literals(graph.output, lambda lit: self.value(graph, lit))
        return graph

    def output_tree(self, graph, expr, env):
        if isinstance(expr, ast.Tuple):
            return ("tuple", [self.output_tree(graph, e, env) for e in expr.elts])
        if isinstance(expr, ast.List):
            return ("list", [self.output_tree(graph, e, env) for e in expr.elts])
        return self.expr(graph, expr, env)

    def block(self, graph, statements, env):
        for s in statements:
            self.statement(graph, s, env)

    def statement(self, graph, s, env):
        if isinstance(s, ast.Assign):
            if len(s.targets) != 1:
                self.fail(s, "chained assignment")
            self.assign(graph, s.targets[0], self.value(graph, self.expr(graph, s.value, env)),
                        env, s)
        elif isinstance(s, ast.AugAssign):
            if not isinstance(s.target, ast.Name) or type(s.op) not in _BINOPS:
                self.fail(s, "this augmented assignment")
            left = self.name(s.target, env)
            right = self.expr(graph, s.value, env)
            env[s.target.id] = self.call(graph, f"operator.{_BINOPS[type(s.op)]}",
                                         [left, right])
        elif isinstance(s, ast.If):
            self.if_statement(graph, s, env)
        elif isinstance(s, ast.For):
            self.for_statement(graph, s, env)
        elif isinstance(s, ast.Pass) or _is_docstring(s):
            pass
        elif isinstance(s, ast.Return):
            self.fail(s, "return before the end of the function")
        else:
            self.fail(s, f"the statement {type(s).__name__}")

    def assign(self, graph, target, value, env, s):
        if isinstance(target, ast.Name):
            env[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)) and all(
                isinstance(t, ast.Name) for t in target.elts):
            for i, t in enumerate(target.elts):
                env[t.id] = self.call(graph, "operator.getitem", [value, ("c", i)])
        else:
            self.fail(s, "assignment to anything but names")

    def sub_block(self, statements, env, names, extra_inputs=()):
        """A block over the values ``names`` of ``env`` (and ``extra_inputs`` first); returns
        (block graph, env after the block)."""
        block = Graph()
        inner = {}
        for name in extra_inputs:
            v = block.new_value(name=name)
            block.inputs.append(v)
            inner[name] = v
        for name in names:
            v = block.new_value(name=name)
            block.inputs.append(v)
            inner[name] = v
        self.block(block, statements, inner)
        return block, inner

    def if_statement(self, graph, s, env):
        cond = self.value(graph, self.expr(graph, s.test, env))
        names = sorted(env)
        then_block, then_env = self.sub_block(s.body, env, names)
        else_block, else_env = self.sub_block(s.orelse, env, names)
        assigned = sorted(n for n in set(then_env) | set(else_env)
                          if then_env.get(n) is not _input_of(then_block, n)
                          or else_env.get(n) is not _input_of(else_block, n))
        # a name first bound in only one branch stays local to it (using it after is an error)
        assigned = [n for n in assigned if n in then_env and n in else_env]
        then_block.output = ("tuple", [then_env[n] for n in assigned])
        else_block.output = ("tuple", [else_env[n] for n in assigned])
        outs = [self.fresh(graph, n) for n in assigned]
        graph.nodes.append(Node(IF, None, [cond] + [env[n] for n in names],
                                {"names": names, "then": then_block, "else": else_block},
                                outs))
        env.update(zip(assigned, outs))

    def for_statement(self, graph, s, env):
        it = s.iter
        if not (isinstance(s.target, ast.Name) and isinstance(it, ast.Call)
                and isinstance(it.func, ast.Name) and it.func.id == "range"
                and 1 <= len(it.args) <= 3 and not it.keywords and not s.orelse):
            self.fail(s, "a for loop other than `for i in range(...)`")
        bounds = [self.expr(graph, a, env) for a in it.args]
        if len(bounds) == 1:
            bounds = [("c", 0), bounds[0], ("c", 1)]
        elif len(bounds) == 2:
            bounds.append(("c", 1))
        bounds = [self.value(graph, b) for b in bounds]
        names = sorted(env)
        body, body_env = self.sub_block(s.body, env, names, extra_inputs=(s.target.id,))
        carried = [n for n in names if body_env[n] is not _input_of(body, n)]
        # names first bound inside the body stay local to it
        body.output = ("tuple", [body_env[n] for n in carried])
        outs = [self.fresh(graph, n) for n in carried]
        graph.nodes.append(Node(LOOP, None, bounds + [env[n] for n in names],
                                {"names": names, "carried": carried, "body": body}, outs))
        env.update(zip(carried, outs))

    @staticmethod
    def fresh(graph, name):
        """A new value printed as ``name.<id>`` (a name rebound by control flow)."""
        v = graph.new_value()
        v.name = f"{name}.{v.id}"
        return v

    # ---------------------------------------------------------- expressions

    def name(self, node, env):
        if node.id in env:
            return env[node.id]
        self.fail(node, f"the free name '{node.id}' (only arguments and local names)")

    def value(self, graph, arg):
        """A graph value for an argument (a literal becomes a ``call`` of nothing)."""
        if isinstance(arg, tuple):
            return self.call(graph, "jit.identity", [arg])
        return arg

    def call(self, graph, fn, args, kwargs=None):
        inputs, template = [], []
        for a in args:
            if isinstance(a, tuple):
                template.append({"c": a[1]})
            else:
                template.append({"v": len(inputs)})
                inputs.append(a)
        kw = {}
        for k, a in (kwargs or {}).items():
            if isinstance(a, tuple):
                kw[k] = {"c": a[1]}
            else:
                kw[k] = {"v": len(inputs)}
                inputs.append(a)
        out = graph.new_value()
        params = {"fn": fn, "args": template, "kwargs": kw}
        graph.nodes.append(Node(CALL, resolve(fn), inputs, params, [out]))
        return out

    def expr(self, graph, e, env):
        """A value, or ``("c", literal)`` for a compile-time literal."""
        if isinstance(e, ast.Constant):
            if not isinstance(e.value, (int, float, bool, complex, str, type(None))):
                self.fail(e, f"the literal {e.value!r}")
            return ("c", e.value)
        if isinstance(e, ast.Name):
            if e.id in env:
                return env[e.id]
            if e.id in ("True", "False", "None"):
                return ("c", {"True": True, "False": False, "None": None}[e.id])
            self.fail(e, f"the free name '{e.id}' as a value")
        if isinstance(e, ast.BinOp) and type(e.op) in _BINOPS:
            return self.call(graph, f"operator.{_BINOPS[type(e.op)]}",
                             [self.expr(graph, e.left, env), self.expr(graph, e.right, env)])
        if isinstance(e, ast.UnaryOp) and type(e.op) in _UNARY:
            operand = self.expr(graph, e.operand, env)
            if isinstance(operand, tuple) and isinstance(e.op, ast.USub):
                return ("c", -operand[1])
            return self.call(graph, f"operator.{_UNARY[type(e.op)]}", [operand])
        if isinstance(e, ast.Compare) and len(e.ops) == 1 and type(e.ops[0]) in _CMPOPS:
            return self.call(graph, f"operator.{_CMPOPS[type(e.ops[0])]}",
                             [self.expr(graph, e.left, env),
                              self.expr(graph, e.comparators[0], env)])
        if isinstance(e, ast.Subscript):
            return self.call(graph, "operator.getitem",
                             [self.expr(graph, e.value, env), self.index(graph, e.slice, env)])
        if isinstance(e, ast.Attribute):
            return self.call(graph, f"attr:{e.attr}", [self.expr(graph, e.value, env)])
        if isinstance(e, (ast.Tuple, ast.List)):
            items = [self.expr(graph, x, env) for x in e.elts]
            if all(isinstance(i, tuple) for i in items):
                return ("c", tuple(i[1] for i in items))
            kind = "tuple" if isinstance(e, ast.Tuple) else "list"
            return self.call(graph, f"jit.{kind}", items)
        if isinstance(e, ast.Call):
            return self.call_expr(graph, e, env)
        self.fail(e, f"the expression {type(e).__name__}")

    def index(self, graph, e, env):
        if isinstance(e, ast.Slice):
            parts = [self.expr(graph, p, env) if p is not None else ("c", None)
                     for p in (e.lower, e.upper, e.step)]
            if all(isinstance(p, tuple) for p in parts):
                return ("c", slice(*(p[1] for p in parts)))
            return self.call(graph, "builtins.slice", parts)
        if isinstance(e, ast.Tuple):
            items = [self.index(graph, x, env) for x in e.elts]
            if all(isinstance(i, tuple) for i in items):
                return ("c", tuple(i[1] for i in items))
            return self.call(graph, "jit.tuple", items)  # x[i, j:] with i, j known at run time
        return self.expr(graph, e, env)

    def call_expr(self, graph, e, env):
        args = []
        for a in e.args:
            if isinstance(a, ast.Starred):
                self.fail(a, "*args in a call")
            args.append(self.expr(graph, a, env))
        kwargs = {}
        for k in e.keywords:
            if k.arg is None:
                self.fail(k, "**kwargs in a call")
            kwargs[k.arg] = self.expr(graph, k.value, env)
        f = e.func
        if isinstance(f, ast.Attribute):
            target = self.static(f.value)
            if target is None:  # a method of a value: x.relu()
                receiver = self.expr(graph, f.value, env)
                return self.call(graph, f"method:{f.attr}", [receiver] + args, kwargs)
            obj = getattr(target, f.attr, None)
        elif isinstance(f, ast.Name) and f.id not in env:
            obj = self.static(f)
        else:
            obj = None
        name = _public_name(obj) if obj is not None else None
        if name is None:
            self.fail(e, f"calling {ast.unparse(f)} (only ember's public functions and "
                         "tensor methods)")
        return self.call(graph, name, args, kwargs)

    def static(self, e):
        """The Python object a name or dotted name denotes in the function's globals (None
        for local values)."""
        if isinstance(e, ast.Name):
            if e.id in self.closure:
                return self.closure[e.id]
            if e.id in self.globals:
                return self.globals[e.id]
            return getattr(builtins, e.id, None)
        if isinstance(e, ast.Attribute):
            base = self.static(e.value)
            return None if base is None else getattr(base, e.attr, None)
        return None


def _map_literals(tree, fn):
    if isinstance(tree, tuple) and tree and tree[0] == "c":
        return fn(tree)
    if isinstance(tree, tuple) and tree and tree[0] in ("tuple", "list"):
        return (tree[0], [_map_literals(t, fn) for t in tree[1]])
    return tree


def _input_of(block, name):
    for v in block.inputs:
        if v.name == name:
            return v
    return None


def _is_docstring(s):
    return isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) and \
        isinstance(s.value.value, str)


def script_function(fn):
    """Compile ``fn`` (see the module docstring); raises NotImplementedError outside the
    subset."""
    return _Compiler(fn).compile_function()
