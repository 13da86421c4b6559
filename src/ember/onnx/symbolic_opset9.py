"""``torch.onnx.symbolic_opset9``: torch's TorchScript exporter keeps its opset-9 symbolic
functions here (no public names). ember maps its own operators to ONNX in
``ember/onnx/_ops_*.py`` (opsets 13 to 20, see ``docs/onnx.md``).
"""

__all__ = []
