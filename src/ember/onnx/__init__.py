"""``ember.onnx``: export models to ONNX (torch.onnx's TorchScript-style exporter).

:func:`export` traces a model with ``ember.jit.trace``, maps each primitive operator of the
traced graph to ONNX operators (each operator's ``onnx`` rule, ``Op.defonnx``, written next to
the op) and
writes an ONNX ModelProto with the model's parameters and buffers as initializers. It needs
the ``onnx`` package (``pip install ember[onnx]``), imported only when an export runs.
"""

from __future__ import annotations

from . import errors, ops
from ._export import (
    OperatorExportTypes,
    TrainingMode,
    export,
    export_model_proto,
    is_in_onnx_export,
)
from ._exportable import ExportableModule, InputObserver
from ._program import ONNXProgram
from .errors import OnnxExporterError, OnnxExporterWarning, UnsupportedOperatorError

__all__ = ["export", "export_model_proto", "is_in_onnx_export", "TrainingMode",
           "OperatorExportTypes", "errors", "ops", "ONNXProgram", "ExportableModule",
           "InputObserver", "OnnxExporterError", "OnnxExporterWarning",
           "UnsupportedOperatorError"]
