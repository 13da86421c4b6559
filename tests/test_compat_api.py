"""ember.compile, ember.backends, and small top-level torch functions, against torch."""

import warnings

import numpy as np
import pytest
import torch

import ember
from conftest import assert_grads_match, assert_same, make_pair

RNG = np.random.default_rng(1)


def test_compile_decorator_forms():
    model = ember.nn.Linear(2, 2)
    for mod, net in ((ember, model), (torch, torch.nn.Linear(2, 2))):
        compiled = mod.compile(net)
        assert type(compiled).__name__ == "OptimizedModule" and compiled._orig_mod is net
        assert mod.compile(mode="max-autotune")(net)._orig_mod is net
        assert mod.compile(net, disable=True) is net

    @ember.compile
    def f(x):
        return x * 2

    @ember.compile(fullgraph=True, dynamic=False)
    def g(x):
        return x + 1

    assert f(ember.ones(2)).tolist() == [2.0, 2.0] and g(ember.ones(1)).tolist() == [2.0]
    assert f.__name__ == "f"
    for mod in (ember, torch):
        with pytest.raises(RuntimeError, match="Either mode or options"):
            mod.compile(lambda x: x, mode="default", options={})
    ember._dynamo.reset()
    assert ember._dynamo.disable(f)(ember.ones(1)).tolist() == [2.0]
    assert ember.compiler.disable()(g)(ember.ones(1)).tolist() == [2.0]
    assert ember.compiler.is_compiling() is torch.compiler.is_compiling() is False


def test_backends_flags_keep_values():
    cudnn = ember.backends.cudnn
    assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic, cudnn.allow_tf32) == \
        (torch.backends.cudnn.enabled, torch.backends.cudnn.benchmark,
         torch.backends.cudnn.deterministic, torch.backends.cudnn.allow_tf32)
    old = cudnn.benchmark
    cudnn.benchmark = True
    assert ember.backends.cudnn.benchmark is True
    with cudnn.flags(enabled=False):
        assert cudnn.enabled is False
    assert cudnn.enabled is True
    cudnn.benchmark = old
    assert cudnn.is_available() is ember.cuda.is_available()
    assert (cudnn.version() is None) is (not cudnn.is_available())
    matmul = ember.backends.cuda.matmul
    assert matmul.allow_fp16_reduced_precision_reduction is True
    matmul.allow_fp16_reduced_precision_reduction = False
    assert matmul.allow_fp16_reduced_precision_reduction is False
    matmul.allow_fp16_reduced_precision_reduction = True
    for m in (matmul, torch.backends.cuda.matmul):
        with pytest.raises(AttributeError, match="Unknown attribute"):
            m.foo = 1
        with pytest.raises(AttributeError, match="Unknown attribute"):
            m.foo  # noqa: B018
    assert ember.backends.mps.is_available() is torch.backends.mps.is_available() is False
    assert ember.backends.mps.is_built() is False
    for flag in (ember.backends.cuda.is_built(), ember.backends.mkl.is_available(),
                 ember.backends.openmp.is_available(), ember.backends.opt_einsum.is_available()):
        assert isinstance(flag, bool)


def test_matmul_precision_matches_torch():
    try:
        for p in ("high", "medium", "highest"):
            ember.set_float32_matmul_precision(p)
            torch.set_float32_matmul_precision(p)
            assert ember.get_float32_matmul_precision() == torch.get_float32_matmul_precision()
            assert ember.backends.cuda.matmul.allow_tf32 == torch.backends.cuda.matmul.allow_tf32
        for mod in (ember, torch):
            with pytest.warns(UserWarning, match="is not one of"):
                mod.set_float32_matmul_precision("HIGH")
            with pytest.raises(RuntimeError, match="expects a str"):
                mod.set_float32_matmul_precision(1)
        assert ember.get_float32_matmul_precision() == "highest"
        ember.backends.cuda.matmul.allow_tf32 = True
        assert ember.get_float32_matmul_precision() == "high"
    finally:
        ember.set_float32_matmul_precision("highest")
        torch.set_float32_matmul_precision("highest")


def test_deterministic_flags_match_torch():
    try:
        for mod in (ember, torch):
            mod.use_deterministic_algorithms(True, warn_only=True)
            assert mod.are_deterministic_algorithms_enabled()
            assert mod.is_deterministic_algorithms_warn_only_enabled()
            for bad in (1, "x", None):
                with pytest.raises(TypeError, match="must be bool"):
                    mod.use_deterministic_algorithms(bad)
            with pytest.raises(TypeError, match="warn_only"):
                mod.use_deterministic_algorithms(True, warn_only=1)
    finally:
        ember.use_deterministic_algorithms(False)
        torch.use_deterministic_algorithms(False)
    assert not ember.are_deterministic_algorithms_enabled()


