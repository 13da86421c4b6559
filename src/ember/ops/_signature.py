"""Typed signatures, checked at the API boundary as torch's argument parser checks them.

A public function declares its signature in torch's schema language::

    @signature("cumsum(Tensor input, int dim, *, ScalarType? dtype=None, Tensor? out=None)")
    def cumsum(input, dim, *, dtype=None, out=None):
        ...

and every call is checked against it before the body (and any NumPy code) sees an argument:
``ember.cumsum(None, 0)`` raises torch's ``TypeError: cumsum(): argument 'input' (position 1)
must be Tensor, not NoneType``, ``ember.cumsum(x, 1.5)`` names ``dim``, an unknown keyword is
refused by Python's own binding with torch's wording.

How it stays fast: the schema is parsed and the checks are compiled on the function's first
call, so importing ember costs nothing per declaration. Each argument is tested with a single
``type(x) is ...`` guard; only an argument that fails its guard reaches the converting/raising
code (a NumPy integer for an ``int``, a 0-dim tensor for a ``Scalar``, a list for an ``int[]``).
The guards are inlined: the function is recompiled from its own source with them as the first
statements of its body (same function object, globals, closure and defaults), so a call costs
the guards alone, no extra frame. A function whose source is not at hand, or that is itself a
wrapper (``@autocast_policy``), gets a compiled checker that binds the arguments with the
function's own parameters and then calls it.

Types (torch's): ``Tensor``, ``Tensor[]``, ``Scalar``, ``int``, ``SymInt``, ``int[N]``,
``SymInt[]``, ``float``, ``float[]``, ``bool``, ``str``, ``ScalarType``, ``Device``,
``Layout``, ``Generator``, ``MemoryFormat``, and ``PyObject`` (anything: a Python-level
argument such as the legacy ``size_average``, as torch's parser's ``PyObject*``); a ``?`` suffix
also accepts None; parameters after ``*`` are keyword-only.
"""

from __future__ import annotations

import ast
import builtins
import functools
import inspect
import numbers
import os
import re
import sys
import types
import warnings

import numpy as np

from .. import _dtype as dt
from .._device import device as _device_type
from .._tensor import Tensor, layout, memory_format

__all__ = ["NOT_GIVEN", "Signature", "refusing", "signature", "signature_of"]


# ---------------------------------------------------------------- the schema language


class Param:
    """One parameter of a schema: ``int[1]? dim=None`` is name ``dim``, base type ``int``,
    a list (``size`` 1), optional, default ``"None"`` (kept as written), positional."""

    __slots__ = ("name", "base", "is_list", "size", "optional", "default", "keyword_only",
                 "varargs")

    def __init__(self, name, base, is_list, size, optional, default, keyword_only):
        self.name, self.base, self.is_list, self.size = name, base, is_list, size
        self.optional, self.default, self.keyword_only = optional, default, keyword_only
        self.varargs = False  # the implementation takes it as ``*name``

    @property
    def type_text(self):
        """The type as torch's schema writes it (``int[1]?``)."""
        size = "" if self.size is None else str(self.size)
        return self.base + (f"[{size}]" if self.is_list else "") + ("?" if self.optional else "")


_PARAM = re.compile(r"^(?P<base>[A-Za-z_]\w*)(?P<list>\[(?P<size>\d*)\])?(?P<opt>\?)?\s+"
                    r"(?P<name>\w+)(?:\s*=\s*(?P<default>.+))?$")
_SCHEMA = re.compile(r"^\s*(?P<name>[\w.]+)\s*\((?P<params>.*?)\)\s*(?:->\s*(?P<ret>.+))?$")
_BASES = frozenset(("Tensor", "Scalar", "int", "SymInt", "float", "bool", "str", "ScalarType",
                    "Device", "Layout", "Generator", "MemoryFormat", "Dimname", "PyObject"))


def parse_schema(text):
    """``(name, params, returns)`` of a schema string.

    Example::

        >>> name, params, _ = parse_schema("sum(Tensor input, int[1]? dim=None) -> Tensor")
        >>> name, [p.type_text for p in params]
        ('sum', ['Tensor', 'int[1]?'])
    """
    match = _SCHEMA.match(text)
    if match is None:
        raise ValueError(f"not a schema: {text!r}")
    params, keyword_only = [], False
    for part in _split_params(match["params"]):
        if part == "*":
            keyword_only = True
            continue
        found = _PARAM.match(part)
        if found is None or found["base"] not in _BASES:
            raise ValueError(f"bad parameter {part!r} in schema {text!r}")
        size = found["size"]
        params.append(Param(found["name"], found["base"], found["list"] is not None,
                            int(size) if size else None, found["opt"] is not None,
                            found["default"], keyword_only))
    return match["name"], params, (match["ret"] or "").strip()


