"""Each operator owns its ONNX form (``Op.defonnx``, issue 12), written next to the op.

Exports run in onnxruntime (or onnx's reference evaluator) and are compared with torch: the
forms the old name table got wrong (round with ``decimals``, isnan/isinf of integers), and
ops declared with ``onnx=`` (a string or a mapping function) or without any form.
"""

import io

import numpy as np
import pytest
import torch

import ember
from ember.onnx.errors import UnsupportedOperatorError
from ember.ops._registry import Op

onnx = pytest.importorskip("onnx")  # the tests need the ember[onnx] extra


def _exported(fn, *arrays):
    """Export ``fn`` traced on ``arrays`` and run the file on the same arrays."""
    buffer = io.BytesIO()
    names = [f"x{i}" for i in range(len(arrays))]
    ember.onnx.export(fn, tuple(ember.tensor(a) for a in arrays), buffer, input_names=names)
    feeds = dict(zip(names, arrays))
    try:
        import onnxruntime
    except ImportError:
        from onnx.reference import ReferenceEvaluator

        return ReferenceEvaluator(onnx.load_from_string(buffer.getvalue())).run(None, feeds)
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    session = onnxruntime.InferenceSession(buffer.getvalue(), options,
                                           providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def _same(got, expected):
    expected = [t.numpy() for t in expected]
    assert len(got) == len(expected)
    for i, (g, e) in enumerate(zip(got, expected)):
        assert g.dtype == e.dtype, i
        np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-6, err_msg=str(i))


def _rounded(fw, x, i):
    return (x.round(), fw.round(x, decimals=1), fw.round(x, decimals=-1),
            fw.round(x, decimals=2), i.round())


def test_round_with_decimals_and_integers_exports_as_torch_rounds():
    x = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 1.25, 12.5, 15.0, 1234.5678, -0.04],
                 dtype=np.float32)
    i = np.array([3, -7, 12], dtype=np.int64)
    got = _exported(lambda a, b: _rounded(ember, a, b), x, i)
    _same(got, _rounded(torch, torch.from_numpy(x), torch.from_numpy(i)))


def _classified(x, i):
    return x.isnan(), x.isinf(), i.isnan(), i.isinf()


def test_isnan_and_isinf_of_floats_and_integers_export_as_torch():
    x = np.array([1.0, np.nan, np.inf, -np.inf, 0.0], dtype=np.float32)
    i = np.array([1, 0, -5], dtype=np.int64)
    got = _exported(_classified, x, i)
    _same(got, _classified(torch.from_numpy(x), torch.from_numpy(i)))


def _scratch_op(name, **options):
    meta = lambda a: (a.shape, a.dtype)  # noqa: E731
    return Op(name, lambda xp, a: -a, meta=meta, kind="pointwise-unary", register=False,
              **options)


def test_an_op_exports_through_the_onnx_form_it_declares():
    x = np.array([[1.0, -2.0, 3.5]], dtype=np.float32)
    negate = _scratch_op("scratch_negate", onnx="Neg")  # one ONNX operator, by name
    composed = _scratch_op("scratch_composed")

    @composed.defonnx
    def _(ctx, a):  # a mapping adds nodes through the exporter's context
        return ctx.op("Sub", ctx.scalar(0, ctx.out_dtype()), a)

    got = _exported(lambda a: (negate(a), composed(a)), x)
    expected = torch.neg(torch.from_numpy(x))
    _same(got, [expected, expected])


def test_an_op_without_an_onnx_form_is_refused_with_torchs_error():
    silent = _scratch_op("scratch_silent", opt_outs={"onnx": "a test op with no ONNX form"})
    assert silent.onnx is None and silent.opt_outs == {"onnx": "a test op with no ONNX form"}
    with pytest.raises(UnsupportedOperatorError,
                       match="Exporting the operator 'ember::scratch_silent' to ONNX opset "
                             "version 17 is not supported"):
        _exported(lambda a: silent(a), np.ones(3, np.float32))


def test_cdist_max_norm_exports_as_torch_computes_it():
    # torch's p=inf kernel keeps a running max from 0 that a NaN difference never enters
    x1 = np.array([[0.0, np.nan, 1.0], [2.0, -1.0, 0.5]], dtype=np.float32)
    x2 = np.array([[1.0, 1.0, 3.0], [0.5, 0.2, np.inf], [2.0, -1.0, 0.5]], dtype=np.float32)
    got = _exported(lambda a, b: ember.cdist(a, b, p=float("inf")), x1, x2)
    _same(got, [torch.cdist(torch.from_numpy(x1), torch.from_numpy(x2), p=float("inf"))])
