"""torch's top-level forms of nn operators (``ember.selu``, ``ember.dropout``,
``ember.batch_norm``, ``ember.max_pool2d``, ``ember.kl_div``, ``ember.ctc_loss``,
``ember.embedding_bag``, ``ember.lstm_cell``, ``ember.grid_sampler``, ...), with the signatures
of torch's native operators, and ``Tensor.prelu``.

Example::

    >>> ember.dropout(ember.ones(2), 0.5, False)
    tensor([1., 1.])
"""

from __future__ import annotations

from ... import _dtype as dt
from ..._tensor import Tensor
from ..._tensor_functions import require_tensor as _require_tensor
from ...ops._methods import tensor_method
from ...ops._signature import signature

__all__ = []


# ---------------------------------------------------------------- top-level forms of nn ops
#
# torch lists many nn.functional operators at the top level with the signatures of its native
# operators, which differ from the functional ones: ``reduction`` is an int (0: none,
# 1: mean, 2: sum), ``dropout(input, p, train)`` has no defaults, ``batch_norm`` takes the
# weight before the running statistics, ``embedding`` the weight before the indices.

def _reduction_name(reduction):
    """torch's ``at::Reduction`` code as nn.functional's name (codes other than 1 and 2 reduce
    nothing, as in torch).

    The loss functions below default to 0 (no reduction), as torch's Python bindings of them
    do, although its schemas say ``reduction=Mean``: ``torch.kl_div(x, y)`` is element-wise."""
    return {1: "mean", 2: "sum"}.get(reduction, "none")


def _F():
    from .. import functional

    return functional


def _same_signature(name):
    """A top-level alias of ``nn.functional.<name>`` where both take the same arguments."""
    def alias(*args, **kwargs):
        return getattr(_F(), name)(*args, **kwargs)
    alias.__name__ = alias.__qualname__ = name
    alias.__doc__ = f"""``ember.nn.functional.{name}``, as torch lists it at the top level
    (same arguments).

    Example (the pattern, shown with ``pixel_shuffle``)::

        >>> ember.pixel_shuffle(ember.zeros(1, 4, 2, 2), 2).shape
        ember.Size([1, 1, 4, 4])
    """
    return alias


_SAME_SIGNATURE = ("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                   "conv_transpose3d", "layer_norm", "group_norm", "adaptive_avg_pool1d",
                   "pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "cosine_similarity",
                   "pairwise_distance", "pdist", "prelu", "hardshrink", "bilinear", "rms_norm")
for _name in _SAME_SIGNATURE:
    globals()[_name] = _same_signature(_name)
native_channel_shuffle = _same_signature("channel_shuffle")
native_channel_shuffle.__name__ = native_channel_shuffle.__qualname__ = "native_channel_shuffle"
__all__ += [*_SAME_SIGNATURE, "native_channel_shuffle"]
del _name


def selu(input):
    """SELU, element-wise (``nn.functional.selu``).

    Example::

        >>> ember.selu(ember.tensor([0.]))
        tensor([0.])
    """
    return _F().selu(input)


def selu_(input):
    """SELU in place.

    Example::

        >>> ember.selu_(ember.tensor([0.]))
        tensor([0.])
    """
    return _F().selu_(input)


def celu(input, alpha=1.0):
    """CELU, element-wise (``nn.functional.celu``).

    Example::

        >>> ember.celu(ember.tensor([1.]))
        tensor([1.])
    """
    return _F().celu(input, alpha)


def celu_(input, alpha=1.0):
    """CELU in place.

    Example::

        >>> ember.celu_(ember.tensor([1.]))
        tensor([1.])
    """
    return _F().celu_(input, alpha)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    """Randomized leaky ReLU (``nn.functional.rrelu``); outside training the slope is
    ``(lower + upper) / 2``.

    Example::

        >>> ember.rrelu(ember.tensor([-3.]), 0.25, 0.75)
        tensor([-1.5000])
    """
    return _F().rrelu(input, lower, upper, training)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    """Randomized leaky ReLU in place.

    Example::

        >>> ember.rrelu_(ember.tensor([-3.]), 0.25, 0.75)
        tensor([-1.5000])
    """
    return _F().rrelu_(input, lower, upper, training)


