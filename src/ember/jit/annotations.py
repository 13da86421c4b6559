"""``ember.jit.annotations``: reading type annotations as TorchScript does.

The predicates (``is_list``, ``is_optional``, ...) and type-comment parsing are real; turning
an annotation into a TorchScript type (:func:`ann_to_type` and the functions built on it)
needs TorchScript's type system, which ember does not have: those raise
``NotImplementedError`` naming the torch API (ember's ``jit.script`` reads Python
annotations directly).

Example::

    >>> from ember.jit.annotations import is_optional, split_type_line
    >>> is_optional(int | None)
    True
    >>> split_type_line("# type: (Tensor, int) -> Tensor")
    ('(Tensor, int)', 'Tensor')
"""

from __future__ import annotations

import inspect
import re
import types
import typing
from typing import Any, Dict, List, Tuple, Union, get_args, get_origin  # noqa: UP035

from .._jit_internal import BroadcastingList1, BroadcastingList2, BroadcastingList3

_JIT_TYPES = ("AnyType", "ComplexType", "DictType", "FloatType", "IntType", "ListType",
              "StringType", "TensorType", "TupleType")

__all__ = ["Any", "List", "BroadcastingList1", "BroadcastingList2", "BroadcastingList3", "Tuple",
           "is_tuple", "is_list", "Dict", "is_dict", "is_optional", "is_union",
           "Module", "get_signature", "check_fn", "get_param_names", "parse_type_line",
           "get_type_line", "split_type_line", "try_real_annotations",
           "try_ann_to_type", "ann_to_type"]
__all__ += _JIT_TYPES


def _missing_parameter(target):
    if target.endswith("ict"):
        raise RuntimeError(f"Attempted to use {target} without contained types. Please add "
                           f"contained type, e.g. {target}[int, int]")
    raise RuntimeError(f"Attempted to use {target} without a contained type. Please add a "
                       f"contained type, e.g. {target}[int]")


def _is_container(ann, bare, name, origin):
    if ann is bare:
        _missing_parameter(name)
    if not hasattr(ann, "__module__"):
        return False
    return ann.__module__ in ("builtins", "typing") and get_origin(ann) is origin


def is_tuple(ann):
    """Whether ``ann`` is ``Tuple[...]``/``tuple[...]`` (bare ``typing.Tuple`` raises).

    Example::

        >>> is_tuple(tuple[int, str])
        True
    """
    return _is_container(ann, typing.Tuple, "Tuple", tuple)  # noqa: UP006


def is_list(ann):
    """Whether ``ann`` is ``List[T]``/``list[T]``.

    Example::

        >>> is_list(list[int])
        True
    """
    return _is_container(ann, typing.List, "List", list)  # noqa: UP006


def is_dict(ann):
    """Whether ``ann`` is ``Dict[K, V]``/``dict[K, V]``.

    Example::

        >>> is_dict(dict[str, int])
        True
    """
    return _is_container(ann, typing.Dict, "Dict", dict)  # noqa: UP006


def is_union(ann):
    """Whether ``ann`` is a union (``Union[A, B]`` or ``A | B``).

    Example::

        >>> is_union(int | str)
        True
    """
    if ann is Union:
        _missing_parameter("Union")
    return isinstance(ann, types.UnionType) or (
        hasattr(ann, "__module__") and ann.__module__ == "typing" and get_origin(ann) is Union)


def is_optional(ann):
    """Whether ``ann`` is ``Optional[T]`` (a union of one type and None).

    Example::

        >>> is_optional(typing.Optional[int])
        True
    """
    if ann is typing.Optional:
        _missing_parameter("Optional")
    args = get_args(ann)
    return is_union(ann) and len(args) == 2 and (None in args or type(None) in args)


class Module:
    """A namespace of names for TorchScript type resolution (``Module("torch", {...})``).

    Example::

        >>> Module("m", {"x": 1}).x
        1
    """

    def __init__(self, name, members):
        self.name = name
        self.members = members

    def __getattr__(self, name):
        try:
            return self.members[name]
        except KeyError:
            raise RuntimeError(f"Module {self.name} has no member called {name}") from None


def split_type_line(type_line):
    """Split a ``# type: (args) -> ret`` comment into its argument and return parts.

    Example::

        >>> split_type_line("# type: (int) -> int")
        ('(int)', 'int')
    """
    start = len("# type:")
    try:
        arrow = type_line.index("->")
    except ValueError:
        raise RuntimeError("Syntax error in type annotation (couldn't find `->`)") from None
    return type_line[start:arrow].strip(), type_line[arrow + 2:].strip()


