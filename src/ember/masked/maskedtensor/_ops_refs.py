"""Which operations a MaskedTensor supports, and how: the table that
:meth:`MaskedTensor.__torch_function__` looks a call up in, by its torch name
(``torch.sum``, ``torch.Tensor.sum``, ``torch.nn.functional.softmax``...).

The pointwise, reduction and pass-through families live in their own modules; the operations
with rules of their own (``where``, ``softmax``, conversions, ``item``, ``backward``...) are
here. An operation missing from the table warns and declines, so the caller gets torch's
``TypeError`` (or, for an operator such as ``@``, Python's ``unsupported operand``).

Example::

    >>> mt = masked_tensor(ember.tensor([1., 2.]), ember.tensor([True, False]))
    >>> ember.where(ember.tensor([True, True]), mt, 0.).get_mask()
    tensor([ True, False])
"""

from __future__ import annotations

import functools
import inspect
import sys
import warnings

import ember

from ..._tensor import _TYPE_NAMES, Tensor
from ._autograd import _MaskGate, as_gradient, gated, is_gradient
from .binary import (
    BINARY_DUNDERS,
    BINARY_NAMES,
    INPLACE_BINARY_NAMES,
    apply_binary,
    apply_inplace_binary,
)
from .core import MaskedTensor, _make, _plain, _wrap, is_masked_tensor
from .passthrough import PASSTHROUGH_NAMES, apply_pass_through
from .reductions import REDUCE_NAMES, apply_reduction
from .unary import (
    INPLACE_UNARY_NAMES,
    UNARY_DUNDERS,
    UNARY_NAMES,
    apply_inplace_unary,
    apply_unary,
)

__all__ = []

_UNSUPPORTED = (
    "{name} is not implemented in __torch_dispatch__ for MaskedTensor.\nIf you would like this "
    "operator to be supported, please file an issue for a feature request at "
    "https://github.com/pytorch/maskedtensor/issues with a minimal reproducible code snippet.\n"
    "In the case that the semantics for the operator are not trivial, it would be appreciated "
    "to also include a proposal for the semantics.")

# Tensor methods that only read metadata or autograd flags: run on the MaskedTensor itself
# (its fields are its data's), results returned as they are.
_METADATA_NAMES = ("size dim ndimension numel nelement element_size is_floating_point "
                   "is_complex is_signed is_contiguous get_device __len__ stride "
                   "storage_offset requires_grad_ retain_grad detach_ is_inference").split()

_CONVERSION_NAMES = ("to type float double half bfloat16 int long short char byte bool cpu "
                     "cuda").split()

_SCALAR_NAMES = ("item", "__bool__", "__float__", "__int__", "__index__", "__complex__")


def dispatch(func, args, kwargs):
    """Run ``func(*args, **kwargs)``, some argument being a MaskedTensor.

    Example::

        >>> mt = masked_tensor(ember.tensor([4., 9.]), ember.tensor([True, False]))
        >>> dispatch(ember.sqrt, (mt,), {}).get_data()
        tensor([2., 3.])
    """
    from ...overrides import _names

    name = _names.get(func) or _operator_name(func)
    handler = _handlers().get(name)
    if handler is None and _in_backward():
        return _on_plain_data(func, args, kwargs)
    if handler is None:
        short = (name or getattr(func, "__name__", repr(func))).rsplit(".", 1)[-1]
        warnings.warn(_UNSUPPORTED.format(name=short), UserWarning, stacklevel=1)
        return NotImplemented
    result = handler(func, args, kwargs)
    if any(is_gradient(arg) for arg in _flat(args)):
        return as_gradient(result)
    return result


def _flat(args):
    for arg in args:
        if isinstance(arg, (list, tuple)):
            yield from arg
        else:
            yield arg


def _operator_name(func):
    """``aten.sin`` for ``ember.ops.aten.sin`` or one of its overloads (torch.ops's
    operators, which MaskedTensor supports as torch's does at its dispatch level)."""
    packet = getattr(func, "overloadpacket", func)
    namespace = getattr(packet, "_namespace", None)
    return f"{namespace}.{packet.__name__}" if isinstance(namespace, str) else None


