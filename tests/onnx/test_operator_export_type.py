"""torch.onnx.OperatorExportTypes: the same members; ONNX and ONNX_ATEN_FALLBACK export."""

import io

import pytest
import torch

import ember


def test_members_match_torch():
    ours = {name: int(value) for name, value in ember.onnx.OperatorExportTypes.__members__.items()}
    theirs = {name: int(value)
              for name, value in torch.onnx.OperatorExportTypes.__members__.items()}
    assert ours == theirs


@pytest.mark.parametrize("kind", ["ONNX", "ONNX_ATEN_FALLBACK"])
def test_standard_forms_export(kind):
    pytest.importorskip("onnx")
    buffer = io.BytesIO()
    ember.onnx.export(ember.nn.Linear(3, 2), (ember.ones(1, 3),), buffer,
                      operator_export_type=getattr(ember.onnx.OperatorExportTypes, kind))
    assert buffer.getvalue()


@pytest.mark.parametrize("kind", ["ONNX_ATEN", "ONNX_FALLTHROUGH"])
def test_aten_forms_are_refused_clearly(kind):
    with pytest.raises(NotImplementedError, match=kind):
        ember.onnx.export(ember.nn.Linear(3, 2), (ember.ones(1, 3),), io.BytesIO(),
                          operator_export_type=getattr(ember.onnx.OperatorExportTypes, kind))
