"""``filter``: keep the items a predicate accepts."""

from __future__ import annotations

from .._decorator import functional_datapipe
from ..datapipe import IterDataPipe
from ..utils.common import validate_input_col

__all__ = ["FilterIterDataPipe"]


@functional_datapipe("filter")
class FilterIterDataPipe(IterDataPipe):
    """Keep the items for which ``filter_fn`` (applied to ``input_col`` if given) is True.

    Example::

        >>> from ember.utils.data.datapipes.iter import IterableWrapper
        >>> list(IterableWrapper(range(6)).filter(lambda x: x % 2 == 0))
        [0, 2, 4]
    """

    def __init__(self, datapipe, filter_fn, input_col=None):
        self.datapipe = datapipe
        self.filter_fn = filter_fn
        self.input_col = input_col
        validate_input_col(filter_fn, input_col)

    def _keeps(self, data):
        if self.input_col is None:
            condition = self.filter_fn(data)
        elif isinstance(self.input_col, (list, tuple)):
            condition = self.filter_fn(*(data[col] for col in self.input_col))
        else:
            condition = self.filter_fn(data[self.input_col])
        if not isinstance(condition, bool):
            # two arguments, as torch raises it
            raise ValueError("Boolean output is required for `filter_fn` of FilterIterDataPipe, "
                             "got", type(condition))
        return condition

    def __iter__(self):
        for data in self.datapipe:
            if self._keeps(data):
                yield data