def _in_backward():
    """Whether autograd's engine is running a derivative up the stack.

    Gradients flow back as MaskedTensors (``_autograd.py``); a derivative may use an operation
    MaskedTensor does not support (``new_zeros``, ``index_put``...). There it runs on the
    plain data, and the gate of the input it reaches masks the gradient again."""
    from ...autograd.graph import run_backward

    engine = run_backward.__code__
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code is engine:
            return True
        frame = frame.f_back
    return False


def _unwrapped(value):
    if is_masked_tensor(value):
        return value._masked_data
    if isinstance(value, (list, tuple)):
        return type(value)(_unwrapped(item) for item in value)
    return value


def _on_plain_data(func, args, kwargs):
    return func(*_unwrapped(args), **{key: _unwrapped(v) for key, v in kwargs.items()})


# ---------------------------------------------------------------- arguments


@functools.cache
def _signature(func):
    """The signature of ``func``'s implementation, or None when it takes ``*args``."""
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):
        return None
    kinds = {param.kind for param in signature.parameters.values()}
    if inspect.Parameter.VAR_POSITIONAL in kinds:
        return None
    return signature


def _as_positional(func, args, kwargs):
    """``args, kwargs`` as torch's argument parser hands them on: parameters that may be
    positional become positional, keyword-only ones left at their default are dropped."""
    signature = _signature(func) if kwargs else None
    if signature is None:
        return args, kwargs
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError:
        return args, kwargs
    positional, keywords, pending = [], {}, []
    for name, param in signature.parameters.items():
        given = name in bound.arguments
        if param.kind is inspect.Parameter.KEYWORD_ONLY:
            if given and bound.arguments[name] is not param.default:
                keywords[name] = bound.arguments[name]
        elif param.kind is not inspect.Parameter.VAR_KEYWORD:
            pending.append(bound.arguments[name] if given else param.default)
            if given:
                positional.extend(pending)
                pending = []
        elif given:
            keywords.update(bound.arguments[name])
    return tuple(positional), keywords


def _normalized(apply):
    def handler(func, args, kwargs):
        return apply(func, *_as_positional(func, args, kwargs))
    return handler


# ---------------------------------------------------------------- handlers


def _reduction(name, func, args, kwargs):
    return apply_reduction(name, args, kwargs)


def _metadata(func, args, kwargs):
    with ember.overrides.DisableTorchFunctionSubclass():
        return func(*args, **kwargs)


def _scalar(func, args, kwargs):
    """``item()``, ``bool()``, ``float()``...: only of a specified one-element tensor."""
    self = args[0]
    data = self._masked_data
    if data.numel() == 1 and not self._masked_mask.item():
        raise ValueError("__torch_dispatch__, aten._local_scalar_dense: expected a mask tensor")
    return func(data, *args[1:], **kwargs)


def _tolist(func, args, kwargs):
    raise RuntimeError(".tolist() is not supported for tensor subclasses, got MaskedTensor")


def _numpy(func, args, kwargs):
    raise RuntimeError(".numpy() is not supported for tensor subclasses.")


def _format(func, args, kwargs):
    return object.__format__(*args)


def _mask_of(value):
    """The mask of a ``where`` operand: its own, or all True for a plain tensor or number."""
    if is_masked_tensor(value):
        return value._masked_mask
    if isinstance(value, Tensor):
        return ember.ones_like(value, dtype=ember.bool)
    return True


def _where_branch(value, selected):
    """A ``where`` operand to compute on: its gradient comes back masked out where the
    other operand was selected (and where it was masked out), as torch's where backward."""
    if not isinstance(value, Tensor):
        return value
    if tuple(selected.shape) != tuple(value.shape):
        return gated(value)
    if is_masked_tensor(value):
        return gated(value, value._masked_mask & selected)
    if value.requires_grad and ember.is_grad_enabled():
        return _MaskGate.apply(value, selected)
    return value


def _where(func, args, kwargs):
    if func is ember.Tensor.where:  # Tensor.where(self, condition, other)
        args = (args[1], args[0], *args[2:]) if len(args) > 1 else args
    if len(args) != 3:
        raise ValueError(f"__torch_function__, torch.where: len(args) must be 3 but got "
                         f"{len(args)}")
    if kwargs:
        raise ValueError(f"__torch_function__, torch.where: len(kwargs) must be 0 but got "
                         f"{len(kwargs)}")
    condition, input, other = args
    condition = _plain(condition)
    data = ember.where(condition, _where_branch(input, condition),
                       _where_branch(other, ~condition))
    mask = ember.where(condition, _mask_of(input), _mask_of(other))
    return _wrap(data, mask)


