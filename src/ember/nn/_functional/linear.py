"""nn.functional: linear and bilinear maps."""

from __future__ import annotations

from ...ops._precision import in_float32, is_half
from ...ops._registry import autocast_policy
from ...ops._signature import signature

__all__ = ["linear", "bilinear"]


@signature("linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor")
@autocast_policy("lower")
def linear(input, weight, bias=None):
    """``input @ weight.T + bias``.

    Example::

        >>> F.linear(ember.ones(2, 3), ember.ones(4, 3)).shape
        ember.Size([2, 4])
    """
    if is_half(weight):  # torch's CPU kernel computes it in float32 and rounds once
        return in_float32(_linear, input, weight, bias)
    return _linear(input, weight, bias)


def _linear(input, weight, bias):
    if weight.ndim != 2:
        output = input.matmul(weight)
    elif input.ndim > 2:
        # one 2-D product over all leading dims: the weight gradient is then one GEMM too,
        # not a stack of per-batch products summed afterwards
        lead = input.shape[:-1]
        output = input.reshape(-1, input.shape[-1]).matmul(weight.t())
        output = output.reshape(*lead, output.shape[-1])
    else:
        output = input.matmul(weight.t())
    if bias is not None:
        output = output + bias
    return output


@signature("bilinear(Tensor input1, Tensor input2, Tensor weight, Tensor? bias=None) -> Tensor")
def bilinear(input1, input2, weight, bias=None):
    """``y[..., o] = sum_ij input1[..., i] * weight[o, i, j] * input2[..., j] + bias[o]``.

    Computed as one matrix product (``input1 @ weight`` viewed as (in1, out*in2)) and a
    reduction over ``in2``.

    Example::

        >>> F.bilinear(ember.ones(2, 3), ember.ones(2, 4), ember.ones(5, 3, 4)).shape
        ember.Size([2, 5])
    """
    # torch compares the dtypes before any shape
    if not (input1.dtype == input2.dtype == weight.dtype):
        raise RuntimeError(f"All tensors must have the same dtype, got input1: "
                           f"{_short(input1.dtype)}, input2: {_short(input2.dtype)}, weight: "
                           f"{_short(weight.dtype)}")
    if input1.ndim != input2.ndim:
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.ndim} and "
                           f"{input2.ndim}")
    for d in range(input1.ndim - 1):
        if input1.shape[d] != input2.shape[d]:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {d}: "
                               f"got {input1.shape[d]} and {input2.shape[d]}")
    if weight.ndim != 3:
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[-{weight.ndim}, {weight.ndim - 1}], but got 2)")
    out_features, in1, in2 = weight.shape
    if input1.shape[-1] != in1:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got "
                           f"{input1.shape[-1]} but expected {in1}")
    if input2.shape[-1] != in2:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got "
                           f"{input2.shape[-1]} but expected {in2}")
    if bias is not None and (bias.ndim != 1 or bias.shape[0] != out_features):
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got "
                           f"{bias.shape[-1] if bias.ndim else 1} but expected {out_features}")
    batch = input1.shape[:-1]
    x1 = input1.reshape(-1, in1)
    x2 = input2.reshape(-1, in2)
    # (n, in1) @ (in1, out*in2) -> (n, out, in2), then contract with input2 over in2.
    t = x1.matmul(weight.permute(1, 0, 2).reshape(in1, out_features * in2))
    output = t.reshape(-1, out_features, in2).matmul(x2.unsqueeze(-1)).squeeze(-1)
    if bias is not None:
        output = output + bias
    return output.reshape(*batch, out_features)


_SHORT = {"float64": "double", "float32": "float", "float16": "half", "int64": "long",
          "int32": "int", "int16": "short", "int8": "char", "uint8": "unsigned char",
          "complex64": "complex float", "complex128": "complex double"}


def _short(dtype):
    return _SHORT.get(dtype.name, dtype.name)
