"""``ember.jit.script(module)``: a module's ``forward`` and exported methods compiled from the AST.

The compiler of ``_script.py`` is extended with what methods need:

* ``self`` stands for the module at compile time. ``self.weight`` (a parameter or buffer)
  becomes a ``prim::GetAttr`` node read at run time, so the scripted module shares its tensors;
  ``self.training`` is read at run time too (``train()``/``eval()`` work); any other attribute
  (``Final`` or ``__constants__`` values, ints, tuples, strings) is a compile-time constant;
* calls of submodules (``self.fc(x)``) and of methods (``self.helper(x)``) are compiled
  recursively and inlined, so a saved file needs no Python class; iterating a ``Sequential``
  or ``ModuleList`` unrolls the loop (as TorchScript does);
* expressions whose operands are all constants are folded, and an ``if`` on a constant keeps
  only the branch taken (``if self.bias is not None``);
* ``return`` may appear inside ``if`` branches; ``while`` loops become loop nodes with a
  condition block; ``break``, ``continue`` and ``return`` inside loops are rewritten with flags;
  ``raise`` raises at run time;
* methods marked ``@ember.jit.ignore`` are called as Python (such a module cannot be saved).

Example::

    >>> class Net(ember.nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.fc = ember.nn.Linear(3, 3)
    ...     def forward(self, x, n: int):
    ...         for _ in range(n):
    ...             x = self.fc(x).relu()
    ...         return x
    >>> scripted = ember.jit.script(Net())  # doctest: +SKIP
"""

from __future__ import annotations

import ast
import builtins
import inspect
import operator
import re
import textwrap
import warnings

from .._tensor import Tensor
from ..nn.modules.module import Module
from ._ir import CONSTANT, GET_ATTR, WHILE, Graph, Node, Value
from ._script import (
    _BINOPS,
    _CMPOPS,
    CALL,
    IF,
    LIST_METHODS,
    LOOP,
    _Compiler,
    _is_docstring,
    _map_literals,
    _public_name,
)
from ._script_jumps import RESULT, jumps, lower_jumps
from ._script_library import CALL_METHOD, describe, is_library_module, library_roots
from ._scripted import ScriptedModule
from .frontend import NotSupportedError, UnsupportedNodeError

__all__ = ["script_module"]

# builtins evaluated at compile time when all their arguments are constants
_STATIC_BUILTINS = (type, len, isinstance, int, float, bool, str, tuple, list, min, max, abs,
                    hasattr, getattr, range, enumerate, zip, sorted, reversed, dict, sum, any,
                    all, divmod, round)
_LITERALS = (int, float, bool, str, type(None), complex)
# comprehensions are evaluated when scripting, over constants only
_COMPREHENSIONS = (ast.ListComp, ast.GeneratorExp, ast.SetComp, ast.DictComp)
_CONTAINER_TYPES = ("Sequential", "ModuleList")
_DICT_CONTAINERS = ("ModuleDict",)
_UNSUPPORTED_NODES = {ast.Lambda: "Lambda aren't supported", ast.Try: "try blocks aren't supported",
                      ast.Global: "global variables aren't supported",
                      ast.Nonlocal: "nonlocal variables aren't supported",
                      ast.Yield: "yield aren't supported"}


class _SelfRef:
    """A module (``self`` or one of its submodules) while compiling."""

    __slots__ = ("module", "prefix")

    def __init__(self, module, prefix):
        self.module = module
        self.prefix = prefix

    def dotted(self, attr):
        return f"{self.prefix}.{attr}" if self.prefix else attr


class _MethodRef:
    """``self.method`` before it is called."""

    __slots__ = ("ref", "name")

    def __init__(self, ref, name):
        self.ref = ref
        self.name = name


def _is_const(x):
    return isinstance(x, tuple) and len(x) == 2 and x[0] == "c"


def _is_literal(v):
    if isinstance(v, (tuple, list)):
        return all(_is_literal(x) for x in v)
    return isinstance(v, _LITERALS)


# ---------------------------------------------------------------- annotations


def _type_text(annotation, default_is_none):
    """TorchScript's spelling of a parameter annotation (``Tensor`` when absent)."""
    if annotation is None:
        return "Optional[Tensor]" if default_is_none else "Tensor"
    text = re.sub(r"\b[A-Za-z_]\w*\.", "", ast.unparse(annotation)).replace(" ", "")
    text = re.sub(r"\blist\[", "List[", re.sub(r"\btuple\[", "Tuple[", text))
    match = re.fullmatch(r"(.+)\|None", text)
    return f"Optional[{match.group(1)}]" if match else text


# ---------------------------------------------------------------- the method compiler


class _Block(Graph):
    """A graph whose values are numbered by a counter shared by all the blocks of one
    compilation, so that the text forms never reuse a name."""

    def __init__(self, counter):
        super().__init__()
        self._counter = counter

    def new_value(self, shape=None, dtype=None, name=None):
        value = Value(self._counter[0], shape, dtype, name)
        self._counter[0] += 1
        self._next = self._counter[0]
        return value


class _Unit:
    """What the compilations of one module share: the dotted path of every submodule and the
    stack of methods being inlined (to refuse recursion)."""

    def __init__(self, root):
        self.root = root
        self.prefixes = {}
        for prefix, sub in root.named_modules(remove_duplicate=False):
            self.prefixes.setdefault(id(sub), prefix)
        self.stack = []
        self.counter = [0]
        self.library = {}  # id(module) -> whether it is one of ember's own layers

    def is_library(self, module):
        """Whether calls of ``module`` stay opaque calls (``_script_library.py``)."""
        found = self.library.get(id(module))
        if found is None:
            found = self.library[id(module)] = is_library_module(module)
        return found

    def ref(self, module):
        prefix = self.prefixes.get(id(module))
        if prefix is None:
            raise RuntimeError(f"ember.jit.script: module {type(module).__name__} is not a "
                               "submodule of the scripted module")
        return _SelfRef(module, prefix)