def test_default_device():
    assert str(ember.get_default_device()) == str(torch.get_default_device()) == "cpu"
    try:
        ember.set_default_device("meta")
        assert str(ember.get_default_device()) == "meta"
        for t in (ember.zeros(2), ember.randn(2), ember.tensor([1.0]), ember.arange(3)):
            assert t.device.type == "meta"
        assert ember.zeros(2, device="cpu").device.type == "cpu"
    finally:
        ember.set_default_device(None)
    assert ember.zeros(1).device.type == "cpu"


def test_typename_and_accelerators():
    for dtype in ("float32", "int64", "bfloat16", "bool", "complex64"):
        assert ember.typename(ember.zeros(1, dtype=getattr(ember, dtype))) == \
            torch.typename(torch.zeros(1, dtype=getattr(torch, dtype)))
    for obj in (1, "a", 2.0, None):
        assert ember.typename(obj) == torch.typename(obj)
    assert ember.typename(ember.nn.Linear(1, 1)) == "ember.nn.modules.linear.Linear"
    assert ember.mps.is_available() is torch.mps.is_available()
    assert ember.xpu.is_available() is torch.xpu.is_available()
    assert ember.accelerator.is_available() is ember.cuda.is_available()
    if not ember.cuda.is_available():
        assert ember.accelerator.current_accelerator() is None
        assert ember.accelerator.device_count() == 0


@pytest.mark.parametrize("shape", [(3, 5), (5,), (2, 1), (1, 4), (3, 0)])
@pytest.mark.parametrize("correction", [0, 1, 2])
def test_cov_matches_torch(shape, correction):
    e, t = make_pair(RNG.standard_normal(shape))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_same(ember.cov(e, correction=correction), torch.cov(t, correction=correction))


def test_cov_weights_dtypes_grads_errors():
    x = RNG.standard_normal((3, 5))
    fw = np.array([1, 2, 0, 3, 1])
    aw = RNG.random(5)
    e, t = make_pair(x)
    for kw in ({"fweights": fw}, {"aweights": aw}, {"fweights": fw, "aweights": aw}):
        for corr in (0, 1):
            ek = {k: ember.tensor(v) for k, v in kw.items()}
            tk = {k: torch.tensor(v) for k, v in kw.items()}
            assert_same(ember.cov(e, correction=corr, **ek), torch.cov(t, correction=corr, **tk))
    ints = make_pair(np.arange(12).reshape(3, 4))
    assert_same(ember.cov(ints[0]), torch.cov(ints[1]))
    assert_same(ember.corrcoef(ints[0]), torch.corrcoef(ints[1]))
    assert_same(ember.corrcoef(e), torch.corrcoef(t))
    assert_same(ember.corrcoef(ember.tensor([1.0, 2.0])), torch.corrcoef(torch.tensor([1.0, 2.0])))
    c = make_pair(RNG.standard_normal((2, 4)) + 1j * RNG.standard_normal((2, 4)))
    assert_same(ember.cov(c[0]), torch.cov(c[1]))
    assert_same(ember.corrcoef(c[0]), torch.corrcoef(c[1]))
    assert_grads_match(lambda a: ember.cov(a), lambda a: torch.cov(a), x)
    assert_grads_match(lambda a: ember.corrcoef(a), lambda a: torch.corrcoef(a), x)
    bad = [
        (lambda m: m.cov(m.zeros(2, 2, 2)), RuntimeError),
        (lambda m: m.cov(m.zeros(2, 5), correction=1.5), TypeError),
        (lambda m: m.cov(m.zeros(2, 5), fweights=m.ones(5)), RuntimeError),
        (lambda m: m.cov(m.zeros(2, 5), aweights=-m.ones(5)), RuntimeError),
        (lambda m: m.cov(m.zeros(2, 5), fweights=-m.ones(5, dtype=m.int64)), RuntimeError),
        (lambda m: m.cov(m.zeros(2, 5), fweights=m.ones(4, dtype=m.int64)), RuntimeError),
        (lambda m: m.cov(m.zeros(2, 5), aweights=m.ones(5, dtype=m.int64)), RuntimeError),
        (lambda m: m.cov(m.zeros(2, 5), aweights=m.ones(2, 5)), RuntimeError),
    ]
    for fn, exc in bad:
        for mod in (ember, torch):
            with pytest.raises(exc):
                fn(mod)


