"""Compiling around a graph break.

Capture records the operators a call runs; it does not read Python bytecode, so it cannot
resume a function in the middle. When a function's capture breaks (``.item()``, a branch on
a tensor, ``print``...), two things keep the rest compiled:

* the function is **cut** at the top-level statement that broke (``split.py``): the
  statements before and after it are compiled as functions of their own, and only the
  breaking statement runs eagerly;
* while eager code runs (the breaking statement, or the whole function when it cannot be
  cut), every *module it calls* is compiled on its own: the compiled module's children
  (or, for a plain function, the modules it reads from its globals and closure and those
  passed as arguments) get a compiled function each, which captures, guards and replays as
  a top-level one does.

A piece that breaks again is cut and routed in turn, so the graphs shrink only as far as the
breaks force them to; a piece whose graphs have a single operator, or that recompiles for
each new Python value, runs eagerly (a guard check or a capture would cost more than it
saves). A split's prefix and suffix are also timed both ways on their first calls after the
capture, and a piece whose compiled call was no faster than its plain function runs
eagerly from then on; when neither pays, the whole function runs eagerly (no cutting), so a
graph break costs no more than eager code for that part, beyond one guard check.

The routing is temporary: during a broken call, each routed module's instance ``forward``
is a small shim that calls its compiled function; the shims are removed when the call ends,
so the user's modules behave eagerly outside the compiled function.

Example::

    >>> class Net(ember.nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.body = ember.nn.Sequential(ember.nn.Linear(2, 2), ember.nn.ReLU())
    ...     def forward(self, x):
    ...         h = self.body(x)
    ...         return h if h.sum() > 0 else -h   # a branch on the data: a graph break
    >>> net = ember.compile(Net())
    >>> _ = net(ember.ones(1, 2)); _ = net(ember.ones(1, 2))
    >>> [type(m).__name__ for m in routed_modules(net._compiled)]
    ['Sequential']
"""

from __future__ import annotations

import time
import weakref

from .._tensor import _trace_state
from ..nn.modules.module import Module

__all__ = ["AroundBreaks", "routed_modules", "pieces_of", "describe_break", "routes_something"]


def _called_children(module):
    """The submodules ``module``'s forward may call: its children, with containers that have
    no forward of their own (``ModuleList``, ``ModuleDict``) replaced by their children."""
    found = []
    for child in module.children():
        if type(child).forward is Module.forward:
            found.extend(_called_children(child))
        else:
            found.append(child)
    return found


def _modules_of_function(compiled, args, kwargs):
    """For a compiled plain function: the modules it reads from its globals and closure, the
    children of the module it is a bound method of, and the modules among its arguments."""
    fn = compiled._fn
    found = []
    bound_to = getattr(fn, "__self__", None)
    if isinstance(bound_to, Module):
        found.extend(_called_children(bound_to))
    for owner, name in (compiled._referenced or ((), ()))[0]:
        value = owner.cell_contents if name is None else owner.get(name)
        if isinstance(value, Module):
            found.append(value)
    found.extend(a for a in args if isinstance(a, Module))
    found.extend(a for a in kwargs.values() if isinstance(a, Module))
    return found


class AroundBreaks:
    """How a compiled function runs a variant whose capture broke: its own code eagerly, the
    modules it calls compiled (see the module docstring).

    Example::

        >>> from ember._inductor.compiled import CompiledFunction
        >>> f = CompiledFunction(lambda x: x * 2, fullgraph=False, dynamic=None,
        ...                      backend="eager")
        >>> AroundBreaks(f)((ember.ones(1),), {})
        tensor([2.])
    """

    def __init__(self, owner, breaks=(), frames=()):
        self.owner = owner
        self.breaks = list(breaks)   # [(reason, FrameSummary or None)] the capture found
        self.fixed = None if owner._module is None else _called_children(owner._module)
        self.split = _split(owner, frames[0]) if frames else None
        self.plain = False     # every piece settled on running eagerly: call the function
        self.settling = True   # no piece has settled on compiling yet

    def __call__(self, args, kwargs):
        if self.plain:
            return self.owner._fn(*args, **kwargs)
        if self.split is not None:
            return self.split(self, args, kwargs)
        result = self.eagerly(self.owner._fn, args, kwargs)
        self.settle(args, kwargs)
        return result

    def settle(self, args, kwargs):
        """After an eager run: note whether nothing is left to compile (the split's pieces
        run eagerly, and so does each module the function calls), so that later calls skip
        the routing; or whether some module compiles for good, so that this is not asked
        again. (Modules among the arguments are the same objects on every call of this
        variant: the guard key holds their identity.)"""
        if not self.settling:
            return
        modules = self.fixed
        if modules is None:
            modules = _modules_of_function(self.owner, args, kwargs)
        pieces = _PIECES.get(self.owner, {})
        undecided = False
        for module in modules:
            piece = pieces.get(id(module))
            if piece is None or piece.module is not module:
                undecided = True
            elif piece.pays():
                if piece.trial is None:
                    self.settling = False
                    return
                undecided = True
        if not undecided:
            self.plain = True
            self.settling = False

    def eagerly(self, fn, args, kwargs):
        """``fn(*args, **kwargs)`` run eagerly, with the owner's modules compiled."""
        owner = self.owner
        modules = self.fixed
        if modules is None:
            modules = _modules_of_function(owner, args, kwargs)
        if not modules:
            return fn(*args, **kwargs)
        installed = _install_shims(owner, modules)
        try:
            return fn(*args, **kwargs)
        finally:
            for state in installed:
                state.pop("forward", None)


