"""The rest of torch.nn.functional's public names: ``conv_tbc``, ``grouped_mm``, the FP8
``scaled_mm`` family (CUDA-only), argument helpers, mode tables and documentation notes."""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING  # noqa: F401  (torch.nn.functional exports the name)

from ... import _dtype as dt
from ..._jit_internal import (  # noqa: F401  (torch.nn.functional re-exports these)
    BroadcastingList1,
    BroadcastingList2,
    BroadcastingList3,
    boolean_dispatch,
)
from ..._tensor import Tensor  # noqa: F401
from ...ops._signature import signature
from ...ops.shape import cat
from .conv import conv1d

__all__ = ["conv_tbc", "grouped_mm", "scaled_mm", "scaled_grouped_mm", "assert_int_or_pair",
           "ScalingType", "SwizzleType", "GRID_SAMPLE_INTERPOLATION_MODES",
           "GRID_SAMPLE_PADDING_MODES", "DType", "reproducibility_notes", "sparse_support_notes",
           "tf32_notes"]

DType = int  # torch's alias for dtype arguments of TorchScript signatures
GRID_SAMPLE_INTERPOLATION_MODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}
GRID_SAMPLE_PADDING_MODES = {"zeros": 0, "border": 1, "reflection": 2}

reproducibility_notes = {
    "forward_reproducibility_note": "ember computes on the CPU with NumPy; results are "
                                    "deterministic for a given input.",
    "backward_reproducibility_note": "ember's backward passes are deterministic on the CPU.",
    "cudnn_reproducibility_note": "ember does not use cuDNN's nondeterministic algorithms.",
}
sparse_support_notes = {"sparse_beta_warning": "Sparse support is a beta feature."}
tf32_notes = {"tf32_note": "ember computes float32 in full precision (no TensorFloat-32)."}


class ScalingType(Enum):
    """The scale layouts of :func:`scaled_mm` (torch's names and values)."""

    TensorWise = 0
    RowWise = 1
    BlockWise1x16 = 2
    BlockWise1x32 = 3
    BlockWise1x128 = 4
    BlockWise128x128 = 5


class SwizzleType(Enum):
    """The scale swizzles of :func:`scaled_mm` (torch's names and values)."""

    NO_SWIZZLE = 0
    SWIZZLE_32_4_4 = 1


def assert_int_or_pair(arg, arg_name, message):
    """Raise ``AssertionError(message.format(arg_name))`` unless ``arg`` is an int or a pair.

    Example::

        >>> assert_int_or_pair((1, 2), "stride", "{} must be an int or a pair")
    """
    if not (isinstance(arg, int) or len(arg) == 2):
        raise AssertionError(message.format(arg_name))


@signature("conv_tbc(Tensor input, Tensor weight, Tensor bias, int pad=0) -> Tensor")
def conv_tbc(input, weight, bias, pad=0):
    """1-d convolution of a ``(time, batch, channels)`` sequence (torch's TBC layout).

    ``weight`` is ``(kernel_width, in_channels, out_channels)``, ``bias`` ``(out_channels,)``;
    ``pad`` zero time steps are added at both ends.

    Example::

        >>> conv_tbc(ember.randn(7, 2, 3), ember.randn(3, 3, 4), ember.zeros(4), 1).shape
        ember.Size([7, 2, 4])
    """
    if input.dim() != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if weight.dim() != 3:
        raise RuntimeError("Weight tensor must have 3 dims: kernel_width, in_channels, "
                           "out_channels.")
    if bias.dim() != 1:
        raise RuntimeError("Bias must be 1-D")
    out = conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, padding=pad)
    return out.permute(2, 0, 1)


def _group_bounds(offs):
    """``offs`` (cumulative group ends) -> a list of (start, end) pairs."""
    ends = [int(v) for v in offs.tolist()]
    return list(zip([0] + ends[:-1], ends))


