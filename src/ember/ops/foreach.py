"""torch's ``_foreach_*`` operators: one operator applied to every tensor of a list.

Fused optimisers (``foreach=True``) and libraries such as timm call these to update many
parameters with one call. Each one here is the per-tensor operator applied in a loop, so values,
dtypes, errors and gradients are exactly those of the per-tensor operator. Out-of-place forms
return a tuple of new tensors; in-place forms (trailing ``_``) mutate the tensors and return None.

Arguments after the tensor list broadcast over it as torch's overloads do: a Python number
applies to every tensor, a list of numbers or of tensors pairs up element by element (lengths must
match), and a single tensor (``_foreach_mul(tensors, t)``) applies to every tensor.

Example::

    >>> import ember
    >>> params = [ember.ones(2), ember.ones(3)]
    >>> ember._foreach_mul_(params, 0.5)
    >>> params[1]
    tensor([0.5000, 0.5000, 0.5000])
    >>> ember._foreach_add(params, [ember.ones(2), ember.ones(3)], alpha=2)[0]
    tensor([2.5000, 2.5000])
"""

from __future__ import annotations

import numbers

from .. import _tensor

_UNARY = (
    "abs", "acos", "asin", "atan", "ceil", "cos", "cosh", "erf", "erfc", "exp", "expm1", "floor",
    "frac", "lgamma", "log", "log10", "log1p", "log2", "neg", "reciprocal", "round", "rsqrt",
    "sigmoid", "sign", "sin", "sinh", "sqrt", "tan", "tanh", "trunc",
)
# name -> (per-tensor function name, whether it takes alpha=)
_BINARY = {
    "add": ("add", True), "sub": ("sub", True), "mul": ("mul", False), "div": ("div", False),
    "pow": ("pow", False), "maximum": ("maximum", False), "minimum": ("minimum", False),
    "clamp_min": ("clamp_min", False), "clamp_max": ("clamp_max", False),
}
_POINTWISE_TERNARY = ("addcmul", "addcdiv")
# maximum/minimum take tensors only; with a number torch clamps instead
_WITH_NUMBER = {"maximum": "clamp_min", "minimum": "clamp_max"}


def _ember():
    import ember

    return ember


def _signature_error(name, args):
    got = ", ".join(type(a).__name__ for a in args)
    return TypeError(f"{name}() received an invalid combination of arguments - got ({got})")


def _tensor_list(name, tensors, args=()):
    """The list argument as a list of tensors, or torch's TypeError."""
    if not isinstance(tensors, (list, tuple)) or not all(
            isinstance(t, _tensor.Tensor) for t in tensors):
        raise _signature_error(name, (tensors, *args))
    if not tensors:
        raise RuntimeError("Tensor list must have at least one tensor.")
    return list(tensors)


def _is_number(value):
    return isinstance(value, numbers.Number) and not isinstance(value, _tensor.Tensor)


def _per_tensor(name, value, count):
    """Spread one argument over ``count`` tensors: a number or tensor repeats, a list pairs up."""
    if isinstance(value, (list, tuple)):
        if all(isinstance(v, _tensor.Tensor) for v in value):
            if len(value) != count:
                raise RuntimeError("Tensor lists must have the same number of tensors, "
                                   f"got {count} and {len(value)}")
        elif len(value) != count:
            raise RuntimeError("Tensor list must have same number of elements as scalar list.")
        return list(value)
    if isinstance(value, _tensor.Tensor) or _is_number(value):
        return [value] * count
    raise TypeError(f"{name}(): expected a number, a tensor or a list of them, "
                    f"got {type(value).__name__}")


def _scalars_from_tensor(value, count):
    """torch's ``Tensor scalars`` overload: a 1-D tensor holding one number per list entry."""
    if isinstance(value, _tensor.Tensor):
        if value.dim() != 1 or value.numel() != count:
            raise RuntimeError("Expected scalars to be a 1-D tensor with as many elements as "
                               f"the tensor list ({count}), got shape {list(value.shape)}")
        return value.tolist()
    return value


def _make_unary(op):
    name = f"_foreach_{op}"

    def foreach(self):
        function = getattr(_ember(), op)
        return tuple(function(t) for t in _tensor_list(name, self))

    def foreach_(self):
        for t in _tensor_list(name + "_", self):
            getattr(t, op + "_")()

    return foreach, foreach_


def _make_binary(public, op, takes_alpha):
    name = f"_foreach_{public}"

    def spread(label, tensors, other, alpha):
        tensors = _tensor_list(label, tensors, (other,))
        others = _per_tensor(label, other, len(tensors))
        if alpha != 1 and not (takes_alpha and all(isinstance(o, _tensor.Tensor) for o in others)):
            raise _signature_error(label, (tensors, other))
        return tensors, others

    def foreach(self, other, *, alpha=1):
        if op == "pow" and _is_number(self):
            exponents = _tensor_list(name, other, (self,))
            return tuple(_ember().pow(self, e) for e in exponents)
        tensors, others = spread(name, self, other, alpha)
        ember = _ember()
        extra = {"alpha": alpha} if alpha != 1 else {}
        return tuple(getattr(ember, _op_for(op, o))(t, o, **extra) for t, o in zip(tensors, others))

    def foreach_(self, other, *, alpha=1):
        tensors, others = spread(name + "_", self, other, alpha)
        extra = {"alpha": alpha} if alpha != 1 else {}
        for t, o in zip(tensors, others):
            chosen = _op_for(op, o)
            if chosen in _WITH_NUMBER:  # no Tensor.maximum_: write the result back
                t.copy_(getattr(_ember(), chosen)(t, o))
            else:
                getattr(t, chosen + "_")(o, **extra)

    if not takes_alpha:
        foreach = _without_alpha(foreach)
        foreach_ = _without_alpha(foreach_)
    return foreach, foreach_