def threshold(input, threshold, value):
    """``value`` where ``input <= threshold``, else ``input``.

    Example::

        >>> ember.threshold(ember.tensor([0.5, 2.]), 1., -1.)
        tensor([-1.,  2.])
    """
    return _F().threshold(input, threshold, value)


def threshold_(input, threshold, value):
    """:func:`threshold` in place.

    Example::

        >>> ember.threshold_(ember.tensor([0.5, 2.]), 1., -1.)
        tensor([-1.,  2.])
    """
    return _F().threshold_(input, threshold, value)


def _check_dropout(input, p, train, name):
    _require_tensor(input, name)
    if not 0 <= p <= 1:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")


def dropout(input, p, train):
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)`` when
    ``train`` (torch's top-level form: all three arguments required).

    Example::

        >>> ember.dropout(ember.ones(3), 0.5, False)
        tensor([1., 1., 1.])
    """
    _check_dropout(input, p, train, "dropout")
    return _F().dropout(input, p, train)


def dropout_(input, p, train):
    """:func:`dropout` in place.

    Example::

        >>> ember.dropout_(ember.ones(3), 0.5, False)
        tensor([1., 1., 1.])
    """
    _check_dropout(input, p, train, "dropout_")
    return _F().dropout(input, p, train, inplace=True)


def alpha_dropout(input, p, train):
    """Alpha dropout (keeps SELU's mean and variance) when ``train``.

    Example::

        >>> ember.alpha_dropout(ember.ones(3), 0.5, False)
        tensor([1., 1., 1.])
    """
    _check_dropout(input, p, train, "alpha_dropout")
    return _F().alpha_dropout(input, p, train)


def alpha_dropout_(input, p, train):
    """:func:`alpha_dropout` in place.

    Example::

        >>> ember.alpha_dropout_(ember.ones(3), 0.5, False)
        tensor([1., 1., 1.])
    """
    _check_dropout(input, p, train, "alpha_dropout_")
    return _F().alpha_dropout(input, p, train, inplace=True)


def _feature_mask_shape(input):
    if input.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    return (*input.shape[:2], *([1] * (input.ndim - 2)))


def feature_dropout(input, p, train):
    """Dropout of whole feature maps: each ``input[n, c]`` is zeroed with probability ``p``
    (the rest scaled by ``1 / (1 - p)``) when ``train``.

    Example::

        >>> ember.feature_dropout(ember.ones(1, 2, 2), 0.5, False)
        tensor([[[1., 1.],
                 [1., 1.]]])
    """
    _check_dropout(input, p, train, "feature_dropout")
    if not train or p == 0:
        return input.clone() if train else input
    keep = input.new_empty(_feature_mask_shape(input)).bernoulli_(1 - p)
    return input * keep / (1 - p) if p < 1 else input * keep


def feature_dropout_(input, p, train):
    """:func:`feature_dropout` in place.

    Example::

        >>> ember.feature_dropout_(ember.ones(1, 2), 0.5, False)
        tensor([[1., 1.]])
    """
    _check_dropout(input, p, train, "feature_dropout_")
    if not train or p == 0:
        return input
    return input.copy_(feature_dropout(input, p, train))


def feature_alpha_dropout(input, p, train):
    """Alpha dropout of whole feature maps (``nn.functional.feature_alpha_dropout``).

    Example::

        >>> ember.feature_alpha_dropout(ember.ones(1, 2), 0.5, False)
        tensor([[1., 1.]])
    """
    _check_dropout(input, p, train, "feature_alpha_dropout")
    return _F().feature_alpha_dropout(input, p, train)


def feature_alpha_dropout_(input, p, train):
    """:func:`feature_alpha_dropout` in place.

    Example::

        >>> ember.feature_alpha_dropout_(ember.ones(1, 2), 0.5, False)
        tensor([[1., 1.]])
    """
    _check_dropout(input, p, train, "feature_alpha_dropout_")
    return _F().feature_alpha_dropout(input, p, train, inplace=True)


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
               cudnn_enabled):
    """Batch normalisation with torch's top-level argument order (weight and bias before the
    running statistics; all arguments required).

    Example::

        >>> ember.batch_norm(ember.tensor([[1.], [3.]]), None, None, None, None, True, 0.1,
        ...                  0., True)
        tensor([[-1.],
                [ 1.]])
    """
    return _F().batch_norm(input, running_mean, running_var, weight, bias, training, momentum,
                           eps)


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum,
                  eps, cudnn_enabled):
    """Instance normalisation with torch's top-level argument order (all required).

    Example::

        >>> ember.instance_norm(ember.tensor([[[1., 3.]]]), None, None, None, None, True, 0.1,
        ...                     0., True)
        tensor([[[-1.,  1.]]])
    """
    return _F().instance_norm(input, running_mean, running_var, weight, bias, use_input_stats,
                              momentum, eps)


@signature("embedding(Tensor weight, Tensor indices, SymInt padding_idx=-1, "
           "bool scale_grad_by_freq=False, bool sparse=False) -> Tensor")
def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """Rows of ``weight`` picked by ``indices`` (torch's top-level order: weight first;
    ``padding_idx=-1`` means none).

    Example::

        >>> ember.embedding(ember.eye(3), ember.tensor([2, 0]))
        tensor([[0., 0., 1.],
                [1., 0., 0.]])
    """
    pad = None if padding_idx == -1 else padding_idx
    return _F().embedding(indices, weight, pad, scale_grad_by_freq=scale_grad_by_freq,
                          sparse=sparse)


def embedding_renorm_(input, indices, max_norm, norm_type):
    """Rescale, in place and without recording, the rows of ``input`` named in ``indices``
    whose ``norm_type``-norm exceeds ``max_norm`` to norm ``max_norm`` (as ``embedding``'s
    ``max_norm`` does).

    Example::

        >>> w = ember.tensor([[3., 4.], [0.3, 0.4]])
        >>> ember.embedding_renorm_(w, ember.tensor([0, 1]), 1.0, 2.0)
        tensor([[0.6000, 0.8000],
                [0.3000, 0.4000]])
    """
    from ...autograd.grad_mode import no_grad

    _require_tensor(input, "embedding_renorm_")
    with no_grad():
        rows = indices.reshape(-1).unique()
        picked = input.index_select(0, rows)
        norms = picked.norm(p=norm_type, dim=1, keepdim=True)
        scale = (max_norm / (norms + 1e-7)).clamp(max=1.0).to(input.dtype)
        input.index_copy_(0, rows, picked * scale)
    return input


def _default_stride(stride, kernel_size):
    """torch's native pools take ``stride=[]`` (the default) to mean the kernel size."""
    if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0):
        return None
    return stride


