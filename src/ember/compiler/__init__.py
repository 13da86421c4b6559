"""``ember.compiler``: ``torch.compiler``'s functions, backed by ember's compiler
(``ember/_inductor/``). Functions about things ember does not have (CUDA graphs, the
compile cache on disk, guard filters of the C++ guard manager) behave as torch's do when
there is nothing to act on.

Example::

    >>> ember.compiler.is_compiling()
    False
"""

from __future__ import annotations

import functools

from .._dynamo import allow_in_graph, assume_constant_result, disable, reset
from .._inductor.backends import list_backends
from .._inductor.compiled import compile, is_compiling
from .._inductor.state import default_backend, stance
from . import config  # noqa: F401

__all__ = ["compile", "config", "assume_constant_result", "reset", "allow_in_graph",
           "substitute_in_graph", "list_backends", "disable", "set_default_backend",
           "get_default_backend", "set_stance", "set_enable_guard_collectives",
           "cudagraph_mark_step_begin", "load_compiled_function", "wrap_numpy", "is_compiling",
           "is_dynamo_compiling", "is_exporting", "save_cache_artifacts",
           "load_cache_artifacts", "keep_portable_guards_unsafe",
           "skip_guard_on_inbuilt_nn_modules_unsafe", "skip_guard_on_all_nn_modules_unsafe",
           "keep_tensor_guards_unsafe", "skip_guard_on_globals_unsafe",
           "skip_all_guards_unsafe", "nested_compile_region"]


def is_dynamo_compiling():
    """Whether ember's capture is recording the current call (same as
    :func:`is_compiling`: ember has no separate export tracer).

    Example::

        >>> ember.compiler.is_dynamo_compiling()
        False
    """
    return is_compiling()


def is_exporting():
    """False: ember has no ``torch.export`` tracer that this could report.

    Example::

        >>> ember.compiler.is_exporting()
        False
    """
    return False


def set_default_backend(backend):
    """The backend ``ember.compile`` uses when given none (``None``: back to ``"inductor"``).

    Example::

        >>> ember.compiler.set_default_backend("eager")
        >>> ember.compiler.set_default_backend(None)
    """
    from .._inductor.backends import lookup_backend

    if backend is not None:
        lookup_backend(backend)
    default_backend.current = "inductor" if backend is None else backend


def get_default_backend():
    """The backend ``ember.compile`` uses when given none.

    Example::

        >>> ember.compiler.get_default_backend()
        'inductor'
    """
    return default_backend.current


_STANCES = ("default", "force_eager", "eager_on_recompile", "fail_on_recompile",
            "eager_then_compile", "aot_eager_then_compile")


class _StanceContext:
    """What :func:`set_stance` returns: the setting is made at once; used as a context
    manager or decorator it is undone on exit."""

    def __init__(self, previous):
        self.previous = previous

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        stance.current = self.previous

    def __call__(self, fn):
        new = stance.current
        stance.current = self.previous

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            saved, stance.current = stance.current, new
            try:
                return fn(*args, **kwargs)
            finally:
                stance.current = saved
        return wrapper


def set_stance(stance_name="default", *, skip_guard_eval_unsafe=False, force_backend=None):
    """How compiled functions behave from now on: ``"default"`` compiles, ``"force_eager"``
    runs them eagerly, ``"eager_on_recompile"`` reuses cached graphs but runs new variants
    eagerly, ``"fail_on_recompile"`` raises on a new variant. Works as a context manager or
    decorator too.

    Example::

        >>> with ember.compiler.set_stance("force_eager"):
        ...     pass
    """
    if stance_name not in _STANCES:
        raise RuntimeError(f"invalid torch.compile stance '{stance_name}'")
    if force_backend is not None and stance_name != "default":
        raise RuntimeError("force_backend can only be used with default stance")
    previous = stance.current
    stance.current = "default" if stance_name.endswith("then_compile") else stance_name
    return _StanceContext(previous)


def set_enable_guard_collectives(enabled):
    """Accepted (guards are checked per process in ember); returns the previous value.

    Example::

        >>> ember.compiler.set_enable_guard_collectives(False)
        False
    """
    previous = _guard_collectives[0]
    _guard_collectives[0] = bool(enabled)
    return previous


_guard_collectives = [False]


def cudagraph_mark_step_begin():
    """Mark the start of a step for CUDA graphs (ember records none: nothing to do).

    Example::

        >>> ember.compiler.cudagraph_mark_step_begin()
    """


