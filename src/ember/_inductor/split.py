"""Splitting a function at the statement that broke its graph: the statements before it and
the statements after it become functions of their own, each compiled, and the breaking
statement runs eagerly between them.

Capture records operators, not bytecode, so it cannot resume a function in the middle. It
can, however, run *part of the source*: when the first break happened inside a top-level
statement of the function's body, the body is cut there (Python's ``ast``):

* the **prefix** (the statements before) becomes a function with the original signature
  that returns the local variables it assigned;
* the **middle** (the breaking statement) runs eagerly on those variables; a ``return``
  inside it ends the call;
* the **suffix** (the statements after) becomes a function of the variables and is compiled
  again, so a second break in it splits it once more.

Line numbers and the file name are kept, so errors and logs name the user's lines. A body
that cannot be cut safely is left whole (the caller then only compiles the modules it
calls): source unavailable, a ``return``/``yield``/``global``/``nonlocal`` before the cut,
free variables (a closure, a zero-argument ``super()``), a generator or coroutine, or a
break outside the function's own body (in a loop's body the cut is the whole loop).

Example::

    >>> def f(x):
    ...     y = x.sin()
    ...     print("between")      # a graph break
    ...     return y.cos()
    >>> cut = split_at(f, f.__code__.co_firstlineno + 2)   # the print() line
    >>> cut.suffix(x=ember.zeros(1), y=ember.zeros(1))     # the statements after it
    tensor([1.])
"""

from __future__ import annotations

import ast
import inspect
import textwrap

__all__ = ["Split", "split_at", "break_line"]

_SUSPENDS = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR
_UNBOUND = "_ember_unbound_"     # the keyword holding the "not assigned" sentinel
_NOT_ASSIGNED = object()
_RETURNED = "_ember_returned_"   # the middle's marker of a ``return``


class Split:
    """A function cut at its breaking statement: ``prefix(*args, **kwargs)`` returns the
    variables it assigned (or None when the cut is the first statement), ``middle(**names)``
    returns ``(marker, value_or_names)`` (the marker is :func:`returned_marker` when the
    statement returned), ``suffix(**names)`` the function's result (or None when the cut is
    the last statement). Each generated function keeps its ``ast`` (``_ember_definition``)
    for a further cut.

    Example::

        >>> Split(None, None, None, ()).suffix is None
        True
    """

    def __init__(self, prefix, middle, suffix, params):
        self.prefix = prefix
        self.middle = middle
        self.suffix = suffix
        self.params = params   # the original function's parameter names


def break_line(fn, frames):
    """The line of ``fn``'s own code that was running when the capture broke (``frames``:
    ``(code, line)`` of each user frame, innermost first), or None.

    Example::

        >>> break_line(lambda x: x, [])
    """
    code = getattr(_plain(fn), "__code__", None)
    for frame_code, line in frames:
        if frame_code is code:
            return line
    return None


def _plain(fn):
    """The plain function behind a bound method."""
    return getattr(fn, "__func__", fn)


def split_at(fn, line):
    """Cut ``fn`` (a plain function or a bound method) at the top-level statement holding
    ``line``; a :class:`Split`, or None when it cannot be cut safely.

    Example::

        >>> split_at(len, 1) is None
        True
    """
    function = _plain(fn)
    code = getattr(function, "__code__", None)
    if code is None or code.co_freevars or not isinstance(line, int) \
            or code.co_flags & _SUSPENDS or getattr(function, "_ember_prefix", False):
        return None
    definition = _definition(function)
    if definition is None:
        return None
    body = [s for s in definition.body if not getattr(s, "_ember_generated", False)]
    index = next((i for i, s in enumerate(body) if s.lineno <= line <= s.end_lineno), None)
    if index is None or not _cuttable(body[:index], body[index]):
        return None
    params = _params(definition.args)
    names = params + sorted(_assigned(body) - set(params))
    namespace = function.__globals__
    filename = code.co_filename
    prefix = None
    if index > 0:
        prefix = _make(_prefix_def(definition, body[:index], params, names), filename,
                       function, namespace, keep_signature=True)
        prefix._ember_prefix = True  # its last statement returns its variables: not cut
    middle = _make(_middle_def(definition, body[index], names), filename, function,
                   namespace)
    suffix = None
    if index + 1 < len(body):
        suffix = _make(_suffix_def(definition, body[index + 1:], names), filename, function,
                       namespace)
    return Split(prefix, middle, suffix, params)


# ---------------------------------------------------------------- reading the source


_DEFINITIONS = {}  # id(code) -> (code, the function's ast, or None)