def _target(owner):
    """The function whose source a split cuts: the owner's function or bound method, or a
    compiled module's ``forward`` when the module has no hooks (a split skips
    ``Module.__call__``)."""
    fn = owner._fn
    if not isinstance(fn, Module):
        return fn
    from ..nn.modules import module as module_file

    hooks = (fn._forward_hooks, fn._forward_pre_hooks, fn._backward_hooks,
             fn._backward_pre_hooks, module_file._global_forward_hooks,
             module_file._global_forward_pre_hooks, module_file._global_backward_hooks,
             module_file._global_backward_pre_hooks)
    return None if any(hooks) else fn.forward


def _split(owner, frames):
    """The :class:`RunSplit` of ``owner``'s function at the statement of its first break,
    or None when it cannot be cut."""
    from .split import break_line, split_at

    target = _target(owner)
    if target is None:
        return None
    cut = split_at(target, break_line(target, frames))
    return None if cut is None else RunSplit(owner, target, cut)


class RunSplit:
    """Run a function cut at its break: the compiled prefix, the middle eagerly (with the
    owner's modules compiled), the compiled suffix (see ``split.py``).

    Example::

        >>> from ember._inductor.compiled import CompiledFunction
        >>> from ember._inductor.split import split_at
        >>> def f(x):
        ...     y = x * 2
        ...     print("between")
        ...     return y + 1
        >>> owner = CompiledFunction(f, fullgraph=False, dynamic=None, backend="eager")
        >>> run = RunSplit(owner, f, split_at(f, f.__code__.co_firstlineno + 2))
        >>> run(AroundBreaks(owner), (ember.ones(1),), {})
        between
        tensor([3.])
    """

    def __init__(self, owner, target, cut):
        import inspect

        from .compiled import CompiledFunction

        def compiled(fn):
            if fn is None:
                return None
            piece = CompiledFunction(fn, fullgraph=False, dynamic=owner._dynamic,
                                     backend=owner._backend_name, recompile_limit=owner._limit)
            _SPLIT_PIECES.setdefault(owner, []).append(piece)
            return _Piece(fn, piece, timed=True)
        self.bound_to = getattr(target, "__self__", None)
        self.signature = inspect.signature(getattr(target, "__func__", target))
        positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        parameters = self.signature.parameters.values()
        # the parameters' names when every one is positional: a call passing all of them
        # positionally binds by zip (inspect's bind costs ~3 us a call)
        self.positional = tuple(p.name for p in parameters) \
            if all(p.kind in positional for p in parameters) else None
        self.cut = cut
        self.prefix = compiled(cut.prefix)
        self.suffix = compiled(cut.suffix)

    def __call__(self, around, args, kwargs):
        from .split import returned_marker

        if not (_pays(self.prefix) or _pays(self.suffix)):  # the pieces run eagerly anyway
            result = around.eagerly(around.owner._fn, args, kwargs)
            around.settle(args, kwargs)
            return result
        if self.bound_to is not None:
            args = (self.bound_to, *args)
        names = self._arguments(args, kwargs)
        if self.prefix is not None:
            names.update(_run(self.prefix, args, kwargs))
        marker, value = around.eagerly(self.cut.middle, (), names)
        if marker == returned_marker():
            return value
        if self.suffix is None:
            return None
        return _run(self.suffix, (), value)


    def _arguments(self, args, kwargs):
        """The call's arguments by parameter name, defaults filled in."""
        if not kwargs and self.positional is not None and len(args) == len(self.positional):
            return dict(zip(self.positional, args))
        bound = self.signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return dict(bound.arguments)


def _pays(piece):
    return piece is not None and piece.pays()


