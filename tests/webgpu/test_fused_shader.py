"""Fused element-wise chains as one WGSL shader on the webgpu device (``webgpu/_fused.py``):
every op with a fusion rule has a WGSL form; a chain runs as one dispatch and gives what the
same chain gives step by step on webgpu, on the CPU and in torch; operands broadcast; chains
the shader cannot run fall back to their steps.

Tolerances. Against the steps on webgpu: the forms of the device's own kernels are the same
WGSL, so only the compiler's freedom inside one shader (contracting a multiply and an add)
separates them; the forms written for the fused shader (hypot, logaddexp, the inverse
hyperbolics, ...) replace a NumPy fallback and were measured within 4 float32 ulps of float64
NumPy (ulp 2**-23 ~ 1.2e-7 relative): rtol 2e-6. Against the CPU and torch: the device's exp,
log, sin, ... are WGSL builtins, within a few ulps on lavapipe (Vulkan allows 3 ulps for exp
and log, and an absolute 2**-21 for log near 1), so rtol 2e-5 as the device's other tests,
and atol 1e-5 for results that cancel to near 0 (logaddexp of nearly opposite inputs,
log of values near 1).
"""

import numpy as np
import pytest

import ember
from ember.jit._passes import FusedOp
from ember.ops._registry import registry
from ember.webgpu import _fused, _runtime

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.skipif(not ember.webgpu.is_available(),
                                reason=f"webgpu unavailable: {_runtime.probe().reason}")

FUSIBLE = {name: ops[0] for name, ops in registry.items() if ops[0].fuse is not None}

# inputs inside each op's domain (the others: normal values times 2)
DOMAIN = {
    "log": "positive", "log2": "positive", "log10": "positive", "sqrt": "positive",
    "rsqrt": "positive", "log1p": "above -1", "asin": "unit", "acos": "unit", "atanh": "unit",
    "acosh": "above 1", "tan": "unit",
}


# lavapipe's asin and acos builtins (the device's own kernels, which the chain's steps run
# too: checked against them to 2e-6 above) are within 4e-4 of float64 NumPy (measured on these
# inputs in (-0.99, 0.99))
BUILTIN_RTOL = {"asin": 1e-3, "acos": 1e-3}


def _values(name, shape, seed):
    x = np.random.default_rng(seed).normal(size=shape).astype(np.float32) * 2
    domain = DOMAIN.get(name)
    if domain == "positive":
        return np.abs(x) + np.float32(0.05)
    if domain == "above -1":
        return np.abs(x) - np.float32(0.9)
    if domain == "unit":
        return np.tanh(x).astype(np.float32) * np.float32(0.99)
    if domain == "above 1":
        return np.abs(x) + np.float32(1)
    return x


def _torch_op(name):
    if name == "softsign":
        return torch.nn.functional.softsign
    return getattr(torch, name.lstrip("_"))


def _dispatches():
    return _runtime.runtime().dispatched


def _one_dispatch(fn, *args):
    """``fn(*args)``, checking that it records exactly one dispatch."""
    before = _dispatches()
    result = fn(*args)
    assert _dispatches() - before == 1
    return result


def _close(got, expected, rtol, atol):
    np.testing.assert_allclose(np.asarray(got), np.asarray(expected), rtol=rtol, atol=atol,
                               equal_nan=True)


def _on_gpu(*arrays):
    return [ember.tensor(a).to("webgpu") for a in arrays]


def test_every_fusion_rule_has_a_wgsl_form():
    assert len(FUSIBLE) == 45
    missing = [name for name, op in FUSIBLE.items() if _fused.wgsl_form(op.fuse) is None]
    assert missing == []