def _definition(function):
    """The ``ast.FunctionDef`` of ``function`` with its real line numbers (a generated
    piece carries its own), or None without source."""
    own = getattr(function, "_ember_definition", None)
    if own is not None:
        return own
    code = function.__code__
    known = _DEFINITIONS.get(id(code))
    if known is not None and known[0] is code:
        return known[1]
    found = None
    try:
        source = textwrap.dedent(inspect.getsource(function))
        tree = ast.parse(source)
        ast.increment_lineno(tree, code.co_firstlineno - 1)
        node = tree.body[0] if tree.body else None
        if isinstance(node, ast.FunctionDef) and node.name == code.co_name and \
                _same_code(node, code):
            found = node
    except (OSError, TypeError, SyntaxError, IndentationError):
        found = None
    _DEFINITIONS[id(code)] = (code, found)
    return found


def _same_code(node, code):
    """Whether the source read for ``node`` compiles to the running ``code``: the file may
    have changed since it was imported, and a method's private names (``self.__x``) are
    mangled only inside its class, where a piece compiled on its own would not be."""
    import copy

    definition = copy.deepcopy(node)
    definition.decorator_list = []
    compiled = compile(ast.Module(body=[definition], type_ignores=[]), code.co_filename,
                       "exec")
    found = [c for c in compiled.co_consts if hasattr(c, "co_code")]
    return bool(found) and found[0].co_names == code.co_names and \
        found[0].co_varnames == code.co_varnames and _steps(found[0]) == _steps(code)


def _steps(code):
    """``code``'s instructions without the choices the compiler makes from positions alone
    (a method load or an attribute load before a call, jump offsets, no-ops)."""
    import dis

    steps = []
    for step in dis.get_instructions(code):
        if step.opname in ("NOP", "RESUME", "CACHE", "EXTENDED_ARG"):
            continue
        name = "LOAD_ATTR" if step.opname == "LOAD_METHOD" else step.opname
        argument = None if step.opcode in dis.hasjrel or step.opcode in dis.hasjabs else \
            str(step.argval)
        steps.append((name, argument))
    return steps


def _walk_own(nodes):
    """Every node under ``nodes`` that belongs to this function's scope (nested functions,
    lambdas and classes are not entered)."""
    stack = list(nodes)
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda,
                                      ast.ClassDef)):
                stack.append(child)
            elif not isinstance(child, ast.Lambda):
                yield child  # its name is assigned here


def _cuttable(before, statement):
    """Whether the body may be cut before ``statement``: nothing before it leaves the
    function or changes how names bind, and the statement itself does not suspend."""
    for node in _walk_own(before):
        if isinstance(node, (ast.Return, ast.Yield, ast.YieldFrom, ast.Await, ast.Global,
                             ast.Nonlocal)):
            return False
    for node in _walk_own([statement]):
        if isinstance(node, (ast.Yield, ast.YieldFrom, ast.Await, ast.Global, ast.Nonlocal)):
            return False
    return True


def _params(arguments):
    """The parameter names (a generated piece's sentinel keyword left out)."""
    names = [a.arg for a in arguments.posonlyargs + arguments.args]
    if arguments.vararg:
        names.append(arguments.vararg.arg)
    names += [a.arg for a in arguments.kwonlyargs if a.arg != _UNBOUND]
    if arguments.kwarg:
        names.append(arguments.kwarg.arg)
    return names


def _assigned(body):
    """The local names the body binds (assignments, loop and ``with`` targets, imports,
    nested definitions, ``except ... as``)."""
    names = set()
    for node in _walk_own(body):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.MatchAs) and node.name:
            names.add(node.name)
    return names


# ---------------------------------------------------------------- writing the pieces


def _at(node, template):
    """Give a generated statement ``template``'s position (its line is the cut's), marked
    as generated (a further cut looks only at the user's statements)."""
    for child in ast.walk(node):
        child.lineno = getattr(template, "lineno", 1)
        child.end_lineno = getattr(template, "end_lineno", child.lineno)
        child.col_offset, child.end_col_offset = 0, 0
    node._ember_generated = True
    return node


def _collect(names, template):
    """``_l = locals(); <return> {n: _l[n] for n in names if n in _l}``, as statements."""
    text = (f"_ember_locals_ = locals()\n"
            f"_ember_names_ = {{n: _ember_locals_[n] for n in {tuple(names)!r} "
            f"if n in _ember_locals_}}")
    return [_at(s, template) for s in ast.parse(text).body]


def _unbind(names, template):
    """``if n is _ember_unbound_: del n`` for each name (a variable not assigned yet)."""
    text = "\n".join(f"if {n} is {_UNBOUND}:\n    del {n}" for n in names) or "pass"
    return [_at(s, template) for s in ast.parse(text).body]