@signature("max_pool1d(Tensor input, int[1] kernel_size, int[1] stride=[], int[1] padding=0, "
           "int[1] dilation=1, bool ceil_mode=False) -> Tensor")
def max_pool1d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """1-D max pooling (torch's top-level form: no ``return_indices``).

    Example::

        >>> ember.max_pool1d(ember.tensor([[1., 3., 2., 0.]]), 2)
        tensor([[3., 2.]])
    """
    return _F().max_pool1d(input, kernel_size, _default_stride(stride, kernel_size), padding,
                           dilation, ceil_mode)


@signature("max_pool2d(Tensor input, int[2] kernel_size, int[2] stride=[], int[2] padding=0, "
           "int[2] dilation=1, bool ceil_mode=False) -> Tensor")
def max_pool2d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """2-D max pooling (torch's top-level form: no ``return_indices``).

    Example::

        >>> ember.max_pool2d(ember.arange(4.).reshape(1, 2, 2), 2)
        tensor([[[3.]]])
    """
    return _F().max_pool2d(input, kernel_size, _default_stride(stride, kernel_size), padding,
                           dilation, ceil_mode)


@signature("max_pool3d(Tensor input, int[3] kernel_size, int[3] stride=[], int[3] padding=0, "
           "int[3] dilation=1, bool ceil_mode=False) -> Tensor")
def max_pool3d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """3-D max pooling (torch's top-level form: no ``return_indices``).

    Example::

        >>> ember.max_pool3d(ember.arange(8.).reshape(1, 2, 2, 2), 2)
        tensor([[[[7.]]]])
    """
    return _F().max_pool3d(input, kernel_size, _default_stride(stride, kernel_size), padding,
                           dilation, ceil_mode)


