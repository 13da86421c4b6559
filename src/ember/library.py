"""Custom operators (``torch.library``): wrap a Python function as a named operator with its own
gradient formula, shape rule and per-device kernels.

``@custom_op("mylib::foo", mutates_args=())`` turns a function with type-annotated parameters
into a :class:`CustomOpDef`, callable directly or as ``ember.ops.mylib.foo``. The body may do
anything (call NumPy, C code...): autograd treats the operator as one opaque step whose
derivative is the ``backward`` given to :meth:`CustomOpDef.register_autograd`, and the meta
device runs the shape rule given to :meth:`CustomOpDef.register_fake`.

Example::

    >>> import numpy as np
    >>> @ember.library.custom_op("doc::numpy_sin", mutates_args=())
    ... def numpy_sin(x: ember.Tensor) -> ember.Tensor:
    ...     return ember.from_numpy(np.sin(x.numpy()))
    >>> numpy_sin.register_autograd(lambda ctx, grad: grad * ctx.x.cos(),
    ...                             setup_context=lambda ctx, inputs, output:
    ...                             setattr(ctx, "x", inputs[0]))
    >>> x = ember.zeros(2, requires_grad=True)
    >>> ember.ops.doc.numpy_sin(x).sum().backward()
    >>> x.grad
    tensor([1., 1.])
"""

from __future__ import annotations

import inspect
import re
import sys

from ._tensor import Tensor

__all__ = ["Library", "impl", "define", "fallthrough_kernel", "impl_abstract",
           "register_autocast", "register_fake", "register_torch_dispatch", "register_vmap",
           "get_ctx", "get_kernel", "custom_op", "triton_op", "wrap_triton", "infer_schema",
           "CustomOpDef", "register_autograd", "register_kernel", "opcheck"]

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_OPS = {}  # "namespace::name" -> CustomOpDef


def custom_op(name, fn=None, /, *, mutates_args, device_types=None, schema=None, tags=None):
    """Make ``fn`` the operator ``"namespace::name"``; used as a decorator when ``fn`` is
    omitted. ``mutates_args`` names the arguments the function writes to (``()`` for none, or
    ``"unknown"``); ``device_types`` limits ``fn`` to those devices.

    Example::

        >>> @ember.library.custom_op("doc::twice", mutates_args=())
        ... def twice(x: ember.Tensor) -> ember.Tensor:
        ...     return x * 2
        >>> twice(ember.ones(2))
        tensor([2., 2.])
    """
    def wrap(function):
        return CustomOpDef(name, function, mutates_args, device_types, schema)

    return wrap if fn is None else wrap(fn)


def _split_name(name):
    namespace, op_name = name.split("::")
    base = op_name.split(".")[0]
    for part in (namespace, base):
        if not _IDENTIFIER.fullmatch(part):
            raise RuntimeError(f"expected eof but found 'ident' here:\n{name}")
    return namespace, op_name


def _check_signature(function, mutates_args):
    """The function's signature, after torch's checks on annotations and ``mutates_args``."""
    signature = inspect.signature(function)
    for parameter in signature.parameters.values():
        if parameter.annotation is inspect.Parameter.empty:
            raise ValueError(f"infer_schema(func): Parameter {parameter.name} must have a type "
                             f"annotation. Got func with signature {signature})")
    if mutates_args != "unknown":
        if isinstance(mutates_args, str):
            raise ValueError(f"mutates_args must be a tuple of argument names or 'unknown', "
                             f"got {mutates_args!r}")
        missing = set(mutates_args) - set(signature.parameters)
        if missing:
            raise ValueError(f"infer_schema(func): {missing} in mutates_args were not found in "
                             f"the custom op's signature. mutates_args should contain the names "
                             f"of all args that the custom op mutates, or just the string "
                             f"'unknown' if you don't know. Got func with signature "
                             f"{signature})")
    return signature


def _is_tensor_annotation(annotation):
    return annotation is Tensor or annotation == "Tensor" or getattr(
        annotation, "__name__", None) == "Tensor"


