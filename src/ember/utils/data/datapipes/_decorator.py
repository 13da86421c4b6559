"""Decorators and switches of the DataPipe API (``functional_datapipe``, determinism, typing)."""

from __future__ import annotations

import functools
import inspect

from .datapipe import IterDataPipe, MapDataPipe

__all__ = ["functional_datapipe", "guaranteed_datapipes_determinism", "non_deterministic",
           "argument_validation", "runtime_validation", "runtime_validation_disabled"]

_determinism = {"guaranteed": False}
_runtime_validation = {"enabled": True}


class functional_datapipe:  # noqa: N801  (torch's name)
    """Register the decorated DataPipe class under a functional name.

    Example::

        >>> @functional_datapipe("twice")
        ... class Twice(IterDataPipe):
        ...     def __init__(self, source):
        ...         self.source = source
        ...     def __iter__(self):
        ...         for x in self.source:
        ...             yield 2 * x
    """

    def __init__(self, name, enable_df_api_tracing=False):
        self.name = name
        self.enable_df_api_tracing = enable_df_api_tracing

    def __call__(self, cls):
        if issubclass(cls, IterDataPipe):
            IterDataPipe.register_datapipe_as_function(self.name, cls, self.enable_df_api_tracing)
        elif issubclass(cls, MapDataPipe):
            MapDataPipe.register_datapipe_as_function(self.name, cls)
        else:
            raise TypeError("`functional_datapipe` can only decorate IterDataPipe or MapDataPipe")
        return cls


class guaranteed_datapipes_determinism:  # noqa: N801
    """Inside this block, building a DataPipe marked :func:`non_deterministic` raises.

    Example::

        >>> with guaranteed_datapipes_determinism():
        ...     pass
    """

    def __enter__(self):
        self.previous = _determinism["guaranteed"]
        _determinism["guaranteed"] = True

    def __exit__(self, *exc):
        _determinism["guaranteed"] = self.previous


def non_deterministic(arg):
    """Mark a DataPipe class (or, given a function, its instances the function judges) as
    non-deterministic; constructing it under :class:`guaranteed_datapipes_determinism` raises.

    Example::

        >>> @non_deterministic
        ... class Random(IterDataPipe):
        ...     def __iter__(self):
        ...         yield 1
    """
    if isinstance(arg, type):
        if not issubclass(arg, IterDataPipe):
            raise TypeError("Only `IterDataPipe` can be decorated with `non_deterministic`, but "
                            f"{arg.__name__} is found")
        return _refuse_when_determinism_required(arg, lambda *a, **k: True)
    if not callable(arg):
        raise TypeError(f"{arg} can not be decorated by non_deterministic")
    return lambda cls: _refuse_when_determinism_required(cls, arg)


def _refuse_when_determinism_required(cls, judge):
    original_new = cls.__new__

    def __new__(klass, *args, **kwargs):
        if _determinism["guaranteed"] and judge(*args, **kwargs):
            raise TypeError(f"{cls.__name__} is non-deterministic, but you set "
                            "'guaranteed_datapipes_determinism'. You can turn off determinism "
                            "for this DataPipe if that is acceptable for your application")
        if original_new is object.__new__:
            return object.__new__(klass)
        return original_new(klass, *args, **kwargs)

    cls.__new__ = staticmethod(__new__)
    return cls


def argument_validation(f):
    """Check, at call time, that arguments annotated as a DataPipe type are DataPipes.

    Example::

        >>> @argument_validation
        ... def build(self, source: IterDataPipe): ...
    """
    signature = inspect.signature(f)

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        for name, value in bound.arguments.items():
            hint = f.__annotations__.get(name)
            base = getattr(hint, "__origin__", hint)
            if isinstance(base, type) and issubclass(base, (IterDataPipe, MapDataPipe)) and \
                    not isinstance(value, base):
                raise TypeError(f"Expected argument '{name}' as a {base.__name__}, but found "
                                f"{type(value)}")
        return f(*args, **kwargs)

    return wrapper


class runtime_validation_disabled:  # noqa: N801
    """Turn off :func:`runtime_validation` inside the block.

    Example::

        >>> with runtime_validation_disabled():
        ...     pass
    """

    def __enter__(self):
        self.previous = _runtime_validation["enabled"]
        _runtime_validation["enabled"] = False

    def __exit__(self, *exc):
        _runtime_validation["enabled"] = self.previous


def runtime_validation(f):
    """Decorate ``__iter__`` so each item is checked against the pipe's declared item type
    (``class P(IterDataPipe[int])``), raising ``RuntimeError`` on a mismatch.

    Example::

        >>> class Ints(IterDataPipe[int]):
        ...     @runtime_validation
        ...     def __iter__(self):
        ...         yield 1
    """
    if f.__name__ != "__iter__":
        raise TypeError(f"Can not decorate function {f.__name__} with 'runtime_validation'")

    @functools.wraps(f)
    def wrapper(self):
        expected = _declared_item_type(type(self))
        for item in f(self):
            if _runtime_validation["enabled"] and expected is not None and \
                    not isinstance(item, expected):
                raise RuntimeError(f"Expected an instance as subtype of {expected}, but found "
                                   f"{item}({type(item)})")
            yield item

    return wrapper


def _declared_item_type(cls):
    """``int`` for ``class P(IterDataPipe[int])``; None when undeclared or not a plain class."""
    for base in getattr(cls, "__orig_bases__", ()):
        args = getattr(base, "__args__", ())
        if args and isinstance(args[0], type):
            return args[0]
    return None
