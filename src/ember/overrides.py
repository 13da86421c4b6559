"""``ember.overrides``: the ``__torch_function__`` protocol, as ``torch.overrides``.

Every public function of ember (``ember.*``, ``ember.nn.functional.*``, ``ember.linalg``,
``ember.special``, ``ember.fft``) and every public method and operator of
:class:`~ember.Tensor` hands its call to the ``__torch_function__`` of a tensor-like argument:
an object whose type defines ``__torch_function__`` (an ``ember.fx.Proxy``, a Tensor subclass,
a wrapper class of some library). The rules are torch's:

* the arguments are searched left to right, looking inside lists and tuples
  (``ember.cat([a, b])``); each type counts once, and a subclass goes before its superclass;
* each is asked in turn, ``type(arg).__torch_function__(func, types, args, kwargs)``, until one
  returns something other than ``NotImplemented``; if all decline, ``TypeError``;
* ``func`` is the public function object the user called (``ember.nn.functional.leaky_relu``,
  ``ember.Tensor.add``, ``ember.Tensor.__add__``), so an override can compare it or record it;
* an active :class:`TorchFunctionMode` (``with MyMode():``) sees every call first, even calls
  with no tensor-like argument at all (``ember.zeros(3)``).

Exact ``Tensor`` and ``nn.Parameter`` never dispatch (their ``__torch_function__`` is the
default one or :func:`ember._C._disabled_torch_function_impl`), so ordinary code pays one type
check per argument. Example::

    >>> class Logged:
    ...     def __init__(self, t): self.t = t
    ...     @classmethod
    ...     def __torch_function__(cls, func, types, args=(), kwargs=None):
    ...         print("called", func.__name__)
    ...         args = [a.t if isinstance(a, Logged) else a for a in args]
    ...         return func(*args, **(kwargs or {}))
    >>> ember.add(Logged(ember.ones(2)), 1)
    called add
    tensor([2., 2.])
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import sys
import types as _types
import warnings
import warnings as _stdlib_warnings  # the real module (``warnings`` here becomes the shim)

from ._device import device as _device
from ._dtype import dtype as _dtype
from ._numpy_names import with_torch_names as _with_torch_names
from ._tensor import Size, Tensor
from ._traceback import hide_internal_frames as _hide_internal_frames
from .ops._methods import tensor_method as _tensor_method
from .ops._signature import is_checker_code as _is_checker_code

__all__ = ["get_ignored_functions", "get_overridable_functions", "get_testing_overrides",
           "handle_torch_function", "has_torch_function", "has_torch_function_unary",
           "has_torch_function_variadic", "resolve_name", "is_tensor_like",
           "is_tensor_method_or_property", "wrap_torch_function", "enable_reentrant_dispatch",
           "redispatch_function", "TorchFunctionMode", "BaseTorchFunctionMode"]


# ---------------------------------------------------------------- the dispatch state

_ENABLED, _SUBCLASSES_DISABLED, _ALL_DISABLED = 0, 1, 2


class _State:
    """Where dispatch stands: the mode stack (one list, never rebound, so that the public
    wrappers can hold it in a closure), how far dispatch is disabled, and whether the next
    check is skipped (:func:`redispatch_function`)."""

    __slots__ = ("modes", "level", "skip_next")

    def __init__(self):
        self.modes, self.level, self.skip_next = [], _ENABLED, False


_state = _State()
_modes = _state.modes


class _DisabledTorchFunctionImpl:
    """``torch._C._disabled_torch_function_impl``: a ``__torch_function__`` that opts a type out
    of dispatch (``nn.Parameter`` uses it); called directly, it runs ``func`` as a plain call.

    An instance, not a function, so that reading it through a class or an instance gives the
    same object (torch's is a builtin, which does not bind either).
    """

    __slots__ = ()

    def __call__(self, func, types, args=(), kwargs=None):
        with DisableTorchFunctionSubclass():
            return func(*args, **(kwargs or {}))

    def __repr__(self):
        return "<built-in function _disabled_torch_function_impl>"


_disabled_torch_function_impl = _DisabledTorchFunctionImpl()


class _DisableLevel:
    """A context manager that raises the disabled level for its block (see the subclasses)."""

    _level = _SUBCLASSES_DISABLED

    def __init__(self):
        self._saved = []

    def __enter__(self):
        self._saved.append(_state.level)
        _state.level = max(_state.level, self._level)
        return self

    def __exit__(self, *exc_info):
        _state.level = self._saved.pop()
        return False


class DisableTorchFunctionSubclass(_DisableLevel):
    """Within the block, arguments' ``__torch_function__`` is not consulted (modes still are):
    what ``Tensor.__torch_function__`` uses to run the real function on a subclass.

    Example::

        >>> with ember.overrides.DisableTorchFunctionSubclass():
        ...     pass
    """

    _level = _SUBCLASSES_DISABLED


class DisableTorchFunction(_DisableLevel):
    """Within the block, neither arguments' ``__torch_function__`` nor modes are consulted.

    Example::

        >>> with ember.overrides.DisableTorchFunction():
        ...     pass
    """

    _level = _ALL_DISABLED


def _is_torch_function_enabled():
    return _state.level == _ENABLED


def _is_torch_function_mode_enabled():
    return bool(_modes) and _state.level != _ALL_DISABLED


# ---------------------------------------------------------------- finding overloaded arguments

# Types that never dispatch, tested first so that plain calls pay one set lookup per argument.
# Types that opt out with the disabled implementation (nn.Parameter) join on first sight.
_PLAIN = {Tensor, int, float, bool, complex, str, type(None), Size, type(Ellipsis), _dtype,
          _device}


def _dispatches(cls):
    """Whether instances of ``cls`` take part in dispatch (torch's rule)."""
    method = getattr(cls, "__torch_function__", None)
    if method is _disabled_torch_function_impl:
        _PLAIN.add(cls)
        return False
    return method is not None


def _add_overloaded(value, found, seen):
    """Note ``value`` if its type dispatches and is new: subclasses go before their
    superclasses, otherwise left to right (torch's order)."""
    cls = type(value)
    if cls in _PLAIN or cls in seen or not _dispatches(cls):
        return
    seen.add(cls)
    for index, earlier in enumerate(found):
        if issubclass(cls, type(earlier)):
            found.insert(index, value)
            return
    found.append(value)


def _get_overloaded_args(relevant_args):
    """The arguments whose ``__torch_function__`` to call, in calling order (``relevant_args``
    is taken as given: lists inside it are not searched, as in torch)."""
    if _state.level != _ENABLED:
        return []
    found, seen = [], set()
    for arg in relevant_args:
        _add_overloaded(arg, found, seen)
    return found


def _search_call(value, found, seen):
    if type(value) in _PLAIN:
        return
    if isinstance(value, (list, tuple)) and not isinstance(value, Size):
        for item in value:
            _search_call(item, found, seen)
    else:
        _add_overloaded(value, found, seen)


def _overloaded_in_call(args, kwargs):
    """The overloaded arguments of a call to a public function: positional and keyword
    arguments, and the items of lists and tuples among them (``ember.cat([a, b])``)."""
    if _state.level != _ENABLED:
        return []
    found, seen = [], set()
    for arg in args:
        _search_call(arg, found, seen)
    for arg in kwargs.values():
        _search_call(arg, found, seen)
    return found


def _consume_skip():
    if _state.skip_next:
        _state.skip_next = False
        return True
    return False


def has_torch_function(relevant_args):
    """Whether any of ``relevant_args`` has a ``__torch_function__`` to call, or a
    :class:`TorchFunctionMode` is active. Exact tensors and parameters do not count.

    Example::

        >>> ember.overrides.has_torch_function((ember.ones(1), 2))
        False
    """
    if _consume_skip():
        return False
    return _is_torch_function_mode_enabled() or bool(_get_overloaded_args(relevant_args))


def has_torch_function_unary(arg):
    """:func:`has_torch_function` for one argument.

    Example::

        >>> ember.overrides.has_torch_function_unary(ember.ones(1))
        False
    """
    return has_torch_function((arg,))


def has_torch_function_variadic(*args):
    """:func:`has_torch_function` for the arguments given.

    Example::

        >>> ember.overrides.has_torch_function_variadic(ember.ones(1), ember.ones(1))
        False
    """
    return has_torch_function(args)


class _Declined(TypeError):
    """Every override returned NotImplemented (a TypeError, as torch raises)."""


def _call_overrides(public_api, overloaded_args, args, kwargs, native=False):
    """Ask the active mode, then each overloaded argument, until one does not decline.

    ``native``: ``public_api`` is one of ember's own functions, which word the error as torch's
    built-in functions do (others, as torch's Python ``handle_torch_function``).
    """
    types = tuple(type(arg) for arg in overloaded_args)
    mode = None
    if _is_torch_function_mode_enabled():
        with _pop_mode_temporarily() as mode:
            result = mode.__torch_function__(public_api, types, args, kwargs)
        if result is not NotImplemented:
            return result
    for arg in overloaded_args:
        method = arg.__torch_function__
        if getattr(method, "__self__", None) is arg:
            warnings.warn("Defining your `__torch_function__ as a plain method is deprecated "
                          "and will be an error in future, please define it as a classmethod.",
                          DeprecationWarning, stacklevel=3)
        result = method(public_api, types, args, kwargs)
        if result is not NotImplemented:
            return result
    name = _names.get(public_api) or \
        f"{getattr(public_api, '__module__', None)}.{public_api.__name__}"
    if native:
        handlers = ([f"  - mode object {mode!r}\n"] if mode is not None else []) + [
            f"  - tensor subclass {type(arg)}\n" for arg in overloaded_args]
        raise _Declined(f"Multiple dispatch failed for '{name}'; all __torch_function__ "
                        f"handlers returned NotImplemented:\n\n{''.join(handlers)}\nFor more "
                        "information, try re-running with TORCH_LOGS=not_implemented")
    message = (f"no implementation found for '{name}' on types that implement "
               f"__torch_function__: {[type(arg) for arg in overloaded_args]}")
    if mode is not None:
        message += f" nor in mode {mode}"
    raise _Declined(message)


def handle_torch_function(public_api, relevant_args, *args, **kwargs):
    """Call the ``__torch_function__`` overrides for ``public_api(*args, **kwargs)``; guard it
    with :func:`has_torch_function`. ``TypeError`` when every override declines.

    Example::

        >>> from ember.overrides import handle_torch_function, has_torch_function
        >>> def twice(a):
        ...     if has_torch_function((a,)):
        ...         return handle_torch_function(twice, (a,), a)
        ...     return a * 2
        >>> twice(ember.ones(1))
        tensor([2.])
    """
    return _call_overrides(public_api, _get_overloaded_args(relevant_args), args, kwargs)


def _dispatch(public_api, implementation, args, kwargs):
    """The slow path of a public function: an argument was not plainly a tensor or a scalar, or
    a mode is active. Overrides get ``kwargs`` None when there are none, as from torch's
    built-in functions."""
    if _consume_skip():
        return implementation(*args, **kwargs)
    overloaded = _overloaded_in_call(args, kwargs)
    if not overloaded and not _is_torch_function_mode_enabled():
        return implementation(*args, **kwargs)
    native = not (getattr(public_api, "__module__", None) or "").startswith("ember.nn")
    return _call_overrides(public_api, overloaded, args, kwargs or None, native)


# ---------------------------------------------------------------- the public wrappers


def _public(implementation, name, qualname=None):
    """``implementation`` as a public function that honours ``__torch_function__``.

    The common call (every argument exactly a tensor, a parameter or a Python scalar, no mode)
    costs one set lookup per argument before the call goes through.
    """
    plain, modes, tensor = _PLAIN, _modes, Tensor

    def public(*args, **kwargs):
        try:  # free until an error: then ember's frames leave its traceback (_traceback.py)
            if not modes:
                for arg in args:
                    if type(arg) is not tensor and type(arg) not in plain:
                        break
                else:
                    if not kwargs:
                        return implementation(*args)
                    for arg in kwargs.values():
                        if type(arg) not in plain:
                            break
                    else:
                        return implementation(*args, **kwargs)
            return _dispatch(public.__torch_function_public__, implementation, args, kwargs)
        except TypeError as error:
            translated = _with_torch_names(kwargs)  # x.sum(axis=0): NumPy's names, as torch
            if translated is not None:
                try:
                    return public(*args, **translated)
                except TypeError:
                    pass
            _hide_internal_frames(error)
            raise
        except Exception as error:
            _hide_internal_frames(error)
            raise

    functools.update_wrapper(public, implementation)
    public.__name__ = name
    public.__qualname__ = qualname or name
    public.__torch_function_implementation__ = implementation
    public.__torch_function_public__ = public  # what overrides see as ``func``
    return public


def _is_public_wrapper(value):
    return hasattr(value, "__torch_function_implementation__")


# Functions of ember's namespaces that do not dispatch, as in torch: they take no tensor, or only
# read or set global state (torch's get_ignored_functions minus its factory functions, which
# modes do see).
_IGNORED_NAMES = frozenset("""
    are_deterministic_algorithms_enabled autocast_decrement_nesting autocast_increment_nesting
    broadcast_shapes can_cast clear_autocast_cache compile cond get_autocast_cpu_dtype
    get_autocast_dtype get_autocast_gpu_dtype get_default_device get_default_dtype
    get_deterministic_debug_mode get_device_module get_float32_matmul_precision
    get_num_interop_threads get_num_threads get_rng_state set_rng_state initial_seed manual_seed
    seed is_anomaly_check_nan_enabled is_anomaly_enabled is_autocast_cache_enabled
    is_autocast_cpu_enabled is_autocast_enabled is_deterministic_algorithms_warn_only_enabled
    is_grad_enabled is_inference_mode_enabled is_storage is_tensor is_warn_always_enabled
    promote_types result_type set_anomaly_enabled set_autocast_cache_enabled
    set_autocast_cpu_dtype set_autocast_cpu_enabled set_autocast_dtype set_autocast_enabled
    set_autocast_gpu_dtype set_default_device set_default_dtype set_default_tensor_type
    set_deterministic_debug_mode set_float32_matmul_precision set_flush_denormal
    set_num_interop_threads set_num_threads set_printoptions set_warn_always typename
    use_deterministic_algorithms load save from_numpy from_dlpack as_tensor asarray tensor
    frombuffer from_file set_grad_enabled is_nonzero_warning vmap sym_fresh_size
    thread_safe_generator
""".split())
# ... and in torch.nn.functional: its helpers for writing functionals
_IGNORED_FUNCTIONAL_NAMES = frozenset({"assert_int_or_pair", "boolean_dispatch"})

# Tensor's operators and protocol methods that dispatch (besides its public methods).
_TENSOR_DUNDERS = frozenset("""
    __getitem__ __setitem__ __len__ __iter__ __reversed__ __contains__ __format__ __array__
    __neg__ __pos__ __abs__ __invert__ __matmul__ __rmatmul__ __imatmul__ __rsub__ __rdiv__
    __div__ __idiv__ __float__ __int__ __index__ __bool__ __complex__ __long__ __nonzero__
    __repr__ __rtruediv__ __rpow__ __rfloordiv__ __rmod__ __rlshift__ __rrshift__
    __deepcopy__ __reduce_ex__ __setstate__ __dlpack__ __dlpack_device__ __array_wrap__
""".split())

# Operators that torch hands to overrides as the named method (``a + b``: ``Tensor.add``).
_OPERATOR_FUNCS = {
    "__add__": "add", "__radd__": "add", "__sub__": "sub", "__mul__": "mul", "__rmul__": "mul",
    "__truediv__": "div", "__rtruediv__": "__rdiv__", "__mod__": "remainder",
    "__matmul__": "matmul", "__eq__": "eq", "__ne__": "ne", "__lt__": "lt", "__le__": "le",
    "__gt__": "gt", "__ge__": "ge", "__iadd__": "add_", "__isub__": "sub_", "__imul__": "mul_",
    "__itruediv__": "div_", "__ifloordiv__": "floor_divide_", "__imod__": "remainder_",
    "__rand__": "bitwise_and", "__ror__": "bitwise_or",
    "__rxor__": "bitwise_xor"}

# The namespaces whose functions dispatch: all their public functions (the top level less
# _IGNORED_NAMES), or the ones named (torch.nn.init's that torch's own tests list).
_NAMESPACES = {"ember": None, "ember.nn.functional": None, "ember.linalg": None,
               "ember.special": None, "ember.fft": None,
               "ember.nn.init": {"uniform_", "normal_", "constant_", "kaiming_uniform_"}}

# filled by _install: the public functions by namespace, their torch names, what was left out
_overridable = {}
_names = {}
_ignored = set()


def _wrap_namespace(module_name, only=None):
    module = sys.modules[module_name]
    ignored = {"ember": _IGNORED_NAMES,
               "ember.nn.functional": _IGNORED_FUNCTIONAL_NAMES}.get(module_name, ())
    wrapped = {}
    for name, value in list(vars(module).items()):
        if name.startswith("_") or not isinstance(value, _types.FunctionType):
            continue
        origin = value.__module__ or ""
        if not origin.startswith("ember") or origin == __name__ or name in ignored or (
                only is not None and name not in only):
            _ignored.add(value)
            continue
        if _is_public_wrapper(value):
            wrapped[value.__torch_function_implementation__] = value
            continue
        public = _public(value, name)
        public.__module__ = module_name  # pickled by reference as ember.add, as torch's
        setattr(module, name, public)
        wrapped[value] = public
        _overridable.setdefault(module, []).append(public)
        _names[public] = "torch" + module_name[len("ember"):] + "." + name
    return wrapped


def _wrap_tensor_methods():
    for name, value in list(vars(Tensor).items()):
        if name.startswith("_") and name not in _TENSOR_DUNDERS and not (
                name.startswith("__") and _is_public_wrapper(value)):
            continue
        if not isinstance(value, _types.FunctionType):
            continue
        if not _is_public_wrapper(value):
            # wrapping, not defining: the method came from tensor_method, and
            # ember.ops._methods.METHODS[name] (= value.__wrapped__) names its file. The
            # wrapper says ember._tensor, so that it pickles by reference as Tensor.<name>
            value = _public(value, name, qualname=f"Tensor.{name}")
            value.__module__ = Tensor.__module__
            setattr(Tensor, name, value)
        _overridable.setdefault(Tensor, []).append(value)
        _names[value] = f"torch.Tensor.{name}"
    for operator, method in _OPERATOR_FUNCS.items():
        public = vars(Tensor).get(operator)
        if _is_public_wrapper(public) and _is_public_wrapper(vars(Tensor).get(method)):
            public.__torch_function_public__ = vars(Tensor)[method]
    for name in _TENSOR_PROPERTIES:
        _wrap_property(name)


# Properties that dispatch (those giving tensors, which a subclass keeps), handed to overrides
# as torch hands them: ``Tensor.T.__get__``. Reading ``grad`` gives its value unconverted.
_TENSOR_PROPERTIES = ("T", "mT", "H", "mH", "real", "imag", "data", "grad")


def _wrap_property(name):
    old = vars(Tensor).get(name)
    if not isinstance(old, property) or old.fget is None or _is_public_wrapper(old.fget):
        return
    getter = _public(old.fget, "__get__", qualname=f"Tensor.{name}.__get__")
    new = property(getter, old.fset, old.fdel, old.__doc__)
    setattr(Tensor, name, new)
    public = getter.__torch_function_public__ = new.__get__  # equal (==) to later reads
    _overridable.setdefault(Tensor, []).append(public)
    _names[public] = f"torch.Tensor.{name}.__get__"
    if name == "grad":
        _NOWRAP.add(public)


def _install():
    """Make every public function and Tensor method dispatch (called once, at the end of
    ``ember/__init__.py``).

    ember.nn.functional's functions are also replaced where ember's own layers find them (their
    defining modules and ``ember.nn.modules``), so that a layer called on a tensor-like passes
    it on, as torch's do.
    """
    for module_name, only in _NAMESPACES.items():
        wrapped = _wrap_namespace(module_name, only)
        if module_name == "ember.nn.functional":
            _replace_references(wrapped, ("ember.nn._functional.", "ember.nn.modules."))
    _wrap_tensor_methods()
    _count_warning_levels_past_wrappers()


def _replace_references(wrapped, prefixes):
    """Point the modules named by ``prefixes`` at the public functions: their globals, and the
    default arguments of their functions and methods (``activation=F.relu``)."""
    for module_name, module in list(sys.modules.items()):
        if module is None or not module_name.startswith(prefixes):
            continue
        namespace = vars(module)
        for name, value in list(namespace.items()):
            if isinstance(value, _types.FunctionType) and value in wrapped:
                namespace[name] = wrapped[value]
            elif isinstance(value, _types.FunctionType) and value.__module__ == module_name:
                _replace_defaults(value, wrapped)
            elif isinstance(value, type) and value.__module__ == module_name:
                for member in vars(value).values():
                    if isinstance(member, _types.FunctionType):
                        _replace_defaults(member, wrapped)


def _replace_defaults(function, wrapped):
    def public(value):
        return wrapped.get(value, value) if isinstance(value, _types.FunctionType) else value
    if function.__defaults__:
        function.__defaults__ = tuple(public(value) for value in function.__defaults__)
    if function.__kwdefaults__:
        function.__kwdefaults__ = {key: public(value)
                                   for key, value in function.__kwdefaults__.items()}


# ---------------------------------------------------------------- warnings


class _WarningsSkippingWrappers:
    """The ``warnings`` module as ember's own modules see it: ``warn(..., stacklevel=n)`` counts
    only frames that are not the public wrappers above, so a warning still points at the line
    its ``stacklevel`` means (the user's call), as if the wrapper were not there, as torch's
    check in C++ is not. Everything else is the ``warnings`` module itself."""

    def __getattr__(self, name):
        return getattr(_stdlib_warnings, name)

    @staticmethod
    def warn(message, category=None, stacklevel=1, source=None):
        frame, skipped = sys._getframe(1), 0
        for _ in range(stacklevel - 1):
            frame = frame.f_back
            while frame is not None and (frame.f_code is _WRAPPER_CODE
                                         or _is_checker_code(frame.f_code)):
                skipped += 1
                frame = frame.f_back
            if frame is None:
                break
        _stdlib_warnings.warn(message, category, stacklevel + skipped + 1, source)


_WRAPPER_CODE = _public(len, "len").__code__  # every public wrapper runs this code object


def _count_warning_levels_past_wrappers():
    """Give every loaded ember module that warns the ``warnings`` that skips the wrappers."""
    shim = _WarningsSkippingWrappers()
    for module_name, module in list(sys.modules.items()):
        if module is not None and module_name.startswith("ember") and \
                vars(module).get("warnings") is _stdlib_warnings:
            module.warnings = shim


# ---------------------------------------------------------------- Tensor's default


def _convert(result, cls):
    """``result`` with its tensors made instances of ``cls`` (tuples and lists looked into)."""
    if cls is Tensor:
        return result
    if isinstance(result, Tensor) and not isinstance(result, cls):
        return result.as_subclass(cls)
    if isinstance(result, (tuple, list)):
        items = [_convert(item, cls) for item in result]
        if hasattr(result, "_fields"):  # a named tuple (ember.return_types)
            return type(result)(*items)
        return type(result)(items)
    return result


def _tensor_torch_function(cls, func, types, args=(), kwargs=None):
    """Run ``func`` as for a plain tensor and make its tensor results instances of ``cls``, so
    that a subclass of Tensor keeps its type through every operation. Subclasses that override
    ``__torch_function__`` call this as the base case (``super().__torch_function__(...)``).

    Example::

        >>> class Tagged(ember.Tensor): pass
        >>> type(ember.ones(2).as_subclass(Tagged) + 1).__name__
        'Tagged'
    """
    if kwargs is None:
        kwargs = {}
    if not all(issubclass(cls, t) for t in types):
        return NotImplemented
    with DisableTorchFunctionSubclass():
        result = func(*args, **kwargs)
        if func in get_default_nowrap_functions():
            return result
        return _convert(result, cls)


_tensor_method(classmethod(_tensor_torch_function), "__torch_function__")


def get_default_nowrap_functions():
    """Public functions whose results ``Tensor.__torch_function__`` does not convert.

    Example::

        >>> len(ember.overrides.get_default_nowrap_functions()) >= 0
        True
    """
    return _NOWRAP


_NOWRAP = set()


# ---------------------------------------------------------------- modes


class TorchFunctionMode:
    """Intercept every public ember call within a ``with`` block: subclass it and define
    ``__torch_function__(self, func, types, args=(), kwargs=None)``.

    While the mode's own ``__torch_function__`` runs, the mode is off the stack, so calling
    ``func(*args, **kwargs)`` there runs the function (or the next mode). Modes nest.

    Example::

        >>> class Count(ember.overrides.TorchFunctionMode):
        ...     calls = 0
        ...     def __torch_function__(self, func, types, args=(), kwargs=None):
        ...         Count.calls += 1
        ...         return func(*args, **(kwargs or {}))
        >>> with Count():
        ...     _ = ember.ones(2) + 1
        >>> Count.calls
        2
    """

    def __init__(self):
        pass

    def __torch_function__(self, func, types, args=(), kwargs=None):
        raise NotImplementedError

    def __enter__(self):
        _push_mode(self)
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        _pop_mode()

    @classmethod
    def push(cls, *args, **kwargs):
        """Deprecated: the mode itself, to use in a ``with`` statement."""
        warnings.warn("`Mode.push()` is no longer necessary and can be replaced with just "
                      "`with Mode()`", stacklevel=2)
        return cls(*args, **kwargs)


class BaseTorchFunctionMode(TorchFunctionMode):
    """A mode that runs every function unchanged: subclass it and override only what you need.

    Example::

        >>> with ember.overrides.BaseTorchFunctionMode():
        ...     ember.ones(1) * 2
        tensor([2.])
    """

    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def _get_current_function_mode():
    return _modes[-1] if _modes else None


def _get_current_function_mode_stack():
    return list(_modes)


def _push_mode(mode):
    _modes.append(mode)


def _pop_mode():
    if not _modes:
        raise RuntimeError("Trying to pop from an empty mode stack")
    return _modes.pop()


@contextlib.contextmanager
def _pop_mode_temporarily():
    mode = _pop_mode()
    try:
        yield mode
    finally:
        _push_mode(mode)


@contextlib.contextmanager
def enable_reentrant_dispatch():
    """torch's re-entry into the dispatcher from ``__torch_dispatch__``. ember has no dispatcher
    below ``__torch_function__``, so the block simply runs.

    Example::

        >>> with ember.overrides.enable_reentrant_dispatch():
        ...     pass
    """
    yield


def redispatch_function(func, types, args, kwargs):
    """Call ``func`` skipping one level of ``__torch_function__`` dispatch: from inside an
    override, run the function itself on the same arguments (calls it makes still dispatch).

    Example::

        >>> ember.overrides.redispatch_function(ember.add, (), (ember.ones(1), 1), {})
        tensor([2.])
    """
    kwargs = kwargs or {}
    implementation = getattr(func, "__torch_function_implementation__", None)
    if implementation is not None:
        return implementation(*args, **kwargs)
    _state.skip_next = True
    try:
        return func(*args, **kwargs)
    finally:
        _state.skip_next = False


# ---------------------------------------------------------------- introspection


def wrap_torch_function(dispatcher):
    """Decorator: make a function of yours dispatch on the tensor-likes ``dispatcher(*args,
    **kwargs)`` returns (``dispatcher`` takes the function's own arguments).

    Example::

        >>> @ember.overrides.wrap_torch_function(lambda a: (a,))
        ... def double(a):
        ...     return a * 2
        >>> double(ember.ones(1))
        tensor([2.])
    """
    def decorate(func):
        @functools.wraps(func)
        def wrapped(*args, **kwargs):
            relevant_args = dispatcher(*args, **kwargs)
            if has_torch_function(relevant_args):
                return handle_torch_function(wrapped, relevant_args, *args, **kwargs)
            return func(*args, **kwargs)
        return wrapped
    return decorate


def is_tensor_like(inp):
    """Whether ``inp`` is a tensor or has ``__torch_function__`` (a tensor-like).

    Example::

        >>> ember.overrides.is_tensor_like(ember.ones(1)), ember.overrides.is_tensor_like(6)
        (True, False)
    """
    return type(inp) is Tensor or hasattr(inp, "__torch_function__")


def get_overridable_functions():
    """The functions that dispatch, by namespace: ``{ember: [...], ember.nn.functional: [...],
    ..., ember.Tensor: [methods and operators]}``.

    Example::

        >>> ember.add in ember.overrides.get_overridable_functions()[ember]
        True
    """
    return {namespace: list(functions) for namespace, functions in _overridable.items()}


def get_ignored_functions():
    """The public functions that do not dispatch (they take no tensor or only read or set global
    state), as torch's list.

    Example::

        >>> ember.is_grad_enabled in ember.overrides.get_ignored_functions()
        True
    """
    return set(_ignored)


def resolve_name(f):
    """The dotted name of a function handed to ``__torch_function__``, spelled as in torch
    (``'torch.add'``, ``'torch.Tensor.add'``), or None.

    Example::

        >>> ember.overrides.resolve_name(ember.nn.functional.relu)
        'torch.nn.functional.relu'
    """
    return _names.get(f)


def is_tensor_method_or_property(func):
    """Whether ``func`` (as handed to ``__torch_function__``) is a method of Tensor or a
    property's ``__get__``.

    Example::

        >>> is_method = ember.overrides.is_tensor_method_or_property
        >>> is_method(ember.Tensor.add), is_method(ember.add)
        (True, False)
    """
    return func in _tensor_methods() or getattr(func, "__name__", None) == "__get__"


@functools.cache
def _tensor_methods():
    return frozenset(_overridable.get(Tensor, ()))


def get_testing_overrides():
    """A dummy override (same signature, returns -1) for every function that dispatches, keyed
    by the function: what a test of a ``__torch_function__`` implementation iterates over.

    Example::

        >>> stubs = ember.overrides.get_testing_overrides()
        >>> stubs[ember.add](ember.ones(1), 2)
        -1
    """
    return {public: _stub(public) for functions in _overridable.values() for public in functions}


def _stub(public):
    def stub(*args, **kwargs):
        return -1
    try:
        stub.__signature__ = inspect.signature(public)
    except (TypeError, ValueError):  # no signature to copy
        pass
    stub.__name__ = public.__name__
    return stub
