"""The DataPipe base classes: composable iterable (:class:`IterDataPipe`) and map-style
(:class:`MapDataPipe`) datasets, chained by functional names (``dp.map(f).batch(4)``).

A DataPipe class decorated with ``@functional_datapipe("name")`` becomes callable as
``other_datapipe.name(...)``, as in torch.

Example::

    >>> from ember.utils.data.datapipes.iter import IterableWrapper
    >>> list(IterableWrapper(range(6)).map(lambda x: x * 10).batch(4))
    [[0, 10, 20, 30], [40, 50]]
"""

from __future__ import annotations

import functools
from typing import Generic, TypeVar

from ..dataset import Dataset, IterableDataset

__all__ = ["DataChunk", "DFIterDataPipe", "IterDataPipe", "MapDataPipe"]

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


class _FunctionalRegistry:
    """Per-base-class table of functional names; shared by the subclasses of that base."""

    functions: dict

    @classmethod
    def register_datapipe_as_function(cls, function_name, cls_to_register,
                                      enable_df_api_tracing=False):
        """Make ``cls_to_register(source, *args, **kwargs)`` callable as ``source.<name>(...)``."""
        if function_name in cls.functions:
            raise Exception(f"Unable to add DataPipe function name {function_name} as it is "  # noqa: TRY002
                            "already taken")

        def make_pipe(source, *args, **kwargs):
            return cls_to_register(source, *args, **kwargs)

        cls.functions[function_name] = make_pipe

    def __getattr__(self, attribute_name):
        functions = type(self).functions
        if attribute_name in functions:
            return functools.partial(functions[attribute_name], self)
        raise AttributeError(
            f"'{self.__class__.__name__}' object has no attribute '{attribute_name}")

    def __dir__(self):
        return list(super().__dir__()) + list(type(self).functions)

    def __repr__(self):
        return self.__class__.__qualname__

    def __str__(self):
        return self.__class__.__qualname__

    def reset(self):
        """Reset the pipe's iteration state (nothing to reset by default)."""


class IterDataPipe(_FunctionalRegistry, IterableDataset, Generic[T_co]):
    """An iterable DataPipe: subclasses define ``__iter__`` (and ``__len__`` when known).

    Example::

        >>> class Count(IterDataPipe):
        ...     def __iter__(self):
        ...         yield from range(3)
        >>> list(Count().map(str))
        ['0', '1', '2']
    """

    functions: dict = {}

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must define __iter__")


class DFIterDataPipe(IterDataPipe):
    """An IterDataPipe whose items are data frames (torch's DataFrame API marker class)."""

    def _is_dfpipe(self):
        return True


class MapDataPipe(_FunctionalRegistry, Dataset, Generic[T_co]):
    """A map-style DataPipe: subclasses define ``__getitem__`` and ``__len__``.

    Example::

        >>> from ember.utils.data.datapipes.map import SequenceWrapper
        >>> SequenceWrapper([1, 2, 3]).map(lambda x: -x)[2]
        -3
    """

    functions: dict = {}

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__")


class DataChunk(list, Generic[T]):
    """A list of items produced by batching pipes; ``raw_iterator`` walks its items.

    Example::

        >>> DataChunk([1, 2]).as_str()
        '[1, 2]'
    """

    def __init__(self, items=()):
        items = list(items)
        super().__init__(items)
        self.items = items

    def as_str(self, indent=""):
        return indent + "[" + ", ".join(str(i) for i in iter(self)) + "]"

    def __iter__(self):
        yield from super().__iter__()

    def raw_iterator(self):
        yield from self.items
