"""What torch runs on strided nested tensors, one handler per operator name.

A handler gets the public function or Tensor method that was called (``func``), and its
arguments; it checks them as torch's nested kernels do (torch's messages) and runs ``func`` on
each component, with dims shifted past the batch dim. Autograd comes from the components.
Names without a handler raise torch's ``NotImplementedError`` (``not_implemented``).
"""

from __future__ import annotations

import math

from .._tensor import Tensor
from ..sparse._base import wrap_dim
from ._nested_tensor import NestedTensor, not_implemented

HANDLERS = {}
PROPERTIES = {
    "nbytes": lambda nested: nested.numel() * nested.element_size(),
    "itemsize": lambda nested: nested.element_size(),
    "mT": lambda nested: nested.transpose(-2, -1),
    "mH": lambda nested: NestedTensor._from_parts([p.mH for p in nested._parts], nested),
    "real": lambda nested: NestedTensor._from_parts([p.real for p in nested._parts], nested),
    "data": lambda nested: nested.detach(),
    "is_nested": lambda nested: True,
}


def handles(*names):
    """Register the decorated handler under each of ``names``.

    Example::

        >>> @handles("my_op")
        ... def _my_op(func, args, kwargs):
        ...     return _per_part(func, args, kwargs)
    """

    def register(handler):
        for name in names:
            HANDLERS[name] = handler
        return handler

    return register


# ---------------------------------------------------------------- argument helpers


def _arg(args, kwargs, index, name, default=None):
    """The argument at position ``index`` or keyword ``name``."""
    if len(args) > index:
        return args[index]
    return kwargs.get(name, default)


def _set_arg(args, kwargs, index, name, value):
    """``args``/``kwargs`` with the argument at ``index``/``name`` replaced by ``value``."""
    if len(args) > index:
        return (*args[:index], value, *args[index + 1:]), kwargs
    return args, {**kwargs, name: value}


def _part(value, index):
    """``value`` with each nested tensor in it (also in a list) replaced by its component."""
    if isinstance(value, NestedTensor):
        return value._parts[index]
    if isinstance(value, (list, tuple)) and any(isinstance(v, NestedTensor) for v in value):
        return type(value)(_part(v, index) for v in value)
    return value


def _first_nested(args, kwargs):
    for value in (*args, *kwargs.values()):
        if isinstance(value, NestedTensor):
            return value
        if isinstance(value, (list, tuple)):
            for item in value:
                if isinstance(item, NestedTensor):
                    return item
    raise AssertionError("no nested tensor among the arguments")


def _per_part(func, args, kwargs):
    """``func`` run on each component; one nested tensor (a tuple of them when ``func``
    returns several tensors)."""
    like = _first_nested(args, kwargs)
    results = [func(*_part(args, i), **{k: _part(v, i) for k, v in kwargs.items()})
               for i in range(len(like._parts))]
    if results and isinstance(results[0], (tuple, list)):
        return tuple(NestedTensor._from_parts(column, like) for column in zip(*results))
    return NestedTensor._from_parts(results, like)


def _in_place(func, args, kwargs):
    """``func`` (an in-place method) run on each component; the nested tensor itself."""
    _per_part(func, args, kwargs)
    return args[0]


def _component_dim(nested, dim, refuse_batch):
    """A nested dim as a dim of the components; ``refuse_batch`` is the error for dim 0."""
    dim = wrap_dim(dim, nested.dim())
    if dim == 0:
        raise refuse_batch
    return dim - 1


def _is_scalar(value):
    return not isinstance(value, (Tensor, NestedTensor)) or \
        (isinstance(value, Tensor) and value.dim() == 0)


# ---------------------------------------------------------------- component by component

handles("cpu", "cuda")(_per_part)


@handles("numpy")
def _numpy(func, args, kwargs):
    from ._nested_tensor import _NO_SIZES

    raise RuntimeError(_NO_SIZES)


@handles("tolist")
def _tolist(func, args, kwargs):
    raise RuntimeError("Internal error: NestedTensorImpl doesn't support strides. Please file "
                       "an issue.")


handles("abs", "neg", "relu", "sin", "cos", "tanh", "sqrt", "sgn", "logical_not", "isnan",
        "isinf", "silu", "gelu", "clone", "detach", "contiguous", "float", "double", "half",
        "bfloat16", "positive", "conj", "__neg__", "__abs__", "__pos__", "dropout", "to",
        "ones_like", "zeros_like", "empty_like", "randn_like", "rand_like",
        "scaled_dot_product_attention", "absolute", "negative", "adjoint", "conj_physical",
        "resolve_conj", "resolve_neg", "isneginf", "isposinf", "isreal", "bool", "byte",
        "char", "short", "int", "long", "cfloat", "cdouble", "chalf", "real", "softsign",
        "tanhshrink", "alpha_dropout", "feature_alpha_dropout")(_per_part)