class _MethodCompiler(_Compiler):
    """Compiles (or inlines) one method of one module of a :class:`_Unit`."""

    def __init__(self, unit, ref, name, function=None):
        fn = inspect.unwrap(function or getattr(type(ref.module), name))
        super().__init__(fn)
        self.unit = unit
        self.ref = ref  # None for a plain function the module calls
        self.method = name or fn.__name__
        self.skip = 0 if ref is None else 1  # ``self`` is not a parameter
        self.non_none = set()
        self.tensors = set()  # values known to be tensors (for isinstance)
        self.top = None

    def fail(self, node, what):
        kind = _UNSUPPORTED_NODES.get(type(node))
        if kind is not None:
            raise UnsupportedNodeError(f"{kind} (line {getattr(node, 'lineno', '?')} of "
                                       f"{self.fn.__qualname__})")
        super().fail(node, what)

    def parse(self):
        try:
            source = textwrap.dedent(inspect.getsource(self.fn))
        except (OSError, TypeError) as error:
            raise RuntimeError(f"ember.jit.script: cannot read the source of "
                               f"{self.fn.__qualname__} ({error})") from None
        fdef = ast.parse(source).body[0]
        for node in ast.walk(fdef):
            if type(node) in _UNSUPPORTED_NODES and node is not fdef:
                self.fail(node, "")
        args = fdef.args
        if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
            raise NotSupportedError(
                "Compiled functions can't take variable number of arguments or use "
                f"keyword-only arguments with defaults ({self.fn.__qualname__})")
        return fdef

    def signature(self, fdef):
        """``[(name, type text, default, has default)]`` of the parameters after ``self``."""
        params = fdef.args.args[self.skip:]
        defaults = [None] * (len(params) - len(fdef.args.defaults)) + list(fdef.args.defaults)
        out = []
        for p, d in zip(params, defaults):
            default = None
            if d is not None:
                value = self.expr(Graph(), d, {})
                if not _is_const(value):
                    self.fail(d, "a default value that is not a constant")
                default = value[1]
            is_none = d is not None and default is None
            out.append((p.arg, _type_text(p.annotation, is_none), default, d is not None))
        return out

    # ---------------------------------------------------------- whole methods

    def compile_method(self):
        """A graph whose inputs are the method's parameters, and its signature."""
        fdef = self.parse()
        signature = self.signature(fdef)
        graph = self.top = _Block(self.unit.counter)
        env = {fdef.args.args[0].arg: self.ref} if self.skip else {}
        for name, type_text, _, _ in signature:
            v = graph.new_value(name=name, dtype=None if type_text == "Tensor" else type_text)
            graph.inputs.append(v)
            env[name] = v
            if type_text in ("Tensor", "int", "float", "bool", "str"):
                self.non_none.add(v)
            if type_text == "Tensor":
                self.tensors.add(v)
        self.unit.stack.append((id(self.ref.module), self.method))
        result = self.run(graph, fdef.body, env)
        self.unit.stack.pop()
        tree = result[1] if result and result[0] == "return" else ("c", None)
        graph.output = _map_literals(tree, lambda lit: self.value(graph, lit))
        return graph, signature

    def compile_library_call(self):
        """For one of ember's own layers scripted by itself: a graph that calls the method
        of the layer, with the method's signature (an argument without annotation is a
        ``Tensor``, as in TorchScript, unless it has a default: then the layer accepts what
        its own code accepts, a tuple state or a PackedSequence)."""
        fdef = self.parse()
        signature = [(name, "Any" if p.annotation is None and has else type_text, default, has)
                     for p, (name, type_text, default, has)
                     in zip(fdef.args.args[self.skip:], self.signature(fdef))]
        graph = self.top = _Block(self.unit.counter)
        for name, type_text, _, _ in signature:
            v = graph.new_value(name=name, dtype=None if type_text in ("Any", "Tensor")
                                else type_text)
            graph.inputs.append(v)
        receiver = read_module(graph, "")
        graph.output = self.call(graph, f'{CALL_METHOD}{self.method}"]',
                                 [receiver] + list(graph.inputs))
        return graph, signature

    def inline(self, graph, top, args, kwargs, node):
        """Compile the method into ``graph`` on the given argument values; its result."""
        key = (id(self.ref.module) if self.ref else id(self.fn), self.method)
        if key in self.unit.stack:
            raise RuntimeError(f"ember.jit.script: recursive call of {self.fn.__qualname__} "
                               "is not supported (as in TorchScript)")
        fdef = self.parse()
        signature = self.signature(fdef)
        if len(args) > len(signature):
            raise RuntimeError(f"{self.method}() expected at most {len(signature) + 1} "
                               f"argument(s) but received {len(args) + 1} argument(s) "
                               f"(line {node.lineno})")
        env = {fdef.args.args[0].arg: self.ref} if self.skip else {}
        for i, (name, _, default, has_default) in enumerate(signature):
            if i < len(args):
                env[name] = args[i]
            elif name in kwargs:
                env[name] = kwargs[name]
            elif has_default:
                env[name] = ("c", default)
            else:
                raise RuntimeError(f"{self.method}() Argument {name} not provided "
                                   f"(line {node.lineno})")
        self.top = top
        self.unit.stack.append(key)
        result = self.run(graph, fdef.body, env)
        self.unit.stack.pop()
        if not result or result[0] != "return":
            return ("c", None)
        return self.pack(graph, result[1])

    # ---------------------------------------------------------- statements

    def run(self, graph, statements, env):
        """Compile ``statements``; ``("return", tree)``, ``("raise",)`` or None (falls
        through)."""
        statements = [s for s in statements if not _is_docstring(s)]
        i = 0
        while i < len(statements):
            s = statements[i]
            rest = statements[i + 1:]
            if isinstance(s, ast.Return):
                if s.value is None:
                    return ("return", ("c", None))
                return ("return", self.output_tree(graph, s.value, env))
            if isinstance(s, ast.Raise):
                self.raise_statement(graph, s, env)
                return ("raise",)
            if isinstance(s, ast.If):
                test = self.expr(graph, s.test, env)
                if _is_const(test):
                    statements[i:i + 1] = list(s.body if test[1] else s.orelse)
                    continue
                if (_terminates(s.body) or _terminates(s.orelse)) and \
                        (_returns(s.body) or _returns(s.orelse)):
                    body = s.body if _terminates(s.body) else s.body + rest
                    orelse = s.orelse if _terminates(s.orelse) else s.orelse + rest
                    return self.returning_if(graph, test, body, orelse, env)
                self.dynamic_if(graph, test, s.body, s.orelse, env)
            elif isinstance(s, (ast.For, ast.While)) and jumps(s.body):
                number = self.unit.counter[0]
                self.unit.counter[0] += 1
                statements[i:i + 1] = lower_jumps(s, number, self.fail)
                continue
            else:
                self.statement(graph, s, env)
            i += 1
        return None

    def block(self, graph, statements, env):
        result = self.run(graph, statements, env)
        if result is not None and result[0] == "return":
            self.fail(statements[-1], "return inside a loop")
        return result

    def statement(self, graph, s, env):
        if isinstance(s, ast.Assign):
            if len(s.targets) != 1:
                self.fail(s, "chained assignment")
            self.bind(graph, s.targets[0], self.expr(graph, s.value, env), env, s)
        elif isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name) and s.value:
            self.bind(graph, s.target, self.expr(graph, s.value, env), env, s)
        elif isinstance(s, ast.AugAssign):
            if not isinstance(s.target, (ast.Name, ast.Subscript)) or type(s.op) not in _BINOPS:
                self.fail(s, "this augmented assignment")
            left = self.expr(graph, s.target, env)
            right = self.expr(graph, s.value, env)
            name = _BINOPS[type(s.op)].rstrip("_")
            result = self.call(graph, f"operator.i{name}", [left, right])
            self.bind(graph, s.target, result, env, s)  # x[i] += y writes the item back
        elif isinstance(s, ast.For):
            self.for_statement(graph, s, env)
        elif isinstance(s, ast.While):
            self.while_statement(graph, s, env)
        elif isinstance(s, ast.Expr):
            self.expr(graph, s.value, env)
        elif isinstance(s, ast.With):
            self.with_statement(graph, s, env)
        elif isinstance(s, (ast.Pass, ast.Assert)):
            pass  # asserts are not checked (torch checks them; see the docs)
        else:
            super().statement(graph, s, env)

    def with_statement(self, graph, s, env):
        """``with ember.no_grad():`` / ``enable_grad()``: the grad mode is set around the
        body (and restored by the caller if the body raises)."""
        from ..autograd.grad_mode import enable_grad, no_grad

        modes = {no_grad: False, enable_grad: True}
        flags = []
        for item in s.items:
            call = item.context_expr
            manager = self.expr(graph, call.func, env) if isinstance(call, ast.Call) else None
            if not (_is_const(manager) and manager[1] in modes and not call.args
                    and not call.keywords and item.optional_vars is None):
                self.fail(s, "a with statement other than `with ember.no_grad()` or "
                             "`with ember.enable_grad()`")
            flags.append(modes[manager[1]])
        saved = [self.call(graph, "jit.set_grad", [("c", flag)]) for flag in flags]
        if self.run(graph, s.body, env) is not None:
            self.fail(s, "return or raise inside a with block")
        for previous in reversed(saved):
            self.call(graph, "jit.set_grad", [previous])

    def bind(self, graph, target, value, env, s):
        if isinstance(target, ast.Name):
            env[target.id] = value
        elif isinstance(target, ast.Subscript):
            self.store_item(graph, target, value, env, s)
        elif isinstance(target, (ast.Tuple, ast.List)) and all(
                isinstance(t, (ast.Name, ast.Tuple, ast.List)) for t in target.elts):
            if _is_const(value):
                for t, item in zip(target.elts, value[1]):
                    self.bind(graph, t, self.constant(item), env, s)
                return
            if isinstance(value, tuple) and value and value[0] in ("tuple", "list"):
                for t, item in zip(target.elts, value[1]):
                    self.bind(graph, t, item, env, s)
                return
            for i, t in enumerate(target.elts):
                self.bind(graph, t, self.call(graph, "operator.getitem", [value, ("c", i)]),
                          env, s)
        else:
            self.fail(s, "assignment to anything but names")

    def store_item(self, graph, target, value, env, s):
        """``base[index] = value``: written in place at run time (a tensor, a list or a
        dict, as TorchScript writes them)."""
        if isinstance(value, (_SelfRef, _MethodRef)):
            self.fail(s, "storing a module")
        base = self.expr(graph, target.value, env)
        if _is_const(base) and isinstance(base[1], (list, dict)) and \
                isinstance(target.value, ast.Name):
            base = env[target.value.id] = self.value(graph, base)  # now a run-time container
        if not isinstance(base, Value):
            self.fail(s, "assignment into a value known when scripting")
        index = self.index(graph, target.slice, env)
        self.call(graph, "operator.setitem", [base, index, value])

    def raise_statement(self, graph, s, env):
        exc = s.exc
        kind, message = "Exception", ("c", "")
        if isinstance(exc, ast.Call) and isinstance(exc.func, ast.Name):
            kind = exc.func.id
            if exc.args:
                message = self.expr(graph, exc.args[0], env)
        elif isinstance(exc, ast.Name):
            kind = exc.id
        self.call(graph, "jit.raise", [("c", kind), message])

    def pack(self, graph, tree):
        """One value (or constant) for a return tree."""
        if isinstance(tree, tuple) and tree and tree[0] in ("tuple", "list"):
            items = [self.pack(graph, t) for t in tree[1]]
            if all(_is_const(i) for i in items):
                return ("c", tuple(i[1] for i in items) if tree[0] == "tuple"
                        else [i[1] for i in items])
            return self.call(graph, f"jit.{tree[0]}", items)
        return tree

    def output_tree(self, graph, expr, env):
        value = super().output_tree(graph, expr, env)
        if isinstance(value, (_SelfRef, _MethodRef)):
            self.fail(expr, "returning a module or a method")
        return value

    # ---------------------------------------------------------- control flow

    def values_of(self, env):
        """The names of ``env`` bound to run-time values (constants and modules stay
        compile-time)."""
        return [n for n in sorted(env) if isinstance(env[n], Value)]

    def sub_block(self, statements, env, names, extra_inputs=(), prologue=None):
        """A block over the values ``names`` of ``env`` (``extra_inputs`` first; ``prologue``
        compiles first); returns (block, env after it, env before it, how it ended)."""
        block = _Block(self.unit.counter)
        inner = {n: v for n, v in env.items() if not isinstance(v, Value)}
        for name in list(extra_inputs) + list(names):
            v = self.fresh(block, name)  # named x.<id>: a block input never shadows
            block.inputs.append(v)
            inner[name] = v
            if env.get(name) in self.non_none:
                self.non_none.add(v)
            if env.get(name) in self.tensors:
                self.tensors.add(v)
        start = dict(inner)
        if prologue is not None:
            prologue(block, inner)
        result = self.block(block, statements, inner) if statements is not None else None
        return block, inner, start, result

    def materialize(self, graph, env, loop):
        """Turn literal constants of ``env`` into values (before ``loop`` may rebind them);
        a None stays a constant (``if x is None`` folds) unless the loop assigns the name."""
        assigned = _assigned_names(loop.body)
        for name, v in list(env.items()):
            literal = _is_literal(list(v[1].items()) if isinstance(v[1], dict) else v[1]) \
                if _is_const(v) else False
            if literal and (v[1] is not None or name == RESULT or name in assigned):
                env[name] = self.value(graph, v)

    def branch_outputs(self, blocks, env):
        """Names rebound by a branch that falls through (and bound in every such branch);
        sets each block's output to its values for them."""
        open_blocks = [b for b in blocks if b[3] is None]
        changed = {n for _, inner, start, _ in open_blocks for n in inner
                   if inner[n] is not start.get(n)}
        names = sorted(n for n in changed if all(n in b[1] for b in open_blocks))
        for block, inner, _, _ in blocks:
            values = []
            for n in names:
                v = inner.get(n, ("c", None))
                if isinstance(v, (_SelfRef, _MethodRef)):
                    raise RuntimeError(f"ember.jit.script: '{n}' is bound to a module in a "
                                       f"branch of {self.fn.__qualname__}")
                values.append(self.value(block, v))
            block.output = ("tuple", values)
        return names

    def dynamic_if(self, graph, cond, body, orelse, env):
        cond = self.value(graph, cond)
        names = self.values_of(env)
        blocks = [self.sub_block(body, env, names), self.sub_block(orelse, env, names)]
        assigned = self.branch_outputs(blocks, env)
        outs = [self.fresh(graph, n) for n in assigned]
        graph.nodes.append(Node(IF, None, [cond] + [env[n] for n in names],
                                {"names": names, "then": blocks[0][0], "else": blocks[1][0]},
                                outs))
        env.update(zip(assigned, outs))

    def returning_if(self, graph, cond, body, orelse, env):
        cond = self.value(graph, cond)
        names = self.values_of(env)
        blocks = [self.sub_block_returning(s, env, names) for s in (body, orelse)]
        out = graph.new_value()
        graph.nodes.append(Node(IF, None, [cond] + [env[n] for n in names],
                                {"names": names, "then": blocks[0], "else": blocks[1]}, [out]))
        return ("return", out)

    def sub_block_returning(self, statements, env, names):
        block = _Block(self.unit.counter)
        inner = {n: v for n, v in env.items() if not isinstance(v, Value)}
        for name in names:
            v = self.fresh(block, name)  # named x.<id>: a block input never shadows
            block.inputs.append(v)
            inner[name] = v
        result = self.run(block, statements, inner)
        # falling through the end of the method, or raising, gives None
        tree = self.pack(block, result[1]) if result and result[0] == "return" else ("c", None)
        block.output = ("tuple", [self.value(block, tree)])
        return block

    def for_statement(self, graph, s, env):
        if s.orelse:
            self.fail(s, "for ... else")
        it = s.iter
        if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range" \
                and isinstance(s.target, ast.Name) and it.func.id not in env:
            return self.range_loop(graph, s, env)
        items = self.expr(graph, it, env)
        if isinstance(items, _SelfRef):
            if type(items.module).__name__ not in _CONTAINER_TYPES:
                self.fail(s, f"iterating over a {type(items.module).__name__}")
            items = ("c", list(items.module._modules.values()))
        if isinstance(items, Value):  # a list or a tensor known at run time
            return self.iterate(graph, s, env, items)
        if not _is_const(items):
            self.fail(s, "a for loop over a module method")
        for item in items[1]:  # unrolled, as TorchScript unrolls module lists
            self.bind(graph, s.target, self.constant(item), env, s)
            if self.block(graph, s.body, env) is not None:
                self.fail(s, "raise inside an unrolled loop")

    def range_loop(self, graph, s, env):
        bounds = [self.expr(graph, a, env) for a in s.iter.args]
        if not 1 <= len(bounds) <= 3 or s.iter.keywords:
            self.fail(s, "range() with these arguments")
        if len(bounds) == 1:
            bounds = [("c", 0), bounds[0], ("c", 1)]
        elif len(bounds) == 2:
            bounds.append(("c", 1))
        self.loop(graph, s, env, bounds, s.target.id)

    def iterate(self, graph, s, env, items):
        """``for item in values``: a loop over ``range(len(values))`` reading each item."""
        hidden = f"iter_{items.id}"
        env[hidden] = items
        count = self.call(graph, "builtins.len", [items])

        def read_item(block, inner):
            item = self.call(block, "operator.getitem", [inner[hidden], inner["index_"]])
            self.bind(block, s.target, item, inner, s)
        self.loop(graph, s, env, [("c", 0), count, ("c", 1)], "index_", read_item)
        del env[hidden]

    def loop(self, graph, s, env, bounds, index, prologue=None):
        bounds = [self.value(graph, b) for b in bounds]
        self.materialize(graph, env, s)
        names = [n for n in self.values_of(env) if n != index]
        body, inner, start, _ = self.sub_block(s.body, env, names, extra_inputs=(index,),
                                               prologue=prologue)
        carried = [n for n in names if inner[n] is not start[n]]
        body.output = ("tuple", [self.value(body, inner[n]) for n in carried])
        outs = [self.fresh(graph, n) for n in carried]
        graph.nodes.append(Node(LOOP, None, bounds + [env[n] for n in names],
                                {"names": names, "carried": carried, "body": body}, outs))
        env.update(zip(carried, outs))

    def while_statement(self, graph, s, env):
        if s.orelse:
            self.fail(s, "while ... else")
        self.materialize(graph, env, s)
        names = self.values_of(env)
        cond_block, cond_env, _, _ = self.sub_block(None, env, names)
        cond_block.output = self.value(cond_block, self.expr(cond_block, s.test, cond_env))
        body, inner, start, _ = self.sub_block(s.body, env, names)
        carried = [n for n in names if inner[n] is not start[n]]
        body.output = ("tuple", [self.value(body, inner[n]) for n in carried])
        outs = [self.fresh(graph, n) for n in carried]
        graph.nodes.append(Node(WHILE, None, [env[n] for n in names],
                                {"names": names, "carried": carried, "cond": cond_block,
                                 "body": body}, outs))
        env.update(zip(carried, outs))

    # ---------------------------------------------------------- expressions

    def constant(self, obj):
        """A compile-time object: submodules become module references."""
        if isinstance(obj, Module):
            return self.unit.ref(obj)
        return ("c", obj)

    def expr(self, graph, e, env):
        if isinstance(e, ast.Name):
            if e.id in env:
                return env[e.id]
            if e.id in ("True", "False", "None"):
                return ("c", {"True": True, "False": False, "None": None}[e.id])
            found = self.static(e)
            if found is None and not hasattr(builtins, e.id) and e.id not in self.globals:
                raise RuntimeError(f"undefined value {e.id} (line {e.lineno} of "
                                   f"{self.fn.__qualname__})")
            return self.constant(found)
        if isinstance(e, ast.Attribute):
            base = self.expr(graph, e.value, env)
            if isinstance(base, _SelfRef):
                return self.self_attr(graph, base, e.attr, e)
            if _is_const(base):
                return self.constant(getattr(base[1], e.attr))
            return self.call(graph, f"attr:{e.attr}", [base])
        if isinstance(e, ast.BinOp) and type(e.op) in _BINOPS:
            return self.fold(graph, _BINOPS[type(e.op)],
                             [self.expr(graph, e.left, env), self.expr(graph, e.right, env)])
        if isinstance(e, ast.Compare) and len(e.ops) == 1:
            return self.compare(graph, e, env)
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Not):
            return self.fold(graph, "not_", [self.expr(graph, e.operand, env)])
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd)):
            return self.fold(graph, "neg" if isinstance(e.op, ast.USub) else "pos",
                             [self.expr(graph, e.operand, env)])
        if isinstance(e, ast.BoolOp):
            return self.bool_op(graph, e, env)
        if isinstance(e, ast.IfExp):
            return self.if_expr(graph, e, env)
        if isinstance(e, (ast.ListComp, ast.GeneratorExp, ast.DictComp)):
            _check_comprehension(e)
        if isinstance(e, (ast.ListComp, ast.GeneratorExp, ast.DictComp)) and \
                self.reads_run_time_values(e, env):
            return self.run_time_comprehension(graph, e, env)  # a generator is a list (torch)
        if isinstance(e, _COMPREHENSIONS):
            return self.comprehension(e, env)
        if isinstance(e, ast.JoinedStr):
            parts = [self.expr(graph, v.value if isinstance(v, ast.FormattedValue) else v, env)
                     for v in e.values]
            if all(_is_const(p) for p in parts):
                return ("c", "".join(str(p[1]) for p in parts))
            return self.call(graph, "jit.format", parts)
        if isinstance(e, ast.Subscript):
            base = self.expr(graph, e.value, env)
            index = self.index(graph, e.slice, env)
            if isinstance(base, _SelfRef) and _is_const(index):
                children = base.module._modules  # a ModuleDict by key, a list by position
                key = index[1]
                return self.constant(children[key] if isinstance(key, str)
                                     else list(children.values())[key])
            if _is_const(base) and _is_const(index):
                return self.constant(base[1][index[1]])
            return self.call(graph, "operator.getitem", [base, index])
        if isinstance(e, (ast.Tuple, ast.List)):
            items = [self.expr(graph, x, env) for x in e.elts]
            if all(_is_const(i) for i in items):
                values = [i[1] for i in items]
                return ("c", tuple(values) if isinstance(e, ast.Tuple) else values)
            return self.call(graph, "jit.tuple" if isinstance(e, ast.Tuple) else "jit.list",
                             items)
        if isinstance(e, ast.Dict):
            if any(k is None for k in e.keys):
                self.fail(e, "** in a dict literal")
            items = [self.expr(graph, x, env) for pair in zip(e.keys, e.values) for x in pair]
            if all(_is_const(i) for i in items):
                return ("c", {items[i][1]: items[i + 1][1] for i in range(0, len(items), 2)})
            return self.call(graph, "jit.dict", items)
        return super().expr(graph, e, env)

    @staticmethod
    def reads_run_time_values(e, env):
        """Whether expression ``e`` reads a name bound to a run-time value or a module."""
        return any(isinstance(node, ast.Name) and isinstance(env.get(node.id), (Value, _SelfRef))
                   for node in ast.walk(e))

    def run_time_comprehension(self, graph, e, env):
        """``[elt for target in items]`` (or ``{key: value for ...}``) over run-time values
        or modules, compiled as the loop that fills a new list (dict); its names stay local,
        as in Python 3."""
        number = self.unit.counter[0]
        self.unit.counter[0] += 1
        result = f"comprehension_{number}_"
        if isinstance(e, ast.DictComp):
            fill = ast.Assign([ast.Subscript(ast.Name(result, ast.Load()), e.key, ast.Store())],
                              e.value)
            empty = ast.Dict([], [])
        else:
            fill = ast.Expr(ast.Call(ast.Attribute(ast.Name(result, ast.Load()), "append",
                                                   ast.Load()), [e.elt], []))
            empty = ast.List([], ast.Load())
        generator = e.generators[0]
        body = [ast.For(generator.target, generator.iter, [fill], [])]
        statements = [ast.Assign([ast.Name(result, ast.Store())], empty)] + body
        for s in statements:
            ast.copy_location(s, e)
            ast.fix_missing_locations(s)
        before = dict(env)
        self.block(graph, statements, env)
        value = self.value(graph, env[result])  # a comprehension that ran no pass gives []
        for name in set(env) - set(before):
            del env[name]
        for name, old in before.items():
            if name in _assigned_names(body) and env.get(name) is not old:
                env[name] = old  # the loop's own names do not leak out
        return value

    def comprehension(self, e, env):
        """A comprehension over constants (``tuple(2 * p for p in self.padding)``), evaluated
        when scripting."""
        namespace = {}
        for node in ast.walk(e):
            if isinstance(node, ast.Name) and node.id in env:
                value = env[node.id]
                if isinstance(value, _SelfRef):
                    value = ("c", value.module)
                if not _is_const(value):
                    self.fail(e, "a comprehension over run-time values")
                namespace[node.id] = value[1]
        code = compile(ast.Expression(e), self.filename, "eval")
        result = eval(code, dict(self.globals), namespace)  # noqa: S307 - the module's own code
        if isinstance(e, ast.GeneratorExp):
            result = tuple(result)
        if not _is_literal(list(result.items()) if isinstance(result, dict) else list(result)):
            self.fail(e, "a comprehension that builds tensors or modules")
        return ("c", result)

    def fold(self, graph, name, operands):
        if all(_is_const(o) for o in operands):
            return ("c", getattr(operator, name)(*(o[1] for o in operands)))
        for o in operands:
            if isinstance(o, (_SelfRef, _MethodRef)):
                raise RuntimeError(f"ember.jit.script: a module used as a value in "
                                   f"{self.fn.__qualname__}")
        return self.call(graph, f"operator.{name}", operands)

    def compare(self, graph, e, env):
        op = type(e.ops[0])
        left = self.expr(graph, e.left, env)
        right = self.expr(graph, e.comparators[0], env)
        if op in (ast.Is, ast.IsNot):
            none_side = right if _is_const(right) else left
            other = left if none_side is right else right
            known = isinstance(other, _SelfRef) or (isinstance(other, Value)
                                                    and other in self.non_none)
            if _is_const(none_side) and none_side[1] is None and known:
                return ("c", op is ast.IsNot)
            return self.fold(graph, "is_" if op is ast.Is else "is_not", [left, right])
        if op in (ast.In, ast.NotIn):
            found = self.fold(graph, "contains", [right, left])
            return self.fold(graph, "not_", [found]) if op is ast.NotIn else found
        if op not in _CMPOPS:
            self.fail(e, "this comparison")
        return self.fold(graph, _CMPOPS[op], [left, right])

    def bool_op(self, graph, e, env):
        """``a and b`` / ``a or b`` with Python's short circuit (an if node when ``a`` is
        known only at run time)."""
        is_and = isinstance(e.op, ast.And)
        first = self.expr(graph, e.values[0], env)
        rest = e.values[1:]
        if _is_const(first):
            if bool(first[1]) != is_and or not rest:
                return first
            return self.bool_op(graph, ast.BoolOp(e.op, rest), env) if len(rest) > 1 \
                else self.expr(graph, rest[0], env)
        if not rest:
            return first
        tail = ast.BoolOp(e.op, rest) if len(rest) > 1 else rest[0]
        # and: if first then tail else first;  or: if first then first else tail
        return self.choose(graph, first, tail if is_and else None, None if is_and else tail, env)

    def if_expr(self, graph, e, env):
        test = self.expr(graph, e.test, env)
        if _is_const(test):
            return self.expr(graph, e.body if test[1] else e.orelse, env)
        return self.choose(graph, test, e.body, e.orelse, env)

    def choose(self, graph, cond, then_expr, else_expr, env):
        """An if node returning ``then_expr`` or ``else_expr`` (None: ``cond`` itself)."""
        cond_value = self.value(graph, cond)
        names = self.values_of(env)
        blocks = []
        for expr in (then_expr, else_expr):
            block, inner, _, _ = self.sub_block([], env, names, extra_inputs=("cond_",))
            own_cond = inner.pop("cond_")
            result = own_cond if expr is None else self.expr(block, expr, inner)
            block.output = ("tuple", [self.value(block, result)])
            blocks.append(block)
        out = graph.new_value()
        graph.nodes.append(Node(IF, None, [cond_value, cond_value] + [env[n] for n in names],
                                {"names": ["cond_"] + names, "then": blocks[0],
                                 "else": blocks[1]}, [out]))
        return out

    def self_attr(self, graph, ref, attr, node):
        module = ref.module
        if attr in module._parameters or attr in module._buffers:
            tensor = module._parameters.get(attr, module._buffers.get(attr))
            if tensor is None:
                return ("c", None)
            return self.get_attr(graph, ref.dotted(attr))
        if attr in module._modules:
            sub = module._modules[attr]
            return ("c", None) if sub is None else self.unit.ref(sub)
        if attr == "training":
            return self.get_attr(graph, ref.dotted(attr))
        if inspect.isfunction(inspect.getattr_static(type(module), attr, None)):
            return _MethodRef(ref, attr)  # a method (not a staticmethod: that is a constant)
        try:
            value = getattr(module, attr)
        except AttributeError:
            raise RuntimeError(f"Module '{type(module).__name__}' has no attribute '{attr}' "
                               f"(line {node.lineno} of {self.fn.__qualname__})") from None
        if isinstance(value, Tensor):
            return self.tensor_constant(graph, ref.dotted(attr), value)
        return self.constant(value)

    def get_attr(self, graph, dotted):
        v = graph.new_value(name=dotted.replace(".", "_"))
        graph.nodes.append(Node(GET_ATTR, None, [], {"name": dotted}, [v]))
        if not dotted.endswith(("training", "__self__")):
            self.non_none.add(v)
            self.tensors.add(v)
        return v

    def tensor_constant(self, graph, dotted, tensor):
        self.top.constants[dotted] = tensor
        v = graph.new_value(name=dotted.replace(".", "_"))
        graph.nodes.append(Node(CONSTANT, None, [], {"name": dotted}, [v]))
        self.non_none.add(v)
        self.tensors.add(v)
        return v

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
            receiver = self.expr(graph, f.value, env)
            if _is_const(receiver) and isinstance(receiver[1], list) and \
                    isinstance(f.value, ast.Name) and f.attr in LIST_METHODS and \
                    not all(_is_const(a) for a in args + list(kwargs.values())):
                # a list literal that receives run-time values becomes a run-time list
                receiver = env[f.value.id] = self.value(graph, receiver)
            if isinstance(receiver, Value):
                return self.call(graph, f"method:{f.attr}", [receiver] + args, kwargs)
            target = (self.self_attr(graph, receiver, f.attr, f)
                      if isinstance(receiver, _SelfRef) else
                      self.constant(getattr(receiver[1], f.attr)) if _is_const(receiver)
                      else self.fail(f, "this call"))
        else:
            target = self.expr(graph, f, env)
        if isinstance(target, _SelfRef):
            return self.call_method(graph, _MethodRef(target, "forward"), args, kwargs, e)
        if isinstance(target, _MethodRef):
            return self.call_method(graph, target, args, kwargs, e)
        if not _is_const(target):
            self.fail(e, f"calling {ast.unparse(f)}")
        return self.call_function(graph, target[1], args, kwargs, e)

    def call_function(self, graph, fn, args, kwargs, e):
        everything = args + list(kwargs.values())
        static = fn in _STATIC_BUILTINS or inspect.ismethoddescriptor(fn) or (
            inspect.isbuiltin(fn) and isinstance(getattr(fn, "__self__", None), (dict, list)))
        if static and all(_is_const(a) or isinstance(a, _SelfRef) for a in everything):
            plain = [a.module if isinstance(a, _SelfRef) else a[1] for a in args]
            named = {k: a.module if isinstance(a, _SelfRef) else a[1] for k, a in kwargs.items()}
            result = fn(*plain, **named)
            if isinstance(result, (map, zip, enumerate, reversed, type({}.values()),
                                   type({}.items()), type({}.keys()))):
                result = list(result)
            return self.constant(result)
        flag = _scripting_flag(fn)
        if flag is not None:
            return ("c", flag)
        if fn is isinstance and len(args) == 2 and isinstance(args[0], Value) \
                and args[0] in self.tensors and _is_const(args[1]):
            return ("c", issubclass(Tensor, args[1][1]))  # refined statically, as TorchScript
        if fn is isinstance and len(args) == 2 and _is_const(args[1]):
            return self.call(graph, "jit.isinstance", [args[0], ("c", _type_names(args[1][1], e,
                                                                                  self.fail))])
        if fn in (zip, enumerate) and not kwargs:  # over values known at run time
            return self.call(graph, f"jit.{fn.__name__}", args)
        if fn is warnings.warn:
            return self.call(graph, "jit.warn", args[:1])
        if fn is _annotate():
            return args[1]
        name = _public_name(fn)
        if name is None and inspect.isfunction(fn):
            inner = _MethodCompiler(self.unit, None, None, function=fn)
            inner.non_none, inner.tensors = self.non_none, self.tensors
            return inner.inline(graph, self.top, args, kwargs, e)
        if name is None:
            self.fail(e, f"calling {ast.unparse(e.func)} (only ember's public functions, "
                         "tensor methods, submodules and methods of the module)")
        return self.call(graph, name, args, kwargs)

    def call_method(self, graph, target, args, kwargs, e):
        module = target.ref.module
        if target.name in ("items", "keys", "values") and not args and not kwargs and \
                type(module).__name__ in _DICT_CONTAINERS:
            return ("c", list(getattr(module, target.name)()))  # unrolled, as TorchScript
        if self.unit.is_library(module):
            return self.library_call(graph, target, args, kwargs, e)
        fn = getattr(type(module), target.name, None)
        if getattr(fn, "_ember_jit_ignore", False) or getattr(fn, "_ember_jit_unused", False):
            return self.python_call(graph, target, fn, args, kwargs)
        for a in args + list(kwargs.values()):
            if isinstance(a, (_SelfRef, _MethodRef)):
                self.fail(e, "passing a module to a method")
        inner = _MethodCompiler(self.unit, target.ref, target.name)
        inner.non_none, inner.tensors = self.non_none, self.tensors
        return inner.inline(graph, self.top, args, kwargs, e)

    def library_call(self, graph, target, args, kwargs, e):
        """A method of one of ember's own layers: read the layer, call the method
        (``prim::CallMethod``, as torch's graph calls a submodule)."""
        for a in args + list(kwargs.values()):
            if isinstance(a, (_SelfRef, _MethodRef)):
                self.fail(e, "passing a module to a method")
        if target.name.startswith("_"):
            self.fail(e, f"calling the private method {target.name} of a layer")
        receiver = read_module(graph, target.ref.prefix)
        return self.call(graph, f'{CALL_METHOD}{target.name}"]', [receiver] + args, kwargs)

    def python_call(self, graph, target, fn, args, kwargs):
        """A call of an ``@ember.jit.ignore`` method, run by Python on the scripted module
        (as torch binds ignored methods to the ScriptModule)."""
        inputs = [self.get_attr(graph, target.ref.dotted("__self__"))]
        inputs += [self.value(graph, a) for a in args]
        names = list(kwargs)
        inputs += [self.value(graph, kwargs[k]) for k in names]
        out = graph.new_value()
        count = 1 + len(args)
        params = {"fn": f"python:{target.ref.dotted(target.name)}",
                  "args": [{"v": i} for i in range(count)],
                  "kwargs": {k: {"v": count + i} for i, k in enumerate(names)}}
        graph.nodes.append(Node(CALL, fn, inputs, params, [out]))
        return out


