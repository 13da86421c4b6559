"""TorchScript's annotation helpers and switches, as torch.jit has them in eager mode.

Real programs annotate code for TorchScript (``Final`` constants, ``jit.annotate``,
``jit.isinstance`` refinements, ``jit.Attribute``) and flip compiler switches
(``set_fusion_strategy``, ``enable_onednn_fusion``). In eager mode torch treats all of them as
plain Python, and so does ember: the code runs, the annotations mean what Python says.
"""

from __future__ import annotations

import builtins
import contextlib
import typing
import warnings
from collections import namedtuple

Final = typing.Final

Attribute = namedtuple("Attribute", ["value", "type"])
Attribute.__doc__ = """A module attribute with its TorchScript type (torch.jit.Attribute).

In eager mode ``__init__`` simply receives the pair; scripting reads the type.

Example::

    >>> ember.jit.Attribute(0.5, float).value
    0.5
"""


class Error(Exception):
    """An exception raised by TorchScript code (torch.jit.Error).

    Example::

        >>> issubclass(ember.jit.Error, Exception)
        True
    """


def annotate(the_type, the_value):
    """Give ``the_value`` a TorchScript type; eager code gets the value back unchanged.

    Example::

        >>> ember.jit.annotate(list[int], [])
        []
    """
    return the_value


def isinstance(obj, target_type):  # noqa: A001 - torch's name
    """``isinstance`` that understands typing containers (``List[int]``, ``Dict[str, Tensor]``,
    ``Optional[...]``, ``Tuple[...]``, ``Union[...]``), as torch.jit.isinstance in eager mode.

    Every element is checked; an empty container matches any element type, with torch's warning
    that the inner type cannot be seen.

    Example::

        >>> ember.jit.isinstance([1, 2], list[int]), ember.jit.isinstance([1, 2.0], list[int])
        (True, False)
    """
    if _has_empty_container(obj):
        warnings.warn("The inner type of a container is lost when calling torch.jit.isinstance "
                      "in eager mode. For example, List[int] would become list and therefore "
                      "falsely return True for List[float] or List[str].", stacklevel=2)
    return _matches(obj, target_type)


def _has_empty_container(obj):
    if type(obj) in (list, tuple, dict):
        if not obj:
            return True
        values = obj.values() if type(obj) is dict else obj
        return any(_has_empty_container(v) for v in values)
    return False


def _matches(obj, target):
    origin = typing.get_origin(target)
    if origin is None:
        if target is None or target is type(None):
            return obj is None
        return builtins.isinstance(obj, target)
    args = typing.get_args(target)
    if origin is typing.Union or str(origin) == "<class 'types.UnionType'>":
        return any(_matches(obj, a) for a in args)
    if origin is list:
        return builtins.isinstance(obj, list) and all(_matches(v, args[0]) for v in obj)
    if origin is dict:
        return builtins.isinstance(obj, dict) and all(
            _matches(k, args[0]) and _matches(v, args[1]) for k, v in obj.items())
    if origin is tuple:
        if not builtins.isinstance(obj, tuple):
            return False
        return len(obj) == len(args) and all(_matches(v, a) for v, a in zip(obj, args))
    return builtins.isinstance(obj, origin)


def script_if_tracing(fn):
    """Compile ``fn`` only when called under tracing; eager calls run it as Python.

    Example::

        >>> @ember.jit.script_if_tracing
        ... def double(x):
        ...     return x * 2
        >>> double(ember.ones(1))
        tensor([2.])
    """
    return fn


def interface(obj):
    """Declare a TorchScript interface type; in eager mode the class is returned unchanged.

    Example::

        >>> @ember.jit.interface
        ... class Scorer:
        ...     def score(self, x): ...
    """
    return obj


_fusion_strategy = [("STATIC", 2), ("DYNAMIC", 10)]
_onednn_fusion = False


def set_fusion_strategy(strategy):
    """Set TorchScript's specialisation strategy (a list of ``("STATIC"|"DYNAMIC", depth)``)
    and return the previous one, as torch does; ember's tracer does not consult it.

    Example::

        >>> previous = ember.jit.set_fusion_strategy([("DYNAMIC", 4)])
        >>> _ = ember.jit.set_fusion_strategy(previous)
    """
    global _fusion_strategy
    for kind, depth in strategy:
        if kind not in ("STATIC", "DYNAMIC") or not builtins.isinstance(depth, int):
            raise RuntimeError(f"Expected 'STATIC' or 'DYNAMIC' with an int depth, got "
                               f"({kind!r}, {depth!r})")
    previous, _fusion_strategy = _fusion_strategy, list(strategy)
    return previous


def enable_onednn_fusion(enabled: bool):
    """Switch TorchScript's oneDNN graph fusion flag (recorded; ember has no oneDNN graph).

    Example::

        >>> ember.jit.enable_onednn_fusion(False)
    """
    global _onednn_fusion
    _onednn_fusion = bool(enabled)


def onednn_fusion_enabled():
    """Whether :func:`enable_onednn_fusion` was switched on.

    Example::

        >>> ember.jit.onednn_fusion_enabled()
        False
    """
    return _onednn_fusion


class strict_fusion(contextlib.ContextDecorator):  # noqa: N801 - torch's name
    """Ask the fuser to fail when a region does not fuse; eager code runs the region as is.

    Example::

        >>> with ember.jit.strict_fusion():
        ...     y = ember.ones(2) + 1
    """

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def export_opnames(module):
    """The operator names a traced ScriptModule calls, as torch.jit.export_opnames lists them.

    Example::

        >>> traced = ember.jit.trace(ember.nn.ReLU(), ember.ones(2))
        >>> ember.jit.export_opnames(traced)  # doctest: +SKIP
        ['aten::relu']
    """
    graph = getattr(module, "graph", None)
    if graph is None:
        raise RuntimeError("export_opnames expects a ScriptModule made by ember.jit.trace or "
                           f"ember.jit.script, got {type(module).__name__}")
    return sorted({f"aten::{node.target}" for node in graph.nodes if node.kind == "op"})


class CompilationUnit:
    """TorchScript's container of compiled functions (torch.jit.CompilationUnit).

    An empty unit can be made; compiling TorchScript source text is not supported by ember
    (NotImplementedError names the alternative).

    Example::

        >>> unit = ember.jit.CompilationUnit()
    """

    def __init__(self, lang=None, _frames_up=0):
        if lang is not None:
            self.define(lang)

    def define(self, src, rcb=None, _frames_up=0):
        raise NotImplementedError(
            "torch.jit.CompilationUnit(source) compiles TorchScript source text, which ember "
            "does not parse; define the functions in Python and use ember.jit.script on them")
