"""AdaptiveLogSoftmaxWithLoss: an efficient softmax over many classes (Grave et al., 2016).

Classes are split by ``cutoffs`` into a frequent *shortlist* and rarer *clusters*. The head
scores the shortlist plus one entry per cluster; a target in cluster ``i`` gets the head's
log-probability of cluster ``i`` plus its log-probability within the cluster, computed by a
small two-layer projection (hidden size ``in_features // div_value**(i + 1)``) only for the rows
whose target lies in that cluster.
"""

from __future__ import annotations

from collections import namedtuple

from ...ops.shape import cat
from .._functional.softmax import log_softmax
from .container import ModuleList, Sequential
from .linear import Linear
from .module import Module

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


def _check_cutoffs(cutoffs, n_classes):
    if len(cutoffs) == 0:
        raise ValueError("cutoffs should be a sequence of length larger than 0")
    if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
            or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
        raise ValueError("cutoffs should be a sequence of unique, positive integers sorted in "
                         "an increasing order, where each value is between 1 and n_classes-1")


def _check_shapes(input, target):
    if target.dim() == 1:
        if input.size(0) != target.size(0):
            raise RuntimeError("Input and target should have the same size in the batch "
                               "dimension.")
        if input.dim() != 2:
            raise RuntimeError("1D target tensor expects 2D input tensors, but found inputs "
                               f"with size {input.size()}")
    elif target.dim() == 0:
        if input.dim() != 1:
            raise RuntimeError("0D target tensor expects 1D input tensors, but found inputs "
                               f"with size {input.size()}")
    else:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")


class AdaptiveLogSoftmaxWithLoss(Module):
    """Adaptive softmax: ``forward(input, target)`` returns ``(output, loss)``, the target
    log-probabilities and their negative mean.

    ``log_prob(input)`` gives all ``n_classes`` log-probabilities, ``predict(input)`` the most
    likely class. Submodules (``head``, ``tail``) and their parameter names are torch's.

    Example::

        >>> asm = ember.nn.AdaptiveLogSoftmaxWithLoss(16, 100, cutoffs=[10, 40])
        >>> out, loss = asm(ember.randn(8, 16), ember.randint(0, 100, (8,)))
        >>> out.shape, loss.shape
        (ember.Size([8]), ember.Size([]))
    """

    def __init__(self, in_features, n_classes, cutoffs, div_value=4.0, head_bias=False,
                 device=None, dtype=None):
        super().__init__()
        cutoffs = list(cutoffs)
        _check_cutoffs(cutoffs, n_classes)
        factory = {"device": device, "dtype": dtype}
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, **factory)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hidden = int(in_features // (div_value ** (i + 1)))
            cluster_size = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(in_features, hidden, bias=False, **factory),
                                        Linear(hidden, cluster_size, bias=False, **factory)))

    def reset_parameters(self):
        """Re-initialise the head and every cluster projection."""
        self.head.reset_parameters()
        for to_hidden, to_output in self.tail:
            to_hidden.reset_parameters()
            to_output.reset_parameters()

    def forward(self, input_, target_):
        _check_shapes(input_, target_)
        batched = target_.dim() > 0
        input = input_ if batched else input_.unsqueeze(0)
        target = target_ if batched else target_.unsqueeze(0)
        head_index = target.clone()  # which head entry each row reads
        output = input.new_zeros(target.size(0))
        covered = 0
        bounds = [0] + self.cutoffs
        for i in range(len(bounds) - 1):
            in_range = (target >= bounds[i]) & (target < bounds[i + 1])
            rows = in_range.nonzero().flatten()
            if rows.numel() == 0:
                continue
            covered += rows.numel()
            if i == 0:
                continue  # shortlist rows read their own class from the head
            head_index[rows] = self.shortlist_size + i - 1
            within = target[in_range] - bounds[i]
            cluster_logprob = log_softmax(self.tail[i - 1](input.index_select(0, rows)), dim=1)
            picked = cluster_logprob.gather(1, within.unsqueeze(1)).squeeze(1)
            output = output.index_add(0, rows, picked)
        if covered != target.size(0):
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but "
                               f"values in range [{target.min().item()}, "
                               f"{target.max().item()}] were found. ")
        head_logprob = log_softmax(self.head(input), dim=1)
        output = output + head_logprob.gather(1, head_index.unsqueeze(1)).squeeze()
        loss = (-output).mean()
        if not batched:
            output = output.squeeze(0)
        return _ASMoutput(output, loss)

    def _full_log_prob(self, input, head_output):
        head_logprob = log_softmax(head_output, dim=1)
        pieces = [head_logprob[:, :self.shortlist_size]]
        for i, cluster in enumerate(self.tail):
            cluster_logprob = log_softmax(cluster(input), dim=1)
            pieces.append(cluster_logprob + head_logprob[:, self.shortlist_size + i].unsqueeze(1))
        return cat(pieces, dim=1)

    def log_prob(self, input):
        """Log-probabilities of all ``n_classes`` classes, shape ``(N, n_classes)``.

        Example::

            >>> asm.log_prob(ember.randn(8, 16)).exp().sum(1)  # each row sums to 1
        """
        return self._full_log_prob(input, self.head(input))

    def predict(self, input):
        """The most likely class of each row, shape ``(N,)``; cheaper than
        ``log_prob(input).argmax(1)`` when the head's best entry is in the shortlist.

        Example::

            >>> asm.predict(ember.randn(8, 16)).shape
            ember.Size([8])
        """
        head_output = self.head(input)
        best = head_output.argmax(dim=1)
        outside_shortlist = best >= self.shortlist_size
        if not bool(outside_shortlist.any()):
            return best
        if bool(outside_shortlist.all()):
            return self._full_log_prob(input, head_output).argmax(dim=1)
        full = self._full_log_prob(input[outside_shortlist], head_output[outside_shortlist])
        best[outside_shortlist] = full.argmax(dim=1)
        return best
