"""Fusion rules owned by the ops (``Op.fuse``, ``ember/ops/_fusion.py``).

Each fusible op's in-place step must give exactly what its kernel gives (the eager result)
on float32 and float64, special values included; fused chains of the newly fusible ops must
match torch, survive jit.save/load, and train with torch's gradients.
"""

import numpy as np
import pytest
import torch

import ember
from ember.jit import _passes as passes
from ember.ops._registry import registry

FUSIBLE = sorted({op.name for ops in registry.values() for op in ops if op.fuse is not None})

# inputs inside each op's domain (the rest take any real number)
_DOMAIN = {
    "log": (0.1, 4), "log2": (0.1, 4), "log10": (0.1, 4), "log1p": (-0.9, 4), "sqrt": (0.1, 4),
    "rsqrt": (0.1, 4), "asin": (-0.95, 0.95), "acos": (-0.95, 0.95), "atanh": (-0.95, 0.95),
    "acosh": (1.05, 4),
}
_SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5]


def _operands(name, arity, dtype, rng):
    low, high = _DOMAIN.get(name, (-3, 3))
    arrays = []
    for k in range(arity):
        a = rng.uniform(low, high, 40)
        # the special values, in a different order for each operand
        a[:len(_SPECIAL)] = np.roll(_SPECIAL, k)
        arrays.append(a.astype(dtype).reshape(5, 8))
    return arrays


def _first_op(name):
    return next(op for op in registry[name] if op.fuse is not None)


def test_the_widened_ops_fuse():
    """The ops the fused kernels now cover beyond the original sixteen."""
    assert {"maximum", "minimum", "floor", "ceil", "trunc", "expm1", "log1p", "log2",
            "log10", "tan", "sinh", "cosh", "atan2", "hypot", "fmax", "fmin"} <= set(FUSIBLE)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", FUSIBLE)
def test_each_fusion_step_gives_the_eager_result(name, dtype):
    op = _first_op(name)
    arrays = _operands(name, op.fuse.arity, dtype, np.random.default_rng(len(name)))
    with np.errstate(all="ignore"):
        eager = op(*[ember.tensor(a) for a in arrays]).numpy()
        fresh = op.fuse.step(np, arrays, None)
        buffer = np.full(eager.shape, 7, dtype)
        into = op.fuse.step(np, arrays, buffer)
    assert into is buffer and fresh.dtype == eager.dtype == dtype
    if name == "sigmoid":  # the kernel is the step on NumPy arrays, SciPy's expit elsewhere
        np.testing.assert_allclose(fresh, eager, rtol=4 * np.finfo(dtype).eps, atol=0)
        np.testing.assert_array_equal(into, fresh)
        return
    np.testing.assert_array_equal(fresh, eager)
    np.testing.assert_array_equal(into, eager)


def _chain(m, x, y):
    """A chain of newly fusible ops (each step reads the one before), for ember and torch."""
    z = m.minimum(m.maximum(x.expm1(), y).floor(), x).ceil().sinh()
    return m.hypot(m.atan2(z, y), x).log1p().tan().cosh()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_chain_of_the_widened_ops_fuses_and_matches_torch(dtype, tmp_path):
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((6, 7)).astype(dtype) for _ in range(2))
    traced = ember.jit.trace(lambda x, y: _chain(ember, x, y), (ember.tensor(a),
                                                                 ember.tensor(b)))
    fast = ember.jit.optimize_for_inference(traced)
    assert [n.kind for n in fast.graph.nodes].count("fused") == 1
    assert len(fast.graph.op_nodes()) == 0
    got = fast(ember.tensor(a), ember.tensor(b)).numpy()
    want = _chain(torch, torch.tensor(a), torch.tensor(b)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == np.float32 else 1e-12)
    # eager ember and the fused C loop agree to a few ulps a step (glibc's vector math
    # against NumPy's own SIMD functions: exactly equal on some CPUs, not on AVX-512 ones)
    eager = _chain(ember, ember.tensor(a), ember.tensor(b)).numpy()
    np.testing.assert_allclose(got, eager, rtol=32 * np.finfo(dtype).eps, atol=0)
    fast.save(str(tmp_path / "chain.pt"))
    loaded = ember.jit.load(str(tmp_path / "chain.pt"))
    np.testing.assert_array_equal(loaded(ember.tensor(a), ember.tensor(b)).numpy(), got)


def test_add_with_alpha_is_not_a_fusion_step():
    generator = ember.Generator().manual_seed(0)
    x, y = ember.randn(4, generator=generator), ember.randn(4, generator=generator)
    traced = ember.jit.trace(lambda x, y: ember.add(x.exp(), y, alpha=2).tanh().neg(), (x, y))
    graph = passes.clone_graph(traced.graph)
    assert passes.fuse_elementwise(graph) == 1
    fused = [n for n in graph.nodes if n.kind == "fused"]
    assert [step[0] for step in fused[0].params["program"]] == ["tanh", "neg"]
    want = torch.add(torch.tensor(x.numpy()).exp(), torch.tensor(y.numpy()), alpha=2).tanh().neg()
    # exp's float32 kernels (NumPy's, torch's SLEEF) may differ by an ulp of exp(x) (up to
    # ~2e-6 for these inputs), which the sum with 2y can leave in a result near zero
    np.testing.assert_allclose(ember.jit.ScriptFunction(graph, "f")(x, y).numpy(), want.numpy(),
                               rtol=1e-6, atol=1e-5)


def test_loading_a_fused_group_of_an_op_without_a_fusion_rule_is_refused():
    with pytest.raises(RuntimeError, match="unknown operator 'erf' in a fused group"):
        passes.make_fused([["erf", [0], {}], ["exp", [-1], {}]])
    with pytest.raises(RuntimeError, match="unknown operator 'add' in a fused group"):
        passes.make_fused([["exp", [0], {}], ["add", [-1, 1], {"alpha": 3}]])


def test_a_compiled_chain_with_steps_without_array_derivatives_trains_as_torch():
    """maximum and floor have no array derivative: the chain trains through its primitives."""
    def f(m, x, w):
        return (m.maximum(x.expm1(), w).floor() * w + (x * w).tanh().log1p()).sum()

    rng = np.random.default_rng(1)
    a, b = rng.uniform(-0.5, 0.5, (2, 12))
    x, w = (ember.tensor(v, requires_grad=True) for v in (a, b))
    compiled = ember.compile(lambda x, w: f(ember, x, w))
    compiled(x, w)
    grads = ember.autograd.grad(compiled(x, w), (x, w))
    tx, tw = (torch.tensor(v, requires_grad=True) for v in (a, b))
    for got, want in zip(grads, torch.autograd.grad(f(torch, tx, tw), (tx, tw))):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)
