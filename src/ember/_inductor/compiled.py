"""``ember.compile``: capture a function or module into a graph on its first call, cache the
graph under guards, and replay it while the guards hold.

A call is looked up by its guard key (``guards.py``). A miss captures the call again
(``capture.py``): the capture runs the function eagerly while recording, so the call's result
is the eager one, and the graph goes through the backend (``backends.py``) for the next calls.
A capture that found a graph break caches an entry that runs the function's own code eagerly
and compiles each module it calls on its own (``breaks.py``; ``fullgraph=True`` raises
instead). After ``config.cache_size_limit``
variants, new variants run eagerly with torch's warning.

Dynamic sizes: a size that changed between two calls with otherwise equal guards is traced
symbolically the next time (torch's automatic dynamic shapes; ``dynamic=True`` from the start,
``mark_dynamic`` for chosen dims). A symbolic graph is used for other sizes only once a capture
at a third size gave the same graph (nodes, parameters, constants): a graph whose structure
depends on the size (a constant of that size, a shape computed inside ember) stays specialised,
so a size change never gives a silently wrong answer.

Example::

    >>> f = ember.compile(lambda x: x.sin() * 2)
    >>> f(ember.zeros(2))
    tensor([0., 0.])
"""

from __future__ import annotations

import functools
import time
import weakref

from .._tensor import Tensor, _trace_state
from ..nn.modules.module import Module
from . import guards
from .backends import lookup_backend
from .breaks import AroundBreaks, describe_break
from .capture import GuardFailed, capture
from .state import (
    BackendCompilerFailed,
    Unsupported,
    config,
    counters,
    default_backend,
    log,
    log_enabled,
    stance,
    warn_logger,
)

__all__ = ["compile", "CompiledFunction", "OptimizedModule", "reset", "is_compiling"]

_ALL = []  # weak references to every compiled function, for reset()


def reset():
    """Forget every compiled graph (``torch._dynamo.reset``): the next calls capture again.
    The counters keep counting, as torch's do.

    Example::

        >>> reset()
    """
    for ref in _ALL:
        compiled = ref()
        if compiled is not None:
            compiled._clear()
    _ALL[:] = [ref for ref in _ALL if ref() is not None]


def is_compiling():
    """Whether a compiled function is being captured now (``torch.compiler.is_compiling``).

    Example::

        >>> is_compiling()
        False
    """
    from .capture import CaptureTracer

    return isinstance(_trace_state.tracer, CaptureTracer)


class _Done:
    """A call's result found while looking up its entry (a capture ran the call)."""

    __slots__ = ("result",)

    def __init__(self, result):
        self.result = result


class _Entry:
    """One cached variant: its key (shapes masked when dynamic), how to run it, and how to
    rebuild the output from the graph's flat tensors."""

    __slots__ = ("key", "run", "spec", "dynamic", "verified", "graph", "captured", "around")

    def __init__(self, key, run, spec, dynamic=None, graph=None, around=None):
        self.key = key
        self.run = run            # None: run the original function eagerly (graph break)
        self.around = around      # after a graph break: eager code, its modules compiled
        self.spec = spec
        self.dynamic = dynamic    # per tensor argument: the dims traced symbolically
        self.verified = False
        self.graph = graph
        self.captured = {}


