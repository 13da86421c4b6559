"""ember.onnx.export against ember's own forward and torch's forward of the same architecture
with the same weights: the exported file runs in onnxruntime (or onnx's reference evaluator),
passes onnx.checker, keeps a dynamic batch axis, and refuses what it cannot export with
torch.onnx's error types."""

import io
import sys

import numpy as np
import pytest
import torch

import ember
from ember.onnx.errors import OnnxExporterError, UnsupportedOperatorError

onnx = pytest.importorskip("onnx")  # the tests need the ember[onnx] extra


def _run(data, feeds):
    """Run an exported model: onnxruntime when installed, else onnx's reference evaluator."""
    try:
        import onnxruntime
    except ImportError:
        from onnx.reference import ReferenceEvaluator

        return ReferenceEvaluator(onnx.load_from_string(data)).run(None, feeds)
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    session = onnxruntime.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def _export(model, args, **kwargs):
    buffer = io.BytesIO()
    ember.onnx.export(model, args, buffer, **kwargs)
    return buffer.getvalue()


def _flat(result):
    if isinstance(result, (tuple, list)):
        return [t for r in result for t in _flat(r)]
    return [result]


def _numpy(t):
    return t.detach().numpy()


# ---------------------------------------------------------------- models, built for both


class _LeNet:
    @staticmethod
    def build(nn, fw):
        F = nn.functional

        class LeNet(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
                self.bn1 = nn.BatchNorm2d(4)
                self.conv2 = nn.Conv2d(4, 8, 3)
                self.bn2 = nn.BatchNorm2d(8)
                self.pool = nn.MaxPool2d(2)
                self.drop = nn.Dropout(0.3)
                self.fc1 = nn.Linear(8 * 2 * 2, 16)
                self.fc2 = nn.Linear(16, 10)

            def forward(self, x):
                x = self.pool(F.relu(self.bn1(self.conv1(x))))
                x = F.avg_pool2d(F.relu(self.bn2(self.conv2(x))), 2)
                x = fw.flatten(x, 1)
                return F.log_softmax(self.fc2(self.drop(F.relu(self.fc1(x)))), dim=1)
        return LeNet()


class _ResidualBlock:
    @staticmethod
    def build(nn, fw):
        class Block(nn.Module):
            def __init__(self, channels=4):
                super().__init__()
                self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
                self.bn1 = nn.BatchNorm2d(channels)
                self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
                self.bn2 = nn.BatchNorm2d(channels)
                self.relu = nn.ReLU(inplace=True)
                self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                          nn.Linear(channels, 3))

            def forward(self, x):
                out = self.relu(self.bn1(self.conv1(x)))
                out = self.relu(self.bn2(self.conv2(out)) + x)
                return self.head(out)
        return Block()


