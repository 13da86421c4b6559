"""``torch.onnx.utils``: torch's backward-compatibility path of the TorchScript exporter (no
public names); the exporter is :func:`ember.onnx.export`.
"""

__all__ = []