class CompiledFunction:
    """The callable ``ember.compile(fn)`` returns: a cache of graphs keyed by guards.

    Example::

        >>> f = CompiledFunction(lambda x: x * 3, fullgraph=False, dynamic=None, backend="eager")
        >>> f(ember.ones(1))
        tensor([3.])
    """

    def __init__(self, fn, *, fullgraph, dynamic, backend, module=None, recompile_limit=None):
        self._fn = fn
        self._limit = recompile_limit
        self._module = module
        self._fullgraph = fullgraph
        self._dynamic = dynamic
        self._backend_name = backend
        self._backend = lookup_backend(backend)
        _ALL.append(weakref.ref(self))
        self._per_module = weakref.WeakKeyDictionary()  # module -> its compiled method
        self._clear()
        if module is None or fn is not module:
            functools.update_wrapper(self, fn)
        self._torchdynamo_orig_callable = fn

    def _clear(self):
        self._static = {}      # key -> _Entry
        self._fast = None      # guards.FastGuard of the static entry the last lookup hit
        self._fast_for = None  # that entry
        self._dynamic_entries = []
        self._modules = None
        self._referenced = None   # a plain function's global/closure tensors and modules
        self._attrs = None
        self._limit_warned = False
        self.compile_times = []   # seconds spent capturing and compiling, per graph

    # ------------------------------------------------------------ calling

    def __call__(self, /, *args, **kwargs):
        if _trace_state.tracer is not None or stance.current == "force_eager":
            return self._fn(*args, **kwargs)  # inside another capture: traced as its ops
        fast = self._fast
        if fast is not None and not kwargs and fast.matches(args):
            entry, tensors = fast.entry, list(args)
        else:
            found = self._lookup(args, kwargs)
            if type(found) is not tuple:
                return found.result
            entry, tensors = found
        return self._run(entry, tensors, args, kwargs)

    def _lookup(self, args, kwargs):
        """``(entry, tensors)`` from the full guard key, remembering a static hit as the
        fast guard; or, on a miss, a :class:`_Done` holding the call's result."""
        modules = self._modules
        if modules is None and self._module is not None:
            modules = self._modules = guards.GuardedModules(self._module.modules())
        key, tensors = guards.call_key(args, kwargs, modules or (), self._referenced)
        entry = self._static.get(key)
        if entry is not None:
            if self._fast_for is not entry:  # (None for a key of another kind: built once)
                self._fast_for = entry
                self._fast = guards.FastGuard.of(key, entry, modules, self._referenced)
            return entry, tensors
        entry = self._find_dynamic(key)
        if entry is None:
            # a miss may replace the guarded modules or referenced objects
            self._fast = self._fast_for = None
            return _Done(self._miss(key, tensors, args, kwargs))
        if not entry.verified:
            return _Done(self._verify(entry, key, tensors, args, kwargs))
        return entry, tensors

    def _run(self, entry, tensors, args, kwargs):
        if entry.run is None:
            if entry.around is not None:
                return entry.around(args, kwargs)
            return self._fn(*args, **kwargs)
        try:
            flat = entry.run(tensors)
        except GuardFailed:  # one of ember's input checks fails: eager code raises its error
            return self._fn(*args, **kwargs)
        return _unflatten(entry.spec, flat)

    def _find_dynamic(self, key):
        context, metas = key
        for entry in self._dynamic_entries:
            entry_context, entry_metas = entry.key
            if entry_context == context and len(entry_metas) == len(metas) and \
                    guards.mask_shapes(metas, entry.dynamic) == entry_metas:
                return entry
        return None

    # ------------------------------------------------------------ compiling

    def _miss(self, key, tensors, args, kwargs):
        if self._static and stance.current != "default":
            if stance.current == "fail_on_recompile":
                raise RuntimeError(f"Detected recompile when torch.compile stance is "
                                   f"'fail_on_recompile'. Recompiling {self._name()}: "
                                   f"{self._recompile_reason(key)}")
            return self._fn(*args, **kwargs)
        counters["frames"]["total"] += 1
        if self._graph_count() >= self._cache_limit():
            self._warn_limit(key)
            return self._fn(*args, **kwargs)
        reason = self._recompile_reason(key)
        if reason is not None:
            counters["recompiles"][reason] += 1
            if log_enabled("recompiles"):
                log.info("Recompiling function %s\n    triggered by the following guard "
                         "failure(s):\n    - %s", self._name(), reason)
        if self._module is not None:
            self._modules = guards.GuardedModules(self._module.modules())  # a changed tree
        else:
            self._referenced = guards.referenced_objects(self._fn)
        key, tensors = guards.call_key(args, kwargs, self._modules or (), self._referenced)
        dynamic = self._dynamic_dims(key, tensors)
        return self._compile(key, tensors, args, kwargs, dynamic)

    def _compile(self, key, tensors, args, kwargs, dynamic):
        start = time.perf_counter()
        found = self._capture(tensors, args, kwargs, dynamic)
        self._install(key, tensors, found, dynamic)
        self.compile_times.append(time.perf_counter() - start)
        return found.result

    def _install(self, key, tensors, found, dynamic):
        """Cache what a capture found under ``key``: the backend's callable, or an eager
        entry after a graph break; a symbolic graph also becomes a dynamic candidate."""
        if not found.ok:
            self._note_breaks(found.breaks, found.before_break)
            self._static[key] = _Entry(key, None, None, around=AroundBreaks(
                self, found.breaks, found.break_frames))
            return
        graph, spec = found.graph, found.spec
        counters["stats"]["unique_graphs"] += 1
        counters["stats"]["calls_captured"] += sum(1 for n in graph.nodes
                                                   if n.kind in ("op", "call"))
        counters["frames"]["ok"] += 1
        if log_enabled("graph_code"):
            log.info("captured graph of %s:\n%s", self._name(), graph)
        run = self._run_backend(graph, found.captured, tensors, found.grad_enabled)
        if run is None:
            self._static[key] = _Entry(key, None, None)
            return
        run = _in_modes(run, found.grad_enabled, key[0][3])
        self._static[key] = _Entry(key, run, spec, graph=graph)
        if any(dynamic) and not found.size_specialised:
            masked = guards.mask_shapes(key[1], dynamic)
            if masked is not None:
                candidate = _Entry((key[0], masked), run, spec, dynamic, graph)
                candidate.captured = found.captured
                self._dynamic_entries.append(candidate)

    def _run_backend(self, graph, captured, tensors, grad_enabled=None):
        """The backend's callable for ``graph``, compiled in the grad mode the graph runs in
        (``grad_enabled``; None: the call's); None (run eagerly) when it fails and
        ``config.suppress_errors`` is set, else torch's ``BackendCompilerFailed``."""
        from ..autograd import grad_mode

        saved = grad_mode.state.enabled
        if grad_enabled is not None:
            grad_mode.state.enabled = grad_enabled
        try:
            return self._backend(_copy_graph(graph), self._attr_table(captured), tensors)
        except Exception as error:
            name = self._backend_name if isinstance(self._backend_name, str) else \
                getattr(self._backend_name, "__name__", repr(self._backend_name))
            text = f"backend={name!r} raised:\n{type(error).__name__}: {error}"
            if config.suppress_errors:
                warn_logger.warning("%s\nember._dynamo.config.suppress_errors is set: "
                                    "running %s eagerly", text, self._name())
                return None
            raise BackendCompilerFailed(text) from error
        finally:
            grad_mode.state.enabled = saved

    def _verify(self, entry, key, tensors, args, kwargs):
        """Capture again at a new size: a graph equal to the symbolic one shows that it does
        not depend on the size, and serves every size from now on; otherwise the candidate
        is dropped and this size gets its own graph."""
        found = self._capture(tensors, args, kwargs, entry.dynamic)
        if found.ok and not found.size_specialised and found.spec == entry.spec and \
                _same_graph(entry.graph, found.graph, entry.captured, found.captured):
            entry.verified = True
            return found.result
        self._dynamic_entries.remove(entry)
        counters["frames"]["total"] += 1
        if self._graph_count() >= self._cache_limit():
            self._warn_limit(key)
            self._static[key] = _Entry(key, None, None)
            return found.result
        self._install(key, tensors, found, [frozenset()] * len(tensors))
        return found.result

    def _capture(self, tensors, args, kwargs, dynamic):
        attr_names, attrs = self._module_attrs()
        fn = self._fn
        before = guards.call_key(args, kwargs, self._modules or (), self._referenced)[0]
        reachable = self._modules or (self._referenced or ((), ()))[1]
        containers = guards.containers_snapshot(fn, args, kwargs, reachable)

        def call(_tensors):
            return fn(*args, **kwargs)
        found = capture(fn, tensors, call, attr_names, attrs, dynamic_sizes=any(dynamic),
                        fullgraph=self._fullgraph)
        after = guards.call_key(args, kwargs, self._modules or (), self._referenced)[0]
        if found.ok and containers != guards.containers_snapshot(fn, args, kwargs, reachable):
            after = None  # a list, dict or set changed: the replay would not change it
        if found.ok and after != before:
            reason = ("the function changed Python state the graph cannot replay ("
                      + (guards.describe_difference(before, after) if after is not None
                         else "a list, dict or set it reaches by name") + ")")
            if self._fullgraph:
                raise Unsupported(reason)
            found.graph, found.breaks = None, [(reason, None)]
        return found

    def _module_attrs(self):
        if self._module is None:
            return {}, ()
        names, attrs = {}, []
        for name, t in self._module.named_parameters(remove_duplicate=False):
            names.setdefault(id(t), name)
            attrs.append(t)
        for name, t in self._module.named_buffers(remove_duplicate=False):
            names.setdefault(id(t), name)
            attrs.append(t)
        self._attrs = {name: t for t, name in ((a, names[id(a)]) for a in attrs)}
        return names, attrs

    def _attr_table(self, captured):
        table = dict(self._attrs or {})
        table.update(captured)
        return table

    def _dynamic_dims(self, key, tensors):
        """Per tensor argument, the dims to trace symbolically."""
        marked = [set(getattr(t, "_dynamo_dynamic_indices", ())) for t in tensors]
        if self._dynamic is False:
            return [frozenset()] * len(tensors)
        if self._dynamic is True:
            return [frozenset(range(t.dim())) for t in tensors]
        if not config.automatic_dynamic_shapes:
            return [frozenset(m) for m in marked]
        context, metas = key
        for old in list(self._static):
            old_context, old_metas = old
            if old_context != context or len(old_metas) != len(metas):
                continue
            if all(a[1:5] == b[1:5] and len(a[0]) == len(b[0]) for a, b in zip(old_metas, metas)):
                for dims, a, b in zip(marked, old_metas, metas):
                    dims.update(d for d, (x, y) in enumerate(zip(a[0], b[0])) if x != y)
        return [frozenset(m) for m in marked]

    # ------------------------------------------------------------ bookkeeping

    def _cache_limit(self):
        return self._limit if self._limit is not None else config.cache_size_limit

    def _graph_count(self):
        return len(self._static)

    def _recompile_reason(self, key):
        if not self._static:
            return None
        last = next(reversed(self._static))
        return guards.describe_difference(last, key)

    def _warn_limit(self, key):
        if self._limit_warned:
            return
        self._limit_warned = True
        code = getattr(self._fn, "__code__", None) or getattr(
            getattr(self._module, "forward", None), "__code__", None)
        where = f"'{code.co_name}' ({code.co_filename}:{code.co_firstlineno})" if code \
            else repr(self._fn)
        warn_logger.warning(
            "torch._dynamo hit config.recompile_limit (%s)\n   function: %s\n   last reason: "
            "%s\nTo log all recompilation reasons, use EMBER_LOGS=\"recompiles\".",
            self._cache_limit(), where, self._recompile_reason(key))

    def _note_breaks(self, breaks, before_break=()):
        for i, (reason, where) in enumerate(breaks):
            counters["graph_break"][reason] += 1
            if log_enabled("graph_breaks"):
                before = before_break[i] if i < len(before_break) else None
                log.info("%s", describe_break(self, reason, where, before))

    def _name(self):
        if self._fn is self._module:
            return f"{type(self._module).__name__}.forward"
        return getattr(self._fn, "__qualname__", None) or repr(self._fn)

    def __deepcopy__(self, memo):
        """A copy compiles afresh for the copied function or module (graphs hold the
        original's tensors)."""
        import copy

        fn = copy.deepcopy(self._fn, memo)
        module = None if self._module is None else copy.deepcopy(self._module, memo)
        return CompiledFunction(fn, fullgraph=self._fullgraph, dynamic=self._dynamic,
                                backend=self._backend_name, module=module,
                                recompile_limit=self._limit)

    def __get__(self, obj, owner=None):
        """A compiled method binds like a function; on a module (``@ember.compile`` on
        ``forward``) each instance gets its own compiled function over the bound method,
        with the module's parameters and buffers as named graph attributes."""
        if obj is None:
            return self
        from ..nn.modules.module import Module

        if not isinstance(obj, Module):
            return functools.partial(self.__call__, obj)
        bound = self._per_module.get(obj)
        if bound is None:
            bound = CompiledFunction(self._fn.__get__(obj, owner), fullgraph=self._fullgraph,
                                     dynamic=self._dynamic, backend=self._backend_name,
                                     module=obj, recompile_limit=self._limit)
            self._per_module[obj] = bound
        return bound