def _split_params(text):
    """Split at the commas that are not inside brackets (``int[2] stride=[1, 1]``)."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        if char in "[(":
            depth += 1
        elif char in "])":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    last = text[start:].strip()
    if last:
        parts.append(last)
    return parts


# ---------------------------------------------------------------- checking one argument

# how torch names each type in its messages
_TYPE_NAMES = {"Tensor": "Tensor", "Scalar": "Number", "int": "int", "SymInt": "int",
               "float": "float", "bool": "bool", "str": "str", "ScalarType": "torch.dtype",
               "Device": "torch.device", "Layout": "torch.layout",
               "Generator": "torch.Generator", "MemoryFormat": "torch.memory_format",
               "Dimname": "name"}
_LIST_NAMES = {"Tensor": "tuple of Tensors", "int": "tuple of ints", "SymInt": "tuple of ints",
               "float": "tuple of floats", "bool": "tuple of bools", "Dimname": "tuple of names"}
_HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class made by a class statement


def type_name(value):
    """The name torch's messages give the type of ``value``: a class's ``__name__``, a
    built-in extension type's full name (``numpy.float64``).

    Example::

        >>> type_name(np.float64(1.0)), type_name(None)
        ('numpy.float64', 'NoneType')
    """
    cls = type(value)
    if cls.__flags__ & _HEAP_TYPE or cls.__module__ == "builtins":
        return cls.__name__
    return f"{cls.__module__}.{cls.__name__}"


class _Refused(Exception):
    """An argument that does not fit its type (``detail`` replaces torch's usual
    ``must be X, not Y`` ending where torch words it otherwise)."""

    def __init__(self, detail=None, positioned=True, whole=False):
        super().__init__(detail)
        self.detail, self.positioned, self.whole = detail, positioned, whole


def _as_int(value):
    """``value`` as an int, as torch's parser takes one: an int (not a bool), a NumPy integer,
    a 0-dim integer tensor."""
    cls = type(value)
    if cls is int:
        return value
    if isinstance(value, np.integer) or (isinstance(value, int) and cls is not bool):
        return int(value)
    if isinstance(value, Tensor) and value.ndim == 0 and value.dtype.category == dt._INT:
        return int(value.item())
    raise _Refused


def _as_int_element(value):
    """An element of an ``int[]``: torch also takes bools and integer tensors here."""
    if type(value) is bool:
        return int(value)
    return _as_int(value)


def _as_int_list(value, size):
    if not isinstance(value, (list, tuple)):
        # one int for a list: torch's functions take it for ``int[N]``, its methods for any
        # ``int[]`` (``x.flip(0)``); ember's functions serve as the methods, so both take it
        return _as_int(value)
    result = []
    for i, item in enumerate(value):
        try:
            result.append(_as_int_element(item))
        except _Refused:
            if i == 0:
                raise _Refused(f"must be tuple of ints, but found element of type "
                               f"{type_name(item)} at pos 0") from None
            raise _Refused(f"failed to unpack the object at pos {i + 1} with error \"type must "
                           f"be tuple of ints,but got {type_name(item)}\"",
                           positioned=False) from None
    return tuple(result)


def _as_tensor(value, numbers_ok, any_layout=False):
    if isinstance(value, Tensor):
        return value
    if numbers_ok and isinstance(value, (numbers.Number, np.generic)):
        return value
    if any_layout and isinstance(value, _other_layouts()):
        return value
    raise _Refused


def _other_layouts():
    """The classes of ember's tensors of other layouts that a ``Tensor`` parameter declared
    ``any_layout`` takes: nested and semi-structured ones, not subclasses of ember's
    ``Tensor`` (sparse COO/CSR/CSC tensors are, and pass as tensors)."""
    from ..nested._nested_tensor import NestedTensor
    from ..sparse._base import SparseTensorBase
    from ..sparse._semi_structured import SparseSemiStructuredTensor

    return (SparseTensorBase, SparseSemiStructuredTensor, NestedTensor)


def _element_list(param):
    """``param`` as the one list argument its ``*args`` may also be given as."""
    return Param(param.name, param.base, True, param.size, False, None, False)


def _varargs(convert_list, one_list_too):
    """The check of a ``*args`` parameter declared as a list (``SymInt[] size`` for
    ``def zeros(*size)``). Sizes and dims: torch takes them one by one or as one list, so the
    packed arguments are checked as the one list when they are a single list or tuple.
    Tensors: torch's Python functions (``broadcast_tensors(*tensors)``) pass the tuple on as
    their ``Tensor[]``, so one list is refused as its element 0, unless the function unpacks
    it itself (``one_list_too``: ``meshgrid``). The arguments are passed on as given."""
    def check(values):
        packed = values
        if len(values) == 1 and isinstance(values[0], (list, tuple)) and one_list_too:
            packed = values[0]
        convert_list(packed)
        return values
    return check


def _as_tensor_list(value):
    if isinstance(value, Tensor) or not isinstance(value, (list, tuple)):
        raise _Refused
    for i, item in enumerate(value):
        if not isinstance(item, Tensor):
            raise _Refused(f"expected Tensor as element {i} in argument 0, but got "
                           f"{type_name(item)}", whole=True)
    return value


def _as_scalar(value):
    if isinstance(value, (numbers.Number, np.generic)) and not isinstance(value, np.str_):
        return value
    if isinstance(value, Tensor) and value.ndim == 0:
        return value
    raise _Refused


def _as_float(value):
    if isinstance(value, (float, int, np.floating, np.integer)):
        return value
    if isinstance(value, Tensor) and value.ndim == 0 and not value.dtype.is_complex:
        return value.item()
    raise _Refused


def _as_float_list(value):
    if isinstance(value, (float, int, np.floating, np.integer)):
        return value
    if not isinstance(value, (list, tuple)):
        raise _Refused
    for item in value:
        _as_float(item)
    return value


def _as_bool(value):
    if type(value) is bool:
        return value
    raise _Refused


def _as_dtype(value):
    if isinstance(value, dt.dtype):
        return value
    if value in (builtins.float, builtins.int, builtins.bool, builtins.complex):
        return dt.to_dtype(value)
    raise _Refused


def _instance_of(kind):
    def check(value):
        if isinstance(value, kind):
            return value
        raise _Refused
    return check


def _as_generator(value):
    from .random import Generator

    if isinstance(value, Generator):
        return value
    raise _Refused


def _any(value):
    return value


def _converter(param, numbers_as_tensors, any_layout=False, one_list_too=False):
    """The function that checks (and converts) an argument of ``param``'s type."""
    base = param.base
    if param.is_list and param.varargs:
        return _varargs(_converter(_element_list(param), numbers_as_tensors, any_layout),
                        one_list_too or base != "Tensor")
    if param.is_list:
        if base in ("int", "SymInt"):
            return lambda value: _as_int_list(value, param.size)
        if base == "Tensor":
            return _as_tensor_list
        if base == "float":
            return _as_float_list
        return _instance_of((list, tuple))
    return {"Tensor": lambda value: _as_tensor(value, numbers_as_tensors, any_layout),
            "Scalar": _as_scalar, "int": _as_int, "SymInt": _as_int, "float": _as_float,
            "bool": _as_bool, "str": _instance_of(str), "Dimname": _instance_of(str),
            "ScalarType": _as_dtype, "Device": _instance_of((_device_type, str, int)),
            "Layout": _instance_of(layout), "MemoryFormat": _instance_of(memory_format),
            "Generator": _as_generator, "PyObject": _any}[base]