handles("abs_", "neg_", "relu_", "tanh_", "zero_", "fill_", "normal_", "uniform_",
        "dropout_", "absolute_", "negative_", "logical_not_", "sgn_", "detach_")(_in_place)


@handles("copy_")
def _copy_(func, args, kwargs):
    source = _arg(args, kwargs, 1, "src")
    if not isinstance(source, NestedTensor):
        raise RuntimeError("copy_ only supports Nested Tensors that have same size and the "
                           "exact same offset as the source tensor")
    _check_same_sizes("copy_", args[0], source)
    return _in_place(func, args, kwargs)


@handles("numel", "nelement", "dim", "unbind", "is_contiguous", "element_size",
         "to_padded_tensor", "requires_grad_", "size")
def _method(func, args, kwargs):
    return getattr(args[0], func.__name__)(*args[1:], **kwargs)


# ---------------------------------------------------------------- arithmetic

_ARITHMETIC = {"add": "add", "__add__": "add", "__radd__": "add", "__iadd__": "add",
               "add_": "add", "sub": "sub", "__sub__": "sub", "__isub__": "sub", "sub_": "sub",
               "mul": "mul", "__mul__": "mul", "__rmul__": "mul", "__imul__": "mul",
               "mul_": "mul", "div": "div", "__truediv__": "div", "__itruediv__": "div",
               "div_": "div", "true_divide": "div", "multiply": "mul", "subtract": "sub",
               "divide": "div", "divide_": "div", "true_divide_": "div", "multiply_": "mul",
               "subtract_": "sub"}
_IN_PLACE = {"__iadd__", "add_", "__isub__", "sub_", "__imul__", "mul_", "__itruediv__",
             "div_", "divide_", "true_divide_", "multiply_", "subtract_"}


def _check_same_sizes(name, nested, other):
    same = len(nested._parts) == len(other._parts) and all(
        a.shape == b.shape for a, b in zip(nested._parts, other._parts))
    if not same:
        raise RuntimeError(f"{name} does not support broadcasting when given a NestedTensor")


@handles(*_ARITHMETIC)
def _arithmetic(func, args, kwargs):
    self, other = args[0], _arg(args, kwargs, 1, "other")
    if isinstance(self, NestedTensor) and isinstance(other, NestedTensor):
        _check_same_sizes(_ARITHMETIC[func.__name__], self, other)
    elif not (_is_scalar(self) or _is_scalar(other)):
        raise RuntimeError("Expected both self and other to be nested, but got a "
                           + ("nested self and non-nested other"
                              if isinstance(self, NestedTensor)
                              else "non-nested self and nested other"))
    if func.__name__ in _IN_PLACE:
        return _in_place(func, args, kwargs)
    return _per_part(func, args, kwargs)


@handles("__ne__")
def _not_equal(func, args, kwargs):
    if _arg(args, kwargs, 1, "other") is None:  # ``nt != None``: Python's answer, as torch's
        return True
    raise not_implemented("ne.Tensor")


@handles("eq", "__eq__", "gt", "__gt__", "ge", "__ge__", "greater", "greater_equal")
def _compare(func, args, kwargs):
    other = _arg(args, kwargs, 1, "other")
    name = {"greater": "gt", "greater_equal": "ge"}.get(func.__name__, func.__name__.strip("_"))
    if other is None and func.__name__ == "__eq__":
        return False
    if isinstance(other, NestedTensor):
        if name == "eq":
            raise RuntimeError("eq does not support nested tensor as other value.")
        raise not_implemented(f"{name}.Tensor")
    if isinstance(other, Tensor) and (name != "eq" or other.dim() != 0):
        raise not_implemented(f"{name}.Tensor")
    return _per_part(func, args, kwargs)


@handles("masked_fill", "masked_fill_")
def _masked_fill(func, args, kwargs):
    mask = _arg(args, kwargs, 1, "mask")
    if not isinstance(mask, NestedTensor):
        raise RuntimeError("masked_fill: expected mask to be a nested tensor")
    _check_same_sizes("masked_fill", args[0], mask)
    if func.__name__.endswith("_"):
        return _in_place(func, args, kwargs)
    return _per_part(func, args, kwargs)


# ---------------------------------------------------------------- products