def _in_modes(run, grad_enabled, autocast_on):
    """``run`` in grad mode ``grad_enabled`` (None: the caller's), and without autocast when
    the call had it on: the casts autocast made are nodes of the graph already, and casting
    again would round twice."""
    if grad_enabled is None and not autocast_on:
        return run
    from ..autograd import grad_mode
    from ..ops._registry import autocast_state

    def run_in_modes(tensors):
        saved = grad_mode.state.enabled, autocast_state.on
        if grad_enabled is not None:
            grad_mode.state.enabled = grad_enabled
        autocast_state.on = False
        try:
            return run(tensors)
        finally:
            grad_mode.state.enabled, autocast_state.on = saved
    return run_in_modes


def _same_graph(a, b, captured_a, captured_b):
    """Whether two captures recorded the same computation (up to the traced sizes): the same
    nodes with the same parameters, constants and captured tensors equal in value."""
    if len(a.nodes) != len(b.nodes) or len(a.inputs) != len(b.inputs):
        return False
    index_a = {v: i for i, v in enumerate(a.inputs)}
    index_b = {v: i for i, v in enumerate(b.inputs)}
    for n, m in zip(a.nodes, b.nodes):
        if n.kind != m.kind or len(n.inputs) != len(m.inputs) or len(n.outputs) != len(m.outputs):
            return False
        if n.kind == "op" and n.op is not m.op:
            return False
        if n.kind == "call" and n.params["fn"] != m.params["fn"]:
            return False
        if repr(n.params) != repr(m.params):
            return False
        for v, w in zip(n.inputs, m.inputs):
            if (v in index_a) != (w in index_b) or index_a.get(v) != index_b.get(w):
                return False
        name = n.params.get("name")
        if n.kind == "constant" and not _equal(a.constants[name], b.constants[name]):
            return False
        if n.kind == "get_attr" and name in captured_a and \
                not _equal(captured_a[name], captured_b.get(name)):
            return False
    return _tree_shape(a.output) == _tree_shape(b.output)