# the guard a value passes without further checks (``{v}`` is the argument's name)
_FAST_GUARDS = {"Tensor": "type({v}) is not Tensor", "int": "type({v}) is not int",
                "SymInt": "type({v}) is not int", "bool": "type({v}) is not bool",
                "float": "type({v}) is not float", "str": "type({v}) is not str",
                "Scalar": "type({v}) is not int and type({v}) is not float",
                "ScalarType": "type({v}) is not _dtype"}


def _guard(param, numbers_ok=False):
    v = param.name
    if param.base == "PyObject":
        return "False"
    if numbers_ok and param.base == "Tensor" and not param.is_list:
        fast = "type({v}) is not Tensor and type({v}) is not float and type({v}) is not int"
    elif param.is_list:
        fast = "type({v}) is not int" if param.base in ("int", "SymInt") else "True"
    else:
        fast = _FAST_GUARDS.get(param.base, "True")
    fast = fast.format(v=v)
    return f"{v} is not None and ({fast})" if param.optional else fast


def _varargs_guard(param):
    """The guard of a ``*args`` parameter (no names of its own, so that it can be inlined as
    it is). Sizes and dims: the first one plainly an int (``x.reshape(2, 3)``; the function
    checks each size as it reads it), or one list whose first one is (``x.reshape((2, 3))``);
    tensors: every one plainly a Tensor."""
    if param.base in ("int", "SymInt"):
        v = param.name
        return (f"{v} and type({v}[0]) is not int and not (len({v}) == 1 and (isinstance("
                f"{v}[0], tuple) or isinstance({v}[0], list)) and (not {v}[0] or "
                f"type({v}[0][0]) is int))")
    if param.base == "Tensor":
        return f"set(map(type, {param.name})) != {{Tensor}}"
    return "True"