def _scalar_type_name(dtype):
    return _TYPE_NAMES.get(dtype.name, str(dtype))[len("torch."):-len("Tensor")]


def _softmax(func, args, kwargs):
    """softmax/softmin over the specified elements of each slice; 0 where masked out."""
    signature = _signature(func)
    bound = signature.bind(*args, **kwargs)
    self = bound.arguments.get("input", bound.arguments.get("self"))
    data, mask = gated(self), self._masked_mask
    dtype = bound.arguments.get("dtype") or data.dtype
    if not dtype.is_floating_point:
        raise NotImplementedError(
            f"\"masked_softmax\" not implemented for '{_scalar_type_name(dtype)}'")
    excluded = float("inf") if func.__name__ == "softmin" else float("-inf")
    arguments = dict(bound.arguments)
    arguments[next(iter(signature.parameters))] = data.masked_fill(~mask, excluded)
    result = func(**arguments)
    return _wrap(result.masked_fill(~mask, 0), mask)


def _aten_softmax(func, args, kwargs):
    """``aten._softmax(input, dim, half_to_float)`` over the specified elements."""
    self = args[0]
    data, mask = gated(self), self._masked_mask
    if not data.dtype.is_floating_point:
        raise NotImplementedError(
            f"\"masked_softmax\" not implemented for '{_scalar_type_name(data.dtype)}'")
    result = func(data.masked_fill(~mask, float("-inf")), *args[1:], **kwargs)
    return _wrap(result.masked_fill(~mask, 0), mask)


def _convert(func, args, kwargs):
    """``to``, ``double()``, ``cpu()``...: the data converted, the mask moved along."""
    self = args[0]
    source = gated(self)
    data = func(source, *args[1:], **kwargs)
    if not isinstance(data, Tensor):  # type() with no argument: the type's name
        return data
    if data is source:
        return self  # nothing to convert
    return _wrap(data, self._masked_mask.to(device=data.device, copy=True))


def _clone(func, args, kwargs):
    self = args[0]
    return _wrap(func(gated(self), *args[1:], **kwargs), self._masked_mask.clone())


def _detach(func, args, kwargs):
    self = args[0]
    return _wrap(self._masked_data.detach().clone(), self._masked_mask.clone())


def _contiguous(func, args, kwargs):
    self = args[0]
    if self._masked_data.is_contiguous():
        return self
    return _wrap(gated(self).contiguous(), self._masked_mask.contiguous())


def _ones_like(func, args, kwargs):
    self = args[0]
    return _wrap(ember.ones_like(self._masked_data, **kwargs), self._masked_mask.clone())


def _to_dense(func, args, kwargs):
    """Already strided: a new MaskedTensor over the same data (torch's autograd alias)."""
    self = args[0]
    return _wrap(self.get_data(), self._masked_mask)


def _copy_(func, args, kwargs):
    self, source = args[0], args[1]
    self._masked_data.copy_(_plain(source), *args[2:], **kwargs)
    return self


def _is_same_size(func, args, kwargs):
    return _plain(args[0]).is_same_size(_plain(args[1]))


def _backward(func, args, kwargs):
    bound = _signature(func).bind(*args, **kwargs)
    bound.apply_defaults()
    values = bound.arguments
    inputs = values["inputs"]
    if inputs is not None:
        inputs = [_plain(t) for t in ((inputs,) if isinstance(inputs, Tensor) else inputs)]
    ember.autograd.backward(values["self"]._masked_data, values["gradient"],
                            values["retain_graph"], values["create_graph"], inputs=inputs)


def _register_hook(func, args, kwargs):
    """The hook sees (and may return) gradients as MaskedTensors with this tensor's mask."""
    self, hook = args[0], args[1]
    mask = self._masked_mask

    def on_gradient(grad):
        return hook(grad if is_masked_tensor(grad) else _make(MaskedTensor, grad, mask))

    return self._masked_data.register_hook(on_gradient)


def _deepcopy(func, args, kwargs):
    self = args[0]
    copy = _make(MaskedTensor, self._masked_data.detach().clone(), self._masked_mask.clone())
    if self.requires_grad:
        copy.requires_grad_()
    return copy


