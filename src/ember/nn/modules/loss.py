"""Loss modules: each holds its options (and ``weight`` / ``pos_weight`` buffers) and calls its
functional form in :mod:`ember.nn.functional`."""

from __future__ import annotations

import math
import warnings

from .._functional import loss as F
from .._functional.linear_cross_entropy import linear_cross_entropy
from .distance import PairwiseDistance
from .linear import Linear
from .module import Module

__all__ = ["L1Loss", "NLLLoss", "NLLLoss2d", "PoissonNLLLoss", "GaussianNLLLoss", "KLDivLoss",
           "MSELoss", "BCELoss", "BCEWithLogitsLoss", "HingeEmbeddingLoss",
           "MultiLabelMarginLoss", "SmoothL1Loss", "HuberLoss", "SoftMarginLoss",
           "CrossEntropyLoss", "MultiLabelSoftMarginLoss", "CosineEmbeddingLoss",
           "MarginRankingLoss", "MultiMarginLoss", "TripletMarginLoss",
           "TripletMarginWithDistanceLoss", "CTCLoss", "LinearCrossEntropyLoss"]


class _Loss(Module):
    """Base of the losses: ``reduction`` from the argument or the deprecated flags."""

    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        super().__init__()
        if size_average is not None or reduce is not None:
            self.reduction = F._legacy_reduction(size_average, reduce)
        else:
            self.reduction = reduction


class _WeightedLoss(_Loss):
    """A loss with a per-class ``weight`` buffer (None allowed)."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class L1Loss(_Loss):
    """Mean absolute error between ``input`` and ``target``.

    Example::

        >>> nn.L1Loss()(ember.tensor([1., 2.]), ember.tensor([0., 4.]))
        tensor(1.5000)
    """

    def forward(self, input, target):
        return F.l1_loss(input, target, reduction=self.reduction)


class MSELoss(_Loss):
    """Mean squared error between ``input`` and ``target``.

    Example::

        >>> nn.MSELoss()(ember.tensor([1., 2.]), ember.tensor([0., 4.]))
        tensor(2.5000)
    """

    def forward(self, input, target):
        return F.mse_loss(input, target, reduction=self.reduction)


class NLLLoss(_WeightedLoss):
    """Negative log likelihood of class indices under log-probabilities.

    Example::

        >>> nn.NLLLoss()(ember.tensor([[-1., -2.], [-3., -0.5]]), ember.tensor([0, 1]))
        tensor(0.7500)
    """

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None,
                 reduction="mean"):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class NLLLoss2d(NLLLoss):
    """Deprecated alias of :class:`NLLLoss`.

    Example::

        >>> nn.NLLLoss2d()  # doctest: +SKIP
        NLLLoss2d()
    """

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None,
                 reduction="mean"):
        warnings.warn("`NLLLoss2d` has been deprecated. Please use `NLLLoss` instead as a "
                      "drop-in replacement and see https://pytorch.org/docs/main/nn.html"
                      "#torch.nn.NLLLoss for more details.", FutureWarning, stacklevel=2)
        super().__init__(weight, size_average, ignore_index, reduce, reduction)


class CrossEntropyLoss(_WeightedLoss):
    """Cross entropy between logits and class indices or class probabilities.

    Example::

        >>> nn.CrossEntropyLoss()(ember.tensor([[2., 0.], [0., 2.]]), ember.tensor([0, 1]))
        tensor(0.1269)
    """

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None,
                 reduction="mean", label_smoothing=0.0):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input, target):
        return F.cross_entropy(input, target, weight=self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


class PoissonNLLLoss(_Loss):
    """Negative log likelihood of a Poisson-distributed target.

    Example::

        >>> nn.PoissonNLLLoss()(ember.tensor([0., 1.]), ember.tensor([1., 2.]))
        tensor(0.3591)
    """

    def __init__(self, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                 reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.log_input = log_input
        self.full = full
        self.eps = eps

    def forward(self, log_input, target):
        return F.poisson_nll_loss(log_input, target, log_input=self.log_input, full=self.full,
                                  eps=self.eps, reduction=self.reduction)


class GaussianNLLLoss(_Loss):
    """Negative log likelihood of a Gaussian with predicted mean and variance.

    Example::

        >>> nn.GaussianNLLLoss()(ember.tensor([1., 2.]), ember.tensor([0., 2.]), ember.ones(2))
        tensor(0.2500)
    """

    def __init__(self, *, full=False, eps=1e-6, reduction="mean"):
        super().__init__(None, None, reduction)
        self.full = full
        self.eps = eps

    def forward(self, input, target, var):
        return F.gaussian_nll_loss(input, target, var, full=self.full, eps=self.eps,
                                   reduction=self.reduction)


class KLDivLoss(_Loss):
    """Kullback-Leibler divergence of ``target`` from log-probabilities ``input``.

    Example::

        >>> nn.KLDivLoss(reduction="sum")(ember.tensor([-1., -2.]), ember.tensor([0.5, 0.5]))
        tensor(0.8069)
    """

    def __init__(self, size_average=None, reduce=None, reduction="mean", log_target=False):
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input, target):
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class BCELoss(_WeightedLoss):
    """Binary cross entropy of probabilities.

    Example::

        >>> nn.BCELoss()(ember.tensor([0.5, 0.9]), ember.tensor([1., 1.]))
        tensor(0.3993)
    """

    def forward(self, input, target):
        return F.binary_cross_entropy(input, target, weight=self.weight,
                                      reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Sigmoid plus binary cross entropy, stable for large logits; ``pos_weight`` per class.

    Example::

        >>> nn.BCEWithLogitsLoss()(ember.tensor([0., 2.]), ember.tensor([1., 0.]))
        tensor(1.4093)
    """

    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean",
                 pos_weight=None):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(input, target, self.weight,
                                                  pos_weight=self.pos_weight,
                                                  reduction=self.reduction)