# ---------------------------------------------------------------- the compiled checker


class Signature:
    """A parsed schema and the checker compiled from it.

    Example::

        >>> sig = Signature("cumsum(Tensor input, int dim)")
        >>> [p.name for p in sig.params]
        ['input', 'dim']
    """

    def __init__(self, schema, *, numbers_as_tensors=False, overloaded=False,
                 any_layout=False, one_list_too=False):
        self.schema = schema
        self.numbers_as_tensors = numbers_as_tensors
        self.overloaded = overloaded
        self.any_layout = any_layout
        self.one_list_too = one_list_too
        self._parsed = None

    def _parse(self):
        if self._parsed is None:
            self._parsed = parse_schema(self.schema)
        return self._parsed

    @property
    def name(self):
        """The function's name in messages (``linalg_norm`` for ``ember.linalg.norm``)."""
        return self._parse()[0]

    @property
    def params(self):
        """The :class:`Param` of each parameter, in order."""
        return self._parse()[1]

    def __repr__(self):
        return f"<signature {self.schema}>"

    def __str__(self):
        return self.schema

    # -- messages

    def refuse(self, param, value, detail=None, positioned=True):
        """The TypeError for ``value`` given to ``param`` (torch's wording; the position is
        named when the caller passed the argument by position)."""
        if detail is None and self._resolves_overload(param):
            return TypeError(self._combination_message())
        where = ""
        position = None if param.keyword_only or not positioned else _position(self, param)
        if position is not None:
            where = f" (position {position})"
        names = _LIST_NAMES if param.is_list else _TYPE_NAMES
        ending = detail or f"must be {names.get(param.base, param.base)}, not {type_name(value)}"
        return TypeError(f"{self.name}(): argument '{param.name}'{where} {ending}")

    def _resolves_overload(self, param):
        """Whether torch picks among its overloads by ``param``'s argument, so that a refused
        one gets the "invalid combination" message (``overloaded``: True means the second
        parameter, ``dim`` of ``sum``; ``"all"`` every parameter; or a tuple of names)."""
        overloaded = self.overloaded
        if overloaded is True:
            return param is self.params[1]
        return overloaded == "all" or (bool(overloaded) and param.name in overloaded)

    def _combination_message(self):
        args, kwargs, _ = _public_call()
        got = [type_name(a) for a in args or ()]
        got += [f"{k}={type_name(v)}" for k, v in (kwargs or {}).items()]
        listed = ", ".join(self._torch_param_text(p) for p in self.params if p.name != "self")
        return (f"{self.name}() received an invalid combination of arguments - got "
                f"({', '.join(got)}), but expected one of:\n * ({listed})\n")

    def _torch_param_text(self, param):
        names = _LIST_NAMES if param.is_list else _TYPE_NAMES
        text = f"{names.get(param.base, param.base)} {param.name}"
        if param.default is not None:
            text += f" = {param.default}"
        return ("*, " if param.keyword_only and param is self._first_keyword_only() else "") + \
            text

    def _first_keyword_only(self):
        return next((p for p in self.params if p.keyword_only), None)

    # -- compiling

    def compile(self, implementation):
        """The checking function for ``implementation`` (whose parameters must be the
        schema's, same names, same order; its defaults are kept)."""
        inner = implementation  # a decorated function: the parameters of the one it wraps
        while getattr(inner, "__wrapped__", None) is not None:
            inner = inner.__wrapped__
        code = inner.__code__
        names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
        params = self.params
        if code.co_flags & inspect.CO_VARARGS:  # ``*size``: declared where Python binds it
            varargs = code.co_varnames[len(names)]
            names = names[:code.co_argcount] + (varargs,) + names[code.co_argcount:]
            for param in params:
                param.varargs = param.name == varargs and param.is_list
        if tuple(p.name for p in params) != names:
            raise TypeError(f"signature {self.schema!r} does not match the parameters "
                            f"{names} of {implementation.__qualname__}")
        defaults = dict(zip(names[code.co_argcount - len(inner.__defaults__ or ()):],
                            inner.__defaults__ or ()))
        defaults.update(inner.__kwdefaults__ or {})
        namespace = {"Tensor": Tensor, "_dtype": dt.dtype, "_implementation": implementation,
                     "_check": [self._slow_check(p) for p in params], "_defaults": defaults}
        source = self._source(params, defaults, code.co_argcount)
        exec(compile(source, _code_file(self.name), "exec"), namespace)  # noqa: S102
        return namespace["checked"]

    def _source(self, params, defaults, positional_count):
        header, checks = [], []
        for i, param in enumerate(params):
            if i == positional_count and param.keyword_only:
                header.append("*")
            if param.varargs:
                header.append(f"*{param.name}")
                checks.append(f"    if {_varargs_guard(param)}:\n"
                              f"        {param.name} = _check[{i}]({param.name})\n")
                continue
            header.append(f"{param.name}=_defaults[{param.name!r}]" if param.name in defaults
                          else param.name)
            guard = _guard(param, self._numbers_ok(param))
            if guard == "False":  # (a PyObject: nothing to check)
                continue
            if param.name in defaults and not _passes(guard, param.name,
                                                      defaults[param.name]):
                guard = f"{param.name} is not _defaults[{param.name!r}] and ({guard})"
            checks.append(f"    if {guard}:\n"
                          f"        {param.name} = _check[{i}]({param.name})\n")
        positional = ", ".join(("*" if p.varargs else "") + p.name
                               for p in params[:positional_count + self._has_varargs()])
        keywords = ", ".join(f"{p.name}={p.name}"
                             for p in params[positional_count + self._has_varargs():])
        call = ", ".join(filter(None, (positional, keywords)))
        return (f"def checked({', '.join(header)}):\n" + "".join(checks) +
                f"    return _implementation({call})\n")

    def _has_varargs(self):
        return any(p.varargs for p in self.params)

    def _numbers_ok(self, param):
        numbers = self.numbers_as_tensors
        if isinstance(numbers, bool):
            return numbers and not param.keyword_only  # (never ``out=``)
        return param.name in numbers

    def _slow_check(self, param):
        """What an argument of ``param`` that failed its fast guard goes through: converted
        when it fits (a NumPy integer for an ``int``), else torch's TypeError."""
        convert = _converter(param, self._numbers_ok(param), self.any_layout,
                             self.one_list_too)

        def check(value):
            try:
                return convert(value)
            except _Refused as refused:
                if refused.whole:  # torch's message names no function nor argument
                    raise TypeError(refused.detail) from None
                raise self.refuse(param, value, refused.detail, refused.positioned) from None
        return check


