"""Element-wise regions of the joint graph as generated C loops (``_inductor/c_loops.py``):
every step with a C form against torch, NumPy's NaN rules, operands that broadcast or are not
C-ordered, and the fallback to NumPy's calls."""

import ctypes.util
import re

import numpy as np
import pytest
import torch

import ember
from conftest import assert_same
from ember._dynamo.utils import counters
from ember._inductor import c_loops
from ember.ops._registry import registry

pytestmark = pytest.mark.skipif(not c_loops.enabled(), reason="no C compiler on PATH")


def _ops_with_c_forms():
    names = []
    for name, ops in registry.items():
        if name.startswith("_"):
            continue
        if any(op.fuse is not None and c_loops._form(op.fuse) is not None for op in ops):
            names.append(name)
    return sorted(names)


# inputs inside each function's domain (the default: (0.1, 0.9))
_DOMAINS = {"acosh": (1.1, 3.0), "log": (0.1, 3.0), "log2": (0.1, 3.0), "log10": (0.1, 3.0)}


def _function(lib, name):
    for namespace in (lib, lib.nn.functional):
        if hasattr(namespace, name):
            return getattr(namespace, name)
    raise AttributeError(name)


def _values(shape, name, seed, dtype=np.float32):
    low, high = _DOMAINS.get(name, (0.1, 0.9))
    return np.random.default_rng(seed).uniform(low, high, shape).astype(dtype)


def _region_count():
    return counters["inductor"]["c_loop_regions"]


def _arity(name):
    return next(op.fuse.arity for op in registry[name] if op.fuse is not None)


def _step_chains(lib, names, xs, ys):
    """Per op: scale and shift into its domain, the op, then two steps more (all of one
    shape: the forward is one region whose outputs are every op's result)."""
    results = []
    for name, x, y in zip(names, xs, ys):
        a = x * 0.5 + 0.25 if name not in _DOMAINS else x * 1.0
        function = _function(lib, name)
        out = function(a, y) if _arity(name) == 2 else function(a)
        results.append(out * 1.5 - 0.5)
    return results


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_each_step_in_a_region_matches_torch(dtype):
    names = _ops_with_c_forms()
    xs = [_values((5, 7), name, 2 * i, dtype) for i, name in enumerate(names)]
    ys = [_values((5, 7), name, 2 * i + 1, dtype) for i, name in enumerate(names)]
    ex = [ember.tensor(v, requires_grad=True) for v in xs]
    ey = [ember.tensor(v, requires_grad=True) for v in ys]
    tx = [torch.tensor(v, requires_grad=True) for v in xs]
    ty = [torch.tensor(v, requires_grad=True) for v in ys]
    before = _region_count()
    got = ember.compile(lambda a, b: _step_chains(ember, names, a, b))(ex, ey)
    assert _region_count() > before  # C loops ran
    expected = _step_chains(torch, names, tx, ty)
    tolerance = dict(rtol=1e-5, atol=1e-5) if dtype == np.float32 else \
        dict(rtol=1e-12, atol=1e-12)
    differentiable = [i for i, name in enumerate(names) if name != "nextafter"]
    sum(got[i].sum() for i in differentiable).backward()
    sum(expected[i].sum() for i in differentiable).backward()
    for i, name in enumerate(names):
        assert_same(got[i], expected[i], **tolerance)
        for e, t in ((ex[i], tx[i]), (ey[i], ty[i])):
            if t.grad is not None:
                assert_same(e.grad, t.grad, **tolerance)
            else:
                assert e.grad is None or not e.grad.any(), name


@pytest.mark.parametrize("name", ["maximum", "minimum", "fmax", "fmin", "logaddexp",
                                  "logaddexp2"])
