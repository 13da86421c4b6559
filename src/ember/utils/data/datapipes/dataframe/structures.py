"""``ember.utils.data.datapipes.dataframe.structures``: torch's names, not implemented in ember.

Each raises ``NotImplementedError`` naming the torch API (see ``_unsupported``).
"""

from ._unsupported import unsupported_class, unsupported_function

_HERE = "torch.utils.data.datapipes.dataframe.structures"


def _class(name):
    return unsupported_class(f"{_HERE}.{name}")


def _function(name):
    return unsupported_function(f"{_HERE}.{name}")


DataChunkDF = _class("DataChunkDF")

__all__ = ["DataChunkDF"]