def grouped_mm(mat_a, mat_b, *, offs=None, bias=None, out_dtype=None):
    """Several matrix products in one call, the groups given by ``offs`` (cumulative ends).

    2-D x 3-D: row groups of ``mat_a`` times ``mat_b[g]``; 3-D x 2-D: ``mat_a[g]`` times column
    groups of ``mat_b``; 2-D x 2-D: products over groups of the shared dimension, stacked;
    3-D x 3-D: a batched product. Rows or columns past the last offset are zero.

    Example::

        >>> a, b = ember.randn(5, 4), ember.randn(2, 4, 3)
        >>> grouped_mm(a, b, offs=ember.tensor([2, 5], dtype=ember.int32)).shape
        ember.Size([5, 3])
    """
    for name, mat in (("mat_a", mat_a), ("mat_b", mat_b)):
        if mat.dtype not in (dt.float32, dt.bfloat16, dt.float16):
            raise RuntimeError(f"Expected {name} to be Float32, BFloat16 or Float16 matrix, got "
                               f"{_dtype_name(mat.dtype)}")
    if bias is not None:
        raise RuntimeError("Bias not supported yet")
    out = _grouped_product(mat_a, mat_b, offs)
    return out.to(out_dtype) if out_dtype is not None else out


def _dtype_name(dtype):
    names = {dt.float64: "Double", dt.int64: "Long", dt.int32: "Int", dt.complex64: "ComplexFloat"}
    return names.get(dtype, str(dtype))


def _grouped_product(a, b, offs):
    if a.dim() == 3 and b.dim() == 3:
        return a.matmul(b)
    if offs is None:
        raise RuntimeError("Offsets tensor is required for 2D inputs")
    bounds = _group_bounds(offs)
    if a.dim() == 2 and b.dim() == 3:
        pieces = [a[s:e].matmul(b[g]) for g, (s, e) in enumerate(bounds)]
        pieces.append(a.new_zeros((a.shape[0] - bounds[-1][1], b.shape[-1])))
        return cat(pieces, 0)
    if a.dim() == 3 and b.dim() == 2:
        pieces = [a[g].matmul(b[:, s:e]) for g, (s, e) in enumerate(bounds)]
        pieces.append(a.new_zeros((a.shape[1], b.shape[1] - bounds[-1][1])))
        return cat(pieces, 1)
    if a.dim() == 2 and b.dim() == 2:
        return cat([a[:, s:e].matmul(b[s:e]).unsqueeze(0) for s, e in bounds], 0)
    raise RuntimeError(f"grouped_mm: mat_a must be 2-D or 3-D, got {a.dim()}-D")


def _fp8_unavailable(name):
    raise NotImplementedError(
        f"torch.nn.functional.{name} multiplies FP8/FP4 matrices with CUDA kernels that ember "
        "does not have; dequantise the operands (multiply by their scales) and use "
        "ember.matmul instead")


def scaled_mm(mat_a, mat_b, scale_a, scale_recipe_a, scale_b, scale_recipe_b, swizzle_a=None,
              swizzle_b=None, bias=None, output_dtype=dt.bfloat16, contraction_dim=(),
              use_fast_accum=False):
    """torch's FP8 scaled matrix product: raises ``NotImplementedError`` (CUDA-only in torch).

    Example::

        >>> scaled_mm(None, None, None, None, None, None)  # doctest: +SKIP
    """
    _fp8_unavailable("scaled_mm")


def scaled_grouped_mm(mat_a, mat_b, scale_a, scale_recipe_a, scale_b, scale_recipe_b,
                      swizzle_a=None, swizzle_b=None, bias=None, offs=None,
                      output_dtype=dt.bfloat16, contraction_dim=(), use_fast_accum=False):
    """torch's FP8 grouped scaled product: raises ``NotImplementedError`` (CUDA-only in torch).

    Example::

        >>> scaled_grouped_mm(None, None, None, None, None, None)  # doctest: +SKIP
    """
    _fp8_unavailable("scaled_grouped_mm")