class CustomOpDef:
    """A custom operator: call it like the function it wraps.

    Example::

        >>> def negate(x: ember.Tensor) -> ember.Tensor:
        ...     return -x
        >>> op = ember.library.custom_op("doc::negate", negate, mutates_args=())
        >>> op, op(ember.ones(1))
        (<CustomOpDef(doc::negate)>, tensor([-1.]))
    """

    def __init__(self, name, function, mutates_args, device_types, schema):
        self._setup(name, _check_signature(function, mutates_args), mutates_args)
        self._init_fn = function
        default_devices = [device_types] if isinstance(device_types, str) else device_types
        for device_type in default_devices or (None,):
            self._kernels[device_type] = function
        self.__wrapped__ = function
        self.__doc__ = function.__doc__
        _OPS[self._qualname] = self
        _publish(self)

    @classmethod
    def _from_schema(cls, name, signature, mutates_args):
        """An operator declared by a schema (``torch.library.define``): no kernel yet, and,
        as in torch, kernels registered for it run below autograd only once
        ``register_autograd`` gives it a formula (until then autograd sees their ops)."""
        op = object.__new__(cls)
        op._setup(name, signature, mutates_args)
        op._init_fn = None
        op._opaque = False
        _OPS[op._qualname] = op
        _publish(op)
        return op

    def _setup(self, name, signature, mutates_args):
        self._namespace, self._name = _split_name(name)
        self._qualname = f"{self._namespace}::{self._name}"
        self._signature = signature
        self._mutates = mutates_args
        self._kernels = {}
        self._fake = None
        self._backward = None
        self._setup_context = None
        self._opaque = True  # kernels run below autograd (custom_op's rule)
        self._composite = None  # a kernel built from ember ops: autograd goes through it
        self._autograd_kernel = None  # a kernel that handles autograd itself
        self._autocast = {}  # device type -> dtype of floating inputs under autocast
        self._vmap = None

    def __repr__(self):
        return f"<CustomOpDef({self._qualname})>"

    # ------------------------------------------------------------ registration

    def register_kernel(self, device_types, fn=None, /):
        """Use ``fn`` for tensors on ``device_types`` (``"cpu"``, ``"cuda"`` or a list);
        used as a decorator when ``fn`` is omitted.

        Example::

            >>> @ember.library.custom_op("doc::ident", mutates_args=())
            ... def ident(x: ember.Tensor) -> ember.Tensor:
            ...     return x.clone()
            >>> _ = ident.register_kernel("cpu", lambda x: x + 1)
            >>> ident(ember.zeros(1))
            tensor([1.])
        """
        def register(function):
            for device_type in [device_types] if isinstance(device_types, str) \
                    else device_types:
                self._kernels[device_type] = function
            return function

        return register if fn is None else register(fn)

    def register_fake(self, fn, /):
        """Use ``fn`` on the meta device: it returns empty tensors of the output's shape and
        dtype (made from the meta inputs, e.g. ``ember.empty_like(x)``). Returns ``fn``.

        Example::

            >>> @ember.library.custom_op("doc::rows", mutates_args=())
            ... def rows(x: ember.Tensor) -> ember.Tensor:
            ...     return x.sum(1)
            >>> _ = rows.register_fake(lambda x: x.new_empty(x.shape[0]))
            >>> rows(ember.empty(3, 4, device="meta")).shape
            ember.Size([3])
        """
        self._fake = fn
        return fn

    def register_autograd(self, backward, /, *, setup_context=None):
        """Give the operator a derivative: ``setup_context(ctx, inputs, output)`` saves what
        ``backward(ctx, *grads)`` needs; ``backward`` returns one gradient per input (None for
        inputs that are not differentiable). See the module example."""
        self._backward = backward
        self._setup_context = setup_context
        self._opaque = True

    # ------------------------------------------------------------ calling

    def __call__(self, *args, **kwargs):
        bound = self._signature.bind(*args, **kwargs)
        bound.apply_defaults()
        self._check_types(bound)
        values = list(bound.arguments.values())
        tensors = [v for v in values if isinstance(v, Tensor)]
        if any(t.device.type == "meta" for t in tensors):
            return self._run_fake(values)
        if self._autocast:
            values, restore = _autocast_inputs(self._autocast, values, tensors)
            if restore is not None:
                with restore:
                    return self._invoke(self, values)
        if self._autograd_kernel is not None:
            return self._invoke(self._autograd_kernel, values)
        device_type = tensors[0].device.type if tensors else "cpu"
        if self._composite is not None and device_type not in self._kernels:
            return self._invoke(self._composite, values)
        kernel = self._kernel_for(tensors)
        from .autograd import grad_mode

        if grad_mode.is_grad_enabled() and any(t.requires_grad for t in tensors):
            if not self._opaque:  # a schema op without a formula: autograd sees the kernel
                return self._run(kernel, values)
            return _CustomFunction.apply(self, kernel, *values)
        return self._run(kernel, values)

    def _invoke(self, function, values):
        """Call ``function`` with ``values`` (this operator's arguments in signature order),
        keyword-only ones by keyword."""
        positional, keywords = [], {}
        for parameter, value in zip(self._signature.parameters.values(), values):
            if parameter.kind is inspect.Parameter.KEYWORD_ONLY:
                keywords[parameter.name] = value
            else:
                positional.append(value)
        return function(*positional, **keywords)

    def _check_types(self, bound):
        for name, value in bound.arguments.items():
            annotation = self._signature.parameters[name].annotation
            if _is_tensor_annotation(annotation) and not isinstance(value, Tensor):
                raise RuntimeError(f"{self._qualname}() Expected a value of type 'Tensor' for "
                                   f"argument '{name}' but instead found type "
                                   f"'{type(value).__name__}'.")

    def _kernel_for(self, tensors):
        device_type = tensors[0].device.type if tensors else "cpu"
        kernel = self._kernels.get(device_type, self._kernels.get(None))
        if kernel is None and self._init_fn is None:
            raise NotImplementedError(
                f"Could not run '{self._qualname}' with arguments from the "
                f"'{_DISPATCH_KEYS.get(device_type, device_type)}' backend. This could be "
                f"because the operator doesn't exist for this backend, or was omitted during "
                f"the selective/custom build process (if using custom build).")
        if kernel is None:
            raise NotImplementedError(f"{self._qualname}: no kernel registered for device "
                                      f"type '{device_type}' (registered: "
                                      f"{sorted(k for k in self._kernels if k)})")
        return kernel

    def _run(self, kernel, values):
        output = self._invoke(kernel, values)
        if self._mutates == ():
            self._check_no_alias(values, output)
        return output

    def _check_no_alias(self, values, output):
        outputs = output if isinstance(output, (tuple, list)) else (output,)
        inputs = [v for v in values if isinstance(v, Tensor) and v.numel()]
        for out in outputs:
            if isinstance(out, Tensor) and out.numel() and any(
                    out is t or out.untyped_storage().data_ptr() ==
                    t.untyped_storage().data_ptr() for t in inputs):
                module = sys.modules.get(getattr(self._init_fn, "__module__", ""), None)
                raise RuntimeError(f"{self._name} (with implementation in {module}): The output "
                                   f"of this custom operator (1) must not also be an input to "
                                   f"this custom operator and (2) may not alias any inputs to "
                                   f"this custom operator")

    def _run_fake(self, values):
        if self._fake is None:
            if self._composite is not None:  # ember ops run on the meta device themselves
                return self._invoke(self._composite, values)
            name = self._init_fn.__name__ if self._init_fn is not None else self._name
            raise RuntimeError(f"There was no fake impl registered for {self!r}. This is "
                               f"necessary for torch.compile/export/fx tracing to work. Please "
                               f"use `{name}.register_fake` to add an fake impl.")
        global _fake_context
        outer, _fake_context = _fake_context, FakeImplCtx(self)
        try:
            return self._invoke(self._fake, values)
        finally:
            _fake_context = outer