@signature("max_pool1d_with_indices(Tensor input, int[1] kernel_size, int[1] stride=[], "
           "int[1] padding=0, int[1] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)")
def max_pool1d_with_indices(input, kernel_size, stride=(), padding=0, dilation=1,
                            ceil_mode=False):
    """1-D max pooling returning ``(values, indices)``.

    Example::

        >>> ember.max_pool1d_with_indices(ember.tensor([[1., 3., 2., 0.]]), 2)[1]
        tensor([[1, 2]])
    """
    return _F().max_pool1d(input, kernel_size, _default_stride(stride, kernel_size), padding,
                           dilation, ceil_mode, return_indices=True)


@signature("avg_pool1d(Tensor input, int[1] kernel_size, int[1] stride=[], int[1] padding=0, "
           "bool ceil_mode=False, bool count_include_pad=True) -> Tensor")
def avg_pool1d(input, kernel_size, stride=(), padding=0, ceil_mode=False,
               count_include_pad=True):
    """1-D average pooling.

    Example::

        >>> ember.avg_pool1d(ember.tensor([[1., 3., 2., 0.]]), 2)
        tensor([[2., 1.]])
    """
    return _F().avg_pool1d(input, kernel_size, _default_stride(stride, kernel_size), padding,
                           ceil_mode, count_include_pad)


def adaptive_max_pool1d(input, output_size):
    """1-D adaptive max pooling returning ``(values, indices)`` (torch's top-level form).

    Example::

        >>> ember.adaptive_max_pool1d(ember.tensor([[1., 3., 2., 0.]]), 2)[0]
        tensor([[3., 2.]])
    """
    return _F().adaptive_max_pool1d(input, output_size, return_indices=True)


@signature("constant_pad_nd(Tensor input, SymInt[] pad, Scalar value=0) -> Tensor")
def constant_pad_nd(input, pad, value=0):
    """Pad the last dims of ``input`` with ``value`` (``pad`` as ``nn.functional.pad``'s;
    negative amounts crop).

    Example::

        >>> ember.constant_pad_nd(ember.tensor([1., 2.]), (1, 0), 9.)
        tensor([9., 1., 2.])
    """
    return _F().pad(input, pad, "constant", value)


@signature("convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, "
           "SymInt[] padding, SymInt[] dilation, bool transposed, SymInt[] output_padding, "
           "SymInt groups) -> Tensor")
def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
                groups):
    """The general convolution behind ``conv1d``/``2d``/``3d`` and their transposes, chosen by
    the weight's rank and ``transposed``.

    Example::

        >>> ember.convolution(ember.ones(1, 1, 3), ember.ones(1, 1, 2), None, [1], [0], [1],
        ...                   False, [0], 1)
        tensor([[[2., 2.]]])
    """
    F = _F()
    spatial = weight.ndim - 2
    if spatial not in (1, 2, 3):
        raise RuntimeError(f"convolution: expected a 3-D, 4-D or 5-D weight, but got "
                           f"{weight.ndim}-D")
    if transposed:
        fn = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[spatial - 1]
        return fn(input, weight, bias, stride, padding, output_padding, groups, dilation)
    fn = (F.conv1d, F.conv2d, F.conv3d)[spatial - 1]
    return fn(input, weight, bias, stride, padding, dilation, groups)


def _reduced(loss, reduction):
    """Apply an int ``reduction`` to an element-wise loss."""
    name = _reduction_name(reduction)
    if name == "mean":
        return loss.mean()
    if name == "sum":
        return loss.sum()
    return loss


@signature("kl_div(Tensor input, Tensor target, int reduction=0, bool log_target=False) -> Tensor")
def kl_div(input, target, reduction=0, log_target=False):
    """The Kullback-Leibler divergence loss (``input`` holds log-probabilities); ``reduction``
    0 (the default) keeps every element, 1 averages, 2 sums.

    Example::

        >>> p = ember.tensor([0.5, 0.5])
        >>> ember.kl_div(p.log(), p)
        tensor([0., 0.])
    """
    return _reduced(_F().kl_div(input, target, reduction="none", log_target=log_target),
                    reduction)


@signature("binary_cross_entropy_with_logits(Tensor input, Tensor target, Tensor? weight=None, "
           "Tensor? pos_weight=None, int reduction=0) -> Tensor")