class HingeEmbeddingLoss(_Loss):
    """Hinge loss for (dis)similarity labels +-1.

    Example::

        >>> nn.HingeEmbeddingLoss()(ember.tensor([0.3, 0.2]), ember.tensor([1., -1.]))
        tensor(0.5500)
    """

    def __init__(self, margin=1.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input, target):
        return F.hinge_embedding_loss(input, target, margin=self.margin,
                                      reduction=self.reduction)


class MultiLabelMarginLoss(_Loss):
    """Multi-label hinge loss over (positive, negative) class pairs.

    Example::

        >>> nn.MultiLabelMarginLoss()(ember.tensor([[0.1, 0.2, 0.4, 0.8]]),
        ...                           ember.tensor([[3, 0, -1, 1]]))
        tensor(0.8500)
    """

    def forward(self, input, target):
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """Quadratic below ``beta``, linear above.

    Example::

        >>> nn.SmoothL1Loss()(ember.tensor([0.5, 3.]), ember.tensor([0., 0.]))
        tensor(1.3125)
    """

    def __init__(self, size_average=None, reduce=None, reduction="mean", beta=1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input, target):
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """Quadratic below ``delta``, ``delta``-scaled linear above.

    Example::

        >>> nn.HuberLoss()(ember.tensor([0.5, 3.]), ember.tensor([0., 0.]))
        tensor(1.3125)
    """

    def __init__(self, reduction="mean", delta=1.0):
        if not isinstance(delta, (float, int)):
            raise TypeError(f"delta must be a float or int, got: {type(delta)}")
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input, target):
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class SoftMarginLoss(_Loss):
    """Two-class logistic loss for targets +-1.

    Example::

        >>> nn.SoftMarginLoss()(ember.tensor([1., -1.]), ember.tensor([1., 1.]))
        tensor(0.8133)
    """

    def forward(self, input, target):
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """One-vs-all logistic loss over classes.

    Example::

        >>> nn.MultiLabelSoftMarginLoss()(ember.tensor([[0., 2.]]), ember.tensor([[1., 0.]]))
        tensor(1.4093)
    """

    def forward(self, input, target):
        return F.multilabel_soft_margin_loss(input, target, weight=self.weight,
                                             reduction=self.reduction)