def _passes(guard, name, value):
    """Whether ``value`` passes ``guard`` (so a default needs no exemption)."""
    return not eval(guard, {"Tensor": Tensor, "_dtype": dt.dtype}, {name: value})  # noqa: S307


def _public_call():
    """``(args, kwargs, method)``: the positional arguments and keywords the user passed, as
    the public wrapper of ``ember.overrides`` received them (it holds them as ``args`` and
    ``kwargs``, above the checker), and whether the call was a Tensor method's (whose ``self``
    torch does not count). ``(None, None, False)`` when no wrapper is on the stack. Runs only
    when an argument is refused."""
    from ..overrides import _WRAPPER_CODE

    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code is _WRAPPER_CODE:
            local = frame.f_locals
            public = local.get("public")
            method = public is not None and public.__qualname__.startswith("Tensor.")
            args = local.get("args", ())
            return (args[1:] if method else args), local["kwargs"], method
        frame = frame.f_back
    return None, None, False


def _position(sig, param):
    """The 1-based position of ``param``'s argument as the user wrote the call, or None when
    it was passed by keyword."""
    _, kwargs, method = _public_call()
    if kwargs is not None and param.name in kwargs:
        return None
    return sig.params.index(param) + (0 if method else 1)


# ---------------------------------------------------------------- declaring


def _stub_code():
    """The code of every declared function until its first call: ``stub`` and
    ``_compile_on_first_call`` are globals of each function's own namespace."""
    namespace = {}
    source = "def stub(*args, **kwargs):\n    return _compile_on_first_call(stub, args, kwargs)\n"
    exec(compile(source, _code_file("stub"), "exec"), namespace)  # noqa: S102
    return namespace["stub"].__code__


def _code_file(name):
    """The file name of generated code: inside ember's package, so that tracebacks hide its
    frames at the API boundary as they hide ember's own (``_traceback.py``)."""
    return f"{_CODE_PREFIX}{name}>"


_CODE_PREFIX = os.path.join(os.path.dirname(os.path.abspath(__file__)), "<signature ")


def is_checker_code(code):
    """Whether ``code`` is a compiled checker's (or its first-call stub's): a frame that
    ``warnings.warn(..., stacklevel=n)`` does not count, as it does not count the public
    wrappers of ``ember.overrides``, so a warning still points at the user's line.

    Example::

        >>> is_checker_code(is_checker_code.__code__)
        False
    """
    return code.co_filename.startswith(_CODE_PREFIX) or code in _FIRST_CALL_CODES


_STUB_CODE = _stub_code()