def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction=0):
    """Binary cross-entropy on logits (``reduction``: 0 none, the default; 1 mean; 2 sum).

    Example::

        >>> ember.binary_cross_entropy_with_logits(ember.tensor([0.]), ember.tensor([1.]))
        tensor([0.6931])
    """
    input = _broadcast_into(input, target)  # (torch's result takes the target's shape)
    return _F().binary_cross_entropy_with_logits(input, target, weight,
                                                 reduction=_reduction_name(reduction),
                                                 pos_weight=pos_weight)


def _broadcast_into(other, input):
    """``other`` expanded to ``input``'s shape, as torch's elementwise kernels broadcast an
    operand into the output (its RuntimeErrors where they cannot; ``nn.functional``'s losses
    instead require equal shapes, with ValueErrors)."""
    if tuple(other.shape) == tuple(input.shape):
        return other
    from ...ops._operands import broadcast_shapes

    shape = broadcast_shapes(tuple(input.shape), tuple(other.shape))
    if tuple(shape) != tuple(input.shape):
        raise RuntimeError(f"output with shape {list(input.shape)} doesn't match the broadcast "
                           f"shape {list(shape)}")
    return other.expand(shape)


@signature("cosine_embedding_loss(Tensor input1, Tensor input2, Tensor target, "
           "float margin=0.0, int reduction=0) -> Tensor")
def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=0):
    """``nn.functional.cosine_embedding_loss`` with an int ``reduction`` (default 0: none).

    Example::

        >>> ember.cosine_embedding_loss(ember.ones(1, 2), ember.ones(1, 2), ember.tensor([1]))
        tensor([0.])
    """
    return _F().cosine_embedding_loss(input1, input2, target, margin,
                                      reduction=_reduction_name(reduction))


@signature("hinge_embedding_loss(Tensor input, Tensor target, float margin=1.0, "
           "int reduction=0) -> Tensor")
def hinge_embedding_loss(input, target, margin=1.0, reduction=0):
    """``nn.functional.hinge_embedding_loss`` with an int ``reduction`` (default 0: none).

    Example::

        >>> ember.hinge_embedding_loss(ember.tensor([0.5]), ember.tensor([-1.]))
        tensor([0.5000])
    """
    return _F().hinge_embedding_loss(input, target, margin,
                                     reduction=_reduction_name(reduction))


@signature("margin_ranking_loss(Tensor input1, Tensor input2, Tensor target, float margin=0.0, "
           "int reduction=0) -> Tensor")
def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=0):
    """``nn.functional.margin_ranking_loss`` with an int ``reduction`` (default 0: none).

    Example::

        >>> ember.margin_ranking_loss(ember.tensor([1.]), ember.tensor([2.]), ember.tensor([1.]))
        tensor([1.])
    """
    return _F().margin_ranking_loss(input1, input2, target, margin,
                                    reduction=_reduction_name(reduction))


@signature("poisson_nll_loss(Tensor input, Tensor target, bool log_input, bool full, float eps, "
           "int reduction) -> Tensor")
def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    """``nn.functional.poisson_nll_loss`` with torch's top-level arguments (all required;
    ``reduction`` an int).

    Example::

        >>> ember.poisson_nll_loss(ember.tensor([0.]), ember.tensor([1.]), True, False, 1e-8, 1)
        tensor(1.)
    """
    return _F().poisson_nll_loss(input, target, log_input, full, eps=eps,
                                 reduction=_reduction_name(reduction))


@signature("triplet_margin_loss(Tensor anchor, Tensor positive, Tensor negative, "
           "float margin=1.0, float p=2, float eps=1e-06, bool swap=False, "
           "int reduction=1) -> Tensor")
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-06, swap=False,
                        reduction=0):
    """``nn.functional.triplet_margin_loss`` with an int ``reduction`` (default 0: none).

    Example::

        >>> a = ember.zeros(1, 2)
        >>> ember.triplet_margin_loss(a, a, a)
        tensor([1.])
    """
    return _F().triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                    reduction=_reduction_name(reduction))


@signature("ctc_loss(Tensor log_probs, Tensor targets, PyObject input_lengths, "
           "PyObject target_lengths, int blank=0, int reduction=1, "
           "bool zero_infinity=False) -> Tensor", overloaded=True)
