"""torch.onnx's newer names in ember: ONNXProgram (export(..., dynamo=True)), ExportableModule,
InputObserver, and the ONNX operators of torch.onnx.ops, against torch and onnx's runtimes."""

import os

import numpy as np
import pytest
import torch

import ember

onnx = pytest.importorskip("onnx")


def _net():
    ember.manual_seed(0)
    return ember.nn.Sequential(ember.nn.Linear(4, 3), ember.nn.Tanh()).eval()


def test_dynamo_export_returns_a_program_that_runs_like_the_model(tmp_path):
    net = _net()
    x = ember.randn(5, 4)
    program = ember.onnx.export(net, (x,), dynamo=True, input_names=["x"],
                                dynamic_shapes=({0: "batch"},))
    assert isinstance(program, ember.onnx.ONNXProgram) and program.exported_program is None
    batch = program.model_proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param
    assert batch == "batch"
    other = ember.randn(7, 4)
    expected = net(other).detach().numpy()
    np.testing.assert_allclose(program.call_reference(other)[0].numpy(), expected, rtol=1e-5)
    pytest.importorskip("onnxruntime")
    np.testing.assert_allclose(program(other)[0].numpy(), expected, rtol=1e-5, atol=1e-6)
    path = tmp_path / "net.onnx"
    program.save(path, external_data=True)
    assert os.path.exists(str(path) + ".data")
    reloaded = ember.onnx.ONNXProgram(onnx.load(str(path)))
    np.testing.assert_allclose(reloaded(other)[0].numpy(), expected, rtol=1e-5, atol=1e-6)


def test_program_apply_weights_rename_axes_and_compute_values():
    pytest.importorskip("onnxruntime")
    net = _net()
    x = ember.randn(2, 4)
    program = ember.onnx.export(net, (x,), dynamo=True, input_names=["x"],
                                dynamic_axes={"x": {0: "n"}})
    with ember.no_grad():
        net[0].weight.mul_(2)
    program.apply_weights(net.state_dict())
    np.testing.assert_allclose(program(x)[0].numpy(), net(x).detach().numpy(), rtol=1e-5,
                               atol=1e-6)
    program.rename_axes({"n": "rows"})
    assert program.model_proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "rows"
    matmul = next(node for node in program.model_proto.graph.node
                  if node.op_type in ("Gemm", "MatMul"))
    (value,) = program.compute_values([matmul.output[0]], (x,))
    np.testing.assert_allclose(value.numpy(), (x @ net[0].weight.t()).detach().numpy(),
                               rtol=1e-5, atol=1e-5)


class _Doubler(ember.onnx.ExportableModule):
    def forward(self, x):
        return x * 2

    def example_arguments(self):
        return (ember.randn(3, 2),), None

    def input_names(self):
        return ("input",)

    def output_names(self):
        return ("output",)

    def dynamic_shapes(self):
        return ({0: "batch"},)


def test_exportable_module_exports_itself():
    program = _Doubler().to_onnx()
    graph = program.model_proto.graph
    assert [i.name for i in graph.input] == ["input"] and graph.output[0].name == "output"
    assert graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    # torch's export defaults to dynamo=True; ember's to its tracing exporter writing f
    assert isinstance(ember.onnx.export(_Doubler(), dynamo=True), ember.onnx.ONNXProgram)
    with pytest.raises(TypeError):
        ember.onnx.ExportableModule()  # abstract, as torch's


def test_input_observer_matches_torch():
    results = []
    for lib in (torch, ember):
        lib.manual_seed(0)
        net = lib.nn.Linear(3, 2)
        observer = lib.onnx.InputObserver()
        with observer(net):
            net(lib.randn(4, 3))
            net(lib.randn(5, 3))
        shapes = observer.infer_dynamic_shapes()
        assert shapes[0][0] is lib.export.Dim.DYNAMIC
        results.append((observer.num_obs(), [tuple(t.shape) for t in
                                             observer.infer_arguments()],
                        [sorted(axes) for axes in shapes]))
        assert net.forward.__func__ is type(net).forward  # the method is restored
    (ours_count, ours_args, ours_shapes), (theirs_count, theirs_args, theirs_shapes) = \
        results[1], results[0]
    assert ours_count == theirs_count == 2 and ours_args == theirs_args == [(4, 3)]
    assert ours_shapes == theirs_shapes == [[0]]


def test_input_observer_checks_an_export_against_its_calls():
    pytest.importorskip("onnxruntime")
    net = _net()
    observer = ember.onnx.InputObserver()
    with observer(net):
        net(ember.randn(2, 4))
        net(ember.randn(6, 4))
    program = ember.onnx.export(net, observer.infer_arguments(), dynamo=True,
                                dynamic_shapes=observer.infer_dynamic_shapes())
    report = observer.check_discrepancies(program)
    assert [row["passed"] for row in report] == [True, True]


def _pair(shape, seed, dtype=np.float32):
    array = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return torch.tensor(array), ember.tensor(array)