def _no_formula(ctx, *grads):
    raise RuntimeError(f"Trying to backward through {ctx._op._namespace}.{ctx._op._name}.default "
                       f"but no autograd formula was registered. Please use register_autograd "
                       f"to add one.")


def _make_custom_function():
    from .autograd import Function

    class CustomOpFunction(Function):
        """Runs a custom operator's kernel forward and its registered formula backward."""

        @staticmethod
        def forward(ctx, op, kernel, *values):
            # the kernel sees plain tensors, as torch's kernels run below the autograd layer
            output = op._run(kernel, [v.detach() if isinstance(v, Tensor) else v
                                      for v in values])
            ctx._op = op
            if op._setup_context is not None:
                op._setup_context(ctx, tuple(values), output)
            return output

        @staticmethod
        def backward(ctx, *grads):
            op = ctx._op
            formula = op._backward or _no_formula
            result = formula(ctx, *grads)
            result = tuple(result) if isinstance(result, (tuple, list)) else (result,)
            return (None, None) + result

    return CustomOpFunction


class _LazyFunction:
    """The ``Function`` subclass, made on first use (autograd imports this module's users)."""

    def __getattr__(self, name):
        function = _make_custom_function()
        globals()["_CustomFunction"] = function
        return getattr(function, name)


_CustomFunction = _LazyFunction()


# ---------------------------------------------------------------- ember.ops.<namespace>


def _publish(op):
    """Make ``op`` reachable as ``ember.ops.<namespace>.<name>.<overload>`` (``default``
    without one), as torch.ops does."""
    from . import ops

    namespace = getattr(ops, op._namespace)
    if not getattr(namespace, "_ember_op_namespace", False):
        raise RuntimeError(f"custom_op: the namespace '{op._namespace}' is taken by "
                           f"ember.ops.{op._namespace}; choose another")
    name, _, overload = op._name.partition(".")
    namespace._register(name, overload or "default", op)


# ---------------------------------------------------------------- torch.library functions


def _resolve(op):
    if isinstance(op, CustomOpDef):
        return op
    from .ops._namespaces import OpOverload, OpOverloadPacket
    if isinstance(op, OpOverloadPacket):
        op = op.default
    if isinstance(op, OpOverload):
        return _resolve(op.op)
    if op in _OPS:
        return _OPS[op]
    raise ValueError(f"register: {op!r} is not a custom operator defined with custom_op")


def register_fake(op, fn=None, /, *, lib=None, _stacklevel=1):
    """Register ``fn`` as the meta-device rule of ``op`` (a name or a CustomOpDef); a
    decorator when ``fn`` is omitted.

    Example::

        >>> @ember.library.custom_op("doc::double", mutates_args=())
        ... def double(x: ember.Tensor) -> ember.Tensor:
        ...     return x * 2
        >>> _ = ember.library.register_fake("doc::double", lambda x: ember.empty_like(x))
        >>> double(ember.empty(5, device="meta")).shape
        ember.Size([5])
    """
    target = _resolve(op)
    return target.register_fake if fn is None else target.register_fake(fn)


def register_autograd(op, backward, /, *, setup_context=None, lib=None):
    """Register the derivative of ``op`` (see :meth:`CustomOpDef.register_autograd`)."""
    _resolve(op).register_autograd(backward, setup_context=setup_context)