def _compile_on_first_call(stub, args, kwargs):
    """Compile the checker of ``stub``'s signature, make it ``stub``'s code (the function
    object others hold stays the same), and run the call."""
    namespace = stub.__globals__
    checked = namespace["_signature"].compile(namespace["_implementation_"])
    namespace.update(checked.__globals__)
    stub.__code__ = checked.__code__
    stub.__defaults__ = checked.__defaults__
    stub.__kwdefaults__ = checked.__kwdefaults__
    return stub(*args, **kwargs)


# ---------------------------------------------------------------- inlining the checks

# A declared function whose body can be recompiled from its source gets the checks as the
# first statements of its own body: a call then costs the guards alone. (A checker that calls
# the body costs a frame and a second binding of every argument: 50-200 ns a call.)
_FIRST_CALL = "_ember_first_call_"  # the stub's keyword-only parameter that compiles it
_CHECKER = "_ember_checked_"  # the same for a stub left calling the compiled checker
_SOURCE_FLAGS = annotations.compiler_flag  # (the feature ``from __future__`` binds above)
_GENERATOR_FLAGS = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR


def _inlinable(implementation):
    """Whether ``implementation`` is a plain function of a source file (not a wrapper, not a
    generator), whose body can take the checks; the source is read on the first call."""
    code = getattr(implementation, "__code__", None)
    return (type(implementation) is types.FunctionType and code.co_filename.endswith(".py")
            and getattr(implementation, "__wrapped__", None) is None
            and not code.co_flags & _GENERATOR_FLAGS)


@functools.cache
def _forwarding_code(freevars, target):
    """The code of ``def stub(*args, <target>=None, **kwargs)`` that calls its ``target``
    default, with the free variables ``freevars``: a function's code may be replaced only by
    code with as many free variables as its closure holds."""
    own_locals = f"    {' = '.join(freevars)} = None\n" if freevars else ""
    mention = f"            ({', '.join(freevars)},)\n" if freevars else "            pass\n"
    call = "(args, kwargs)" if target == _FIRST_CALL else "(*args, **kwargs)"
    source = (f"def outer():\n{own_locals}"
              f"    def stub(*args, {target}=None, **kwargs):\n"
              f"        if kwargs is None:  # (never; makes the free variables its own)\n"
              f"{mention}"
              f"        return {target}{call}\n"
              f"    return stub\n")
    namespace = {}
    exec(compile(source, _code_file("stub"), "exec"), namespace)  # noqa: S102
    return namespace["outer"]().__code__


def _inlining_stub(sig, implementation):
    """The function that stands for ``implementation`` until its first call and then becomes
    it, checks inlined: same globals, same closure, same defaults."""
    code = implementation.__code__
    stub = types.FunctionType(_forwarding_code(code.co_freevars, _FIRST_CALL),
                              implementation.__globals__, implementation.__name__, None,
                              implementation.__closure__)
    stub.__kwdefaults__ = {_FIRST_CALL: functools.partial(_inline_on_first_call, sig,
                                                          implementation, stub)}
    return stub


def _inline_on_first_call(sig, implementation, stub, args, kwargs):
    """Give ``stub`` the implementation's code with the checks inlined (or, when the source
    file no longer compiles to the code that runs, a call of the compiled checker), then run
    the call."""
    checked = sig.compile(implementation)  # (it also verifies the parameters' names)
    code = _inlined_code(sig, implementation, checked)
    if code is None:
        checked.__name__, checked.__qualname__ = stub.__name__, stub.__qualname__  # (messages)
        stub.__code__ = _forwarding_code(implementation.__code__.co_freevars, _CHECKER)
        stub.__defaults__, stub.__kwdefaults__ = None, {_CHECKER: checked}
    else:
        stub.__code__ = code
        stub.__defaults__ = implementation.__defaults__
        stub.__kwdefaults__ = implementation.__kwdefaults__
    return stub(*args, **kwargs)


def _inlined_code(sig, implementation, checked):
    """``implementation``'s code with ``checked``'s tests as its first statements, or None."""
    code = implementation.__code__
    top = _top_statement(code)
    if top is None or _compiled_function(top, code) != code:
        return None  # no source, or not the source of the code that runs
    function = _function_node(top, code)
    checks, constants = _check_statements(sig, checked, code.co_argcount)
    for node in checks:
        for part in ast.walk(node):  # the checks count as the ``def`` line
            part.lineno = part.end_lineno = function.lineno
            part.col_offset = part.end_col_offset = function.col_offset
    body = function.body
    docstring = int(isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                    and isinstance(body[0].value.value, str))
    function.body = body[:docstring] + checks + body[docstring:]
    inlined = _compiled_function(top, code)
    if inlined is None or inlined.co_freevars != code.co_freevars:
        return None
    return inlined.replace(co_consts=tuple(
        constants.get(c, c) if type(c) is str else c for c in inlined.co_consts))


