"""torch's top-level functions that ask a tensor something or call one of its methods
(``get_device``, ``is_same_size``, ``is_signed``, ``is_inference``, ``is_nonzero``, ``detach``,
``typename``; the in-place aliases ``abs_``, ``neg_``, ...), and the few Tensor methods written
on other ops (``fill_diagonal_``, ``tril_``, ``triu_``, ``conj_physical_``).

Example::

    >>> ember.is_same_size(ember.zeros(2), ember.ones(2))
    True
"""

from __future__ import annotations

import builtins

import numpy as np

from ._tensor import Tensor
from .ops._methods import tensor_method

__all__ = ["typename", "get_device", "is_same_size", "is_signed", "is_inference", "is_nonzero",
           "detach"]


def require_tensor(value, name, arg="input", position=1):
    """torch's TypeError unless ``value`` is a Tensor (``name``: the function, ``arg`` and
    ``position``: the argument), for the functions here and in the families they serve."""
    if not isinstance(value, Tensor):
        raise TypeError(f"{name}(): argument '{arg}' (position {position}) must be Tensor, not "
                        f"{type(value).__name__}")


def typename(obj):
    """The type name of ``obj``: a tensor's legacy type string (``'torch.FloatTensor'``, as
    ``Tensor.type()``), otherwise the object's qualified class name.

    Example::

        >>> ember.typename(ember.zeros(2))
        'torch.FloatTensor'
        >>> ember.typename(1)
        'int'
    """
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    qualname = ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = obj.__class__.__module__ or ""
        qualname = obj.__class__.__qualname__
    if module in ("", "builtins"):
        return qualname
    return f"{module}.{qualname}"


def get_device(input):
    """The CUDA ordinal of ``input``'s device, -1 on the CPU.

    Example::

        >>> ember.get_device(ember.zeros(2))
        -1
    """
    require_tensor(input, "get_device", "self")
    return input.get_device()


@tensor_method
def is_same_size(input, other):
    """Whether two tensors have the same shape.

    Example::

        >>> ember.is_same_size(ember.zeros(2, 3), ember.ones(2, 3))
        True
    """
    require_tensor(input, "is_same_size")
    require_tensor(other, "is_same_size", "other", 2)
    return input.shape == other.shape


def is_signed(input):
    """Whether ``input``'s dtype is signed (all but uint8 and bool).

    Example::

        >>> ember.is_signed(ember.zeros(2, dtype=ember.uint8))
        False
    """
    require_tensor(input, "is_signed")
    return input.is_signed()


@tensor_method
def is_inference(input):
    """Whether ``input`` is an inference tensor. ember does not mark the tensors made under
    ``inference_mode`` (they act as tensors made under ``no_grad``), so this is always False.

    Example::

        >>> ember.is_inference(ember.zeros(2))
        False
    """
    require_tensor(input, "is_inference")
    return False


@tensor_method
def is_nonzero(input):
    """The truth of a one-element tensor (``bool(input)``); torch's error for other sizes.

    Example::

        >>> ember.is_nonzero(ember.tensor([0.5]))
        True
    """
    require_tensor(input, "is_nonzero")
    n = input.numel()
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return builtins.bool(input.item())


def detach(input):
    """``input.detach()``: the same data, cut from the graph.

    Example::

        >>> ember.detach(ember.ones(2, requires_grad=True)).requires_grad
        False
    """
    require_tensor(input, "detach")
    return input.detach()


# ---------------------------------------------------------------- top-level in-place aliases

# torch.abs_(t) is t.abs_(): the in-place methods that torch also lists at the top level
_INPLACE_ALIASES = (
    "abs_", "acos_", "acosh_", "addmv_", "arccos_", "arccosh_", "arcsin_", "arcsinh_",
    "arctan_", "arctanh_", "as_strided_", "asin_", "asinh_", "atan_", "atanh_", "ceil_",
    "clamp_", "clamp_max_", "clamp_min_", "clip_", "cos_", "cosh_", "deg2rad_", "detach_",
    "erf_", "erfc_", "exp2_", "exp_", "expm1_", "fill_", "fix_", "floor_", "frac_", "i0_",
    "index_put_", "log10_", "log1p_", "log2_", "log_", "logit_", "nan_to_num_", "neg_",
    "negative_", "rad2deg_", "reciprocal_", "relu_", "round_", "rsqrt_", "sigmoid_", "sin_",
    "sinc_", "sinh_", "sqrt_", "square_", "tan_", "tanh_", "trunc_", "xlogy_", "zero_",
    "gcd_", "lcm_", "ldexp_", "resize_as_", "conj_physical_")


def _inplace_alias(name):
    def alias(input, *args, **kwargs):
        require_tensor(input, name)
        return getattr(input, name)(*args, **kwargs)
    alias.__name__ = alias.__qualname__ = name
    alias.__doc__ = f"""``input.{name}(...)``: the in-place method ``Tensor.{name}``, called as a
    function (it changes ``input`` and returns it).

    Example (the pattern, shown with ``neg_``)::

        >>> t = ember.tensor([1., -2.])
        >>> ember.neg_(t) is t, t
        (True, tensor([-1.,  2.]))
    """
    return alias


for _name in _INPLACE_ALIASES:
    globals()[_name] = _inplace_alias(_name)
__all__ += list(_INPLACE_ALIASES)
del _name


# ---------------------------------------------------------------- Tensor methods torch has


@tensor_method("fill_diagonal_")
def _fill_diagonal_(self, fill_value, wrap=False):
    """Fill the main diagonal (all indices equal) with ``fill_value`` in place; a tall 2-D
    matrix with ``wrap=True`` starts the diagonal again every ``cols + 1`` rows.

    Example::

        >>> ember.zeros(2, 3).fill_diagonal_(5)
        tensor([[5., 0., 0.],
                [0., 5., 0.]])
    """
    if self.ndim < 2:
        raise RuntimeError("dimensions must larger than 1")
    if self.ndim > 2 and len(set(self.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    mask = np.zeros(self.shape, dtype=bool)
    np.fill_diagonal(mask, True, wrap=builtins.bool(wrap))
    from ._tensor import tensor

    return self.masked_fill_(tensor(mask, device=self.device), fill_value)


@tensor_method("tril_")
def _tril_(self, diagonal=0):
    """:func:`ember.tril` in place.

    Example::

        >>> ember.ones(2, 2).tril_()
        tensor([[1., 0.],
                [1., 1.]])
    """
    from .ops._registry import inplace
    from .ops.shape import tril

    return inplace(tril, self, diagonal)


@tensor_method("triu_")
def _triu_(self, diagonal=0):
    """:func:`ember.triu` in place.

    Example::

        >>> ember.ones(2, 2).triu_(1)
        tensor([[0., 1.],
                [0., 0.]])
    """
    from .ops._registry import inplace
    from .ops.shape import triu

    return inplace(triu, self, diagonal)


@tensor_method("conj_physical_")
def _conj_physical_(self):
    """Conjugate this tensor's elements in place (a no-op for real tensors).

    Example::

        >>> ember.tensor([1+1j]).conj_physical_()
        tensor([1.-1.j])
    """
    from .ops._registry import inplace
    from .ops.pointwise import conj_physical

    return inplace(conj_physical, self)
