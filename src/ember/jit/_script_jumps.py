"""``break``, ``continue`` and ``return`` inside loops, for ``ember.jit.script(module)``: the
loop's AST is rewritten without them, with flags, before it is compiled (the graph's loop nodes
always run to their end condition).

Example: ``for i in range(n): if c: break; body`` becomes ``brk = False; for i in range(n):
cont = False; if not brk: (if c: brk = True) ... if not (brk or cont): body``.
"""

from __future__ import annotations

import ast

__all__ = ["lower_jumps", "jumps", "RESULT"]

RETURNED, RESULT = "returned_", "result_"


def _load(name):
    return ast.Name(name, ast.Load())


def _not(expr):
    return ast.UnaryOp(ast.Not(), expr)


def _assign(name, value):
    return ast.Assign([ast.Name(name, ast.Store())], ast.Constant(value))


def jumps(statements, returns_only=False):
    """Whether ``statements`` break or continue this loop, or return (from any depth)."""
    for s in statements:
        if isinstance(s, (ast.Break, ast.Continue)) and not returns_only or \
                isinstance(s, ast.Return):
            return True
        if isinstance(s, (ast.For, ast.While)) and jumps(s.body, returns_only=True):
            return True
        if isinstance(s, ast.If) and (jumps(s.body, returns_only)
                                      or jumps(s.orelse, returns_only)):
            return True
        if isinstance(s, ast.With) and jumps(s.body, returns_only):
            return True
    return False


def lower_jumps(loop, number, fail):
    """The loop rewritten without ``break``/``continue``/``return``, with flags: a
    ``break`` sets the loop's break flag (tested by a ``while`` condition and guarding
    each pass of a ``for``), a ``continue`` the pass's continue flag; statements after a
    jump run under ``if not (break or continue)``; a ``return`` stores its value, breaks,
    and is taken after the loop."""
    if loop.orelse:
        fail(loop, "a loop with an else clause")
    brk, cont = f"break_{number}_", f"continue_{number}_"
    body = [_assign(cont, False),
            ast.If(_not(_load(brk)), _without_jumps(list(loop.body), brk, cont, fail), [])]
    if isinstance(loop, ast.While):
        new = ast.While(ast.BoolOp(ast.And(), [_not(_load(brk)), loop.test]), body, [])
    else:
        new = ast.For(loop.target, loop.iter, body, [])
    new.lineno = getattr(loop, "lineno", 0)
    before, after = [_assign(brk, False)], []
    if jumps(loop.body, returns_only=True):
        before += [_assign(RETURNED, False), _assign(RESULT, None)]
        after = [ast.If(_load(RETURNED), [ast.Return(_load(RESULT))], [])]
    return before + [new] + after


def _without_jumps(statements, brk, cont, fail):
    """``statements`` of a loop body with each jump replaced by setting its flag."""
    out = []
    for i, s in enumerate(statements):
        rest = statements[i + 1:]
        if isinstance(s, ast.Break):
            return out + [_assign(brk, True)]
        if isinstance(s, ast.Continue):
            return out + [_assign(cont, True)]
        if isinstance(s, ast.Return):
            value = s.value if s.value is not None else ast.Constant(None)
            return out + [ast.Assign([ast.Name(RESULT, ast.Store())], value),
                          _assign(RETURNED, True), _assign(brk, True)]
        if isinstance(s, (ast.For, ast.While)) and jumps(s.body, returns_only=True):
            # an inner loop's return leaves this loop too
            *lowered, taken = lower_jumps(s, f"{brk[len('break_'):]}{i}", fail)
            return out + lowered + _without_jumps([taken] + rest, brk, cont, fail)
        if isinstance(s, ast.If) and (jumps(s.body) or jumps(s.orelse)):
            out.append(ast.If(s.test, _without_jumps(s.body, brk, cont, fail),
                              _without_jumps(s.orelse, brk, cont, fail)))
            if rest:
                guard = _not(ast.BoolOp(ast.Or(), [_load(brk), _load(cont)]))
                out.append(ast.If(guard, _without_jumps(rest, brk, cont, fail), []))
            return out
        if isinstance(s, ast.With) and jumps(s.body):
            fail(s, "break, continue or return inside a with block in a loop")
        out.append(s)
    return out
