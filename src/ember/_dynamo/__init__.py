"""``ember._dynamo``: the ``torch._dynamo`` names that real code touches, backed by ember's
compiler (``ember/_inductor/``): ``reset``, ``config``, ``disable``, ``mark_dynamic``,
``explain``, ``list_backends``, ``exc``, ``utils.counters``.

Example::

    >>> ember._dynamo.reset()
    >>> ember._dynamo.config.cache_size_limit
    8
"""

from __future__ import annotations

import functools

from .._inductor.backends import list_backends
from .._inductor.compiled import is_compiling, reset
from .._inductor.state import config
from . import eval_frame, exc, utils  # noqa: F401  (torch._dynamo's submodules)

__all__ = ["reset", "disable", "is_compiling", "config", "mark_dynamic", "mark_static",
           "maybe_mark_dynamic", "explain", "list_backends", "allow_in_graph",
           "assume_constant_result", "optimize", "set_stance", "ExplainOutput"]


def disable(fn=None, recursive=True, *, reason=None):
    """Run ``fn`` eagerly even when a compiled function calls it: the caller's capture breaks
    its graph there (``torch._dynamo.disable``). A decorator with or without arguments.

    Example::

        >>> @ember._dynamo.disable
        ... def f(x):
        ...     return x
        >>> f(ember.ones(1))
        tensor([1.])
    """
    if fn is None:
        return functools.partial(disable, recursive=recursive, reason=reason)
    from .._inductor.compiled import CompiledFunction

    if isinstance(fn, CompiledFunction):
        return fn._fn
    if getattr(fn, "_torchdynamo_disable", False):
        return fn

    @functools.wraps(fn)
    def eager(*args, **kwargs):
        from .._inductor.capture import CaptureTracer
        from .._tensor import _trace_state

        tracer = _trace_state.tracer
        if isinstance(tracer, CaptureTracer):
            tracer.graph_break("call to a function marked with ember._dynamo.disable"
                               + (f" ({reason})" if reason else ""))
        return fn(*args, **kwargs)
    eager._torchdynamo_disable = True
    eager._torchdynamo_orig_callable = fn
    return eager


def allow_in_graph(fn):
    """Return ``fn``: ember's capture records the operators any function runs, so every
    function is already allowed in the graph.

    Example::

        >>> f = ember._dynamo.allow_in_graph(ember.sin)
    """
    return fn


def assume_constant_result(fn):
    """Return ``fn``: its result is whatever the capture saw (non-tensor results already are
    constants of the graph).

    Example::

        >>> f = ember._dynamo.assume_constant_result(lambda: 3)
    """
    return fn


def _indices(index):
    return set(index) if isinstance(index, (list, tuple, set)) else {index}


def mark_dynamic(t, index, *, min=None, max=None, specialize_on=None):
    """Trace dimension(s) ``index`` of ``t`` symbolically from the first capture on.

    Example::

        >>> x = ember.ones(4, 3)
        >>> ember._dynamo.mark_dynamic(x, 0)
    """
    dims = set(getattr(t, "_dynamo_dynamic_indices", ()))
    t._dynamo_dynamic_indices = dims | _indices(index)


maybe_mark_dynamic = mark_dynamic


def mark_static(t, index=None):
    """Keep dimension(s) ``index`` (all without one) of ``t`` specialised.

    Example::

        >>> x = ember.ones(4, 3)
        >>> ember._dynamo.mark_static(x)
    """
    dims = set(getattr(t, "_dynamo_dynamic_indices", ()))
    t._dynamo_dynamic_indices = set() if index is None else dims - _indices(index)


def optimize(backend="inductor", *, nopython=False, dynamic=None, disable=False, **kwargs):
    """The older spelling of :func:`ember.compile` as a decorator factory
    (``torch._dynamo.optimize``); ``nopython=True`` is ``fullgraph=True``.

    Example::

        >>> f = ember._dynamo.optimize("eager")(lambda x: x + 1)
    """
    from .._inductor.compiled import compile

    return functools.partial(compile, backend=backend, fullgraph=nopython, dynamic=dynamic,
                             disable=disable)