@pytest.mark.parametrize("name", sorted(FUSIBLE))
def test_each_op_in_a_chain_is_one_dispatch(name):
    """``op`` then ``mul`` by a broadcast row: one dispatch, the steps' result on webgpu,
    the CPU chain's and torch's."""
    op = FUSIBLE[name]
    if op.fuse.arity == 1:
        program = [[name, [0], {}], ["mul", [-1, 1], {}]]
        inputs = [_values(name, (6, 40), 0), _values("", (40,), 1)]
    else:
        program = [[name, [0, 1], {}], ["mul", [-1, 2], {}]]
        inputs = [_values(name, (6, 40), 0), _values(name, (6, 1), 1), _values("", (40,), 2)]
    fused = FusedOp(program, [op, FUSIBLE["mul"]])
    got = _one_dispatch(fused, *_on_gpu(*inputs)).cpu().numpy()
    steps = fused._unfused(_on_gpu(*inputs)).cpu().numpy()
    _close(got, steps, rtol=2e-6, atol=1e-7)
    rtol = BUILTIN_RTOL.get(name, 2e-5)
    _close(got, fused(*map(ember.tensor, inputs)).numpy(), rtol=rtol, atol=1e-5)
    t = [torch.tensor(a) for a in inputs]
    expected = _torch_op(name)(*t[:-1]) * t[-1]
    _close(got, expected.numpy(), rtol=rtol, atol=1e-5)


SPECIALS = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 1e-30, 1e30,
                     88.0, -88.0, 1e-6], np.float32)


@pytest.mark.parametrize("name", sorted(FUSIBLE))
def test_special_values_as_the_steps_give_them(name):
    """NaN, infinities, signed zeros, tiny and huge values: NaN where the steps give NaN,
    the same infinities and zeros."""
    op = FUSIBLE[name]
    if op.fuse.arity == 1:
        program, inputs = [[name, [0], {}], ["neg", [-1], {}]], [SPECIALS]
    else:
        program = [[name, [0, 1], {}], ["neg", [-1], {}]]
        inputs = [SPECIALS[:, None], SPECIALS[None, :]]  # every pair, by broadcasting
    fused = FusedOp(program, [op, FUSIBLE["neg"]])
    got = _one_dispatch(fused, *_on_gpu(*inputs)).cpu().numpy()
    steps = fused._unfused(_on_gpu(*inputs)).cpu().numpy()
    cpu = fused(*map(ember.tensor, inputs)).numpy()
    assert np.array_equal(np.isnan(got), np.isnan(cpu))
    finite = np.isfinite(cpu)
    assert np.array_equal(got[~finite & ~np.isnan(cpu)], cpu[~finite & ~np.isnan(cpu)])
    # the device's sin/cos/tan of 1e30 are its builtins' (no argument reduction that far)
    _close(got, steps, rtol=2e-6, atol=1e-7)
    if _fused.rule_name(op.fuse) in _fused._OWN_FORMS:
        # (the other forms are the device's kernels, whose builtins' accuracy at infinite
        # and huge arguments is theirs: the steps on webgpu above are the reference)
        _close(got[finite], cpu[finite], rtol=2e-5, atol=1e-5)
    zeros = finite & (cpu == 0)
    assert np.array_equal(np.signbit(got[zeros]), np.signbit(steps[zeros]))


# (name, shapes or a maker of the operands from host arrays)
LAYOUTS = {
    "row and column": [(5, 1), (1, 7), (5, 7)],
    "scalar constants": [(4, 6), (), (1,)],
    "3-d broadcast": [(3, 1, 8), (4, 8), (1, 1, 1)],
    "transposed": "transposed",
    "offset views": "offset",
}


def _layout_operands(layout, rng):
    layout = LAYOUTS[layout]
    if layout == "transposed":
        host = [rng.normal(size=(6, 5)).astype(np.float32), rng.normal(size=(5, 6))
                .astype(np.float32), rng.normal(size=(6,)).astype(np.float32)]
        return host, lambda ts: [ts[0].t(), ts[1], ts[2]]
    if layout == "offset":
        host = [rng.normal(size=(40,)).astype(np.float32) for _ in range(3)]
        return host, lambda ts: [ts[0][3:33].view(5, 6), ts[1][1:7], ts[2][::4][:6]]
    return [rng.normal(size=s).astype(np.float32) for s in layout], lambda ts: ts


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_broadcasting_chains(layout):
    host, view = _layout_operands(layout, np.random.default_rng(3))

    program = [["mul", [0, 1], {}], ["add", [-1, 2], {}], ["tanh", [-1], {}],
               ["exp", [-1], {}], ["sub", [-1, 2], {}], ["sigmoid", [-1], {}]]
    fused = FusedOp(program, [FUSIBLE[n] for n, _, _ in program])
    gpu = view(_on_gpu(*host))
    got = _one_dispatch(fused, *gpu)
    assert got.shape == np.broadcast_shapes(*(t.shape for t in gpu))
    _close(got.cpu().numpy(), fused._unfused(gpu).cpu().numpy(), rtol=2e-6, atol=1e-7)
    cpu = view([ember.tensor(a) for a in host])
    _close(got.cpu().numpy(), fused(*cpu).numpy(), rtol=2e-5, atol=1e-5)
    t = view([torch.tensor(a) for a in host])
    expected = torch.sigmoid(torch.tanh(t[0] * t[1] + t[2]).exp() - t[2])
    _close(got.cpu().numpy(), expected.numpy(), rtol=2e-5, atol=1e-5)
    eager = (gpu[0] * gpu[1] + gpu[2]).tanh().exp().sub(gpu[2]).sigmoid()  # op by op
    _close(got.cpu().numpy(), eager.cpu().numpy(), rtol=2e-6, atol=1e-7)