class _EmbeddingLSTM:
    @staticmethod
    def build(nn, fw):
        class Tagger(nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = nn.Embedding(12, 6)
                self.lstm = nn.LSTM(6, 5, num_layers=2, batch_first=True)
                self.gru = nn.GRU(5, 4, batch_first=True)
                self.out = nn.Linear(4, 3)

            def forward(self, tokens):
                y, (h, c) = self.lstm(self.embed(tokens))
                z, _ = self.gru(y)
                return self.out(z), h, c
        return Tagger()


class _Encoder:
    @staticmethod
    def build(nn, fw):
        return nn.TransformerEncoderLayer(8, 2, 16, dropout=0.1, batch_first=True)


class _Attention:
    """nn.MultiheadAttention with a key padding mask, and causal scaled_dot_product_attention."""

    @staticmethod
    def build(nn, fw):
        F = nn.functional

        class Attention(nn.Module):
            def __init__(self):
                super().__init__()
                self.mha = nn.MultiheadAttention(8, 2, batch_first=True)

            def forward(self, q, kv, pad):
                out, weights = self.mha(q, kv, kv, key_padding_mask=pad)
                heads = out.view(out.shape[0], out.shape[1], 2, 4).transpose(1, 2)
                causal = F.scaled_dot_product_attention(heads, heads, heads, is_causal=True)
                return out, weights, causal
        return Attention()


def _mlp(nn, fw):
    return nn.Sequential(nn.Linear(6, 8), nn.GELU(), nn.LayerNorm(8), nn.Linear(8, 8),
                         nn.SiLU(), nn.Dropout(0.5), nn.Linear(8, 3), nn.Softmax(dim=-1))


def _conv1d_transposed(nn, fw):
    return nn.Sequential(nn.Conv1d(2, 3, 3, stride=2), nn.Tanh(), nn.AvgPool1d(2),
                         nn.ConvTranspose1d(3, 4, 3, stride=2, padding=1, output_padding=1),
                         nn.GroupNorm(2, 4), nn.Sigmoid(), nn.Flatten())


def _pair(make, seed=0):
    """The same architecture in ember and torch with the same (random) weights, in eval."""
    e_model, t_model = make(ember.nn, ember), make(torch.nn, torch)
    rng = np.random.default_rng(seed)
    state = {}
    for name, value in e_model.state_dict().items():
        array = value.numpy()
        if value.dtype.is_floating_point:
            array = (rng.standard_normal(array.shape) * 0.5).astype(np.float32)
            if "running_var" in name:
                array = np.abs(array) + 0.5
        state[name] = array
    e_model.load_state_dict({k: ember.tensor(v) for k, v in state.items()})
    t_model.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in state.items()})
    return e_model.eval(), t_model.eval()


def _floats(*shape, seed=1):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _mask(batch, length):
    mask = np.zeros((batch, length), dtype=bool)
    mask[::2, -1] = True  # every other sequence has its last key padded
    return mask