def _op_for(op, other):
    return _WITH_NUMBER.get(op, op) if _is_number(other) else op


def _without_alpha(function):
    def wrapped(self, other):
        return function(self, other)

    return wrapped


def _make_pointwise_ternary(op):
    name = f"_foreach_{op}"

    def spread(label, self, tensor1, tensor2, value):
        tensors = _tensor_list(label, self)
        count = len(tensors)
        firsts = _per_tensor(label, tensor1, count)
        seconds = _per_tensor(label, tensor2, count)
        values = _per_tensor(label, _scalars_from_tensor(value, count), count)
        return zip(tensors, firsts, seconds, values)

    def foreach(self, tensor1, tensor2, value=1):
        function = getattr(_ember(), op)
        return tuple(function(t, a, b, value=v)
                     for t, a, b, v in spread(name, self, tensor1, tensor2, value))

    def foreach_(self, tensor1, tensor2, value=1):
        for t, a, b, v in spread(name + "_", self, tensor1, tensor2, value):
            getattr(t, op + "_")(a, b, value=v)

    return foreach, foreach_


def _foreach_lerp(self, tensors1, weight):
    tensors = _tensor_list("_foreach_lerp", self)
    ends = _per_tensor("_foreach_lerp", tensors1, len(tensors))
    weights = _per_tensor("_foreach_lerp", weight, len(tensors))
    return tuple(_ember().lerp(t, e, w) for t, e, w in zip(tensors, ends, weights))


def _foreach_lerp_(self, tensors1, weight):
    tensors = _tensor_list("_foreach_lerp_", self)
    ends = _per_tensor("_foreach_lerp_", tensors1, len(tensors))
    weights = _per_tensor("_foreach_lerp_", weight, len(tensors))
    for t, e, w in zip(tensors, ends, weights):
        t.lerp_(e, w)


def _foreach_norm(self, ord=2, dtype=None):
    vector_norm = _ember().linalg.vector_norm
    return tuple(vector_norm(t, ord, dtype=dtype) for t in _tensor_list("_foreach_norm", self))


def _foreach_powsum(self, ord=2, dtype=None):
    """The sum of ``|x| ** ord`` of each tensor (a norm before its final root)."""
    ember = _ember()
    tensors = _tensor_list("_foreach_powsum", self)
    return tuple(ember.sum(ember.abs(t) ** ord, dtype=dtype) for t in tensors)


def _foreach_max(self):
    results = []
    for t in _tensor_list("_foreach_max", self):
        if t.numel() == 0:
            raise RuntimeError("_foreach_max cannot compute the maximum of an empty tensor; "
                               "max over zero elements is undefined.")
        results.append(t.max())
    return tuple(results)


def _foreach_mm(self, mat2):
    tensors = _tensor_list("_foreach_mm", self)
    others = _per_tensor("_foreach_mm", mat2, len(tensors))
    return tuple(_ember().mm(a, b) for a, b in zip(tensors, others))


def _foreach_clone(self, *, memory_format=None):
    extra = {} if memory_format is None else {"memory_format": memory_format}
    return tuple(t.clone(**extra) for t in _tensor_list("_foreach_clone", self))


def _foreach_copy_(self, src, non_blocking=False):
    tensors = _tensor_list("_foreach_copy_", self)
    sources = _per_tensor("_foreach_copy_", src, len(tensors))
    for t, s in zip(tensors, sources):
        t.copy_(s, non_blocking=non_blocking)
    return tensors


def _foreach_zero_(self):
    for t in _tensor_list("_foreach_zero_", self):
        t.zero_()


def _install():
    """Build every ``_foreach_*`` function from its per-tensor operator."""
    functions = {}
    for op in _UNARY:
        functions[f"_foreach_{op}"], functions[f"_foreach_{op}_"] = _make_unary(op)
    for public, (op, takes_alpha) in _BINARY.items():
        functions[f"_foreach_{public}"], functions[f"_foreach_{public}_"] = _make_binary(
            public, op, takes_alpha)
    for op in _POINTWISE_TERNARY:
        functions[f"_foreach_{op}"], functions[f"_foreach_{op}_"] = _make_pointwise_ternary(op)
    for name, function in functions.items():
        per_tensor = name[len("_foreach_"):]
        function.__name__ = function.__qualname__ = name
        function.__doc__ = (f"Apply ``{per_tensor}`` to each tensor of a list "
                            "(torch's foreach form); see the module docstring.")
        function.__module__ = __name__
    return functions


globals().update(_install())

__all__ = sorted(name for name in globals() if name.startswith("_foreach_"))