def _keyword_only(names):
    arguments = ast.arguments(posonlyargs=[], args=[], vararg=None,
                              kwonlyargs=[ast.arg(arg=n) for n in [_UNBOUND] + names],
                              kw_defaults=[None] * (len(names) + 1), kwarg=None, defaults=[])
    return arguments


def _prefix_def(definition, statements, params, names):
    """``def f(<original signature>): <statements>; return <the variables they assign>``
    (a piece generated before starts by unbinding its unassigned keywords)."""
    assigned = sorted(_assigned(statements))
    tail = _collect(assigned, statements[-1])
    ret = _at(ast.Return(value=ast.Name(id="_ember_names_", ctx=ast.Load())), statements[-1])
    generated = any(a.arg == _UNBOUND for a in definition.args.kwonlyargs)
    head = _unbind(params, statements[0]) if generated else []
    return ast.FunctionDef(name=definition.name, args=definition.args,
                           body=head + list(statements) + tail + [ret], decorator_list=[],
                           returns=None, type_comment=None, lineno=definition.lineno)


class _MarkReturns(ast.NodeTransformer):
    """``return v`` -> ``return ("_ember_returned_", v)`` in the middle (not in nested
    functions)."""

    def visit_Return(self, node):
        value = node.value or ast.Constant(value=None)
        marked = ast.Tuple(elts=[ast.Constant(value=_RETURNED), value], ctx=ast.Load())
        return ast.copy_location(ast.Return(value=marked), node)

    def visit_FunctionDef(self, node):
        return node

    visit_AsyncFunctionDef = visit_Lambda = visit_ClassDef = visit_FunctionDef


def _middle_def(definition, statement, names):
    """``def f(*, <names>): <unbind>; <statement>; return <the variables>``."""
    import copy

    marked = _MarkReturns().visit(copy.deepcopy(statement))
    tail = _collect(names, statement)
    ret = _at(ast.Return(value=ast.Tuple(elts=[ast.Constant(value=None),
                                              ast.Name(id="_ember_names_", ctx=ast.Load())],
                                        ctx=ast.Load())), statement)
    return ast.FunctionDef(name=definition.name, args=_keyword_only(names),
                           body=_unbind(names, statement) + [marked] + tail + [ret],
                           decorator_list=[], returns=None, type_comment=None,
                           lineno=definition.lineno)


def _suffix_def(definition, statements, names):
    """``def f(*, <names>): <unbind>; <statements>`` (returns as the original does)."""
    return ast.FunctionDef(name=definition.name, args=_keyword_only(names),
                           body=_unbind(names, statements[0]) + list(statements),
                           decorator_list=[], returns=None, type_comment=None,
                           lineno=definition.lineno)


def _make(node, filename, original, namespace, keep_signature=False):
    """Compile the generated definition in the original's globals (it reads them live, as
    the original does; the definition itself is bound in a private scope, so nothing is
    added to the user's module) and return the function."""
    last = max(getattr(n, "end_lineno", None) or node.lineno for n in ast.walk(node))
    node.end_lineno, node.col_offset, node.end_col_offset = last, 0, 0
    for argument in node.args.kwonlyargs:   # the generated keywords: at the def's line
        for field in ("lineno", "end_lineno", "col_offset", "end_col_offset"):
            if getattr(argument, field, None) is None:
                setattr(argument, field, node.lineno if "lineno" in field else 0)
    module = ast.Module(body=[node], type_ignores=[])
    ast.fix_missing_locations(module)
    scope = {}
    exec(compile(module, filename, "exec"), namespace, scope)  # noqa: S102 - our own code
    function = scope[node.name]
    if keep_signature:
        function.__defaults__ = original.__defaults__
        function.__kwdefaults__ = original.__kwdefaults__
    else:
        function.__kwdefaults__ = {a.arg: _NOT_ASSIGNED for a in node.args.kwonlyargs}
    function.__qualname__ = original.__qualname__
    function._ember_definition = ast.FunctionDef(
        name=node.name, args=node.args, body=node.body, decorator_list=[], returns=None,
        type_comment=None, lineno=node.lineno)
    return function


def unbound_sentinel():
    """The value a generated piece's keyword holds for a variable not assigned yet.

    Example::

        >>> unbound_sentinel() is unbound_sentinel()
        True
    """
    return _NOT_ASSIGNED


def returned_marker():
    """The first item of the middle's result when its statement returned.

    Example::

        >>> returned_marker()
        '_ember_returned_'
    """
    return _RETURNED
