"""``ember.utils.data.datapipes.dataframe.datapipes``: torch's names, not implemented in ember.

Each raises ``NotImplementedError`` naming the torch API (see ``_unsupported``).
"""

from ._unsupported import unsupported_class, unsupported_function

_HERE = "torch.utils.data.datapipes.dataframe.datapipes"


def _class(name):
    return unsupported_class(f"{_HERE}.{name}")


def _function(name):
    return unsupported_function(f"{_HERE}.{name}")


ConcatDataFramesPipe = _class("ConcatDataFramesPipe")
DataFramesAsTuplesPipe = _class("DataFramesAsTuplesPipe")
ExampleAggregateAsDataFrames = _class("ExampleAggregateAsDataFrames")
FilterDataFramesPipe = _class("FilterDataFramesPipe")
PerRowDataFramesPipe = _class("PerRowDataFramesPipe")
ShuffleDataFramesPipe = _class("ShuffleDataFramesPipe")

__all__ = ["ConcatDataFramesPipe", "DataFramesAsTuplesPipe", "ExampleAggregateAsDataFrames",
           "FilterDataFramesPipe", "PerRowDataFramesPipe", "ShuffleDataFramesPipe"]