def _equal(x, y):
    if x is y:
        return True
    if not isinstance(y, Tensor) or x.shape != y.shape or x.dtype != y.dtype:
        return False
    from .._tensor import _trace_state

    saved, _trace_state.tracer = _trace_state.tracer, None
    try:
        import numpy as np

        return bool(np.array_equal(x._data, y._data))
    finally:
        _trace_state.tracer = saved


def _tree_shape(tree):
    if not isinstance(tree, tuple):
        return "v"
    kind, items = tree
    return (kind, tuple(_tree_shape(t) for t in items))


def _copy_graph(graph):
    from ..jit._passes import clone_graph

    return clone_graph(graph)


def _unflatten(spec, flat):
    kind = spec[0]
    if kind == "slot":
        return flat[spec[1]]
    if kind == "const":
        return spec[1]
    if kind == "namedtuple":
        return spec[1](*[_unflatten(s, flat) for s in spec[2]])
    if kind == "dict":
        return {k: _unflatten(s, flat) for k, s in spec[1]}
    items = [_unflatten(s, flat) for s in spec[1]]
    return tuple(items) if kind == "tuple" else items



# ---------------------------------------------------------------- modules and the entry point


class OptimizedModule(Module):
    """What ``ember.compile(module)`` returns: a module holding the original as ``_orig_mod``
    (so ``state_dict`` keys start with ``_orig_mod.``, as torch's do) whose calls go through
    the compiled function; other attributes are the original's.

    Example::

        >>> net = ember.compile(ember.nn.Linear(2, 1))
        >>> type(net).__name__, net.in_features
        ('OptimizedModule', 2)
    """

    def __init__(self, mod, compiled):
        super().__init__()
        self._orig_mod = mod
        object.__setattr__(self, "_compiled", compiled)
        object.__setattr__(self, "training", mod.training)

    def forward(self, *args, **kwargs):
        return self._compiled(*args, **kwargs)

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self._modules["_orig_mod"], name)

    @property
    def _torchdynamo_orig_callable(self):
        return self._orig_mod