def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=1,
             zero_infinity=False):
    """``nn.functional.ctc_loss`` with an int ``reduction``.

    Example::

        >>> lp = ember.zeros(1, 1, 2).log_softmax(2)
        >>> ember.ctc_loss(lp, ember.tensor([[1]]), [1], [1])
        tensor(0.6931)
    """
    return _F().ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                         reduction=_reduction_name(reduction), zero_infinity=zero_infinity)


__all__ += ["selu", "selu_", "celu", "celu_", "rrelu", "rrelu_", "threshold", "threshold_",
            "dropout", "dropout_", "alpha_dropout", "alpha_dropout_", "feature_dropout",
            "feature_dropout_", "feature_alpha_dropout", "feature_alpha_dropout_",
            "batch_norm", "instance_norm", "embedding", "embedding_renorm_", "max_pool1d",
            "max_pool2d", "max_pool3d", "max_pool1d_with_indices", "avg_pool1d",
            "adaptive_max_pool1d", "constant_pad_nd", "convolution", "kl_div",
            "binary_cross_entropy_with_logits", "cosine_embedding_loss", "hinge_embedding_loss",
            "margin_ranking_loss", "poisson_nll_loss", "triplet_margin_loss", "ctc_loss"]


@tensor_method("prelu")
def _prelu_method(self, weight):
    """:func:`ember.prelu` of this tensor.

    Example::

        >>> ember.tensor([-2., 2.]).prelu(ember.tensor([0.25]))
        tensor([-0.5000,  2.0000])
    """
    return _F().prelu(self, weight)


def _affine(x, weight, bias):
    from .. import functional as F

    return F.linear(x, weight, bias)


def _check_cell(input, hx, w_ih, w_hh, gates, order):
    """torch's checks of one recurrent cell's shapes, in the ``order`` its cell makes them:
    ``"weights"`` (each has ``gates`` blocks of ``hidden_size`` rows, ``w_hh``'s columns),
    ``"input"`` (its size is ``w_ih``'s columns), ``"batch"`` (the state's batch is the
    input's), ``"hidden"`` (the state's size is ``hidden_size``).

    Example::

        >>> _check_cell(ember.ones(1, 3), ember.ones(1, 2), ember.zeros(6, 3),
        ...             ember.zeros(5, 2), 3, ("weights",))
        Traceback (most recent call last):
        RuntimeError: weight_hh first dim must be 3 * hidden_size = 6, but got 5
    """
    hidden_size, batched = w_hh.size(1), input.ndim == 2 and hx.ndim == 2
    for check in order:
        if check == "weights":
            for name, weight in (("weight_ih", w_ih), ("weight_hh", w_hh)):
                if weight.size(0) != gates * hidden_size:
                    raise RuntimeError(f"{name} first dim must be {gates} * hidden_size = "
                                       f"{gates * hidden_size}, but got {weight.size(0)}")
        elif check == "input" and input.ndim == 2 and input.size(1) != w_ih.size(1):
            raise RuntimeError(f"input has inconsistent input_size: got {input.size(1)} "
                               f"expected {w_ih.size(1)}")
        elif check == "batch" and batched and input.size(0) != hx.size(0):
            raise RuntimeError(f"Input batch size {input.size(0)} doesn't match hidden0 batch "
                               f"size {hx.size(0)}")
        elif check == "hidden" and batched and hx.size(1) != hidden_size:
            raise RuntimeError(f"hidden0 has inconsistent hidden_size: got {hx.size(1)}, "
                               f"expected {hidden_size}")


@signature("rnn_tanh_cell(Tensor input, Tensor hx, Tensor w_ih, Tensor w_hh, Tensor? b_ih=None, "
           "Tensor? b_hh=None) -> Tensor")
