"""ember.jit against eager ember and torch.jit: tracing (MLP, CNN, LSTM step, tuple/dict
outputs, buffers), gradients through traced modules, TracerWarning and check_trace as torch,
save/load (also in a fresh process without the model's class, and refusing a tampered file),
and the optimisation passes (same results, fewer nodes)."""

import json
import os
import subprocess
import sys
import warnings
import zipfile

import numpy as np
import pytest
import torch

import ember
from conftest import assert_grads_match, assert_same, to_torch
from ember.jit import passes

SRC = os.path.join(os.path.dirname(__file__), "..", "..", "src")


def _mlp(nn):
    return nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 8), nn.ReLU(),
                         nn.Linear(8, 3), nn.Sigmoid())


def _cnn(nn):
    return nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Conv2d(4, 3, 3), nn.Flatten(), nn.Linear(3, 5))


class _WithBuffer:
    """One definition of a module with a buffer, for both frameworks."""

    @staticmethod
    def build(nn, fw):
        class Scaled(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)
                self.register_buffer("scale", fw.arange(1.0, 5.0))
                self.register_buffer("temp", fw.ones(4), persistent=False)

            def forward(self, x):
                return self.fc(x) * self.scale + self.temp
        return Scaled()


def _pair(make, seed=0, dtype=np.float32):
    """The same model in ember and torch, with the same weights and buffers."""
    e_model = make(ember.nn)
    t_model = make(torch.nn)
    rng = np.random.default_rng(seed)
    state = {}
    for name, value in e_model.state_dict().items():
        if value.dtype.is_floating_point:
            array = rng.standard_normal(tuple(value.shape)).astype(dtype) * 0.5
            if "running_var" in name:
                array = np.abs(array) + 0.5
        else:
            array = value.numpy()
        state[name] = array
    e_model.load_state_dict({k: ember.tensor(v) for k, v in state.items()})
    t_model.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in state.items()})
    if dtype == np.float64:
        e_model.double()
        t_model.double()
    return e_model, t_model


def _inputs(shape, seed=1, dtype=np.float32):
    array = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return ember.tensor(array), torch.from_numpy(array.copy())