def _run(piece, args, kwargs):
    """A prefix or suffix: compiled, or its plain function when its graphs have a single
    operator (as a routed module's) or its compiled calls were no faster (the trial)."""
    if not piece.pays():
        return piece.module(*args, **kwargs)
    if _trace_state.tracer is not None:
        return piece.compiled(*args, **kwargs)
    if piece.cut is not None:
        return piece.cut(args, kwargs)
    if piece.trial is not None and piece.variants > 0:
        return piece.trial.run(piece, args, kwargs)
    return piece.compiled(*args, **kwargs)


class _Trial:
    """The first calls of a split's piece after its capture, alternately compiled and plain
    (``ROUNDS`` of each), each timed; then the piece keeps compiling only if its best
    compiled time beat its best plain time. Both ways compute the same values (the compiled
    graph replays the piece's operators, random draws included, in eager order), so the
    trial changes what a call costs, never what it returns."""

    ROUNDS = 4
    __slots__ = ("calls", "compiled_best", "plain_best")

    def __init__(self):
        self.calls = 0
        self.compiled_best = self.plain_best = float("inf")

    def run(self, piece, args, kwargs):
        plain = self.calls % 2 == 1
        start = time.perf_counter()
        result = piece.plain(args, kwargs) if plain else piece.compiled(*args, **kwargs)
        spent = time.perf_counter() - start
        if plain:
            self.plain_best = min(self.plain_best, spent)
        else:
            self.compiled_best = min(self.compiled_best, spent)
        self.calls += 1
        if self.calls >= 2 * self.ROUNDS:
            piece.trial = None
            piece.worth = self.compiled_best < self.plain_best
        return result


_SPLIT_PIECES = weakref.WeakKeyDictionary()  # owner -> the compiled prefixes and suffixes


_PIECES = weakref.WeakKeyDictionary()  # owner CompiledFunction -> {id(module): its compiled}

# A routed module whose graphs all have fewer computing nodes than this runs eagerly: one
# operator gains nothing from a graph, and the guard check would cost more than it
_WORTH_COMPILING = 2


class _Piece:
    """A routed module (or a split's prefix or suffix function), its compiled function, and
    whether compiling it pays (decided again when the compiled function gains a
    variant)."""

    __slots__ = ("module", "compiled", "variants", "worth", "cut", "trial")

    def __init__(self, module, compiled, timed=False):
        self.module = module
        self.compiled = compiled
        self.variants = -1
        self.worth = True
        self.cut = None
        self.trial = _Trial() if timed else None

    def plain(self, args, kwargs):
        """The piece run eagerly: a split's function, or a routed module's own ``forward``
        (its hooks already ran: the shim is called from ``Module.__call__``)."""
        if isinstance(self.module, Module):
            return self.module.forward(*args, **kwargs)
        return self.module(*args, **kwargs)

    def pays(self):
        variants = len(self.compiled._static)
        if variants != self.variants:
            self.variants = variants
            self.worth = self.worth and _worth_compiling(self.compiled) and \
                not _recompiled_for_values(self.compiled)
            self.cut = _only_cut(self.compiled)
        return self.worth


def _only_cut(compiled):
    """The :class:`AroundBreaks` of ``compiled``'s only variant when that variant broke and
    was cut: a call can go straight to the cut, skipping the guard check (the cut's own
    pieces check theirs; a variant that would break elsewhere still runs correctly)."""
    entries = list(compiled._static.values())
    if len(entries) == 1 and entries[0].run is None and entries[0].around is not None \
            and entries[0].around.split is not None:
        return entries[0].around
    return None


def _recompiled_for_values(compiled):
    """Whether ``compiled``'s last two variants differ in a plain Python value among its
    arguments (a float read from a tensor before a split's suffix, a step counter): each
    new value would cost a capture, more than running eagerly, so the piece stops
    compiling for good."""
    from . import guards

    keys = list(compiled._static)
    return len(keys) >= 2 and guards.describe_difference(keys[-2], keys[-1]) == \
        "arguments changed"


def _piece(owner, module):
    """The :class:`_Piece` of ``module`` on behalf of ``owner`` (made on first use, with the
    owner's settings)."""
    from .compiled import CompiledFunction

    pieces = _PIECES.setdefault(owner, {})
    piece = pieces.get(id(module))
    if piece is None or piece.module is not module:
        compiled = CompiledFunction(module.forward, module=module, fullgraph=False,
                                    dynamic=owner._dynamic, backend=owner._backend_name,
                                    recompile_limit=owner._limit)
        piece = pieces[id(module)] = _Piece(module, compiled, timed=True)
    return piece