def _reduce_ex(func, args, kwargs):
    self = args[0]
    from .core import _rebuild_masked_tensor

    return (_rebuild_masked_tensor,
            (self._masked_data.detach(), self._masked_mask, self.requires_grad))


# ---------------------------------------------------------------- the table

# torch's operators (torch.ops.aten) that its MaskedTensor runs: the pointwise and reduction
# families, the operations applied alike to data and mask, and those with rules of their own
_ATEN_PASSTHROUGH = ("select transpose split t slice index expand view _unsafe_view "
                     "_reshape_alias cat unsqueeze unfold stack").split()


def _add_aten_names(table):
    for names, handler in ((UNARY_NAMES, _normalized(apply_unary)),
                           (INPLACE_UNARY_NAMES, _normalized(apply_inplace_unary)),
                           (BINARY_NAMES, _normalized(apply_binary)),
                           (INPLACE_BINARY_NAMES, _normalized(apply_inplace_binary)),
                           (_ATEN_PASSTHROUGH, apply_pass_through)):
        for name in names:
            table["aten." + name] = handler
    for name in REDUCE_NAMES:
        table["aten." + name] = functools.partial(_reduction, name)
    table.update({"aten.where": _where, "aten.clone": _clone, "aten.detach": _detach,
                  "aten._to_copy": _convert, "aten.ones_like": _ones_like,
                  "aten.copy_": _copy_, "aten.is_same_size": _is_same_size,
                  "aten._local_scalar_dense": _scalar, "aten._softmax": _aten_softmax})


def _both_forms(names):
    """torch's function and method names of each of ``names``."""
    return [prefix + name for name in names for prefix in ("torch.", "torch.Tensor.")]


@functools.cache
def _handlers():
    """Torch name -> handler(func, args, kwargs). Built on first use, after ember's public
    functions have their final (dispatching) names."""
    table = {}
    for name in _both_forms(UNARY_NAMES):
        table[name] = _normalized(apply_unary)
    for name in _both_forms(INPLACE_UNARY_NAMES):
        table[name] = _normalized(apply_inplace_unary)
    for name in _both_forms(BINARY_NAMES):
        table[name] = _normalized(apply_binary)
    for name in _both_forms(INPLACE_BINARY_NAMES):
        table[name] = _normalized(apply_inplace_binary)
    for dunder, name in {**UNARY_DUNDERS, **BINARY_DUNDERS}.items():
        table["torch.Tensor." + dunder] = table["torch.Tensor." + name]
    table["torch.Tensor.__rdiv__"] = _normalized(apply_unary)  # number / masked tensor
    for name in REDUCE_NAMES:
        table["torch." + name] = table["torch.Tensor." + name] = \
            functools.partial(_reduction, name)
    for name in _both_forms(PASSTHROUGH_NAMES):
        table[name] = apply_pass_through
    table["torch.Tensor.mT.__get__"] = apply_pass_through
    for name in _METADATA_NAMES:
        table["torch.Tensor." + name] = _metadata
    for name in _CONVERSION_NAMES:
        table["torch.Tensor." + name] = _convert
    for name in _SCALAR_NAMES:
        table["torch.Tensor." + name] = _scalar
    for name in ("torch.softmax", "torch.Tensor.softmax", "torch.nn.functional.softmax",
                 "torch.nn.functional.softmin"):
        table[name] = _softmax
    _add_aten_names(table)
    table.update({
        "torch.where": _where, "torch.Tensor.where": _where,
        "torch.clone": _clone, "torch.Tensor.clone": _clone,
        "torch.detach": _detach, "torch.Tensor.detach": _detach,
        "torch.Tensor.data.__get__": _detach,
        "torch.Tensor.contiguous": _contiguous, "torch.ones_like": _ones_like,
        "torch.Tensor.copy_": _copy_, "torch.Tensor.to_dense": _to_dense,
        "torch.Tensor.is_same_size": _is_same_size,
        "torch.Tensor.backward": _backward, "torch.Tensor.register_hook": _register_hook,
        "torch.Tensor.tolist": _tolist, "torch.Tensor.numpy": _numpy,
        "torch.Tensor.__format__": _format, "torch.Tensor.__deepcopy__": _deepcopy,
        "torch.Tensor.__reduce_ex__": _reduce_ex,
    })
    return table
