"""``shuffle`` on a MapDataPipe: an IterDataPipe over its items in a random order."""

from __future__ import annotations

import random

from ..datapipe import IterDataPipe, MapDataPipe

__all__ = ["ShufflerIterDataPipe"]


class ShufflerIterDataPipe(IterDataPipe):
    """Yield ``datapipe[i]`` for the ``indices`` (default ``range(len)``) in a random order
    drawn with Python's ``random`` (seeded per epoch; :meth:`set_seed` fixes it).

    Example::

        >>> from ember.utils.data.datapipes.map import SequenceWrapper
        >>> sorted(SequenceWrapper([3, 1, 2]).shuffle().set_seed(1))
        [1, 2, 3]
    """

    def __init__(self, datapipe, *, indices=None):
        self.datapipe = datapipe
        self.indices = list(range(len(datapipe))) if indices is None else indices
        self._enabled = True
        self._seed = None
        self._rng = random.Random()
        self._shuffled_indices = self.indices

    def set_shuffle(self, shuffle=True):
        self._enabled = shuffle
        return self

    def set_seed(self, seed):
        self._seed = seed
        return self

    def reset(self):
        """Draw this epoch's order (from the set seed, or a fresh one)."""
        if self._enabled and self._seed is None:
            from .... import empty, int64
            self._seed = int(empty((), dtype=int64).random_().item())
        self._rng.seed(self._seed)
        self._seed = None
        self._shuffled_indices = self._rng.sample(self.indices, len(self.indices))

    def __iter__(self):
        self.reset()
        if not self._enabled:
            for index in self.indices:
                yield self.datapipe[index]
            return
        while self._shuffled_indices:  # torch takes the drawn order from its end
            yield self.datapipe[self._shuffled_indices.pop()]

    def __len__(self):
        return len(self.datapipe)


MapDataPipe.register_datapipe_as_function("shuffle", ShufflerIterDataPipe)