def substitute_in_graph(original_fn, *, can_constant_fold_through=False,
                        skip_signature_check=False):
    """A decorator registering a traceable stand-in for ``original_fn``; ember's capture
    runs the original itself (it records operators, not bytecode), so the stand-in is
    returned unchanged.

    Example::

        >>> @ember.compiler.substitute_in_graph(len)
        ... def my_len(x):
        ...     return len(x)
    """
    if not callable(original_fn):
        raise TypeError(f"substitute_in_graph expects a function but got {original_fn!r}")

    def decorate(fn):
        return fn
    return decorate


def wrap_numpy(fn):
    """Let ``fn``, written for NumPy arrays, take and return tensors (arguments converted with
    ``.numpy()``, results with ``ember.from_numpy``).

    Example::

        >>> import numpy as np
        >>> ember.compiler.wrap_numpy(np.sin)(ember.zeros(2))
        tensor([0., 0.])
    """
    import numpy as np

    from .._tensor import Tensor, from_numpy

    def convert_in(x):
        return x.numpy() if isinstance(x, Tensor) else x

    def convert_out(x):
        if isinstance(x, np.ndarray):
            return from_numpy(x)
        if isinstance(x, (tuple, list)):
            return type(x)(convert_out(i) for i in x)
        return x

    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        return convert_out(fn(*[convert_in(a) for a in args],
                              **{k: convert_in(v) for k, v in kwargs.items()}))
    return wrapped


def save_cache_artifacts():
    """None: ember keeps no compile cache to save (torch returns None when its cache is
    empty).

    Example::

        >>> ember.compiler.save_cache_artifacts() is None
        True
    """
    return None


def load_cache_artifacts(serialized_artifacts):
    """None: ember has no compile cache to load into (torch returns None for an empty
    artifact).

    Example::

        >>> ember.compiler.load_cache_artifacts(b"") is None
        True
    """
    return None


def load_compiled_function(file, *, f_globals=None, external_data=None):
    """Ahead-of-time compiled functions are torch's serialized bytecode; ember cannot load
    them.

    Example::

        >>> ember.compiler.load_compiled_function(None)
        Traceback (most recent call last):
        NotImplementedError: ...
    """
    raise NotImplementedError("ember.compiler.load_compiled_function: ember compiles at run "
                              "time and cannot load torch's AOT-compiled functions")


def _keep_all(guard_entries):
    return [True for _ in guard_entries]


def keep_portable_guards_unsafe(guard_entries):
    """A guard filter for ``options={"guard_filter_fn": ...}``: here every guard is kept.

    Example::

        >>> ember.compiler.keep_portable_guards_unsafe([])
        []
    """
    return _keep_all(guard_entries)


def skip_guard_on_inbuilt_nn_modules_unsafe(guard_entries):
    """A guard filter dropping guards on torch's own modules (``guard_entry.orig_guard``
    whose source is an inbuilt module).

    Example::

        >>> ember.compiler.skip_guard_on_inbuilt_nn_modules_unsafe([])
        []
    """
    return [not getattr(e, "is_inbuilt_nn_module", False) for e in guard_entries]


def skip_guard_on_all_nn_modules_unsafe(guard_entries):
    """A guard filter dropping every guard on an nn.Module.

    Example::

        >>> ember.compiler.skip_guard_on_all_nn_modules_unsafe([])
        []
    """
    return [not getattr(e, "is_nn_module", False) for e in guard_entries]


def keep_tensor_guards_unsafe(guard_entries, keep_parameters=False):
    """A guard filter keeping only tensor guards (and parameters' with ``keep_parameters``).

    Example::

        >>> ember.compiler.keep_tensor_guards_unsafe([])
        []
    """
    return [getattr(e, "guard_type", None) == "TENSOR_MATCH" for e in guard_entries]


def skip_guard_on_globals_unsafe(guard_entries):
    """A guard filter dropping guards on globals.

    Example::

        >>> ember.compiler.skip_guard_on_globals_unsafe([])
        []
    """
    return [not getattr(e, "is_global", False) for e in guard_entries]


def skip_all_guards_unsafe(guard_entries):
    """A guard filter dropping every guard.

    Example::

        >>> ember.compiler.skip_all_guards_unsafe([object()])
        [False]
    """
    return [False for _ in guard_entries]


def nested_compile_region(fn=None, *, options=None, max_reuse_entries=8, reuse_hash_fn=None):
    """Mark ``fn`` as a region compiled once and reused; ember's capture records it inline
    (every call is captured as its operators), so ``fn`` is returned as it is.

    Example::

        >>> f = ember.compiler.nested_compile_region(lambda x: x + 1)
    """
    if fn is None:
        return functools.partial(nested_compile_region, options=options,
                                 max_reuse_entries=max_reuse_entries,
                                 reuse_hash_fn=reuse_hash_fn)
    return fn
