"""``ember.backends``: the backend switches of ``torch.backends``.

The flags are settable and keep their values, so scripts written for torch run unchanged;
most have no effect on ember's kernels (NumPy's BLAS and CuPy's cuBLAS/cuDNN choose their
own algorithms), as each module's docstring says.

As in torch, a module whose flags are properties (``cudnn``, ``mkldnn``, ...) replaces itself
in ``sys.modules`` with a :class:`PropModule` wrapping the plain module (kept as ``.m``); the
properties are :class:`ContextProp` objects, refused after :func:`disable_global_flags` except
inside the module's ``flags()`` block.

Example::

    >>> ember.backends.cudnn.benchmark = True
    >>> ember.backends.cudnn.benchmark
    True
"""

from __future__ import annotations

import contextlib
import sys
import types

__all__ = ["ContextProp", "PropModule", "GenericModule", "disable_global_flags", "flags",
           "flags_frozen", "set_flags", "cpu", "cuda", "cudnn", "cusparselt", "kleidiai", "mha",
           "miopen", "mkl", "mkldnn", "mps", "nnpack", "openmp", "opt_einsum", "python_native",
           "quantized", "xeon", "xnnpack"]

_mutation = {"allowed": True}


def disable_global_flags():
    """Refuse plain assignments to backend flags from now on (only ``flags()`` blocks set them).

    Example::

        >>> disable_global_flags()       # doctest: +SKIP
    """
    _mutation["allowed"] = False


def flags_frozen():
    """Whether :func:`disable_global_flags` was called.

    Example::

        >>> flags_frozen()
        False
    """
    return not _mutation["allowed"]


@contextlib.contextmanager
def _allow_mutation():
    """Let the ``flags()`` context managers set flags even when they are frozen."""
    previous = _mutation["allowed"]
    _mutation["allowed"] = True
    try:
        yield
    finally:
        _mutation["allowed"] = previous


class ContextProp:
    """A module property read and written through a getter and a setter function.

    Example::

        >>> state = {"on": True}
        >>> prop = ContextProp(lambda: state["on"], lambda v: state.update(on=v))
    """

    def __init__(self, getter, setter):
        self.getter = getter
        self.setter = setter

    def __get__(self, obj, objtype):
        return self.getter()

    def __set__(self, obj, val):
        if flags_frozen():
            raise RuntimeError(f"not allowed to set {obj.__name__} flags after "
                               "disable_global_flags; please use flags() context manager instead")
        self.setter(val)


class PropModule(types.ModuleType):
    """A module object whose class holds properties; other names come from the wrapped
    module ``m``.

    Example::

        >>> ember.backends.cudnn.m.__name__
        'ember.backends.cudnn'
    """

    def __init__(self, m, name):
        super().__init__(name)
        self.m = m

    def __getattr__(self, attr):
        return self.m.__getattribute__(attr)


_VALID_PRECISIONS = {"generic": ("ieee", "tf32", "bf16", "none"),
                     "cuda": ("ieee", "tf32", "none"),
                     "mkldnn": ("ieee", "tf32", "bf16", "none")}
_fp32_precision = {("generic", "all"): "none", ("cuda", "all"): "none",
                   ("cuda", "matmul"): "none", ("cuda", "conv"): "tf32", ("cuda", "rnn"): "tf32",
                   ("mkldnn", "all"): "none", ("mkldnn", "matmul"): "none",
                   ("mkldnn", "conv"): "none", ("mkldnn", "rnn"): "none"}


def _get_fp32_precision(backend, op):
    return _fp32_precision[(backend, op)]


def _set_fp32_precision(backend, op, precision):
    if precision not in _VALID_PRECISIONS["generic"]:
        raise RuntimeError(f"Unknown precision: {precision}")
    if precision not in _VALID_PRECISIONS[backend]:
        raise RuntimeError(f"backend '{backend}' does not support precision '{precision}'")
    _fp32_precision[(backend, op)] = precision


def _precision_prop(backend, op):
    """A :class:`ContextProp` for the float32 precision of ``backend``'s ``op``."""
    return ContextProp(lambda: _get_fp32_precision(backend, op),
                       lambda value: _set_fp32_precision(backend, op, value))


class _FP32Precision:
    """``backend.op.fp32_precision``: the float32 precision one backend's op may use
    (``'ieee'``, ``'tf32'``, ``'bf16'``, ``'none'``); recorded, ember computes in float32."""

    def __init__(self, backend, op):
        object.__setattr__(self, "backend", backend)
        object.__setattr__(self, "op", op)

    def __getattr__(self, name):
        if name == "fp32_precision":
            return _get_fp32_precision(self.backend, self.op)
        raise AttributeError("Unknown attribute " + name)

    def __setattr__(self, name, value):
        if name != "fp32_precision":
            raise AttributeError("Unknown attribute " + name)
        _set_fp32_precision(self.backend, self.op, value)


def set_flags(_fp32_precision="none"):
    """Set the generic float32 precision; returns the previous value as a one-element tuple.

    Example::

        >>> set_flags("none")
        ('none',)
    """
    previous = (_get_fp32_precision("generic", "all"),)
    if _fp32_precision is not None:
        _set_fp32_precision("generic", "all", _fp32_precision)
    return previous


@contextlib.contextmanager
def flags(fp32_precision="none"):
    """Set the generic float32 precision inside the block.

    Example::

        >>> with flags(fp32_precision="ieee"):
        ...     pass
    """
    with _allow_mutation():
        previous = set_flags(fp32_precision)
    try:
        yield
    finally:
        with _allow_mutation():
            set_flags(*previous)


class GenericModule(PropModule):
    """``ember.backends`` itself: its ``fp32_precision`` property (torch's generic switch)."""

    fp32_precision = _precision_prop("generic", "all")


sys.modules[__name__] = GenericModule(sys.modules[__name__], __name__)

from . import (  # noqa: E402  (after the module replaced itself, as torch's)
    cpu,
    cuda,
    cudnn,
    cusparselt,
    kleidiai,
    mha,
    miopen,
    mkl,
    mkldnn,
    mps,
    nnpack,
    openmp,
    opt_einsum,
    python_native,
    quantized,
    xeon,
    xnnpack,
)