def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One step of an Elman RNN: ``tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)``.

    Example::

        >>> w = ember.zeros(2, 3); ember.rnn_tanh_cell(ember.ones(1, 3), ember.zeros(1, 2), w,
        ...                                            ember.zeros(2, 2))
        tensor([[0., 0.]])
    """
    _check_cell(input, hx, w_ih, w_hh, 1, ("weights", "input", "batch"))
    return (_affine(input, w_ih, b_ih) + _affine(hx, w_hh, b_hh)).tanh()


@signature("rnn_relu_cell(Tensor input, Tensor hx, Tensor w_ih, Tensor w_hh, Tensor? b_ih=None, "
           "Tensor? b_hh=None) -> Tensor")
def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One step of an Elman RNN with ReLU: ``relu(x W_ih^T + b_ih + h W_hh^T + b_hh)``.

    Example::

        >>> w = ember.zeros(2, 3); ember.rnn_relu_cell(ember.ones(1, 3), ember.ones(1, 2), w,
        ...                                            ember.eye(2))
        tensor([[1., 1.]])
    """
    _check_cell(input, hx, w_ih, w_hh, 1, ("weights", "input", "batch"))
    return (_affine(input, w_ih, b_ih) + _affine(hx, w_hh, b_hh)).relu()


@signature("lstm_cell(Tensor input, Tensor[] hx, Tensor w_ih, Tensor w_hh, Tensor? b_ih=None, "
           "Tensor? b_hh=None) -> (Tensor, Tensor)")
def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One LSTM step; ``hx`` is ``(h, c)``; returns ``(h', c')``. Gates in torch's order:
    input, forget, cell, output.

    Example::

        >>> z = ember.zeros(1, 2); h, c = ember.lstm_cell(ember.ones(1, 3), (z, z),
        ...     ember.zeros(8, 3), ember.zeros(8, 2)); c
        tensor([[0., 0.]])
    """
    h, c = hx
    _check_cell(input, h, w_ih, w_hh, 4, ("input", "weights", "batch"))
    gates = _affine(input, w_ih, b_ih) + _affine(h, w_hh, b_hh)
    in_gate, forget_gate, cell_gate, out_gate = gates.chunk(4, -1)
    c_next = forget_gate.sigmoid() * c + in_gate.sigmoid() * cell_gate.tanh()
    h_next = out_gate.sigmoid() * c_next.tanh()
    return h_next, c_next


@signature("gru_cell(Tensor input, Tensor hx, Tensor w_ih, Tensor w_hh, Tensor? b_ih=None, "
           "Tensor? b_hh=None) -> Tensor")
def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One GRU step; gates in torch's order: reset, update, new.

    Example::

        >>> ember.gru_cell(ember.ones(1, 3), ember.ones(1, 2), ember.zeros(6, 3),
        ...                ember.zeros(6, 2))
        tensor([[0.5000, 0.5000]])
    """
    _check_cell(input, hx, w_ih, w_hh, 3, ("input", "batch", "hidden", "weights"))
    x_reset, x_update, x_new = _affine(input, w_ih, b_ih).chunk(3, -1)
    h_reset, h_update, h_new = _affine(hx, w_hh, b_hh).chunk(3, -1)
    reset = (x_reset + h_reset).sigmoid()
    update = (x_update + h_update).sigmoid()
    new = (x_new + reset * h_new).tanh()
    return new + update * (hx - new)


_GRID_MODES = {0: "bilinear", 1: "nearest", 2: "bicubic"}
_GRID_PADDINGS = {0: "zeros", 1: "border", 2: "reflection"}


@signature("grid_sampler(Tensor input, Tensor grid, int interpolation_mode, int padding_mode, "
           "bool align_corners) -> Tensor")
def grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
    """:func:`ember.nn.functional.grid_sample` with torch's integer codes: interpolation 0
    bilinear, 1 nearest, 2 bicubic; padding 0 zeros, 1 border, 2 reflection.

    Example::

        >>> x = ember.arange(4.).view(1, 1, 2, 2)
        >>> ember.grid_sampler(x, ember.zeros(1, 1, 1, 2), 0, 0, False)
        tensor([[[[1.5000]]]])
    """
    from .. import functional as F

    if interpolation_mode not in _GRID_MODES:
        raise RuntimeError(f"grid_sampler(): unknown interpolation mode {interpolation_mode}")
    if padding_mode not in _GRID_PADDINGS:
        raise RuntimeError(f"grid_sampler(): unknown padding mode {padding_mode}")
    return F.grid_sample(input, grid, _GRID_MODES[interpolation_mode],
                         _GRID_PADDINGS[padding_mode], align_corners)


