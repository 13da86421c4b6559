"""``torch.onnx.operators``: torch's shape helpers for the TorchScript exporter (no public
names); ember's exporter records sizes itself (``docs/onnx.md``, Dynamic axes).
"""

__all__ = []
