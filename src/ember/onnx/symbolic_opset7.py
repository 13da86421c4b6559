"""``torch.onnx.symbolic_opset7``: torch's TorchScript exporter keeps its opset-7 symbolic
functions here (no public names). Each ember operator owns its ONNX form, written next to
the op (``Op.defonnx``; opsets 13 to 20, see ``docs/onnx.md``).
"""

__all__ = []
