"""``ember.utils.data.datapipes.dataframe.dataframes``: torch's names, not implemented in ember.

Each raises ``NotImplementedError`` naming the torch API (see ``_unsupported``).
"""

from ._unsupported import unsupported_class, unsupported_function

_HERE = "torch.utils.data.datapipes.dataframe.dataframes"


def _class(name):
    return unsupported_class(f"{_HERE}.{name}")


def _function(name):
    return unsupported_function(f"{_HERE}.{name}")


Capture = _class("Capture")
CaptureA = _class("CaptureA")
CaptureAdd = _class("CaptureAdd")
CaptureCall = _class("CaptureCall")
CaptureControl = _class("CaptureControl")
CaptureDataFrame = _class("CaptureDataFrame")
CaptureDataFrameWithDataPipeOps = _class("CaptureDataFrameWithDataPipeOps")
CaptureF = _class("CaptureF")
CaptureGetAttr = _class("CaptureGetAttr")
CaptureGetItem = _class("CaptureGetItem")
CaptureInitial = _class("CaptureInitial")
CaptureLikeMock = _class("CaptureLikeMock")
CaptureMul = _class("CaptureMul")
CaptureSetItem = _class("CaptureSetItem")
CaptureSub = _class("CaptureSub")
CaptureVariable = _class("CaptureVariable")
CaptureVariableAssign = _class("CaptureVariableAssign")
DataFrameTracedOps = _class("DataFrameTracedOps")
DataFrameTracer = _class("DataFrameTracer")
disable_capture = _function("disable_capture")
get_val = _function("get_val")

__all__ = ["Capture", "CaptureA", "CaptureAdd", "CaptureCall", "CaptureControl",
           "CaptureDataFrame", "CaptureDataFrameWithDataPipeOps", "CaptureF",
           "CaptureGetAttr", "CaptureGetItem", "CaptureInitial", "CaptureLikeMock",
           "CaptureMul", "CaptureSetItem", "CaptureSub", "CaptureVariable",
           "CaptureVariableAssign", "DataFrameTracedOps", "DataFrameTracer",
           "disable_capture", "get_val"]