# name -> (model maker, example inputs at batch size b, names, dynamic axes)
CASES = {
    "mlp": (_mlp, lambda b: [_floats(b, 6)], ["x"], {"x": {0: "batch"}}),
    "lenet_bn": (_LeNet.build, lambda b: [_floats(b, 1, 12, 12)], ["image"],
                 {"image": {0: "batch"}}),
    "resnet_block": (_ResidualBlock.build, lambda b: [_floats(b, 4, 8, 8)], ["x"],
                     {"x": {0: "batch"}}),
    "embedding_lstm_gru": (_EmbeddingLSTM.build,
                           lambda b: [np.random.default_rng(b).integers(0, 12, (b, 5))],
                           ["tokens"], {"tokens": {0: "batch"}}),
    "transformer_encoder": (_Encoder.build, lambda b: [_floats(b, 3 + b, 8)], ["src"],
                            {"src": {0: "batch", 1: "sequence"}}),
    "attention": (_Attention.build,
                  lambda b: [_floats(b, 4, 8), _floats(b, 5, 8, seed=2), _mask(b, 5)],
                  ["q", "kv", "pad"], {"q": {0: "batch"}, "kv": {0: "batch"},
                                       "pad": {0: "batch"}}),
    "conv1d_transposed": (_conv1d_transposed, lambda b: [_floats(b, 2, 17)], ["x"],
                          {"x": [0]}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_exported_models_match_ember_and_torch(case):
    make, inputs, names, axes = CASES[case]
    e_model, t_model = _pair(make)
    example = [ember.tensor(a) for a in inputs(2)]
    data = _export(e_model, tuple(example), input_names=names, dynamic_axes=axes)
    onnx.checker.check_model(onnx.load_from_string(data))
    for batch in (2, 3):  # the traced batch size, and another through the dynamic axis
        arrays = inputs(batch)
        got = _run(data, dict(zip(names, arrays)))
        ours = _flat(e_model(*[ember.tensor(a) for a in arrays]))
        with torch.no_grad():
            theirs = _flat(t_model(*[torch.from_numpy(a.copy()) for a in arrays]))
        assert len(got) == len(ours) == len(theirs)
        for g, e, t in zip(got, ours, theirs):
            assert g.shape == tuple(e.shape) == tuple(t.shape)
            np.testing.assert_allclose(g, _numpy(e), rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(g, t.numpy(), rtol=1e-5, atol=1e-5)


def test_graph_io_names_initializers_and_dynamic_dims():
    e_model, _ = _pair(_mlp)
    data = _export(e_model, (ember.randn(4, 6),), input_names=["features"],
                   output_names=["probs"], dynamic_axes={"features": [0], "probs": [0]},
                   do_constant_folding=False)
    graph = onnx.load_from_string(data).graph
    assert [i.name for i in graph.input] == ["features"]
    assert [o.name for o in graph.output] == ["probs"]
    # torch's names for list-form dynamic axes; the other sizes are static
    in_dims = graph.input[0].type.tensor_type.shape.dim
    assert [(d.dim_param, d.dim_value) for d in in_dims] == [("features_dynamic_axes_1", 0),
                                                             ("", 6)]
    out_dims = graph.output[0].type.tensor_type.shape.dim
    assert out_dims[0].dim_param == "probs_dynamic_axes_1" and out_dims[1].dim_value == 3
    # without folding, the initializers are the state_dict's tensors under their names
    state = e_model.state_dict()
    assert {t.name for t in graph.initializer} == set(state)
    for t in graph.initializer:
        np.testing.assert_array_equal(onnx.numpy_helper.to_array(t), state[t.name].numpy())


def test_constant_folding_precomputes_weight_transposes_and_batch_norm():
    e_model, _ = _pair(_LeNet.build)
    x = ember.tensor(_floats(2, 1, 12, 12))
    folded = onnx.load_from_string(_export(e_model, (x,), input_names=["x"]))
    plain = onnx.load_from_string(_export(e_model, (x,), input_names=["x"],
                                          do_constant_folding=False))
    ops = [n.op_type for n in folded.graph.node]
    assert "Transpose" not in ops and "Sqrt" not in ops
    assert len(folded.graph.node) < len(plain.graph.node)
    expected = _numpy(e_model(x))
    for model in (folded, plain):
        got = _run(model.SerializeToString(), {"x": x.numpy()})[0]
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def _many_ops(fw, x):
    """Element-wise, reduction and shape operations written once for ember and torch."""
    F = fw.nn.functional
    return (F.leaky_relu(x, 0.1), F.elu(x), F.selu(x), F.celu(x, 0.5), F.softplus(x, beta=2),
            F.hardtanh(x), F.relu6(x), F.hardsigmoid(x), F.hardswish(x), F.threshold(x, 0.1, 2.),
            F.logsigmoid(x), F.mish(x), F.gelu(x, approximate="tanh"), F.gelu(x), F.silu(x),
            x.clamp(-1, 1), x.clamp(min=0), x // 2, x % 3, x.pow(2), 2 ** x, x.abs().sqrt(),
            x.abs().rsqrt(), x.sigmoid(), x.tanh(), x.exp(), x.abs().log1p(),
            x.sum(), x.mean(), x.max(), x.argmax(1), x.max(1).values, x.min(0).indices,
            x.amax(1), x.logsumexp(1), x.prod(1), x.var(1), x.std(), x.norm(),
            x.softmax(0), x.log_softmax(1),
            x.t(), x[0], x[:, -1], x[..., None], x[1:3, ::2], x[-2:], x.narrow(1, 1, 2),
            x.select(1, 2), x.unbind(0), x.split(2, 1), x.chunk(2, 0), x.flip(0),
            x.repeat(2, 1), F.pad(x, (1, 2)), x.unsqueeze(0).expand(3, 4, 5), x.reshape(2, 10),
            x.view(-1), fw.cat([x, x * 2], 0), fw.stack([x, x], 1), x.tril(), x.triu(1),
            fw.where(x > 0, x, 0.0), x.masked_fill(x > 0, -1.0), (x > 0) & (x < 0.5),
            x.to(fw.float64), x.int() + 1, (x * 3).int() // 2, (x * 5).long() % 3,
            fw.einsum("ij,kj->ik", x, x), x @ x.t(), fw.addmm(x[:, 0], x, x.t(), beta=0.5, alpha=2.))


@pytest.mark.parametrize("opset", [14, 17, 20])
def test_operators_match_ember_and_torch(opset):
    array = _floats(4, 5)
    data = _export(lambda x: _many_ops(ember, x), (ember.tensor(array),),
                   input_names=["x"], opset_version=opset)
    got = _run(data, {"x": array})
    ours = _flat(_many_ops(ember, ember.tensor(array)))
    theirs = _flat(_many_ops(torch, torch.from_numpy(array.copy())))
    assert len(got) == len(ours) == len(theirs)
    for i, (g, e, t) in enumerate(zip(got, ours, theirs)):
        assert g.dtype == e.numpy().dtype == t.numpy().dtype, i
        np.testing.assert_allclose(g, e.numpy(), rtol=1e-5, atol=1e-5, err_msg=str(i))
        np.testing.assert_allclose(g, t.numpy(), rtol=1e-5, atol=1e-5, err_msg=str(i))


def test_file_path_and_file_like_targets(tmp_path):
    model, _ = _pair(_mlp)
    x = ember.randn(2, 6)
    path = tmp_path / "mlp.onnx"
    ember.onnx.export(model, (x,), str(path), input_names=["x"])
    ember.onnx.export(model, x, tmp_path / "mlp2.onnx", input_names=["x"])  # a PathLike
    buffer = io.BytesIO()
    ember.onnx.export(model, (x,), buffer, input_names=["x"])
    assert path.read_bytes() == buffer.getvalue() == (tmp_path / "mlp2.onnx").read_bytes()
    onnx.checker.check_model(str(path))
    np.testing.assert_allclose(_run(path.read_bytes(), {"x": x.numpy()})[0], _numpy(model(x)),
                               rtol=1e-5, atol=1e-6)


def test_export_params_false_and_initializers_as_inputs():
    model, _ = _pair(_mlp)
    x = ember.randn(3, 6)
    state = {k: v.numpy() for k, v in model.state_dict().items()}
    data = _export(model, (x,), input_names=["x"], export_params=False)
    graph = onnx.load_from_string(data).graph
    assert not graph.initializer
    assert [i.name for i in graph.input] == ["x"] + list(state)
    got = _run(data, {"x": x.numpy(), **state})[0]
    np.testing.assert_allclose(got, _numpy(model(x)), rtol=1e-5, atol=1e-6)

    kept = onnx.load_from_string(_export(model, (x,), input_names=["x"],
                                         keep_initializers_as_inputs=True)).graph
    assert {i.name for i in kept.input} == {"x"} | {t.name for t in kept.initializer}


def test_unsupported_operator_raises_torchs_error():
    with pytest.raises(UnsupportedOperatorError,
                       match="Exporting the operator 'ember::i0' to ONNX opset version 17 "
                             "is not supported"):
        _export(lambda x: ember.special.i0(x), (ember.randn(3),))
    assert issubclass(UnsupportedOperatorError, OnnxExporterError)
    assert issubclass(OnnxExporterError, RuntimeError)
    with pytest.raises(UnsupportedOperatorError, match="added in version 14"):
        _export(lambda x: x.tril(), (ember.randn(3, 3),), opset_version=13)
    # torch's message for the same situation
    message = str(torch.onnx.errors.UnsupportedOperatorError("aten::i0", 17, None))
    assert message == str(UnsupportedOperatorError("aten::i0", 17, None))


def test_bad_arguments():
    model = ember.nn.Linear(2, 2)
    with pytest.raises(ValueError, match="Unsupported ONNX opset version: 9"):
        _export(model, (ember.randn(1, 2),), opset_version=9)
    # dynamo=True (torch's newer exporter) traces too, and writes the same kind of model
    assert onnx.load_from_string(_export(model, (ember.randn(1, 2),), dynamo=True)).graph.node
    with pytest.raises(TypeError, match="input 0 is a str"):
        _export(model, ("x",))
    with pytest.raises(ValueError, match="out of range"):
        _export(model, (ember.randn(1, 2),), input_names=["x"], dynamic_axes={"x": [2]})


def test_graph_that_depends_on_a_dynamic_axis_is_refused():
    model = ember.nn.LSTM(3, 4, batch_first=True).eval()
    x = ember.randn(2, 5, 3)
    with pytest.raises(OnnxExporterError, match="dynamic axis 'sequence'"):
        _export(model, (x,), input_names=["x"], dynamic_axes={"x": {1: "sequence"}})
    # a static sequence length exports (the LSTM unrolled), and the batch stays dynamic
    data = _export(model, (x,), input_names=["x"], dynamic_axes={"x": {0: "batch"}})
    x3 = ember.randn(3, 5, 3)
    for got, expected in zip(_run(data, {"x": x3.numpy()}), _flat(model(x3))):
        np.testing.assert_allclose(got, _numpy(expected), rtol=1e-5, atol=1e-6)


def test_training_modes():
    model = ember.nn.Sequential(ember.nn.Linear(3, 3), ember.nn.Dropout(0.5))
    model.train()
    x = ember.randn(4, 3)
    data = _export(model, (x,), input_names=["x"])  # EVAL: dropout is the identity
    assert model.training and all(m.training for m in model.modules())
    model.eval()
    np.testing.assert_allclose(_run(data, {"x": x.numpy()})[0], _numpy(model(x)),
                               rtol=1e-5, atol=1e-6)
    model.train()
    with pytest.raises(OnnxExporterError, match="random numbers"), \
            pytest.warns(ember.jit.TracerWarning):
        _export(model, (x,), training=ember.onnx.TrainingMode.PRESERVE)
    assert [int(m) for m in ember.onnx.TrainingMode] == [int(m) for m in (
        torch.onnx.TrainingMode.EVAL, torch.onnx.TrainingMode.PRESERVE,
        torch.onnx.TrainingMode.TRAINING)]


def test_is_in_onnx_export():
    seen = []

    class Probe(ember.nn.Module):
        def forward(self, x):
            seen.append(ember.onnx.is_in_onnx_export())
            return x * 2

    _export(Probe(), (ember.randn(2),))
    assert seen and all(seen) and not ember.onnx.is_in_onnx_export()


def test_missing_onnx_package_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(ImportError, match=r"pip install onnx"):
        _export(ember.nn.ReLU(), (ember.randn(2),))


def test_script_module_function_and_bound_forward():
    model, _ = _pair(_mlp)
    x = ember.randn(3, 6)
    expected = _numpy(model(x))
    traced = ember.jit.trace(model, x)
    for target in (traced, model.forward):
        data = _export(target, (x,))
        graph = onnx.load_from_string(data).graph
        assert [i.name for i in graph.input] == ["input"]
        assert {t.name for t in graph.initializer} >= {"0.bias", "3.bias", "6.bias"}
        np.testing.assert_allclose(_run(data, {"input": x.numpy()})[0], expected,
                                   rtol=1e-5, atol=1e-6)
    scaled = ember.jit.trace(lambda a, b: a * 2 + b, (x, x))
    data = _export(scaled, (x, x))
    assert [i.name for i in onnx.load_from_string(data).graph.input] == ["a", "b"]
    np.testing.assert_allclose(_run(data, {"a": x.numpy(), "b": x.numpy()})[0],
                               _numpy(x * 2 + x), rtol=1e-6)
