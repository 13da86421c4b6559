"""``shuffle`` (a buffered shuffle) and a sampler over a DataPipe."""

from __future__ import annotations

import random

from .._decorator import functional_datapipe
from ..datapipe import IterDataPipe
from .callable import _length_of

__all__ = ["SamplerIterDataPipe", "ShufflerIterDataPipe"]


class SamplerIterDataPipe(IterDataPipe):
    """Yield the items of ``sampler(datapipe, *sampler_args, **sampler_kwargs)``.

    Example::

        >>> from ember.utils.data.datapipes.iter import IterableWrapper
        >>> list(SamplerIterDataPipe(IterableWrapper([5, 6])))
        [5, 6]
    """

    def __init__(self, datapipe, sampler=None, sampler_args=None, sampler_kwargs=None):
        from ...sampler import SequentialSampler
        if not hasattr(datapipe, "__len__"):
            raise AssertionError("Sampler class requires input datapipe implemented `__len__`")
        self.datapipe = datapipe
        self.sampler_args = () if sampler_args is None else sampler_args
        self.sampler_kwargs = {} if sampler_kwargs is None else sampler_kwargs
        sampler = SequentialSampler if sampler is None else sampler
        self.sampler = sampler(*self.sampler_args, data_source=self.datapipe,
                               **self.sampler_kwargs)

    def __iter__(self):
        return iter(self.sampler)

    def __len__(self):
        return len(self.sampler)


@functional_datapipe("shuffle")
class ShufflerIterDataPipe(IterDataPipe):
    """Shuffle with a buffer of ``buffer_size`` items (Python's ``random`` with a per-epoch seed,
    as torch's; :meth:`set_seed` fixes the order, :meth:`set_shuffle` turns it off).

    Example::

        >>> from ember.utils.data.datapipes.iter import IterableWrapper
        >>> sorted(IterableWrapper(range(5)).shuffle().set_seed(0))
        [0, 1, 2, 3, 4]
    """

    def __init__(self, datapipe, *, buffer_size=10000, unbatch_level=0):
        if buffer_size <= 0:
            raise AssertionError("buffer_size should be larger than 0")
        self._buffer = []
        self.datapipe = datapipe if unbatch_level == 0 else datapipe.unbatch(
            unbatch_level=unbatch_level)
        self.buffer_size = buffer_size
        self._enabled = True
        self._seed = None
        self._rng = random.Random()

    def set_shuffle(self, shuffle=True):
        self._enabled = shuffle
        return self

    def set_seed(self, seed):
        self._seed = seed
        return self

    def reset(self):
        """Start an epoch: empty the buffer and seed the generator (a fresh seed unless set)."""
        self._buffer = []
        if self._enabled:
            if self._seed is None:
                from .... import empty, int64
                self._seed = int(empty((), dtype=int64).random_().item())
            self._rng.seed(self._seed)
            self._seed = None

    def __iter__(self):
        self.reset()
        if not self._enabled:
            yield from self.datapipe
            return
        for x in self.datapipe:
            if len(self._buffer) == self.buffer_size:
                idx = self._rng.randint(0, len(self._buffer) - 1)
                value, self._buffer[idx] = self._buffer[idx], x
                yield value
            else:
                self._buffer.append(x)
        while self._buffer:
            yield self._buffer.pop(self._rng.randint(0, len(self._buffer) - 1))

    def __len__(self):
        return _length_of(self.datapipe, self)