def _worth_compiling(compiled):
    """Whether a routed module's compiled function saves anything: it has not captured yet,
    it broke (its own children are routed), or one of its graphs computes several steps."""
    entries = compiled._static.values()
    if not entries:
        return True
    for entry in entries:
        if entry.run is None or entry.graph is None:
            return True
        if sum(1 for n in entry.graph.nodes if n.kind in ("op", "call")) >= _WORTH_COMPILING:
            return True
    return False


def _install_shims(owner, modules):
    """Point each module's ``forward`` at its compiled function for the duration of a call;
    return the instance dicts to clean up. A module that already has an instance
    ``forward`` (``Module.compile()``, a user's own patch) is left alone."""
    installed = []
    for module in modules:
        state = module.__dict__
        if "forward" in state:
            continue
        piece = _piece(owner, module)
        if not piece.pays():
            continue
        state["forward"] = _Shim(state, piece)
        installed.append(state)
    return installed


class _Shim:
    """A routed module's ``forward``: takes itself out of the module's dict while the
    compiled function runs, so the module's guard key (which lists the module's attribute
    names) is the same as outside the broken call."""

    __slots__ = ("state", "piece")

    def __init__(self, state, piece):
        self.state = state
        self.piece = piece

    def __call__(self, *args, **kwargs):
        state = self.state
        state.pop("forward", None)  # (another thread's broken call may have removed it)
        try:
            piece = self.piece
            if piece.trial is not None and piece.variants > 0 and _trace_state.tracer is None:
                return piece.trial.run(piece, args, kwargs)
            return piece.compiled(*args, **kwargs)
        finally:
            state["forward"] = self


def routed_modules(owner):
    """The modules whose calls ``owner`` (a compiled function) has compiled separately after
    a graph break, in the order they were first called.

    Example::

        >>> from ember._inductor.compiled import CompiledFunction
        >>> routed_modules(CompiledFunction(lambda x: x, fullgraph=False, dynamic=None,
        ...                                backend="eager"))
        []
    """
    return [piece.module for piece in _PIECES.get(owner, {}).values()]


def pieces_of(owner):
    """``owner``'s compiled functions of the modules it routed, recursively (a routed module
    that broke routes its own children).

    Example::

        >>> from ember._inductor.compiled import CompiledFunction
        >>> pieces_of(CompiledFunction(lambda x: x, fullgraph=False, dynamic=None,
        ...                            backend="eager"))
        []
    """
    found = []
    for piece in _PIECES.get(owner, {}).values():
        found.append(piece.compiled)
        found.extend(pieces_of(piece.compiled))
    for compiled in _SPLIT_PIECES.get(owner, ()):
        found.append(compiled)
        found.extend(pieces_of(compiled))
    return found


def describe_break(owner, reason, where, before):
    """The ``EMBER_LOGS=graph_breaks`` message for one break of ``owner``'s capture: why, the
    user's line, what was captured before it, and what runs eagerly.

    Example::

        >>> from ember._inductor.compiled import CompiledFunction
        >>> f = CompiledFunction(lambda x: x, fullgraph=False, dynamic=None, backend="eager")
        >>> print(describe_break(f, "print()", None, ["sin"]))  # doctest: +ELLIPSIS
        Graph break in <lambda>: print()
          captured before the break: 1 operator (sin)
          ...
    """
    lines = [f"Graph break in {owner._name()}: {reason}"]
    if where is not None:
        lines.append(f'  File "{where.filename}", line {where.lineno}, in {where.name}')
        if where.line:
            lines.append(f"    {where.line}")
    if before is not None:
        shown = ", ".join(before[:12]) + (", ..." if len(before) > 12 else "")
        plural = "" if len(before) == 1 else "s"
        lines.append(f"  captured before the break: {len(before)} operator{plural}"
                     + (f" ({shown})" if before else ""))
    lines.append("  the statements before and after the breaking one are compiled on their "
                 "own where the source can be cut; eager code runs with")
    if owner._module is not None:
        names = [name for name, child in owner._module.named_children()]
        listed = ", ".join(names) or "none"
        lines.append(f"  each submodule it calls compiled on its own ({listed})")
    else:
        lines.append("  each module it calls (from its globals, closure or arguments) compiled "
                     "on its own")
    return "\n".join(lines)


def routes_something(around, args, kwargs):
    """Whether ``around`` (an :class:`AroundBreaks`) has modules to compile for this call.

    Example::

        >>> from ember._inductor.compiled import CompiledFunction
        >>> f = CompiledFunction(lambda x: x, fullgraph=False, dynamic=None, backend="eager")
        >>> routes_something(AroundBreaks(f), (ember.ones(1),), {})
        False
    """
    if around.fixed is not None:
        return bool(around.fixed)
    return bool(_modules_of_function(around.owner, args, kwargs))