@pytest.mark.parametrize("interleaved", [False, True])
@pytest.mark.parametrize("layout", ["4d", "3d", "positions", "partial"])
def test_rotary_embedding_matches_torch(interleaved, layout):
    x4 = _pair((2, 3, 5, 8), 0)
    cos, sin = _pair((2, 5, 4), 1), _pair((2, 5, 4), 2)
    kwargs, extra = {"interleaved": interleaved}, ()
    x = x4
    if layout == "3d":
        x = (x4[0].permute(0, 2, 1, 3).reshape(2, 5, 24),
             x4[1].permute(0, 2, 1, 3).reshape(2, 5, 24))
        kwargs["num_heads"] = 3
    elif layout == "positions":
        cos, sin = _pair((10, 4), 3), _pair((10, 4), 4)
        positions = np.array([[0, 2, 4, 6, 8], [1, 3, 5, 7, 9]])
        extra = ((torch.tensor(positions), ember.tensor(positions)),)
    elif layout == "partial":
        cos, sin = _pair((2, 5, 2), 5), _pair((2, 5, 2), 6)
        kwargs["rotary_embedding_dim"] = 4
    theirs = torch.onnx.ops.rotary_embedding(x[0], cos[0], sin[0],
                                             *(e[0] for e in extra), **kwargs)
    ours = ember.onnx.ops.rotary_embedding(x[1], cos[1], sin[1], *(e[1] for e in extra),
                                           **kwargs)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-6)


ATTENTION_CASES = {
    "plain": {},
    "causal": {"is_causal": True},
    "scaled_softcap": {"scale": 0.3, "softcap": 2.0, "qk_matmul_output_mode": 2},
    "mask_mode1": {"mask": True, "qk_matmul_output_mode": 1},
    "softmax_mode3": {"qk_matmul_output_mode": 3},
    "gqa_past": {"gqa": True, "past": True},
    "three_d": {"three_d": True},
}


@pytest.mark.parametrize("case", sorted(ATTENTION_CASES))
def test_attention_matches_torch(case):
    options = dict(ATTENTION_CASES[case])
    kv_heads = 2 if options.pop("gqa", False) else 4
    q, k, v = _pair((2, 4, 3, 6), 0), _pair((2, kv_heads, 5, 6), 1), \
        _pair((2, kv_heads, 5, 6), 2)
    inputs = [q, k, v]
    if options.pop("mask", False):
        inputs.append(_pair((3, 5), 3))
    if options.pop("past", False):
        inputs += [(None, None), _pair((2, kv_heads, 2, 6), 4), _pair((2, kv_heads, 2, 6), 5)]
    if options.pop("three_d", False):
        inputs = [(t.transpose(1, 2).reshape(2, t.shape[2], -1),
                   e.transpose(1, 2).reshape(2, e.shape[2], -1)) for t, e in inputs]
        options.update(q_num_heads=4, kv_num_heads=4)
    theirs = torch.onnx.ops.attention(*(t for t, _ in inputs), **options)
    ours = ember.onnx.ops.attention(*(e for _, e in inputs), **options)
    for mine, expected in zip(ours, theirs):
        np.testing.assert_allclose(mine.numpy(), expected.numpy(), rtol=1e-4, atol=1e-5)


def test_symbolic_ops_give_zeros_and_refuse_export():
    for lib in (torch, ember):
        out = lib.onnx.ops.symbolic("custom::Op", [lib.ones(2)], {"a": 1},
                                    dtype=lib.float32, shape=(3, 2))
        assert out.shape == (3, 2) and not out.any()
        many = lib.onnx.ops.symbolic_multi_out("custom::Op", [], dtypes=[1, 7],
                                               shapes=[(1,), (2,)])
        assert [str(t.dtype).split(".")[-1] for t in many] == ["float32", "int64"]

    class UsesSymbolic(ember.nn.Module):
        def forward(self, x):
            y = ember.onnx.ops.symbolic("custom_domain::CustomOp", (x * 2, None, x),
                                        {"alpha": 1.5, "names": ["a", "b"]}, dtype=x.dtype,
                                        shape=x.shape, version=2)
            return y + 1

    model, x = UsesSymbolic(), ember.ones(2, 3)
    assert model(x).tolist() == [[1.0] * 3] * 2  # zeros from the placeholder, plus one
    for folding in (True, False):  # never folded into a constant, even from constants
        proto = ember.onnx.export_model_proto(model, (x,), do_constant_folding=folding)
        (node,) = [n for n in proto.graph.node if n.domain == "custom_domain"]
        assert node.op_type == "CustomOp" and node.input[1] == "" and node.input[2] == "x"
        assert {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute} == \
            {"alpha": 1.5, "names": [b"a", b"b"]}
        assert ("custom_domain", 2) in [(o.domain, o.version) for o in proto.opset_import]

    class NoInputs(ember.nn.Module):
        def forward(self, x):
            return x + ember.onnx.ops.symbolic("custom::Op", [], dtype=x.dtype, shape=x.shape)

    with pytest.raises(NotImplementedError, match="without tensor inputs"):
        ember.onnx.export(NoInputs(), (ember.ones(2),), dynamo=True)
    assert ember.onnx.ops.aten_decompositions() == {}


def test_legacy_module_paths_exist():
    import importlib

    for name in ["utils", "operators", "symbolic_helper",
                 *(f"symbolic_opset{i}" for i in range(7, 21))]:
        assert importlib.import_module(f"ember.onnx.{name}").__all__ == []
    assert set(torch.onnx.__all__) <= set(dir(ember.onnx))