def _check_statements(sig, checked, positional_count):
    """The compiled checker's tests as statements, and the objects they name: each name that
    is not a parameter (``Tensor``, ``type``, ``_check[i]``, ``_defaults[name]``) becomes a
    constant, marked by a unique string until the code is compiled, so that nothing in the
    function's module or body can shadow it."""
    namespace = checked.__globals__
    source = sig._source(sig.params, namespace["_defaults"], positional_count)
    statements = ast.parse(source).body[0].body[:-1]  # (the last one calls the body)
    constants = {}

    class Constants(ast.NodeTransformer):
        def mark(self, value):
            marker = f"\0ember-signature-constant-{len(constants)}"
            constants[marker] = value
            return ast.Constant(marker)

        def visit_Subscript(self, node):
            if isinstance(node.value, ast.Name) and node.value.id in ("_check", "_defaults"):
                return self.mark(namespace[node.value.id][node.slice.value])
            return self.generic_visit(node)

        def visit_Name(self, node):
            if node.id in own or not isinstance(node.ctx, ast.Load):
                return node
            return self.mark(namespace[node.id] if node.id in namespace
                             else getattr(builtins, node.id))

    own = {p.name for p in sig.params}
    return [Constants().visit(node) for node in statements], constants


@functools.cache
def _module_outline(filename):
    """``(imports, spans)`` of the module ``filename``: its import statements outside
    functions and classes (see :func:`_imports`) and the first and last lines of each of its
    top-level statements; None when it cannot be read or parsed. Kept for every module (small:
    the whole tree is dropped), so that each first call parses only its own statement."""
    try:
        with open(filename, "rb") as file:
            tree = ast.parse(file.read(), filename)
    except (OSError, SyntaxError, ValueError):
        return None
    imports = [node for node in _imports(tree)
               if not (isinstance(node, ast.ImportFrom) and node.module == "__future__")]
    return imports, [(_starts(node), node.end_lineno) for node in tree.body]


def _starts(node):
    """The first line of a statement as its code counts it: its first decorator's."""
    return min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", ())])


def _top_statement(code):
    """The statement of its module that holds the definition of ``code``, parsed on its own
    (with the module's line numbers), or None."""
    outline = _module_outline(code.co_filename)
    if outline is None:
        return None
    for first, last in outline[1]:
        if first <= code.co_firstlineno <= last:
            break
    else:
        return None
    try:
        with open(code.co_filename, "rb") as file:
            lines = file.read().splitlines(keepends=True)[first - 1:last]
        node, = ast.parse(b"".join(lines), code.co_filename).body
    except (OSError, SyntaxError, ValueError):
        return None  # (the file changed since the outline was read)
    ast.increment_lineno(node, first - 1)
    return node if _function_node(node, code) is not None else None


def _function_node(top, code):
    return next((node for node in ast.walk(top)
                 if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and node.name == code.co_name and _starts(node) == code.co_firstlineno), None)


def _imports(tree):
    """The module's import statements outside functions and classes: compiled with the
    function, they tell the compiler which names are modules (``ember.cumsum(...)`` then
    compiles as an attribute load and a call, as in the module, not as a method call)."""
    found, pending = [], list(tree.body)
    while pending:
        node = pending.pop(0)
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            pending.extend(child for child in ast.iter_child_nodes(node)
                           if isinstance(child, ast.stmt))
    return found


def _compiled_function(top, code):
    """The code object that compiling ``top`` gives for the function ``code`` is of."""
    imports = _module_outline(code.co_filename)[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)  # (``is not`` a marker string)
        try:
            module = compile(ast.Module([*imports, top], []), code.co_filename, "exec",
                             flags=code.co_flags & _SOURCE_FLAGS, dont_inherit=True)
        except (SyntaxError, ValueError, TypeError):
            return None
    pending = [module]
    while pending:
        found = pending.pop()
        if found.co_qualname == code.co_qualname and \
                found.co_firstlineno == code.co_firstlineno:
            return found
        pending.extend(c for c in found.co_consts if isinstance(c, types.CodeType))
    return None


_FIRST_CALL_CODES = (_compile_on_first_call.__code__, _inline_on_first_call.__code__)


