"""``map`` and ``collate``: apply a function to every item (or to some of its fields)."""

from __future__ import annotations

import copy

from .._decorator import functional_datapipe
from ..datapipe import IterDataPipe
from ..utils.common import validate_input_col

__all__ = ["CollatorIterDataPipe", "MapperIterDataPipe"]


def _length_of(datapipe, owner):
    if hasattr(datapipe, "__len__"):
        return len(datapipe)
    raise TypeError(f"{type(owner).__name__} instance doesn't have valid length")


@functional_datapipe("map")
class MapperIterDataPipe(IterDataPipe):
    """Apply ``fn`` to each item, or to its ``input_col`` fields (written to ``output_col``).

    ``input_col`` picks positions/keys of each item as ``fn``'s arguments; the result replaces
    the (first) input column, or goes to ``output_col`` (``-1`` appends).

    Example::

        >>> from ember.utils.data.datapipes.iter import IterableWrapper
        >>> list(IterableWrapper([(1, 2), (3, 4)]).map(lambda a: a * 10, input_col=1))
        [(1, 20), (3, 40)]
    """

    def __init__(self, datapipe, fn, input_col=None, output_col=None):
        self.datapipe = datapipe
        self.fn = fn
        self.input_col = input_col
        if input_col is None and output_col is not None:
            raise ValueError("`output_col` must be None when `input_col` is None.")
        if isinstance(output_col, (list, tuple)):
            if len(output_col) > 1:
                raise ValueError("`output_col` must be a single-element list or tuple")
            output_col = output_col[0]
        self.output_col = output_col
        validate_input_col(fn, input_col)

    def _apply_fn(self, data):
        if self.input_col is None and self.output_col is None:
            return self.fn(data)
        if self.input_col is None:
            result = self.fn(data)
        elif isinstance(self.input_col, (list, tuple)):
            result = self.fn(*(data[col] for col in self.input_col))
        else:
            result = self.fn(data[self.input_col])
        was_tuple = isinstance(data, tuple)
        data = list(data) if was_tuple else copy.copy(data)
        if self.output_col is None:
            if isinstance(self.input_col, (list, tuple)):
                data[self.input_col[0]] = result
                for idx in sorted(self.input_col[1:], reverse=True):
                    del data[idx]
            else:
                data[self.input_col] = result
        elif self.output_col == -1:
            data.append(result)
        else:
            data[self.output_col] = result
        return tuple(data) if was_tuple else data

    def __iter__(self):
        for data in self.datapipe:
            yield self._apply_fn(data)

    def __len__(self):
        return _length_of(self.datapipe, self)


@functional_datapipe("collate")
class CollatorIterDataPipe(MapperIterDataPipe):
    """Collate each item (usually a batch) with ``collate_fn``, else ``conversion``.

    Example::

        >>> from ember.utils.data.datapipes.iter import IterableWrapper
        >>> next(iter(IterableWrapper([[1, 2], [3, 4]]).collate()))
        tensor([1, 2])
    """

    def __init__(self, datapipe, conversion=None, collate_fn=None):
        from ...dataloader import default_collate
        if collate_fn is not None:
            fn = collate_fn
        elif conversion is None:
            fn = default_collate
        elif callable(conversion):
            fn = conversion
        else:
            raise NotImplementedError("ember's collate accepts a callable conversion; torch's "
                                      "dict-of-columns conversion is not supported")
        super().__init__(datapipe, fn=fn)