def _quiet_trace(fn, args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.jit.trace(fn, args, **kwargs)


# ---------------------------------------------------------------- tracing


@pytest.mark.parametrize("make,shape", [(_mlp, (5, 6)), (_cnn, (2, 2, 6, 6))],
                         ids=["mlp", "cnn"])
def test_traced_models_match_eager_and_torch(make, shape):
    e_model, t_model = _pair(make)
    e_model.eval()
    t_model.eval()
    x, tx = _inputs(shape)
    traced = ember.jit.trace(e_model, x)
    t_traced = _quiet_trace(t_model, tx)
    assert isinstance(traced, ember.jit.ScriptModule)
    x2, tx2 = _inputs(shape, seed=7)  # other values, same shape: the trace generalises
    assert_same(traced(x2), t_model(tx2), rtol=1e-5, atol=1e-5)
    assert_same(traced(x2), t_traced(tx2), rtol=1e-5, atol=1e-5)
    assert np.array_equal(traced(x2).detach().numpy(), e_model(x2).detach().numpy())
    assert [n for n, _ in traced.named_parameters()] == \
        [n for n, _ in t_traced.named_parameters()]
    assert list(traced.state_dict()) == list(t_traced.state_dict())
    # parameters are shared with the original module, as torch.jit.trace shares them
    assert all(a is b for a, b in zip(traced.parameters(), e_model.parameters()))


def test_batch_size_and_meta_device():
    e_model, _ = _pair(_mlp)
    traced = ember.jit.trace(e_model, ember.randn(5, 6))
    assert traced(ember.randn(9, 6)).shape == (9, 3)
    meta = traced.to("meta")
    out = meta(ember.empty(3, 6, device="meta"))
    assert out.device.type == "meta" and out.shape == (3, 3) and out.dtype is ember.float32


def test_lstm_step():
    e_cell, t_cell = _pair(lambda nn: nn.LSTMCell(5, 7))
    x, tx = _inputs((3, 5))
    h, th = _inputs((3, 7), seed=2)
    c, tc = _inputs((3, 7), seed=3)

    class Step(ember.nn.Module):
        def __init__(self, cell):
            super().__init__()
            self.cell = cell

        def forward(self, x, h, c):
            return self.cell(x, (h, c))
    traced = ember.jit.trace(Step(e_cell), (x, h, c))
    x2, tx2 = _inputs((3, 5), seed=9)
    assert_same(traced(x2, h, c), t_cell(tx2, (th, tc)), rtol=1e-5, atol=1e-6)
    assert isinstance(traced(x2, h, c), tuple)


def test_tuple_and_dict_outputs():
    def f(a, b):
        s = a + b
        return (s * 2, {"exp": s.exp(), "prod": a.matmul(b.t())}, [a - b, a / 2])
    ea, ta = _inputs((3, 4))
    eb, tb = _inputs((3, 4), seed=5)
    with pytest.raises(RuntimeError, match="pass strict=False"):
        _quiet_trace(f, (ta, tb))
    with pytest.raises(RuntimeError, match="pass strict=False"):
        ember.jit.trace(f, (ea, eb))
    traced = ember.jit.trace(f, (ea, eb), strict=False)
    t_traced = _quiet_trace(f, (ta, tb), strict=False)
    out, t_out = traced(eb, ea), t_traced(tb, ta)
    assert isinstance(out, tuple) and isinstance(out[1], dict) and isinstance(out[2], list)
    assert_same(out[0], t_out[0])
    assert list(out[1]) == list(t_out[1])
    assert_same(out[1]["exp"], t_out[1]["exp"])
    assert_same(out[1]["prod"], t_out[1]["prod"])
    assert_same(out[2], t_out[2])
    assert "return" in str(traced.graph) and "def f(" in traced.code


def test_module_with_buffers():
    e_model = _WithBuffer.build(ember.nn, ember)
    t_model = _WithBuffer.build(torch.nn, torch)
    t_model.load_state_dict({k: to_torch(v) for k, v in e_model.state_dict().items()})
    x, tx = _inputs((2, 4))
    traced = ember.jit.trace(e_model, x)
    t_traced = _quiet_trace(t_model, tx)
    assert_same(traced(x), t_traced(tx))
    # the original module's state_dict (torch's traced module also lists the non-persistent
    # buffer "temp"; ember keeps the module's persistence)
    assert list(traced.state_dict()) == list(t_model.state_dict()) == \
        ["scale", "fc.weight", "fc.bias"]
    assert sorted(n for n, _ in traced.named_buffers()) == \
        sorted(n for n, _ in t_traced.named_buffers())
    assert 'prim::GetAttr[name="scale"]' in str(traced.graph)
    # buffers are read at each call: a change to the module's buffer is seen
    with ember.no_grad():
        e_model.scale.mul_(2)
    assert np.allclose(traced(x).detach().numpy(), e_model(x).detach().numpy())


def test_in_place_ops_are_recorded():
    def f(x):
        y = x * 2
        y.add_(1)     # the direct (ufunc out=) path is off while tracing
        y += x
        z = ember.zeros(3)  # does not depend on the input: a constant
        return y * z.sum() + y
    x = ember.randn(3)
    traced = ember.jit.trace(f, x)
    other = ember.randn(3)
    assert np.allclose(traced(other).detach().numpy(), f(other).detach().numpy())
    assert any(n.kind == "copy_" for n in traced.graph.nodes)


def test_unrecorded_in_place_change_is_refused():
    def f(x):
        y = x * 2
        y.t_()  # an in-place view op: not recorded
        return y + 1
    with pytest.raises(RuntimeError, match="could not record"):
        ember.jit.trace(f, ember.randn(3, 3))


def test_direct_writes_are_recorded_as_torch_records_them():
    """fill_, copy_, zero_ and indexed assignments without autograd replay on new inputs."""
    def f(x):
        y = x * 2
        y[0] = 0.5
        y[1:] += x[1:]
        z = ember.empty_like(x) if isinstance(x, ember.Tensor) else torch.empty_like(x)
        z.copy_(y)
        z[2:].fill_(3.0)
        y.zero_()
        return z + y
    example, new = np.arange(4.0), np.array([5.0, -1.0, 2.0, 7.0])
    traced = ember.jit.trace(f, ember.tensor(example))
    reference = torch.jit.trace(f, torch.tensor(example))
    assert_same(traced(ember.tensor(new)), reference(torch.tensor(new)))


def test_train_eval_flags_follow_the_module():
    e_model, _ = _pair(_cnn)
    e_model.eval()
    traced = ember.jit.trace(e_model, ember.randn(1, 2, 6, 6))
    assert traced.training is False and traced.get_submodule("1").training is False
    traced.train()
    assert traced.training and traced.get_submodule("1").training


def test_gradients_through_traced_module_match_eager_and_torch():
    e_model, t_model = _pair(_mlp, dtype=np.float64)
    x, tx = _inputs((4, 6), dtype=np.float64)
    traced = ember.jit.trace(e_model, x)
    traced(x).pow(2).sum().backward()
    traced_grads = [p.grad.numpy().copy() for p in traced.parameters()]
    e_model.zero_grad()
    e_model(x).pow(2).sum().backward()
    t_model(tx).pow(2).sum().backward()
    for g, p, tp in zip(traced_grads, e_model.parameters(), t_model.parameters()):
        np.testing.assert_allclose(g, p.grad.numpy(), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(g, tp.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_input_gradients_and_double_backward():
    def f(x, y):
        return (x * y).tanh() + x.sin() * y
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    traced = ember.jit.trace(f, (ember.tensor(a), ember.tensor(b)))
    assert_grads_match(traced, f, a, b, double_backward=True)


# ---------------------------------------------------------------- warnings and checks


def _warnings_of(trace, fn, x):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trace(fn, x, check_trace=False)
    return [str(w.message) for w in caught if w.category.__name__ == "TracerWarning"]


@pytest.mark.parametrize("convert", [
    lambda t: t.item(), lambda t: bool(t > 0), lambda t: int(t), lambda t: float(t),
    lambda t: t.tolist()], ids=["item", "bool", "int", "float", "tolist"])
def test_tracer_warnings_as_torch(convert):
    def f(x):
        value = convert(x.sum())
        return x * (2.0 if value else 3.0)
    e = _warnings_of(ember.jit.trace, f, ember.ones(3))
    t = _warnings_of(torch.jit.trace, f, torch.ones(3))
    assert e == t and len(e) == 1
    with pytest.warns(ember.jit.TracerWarning) as record:
        ember.jit.trace(f, ember.ones(3), check_trace=False)
    assert record[0].filename == __file__  # points at the user's line


def test_tracer_warning_class_and_is_tracing():
    seen = []

    def f(x):
        seen.append(ember.jit.is_tracing())
        return x + 1
    ember.jit.trace(f, ember.ones(2), check_trace=False)
    assert seen == [True] and not ember.jit.is_tracing()
    assert issubclass(ember.jit.TracerWarning, Warning)
    assert ember.jit.is_scripting() is False


def test_check_trace_graph_divergence_raises_as_torch():
    def make():
        calls = [0]

        def f(x):
            calls[0] += 1
            return x + 1 if calls[0] == 1 else x * 2
        return f
    with pytest.raises(torch.jit.TracingCheckError):
        _quiet_trace(make(), torch.ones(2))
    with pytest.raises(ember.jit.TracingCheckError, match="Graphs differed"):
        ember.jit.trace(make(), ember.ones(2))


def test_check_trace_output_divergence_warns():
    def f(x):
        return x + ember.tensor(float(np.random.default_rng().standard_normal()))
    with pytest.warns(ember.jit.TracerWarning, match="does not match"):
        ember.jit.trace(f, ember.ones(2))


def test_trace_errors():
    with pytest.raises(RuntimeError, match="Only tensors"):
        ember.jit.trace(lambda x: 3, ember.ones(2), check_trace=False)
    with pytest.raises(TypeError, match="cannot be traced"):
        ember.jit.trace(lambda x, n: x, (ember.ones(2), 3), check_trace=False)
    with pytest.raises(NotImplementedError, match="ember.jit.trace"):
        ember.jit.script(lambda x: x)
    traced = ember.jit.trace(lambda x: x + 1, ember.ones(2))
    with pytest.raises(TypeError, match="expected 1 argument"):
        traced(ember.ones(2), ember.ones(2))


# ---------------------------------------------------------------- save / load


def test_save_load_round_trip(tmp_path):
    e_model, _ = _pair(_cnn)
    e_model.eval()
    x = ember.randn(2, 2, 6, 6)
    traced = ember.jit.trace(e_model, x)
    path = tmp_path / "cnn.pt"
    ember.jit.save(traced, path)
    loaded = ember.jit.load(path)
    assert np.array_equal(loaded(x).detach().numpy(), traced(x).detach().numpy())
    assert list(loaded.state_dict()) == list(traced.state_dict())
    for (k, a), (_, b) in zip(loaded.state_dict().items(), traced.state_dict().items()):
        assert np.array_equal(a.numpy(), b.numpy()), k
    assert str(loaded.graph) == str(traced.graph)
    assert loaded.training is False
    assert all(p.requires_grad for p in loaded.parameters())
    # a file object works too, and a function round-trips
    f = ember.jit.trace(lambda a: (a.exp(), [a * 3]), x)
    buffer = __import__("io").BytesIO()
    f.save(buffer)
    buffer.seek(0)
    g = ember.jit.load(buffer)
    assert np.array_equal(g(x)[1][0].detach().numpy(), (x * 3).detach().numpy())
    assert not list(tmp_path.glob(".*.tmp"))  # the atomic write left no temporary behind


def test_load_in_fresh_process_without_the_class(tmp_path):
    class Private(ember.nn.Module):  # exists only in this test process
        def __init__(self):
            super().__init__()
            self.fc = ember.nn.Linear(4, 3)
            self.register_buffer("shift", ember.arange(3.0))

        def forward(self, x):
            h = self.fc(x).relu() + self.shift
            return {"out": h, "norm": h.pow(2).sum(-1)}
    model = Private()
    x = ember.randn(5, 4)
    path = tmp_path / "private.pt"
    ember.jit.save(ember.jit.trace(model, x, strict=False), str(path))
    ember.save({"x": x}, str(tmp_path / "x.pt"))
    script = (
        "import sys, ember\n"
        f"m = ember.jit.load({str(path)!r})\n"
        f"x = ember.load({str(tmp_path / 'x.pt')!r})['x']\n"
        "out = m(x)\n"
        "assert not any('test_jit' in name for name in sys.modules)\n"
        f"ember.save({{'out': out['out'].detach(), 'norm': out['norm'].detach()}}, "
        f"{str(tmp_path / 'y.pt')!r})\n")
    env = dict(os.environ, PYTHONPATH=os.path.abspath(SRC))
    subprocess.run([sys.executable, "-c", script], check=True, env=env, timeout=120,
                   cwd=str(tmp_path))
    got = ember.load(str(tmp_path / "y.pt"))
    want = model(x)
    assert np.allclose(got["out"].detach().numpy(), want["out"].detach().detach().numpy())
    assert np.allclose(got["norm"].detach().numpy(), want["norm"].detach().detach().numpy())


def _rewrite_graph(src, dst, edit):
    with zipfile.ZipFile(src) as z:
        members = {n: z.read(n) for n in z.namelist()}
    doc = json.loads(members["graph.json"])
    edit(doc)
    members["graph.json"] = json.dumps(doc).encode()
    with zipfile.ZipFile(dst, "w") as z:
        for n, data in members.items():
            z.writestr(n, data)


def test_tampered_file_is_refused(tmp_path):
    traced = ember.jit.trace(ember.nn.Linear(3, 2), ember.randn(1, 3))
    good, bad = tmp_path / "good.pt", tmp_path / "bad.pt"
    traced.save(str(good))

    def evil(doc):
        for node in doc["graph"]["nodes"]:
            if node["kind"] == "op":
                node["op"] = "os_system"
    _rewrite_graph(good, bad, evil)
    with pytest.raises(RuntimeError, match=r"unknown operator 'os_system'.*bad\.pt"):
        ember.jit.load(str(bad))
    with pytest.raises(RuntimeError, match="not an ember.jit archive"):
        ember.save({"a": ember.ones(1)}, str(bad))
        ember.jit.load(str(bad))


# ---------------------------------------------------------------- passes


def _count(graph, kind=None, name=None):
    return sum(1 for n in graph.nodes if (kind is None or n.kind == kind)
               and (name is None or (n.kind == "op" and n.op.name == name)))


def test_dead_code_elimination():
    def f(x):
        unused = x.exp().sum()  # noqa: F841
        return x.sin()
    traced = ember.jit.trace(f, ember.randn(4))
    x = ember.randn(4)
    before = traced(x).detach().numpy().copy()
    n = len(traced.graph.nodes)
    removed = passes.eliminate_dead_code(traced.graph)
    traced._graph_changed()
    assert removed == 2 and len(traced.graph.nodes) == n - 2
    assert _count(traced.graph, name="exp") == 0
    assert np.array_equal(traced(x).detach().numpy(), before)


def test_common_subexpression_elimination():
    def f(x):
        return x.sin() * x.sin() + x.sin()
    traced = ember.jit.trace(f, ember.randn(4))
    x = ember.randn(4)
    before = traced(x).detach().numpy().copy()
    assert _count(traced.graph, name="sin") == 3
    assert passes.eliminate_common_subexpressions(traced.graph) == 2
    traced._graph_changed()
    assert _count(traced.graph, name="sin") == 1
    assert np.array_equal(traced(x).detach().numpy(), before)


def test_cse_does_not_merge_across_in_place_writes():
    def f(x):
        y = x * 1
        a = y.sin()
        y.add_(1)
        return a + y.sin()
    traced = ember.jit.trace(f, ember.randn(3))
    passes.eliminate_common_subexpressions(traced.graph)
    traced._graph_changed()
    x = ember.randn(3)
    assert np.allclose(traced(x).detach().numpy(), f(x).detach().numpy())
    assert _count(traced.graph, name="sin") == 2


def test_freeze_folds_parameters():
    e_model, t_model = _pair(_mlp)
    x, tx = _inputs((5, 6))
    traced = ember.jit.trace(e_model, x)
    with pytest.raises(RuntimeError, match="eval mode"):
        ember.jit.freeze(traced)
    with pytest.raises(RuntimeError, match="eval mode"):
        torch.jit.freeze(_quiet_trace(t_model, tx))
    with pytest.raises(RuntimeError, match="ScriptModule"):
        ember.jit.freeze(e_model)
    traced.eval()
    frozen = ember.jit.freeze(traced)
    assert list(frozen.parameters()) == [] and list(frozen.state_dict()) == []
    assert _count(traced.graph, "get_attr") == 6 and _count(frozen.graph, "get_attr") == 0
    # the weight transposes are computed once, at freezing
    assert _count(traced.graph, name="permute") == 3 and _count(frozen.graph, name="permute") == 0
    assert_same(frozen(x), t_model.eval()(tx), rtol=1e-5, atol=1e-6)
    assert passes.fold_constants(frozen.graph) == 0  # nothing left to fold


@pytest.mark.parametrize("make,shape", [(_mlp, (5, 6)), (_cnn, (2, 2, 6, 6))],
                         ids=["mlp", "cnn"])
def test_optimize_for_inference_fuses_and_keeps_results(make, shape, tmp_path):
    e_model, t_model = _pair(make)
    x, tx = _inputs(shape)
    traced = ember.jit.trace(e_model.eval(), x)
    fast = ember.jit.optimize_for_inference(traced)
    t_fast = torch.jit.optimize_for_inference(_quiet_trace(t_model.eval(), tx))
    assert _count(fast.graph, "fused") >= 1
    assert len(fast.graph.nodes) < len(traced.graph.nodes)
    with ember.no_grad():
        assert_same(fast(x), t_fast(tx), rtol=1e-5, atol=1e-5)
        assert np.allclose(fast(x).detach().numpy(), traced(x).detach().numpy(), rtol=1e-6, atol=1e-6)
    fast.save(str(tmp_path / "fast.pt"))
    loaded = ember.jit.load(str(tmp_path / "fast.pt"))
    assert str(loaded.graph) == str(fast.graph)
    assert np.array_equal(loaded(x).detach().numpy(), fast(x).detach().numpy())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fusion_of_pointwise_chain(dtype):
    def f(x, y):
        return ((x * y + 0.5).tanh() * 1.01 - y).sigmoid().exp().neg().abs().sqrt()
    rng = np.random.default_rng(3)
    a, b = (rng.standard_normal((4, 5)).astype(dtype) for _ in range(2))
    traced = ember.jit.trace(f, (ember.tensor(a), ember.tensor(b)))
    graph = passes.clone_graph(traced.graph)
    assert passes.fuse_elementwise(graph) == 1
    fused = ember.jit.ScriptFunction(graph, "f")
    ops_before = len(traced.graph.op_nodes())
    assert len(graph.op_nodes()) == 0 and ops_before == 10
    want = f(ember.tensor(a), ember.tensor(b))
    got = fused(ember.tensor(a), ember.tensor(b))
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6 if dtype == np.float32
                               else 1e-14)
    if dtype == np.float64:
        # with inputs that require grad the fused group runs its primitives (torch's grads)
        def t_f(x, y):
            return ((x * y + 0.5).tanh() * 1.01 - y).sigmoid().exp().neg().abs().sqrt()
        assert_grads_match(fused, t_f, a, b)


def test_fusion_leaves_mixed_dtypes_and_shared_values_alone():
    def f(x, n):
        y = x.exp()
        return y.tanh() + y, (x + n).sin()  # y is read twice; n is cast before the add
    x, n = ember.randn(3), ember.arange(3)
    traced = ember.jit.trace(f, (x, n))
    graph = passes.clone_graph(traced.graph)
    assert passes.fuse_elementwise(graph) == 2
    assert _count(graph, name="exp") == 1  # its output is read twice: it stays a node
    programs = [[step[0] for step in node.params["program"]] for node in graph.nodes
                if node.kind == "fused"]
    assert programs == [["tanh", "add"], ["add", "sin"]]
    cast = [node for node in graph.nodes if node.kind == "op" and node.op.name != "exp"]
    assert len(cast) == 1 and cast[0].inputs[0].dtype == "int64"
    got = ember.jit.ScriptFunction(graph, "f")(x, n)
    want = f(x, n)
    assert all(np.allclose(a.numpy(), b.numpy()) for a, b in zip(got, want))


def test_random_draws_during_tracing_warn():
    net = ember.nn.Sequential(ember.nn.Linear(4, 4), ember.nn.Dropout(0.5))
    with pytest.warns(ember.jit.TracerWarning, match="random numbers"):
        ember.jit.trace(net, ember.randn(2, 4), check_trace=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ember.jit.trace(net.eval(), ember.randn(2, 4))  # eval: no draws, no warning


def test_in_place_write_traced_without_grad_replays_with_grad():
    def f(x, w):
        y = x * 2
        y.mul_(w)  # traced without grad: the op reads y itself
        return y
    traced = ember.jit.trace(f, (ember.randn(3), ember.randn(3)))
    rng = np.random.default_rng(4)
    assert_grads_match(traced, lambda x, w: (x * 2).mul_(w), rng.standard_normal(3),
                       rng.standard_normal(3))


def test_check_inputs_run_the_trace_on_other_inputs():
    def f(x):
        return x.relu() * 2 if x.shape[0] == 2 else x.relu() + 1
    ember.jit.trace(f, ember.randn(2, 3), check_inputs=[(ember.randn(2, 5),)])
    with pytest.raises(ember.jit.TracingCheckError, match="Graphs differed"):
        ember.jit.trace(f, ember.randn(2, 3), check_inputs=[(ember.randn(4, 3),)])
    with pytest.raises(torch.jit.TracingCheckError):
        _quiet_trace(f, torch.randn(2, 3), check_inputs=[(torch.randn(4, 3),)])


def test_shapes_fixed_by_the_trace_give_a_clear_error():
    # sizes written as numbers stay numbers (as in torch); sizes read from x follow x
    traced = ember.jit.trace(lambda x: x.view(2, 16) * 2, ember.randn(2, 1, 4, 4))
    with pytest.raises(RuntimeError, match=r"traced with input shapes \[\(2, 1, 4, 4\)\]"):
        traced(ember.randn(5, 1, 4, 4))


def test_batchnorm_in_training_mode_updates_buffers_as_torch():
    e_model, t_model = _pair(lambda nn: nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2)))
    x, tx = _inputs((3, 1, 5, 5))
    traced = ember.jit.trace(e_model, x, check_trace=False)
    t_traced = _quiet_trace(t_model, tx, check_trace=False)
    assert any(n.kind == "copy_" for n in traced.graph.nodes)  # the running stats' updates
    x2, tx2 = _inputs((3, 1, 5, 5), seed=8)
    assert_same(traced(x2), t_traced(tx2), rtol=1e-5, atol=1e-5)
    for name, value in t_traced.state_dict().items():
        assert_same(traced.state_dict()[name], value, rtol=1e-5, atol=1e-6)
    assert int(traced.state_dict()["1.num_batches_tracked"]) == 2


def test_detach_is_recorded():
    def f(x):
        y = x * 3
        return y.detach() * x + y.data
    traced = ember.jit.trace(f, ember.randn(3))
    assert _count(traced.graph, name="detach") == 2
    rng = np.random.default_rng(6)
    assert_grads_match(traced, f, rng.standard_normal(3))
    a = ember.randn(3)
    assert np.allclose(traced(a).detach().numpy(), f(a).detach().numpy())


def test_detached_parameter_stays_tied_to_the_module():
    class Net(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = ember.nn.Parameter(ember.ones(3))

        def forward(self, x):
            return x * self.w.detach()
    net = Net()
    traced = ember.jit.trace(net, ember.randn(3))
    with ember.no_grad():
        net.w.mul_(2)
    x = ember.randn(3)
    assert np.allclose(traced(x).numpy(), (x * 2).numpy())
    assert not traced(x).requires_grad


def test_captured_tensor_that_requires_grad_is_refused_as_torch():
    w, tw = ember.ones(2, requires_grad=True), torch.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="Cannot insert a Tensor that requires grad"):
        _quiet_trace(lambda x: x * tw, torch.ones(2))
    with pytest.raises(RuntimeError, match="Cannot insert a Tensor that requires grad"):
        ember.jit.trace(lambda x: x * w, ember.ones(2))


def test_cse_merges_equal_small_constants():
    def f(x):
        for _ in range(5):
            x = x * 1.5 + 1.5
        return x
    traced = ember.jit.trace(f, ember.randn(3))
    assert _count(traced.graph, "constant") == 10
    graph = passes.clone_graph(traced.graph)
    passes.eliminate_common_subexpressions(graph)
    assert _count(graph, "constant") == 1 and len(graph.constants) == 1
    x = ember.randn(3)
    assert np.array_equal(ember.jit.ScriptFunction(graph, "f")(x).numpy(), traced(x).numpy())


def test_ops_of_other_threads_are_not_traced():
    import threading

    def f(x):
        worker = threading.Thread(target=lambda: ember.ones(3).exp())
        worker.start()
        worker.join()
        return x.sin()
    traced = ember.jit.trace(f, ember.randn(3))
    assert [n.op.name for n in traced.graph.op_nodes()] == ["sin"]


def test_tracing_a_modules_forward_traces_the_module():
    net = ember.nn.Linear(2, 2)
    traced = ember.jit.trace(net.forward, ember.ones(1, 2))
    assert isinstance(traced, ember.jit.ScriptModule)
    assert [n for n, _ in traced.named_parameters()] == ["weight", "bias"]


def test_fused_graph_follows_eager_promotion_on_other_dtypes():
    def f(x, y):
        return (x + y).tanh() * y
    traced = ember.jit.trace(f, (ember.randn(3), ember.randn(3)))
    fast = ember.jit.optimize_for_inference(traced)
    assert _count(fast.graph, "fused") == 1
    x, y = ember.randn(3, dtype=ember.float64), ember.randn(3)
    got, want = fast(x, y), f(x, y)
    assert got.dtype is want.dtype is ember.float64
    assert np.allclose(got.numpy(), want.numpy())
    assert fast(x, y.double()).dtype is ember.float64


def test_fused_graph_on_inputs_that_broadcast_differently():
    def f(x, y):
        return x.exp().tanh() + y
    fast = ember.jit.optimize_for_inference(
        ember.jit.trace(f, (ember.randn(3), ember.randn(3))))
    assert _count(fast.graph, "fused") == 1
    x, y = ember.randn(3), ember.randn(2, 3)  # y is bigger than the first step's buffer
    assert np.allclose(fast(x, y).numpy(), f(x, y).numpy())
    assert np.allclose(fast(x, y[0]).numpy(), f(x, y[0]).numpy())


def test_deepcopy_of_a_traced_module(tmp_path):
    import copy

    e_model, _ = _pair(_mlp)
    traced = ember.jit.optimize_for_inference(ember.jit.trace(e_model.eval(),
                                                              ember.randn(2, 6)))
    x = ember.randn(2, 6)
    traced(x)
    twin = copy.deepcopy(traced)
    assert np.array_equal(twin(x).numpy(), traced(x).numpy())
    assert twin.graph is not traced.graph
    twin.save(str(tmp_path / "twin.pt"))  # its operators are still the registry's
    assert np.array_equal(ember.jit.load(str(tmp_path / "twin.pt"))(x).numpy(),
                          traced(x).numpy())


def test_lstm_layer_and_transformer_layer():
    e_lstm, t_lstm = _pair(lambda nn: nn.LSTM(4, 5, num_layers=2, batch_first=True))
    x, tx = _inputs((3, 6, 4))
    traced = ember.jit.trace(e_lstm, x)
    out, (h, c) = traced(x)
    t_out, (th, tc) = t_lstm(tx)
    assert_same([out, h, c], [t_out, th, tc], rtol=1e-5, atol=1e-6)

    e_enc, t_enc = _pair(lambda nn: nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0,
                                                               batch_first=True))
    x, tx = _inputs((2, 5, 8), seed=3)
    traced = ember.jit.trace(e_enc.eval(), x)
    fast = ember.jit.optimize_for_inference(traced)
    assert len(fast.graph.nodes) < len(traced.graph.nodes)
    with torch.no_grad():
        want = t_enc.eval()(tx)
    assert_same(traced(x), want, rtol=1e-4, atol=1e-5)
    with ember.no_grad():
        assert_same(fast(x), want, rtol=1e-4, atol=1e-5)