def register_kernel(op, device_types, fn=None, /, *, lib=None):
    """Register a device kernel of ``op`` (see :meth:`CustomOpDef.register_kernel`)."""
    return _resolve(op).register_kernel(device_types, fn)


def opcheck(op, args, kwargs=None, *, test_utils=None, raise_exception=True, atol=None,
            rtol=None):
    """Check a custom operator the way torch's ``opcheck`` does, in small: it runs; its fake
    rule gives the real output's shapes and dtypes; with inputs that require grad, its gradient
    formula runs. Returns ``{test name: "SUCCESS" or the exception}``.

    Example::

        >>> @ember.library.custom_op("doc::square", mutates_args=())
        ... def square(x: ember.Tensor) -> ember.Tensor:
        ...     return x * x
        >>> _ = square.register_fake(lambda x: ember.empty_like(x))
        >>> ember.library.opcheck(square, (ember.ones(2),))["test_faketensor"]
        'SUCCESS'
    """
    op = _resolve(op)
    kwargs = kwargs or {}
    results = {}
    checks = {"test_schema": _check_runs, "test_faketensor": _check_fake,
              "test_autograd_registration": _check_autograd}
    for name, check in checks.items():
        try:
            check(op, args, kwargs)
            results[name] = "SUCCESS"
        except Exception as error:  # reported per test, as torch's opcheck does
            if raise_exception:
                raise
            results[name] = error
    return results


def _check_runs(op, args, kwargs):
    op(*args, **kwargs)


def _as_meta(value):
    return value.detach().to("meta") if isinstance(value, Tensor) else value


def _outputs(value):
    return value if isinstance(value, (tuple, list)) else (value,)


def _check_fake(op, args, kwargs):
    real = _outputs(op(*args, **kwargs))
    fake = _outputs(op(*[_as_meta(a) for a in args],
                       **{k: _as_meta(v) for k, v in kwargs.items()}))
    for r, f in zip(real, fake):
        if isinstance(r, Tensor) and (r.shape != f.shape or r.dtype != f.dtype):
            raise RuntimeError(f"opcheck: the fake rule of {op._qualname} gives "
                               f"{f.dtype}{list(f.shape)}, the kernel {r.dtype}{list(r.shape)}")


def _check_autograd(op, args, kwargs):
    if not any(isinstance(a, Tensor) and a.requires_grad for a in args):
        return
    outputs = [o for o in _outputs(op(*args, **kwargs))
               if isinstance(o, Tensor) and o.requires_grad]
    inputs = [a for a in args if isinstance(a, Tensor) and a.requires_grad]
    if outputs:
        from .autograd import grad

        grad(sum(o.sum() for o in outputs), inputs, allow_unused=True)


# ---------------------------------------------------------------- schemas (torch.library.define)

_DISPATCH_KEYS = {"cpu": "CPU", "cuda": "CUDA", "meta": "Meta"}
_SCALAR_TYPES = {"int": "SymInt", "float": "float", "bool": "bool", "str": "str",
                 "complex": "complex"}
_NAMED_DEFAULTS = {"True": True, "False": False, "None": None}


def _split_top_level(text, separator=","):
    """``text`` split at ``separator`` outside brackets and quotes."""
    pieces, depth, quote, start = [], 0, None, 0
    for index, char in enumerate(text):
        if quote:
            quote = None if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
        elif char == separator and depth == 0:
            pieces.append(text[start:index])
            start = index + 1
    pieces.append(text[start:])
    return [piece.strip() for piece in pieces if piece.strip()]


def _default_value(text):
    """A schema default (``2``, ``1.``, ``True``, ``None``, ``[1, 2]``, ``"s"``, ``float32``)
    as a Python value."""
    import ast

    from . import _dtype

    if text in _NAMED_DEFAULTS:
        return _NAMED_DEFAULTS[text]
    dtype = getattr(_dtype, text, None)
    if isinstance(dtype, _dtype.dtype):
        return dtype
    try:
        return ast.literal_eval(text.replace("true", "True").replace("false", "False"))
    except (ValueError, SyntaxError):
        return text


def _parse_schema(schema):
    """``(name or None, inspect.Signature, mutated argument names)`` of a schema string such
    as ``"foo(Tensor(a!) x, int n=2, *, float alpha=1.) -> Tensor"``."""
    if "->" not in schema or "(" not in schema:
        raise RuntimeError(f"Expected a schema of the form 'name(args) -> returns', got "
                           f"'{schema}'")
    head, _returns = schema.rsplit("->", 1)
    name, _, arguments = head.strip().partition("(")
    arguments = arguments.strip()
    if not arguments.endswith(")"):
        raise RuntimeError(f"Expected ')' closing the arguments of schema '{schema}'")
    parameters, mutated, keyword_only = [], [], False
    for argument in _split_top_level(arguments[:-1]):
        if argument == "*":
            keyword_only = True
            continue
        declaration, _, default = argument.partition("=")
        type_text, _, arg_name = declaration.strip().rpartition(" ")
        if "!" in type_text:
            mutated.append(arg_name)
        plain_type = re.sub(r"\(.*?\)", "", type_text)
        annotation = Tensor if plain_type == "Tensor" else plain_type
        kind = inspect.Parameter.KEYWORD_ONLY if keyword_only else \
            inspect.Parameter.POSITIONAL_OR_KEYWORD
        parameters.append(inspect.Parameter(
            arg_name, kind, annotation=annotation,
            default=_default_value(default.strip()) if default else inspect.Parameter.empty))
    return name.strip() or None, inspect.Signature(parameters), tuple(mutated)


