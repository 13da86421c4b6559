"""nn modules: activations. Each ``forward`` calls its functional form in ``nn.functional``;
constructor signatures, attributes and ``repr`` are torch's.

:class:`MultiheadAttention` lives here, where torch has it (its path is part of a pickled model).
"""

from __future__ import annotations

import warnings

from ...ops.creation import empty
from .. import init
from .._functional import activation as F
from .._functional import softmax as S
from .._functional.attention import _canonical_mask, _none_or_dtype, multi_head_attention_forward
from ..parameter import Parameter
from .linear import NonDynamicallyQuantizableLinear
from .module import Module

__all__ = ["Threshold", "ReLU", "RReLU", "Hardtanh", "ReLU6", "Sigmoid", "Hardsigmoid", "Tanh",
           "SiLU", "Mish", "Hardswish", "ELU", "CELU", "SELU", "GLU", "GELU", "Hardshrink",
           "LeakyReLU", "LogSigmoid", "Softplus", "Softshrink", "PReLU", "Softsign",
           "Tanhshrink", "Softmin", "Softmax", "Softmax2d", "LogSoftmax", "MultiheadAttention"]


def _inplace_repr(inplace, first=True):
    if not inplace:
        return ""
    return "inplace=True" if first else ", inplace=True"


class Threshold(Module):
    """``input`` where ``input > threshold``, else ``value``.

    Example::

        >>> ember.nn.Threshold(0.1, 20.)(ember.tensor([0., 1.]))
        tensor([20.,  1.])
    """

    __constants__ = ["threshold", "value", "inplace"]

    def __init__(self, threshold, value, inplace=False):
        super().__init__()
        self.threshold = threshold
        self.value = value
        self.inplace = inplace

    def forward(self, input):
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self):
        return f"threshold={self.threshold}, value={self.value}{_inplace_repr(self.inplace, 0)}"


class ReLU(Module):
    """``max(input, 0)``, elementwise.

    Example::

        >>> ember.nn.ReLU()(ember.tensor([-1., 2.]))
        tensor([0., 2.])
    """

    __constants__ = ["inplace"]

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.relu(input, inplace=self.inplace)

    def extra_repr(self):
        return _inplace_repr(self.inplace)


class RReLU(Module):
    """Randomized leaky ReLU: negative slopes from ``U(lower, upper)`` in training mode, their
    mean in evaluation mode.

    Example::

        >>> ember.nn.RReLU(0.1, 0.3).eval()(ember.tensor([-1., 2.]))
        tensor([-0.2000,  2.0000])
    """

    __constants__ = ["lower", "upper", "inplace"]

    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__()
        self.lower = lower
        self.upper = upper
        self.inplace = inplace

    def forward(self, input):
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self):
        return f"lower={self.lower}, upper={self.upper}{_inplace_repr(self.inplace, 0)}"


class Hardtanh(Module):
    """Clamp to ``[min_val, max_val]``.

    Example::

        >>> ember.nn.Hardtanh(-2., 2.)(ember.tensor([-3., 1.]))
        tensor([-2.,  1.])
    """

    __constants__ = ["min_val", "max_val", "inplace"]

    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False, min_value=None,
                 max_value=None):
        super().__init__()
        if min_value is not None:
            warnings.warn("keyword argument `min_value` is deprecated and renamed to `min_val`",
                          FutureWarning, stacklevel=2)
            min_val = min_value
        if max_value is not None:
            warnings.warn("keyword argument `max_value` is deprecated and renamed to `max_val`",
                          FutureWarning, stacklevel=2)
            max_val = max_value
        self.min_val = min_val
        self.max_val = max_val
        self.inplace = inplace
        if self.max_val <= self.min_val:
            raise AssertionError(f"max_val ({self.max_val}) must be greater than min_val "
                                 f"({self.min_val})")

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self):
        return (f"min_val={self.min_val}, max_val={self.max_val}"
                f"{_inplace_repr(self.inplace, 0)}")


class ReLU6(Hardtanh):
    """``min(max(input, 0), 6)``.

    Example::

        >>> ember.nn.ReLU6()(ember.tensor([-1., 7.]))
        tensor([0., 6.])
    """

    def __init__(self, inplace=False):
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self):
        return _inplace_repr(self.inplace)