@handles("matmul", "__matmul__")
def _matmul(func, args, kwargs):
    self, other = args[0], _arg(args, kwargs, 1, "other")
    if func.__name__ == "__matmul__" and not isinstance(other, (Tensor, NestedTensor)):
        raise TypeError(f"unsupported operand type(s) for @: 'Tensor' and "
                        f"'{type(other).__name__}'")
    if not (isinstance(self, NestedTensor) and isinstance(other, NestedTensor)):
        raise RuntimeError("Expected both to be nested, but got a "
                           + ("nested self and non-nested other"
                              if isinstance(self, NestedTensor)
                              else "non-nested self and nested other"))
    if self.dim() < 3 or other.dim() < 3:
        raise RuntimeError(f"matmul: For nested tensors, only inputs with >= 3 dims are "
                           f"currently supported. 1st input has rank: {self.dim()}; 2nd "
                           f"input has rank: {other.dim()}")
    if len(self._parts) != len(other._parts):
        raise RuntimeError("matmul: Expected size for first two dimensions of batch2 tensor "
                           "to be the same as batch1")
    rows = [p.shape[-1] for p in self._parts]
    cols = [p.shape[-2] for p in other._parts]
    if rows != cols:
        raise RuntimeError(f"matmul: Nested tensors cannot be matrix multiplied, last "
                           f"dimension of self has sizes {rows} second last dimension of "
                           f"mat2 has sizes {cols}")
    return _per_part(func, args, kwargs)


@handles("bmm")
def _bmm(func, args, kwargs):
    self, other = args[0], _arg(args, kwargs, 1, "mat2")
    if not isinstance(self, NestedTensor):
        raise not_implemented("bmm")
    if self.dim() != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if other.dim() != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    count = len(self._parts)
    others = other._parts if isinstance(other, NestedTensor) else other.unbind(0)
    if len(others) != count:
        raise RuntimeError(f"Expected size for first dimension of batch2 tensor to be: "
                           f"{count} but got: {len(others)}.")
    for index, (a, b) in enumerate(zip(self._parts, others)):
        if a.shape[1] != b.shape[0]:
            raise RuntimeError(f"{index}-th nested matrices in batch cannot be multiplied "
                               f"({a.shape[0]}x{a.shape[1]} and {b.shape[0]}x{b.shape[1]})")
    return NestedTensor._from_parts([a.matmul(b) for a, b in zip(self._parts, others)], self)


@handles("linear")
def _linear(func, args, kwargs):
    input, weight = args[0], _arg(args, kwargs, 1, "weight")
    if not isinstance(input, NestedTensor) or isinstance(weight, NestedTensor):
        raise not_implemented("linear")
    if input.dim() != 3 or weight.dim() != 2:
        raise RuntimeError(f"Linear requires nested_tensor.dim == 3 and dense_matrix.dim == "
                           f"2. Nested tensor dim: {input.dim()}. Dense tensor dim: "
                           f"{weight.dim()}")
    last = input.size(-1)
    if last != weight.shape[1]:
        raise RuntimeError(f"Shape mismatch for NestedTensor Linear: Expected input's (a "
                           f"nested tensor) 'last_dim' to equal 'weight.size(1), but got: "
                           f"last_dim = {last}, and weight.size(1) = {weight.shape[1]}")
    return _per_part(func, args, kwargs)


# ---------------------------------------------------------------- normalisations, reductions


@handles("softmax")
def _softmax(func, args, kwargs):
    nested, dim = args[0], _arg(args, kwargs, 1, "dim")
    if dim is None:
        raise not_implemented("_softmax")
    dim = _component_dim(nested, dim, RuntimeError(
        "Cannot apply softmax across nested dimension 0"))
    return _per_part(func, *_set_arg(args, kwargs, 1, "dim", dim))


@handles("layer_norm")
def _layer_norm(func, args, kwargs):
    weight, bias = _arg(args, kwargs, 2, "weight"), _arg(args, kwargs, 3, "bias")
    if weight is None or bias is None:
        raise ValueError("NestedTensor layer_norm requires weight and bias")
    return _per_part(func, args, kwargs)


@handles("sum")
def _sum(func, args, kwargs):
    nested, dim = args[0], _arg(args, kwargs, 1, "dim")
    if dim is None:
        raise not_implemented("sum")
    dims = [dim] if isinstance(dim, int) else list(dim)
    for one in dims:
        one = wrap_dim(one, nested.dim())
        if one != nested.dim() - 1:
            raise RuntimeError(f"NestedTensor can only be reduced across the last dimension "
                               f"for now got dimension {one} instead.")
    if not _arg(args, kwargs, 2, "keepdim", False):
        raise RuntimeError("NestedTensor always requires keepdim=True for now.")
    return _per_part(func, *_set_arg(args, kwargs, 1, "dim", -1))