def test_chain_with_graph_constants_through_optimize_for_inference():
    """jit.optimize_for_inference of a module on webgpu: its bias+activation chain with a
    constant is one fused node, run as one dispatch, with torch's result."""
    class Net(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = ember.nn.Parameter(ember.tensor([0.5, -1.0, 2.0]))

        def forward(self, x):
            return ((x * self.scale + 0.25).tanh() * 3).sigmoid().relu()

    ember.manual_seed(0)
    net = Net().to("webgpu").eval()
    x = ember.randn(4, 3)
    fast = ember.jit.optimize_for_inference(ember.jit.trace(net, x.to("webgpu")))
    assert [n.kind for n in fast.graph.nodes].count("fused") == 1
    with ember.no_grad():
        got = _one_dispatch(fast, x.to("webgpu"))
    t = torch.tensor(x.numpy())
    expected = ((t * torch.tensor([0.5, -1.0, 2.0]) + 0.25).tanh() * 3).sigmoid().relu()
    _close(got.cpu().numpy(), expected.numpy(), rtol=2e-5, atol=1e-6)
    cpu_fast = ember.jit.optimize_for_inference(ember.jit.trace(Net().eval(), x))
    with ember.no_grad():
        _close(got.cpu().numpy(), cpu_fast(x).numpy(), rtol=2e-5, atol=1e-6)


def test_compiled_function_runs_its_chain_as_one_shader():
    def fn(x, y):
        return ((x * y).exp() + 1).log().tanh() * y - x.abs().sqrt()

    rng = np.random.default_rng(4)
    x, y = rng.normal(size=(8, 16)).astype(np.float32), rng.normal(size=(16,)).astype(np.float32)
    compiled = ember.compile(fn)
    gx, gy = _on_gpu(x, y)
    with ember.no_grad():
        compiled(gx, gy)  # the first call captures
        counts = [_dispatches()]
        got = compiled(gx, gy)
        counts.append(_dispatches())
        eager = fn(gx, gy)
        counts.append(_dispatches())
    # two fused chains (abs-sqrt, and the rest reading its result): one dispatch each,
    # where eager code runs one per op
    assert (counts[1] - counts[0], counts[2] - counts[1]) == (2, 10)
    tx, ty = torch.tensor(x), torch.tensor(y)
    expected = ((tx * ty).exp() + 1).log().tanh() * ty - tx.abs().sqrt()
    _close(got.cpu().numpy(), expected.numpy(), rtol=2e-5, atol=1e-5)
    _close(got.cpu().numpy(), eager.cpu().numpy(), rtol=2e-6, atol=1e-6)


def test_more_operands_than_bindings_run_the_steps():
    count = _fused._max_inputs() + 1
    program = [["add", [0, 1], {}]] + [["add", [-1, k], {}] for k in range(2, count)]
    fused = FusedOp(program, [FUSIBLE["add"]] * len(program))
    host = [np.full((3,), k, np.float32) for k in range(count)]
    before = _dispatches()
    got = fused(*_on_gpu(*host))
    assert _dispatches() - before == len(program)  # one per step: no shader
    assert got.cpu().tolist() == [sum(range(count))] * 3


def test_arrays_the_shader_refuses():
    shader = _fused.fused_shader([["exp", [0], {}], ["neg", [-1], {}]],
                                 [FUSIBLE["exp"], FUSIBLE["neg"]])
    assert shader([np.zeros(3, np.float32)]) is None  # a host array
    assert shader([ember.zeros(3, dtype=ember.float16, device="webgpu")._data]) is None
    assert shader([ember.zeros(3, device="webgpu")._data]) is not None


def test_a_step_with_parameters_that_matter_has_no_shader():
    assert _fused.wgsl_form(FUSIBLE["add"].fuse, {"alpha": 1}) is not None
    assert _fused.wgsl_form(FUSIBLE["mul"].fuse, {"other": 2}) is None


def test_tensors_larger_than_a_binding_run_in_windows(monkeypatch):
    """With bindings of 1 KiB the shader runs over windows of the output (flat ranges, or
    runs of rows with a broadcast operand), as the device's element-wise kernels do."""
    runtime = _runtime.runtime()
    rng = np.random.default_rng(5)
    host = [rng.normal(size=(64, 40)).astype(np.float32), rng.normal(size=(40,))
            .astype(np.float32), rng.normal(size=(64, 40)).astype(np.float32)]
    program = [["mul", [0, 1], {}], ["add", [-1, 2], {}], ["exp", [-1], {}]]
    fused = FusedOp(program, [FUSIBLE[n] for n, _, _ in program])
    gpu = _on_gpu(*host)
    monkeypatch.setattr(runtime, "max_binding", 1024)
    got = fused(*gpu).cpu().numpy()
    flat = fused(gpu[0], gpu[2][0], gpu[2]).cpu().numpy()
    monkeypatch.undo()
    _close(got, np.exp(host[0] * host[1] + host[2]), rtol=2e-5, atol=1e-6)
    _close(flat, np.exp(host[0] * host[2][0] + host[2]), rtol=2e-5, atol=1e-6)


def test_shaders_are_cached_by_chain_and_access():
    program = [["exp", [0], {}], ["add", [-1, 1], {}]]
    ops = [FUSIBLE["exp"], FUSIBLE["add"]]
    assert _fused.fused_shader(program, ops) is _fused.fused_shader(program, ops)
    linear = _fused.shader_source((("exp", (0,)), ("add", (-1, 1))), ("linear", "linear"))
    strided = _fused.shader_source((("exp", (0,)), ("add", (-1, 1))), ("linear", "strided"))
    assert linear != strided and "rem % size" in strided and "rem % size" not in linear


def test_docstring_examples_run():
    import doctest

    finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner(
        optionflags=doctest.NORMALIZE_WHITESPACE)
    tests = finder.find(_fused, extraglobs={"ember": ember, "np": np})
    for test in tests:
        runner.run(test)
    assert sum(len(t.examples) for t in tests) >= 10
    assert runner.summarize(verbose=False).failed == 0


def test_chain_kernel_for_generated_code():
    """``chain_kernel`` (the joint graph's generated code calls it): one dispatch on float32
    arrays, the ops' kernels on arrays the shader refuses (float16), None off webgpu."""
    from ember.webgpu import _xp

    program = [["mul", [0, 1], {}], ["tanh", [-1], {}], ["add", [-1, 0], {}]]
    ops = [FUSIBLE[n] for n, _, _ in program]
    kernel = _fused.chain_kernel(_xp, program, ops)
    assert _fused.chain_kernel(np, program, ops) is None
    rng = np.random.default_rng(6)
    host = [rng.normal(size=(3, 5)).astype(np.float32), rng.normal(size=(5,)).astype(np.float32)]
    expected = np.tanh(host[0] * host[1]) + host[0]
    arrays = [t._data for t in _on_gpu(*host)]
    _close(_one_dispatch(kernel, _xp, *arrays).get(), expected, rtol=2e-6, atol=1e-7)
    halves = [t._data for t in _on_gpu(*(a.astype(np.float16) for a in host))]
    before = _dispatches()
    got = kernel(_xp, *halves)
    assert got.dtype == np.float16 and _dispatches() - before >= len(program)  # no shader
    _close(got.get().astype(np.float32), expected, rtol=2e-3, atol=2e-3)