@pytest.mark.parametrize("n,r,rep", [(4, 2, False), (4, 3, False), (3, 2, True), (4, 1, False),
                                     (3, 5, False), (0, 2, False), (3, 0, False)])
def test_combinations_matches_torch(n, r, rep):
    e, t = make_pair(RNG.standard_normal(n))
    assert_same(ember.combinations(e, r, with_replacement=rep),
                torch.combinations(t, r, with_replacement=rep))


def test_combinations_grad_and_errors():
    assert_grads_match(lambda a: ember.combinations(a, 2), lambda a: torch.combinations(a, 2),
                       RNG.standard_normal(4))
    for mod in (ember, torch):
        with pytest.raises(RuntimeError, match="1D vector"):
            mod.combinations(mod.zeros(2, 2))
        with pytest.raises(RuntimeError, match="non-negative"):
            mod.combinations(mod.arange(3), -1)


def test_cartesian_prod_matches_torch():
    a, b, c = (make_pair(v) for v in (np.arange(2), np.arange(3) * 10, np.arange(2) + 5))
    assert_same(ember.cartesian_prod(a[0]), torch.cartesian_prod(a[1]))
    assert_same(ember.cartesian_prod(a[0], b[0], c[0]), torch.cartesian_prod(a[1], b[1], c[1]))
    assert_grads_match(lambda x, y: ember.cartesian_prod(x, y),
                       lambda x, y: torch.cartesian_prod(x, y),
                       RNG.standard_normal(2), RNG.standard_normal(3))
    for mod in (ember, torch):
        with pytest.raises(RuntimeError):
            mod.cartesian_prod(mod.zeros(2, 2))
        with pytest.raises(RuntimeError, match="same dtype"):
            mod.cartesian_prod(mod.zeros(2), mod.zeros(2, dtype=mod.int64))


def test_block_diag_matches_torch():
    arrays = [np.ones((2, 2)), np.array(3.0), np.array([1.0, 2.0]), np.zeros((0, 3))]
    pairs = [make_pair(a) for a in arrays]
    assert_same(ember.block_diag(*[p[0] for p in pairs]), torch.block_diag(*[p[1] for p in pairs]))
    assert_same(ember.block_diag(), torch.block_diag())
    i, f = make_pair(np.array([1, 2])), make_pair(np.array([[1.5]], dtype=np.float32))
    assert_same(ember.block_diag(i[0], f[0]), torch.block_diag(i[1], f[1]))
    assert_grads_match(lambda x, y: ember.block_diag(x, y), lambda x, y: torch.block_diag(x, y),
                       RNG.standard_normal((2, 3)), RNG.standard_normal(2))
    for mod in (ember, torch):
        with pytest.raises(RuntimeError, match="2 or fewer dimensions"):
            mod.block_diag(mod.ones(2, 2, 2))


@pytest.mark.parametrize("kwargs", [
    {"bins": [3, 4]}, {"bins": 2, "density": True}, {"bins": 3, "range": [0.0, 1.0, -1.0, 2.0]},
    {"bins": 3, "weight": True},
])
def test_histogramdd_matches_torch(kwargs):
    e, t = make_pair(RNG.random((20, 2)).astype(np.float32))
    ek, tk = dict(kwargs), dict(kwargs)
    if kwargs.get("weight"):
        w = make_pair(RNG.random(20).astype(np.float32))
        ek["weight"], tk["weight"] = w
    got, want = ember.histogramdd(e, **ek), torch.histogramdd(t, **tk)
    assert_same(got.hist, want.hist, rtol=1e-5, atol=1e-6)
    assert_same(got.bin_edges, want.bin_edges)


def test_histogramdd_edges_and_errors():
    e, t = make_pair(np.ones((4, 2), dtype=np.float32))
    got, want = ember.histogramdd(e, bins=2), torch.histogramdd(t, bins=2)
    assert_same(got.hist, want.hist)
    assert_same(got.bin_edges, want.bin_edges)
    x = make_pair(RNG.random((6, 2)).astype(np.float32))
    edges = [np.array([0.0, 0.5, 1.0], np.float32), np.array([0.0, 1.0], np.float32)]
    got = ember.histogramdd(x[0], bins=[ember.tensor(v) for v in edges])
    want = torch.histogramdd(x[1], bins=[torch.tensor(v) for v in edges])
    assert_same(got.hist, want.hist)
    for mod in (ember, torch):
        with pytest.raises(NotImplementedError):
            mod.histogramdd(mod.ones(4, 2, dtype=mod.int64), bins=2)