def _annotation_schema(annotation):
    """The schema type of a Python annotation (torch's ``infer_schema`` names)."""
    import typing

    from . import _device, _dtype

    if _is_tensor_annotation(annotation):
        return "Tensor"
    if annotation in (int, float, bool, str, complex):
        return _SCALAR_TYPES[annotation.__name__]
    if annotation is _dtype.dtype:
        return "ScalarType"
    if annotation is _device.device:
        return "Device"
    origin, arguments = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Union or (origin is not None and origin.__name__ == "UnionType"):
        others = [a for a in arguments if a is not type(None)]
        if len(others) == 1 and len(arguments) == 2:
            return _annotation_schema(others[0]) + "?"
    if origin in (list, tuple) or getattr(origin, "__name__", "") == "Sequence":
        if arguments and (origin is not tuple or arguments[-1] is Ellipsis):
            return _annotation_schema(arguments[0]) + "[]"
    raise ValueError(f"infer_schema(func): Parameter has unsupported type {annotation}.")


def _return_schema(annotation):
    import typing

    if annotation is None or annotation is type(None):
        return "()"
    if typing.get_origin(annotation) is tuple:
        return "(" + ", ".join(_annotation_schema(a) for a in typing.get_args(annotation)) + ")"
    return _annotation_schema(annotation)


def _default_schema(value):
    if isinstance(value, str):
        return f'"{value}"'
    from . import _dtype

    if isinstance(value, _dtype.dtype):
        return str(value).split(".")[-1]
    return repr(value)


def infer_schema(prototype_function, /, *, mutates_args, op_name=None):
    """The schema string of a type-annotated function, as torch writes it.

    Example::

        >>> def scale(x: ember.Tensor, n: int = 2, *, alpha: float = 0.5) -> ember.Tensor:
        ...     return x * n * alpha
        >>> ember.library.infer_schema(scale, mutates_args=())
        '(Tensor x, SymInt n=2, *, float alpha=0.5) -> Tensor'
    """
    signature = _check_signature(prototype_function, mutates_args)
    pieces, keyword_only = [], False
    for index, parameter in enumerate(signature.parameters.values()):
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY and not keyword_only:
            pieces.append("*")
            keyword_only = True
        kind = _annotation_schema(parameter.annotation)
        mutated = mutates_args == "unknown" or parameter.name in mutates_args
        if mutated and kind.startswith("Tensor"):
            kind = kind.replace("Tensor", f"Tensor(a{index}!)", 1)
        piece = f"{kind} {parameter.name}"
        if parameter.default is not inspect.Parameter.empty:
            piece += f"={_default_schema(parameter.default)}"
        pieces.append(piece)
    result = f"({', '.join(pieces)}) -> {_return_schema(signature.return_annotation)}"
    return f"{op_name}{result}" if op_name else result


# ---------------------------------------------------------------- Library, define, impl

_LIBRARY_KINDS = ("DEF", "IMPL", "FRAGMENT")
_DEFINING = {}  # namespace -> the "DEF" Library that owns it
# dispatch keys of Library.impl that name a device, and those that name every device
_DEVICE_KEYS = {"CPU": "cpu", "CUDA": "cuda", "Meta": "meta"}
_ANY_DEVICE_KEYS = ("CompositeExplicitAutograd", "CompositeExplicitAutogradNonFunctional")
_AUTOGRAD_KEYS = ("Autograd", "AutogradCPU", "AutogradCUDA")