# ---------------------------------------------------------------- shape


@handles("transpose")
def _transpose(func, args, kwargs):
    nested = args[0]
    refuse = RuntimeError("Nested tensor dimension 0 cannot be transposed")
    dim0 = _component_dim(nested, _arg(args, kwargs, 1, "dim0"), refuse)
    dim1 = _component_dim(nested, _arg(args, kwargs, 2, "dim1"), refuse)
    return NestedTensor._from_parts([p.transpose(dim0, dim1) for p in nested._parts], nested)


@handles("reshape", "view")
def _reshape(func, args, kwargs):
    nested, name = args[0], func.__name__
    sizes = args[1:] if len(args) > 1 else (kwargs.get("shape") or kwargs.get("size"),)
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    if sizes[0] != len(nested._parts):
        raise RuntimeError(f"{name}: For now nested {name} cannot change or infer the "
                           f"implicit batch dimension")
    parts = []
    for part in nested._parts:
        # -1 keeps the component's own size of that dim (how a ragged dim is written)
        shape = [part.shape[i] if size == -1 and i < part.dim() else size
                 for i, size in enumerate(sizes[1:])]
        if -1 in shape or math.prod(shape) != part.numel():
            raise RuntimeError(f"shape '{list(sizes)}' is invalid for input of size "
                               f"{part.numel()}")
        parts.append(getattr(part, name)(shape))
    return NestedTensor._from_parts(parts, nested)


@handles("unsqueeze")
def _unsqueeze(func, args, kwargs):
    nested, dim = args[0], _arg(args, kwargs, 1, "dim")
    dim = wrap_dim(dim, nested.dim() + 1)
    if dim == 0:
        raise RuntimeError(
            "unsqueeze(): For nested tensors, unsqueezing dimension 0 is not supported at the "
            "moment if you need this feature, please open an issue on github describing your "
            "use case.")
    return NestedTensor._from_parts([p.unsqueeze(dim - 1) for p in nested._parts], nested)


@handles("squeeze")
def _squeeze(func, args, kwargs):
    nested, dim = args[0], _arg(args, kwargs, 1, "dim")
    if dim is None:
        raise RuntimeError(
            "squeeze(): For nested tensors, squeeze without the dim argument is not supported "
            "at the moment, however you can use squeeze(Tensor self, int dim) instead if you "
            "need this feature, please open an issue on github describing your use case.")
    dim = _component_dim(nested, dim, RuntimeError(
        "squeeze(): For nested tensors, squeezing dimension 0 is not supported at the moment "
        "if you need this feature, please open an issue on github describing your use case."))
    return NestedTensor._from_parts([p.squeeze(dim) for p in nested._parts], nested)


def _component(nested, index):
    count = len(nested._parts)
    if not -count <= index < count:
        raise IndexError(f"index {index} is out of bounds for dimension 0 with size {count}")
    return nested._parts[index][...]


@handles("select")
def _select(func, args, kwargs):
    nested = args[0]
    dim = wrap_dim(_arg(args, kwargs, 1, "dim"), nested.dim())
    index = _arg(args, kwargs, 2, "index")
    if dim == 0:
        return _component(nested, index)
    return NestedTensor._from_parts([p.select(dim - 1, index) for p in nested._parts], nested)


@handles("__getitem__")
def _getitem(func, args, kwargs):
    nested, index = args
    if isinstance(index, int) and not isinstance(index, bool):
        return _component(nested, index)
    raise not_implemented("slice.Tensor")


@handles("narrow")
def _narrow(func, args, kwargs):
    nested = args[0]
    dim = wrap_dim(_arg(args, kwargs, 1, "dim"), nested.dim())
    start, length = _arg(args, kwargs, 2, "start"), _arg(args, kwargs, 3, "length")
    if dim != 0:
        raise RuntimeError(f"narrow(): only dim=0 supported for nested tensors, but got: {dim}")
    count = len(nested._parts)
    start = start + count if start < 0 else start
    if not (0 <= start <= count and 0 <= length <= count - start):
        raise IndexError(f"start ({start}) + length ({length}) exceeds dimension size "
                         f"({count}).")
    return NestedTensor._from_parts(nested._parts[start:start + length], nested)


def _last_dim_only(nested, dim, what):
    dim = wrap_dim(dim, nested.dim())
    if dim != nested.dim() - 1:
        raise RuntimeError(f"{what} for nested tensors is currently only supported for the "
                           f"last dimension.")
    return dim - 1