def read_module(graph, prefix):
    """A ``prim::GetAttr`` node reading the submodule at ``prefix`` (the module itself for
    ``""``)."""
    v = graph.new_value(name=prefix.replace(".", "_") or "self")
    graph.nodes.append(Node(GET_ATTR, None, [], {"name": prefix or "__self__"}, [v]))
    return v


def _type_names(types, node, fail):
    """TorchScript's names of the types an ``isinstance`` tests (a type or a tuple of them)."""
    from ._script import TYPE_NAMES

    names = []
    for t in types if isinstance(types, tuple) else (types,):
        name = "Tensor" if isinstance(t, type) and issubclass(Tensor, t) and t is not object \
            else next((n for n, cls in TYPE_NAMES.items() if cls is t), None)
        if name is None:
            fail(node, f"isinstance with the type {t!r}")
        names.append(name)
    return names


def _annotate():
    from ._annotations import annotate

    return annotate


def _scripting_flag(fn):
    """True for ``ember.jit.is_scripting`` (inside scripted code), False for ``is_tracing``,
    None for anything else."""
    from . import is_scripting, is_tracing

    return True if fn is is_scripting else False if fn is is_tracing else None


def _check_comprehension(e):
    """TorchScript's limits on comprehensions: one generator, no ``if`` (torch's errors)."""
    where = f" (line {getattr(e, 'lineno', '?')})"
    if len(e.generators) != 1:
        raise NotSupportedError("Only a single generator is currently supported" + where)
    if e.generators[0].ifs:
        raise NotSupportedError("Comprehension ifs are not supported yet" + where)