class Library:
    """A namespace of operators, as ``torch.library.Library``: ``"DEF"`` defines the
    namespace (once), ``"FRAGMENT"`` adds definitions to it, ``"IMPL"`` only registers
    kernels. Kernels are registered per dispatch key: ``"CPU"``, ``"CUDA"``, ``"Meta"`` (the
    fake rule), ``"CompositeImplicitAutograd"`` (ember ops: autograd through them),
    ``"CompositeExplicitAutograd"`` (every device) and ``"Autograd"`` (a kernel that handles
    its own gradient, e.g. an ``autograd.Function``).

    Example::

        >>> lib = ember.library.Library("doclib", "DEF")
        >>> lib.define("scale(Tensor x, float s=2.) -> Tensor")
        'scale'
        >>> lib.impl("scale", lambda x, s=2.0: x * s, "CPU")
        >>> ember.ops.doclib.scale(ember.ones(2))
        tensor([2., 2.])
    """

    def __init__(self, ns, kind, dispatch_key=""):
        if kind not in _LIBRARY_KINDS:
            raise ValueError(f"Unsupported kind: {kind}")
        if ns == "aten" and kind != "IMPL":
            raise RuntimeError("Only a single TORCH_LIBRARY can be used to register the "
                               "namespace aten; please put all of your definitions in a "
                               "single TORCH_LIBRARY block.")
        if kind == "DEF" and ns in _DEFINING:
            raise RuntimeError(
                f"Only a single TORCH_LIBRARY can be used to register the namespace {ns}; "
                f"please put all of your definitions in a single TORCH_LIBRARY block.  If "
                f"you were trying to specify implementations, consider using "
                f"TORCH_LIBRARY_IMPL (which can be duplicated).")
        self.ns, self.kind, self.dispatch_key = ns, kind, dispatch_key
        self._defined = []
        if kind == "DEF":
            _DEFINING[ns] = self

    def __repr__(self):
        return f"Library(kind={self.kind}, ns={self.ns}, dispatch_key={self.dispatch_key})>"

    def define(self, schema, alias_analysis="", *, tags=()):
        """Declare an operator of this namespace from its schema; returns its name.

        Example::

            >>> ember.library.Library("doclib2", "DEF").define("neg(Tensor x) -> Tensor")
            'neg'
        """
        if self.kind == "IMPL":
            raise RuntimeError("define() is not allowed in an IMPL library; use a DEF or "
                               "FRAGMENT library")
        name, signature, mutated = _parse_schema(schema)
        qualname = f"{self.ns}::{name}"
        if qualname in _OPS:
            raise RuntimeError(f"Tried to register an operator ({qualname}{schema[len(name):]}"
                               f") with the same name and overload name multiple times. Each "
                               f"overload's schema should only be registered with a single "
                               f"call to def().")
        self._defined.append(CustomOpDef._from_schema(qualname, signature, mutated))
        return name

    def impl(self, op_name, fn, dispatch_key="", *, with_keyset=False, allow_override=False):
        """Register ``fn`` as the kernel of ``op_name`` (a name in this namespace, or an
        operator) for ``dispatch_key`` (default: the library's).

        Example::

            >>> lib = ember.library.Library("doclib3", "DEF")
            >>> _ = lib.define("twice(Tensor x) -> Tensor")
            >>> lib.impl("twice", lambda x: x * 2, "CompositeImplicitAutograd")
            >>> ember.ops.doclib3.twice(ember.ones(1))
            tensor([2.])
        """
        if with_keyset:
            raise NotImplementedError("Library.impl(with_keyset=True): ember has no dispatch "
                                      "key sets to pass to the kernel; register it without "
                                      "with_keyset")
        if fn is fallthrough_kernel:
            return  # a fallthrough: the call goes on to the next key, as with no kernel
        key = dispatch_key or self.dispatch_key or "CompositeImplicitAutograd"
        op = self._operator(op_name)
        _register(op, key, fn)

    def _operator(self, op_name):
        if not isinstance(op_name, str):
            return _resolve(op_name)
        qualname = op_name if "::" in op_name else f"{self.ns}::{op_name}"
        base = qualname.split(".")[0] if qualname not in _OPS else qualname
        if self.ns == "aten" or qualname.startswith("aten::"):
            raise NotImplementedError(
                "torch.library: overriding an aten operator's kernel is not supported by "
                "ember (its operators are Python functions, not dispatcher entries); wrap the "
                "call with a TorchFunctionMode (ember.overrides) instead")
        if base not in _OPS:
            raise RuntimeError(f"Could not find the operator {qualname}; define it first "
                               f"(Library.define or ember.library.define)")
        return _OPS[base]

    def fallback(self, fn, dispatch_key="", *, with_keyset=False):
        """torch's whole-namespace fallback kernels: not in ember (``NotImplementedError``)."""
        raise NotImplementedError("Library.fallback: ember has no dispatcher to register a "
                                  "fallback kernel in; register a kernel per operator with "
                                  "Library.impl")

    def _destroy(self):
        for op in self._defined:
            _OPS.pop(op._qualname, None)
        self._defined = []
        if _DEFINING.get(self.ns) is self:
            del _DEFINING[self.ns]


def _register(op, key, fn):
    """Make ``fn`` the kernel of ``op`` for a dispatch key or a device type."""
    if key in _DEVICE_KEYS or key in ("cpu", "cuda", "meta"):
        device_type = _DEVICE_KEYS.get(key, key)
        if device_type == "meta":
            op.register_fake(fn)
        else:
            op._kernels[device_type] = fn
    elif key == "CompositeImplicitAutograd":
        op._composite = fn
    elif key in _ANY_DEVICE_KEYS or key == "default":
        op._kernels[None] = fn
    elif key in _AUTOGRAD_KEYS:
        op._autograd_kernel = fn
    else:
        raise NotImplementedError(f"torch.library: the dispatch key '{key}' has no "
                                  f"counterpart in ember; use 'CPU', 'CUDA', 'Meta', "
                                  f"'CompositeImplicitAutograd', 'CompositeExplicitAutograd' "
                                  f"or 'Autograd'")