def set_stance(stance="default", *, skip_guard_eval_unsafe=False, force_backend=None):
    """See :func:`ember.compiler.set_stance`.

    Example::

        >>> ember._dynamo.set_stance("default")  # doctest: +ELLIPSIS
        <...>
    """
    from ..compiler import set_stance as set_

    return set_(stance, skip_guard_eval_unsafe=skip_guard_eval_unsafe,
                force_backend=force_backend)


class ExplainOutput:
    """What :func:`explain` found: graphs captured, graph breaks and their reasons.

    A function whose capture breaks is cut at the breaking statement: the statements
    before and after it are graphs of their own, and so are the modules the breaking
    statement calls.

    Example::

        >>> ember._dynamo.explain(lambda x: x + 1)(ember.ones(1)).graph_break_count
        0
    """

    def __init__(self, graphs, graph_break_count, break_reasons, op_count, compile_times):
        self.graphs = graphs
        self.graph_count = len(graphs)
        self.graph_break_count = graph_break_count
        self.break_reasons = break_reasons
        self.op_count = op_count
        self.ops_per_graph = [[n.target for n in g.nodes] for g in graphs]
        self.out_guards = []
        self.compile_times = compile_times

    def __str__(self):
        lines = [f"Graph Count: {self.graph_count}",
                 f"Graph Break Count: {self.graph_break_count}",
                 f"Op Count: {self.op_count}", "Break Reasons:"]
        for i, reason in enumerate(self.break_reasons, 1):
            lines.append(f"  Break Reason {i}:\n    Reason: {reason.reason}")
            if reason.user_stack:
                frame = reason.user_stack[-1]
                lines.append(f"    User Stack:\n      File {frame.filename}, line "
                             f"{frame.lineno}, in {frame.name}")
        return "\n".join(lines) + "\n"


class _BreakReason:
    def __init__(self, reason, frame):
        self.reason = reason
        self.user_stack = [frame] if frame is not None else []


def explain(f, *extra_args, **extra_kwargs):
    """``explain(f)(*args, **kwargs)`` captures one call of ``f`` and returns an
    :class:`ExplainOutput` (graphs, graph breaks and their reasons). A call that breaks runs
    a second time, cut at the breaking statement and with the modules it calls compiled,
    to count the pieces' graphs and breaks (a piece that breaks again is counted as one
    break, without its own pieces).

    Example::

        >>> ember._dynamo.explain(lambda x: x.sin() + 1)(ember.ones(2)).graph_count
        1
    """
    def inner(*args, **kwargs):
        import time

        from .._inductor.capture import capture
        from .._inductor.guards import call_key

        _, tensors = call_key(args, kwargs, ())
        start = time.perf_counter()
        found = capture(f, tensors, lambda _t: f(*args, **kwargs))
        graphs = [found.graph] if found.ok else []
        reasons = [_BreakReason(r, w) for r, w in found.breaks]
        if not found.ok:
            _explain_pieces(f, args, kwargs, found, graphs, reasons)
        elapsed = time.perf_counter() - start
        ops = sum(1 for g in graphs for n in g.nodes if n.kind in ("op", "call"))
        return ExplainOutput(graphs, len(reasons), reasons, ops,
                             f"capture: {elapsed:.4f} s")
    if extra_args or extra_kwargs:
        return inner(*extra_args, **extra_kwargs)
    return inner


def _explain_pieces(f, args, kwargs, found, graphs, reasons):
    """Run a call that broke again, cut at its break and with the modules it calls compiled
    on their own; add the pieces' graphs and breaks to ``graphs`` and ``reasons``."""
    from .._inductor.breaks import AroundBreaks, pieces_of, routes_something
    from .._inductor.compiled import CompiledFunction
    from .._inductor.guards import referenced_objects
    from ..nn.modules.module import Module

    module = f if isinstance(f, Module) else None
    owner = CompiledFunction(f, fullgraph=False, dynamic=None, backend="eager", module=module)
    if module is None:
        owner._referenced = referenced_objects(f)
    around = AroundBreaks(owner, found.breaks, found.break_frames)
    if around.split is None and not routes_something(around, args, kwargs):
        return
    around(args, kwargs)
    for piece in pieces_of(owner):
        for entry in piece._static.values():
            if entry.graph is not None:
                graphs.append(entry.graph)
            elif entry.around is not None:
                reasons.extend(_BreakReason(r, w) for r, w in entry.around.breaks)