def test_nan_and_infinity_as_numpy(name):
    special = np.array([np.nan, 1.0, np.inf, -np.inf, np.inf, 0.0, -2.0], np.float32)
    other = np.array([1.0, np.nan, np.inf, -np.inf, -np.inf, -0.0, 3.0], np.float32)

    def chain(lib, x, y):
        return getattr(lib, name)(x * 1.0, y) + 0.0

    ex = ember.tensor(special, requires_grad=True)
    got = ember.compile(lambda a, b: chain(ember, a, b))(ex, ember.tensor(other))
    expected = chain(torch, torch.tensor(special), torch.tensor(other))
    assert_same(got, expected)


def test_relu_and_sigmoid_at_special_values():
    values = np.array([np.nan, -np.inf, np.inf, -0.0, 0.0, -100.0, 100.0], np.float32)

    def chain(lib, x):
        return lib.relu(x * 1.0) + lib.sigmoid(x + 0.0)

    ex = ember.tensor(values, requires_grad=True)
    got = ember.compile(lambda a: chain(ember, a))(ex)
    assert_same(got, chain(torch, torch.tensor(values)))


def test_broadcast_operands_and_a_transposed_input():
    # a one-element tensor and a transposed (not C-ordered) input in one region; a
    # row vector does not fit a region's operands and ends it
    base = np.random.default_rng(3).standard_normal((6, 4)).astype(np.float32)
    scale = np.array([1.5], np.float32)
    row = np.random.default_rng(4).standard_normal(6).astype(np.float32)

    def chain(lib, x, s, r):
        return (((x * s).tanh() + 0.5) * r).exp().sum()

    inputs = [ember.tensor(base).t(), ember.tensor(scale), ember.tensor(row)]
    for t in inputs:
        t.requires_grad_()
    t_inputs = [torch.tensor(base).t(), torch.tensor(scale), torch.tensor(row)]
    for t in t_inputs:
        t.requires_grad_()
    got = ember.compile(lambda *a: chain(ember, *a))(*inputs)
    expected = chain(torch, *t_inputs)
    assert_same(got, expected, rtol=1e-5, atol=1e-5)
    got.backward()
    expected.backward()
    for e, t in zip(inputs, t_inputs):
        assert_same(e.grad, t.grad, rtol=1e-5, atol=1e-5)


def test_a_long_chain_is_one_region_each_way():
    # forward: the whole chain (its saved values written by the loop); backward: the
    # derivative steps, the detach of each saved value and the expanded output gradient
    def chain(lib, x):
        for i in range(20):
            x = x * 1.01 if i % 2 else (x + 0.5).tanh()
        return x.sum()

    x = np.linspace(-1, 1, 16, dtype=np.float32)
    ex, tx = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    before = _region_count()
    got = ember.compile(lambda a: chain(ember, a))(ex)
    assert _region_count() - before == 2
    expected = chain(torch, tx)
    got.backward()
    expected.backward()
    assert_same(got, expected, rtol=1e-5, atol=1e-5)
    assert_same(ex.grad, tx.grad, rtol=1e-5, atol=1e-5)


def _numpy_runs_it():
    """Compile and train a chain; assert no C loop ran and the gradient is eager's."""
    def chain(x):
        return ((x + 1).tanh() * 2).sum()

    x = ember.linspace(-1, 1, 8, requires_grad=True)
    chain(x).backward()
    want = x.grad.clone()
    x.grad = None
    before = _region_count()
    ember.compile(chain)(x).backward()
    assert _region_count() == before
    assert ember.equal(x.grad, want)


def test_turned_off_numpy_runs_it(monkeypatch):
    monkeypatch.setenv("EMBER_C_LOOPS", "0")
    _numpy_runs_it()


def test_a_failing_compiler_leaves_numpy_running_it(tmp_path, monkeypatch):
    monkeypatch.setattr(c_loops, "_compiler", lambda: "/bin/false")
    monkeypatch.setattr(c_loops, "_loaded", {})
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))
    _numpy_runs_it()