def define(qualname, schema, *, lib=None, tags=()):
    """Declare the operator ``"namespace::name"`` with ``schema`` (its arguments and results);
    give it kernels with :func:`impl`. A decorator form is not needed: it returns None.

    Example::

        >>> ember.library.define("doclib4::halve", "(Tensor x) -> Tensor")
        >>> ember.library.impl("doclib4::halve", "cpu", lambda x: x / 2)
        >>> ember.ops.doclib4.halve(ember.ones(1))
        tensor([0.5000])
    """
    if not isinstance(qualname, str):
        raise ValueError(f"define(qualname, schema): expected qualname to be instance of str, "
                         f"got {type(qualname)}")
    namespace, name = _split_name(qualname)
    if lib is None:
        lib = Library(namespace, "FRAGMENT")
    lib.define(name + schema, tags=tags)


def impl(qualname, types, func=None, *, lib=None):
    """Register ``func`` as the kernel of ``qualname`` for ``types``: device types
    (``"cpu"``, ``"cuda"``, a list) or a dispatch key (``"CompositeImplicitAutograd"``...); a
    decorator when ``func`` is omitted.

    Example::

        >>> ember.library.define("doclib5::inc", "(Tensor x) -> Tensor")
        >>> @ember.library.impl("doclib5::inc", "cpu")
        ... def inc(x):
        ...     return x + 1
        >>> ember.ops.doclib5.inc(ember.zeros(1))
        tensor([1.])
    """
    if isinstance(qualname, Library):  # torch's older form: impl(lib, name, dispatch_key)
        library, name, key = qualname, types, func or ""
        return lambda fn: library.impl(name, fn, key) or fn

    def register(function):  # returns None, as torch's (also as a decorator)
        op = _operator_named(qualname)
        for key in [types] if isinstance(types, str) else types:
            _register(op, key, function)

    if func is None:
        return register
    register(func)


def _operator_named(qualname):
    op = _OPS.get(qualname) if isinstance(qualname, str) else _resolve(qualname)
    if op is None:
        raise RuntimeError(f"Could not find the operator {qualname}; define it first "
                           f"(ember.library.define)")
    return op


def impl_abstract(qualname, func=None, *, lib=None, _stacklevel=1):
    """The older name of :func:`register_fake` (deprecated in torch, with its warning).

    Example::

        >>> ember.library.define("doclib6::same", "(Tensor x) -> Tensor")
        >>> _ = ember.library.impl_abstract("doclib6::same", lambda x: ember.empty_like(x))
    """
    import warnings

    warnings.warn("torch.library.impl_abstract was renamed to torch.library.register_fake. "
                  "Please use that instead; we will remove torch.library.impl_abstract in a "
                  "future version of PyTorch.", DeprecationWarning, stacklevel=2)
    return register_fake(qualname, func, lib=lib)


def fallthrough_kernel():
    """The kernel that means "no kernel here, go on": register it with ``Library.impl``;
    calling it is an error, as in torch.

    Example::

        >>> ember.library.fallthrough_kernel()
        Traceback (most recent call last):
        NotImplementedError: fallthrough_kernel() should never be called.
    """
    raise NotImplementedError("fallthrough_kernel() should never be called.")


# ---------------------------------------------------------------- fake context, get_kernel


class FakeImplCtx:
    """The context of a running fake rule (:func:`get_ctx`). ember's meta tensors have
    concrete sizes, so an output size that depends on the data cannot be made.

    Example::

        >>> ctx = ember.library.get_ctx()        # inside a register_fake function
    """

    def __init__(self, op):
        self._op = op

    def new_dynamic_size(self, *, min=0, max=None):
        raise NotImplementedError(
            f"{self._op._qualname}: ctx.new_dynamic_size() needs symbolic sizes, which ember's "
            f"meta device does not have; run the operator on real tensors instead")

    new_unbacked_symint = new_dynamic_size


_fake_context = None


def get_ctx():
    """The context of the fake rule now running (inside a ``register_fake`` function).

    Example::

        >>> def rows_fake(x):
        ...     ctx = ember.library.get_ctx()
        ...     return x.new_empty(x.shape[0])
    """
    return _fake_context


class SafeKernelFunction:
    """A kernel found by :func:`get_kernel`: run it with ``call_boxed(keyset, *args)``
    (``keyset`` is accepted for torch's signature; ember has no dispatch key sets).

    Example::

        >>> kernel = ember.library.get_kernel("mylib::op", "CPU")   # doctest: +SKIP
        >>> kernel.call_boxed(None, ember.ones(1))                    # doctest: +SKIP
    """

    def __init__(self, op, kernel):
        self._kernel = kernel
        self.op_handle = op

    def call_boxed(self, keyset, *args, **kwargs):
        return self._kernel(*args, **kwargs)

    def __repr__(self):
        return f"SafeKernelFunction(debug='registered for {self.op_handle._qualname}')"


