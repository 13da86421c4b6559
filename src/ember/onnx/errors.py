"""Exceptions of the ONNX exporter, with torch.onnx.errors' names and messages.

Example::

    >>> from ember.onnx.errors import UnsupportedOperatorError
    >>> str(UnsupportedOperatorError("ember::unique", 17, None))
    "Exporting the operator 'ember::unique' to ONNX opset version 17 is not supported"
"""

from __future__ import annotations

__all__ = ["OnnxExporterWarning", "OnnxExporterError", "UnsupportedOperatorError",
           "SymbolicValueError"]


class OnnxExporterWarning(UserWarning):
    """Warnings in the ONNX exporter."""


class OnnxExporterError(RuntimeError):
    """Errors raised by the ONNX exporter: the base class of all exporter errors."""


class UnsupportedOperatorError(OnnxExporterError):
    """An operator of the traced graph has no ONNX mapping (at this opset version).

    ``name`` is the operator's qualified name (``ember::unique``), ``version`` the opset
    asked for, ``supported_version`` the first opset that has a mapping, or None.
    """

    def __init__(self, name, version, supported_version):
        if supported_version is not None:
            message = (f"Exporting the operator '{name}' to ONNX opset version {version} is "
                       f"not supported. Support for this operator was added in version "
                       f"{supported_version}, try exporting with this version")
        else:
            message = (f"Exporting the operator '{name}' to ONNX opset version {version} is "
                       "not supported")
        super().__init__(message)


class SymbolicValueError(OnnxExporterError):
    """A value of the traced graph cannot be expressed in ONNX (a size that depends on a
    dynamic axis in a way the exporter cannot compute, an output it cannot map...).

    ``value`` names the graph value (``%12``) and the node that made it.
    """

    def __init__(self, msg, value):
        super().__init__(f"{msg}  [Caused by the value '{value}' in the traced graph.]")
