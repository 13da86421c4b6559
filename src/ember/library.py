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
import types

from ._tensor import Tensor

__all__ = ["custom_op", "CustomOpDef", "register_fake", "register_autograd",
           "register_kernel", "opcheck"]

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
        self._namespace, self._name = _split_name(name)
        self._qualname = f"{self._namespace}::{self._name}"
        self._signature = _check_signature(function, mutates_args)
        self._init_fn = function
        self._mutates = mutates_args
        self._kernels = {}
        default_devices = [device_types] if isinstance(device_types, str) else device_types
        for device_type in default_devices or (None,):
            self._kernels[device_type] = function
        self._fake = None
        self._backward = None
        self._setup_context = None
        self.__wrapped__ = function
        self.__doc__ = function.__doc__
        _OPS[self._qualname] = self
        _publish(self)

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

    # ------------------------------------------------------------ calling

    def __call__(self, *args, **kwargs):
        bound = self._signature.bind(*args, **kwargs)
        bound.apply_defaults()
        self._check_types(bound)
        values = list(bound.arguments.values())
        tensors = [v for v in values if isinstance(v, Tensor)]
        if any(t.device.type == "meta" for t in tensors):
            return self._run_fake(values)
        kernel = self._kernel_for(tensors)
        from .autograd import grad_mode

        if grad_mode.is_grad_enabled() and any(t.requires_grad for t in tensors):
            return _CustomFunction.apply(self, kernel, *values)
        return self._run(kernel, values)

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
        if kernel is None:
            raise NotImplementedError(f"{self._qualname}: no kernel registered for device "
                                      f"type '{device_type}' (registered: "
                                      f"{sorted(k for k in self._kernels if k)})")
        return kernel

    def _run(self, kernel, values):
        output = kernel(*values)
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
            raise RuntimeError(f"There was no fake impl registered for {self!r}. This is "
                               f"necessary for torch.compile/export/fx tracing to work. Please "
                               f"use `{self._init_fn.__name__}.register_fake` to add an fake "
                               f"impl.")
        return self._fake(*values)


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


class _OpPacket:
    """``ember.ops.<namespace>.<name>``: calls the operator; ``.default`` is the operator."""

    def __init__(self, op):
        self.default = op

    def __call__(self, *args, **kwargs):
        return self.default(*args, **kwargs)

    def __str__(self):
        return f"{self.default._namespace}.{self.default._name}"

    def __repr__(self):
        return f"<OpOverloadPacket(op='{self}')>"


def _publish(op):
    from . import ops

    namespace = getattr(ops, op._namespace, None)
    if namespace is None:
        namespace = types.SimpleNamespace()
        namespace._ember_op_namespace = True
        setattr(ops, op._namespace, namespace)
    elif not getattr(namespace, "_ember_op_namespace", False):
        raise RuntimeError(f"custom_op: the namespace '{op._namespace}' is taken by "
                           f"ember.ops.{op._namespace}; choose another")
    setattr(namespace, op._name.replace(".", "_"), _OpPacket(op))


# ---------------------------------------------------------------- torch.library functions


def _resolve(op):
    if isinstance(op, CustomOpDef):
        return op
    if isinstance(op, _OpPacket):
        return op.default
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
