"""``torch.onnx.symbolic_helper``: helpers of torch's TorchScript exporter for writing symbolic
functions (no public names). ember's ONNX mappings receive an ``ExportContext``
(``ember/onnx/_context.py``) instead; see ``Op.defonnx`` in ``ember/ops/_registry.py``.
"""

__all__ = []
