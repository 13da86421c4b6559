"""nn modules: PairwiseDistance and CosineSimilarity."""

from __future__ import annotations

from .._functional.distance import cosine_similarity, pairwise_distance
from .module import Module

__all__ = ["PairwiseDistance", "CosineSimilarity"]


class PairwiseDistance(Module):
    """The p-norm distance between rows of two inputs (see :func:`F.pairwise_distance`).

    Example::

        >>> ember.nn.PairwiseDistance()(ember.zeros(2, 3), ember.ones(2, 3)).shape
        ember.Size([2])
    """

    def __init__(self, p=2.0, eps=1e-6, keepdim=False):
        super().__init__()
        self.norm = p
        self.eps = eps
        self.keepdim = keepdim

    def forward(self, x1, x2):
        return pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class CosineSimilarity(Module):
    """Cosine similarity of two inputs along ``dim`` (see :func:`F.cosine_similarity`).

    Example::

        >>> ember.nn.CosineSimilarity()(ember.ones(2, 3), ember.ones(2, 3))
        tensor([1.0000, 1.0000])
    """

    def __init__(self, dim=1, eps=1e-8):
        super().__init__()
        self.dim = dim
        self.eps = eps

    def forward(self, x1, x2):
        return cosine_similarity(x1, x2, self.dim, self.eps)