OptimizedModule.__module__ = "ember._dynamo.eval_frame"


_MODES = ("default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")


def _check_mode(mode, options):
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be "
                           "specified at the same time.")
    if mode is not None and mode not in _MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: "
                           f"{', '.join(_MODES)}")
    if options is not None and not isinstance(options, dict):
        raise RuntimeError(f"options must be a dict, got {type(options).__name__}")


def compile(model=None, *, fullgraph=False, dynamic=None, backend=None, mode=None,
            options=None, name=None, disable=False, recompile_limit=None,
            isolate_recompiles=False, shapes_spec=None):
    """Compile ``model`` (a function or an :class:`ember.nn.Module`): on its first call the
    operators it runs are captured into a graph, which later calls with matching guards
    replay (``backend="inductor"`` also fuses element-wise chains). Code the compiler cannot
    capture runs eagerly (a graph break), or raises ``ember._dynamo.exc.Unsupported`` with
    ``fullgraph=True``. A module gives an ``OptimizedModule``; works as a decorator with or
    without arguments; ``disable=True`` returns ``model`` itself. ``backend=None`` is
    ``ember.compiler.get_default_backend()``; ``recompile_limit`` overrides
    ``config.cache_size_limit`` for this function; ``name``, ``isolate_recompiles`` and
    ``shapes_spec`` are accepted and have no effect.

    Example::

        >>> @ember.compile
        ... def f(x):
        ...     return x * 2
        >>> f(ember.ones(2))
        tensor([2., 2.])
    """
    _check_mode(mode, options)
    if model is None:
        def decorate(fn):
            return compile(fn, fullgraph=fullgraph, dynamic=dynamic, backend=backend,
                           mode=mode, options=options, disable=disable,
                           recompile_limit=recompile_limit)
        return decorate
    if not callable(model):
        raise RuntimeError(f"torch.compile: expected a callable, got {type(model).__name__}")
    if backend is None:
        backend = default_backend.current
    lookup_backend(backend)
    if disable:
        return model
    from ..nn.modules.module import Module

    module = model if isinstance(model, Module) else None
    compiled = CompiledFunction(model, fullgraph=fullgraph, dynamic=dynamic, backend=backend,
                                module=module, recompile_limit=recompile_limit)
    return compiled if module is None else OptimizedModule(model, compiled)


def compile_module_in_place(module, *args, **kwargs):
    """``Module.compile()``: calls of ``module`` run its ``forward`` compiled from now on.

    Example::

        >>> net = ember.nn.Linear(1, 1)
        >>> compile_module_in_place(net)
        >>> type(net.forward).__name__
        'CompiledFunction'
    """
    options = dict(kwargs)
    _check_mode(options.get("mode"), options.get("options"))
    if args:
        raise TypeError("Module.compile() takes keyword arguments only (those of "
                        "ember.compile)")
    if options.pop("disable", False):
        return
    for name in ("mode", "options"):
        options.pop(name, None)
    forward = module.forward
    compiled = CompiledFunction(forward, module=module,
                                fullgraph=options.pop("fullgraph", False),
                                dynamic=options.pop("dynamic", None),
                                backend=options.pop("backend", None) or default_backend.current)
    if options:
        raise TypeError(f"compile() got an unexpected keyword argument {next(iter(options))!r}")
    object.__setattr__(module, "forward", compiled)
