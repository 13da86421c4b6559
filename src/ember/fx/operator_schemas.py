"""``ember.fx.operator_schemas``: signatures of ember's operators, and normalising a call's
arguments against them (what ``Node.normalized_arguments`` uses).

torch reads its operators' TorchScript schemas; ember's operators are Python functions, so
their ``inspect.Signature`` is the schema. An operator with an ``out=`` keyword has two
signatures, as torch has two overloads: the functional one (without ``out``) first, then the
one that writes into ``out`` (the mutable one, refused by :func:`check_for_mutable_operation`).

>>> import ember
>>> normalize_function(ember.sum, (ember.ones(2), 0), normalize_to_only_use_kwargs=True).kwargs
{'input': tensor([1., 1.]), 'dim': 0, 'keepdim': False, 'dtype': None}
"""

from __future__ import annotations

import inspect
import numbers
import typing
import warnings
from typing import Any, NamedTuple

__all__ = ["ArgsKwargsPair", "check_for_mutable_operation", "get_signature_for_torch_op",
           "create_type_hint", "type_matches", "normalize_function", "normalize_module"]


class ArgsKwargsPair(NamedTuple):
    """Positional and keyword arguments of a normalised call."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any]


def _is_ember_operator(op):
    module = getattr(op, "__module__", None) or ""
    return callable(op) and not isinstance(op, type) and module.split(".")[0] == "ember"


def _signatures(op):
    """The functional signature of ``op`` and, when it takes ``out=``, the full one."""
    try:
        full = inspect.signature(inspect.unwrap(op))
    except (TypeError, ValueError):
        return None
    out = full.parameters.get("out")
    if out is None or out.kind is not inspect.Parameter.KEYWORD_ONLY:
        return [full]
    functional = full.replace(parameters=[p for p in full.parameters.values() if p.name != "out"])
    return [functional, full]


def get_signature_for_torch_op(op, return_schemas=False):
    """The signatures of ``op``'s overloads (``None`` if ``op`` is not an ember operator or
    has no signature). With ``return_schemas=True``, a pair ``(signatures, schemas)``; ember
    operators have no TorchScript schemas, so the second item is the signatures again.

    >>> import ember
    >>> [str(s) for s in get_signature_for_torch_op(ember.relu)]
    ['(input)', '(input, *, out=None)']
    """
    signatures = _signatures(op) if _is_ember_operator(op) else None
    if return_schemas:
        return signatures, signatures
    return signatures


def _binds(signature, args, kwargs):
    try:
        signature.bind(*args, **kwargs)
    except TypeError:
        return False
    return True


def check_for_mutable_operation(target, args, kwargs):
    """Raise ``RuntimeError`` if the call ``target(*args, **kwargs)`` writes into one of its
    arguments: an ``out=`` tensor, or an in-place operator (name ending in ``_``).

    >>> import ember
    >>> check_for_mutable_operation(ember.add, (1, 2), {})
    >>> check_for_mutable_operation(ember.add, (1, 2), {"out": 3})
    Traceback (most recent call last):
    RuntimeError: Tried to trace mutable operation add(input, other, *, alpha=1, out=None). ...
    """
    signatures = get_signature_for_torch_op(target)
    if not signatures:
        return
    matched = [signature for signature in signatures if _binds(signature, args, kwargs)]
    name = getattr(target, "__name__", "")
    in_place = name.endswith("_") and not name.endswith("__")
    if matched and (in_place or matched[0] is not signatures[0]):
        raise RuntimeError(f"Tried to trace mutable operation {name}{matched[0]}. FX only "
                           "supports functional code, so operations that mutate operands "
                           "in-place (e.g. via `out` arguments) are not supported")


def create_type_hint(x):
    """A type hint for a list or tuple of types: ``list[base]``/``tuple[base, ...]`` where
    ``base`` is the common base class among them (``Any`` when there is none); any other
    ``x`` is returned as is.

    >>> create_type_hint([int, bool])
    list[int]
    """
    if not isinstance(x, (list, tuple)):
        return x
    def hint(base):
        return list[base] if isinstance(x, list) else tuple[base, ...]
    try:
        if not x:
            return hint(Any)
        base = x[0]
        for candidate in x:
            if issubclass(candidate, base):
                continue
            if issubclass(base, candidate):
                base = candidate
            else:
                return hint(Any)
        return hint(base)
    except Exception:
        warnings.warn(f"We were not able to successfully create type hint from the type {x}",
                      stacklevel=2)
    return x


def type_matches(signature_type, argument_type):
    """Whether an argument of type ``argument_type`` fits a parameter annotated
    ``signature_type`` (unions, ``list[T]`` against lists and homogeneous tuples, an int
    parameter accepting a dtype, a Number accepting int and float, subclasses).

    >>> type_matches(list[int], tuple[int, int]), type_matches(int, str)
    (True, False)
    """
    from .._dtype import dtype
    if signature_type is argument_type:
        return True
    if typing.get_origin(signature_type) is typing.Union:
        return any(type_matches(member, argument_type)
                   for member in typing.get_args(signature_type))
    if typing.get_origin(signature_type) is list:
        return _list_type_matches(typing.get_args(signature_type)[0], argument_type)
    if signature_type is int and argument_type is dtype:
        return True
    if signature_type is numbers.Number and argument_type in (int, float):
        return True
    if inspect.isclass(argument_type) and inspect.isclass(signature_type):
        return issubclass(argument_type, signature_type)
    return False


def _list_type_matches(element_type, argument_type):
    if argument_type is int and element_type is int:  # int[1] parameters take a plain int
        return True
    if not inspect.isclass(element_type):
        warnings.warn(f"Does not support nested parametric types, got list[{element_type}]. "
                      "Please file a bug.", stacklevel=3)
        return False
    if typing.get_origin(argument_type) is list:
        return issubclass(typing.get_args(argument_type)[0], element_type)
    if typing.get_origin(argument_type) is not tuple:
        return False
    members = typing.get_args(argument_type)
    return members == ((),) or all(member is Ellipsis or issubclass(member, element_type)
                                   for member in members)


def normalize_function(target, args, kwargs=None, arg_types=None, kwarg_types=None,
                       normalize_to_only_use_kwargs=False):
    """Bind ``args``/``kwargs`` to ``target``'s signature with defaults filled in; returns an
    :class:`ArgsKwargsPair` (positional arguments kept positional unless
    ``normalize_to_only_use_kwargs``), or ``None`` when the signature has ``*args``/
    ``**kwargs``/positional-only parameters or no overload accepts the call. ``arg_types``
    and ``kwarg_types`` choose among overloads that all accept it.

    >>> import ember.nn.functional as F
    >>> normalize_function(F.relu, (1.0,))
    ArgsKwargsPair(args=(1.0,), kwargs={'inplace': False})
    """
    kwargs = kwargs or {}
    signatures = (_signatures(target) if _is_ember_operator(target)
                  else [inspect.signature(inspect.unwrap(target))])
    if not signatures:
        return None
    matched = [signature for signature in signatures if _binds(signature, args, kwargs)]
    if len(matched) > 1 and (arg_types is not None or kwarg_types is not None):
        matched = [signature for signature in matched
                   if _types_match(signature, arg_types or (), kwarg_types or {})] or matched
    if not matched:
        return None
    return _normalized(matched[0], args, kwargs, normalize_to_only_use_kwargs)


def _types_match(signature, arg_types, kwarg_types):
    try:
        bound = signature.bind(*arg_types, **kwarg_types)
    except TypeError:
        return False
    return all(type_matches(signature.parameters[name].annotation, argument_type)
               for name, argument_type in bound.arguments.items())


def normalize_module(root, target, args, kwargs=None, normalize_to_only_use_kwargs=False):
    """Like :func:`normalize_function` for the submodule ``target`` of ``root``, against its
    ``forward``; only for ember.nn's own layers (``None`` for other modules).

    >>> import ember
    >>> net = ember.nn.Sequential(ember.nn.ReLU())
    >>> normalize_module(net, "0", (1.0,), normalize_to_only_use_kwargs=True)
    ArgsKwargsPair(args=(), kwargs={'input': 1.0})
    """
    import ember.nn as nn
    try:
        module = root.get_submodule(target)
    except AttributeError as error:
        raise RuntimeError(f"Tried to normalize node with target {target} but root did not "
                           "have that target!") from error
    if getattr(nn, type(module).__name__, None) is not type(module):
        return None
    signature = inspect.signature(inspect.unwrap(module.forward))
    return _normalized(signature, args, kwargs or {}, normalize_to_only_use_kwargs)


def _normalized(signature, args, kwargs, only_kwargs):
    plain = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    if any(parameter.kind not in plain for parameter in signature.parameters.values()):
        return None
    bound = signature.bind(*args, **kwargs)
    bound.apply_defaults()
    new_args, new_kwargs = [], {}
    for index, name in enumerate(signature.parameters):
        if not only_kwargs and index < len(args):
            new_args.append(bound.arguments[name])
        else:
            new_kwargs[name] = bound.arguments[name]
    return ArgsKwargsPair(tuple(new_args), new_kwargs)