def signature(schema, *, numbers_as_tensors=False, overloaded=False, any_layout=False,
              one_list_too=False):
    """Decorator: check every call of the function against ``schema`` (torch's schema
    language) before its body runs, raising torch's TypeError for a refused argument.

    ``numbers_as_tensors``: a ``Tensor`` parameter also takes Python and NumPy numbers, as
    torch's ``add``/``mul``/... do (True: every one; or a tuple of parameter names).
    ``overloaded``: torch has several signatures for this function and picks one by the
    second argument (``sum``'s ``dim``), so a refused second argument gets torch's "received an
    invalid combination of arguments" message; ``"all"``: every refused argument does (``all``,
    ``any``); or a tuple of the parameter names that do.
    ``any_layout``: a ``Tensor`` parameter also takes ember's sparse and nested tensors (not
    subclasses of ``Tensor``), for functions that serve every layout (``clone``, ``numel``).
    A ``*args`` parameter of the function is declared as the list it stands for
    (``SymInt[] size`` for ``*size``): sizes are taken as separate arguments or as one list,
    tensors as separate arguments only, unless ``one_list_too`` (the function unpacks one
    list itself, as torch's ``meshgrid`` does).

    Example::

        >>> @signature("twice(Tensor input, int times=2) -> Tensor")
        ... def twice(input, times=2):
        ...     return input * times
        >>> twice(None)
        Traceback (most recent call last):
        TypeError: twice(): argument 'input' (position 1) must be Tensor, not NoneType
    """
    sig = Signature(schema, numbers_as_tensors=numbers_as_tensors, overloaded=overloaded,
                    any_layout=any_layout, one_list_too=one_list_too)

    def declare(implementation):
        if _inlinable(implementation):
            stub = _inlining_stub(sig, implementation)
            return _described(stub, implementation, sig, schema)
        namespace = {"__builtins__": builtins, "_signature": sig,
                     "_implementation_": implementation,
                     "_compile_on_first_call": _compile_on_first_call}
        stub = types.FunctionType(_STUB_CODE, namespace, implementation.__name__)
        namespace["stub"] = stub
        return _described(stub, implementation, sig, schema)
    return declare


class _NotGiven:
    """The type of :data:`NOT_GIVEN`."""

    def __repr__(self):
        return "<not given>"


NOT_GIVEN = _NotGiven()
"""The default of a parameter that torch's overloads tell apart from an explicit None
(``trapezoid(y)`` is fine, ``trapezoid(y, None)`` a TypeError): declared ``Tensor x=None`` in
the schema, the parameter's Python default is ``NOT_GIVEN``, which the checker lets through
while it refuses None."""


def refusing(schema, make_error, **options):
    """A function with ``schema``'s parameters that checks its arguments as a declared
    function does and then raises ``make_error()``: an op torch has no kernel for in ember's
    case still refuses a wrong argument with torch's TypeError first. ``options`` as for
    :func:`signature`.

    Example::

        >>> resize = refusing("sparse_resize_(Tensor self, int[] size, int sparse_dim, "
        ...                   "int dense_dim) -> Tensor", lambda: NotImplementedError("no"))
        >>> resize(ember.ones(2), (2,), 1.5, 0)
        Traceback (most recent call last):
        TypeError: sparse_resize_(): argument 'sparse_dim' (position 3) must be int, not float
    """
    name, params, _ = parse_schema(schema)
    header = []
    for param in params:
        if param.keyword_only and "*" not in header:
            header.append("*")
        header.append(param.name + ("=None" if param.default is not None else ""))
    namespace = {"_make_error": make_error}
    source = f"def {name}({', '.join(header)}):\n    raise _make_error()\n"
    exec(compile(source, _code_file(name), "exec"), namespace)  # noqa: S102
    return signature(schema, **options)(namespace[name])


def _described(stub, implementation, sig, schema):
    """``stub`` named and documented as ``implementation``, which it stands for."""
    stub.__qualname__ = implementation.__qualname__
    stub.__module__ = implementation.__module__
    stub.__doc__ = implementation.__doc__
    stub.__wrapped__ = implementation  # inspect.signature: the implementation's parameters
    stub.__text_signature__ = schema
    stub.__ember_signature__ = sig
    for key, value in vars(implementation).items():
        stub.__dict__.setdefault(key, value)
    op = getattr(implementation, "op", None)
    if op is not None and hasattr(op, "signature"):
        op.signature = sig
    return stub


def signature_of(function):
    """The :class:`Signature` declared for ``function`` (a public function, its
    ``ember.overrides`` wrapper, or an op's function), or None.

    Example::

        >>> signature_of(ember.exp).schema
        'exp(Tensor input, *, Tensor? out=None) -> Tensor'
    """
    while function is not None:
        sig = getattr(function, "__ember_signature__", None)
        if sig is not None:
            return sig
        function = getattr(function, "__torch_function_implementation__", None) or getattr(
            function, "__wrapped__", None)
    return None