def test_the_library_is_cached_by_its_source(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(c_loops, "_loaded", {})

    def chain(x):
        return ((x * 3).sin() - 1).sum()

    x = ember.ones(4, requires_grad=True)
    ember.compile(chain)(x).backward()
    libraries = sorted(p.name for p in (tmp_path / "c_loops").iterdir())
    assert len(libraries) == 2 and all(n.endswith(".so") for n in libraries)  # fw, bw
    monkeypatch.setattr(c_loops, "_loaded", {})  # another process: loads, does not compile
    monkeypatch.setattr(c_loops, "_build", lambda *a: pytest.fail("compiled again"))
    ember.compile(chain)(x).backward()


def _fused_ops(graph_module_or_fn):
    from ember.jit._passes import FusedOp

    return [n.op for n in graph_module_or_fn.graph.nodes if isinstance(n.op, FusedOp)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_an_inference_chain_is_one_c_loop(dtype):
    # jit's FusedOp (optimize_for_inference, compile without grad) on NumPy: one C loop for
    # full and one-element operands and rows repeated along the leading dims (a bias), a
    # transposed operand made C-ordered; a column that broadcasts keeps the in-buffer NumPy
    # steps; all against torch
    def chain(x, s):
        return ((x * s + 0.5).tanh() - x).sigmoid() * 3.0

    rng = np.random.default_rng(7)
    x = rng.standard_normal((6, 5)).astype(dtype)
    x3 = rng.standard_normal((3, 4, 5)).astype(dtype)
    cases = [(x, np.array([1.5], dtype), True), (x.T.copy().T, np.array(2.0, dtype), True),
             (x, rng.standard_normal(5).astype(dtype), True),
             (x, rng.standard_normal((1, 5)).astype(dtype), True),
             (x3, rng.standard_normal((4, 5)).astype(dtype), True),
             (x3, rng.standard_normal((4, 5)).astype(dtype)[:, ::-1], True),  # strided row
             (x, rng.standard_normal((6, 1)).astype(dtype), False)]
    for xv, sv, in_c in cases:
        ex, es = ember.tensor(xv), ember.tensor(sv)
        traced = ember.jit.optimize_for_inference(ember.jit.trace(chain, (ex, es)))
        fused, = _fused_ops(traced)
        with ember.no_grad():
            got = traced(ember.tensor(xv).t().contiguous().t() if xv is x else ex, es)
        assert_same(got, chain(torch.tensor(xv), torch.tensor(sv.copy())), rtol=1e-5,
                    atol=1e-6)
        assert any(fused._c_loops.values()) == in_c, sv.shape


def test_one_math_step_is_a_region_of_its_own():
    # tanh alone: NumPy's float32 loop is slower than glibc's vector tanhf, so one step pays
    x = np.random.default_rng(5).standard_normal((8, 16)).astype(np.float32)
    ex, tx = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    w = np.random.default_rng(6).standard_normal((16, 3)).astype(np.float32)
    ew, tw = ember.tensor(w), torch.tensor(w)
    before = _region_count()
    got = ember.compile(lambda a: (a @ ew).tanh())(ex)
    assert _region_count() > before
    expected = (tx @ tw).tanh()
    assert_same(got, expected, rtol=1e-6, atol=1e-6)
    got.sum().backward()
    expected.sum().backward()
    assert_same(ex.grad, tx.grad, rtol=1e-5, atol=1e-6)


def test_one_cheap_step_stays_a_numpy_call():
    graph = ember._inductor.capture.capture(lambda x: (x @ x) + 1, [ember.ones(2, 2)]).graph
    assert c_loops.plan_regions(graph, set(graph.output_values())) == {}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduce", ["mean", "sum", "mean_keepdim", "sum_negative_dims"])
def test_a_reduction_of_every_element_ends_a_region(dtype, reduce):
    # the squared error's sub, pow (a tensor exponent: no fusion rule, a C form) and mean
    # are one loop adding in double; its saved difference is written too
    rng = np.random.default_rng(7)
    x, y = (rng.standard_normal((64, 10)).astype(dtype) for _ in range(2))

    def loss(lib, a, b):
        squared = (a * 1.5 - b) ** 2
        if reduce == "mean":
            return squared.mean()
        if reduce == "sum":
            return squared.sum()
        if reduce == "mean_keepdim":
            return squared.mean(dim=(0, 1), keepdim=True)
        return squared.sum(dim=(-1, -2))

    graph = ember._inductor.capture.capture(lambda a, b: loss(ember, a, b),
                                            [ember.tensor(x), ember.tensor(y)]).graph
    regions = c_loops.plan_regions(graph, set(graph.output_values())).values()
    assert [r.reduction[0] for r in regions] == [reduce.split("_")[0]]
    ex, tx = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ey, ty = ember.tensor(y), torch.tensor(y)
    compiled = ember.compile(lambda a, b: loss(ember, a, b))
    before = _region_count()
    got = compiled(ex, ey)
    assert _region_count() > before
    expected = loss(torch, tx, ty)
    tolerance = dict(rtol=1e-6, atol=1e-6) if dtype == np.float32 else \
        dict(rtol=1e-13, atol=1e-13)
    assert_same(got, expected, **tolerance)
    got.sum().backward()
    expected.sum().backward()
    assert_same(ex.grad, tx.grad, **tolerance)


def test_a_partial_reduction_is_not_taken_into_a_region():
    def loss(lib, a):
        return ((a * 2.0 + 1.0) ** 2).sum(dim=0)

    x = np.random.default_rng(8).standard_normal((5, 3)).astype(np.float32)
    graph = ember._inductor.capture.capture(lambda a: loss(ember, a), [ember.tensor(x)]).graph
    regions = c_loops.plan_regions(graph, set(graph.output_values()))
    assert [r.reduction for r in regions.values()] == [None]
    ex, tx = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    got = ember.compile(lambda a: loss(ember, a))(ex)
    expected = loss(torch, tx)
    assert_same(got, expected, rtol=1e-6, atol=1e-6)
    got.sum().backward()
    expected.sum().backward()
    assert_same(ex.grad, tx.grad, rtol=1e-6, atol=1e-6)


def test_a_sum_that_overflows_float32_is_infinite_and_nan_propagates():
    big = np.full((4, 4), 3e38, np.float32)
    got = ember.compile(lambda a: (a * 1.0 + 0.0).sum())(ember.tensor(big, requires_grad=True))
    assert_same(got, (torch.tensor(big) * 1.0 + 0.0).sum())
    nan = np.ones((4, 4), np.float32)
    nan[1, 2] = np.nan
    got = ember.compile(lambda a: (a * 2.0 - 1.0).mean())(ember.tensor(nan, requires_grad=True))
    assert_same(got, (torch.tensor(nan) * 2.0 - 1.0).mean())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("exponent", [2.0, 0.5, -1.0, 3.0, 1.7, -2.0, 0.0])
def test_pow_in_a_region_is_numpys_power(dtype, exponent):
    # NumPy's fast exponents (square, square root, reciprocal) and the C library's pow
    # otherwise: equal to eager ember's values, close to torch's
    x = np.random.default_rng(9).uniform(0.1, 3.0, (16, 16)).astype(dtype)

    def chain(lib, a):
        return (a * 1.0 + 0.25) ** exponent * 1.0

    ex = ember.tensor(x, requires_grad=True)
    graph = ember._inductor.capture.capture(lambda a: chain(ember, a), [ember.tensor(x)]).graph
    assert len(c_loops.plan_regions(graph, set(graph.output_values()))) == 1
    got = ember.compile(lambda a: chain(ember, a))(ex)
    with ember.no_grad():
        eager = chain(ember, ember.tensor(x))
    assert np.array_equal(got.detach().numpy(), eager.numpy())
    assert_same(got, chain(torch, torch.tensor(x)), rtol=1e-6, atol=0)


@pytest.mark.skipif(ctypes.util.find_library("mvec") is None, reason="no glibc libmvec")
def test_every_math_function_links_to_glibcs_vector_variants(tmp_path, monkeypatch):
    # A declaration asking for a variant libmvec lacks (e.g. 8 floats at AVX-512) makes the
    # library fail to load, and every loop silently falls back to the scalar functions.
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(c_loops, "_loaded", {})
    loops = []
    for ctype, suffix in (("float", "f"), ("double", "")):
        for name in c_loops._VECTOR_MATH_1 + c_loops._VECTOR_MATH_2:
            args = "x[i], x[i]" if name in c_loops._VECTOR_MATH_2 else "x[i]"
            loops.append(f"void loop_{name}{suffix}(const {ctype} *x, {ctype} *y, long n)"
                         f" {{ for (long i = 0; i < n; i++) y[i] = {name}{suffix}({args}); }}")
    source = c_loops._PRELUDE + c_loops._vector_declarations() + "\n".join(loops) + "\n"
    library = c_loops._library(source, ("-lmvec", "-lm"))  # raises OSError if it can't load
    built = (tmp_path / "c_loops").glob("*.so")
    symbols = next(built).read_bytes()
    for name in c_loops._VECTOR_MATH_1 + c_loops._VECTOR_MATH_2:
        assert re.search(rb"_ZGV[bcde]N\d+v+_" + name.encode() + rb"f\x00", symbols), name
        assert re.search(rb"_ZGV[bcde]N\d+v+_" + name.encode() + rb"\x00", symbols), name
    x = np.linspace(0.1, 0.9, 37, dtype=np.float32)
    y = np.empty_like(x)
    library.loop_tanhf(x.ctypes.data_as(ctypes.c_void_p), y.ctypes.data_as(ctypes.c_void_p),
                       ctypes.c_long(x.size))
    np.testing.assert_allclose(y, torch.tanh(torch.from_numpy(x)).numpy(), rtol=2e-6)


@pytest.mark.parametrize("row_shape", [(6,), (1, 6), (4, 6)])
def test_a_row_repeated_along_the_leading_dims_is_read_inside_the_region(row_shape):
    # a bias (or a (1, n) scale) joins the region instead of ending it; gradients against
    # torch's, the row's own gradient a sum over the leading dims outside the loop
    rng = np.random.default_rng(11)
    x = rng.standard_normal((3, 4, 6)).astype(np.float32)
    b = rng.standard_normal(row_shape).astype(np.float32)

    def loss(x, b):
        return (((x + b).tanh() * b) ** 2).mean()

    region, = c_loops.plan_regions(*_graph_and_outputs(loss, x, b)).values()
    assert len(region.rows) == 1 and region.inner == b.size and region.step_count() == 5
    ex, eb = ember.tensor(x, requires_grad=True), ember.tensor(b, requires_grad=True)
    tx, tb = torch.tensor(x, requires_grad=True), torch.tensor(b, requires_grad=True)
    before = _region_count()
    got = ember.compile(loss)(ex, eb)
    got.backward()
    expected = loss(tx, tb)
    expected.backward()
    assert _region_count() > before
    assert_same(got, expected, rtol=1e-6, atol=1e-7)
    assert_same(ex.grad, tx.grad, rtol=1e-5, atol=1e-7)
    assert_same(eb.grad, tb.grad, rtol=1e-5, atol=1e-7)


def test_rows_of_two_sizes_do_not_share_a_region():
    # (3, 4, 6): a (6,) row and a (4, 6) row are read at different strides; the loop has one
    x = np.ones((3, 4, 6), np.float32)
    graph, outputs = _graph_and_outputs(lambda x, a, b: ((x + a).tanh() * b).exp(), x,
                                        np.ones(6, np.float32), np.ones((4, 6), np.float32))
    regions = list(c_loops.plan_regions(graph, outputs).values())
    assert [r.inner for r in regions] == [6, 24]


def _graph_and_outputs(fn, *arrays):
    from ember._inductor.capture import capture

    graph = capture(fn, [ember.tensor(a) for a in arrays]).graph
    return graph, set(graph.output_values())