def _assigned_names(statements):
    """The names that ``statements`` assign (at any depth)."""
    return {node.id for s in statements for node in ast.walk(s)
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)}


def _returns(statements):
    """Whether ``statements`` hold a ``return`` (a branch that only raises does not: it is
    compiled as an ``if`` node whose branch raises at run time)."""
    return any(isinstance(node, ast.Return) for s in statements for node in ast.walk(s))


def _terminates(statements):
    """Whether every path through ``statements`` ends in ``return`` or ``raise``."""
    if not statements:
        return False
    last = statements[-1]
    if isinstance(last, (ast.Return, ast.Raise)):
        return True
    if isinstance(last, ast.If):
        return _terminates(last.body) and _terminates(last.orelse)
    return False


def _methods_to_compile(module):
    names = ["forward"]
    for name, fn in inspect.getmembers(type(module), inspect.isfunction):
        if getattr(fn, "_ember_jit_export", False) and name != "forward":
            names.append(name)
    return names


def script_module(module):
    """Compile ``module`` (see the module docstring) into a :class:`ScriptedModule`."""
    unit = _Unit(module)
    root = _SelfRef(module, "")
    graphs, signatures = {}, {}
    for name in _methods_to_compile(module):
        compiler = _MethodCompiler(unit, root, name)
        compile_method = (compiler.compile_library_call if unit.is_library(module)
                          else compiler.compile_method)
        graphs[name], signatures[name] = compile_method()
    attrs = {}
    for prefix, sub in module.named_modules():
        for name, p in sub._parameters.items():
            if p is not None:
                attrs[f"{prefix}.{name}" if prefix else name] = ("parameter", p, True)
        for name, b in sub._buffers.items():
            if b is not None:
                attrs[f"{prefix}.{name}" if prefix else name] = (
                    "buffer", b, name not in sub._non_persistent_buffers_set)
    training = {prefix: sub.training for prefix, sub in module.named_modules()}
    forward = graphs.pop("forward")
    library = {prefix: describe(sub) for prefix, sub in library_roots(module).items()}
    return ScriptedModule(forward, attrs, training, type(module).__name__, signatures, graphs,
                          _plain_attributes(module), library)


def _plain_attributes(module):
    """``{prefix: {name: value}}``: the numbers, strings and tuples each module holds, which
    torch's ScriptModule keeps as attributes (``scripted.scale``)."""
    found = {}
    for prefix, sub in module.named_modules():
        values = {k: v for k, v in vars(sub).items()
                  if not k.startswith("_") and k != "training" and _is_literal(v)
                  and not isinstance(v, list)}
        if values:
            found[prefix] = values
    return found