class _Stateless(Module):
    """An activation without parameters or options (any constructor arguments are ignored)."""

    def __init__(self, *args, **kwargs):
        super().__init__()


class Sigmoid(_Stateless):
    """The logistic function.

    Example::

        >>> ember.nn.Sigmoid()(ember.tensor([0.]))
        tensor([0.5000])
    """

    def forward(self, input):
        return F.sigmoid(input)


class Tanh(_Stateless):
    """The hyperbolic tangent.

    Example::

        >>> ember.nn.Tanh()(ember.tensor([0.]))
        tensor([0.])
    """

    def forward(self, input):
        return F.tanh(input)


class _Inplace(Module):
    """An activation whose only option is ``inplace``."""

    __constants__ = ["inplace"]
    _show_inplace = False

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def extra_repr(self):
        return _inplace_repr(self.inplace) if self._show_inplace else ""


class Hardsigmoid(_Inplace):
    """``relu6(x + 3) / 6``.

    Example::

        >>> ember.nn.Hardsigmoid()(ember.tensor([0.]))
        tensor([0.5000])
    """

    def forward(self, input):
        return F.hardsigmoid(input, self.inplace)


class Hardswish(_Inplace):
    """``x * relu6(x + 3) / 6``.

    Example::

        >>> ember.nn.Hardswish()(ember.tensor([4.]))
        tensor([4.])
    """

    def forward(self, input):
        return F.hardswish(input, self.inplace)


class SiLU(_Inplace):
    """``x * sigmoid(x)``.

    Example::

        >>> ember.nn.SiLU()(ember.tensor([0.]))
        tensor([0.])
    """

    _show_inplace = True

    def forward(self, input):
        return F.silu(input, inplace=self.inplace)


class Mish(_Inplace):
    """``x * tanh(softplus(x))``.

    Example::

        >>> ember.nn.Mish()(ember.tensor([0.]))
        tensor([0.])
    """

    _show_inplace = True

    def forward(self, input):
        return F.mish(input, inplace=self.inplace)


class SELU(_Inplace):
    """Scaled ELU with torch's fixed constants.

    Example::

        >>> ember.nn.SELU()(ember.tensor([0.]))
        tensor([0.])
    """

    _show_inplace = True

    def forward(self, input):
        return F.selu(input, self.inplace)


class ELU(Module):
    """``x`` where positive, else ``alpha * (exp(x) - 1)``.

    Example::

        >>> ember.nn.ELU()(ember.tensor([2.]))
        tensor([2.])
    """

    __constants__ = ["alpha", "inplace"]

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input):
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self):
        return f"alpha={self.alpha}{_inplace_repr(self.inplace, 0)}"