class CosineEmbeddingLoss(_Loss):
    """Cosine-similarity loss for pairs labelled +-1.

    Example::

        >>> nn.CosineEmbeddingLoss()(ember.tensor([[1., 0.]]), ember.tensor([[0., 1.]]),
        ...                          ember.tensor([1]))
        tensor(1.)
    """

    def __init__(self, margin=0.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return F.cosine_embedding_loss(input1, input2, target, margin=self.margin,
                                       reduction=self.reduction)


class MarginRankingLoss(_Loss):
    """Ranking hinge loss ``max(0, -y (x1 - x2) + margin)``.

    Example::

        >>> nn.MarginRankingLoss()(ember.tensor([1., 2.]), ember.tensor([2., 1.]),
        ...                        ember.tensor([1., 1.]))
        tensor(0.5000)
    """

    def __init__(self, margin=0.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return F.margin_ranking_loss(input1, input2, target, margin=self.margin,
                                     reduction=self.reduction)


class MultiMarginLoss(_WeightedLoss):
    """Multi-class hinge loss (``p`` = 1 or 2, optional class weights).

    Example::

        >>> nn.MultiMarginLoss()(ember.tensor([[0.1, 0.2, 0.4, 0.8]]), ember.tensor([3]))
        tensor(0.3250)
    """

    def __init__(self, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                 reduction="mean"):
        super().__init__(weight, size_average, reduce, reduction)
        if p != 1 and p != 2:
            raise ValueError("only p == 1 and p == 2 supported")
        if weight is not None and weight.dim() != 1:
            raise ValueError("MultiMarginLoss: expected weight to be None or 1D tensor, got "
                             f"{weight.dim()}D instead")
        self.p = p
        self.margin = margin

    def forward(self, input, target):
        return F.multi_margin_loss(input, target, p=self.p, margin=self.margin,
                                   weight=self.weight, reduction=self.reduction)


class TripletMarginLoss(_Loss):
    """Triplet loss with the p-norm distance.

    Example::

        >>> a, p, n = ember.zeros(1, 2), ember.ones(1, 2), ember.full((1, 2), 2.)
        >>> nn.TripletMarginLoss()(a, p, n)
        tensor(0.)
    """

    def __init__(self, margin=1.0, p=2.0, eps=1e-6, swap=False, size_average=None, reduce=None,
                 reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        if margin <= 0:
            raise ValueError("TripletMarginLoss: expected margin to be greater than 0, got "
                             f"{margin} instead")
        self.margin = margin
        self.p = p
        self.eps = eps
        self.swap = swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_loss(anchor, positive, negative, margin=self.margin, p=self.p,
                                     eps=self.eps, swap=self.swap, reduction=self.reduction)


class TripletMarginWithDistanceLoss(_Loss):
    """Triplet loss with any distance function (default: ``nn.PairwiseDistance()``).

    Example::

        >>> a, p, n = ember.zeros(1, 2), ember.ones(1, 2), ember.full((1, 2), 2.)
        >>> nn.TripletMarginWithDistanceLoss(margin=2.0)(a, p, n)
        tensor(0.5858)
    """

    def __init__(self, *, distance_function=None, margin=1.0, swap=False, reduction="mean"):
        super().__init__(size_average=None, reduce=None, reduction=reduction)
        if margin <= 0:
            raise ValueError("TripletMarginWithDistanceLoss: expected margin to be greater than "
                             f"0, got {margin} instead")
        self.distance_function = (distance_function if distance_function is not None
                                  else PairwiseDistance())
        self.margin = margin
        self.swap = swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_with_distance_loss(
            anchor, positive, negative, distance_function=self.distance_function,
            margin=self.margin, swap=self.swap, reduction=self.reduction)


class CTCLoss(_Loss):
    """Connectionist Temporal Classification loss.

    Example::

        >>> lp = ember.randn(5, 1, 3).log_softmax(2)
        >>> nn.CTCLoss()(lp, ember.tensor([[1, 2]]), [5], [2]).shape
        ember.Size([])
    """

    def __init__(self, blank=0, reduction="mean", zero_infinity=False):
        super().__init__(reduction=reduction)
        self.blank = blank
        self.zero_infinity = zero_infinity

    def forward(self, log_probs, targets, input_lengths, target_lengths):
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank,
                          self.reduction, self.zero_infinity)


class LinearCrossEntropyLoss(_WeightedLoss):
    """A ``Linear(in_features, num_classes * prod(out_features))`` head and cross entropy, fused.

    ``forward(input, target)`` reshapes the head's weight to ``(num_classes, *out_features,
    in_features)`` and calls :func:`~ember.nn.functional.linear_cross_entropy`, as torch does.

    Example::

        >>> loss = LinearCrossEntropyLoss(3, 5)
        >>> loss(ember.randn(4, 3), ember.tensor([0, 4, 2, 1])).shape
        ember.Size([])
    """

    def __init__(self, in_features, num_classes, *, out_features=(), bias=False, device=None,
                 dtype=None, reduction="mean", weight=None, ignore_index=None,
                 label_smoothing=0.0, options=None):
        if weight is not None and tuple(weight.shape) != (num_classes,):
            raise RuntimeError(
                f"expected weight shape to be {(num_classes,)}, got {tuple(weight.shape)}")
        if label_smoothing < 0 or label_smoothing > 1.0:
            raise RuntimeError(
                f"expected label_smoothing to be in range [0, 1], got {label_smoothing}")
        super().__init__(weight=weight, reduction=reduction)
        self.num_classes = num_classes
        self.out_features = out_features
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing
        # Linear holds a 2-D weight; forward views it with the extra class dimensions
        self.linear = Linear(in_features, math.prod(out_features, start=num_classes), bias=bias,
                             device=device, dtype=dtype)
        self.options = options

    def forward(self, input, target):
        head = self.linear
        weight = head.weight.reshape((self.num_classes, *self.out_features, head.in_features))
        bias = None if head.bias is None else head.bias.reshape(
            (self.num_classes, *self.out_features))
        return linear_cross_entropy(input, weight, target, linear_bias=bias, weight=self.weight,
                                    reduction=self.reduction, ignore_index=self.ignore_index,
                                    label_smoothing=self.label_smoothing, options=self.options)

    def extra_repr(self):
        return (f"in_features={self.linear.in_features}, num_classes={self.num_classes}, "
                f"out_features={self.out_features}, bias={self.linear.bias is not None}, "
                f"reduction={self.reduction}, ignore_index={self.ignore_index}, "
                f"label_smoothing={self.label_smoothing}, options={self.options}")