@handles("chunk")
def _chunk(func, args, kwargs):
    nested, chunks = args[0], _arg(args, kwargs, 1, "chunks")
    dim = _last_dim_only(nested, _arg(args, kwargs, 2, "dim", 0), "Chunk")
    last = nested.size(-1)
    if last % chunks:
        raise RuntimeError(f"Chunk for nested tensors is only supported for nested tensors "
                           f"with trailing dimension divisible by chunks, got: {last} % "
                           f"{chunks} != 0")
    return _split_parts(nested, [last // chunks] * chunks, dim)


@handles("split", "split_with_sizes")
def _split(func, args, kwargs):
    nested = args[0]
    sizes = _arg(args, kwargs, 1, "split_size_or_sections",
                 kwargs.get("split_size", kwargs.get("split_sizes")))
    if isinstance(sizes, int):
        raise not_implemented("split.Tensor")
    dim = _last_dim_only(nested, _arg(args, kwargs, 2, "dim", 0), "split_with_sizes")
    if sum(sizes) != nested.size(-1):
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to "
                           f"{nested.size(-1)} (input tensor's size at dimension "
                           f"{nested.dim() - 1}), but got split_sizes={list(sizes)}")
    return _split_parts(nested, list(sizes), dim)


def _split_parts(nested, sizes, dim):
    pieces = [p.split(sizes, dim) for p in nested._parts]
    return tuple(NestedTensor._from_parts(column, nested) for column in zip(*pieces))


@handles("cat", "concat", "concatenate")
def _cat(func, args, kwargs):
    tensors = list(_arg(args, kwargs, 0, "tensors"))
    dim = _arg(args, kwargs, 1, "dim", 0)
    if not all(isinstance(t, NestedTensor) for t in tensors):
        raise RuntimeError("cat(): expected each tensor in given list to be nested")
    first = tensors[0]
    dim = wrap_dim(dim, first.dim())
    if dim == 0:
        return NestedTensor._from_parts([p for t in tensors for p in t._parts], first)
    return NestedTensor._from_parts(
        [func([t._parts[i] for t in tensors], dim - 1) for i in range(len(first._parts))],
        first)


# ---------------------------------------------------------------- relatives of other tensors


@handles("flatten")
def _flatten(func, args, kwargs):
    # torch flattens a nested tensor only over one dim (a no-op); wider spans need sizes
    from ._nested_tensor import _NO_SIZES

    nested = args[0]
    start = wrap_dim(_arg(args, kwargs, 1, "start_dim", 0), nested.dim())
    end = wrap_dim(_arg(args, kwargs, 2, "end_dim", -1), nested.dim())
    if start != end:
        raise RuntimeError(_NO_SIZES)
    return NestedTensor._from_parts(nested._parts, nested)


@handles("is_same_size")
def _is_same_size(func, args, kwargs):
    nested, other = args[0], _arg(args, kwargs, 1, "other")
    if not isinstance(other, NestedTensor):
        raise RuntimeError("Expected both self and other to be nested tensors. Self "
                           "is_nested: True. Other is_nested: False.")
    return len(nested._parts) == len(other._parts) and all(
        a.shape == b.shape for a, b in zip(nested._parts, other._parts))


@handles("reshape_as", "view_as")
def _reshape_as(func, args, kwargs):
    nested, other = args[0], _arg(args, kwargs, 1, "other")
    if not isinstance(other, NestedTensor) or len(other._parts) != len(nested._parts):
        raise not_implemented(func.__name__)
    method = "reshape" if func.__name__ == "reshape_as" else "view"
    return NestedTensor._from_parts(
        [getattr(p, method)(o.shape) for p, o in zip(nested._parts, other._parts)], nested)


@handles("type_as")
def _type_as(func, args, kwargs):
    return args[0].to(_arg(args, kwargs, 1, "other").dtype)


@handles("new_tensor")
def _new_tensor(func, args, kwargs):
    from .._tensor import tensor

    nested, data = args[0], _arg(args, kwargs, 1, "data")
    kwargs = {k: v for k, v in kwargs.items() if k != "data"}
    kwargs.setdefault("dtype", nested.dtype)
    kwargs.setdefault("device", nested.device)
    return tensor(data, **kwargs)


@handles("atleast_1d", "atleast_2d", "atleast_3d")
def _at_least(func, args, kwargs):
    nested = args[0]
    if nested.dim() < int(func.__name__[-2]):  # a nested tensor has at least 2 dims
        raise not_implemented(func.__name__)
    return nested