@signature("grid_sampler_2d(Tensor input, Tensor grid, int interpolation_mode, "
           "int padding_mode, bool align_corners) -> Tensor")
def grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners):
    """:func:`grid_sampler` for 4-D inputs.

    Example::

        >>> x = ember.arange(4.).view(1, 1, 2, 2)
        >>> ember.grid_sampler_2d(x, ember.zeros(1, 1, 1, 2), 1, 0, True)
        tensor([[[[0.]]]])
    """
    if input.dim() != 4:
        raise RuntimeError(f"grid_sampler_2d(): expected 4D input, but got input with sizes "
                           f"{list(input.shape)}")
    return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


_BAG_MODES = {0: "sum", 1: "mean", 2: "max"}


def _check_bag_arguments(indices, offsets):
    """torch's kernel checks: integer indices and offsets, 1-D offsets (RuntimeErrors, where
    ``nn.functional.embedding_bag`` raises ValueErrors of its own)."""
    for position, (arg, t) in enumerate((("indices", indices), ("offsets", offsets)), 1):
        if t.dtype not in (dt.int64, dt.int32):
            raise RuntimeError(f"Expected tensor for argument #{position} '{arg}' to have one of "
                               f"the following scalar types: Long, Int; but got {t.type()} "
                               f"instead (while checking arguments for embedding_bag)")
    if offsets.ndim != 1:
        raise RuntimeError("offsets has to be a 1D Tensor")


@signature("embedding_bag(Tensor weight, Tensor indices, Tensor offsets, "
           "bool scale_grad_by_freq=False, int mode=0, bool sparse=False, "
           "Tensor? per_sample_weights=None, bool include_last_offset=False, "
           "int? padding_idx=None) -> (Tensor, Tensor, Tensor, Tensor)", overloaded=True)
def embedding_bag(weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False,
                  per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """torch's top-level ``embedding_bag``: :func:`ember.nn.functional.embedding_bag` with the
    weight first and ``mode`` as a code (0 sum, 1 mean, 2 max), returning ``(output,
    offset2bag, bag_size, max_indices)`` filled as torch's CPU kernel fills them.

    Example::

        >>> w = ember.arange(6.).reshape(3, 2)
        >>> ember.embedding_bag(w, ember.tensor([0, 1, 2]), ember.tensor([0, 1]), mode=1)[2]
        tensor([1, 2])
    """
    from .. import functional as F
    from .embedding import _embedding_bag_bookkeeping

    if not isinstance(offsets, Tensor):
        raise TypeError(f"embedding_bag(): argument 'offsets' (position 3) must be Tensor, not "
                        f"{type(offsets).__name__}")
    if not isinstance(mode, int) or isinstance(mode, bool):
        raise TypeError(f"embedding_bag(): argument 'mode' (position 5) must be int, not "
                        f"{type(mode).__name__}")
    if mode not in _BAG_MODES:
        raise RuntimeError("`mode` must be sum, mean, or max.")
    _check_bag_arguments(indices, offsets)
    num_weights = weight.shape[0]
    if padding_idx is None:
        padding_idx = -1
    elif -num_weights <= padding_idx < num_weights:
        padding_idx %= num_weights
    else:
        raise RuntimeError(f"padding_idx must be within the number of embeddings, "
                           f"-{num_weights} through {num_weights - 1}, but got {padding_idx}")
    flat = indices.reshape(-1)  # torch's kernel reads the indices flat, whatever their shape
    if per_sample_weights is not None:
        per_sample_weights = per_sample_weights.reshape(-1)
    name = _BAG_MODES[mode]
    output = F.embedding_bag(flat, weight, offsets, scale_grad_by_freq=scale_grad_by_freq,
                             mode=name, sparse=sparse, per_sample_weights=per_sample_weights,
                             include_last_offset=include_last_offset,
                             padding_idx=None if padding_idx < 0 else padding_idx)
    extras = _embedding_bag_bookkeeping(flat, weight, offsets, name, padding_idx,
                                        include_last_offset)
    return (output,) + extras


__all__ += ["rnn_tanh_cell", "rnn_relu_cell", "lstm_cell", "gru_cell", "grid_sampler",
            "grid_sampler_2d", "embedding_bag"]