def get_kernel(op, dispatch_key):
    """The kernel registered for ``op`` on ``dispatch_key`` (``"CPU"``, ``"CUDA"``, a device
    type, ``"Meta"``...), as a :class:`SafeKernelFunction`.

    Example::

        >>> ember.library.define("doclib7::sq", "(Tensor x) -> Tensor")
        >>> ember.library.impl("doclib7::sq", "cpu", lambda x: x * x)
        >>> kernel = ember.library.get_kernel("doclib7::sq", "CPU")
        >>> kernel.call_boxed(None, ember.full((1,), 3.))
        tensor([9.])
    """
    target = _operator_named(op)
    return SafeKernelFunction(target, _kernel_for_key(target, dispatch_key))


def _kernel_for_key(target, dispatch_key):
    key = str(dispatch_key).split(".")[-1]
    device_type = _DEVICE_KEYS.get(key, key)
    if device_type == "meta" and target._fake is not None:
        return target._fake
    for kernel in (target._kernels.get(device_type), target._autograd_kernel
                   if key in _AUTOGRAD_KEYS else None, target._composite
                   if key == "CompositeImplicitAutograd" else None, target._kernels.get(None)):
        if kernel is not None:
            return kernel
    raise RuntimeError(f"{target._qualname} has no kernel registered for dispatch key "
                       f"{dispatch_key}")


# ---------------------------------------------------------------- autocast, vmap, others


def register_autocast(op, device_type, cast_inputs, /, *, lib=None):
    """Under autocast on ``device_type``, run ``op`` with its floating-point tensor inputs
    cast to ``cast_inputs`` (and autocast off inside it).

    Example::

        >>> ember.library.define("doclib8::keep", "(Tensor x) -> Tensor")
        >>> ember.library.impl("doclib8::keep", "cpu", lambda x: x.clone())
        >>> ember.library.register_autocast("doclib8::keep", "cpu", ember.float64)
        >>> with ember.autocast("cpu"):
        ...     ember.ops.doclib8.keep(ember.ones(1)).dtype
        ember.float64
    """
    if device_type not in ("cpu", "cuda"):
        raise ValueError(f"Unknown device type: {device_type}")
    _operator_named(op)._autocast[device_type] = cast_inputs


def _autocast_inputs(policies, values, tensors):
    """``(values, context)``: the inputs cast for autocast and a context that turns autocast
    off while the operator runs; ``context`` None when autocast is not on."""
    from .amp import autocast_mode

    device_type = tensors[0].device.type if tensors else "cpu"
    dtype = policies.get(device_type)
    if dtype is None or not autocast_mode.is_autocast_enabled(device_type):
        return values, None
    cast = [v.to(dtype) if isinstance(v, Tensor) and v.is_floating_point() else v
            for v in values]
    return cast, autocast_mode.autocast(device_type, enabled=False)


def register_vmap(op, func=None, /, *, lib=None):
    """Record the batching rule of ``op`` (``func(info, in_dims, *args) -> (output,
    out_dims)``). ember's ``vmap`` runs a custom operator element by element, which gives the
    rule's results without calling it; the rule is kept for :func:`get_kernel`-style lookups.

    Example::

        >>> ember.library.define("doclib9::neg", "(Tensor x) -> Tensor")
        >>> ember.library.impl("doclib9::neg", "cpu", lambda x: -x)
        >>> _ = ember.library.register_vmap(
        ...     "doclib9::neg", lambda info, in_dims, x: (-x, in_dims[0]))
    """
    target = _operator_named(op)

    def register(rule):
        target._vmap = rule
        return rule

    return register if func is None else register(func)


def register_torch_dispatch(op, torch_dispatch_class, func=None, /, *, lib=None):
    """torch's per-subclass ``__torch_dispatch__`` rule: ember has no ``__torch_dispatch__``
    layer (``NotImplementedError``).

    Example::

        >>> ember.library.register_torch_dispatch("mylib::op", MyTensor)  # doctest: +SKIP
        Traceback (most recent call last):
        NotImplementedError: ...
    """
    raise NotImplementedError(
        "torch.library.register_torch_dispatch: ember has no __torch_dispatch__ layer below "
        "its operators; give the Tensor subclass a __torch_function__ (ember.overrides) that "
        "handles the custom operator instead")


_TRITON = ("torch.library.{name}: Triton GPU kernels are not supported by ember; write the "
           "operator with ember.library.custom_op (ember or CuPy code inside) instead")


def triton_op(name, fn=None, /, *, mutates_args, schema=None):
    """torch's operator backed by Triton kernels: not in ember (``NotImplementedError``).

    Example::

        >>> ember.library.triton_op("mylib::op", mutates_args=())   # doctest: +SKIP
        Traceback (most recent call last):
        NotImplementedError: ...
    """
    raise NotImplementedError(_TRITON.format(name="triton_op"))


def wrap_triton(triton_kernel, /):
    """torch's wrapper of a Triton kernel: not in ember (``NotImplementedError``).

    Example::

        >>> ember.library.wrap_triton(kernel)                        # doctest: +SKIP
        Traceback (most recent call last):
        NotImplementedError: ...
    """
    raise NotImplementedError(_TRITON.format(name="wrap_triton"))