class CELU(ELU):
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``.

    Example::

        >>> ember.nn.CELU()(ember.tensor([2.]))
        tensor([2.])
    """

    def forward(self, input):
        return F.celu(input, self.alpha, self.inplace)


class GLU(Module):
    """Gated linear unit along ``dim``: ``a * sigmoid(b)`` for the two halves ``a, b``.

    Example::

        >>> ember.nn.GLU()(ember.randn(4, 2)).shape
        ember.Size([4, 1])
    """

    __constants__ = ["dim"]

    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class GELU(Module):
    """Gaussian error linear unit (``approximate='tanh'`` for the tanh approximation).

    Example::

        >>> ember.nn.GELU()(ember.tensor([0.]))
        tensor([0.])
    """

    __constants__ = ["approximate"]

    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class Hardshrink(Module):
    """``x`` where ``|x| > lambd``, else 0.

    Example::

        >>> ember.nn.Hardshrink()(ember.tensor([0.2, 1.]))
        tensor([0., 1.])
    """

    __constants__ = ["lambd"]

    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return F.hardshrink(input, self.lambd)

    def extra_repr(self):
        return f"{self.lambd}"


class Softshrink(Hardshrink):
    """``x -+ lambd`` where ``|x| > lambd``, else 0.

    Example::

        >>> ember.nn.Softshrink()(ember.tensor([0.2, 1.]))
        tensor([0.0000, 0.5000])
    """

    def forward(self, input):
        return F.softshrink(input, self.lambd)


class LeakyReLU(Module):
    """``x`` where positive, else ``negative_slope * x``.

    Example::

        >>> ember.nn.LeakyReLU(0.1)(ember.tensor([-1.]))
        tensor([-0.1000])
    """

    __constants__ = ["inplace", "negative_slope"]

    def __init__(self, negative_slope=1e-2, inplace=False):
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}{_inplace_repr(self.inplace, 0)}"


class LogSigmoid(_Stateless):
    """``log(sigmoid(x))``.

    Example::

        >>> ember.nn.LogSigmoid()(ember.tensor([0.]))
        tensor([-0.6931])
    """

    def forward(self, input):
        return F.logsigmoid(input)


class Softplus(Module):
    """``log(1 + exp(beta * x)) / beta``, linear above ``threshold``.

    Example::

        >>> ember.nn.Softplus()(ember.tensor([0.]))
        tensor([0.6931])
    """

    __constants__ = ["beta", "threshold"]

    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


class PReLU(Module):
    """Leaky ReLU with learnable slopes: one (``num_parameters=1``) or one per channel (dim 1),
    initialised to ``init``.

    Example::

        >>> m = ember.nn.PReLU(3)
        >>> m(ember.randn(2, 3, 4)).shape
        ember.Size([2, 3, 4])
    """

    __constants__ = ["num_parameters"]

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        self.num_parameters = num_parameters
        super().__init__()
        self.init = init
        self.weight = Parameter(empty(num_parameters, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self):
        """Fill the slopes with ``init``."""
        init.constant_(self.weight, self.init)

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


class Softsign(_Stateless):
    """``x / (1 + |x|)``.

    Example::

        >>> ember.nn.Softsign()(ember.tensor([1.]))
        tensor([0.5000])
    """

    def forward(self, input):
        return F.softsign(input)


class Tanhshrink(_Stateless):
    """``x - tanh(x)``.

    Example::

        >>> ember.nn.Tanhshrink()(ember.tensor([0.]))
        tensor([0.])
    """

    def forward(self, input):
        return F.tanhshrink(input)


class _SoftmaxBase(Module):
    __constants__ = ["dim"]

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def __setstate__(self, state):
        super().__setstate__(state)
        if not hasattr(self, "dim"):
            self.dim = None

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmin(_SoftmaxBase):
    """``softmax(-x)`` along ``dim``.

    Example::

        >>> ember.nn.Softmin(dim=0)(ember.tensor([0., 0.]))
        tensor([0.5000, 0.5000])
    """

    def forward(self, input):
        return S.softmin(input, self.dim, _stacklevel=5)


class Softmax(_SoftmaxBase):
    """``exp(x) / sum(exp(x))`` along ``dim``.

    Example::

        >>> ember.nn.Softmax(dim=0)(ember.tensor([0., 0.]))
        tensor([0.5000, 0.5000])
    """

    def forward(self, input):
        return S.softmax(input, self.dim, _stacklevel=5)


class LogSoftmax(_SoftmaxBase):
    """``log(softmax(x))`` along ``dim``.

    Example::

        >>> ember.nn.LogSoftmax(dim=0)(ember.tensor([0., 0.]))
        tensor([-0.6931, -0.6931])
    """

    def forward(self, input):
        return S.log_softmax(input, self.dim, _stacklevel=5)


class Softmax2d(_Stateless):
    """Softmax over channels (dim -3) of a (C, H, W) or (N, C, H, W) input.

    Example::

        >>> ember.nn.Softmax2d()(ember.zeros(1, 2, 3, 3))[0, :, 0, 0]
        tensor([0.5000, 0.5000])
    """

    def forward(self, input):
        if input.dim() not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.dim()}D "
                             "instead")
        return S.softmax(input, -3, _stacklevel=5)


class MultiheadAttention(Module):
    """Multi-head attention: ``Concat(head_1..head_h) W_O`` with
    ``head_i = softmax(Q W_Q^i (K W_K^i)^T / sqrt(d)) V W_V^i``.

    Inputs are (L, N, E) (or (N, L, E) with ``batch_first``, or unbatched (L, E)); returns
    ``(attn_output, attn_weights)`` where the weights are None unless ``need_weights``.

    Example::

        >>> mha = ember.nn.MultiheadAttention(8, 2, batch_first=True)
        >>> x = ember.randn(3, 5, 8)
        >>> out, w = mha(x, x, x)
        >>> out.shape, w.shape
        (ember.Size([3, 5, 8]), ember.Size([3, 5, 5]))
    """

    __constants__ = ["batch_first"]

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False,
                 add_zero_attn=False, kdim=None, vdim=None, batch_first=False, device=None,
                 dtype=None):
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got "
                             f"embed_dim={embed_dim} and num_heads={num_heads} instead")
        factory = {"device": device, "dtype": dtype}
        super().__init__()
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != self.embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        if not self._qkv_same_embed_dim:
            self.q_proj_weight = Parameter(empty((embed_dim, embed_dim), **factory))
            self.k_proj_weight = Parameter(empty((embed_dim, self.kdim), **factory))
            self.v_proj_weight = Parameter(empty((embed_dim, self.vdim), **factory))
            self.register_parameter("in_proj_weight", None)
        else:
            self.in_proj_weight = Parameter(empty((3 * embed_dim, embed_dim), **factory))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(empty(3 * embed_dim, **factory))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias,
                                                        **factory)
        if add_bias_kv:
            self.bias_k = Parameter(empty((1, 1, embed_dim), **factory))
            self.bias_v = Parameter(empty((1, 1, embed_dim), **factory))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self):
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            init.xavier_normal_(self.bias_v)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True,
                attn_mask=None, average_attn_weights=True, is_causal=False):
        """Attend from ``query`` to ``key``/``value``; see the class docstring for shapes."""
        is_batched = query.dim() == 3
        key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask",
                                           _none_or_dtype(attn_mask), "attn_mask", query.dtype)
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype,
                                    check_other=False)
        if self.batch_first and is_batched:
            # keep the identities (query is key is value) the packed projection relies on
            if key is value:
                if query is key:
                    query = key = value = query.transpose(1, 0)
                else:
                    query, key = query.transpose(1, 0), key.transpose(1, 0)
                    value = key
            else:
                query, key, value = (x.transpose(1, 0) for x in (query, key, value))
        separate = not self._qkv_same_embed_dim
        out, weights = multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight,
            self.in_proj_bias, self.bias_k, self.bias_v, self.add_zero_attn, self.dropout,
            self.out_proj.weight, self.out_proj.bias, training=self.training,
            key_padding_mask=key_padding_mask, need_weights=need_weights, attn_mask=attn_mask,
            use_separate_proj_weight=separate,
            q_proj_weight=self.q_proj_weight if separate else None,
            k_proj_weight=self.k_proj_weight if separate else None,
            v_proj_weight=self.v_proj_weight if separate else None,
            average_attn_weights=average_attn_weights, is_causal=is_causal)
        if self.batch_first and is_batched:
            return out.transpose(1, 0), weights
        return out, weights

    def merge_masks(self, attn_mask, key_padding_mask, query):
        """Combine an (L, L) or (N * heads, L, L) ``attn_mask`` with an (N, L)
        ``key_padding_mask`` into one (N, heads, L, L) mask; returns (mask, mask_type)."""
        mask_type, merged = None, None
        if key_padding_mask is not None:
            mask_type, merged = 1, key_padding_mask
        if attn_mask is not None:
            batch_size, seq_len, _ = query.shape
            mask_type = 2
            if attn_mask.dim() == 3:
                expanded = attn_mask.view(batch_size, -1, seq_len, seq_len)
            else:
                expanded = attn_mask.view(1, 1, seq_len, seq_len).expand(
                    batch_size, self.num_heads, -1, -1)
            merged = expanded
            if key_padding_mask is not None:
                merged = expanded + key_padding_mask.view(batch_size, 1, 1, seq_len).expand(
                    -1, self.num_heads, -1, -1)
        return merged, mask_type