_IGNORE = re.compile(r"# type:\ ignore(\[[a-zA-Z-]+\])?$")
_TYPO = re.compile(r"#[\t ]*type[\t ]*(?!: ignore(\[.*\])?$):")


def get_type_line(source):
    """The ``# type:`` comment of a function's source (one line, or the per-parameter lines
    of PEP 484's long form joined), else None.

    Example::

        >>> get_type_line("def f(x):\\n    # type: (int) -> int\\n    return x")
        '# type: (int) -> int'
    """
    lines = list(enumerate(source.split("\n")))
    typed = [(n, line) for n, line in lines if "# type:" in line and not _IGNORE.search(line)]
    if not typed:
        wrong = [n for n, line in lines if _TYPO.search(line)]
        if wrong:
            raise RuntimeError(f"The annotation prefix in line {wrong[0]} is probably invalid.\n"
                               "It must be '# type:'\nSee PEP 484 (https://www.python.org/dev/"
                               "peps/pep-0484/#suggested-syntax-for-python-2-7-and-straddling-"
                               "code)\nfor examples")
        return None
    if len(typed) == 1:
        return typed[0][1].strip()
    return_line, parameters = None, []
    for _, line in typed:
        if "# type: (...) -> " in line:
            return_line = line
        else:
            parameters.append(line)
    if return_line is None:
        raise RuntimeError("Return type line '# type: (...) -> ...' not found on multiline "
                           "type annotation\nfor type lines:\n" + "\n".join(parameters))
    types_ = [line[line.index("# type:") + len("# type:"):].strip() for line in parameters]
    return return_line.replace("...", ", ".join(types_))


def get_param_names(fn, n_args):
    """The parameter names of ``fn`` (``"0"``, ``"1"``, ... for non-function callables).

    Example::

        >>> get_param_names(lambda a, b: a, 2)
        ['a', 'b']
    """
    if not inspect.isroutine(fn) and callable(fn) and inspect.isroutine(fn.__call__):
        fn = fn.__call__
    if inspect.isroutine(fn):
        return inspect.getfullargspec(inspect.unwrap(fn)).args
    return [str(i) for i in range(n_args)]


def check_fn(fn, loc):
    """Check that ``fn``'s source is one function definition, as TorchScript requires.

    Example::

        >>> def f(x):
        ...     return x
        >>> check_fn(f, None)
    """
    import ast
    import textwrap
    try:
        source = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError):
        return
    body = ast.parse(source).body
    if len(body) == 1 and isinstance(body[0], ast.ClassDef):
        raise RuntimeError(f"Cannot instantiate class '{body[0].name}' in a script function")
    if len(body) != 1 or not isinstance(body[0], ast.FunctionDef):
        raise RuntimeError("Expected a single top-level function")


def _no_type_system(name):
    raise NotImplementedError(
        f"torch.jit.annotations.{name} builds TorchScript types, which ember does not have; "
        "ember.jit.script reads the Python annotations directly")


def ann_to_type(ann, loc, rcb=None):
    """TorchScript's type for an annotation: not available in ember (raises)."""
    _no_type_system("ann_to_type")


def try_ann_to_type(ann, loc, rcb=None):
    """TorchScript's type for an annotation, or None: not available in ember (raises)."""
    _no_type_system("try_ann_to_type")


def parse_type_line(type_line, rcb, loc):
    """TorchScript types from a ``# type:`` comment: not available in ember (raises)."""
    _no_type_system("parse_type_line")


def get_signature(fn, rcb, loc, is_method):
    """TorchScript's signature of ``fn``: not available in ember (raises)."""
    _no_type_system("get_signature")


def try_real_annotations(fn, loc):
    """TorchScript types of ``fn``'s annotations (None if it has none); building them is not
    available in ember, so annotated functions raise."""
    signature = inspect.signature(fn)
    annotations = [signature.return_annotation] + [p.annotation for p in
                                                   signature.parameters.values()]
    if all(a is signature.empty for a in annotations):
        return None
    _no_type_system("try_real_annotations")


Any = Any
Dict = Dict  # noqa: UP006
List = List  # noqa: UP006
Tuple = Tuple  # noqa: UP006


def __getattr__(name):
    # TorchScript's type classes are ember's top-level placeholders, defined after ember.jit
    if name in _JIT_TYPES:
        import ember
        return getattr(ember, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
