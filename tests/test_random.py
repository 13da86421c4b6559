"""Random numbers: ember's CPU generator is torch's mt19937 and its sampling functions draw as
torch's CPU kernels do, so every function is compared value for value against torch after the
same seed (bit-exact, or within an ulp where torch's float libm or NumPy's SIMD maths round
differently); also the state layout both ways, determinism under seeds and generators, shapes and
dtypes, statistical checks (these cover the GPU path's code too) and torch's argument errors."""

import numpy as np
import pytest
import torch
from scipy import stats

import ember
from conftest import DTYPE_PAIRS

FLOATS = ["float16", "bfloat16", "float32", "float64"]


def _raises_like(ember_fn, torch_fn, match=None):
    with pytest.raises(Exception) as expected:
        torch_fn()
    with pytest.raises(expected.type, match=match):
        ember_fn()


def _same_meta(e, t):
    assert tuple(e.shape) == tuple(t.shape), (e.shape, t.shape)
    assert e.dtype.name == str(t.dtype).removeprefix("torch."), (e.dtype, t.dtype)


def _np(t):
    return t.float().numpy() if t.dtype is ember.bfloat16 else t.numpy()


# ---------------------------------------------------------------- seeds, generators, state


SAMPLERS = {
    "rand": lambda g: ember.rand(3, 4, generator=g),
    "randn": lambda g: ember.randn(5, generator=g, dtype=ember.float64),
    "randint": lambda g: ember.randint(-5, 50, (7,), generator=g),
    "randperm": lambda g: ember.randperm(9, generator=g),
    "normal": lambda g: ember.normal(ember.zeros(4), ember.ones(4), generator=g),
    "bernoulli": lambda g: ember.bernoulli(ember.full((8,), 0.5), generator=g),
    "multinomial": lambda g: ember.multinomial(ember.ones(6), 3, generator=g),
    "poisson": lambda g: ember.poisson(ember.full((5,), 3.0), generator=g),
    "uniform_": lambda g: ember.empty(4).uniform_(-2, 2, generator=g),
    "exponential_": lambda g: ember.empty(4).exponential_(generator=g),
}


@pytest.mark.parametrize("sampler", [
    lambda d, g: ember.rand(3, 4, device=d, generator=g),
    lambda d, g: ember.randn(5, device=d, generator=g),
    lambda d, g: ember.randint(0, 50, (7,), device=d, generator=g),
    lambda d, g: ember.randperm(9, device=d, generator=g),
    lambda d, g: ember.empty(6, device=d).normal_(generator=g),
    lambda d, g: ember.multinomial(ember.ones(6, device=d), 3, generator=g)])
def test_same_seed_same_numbers_on_device(sampler, device):
    g = ember.Generator(device=device).manual_seed(99)
    first = sampler(device, g)
    assert first.device.type == device
    g.manual_seed(99)
    assert sampler(device, g).tolist() == first.tolist()


@pytest.mark.parametrize("name", list(SAMPLERS))
def test_same_seed_same_numbers_with_generator(name):
    sample = SAMPLERS[name]
    g = ember.Generator().manual_seed(123)
    first = sample(g).tolist()
    second = sample(g).tolist()
    g.manual_seed(123)
    assert sample(g).tolist() == first
    assert sample(ember.Generator().manual_seed(123)).tolist() == first
    if name not in ("bernoulli", "multinomial"):
        assert second != first


@pytest.mark.parametrize("name", list(SAMPLERS))
def test_global_seed_and_state_restore(name):
    sample = SAMPLERS[name]
    ember.manual_seed(7)
    first = sample(None).tolist()
    ember.manual_seed(7)
    assert sample(None).tolist() == first
    state = ember.get_rng_state()
    after = sample(None).tolist()
    ember.set_rng_state(state)
    assert sample(None).tolist() == after


def test_generator_api_like_torch():
    g, tg = ember.Generator(), torch.Generator()
    assert g.initial_seed() == tg.initial_seed()
    assert g.device == ember.device("cpu") and str(g.device) == str(tg.device)
    assert g.manual_seed(5) is g
    assert g.initial_seed() == 5
    assert ember.manual_seed(-1).initial_seed() == torch.manual_seed(-1).initial_seed()
    assert ember.manual_seed(1.5).initial_seed() == torch.manual_seed(1.5).initial_seed()
    assert ember.initial_seed() == torch.initial_seed()
    s = g.seed()
    assert isinstance(s, int) and g.initial_seed() == s
    assert isinstance(ember.seed(), int)
    state = g.get_state()
    assert state.dtype is ember.uint8 and state.ndim == 1 and state.device == ember.device("cpu")
    assert g.set_state(state) is g
    _raises_like(lambda: ember.manual_seed(2 ** 64), lambda: torch.manual_seed(2 ** 64),
                 "Overflow")
    _raises_like(lambda: g.set_state(ember.zeros(3, dtype=ember.uint8)),
                 lambda: tg.set_state(torch.zeros(3, dtype=torch.uint8)), "size")
    _raises_like(lambda: g.set_state(ember.zeros(3)), lambda: tg.set_state(torch.zeros(3)),
                 "ByteTensor")
    with pytest.raises(RuntimeError):
        ember.Generator(device="meta")
    torch.manual_seed(torch.initial_seed())


def test_generators_are_independent_of_the_default():
    g = ember.Generator().manual_seed(1)
    a = ember.rand(5, generator=g).tolist()
    g.manual_seed(1)
    ember.rand(100)  # draws from the default generator do not move g
    assert ember.rand(5, generator=g).tolist() == a


def test_cuda_generator_needs_gpu_or_works():
    if ember.cuda.is_available():
        from ember.ops.random import cuda_generator

        g = cuda_generator(0)
        g.manual_seed(3)
        a = ember.rand(4, device="cuda").tolist()
        g.manual_seed(3)
        assert ember.rand(4, device="cuda").tolist() == a
        state = g.get_state()
        b = ember.randn(4, device="cuda").tolist()
        g.set_state(state)
        assert ember.randn(4, device="cuda").tolist() == b
    else:
        with pytest.raises(RuntimeError):
            ember.rand(2, device="cuda")


# ---------------------------------------------------------------- shapes and dtypes vs torch


@pytest.mark.parametrize("name", FLOATS + ["complex64", "complex128"])
@pytest.mark.parametrize("size", [(), (0,), (3,), (2, 3)])
def test_rand_randn_shapes_dtypes(name, size):
    ed, td = DTYPE_PAIRS[name]
    _same_meta(ember.rand(size, dtype=ed), torch.rand(size, dtype=td))
    _same_meta(ember.randn(*size, dtype=ed) if size else ember.randn(size, dtype=ed),
               torch.randn(size, dtype=td))
    _same_meta(ember.rand(size, dtype=ed, device="meta"), torch.rand(size, dtype=td,
                                                                     device="meta"))


@pytest.mark.parametrize("name", ["int64", "bool", "uint8"])
def test_rand_randn_refuse_integer_dtypes(name):
    ed, td = DTYPE_PAIRS[name]
    _raises_like(lambda: ember.rand(2, dtype=ed), lambda: torch.rand(2, dtype=td))
    _raises_like(lambda: ember.randn(2, dtype=ed), lambda: torch.randn(2, dtype=td))


def test_like_functions_and_requires_grad_and_out():
    for name in ("float32", "float64", "int32"):
        ed, td = DTYPE_PAIRS[name]
        e, t = ember.zeros(2, 3, dtype=ed), torch.zeros(2, 3, dtype=td)
        _same_meta(ember.randint_like(e, 5), torch.randint_like(t, 5))
        _same_meta(ember.randint_like(e, 2, 5), torch.randint_like(t, 2, 5))
        if name != "int32":
            _same_meta(ember.rand_like(e), torch.rand_like(t))
            _same_meta(ember.randn_like(e), torch.randn_like(t))
    _raises_like(lambda: ember.rand_like(ember.zeros(2, dtype=ember.int64)),
                 lambda: torch.rand_like(torch.zeros(2, dtype=torch.int64)))
    x = ember.randn(3, requires_grad=True)
    assert x.requires_grad and x.is_leaf
    _raises_like(lambda: ember.randint(0, 5, (2,), requires_grad=True),
                 lambda: torch.randint(0, 5, (2,), requires_grad=True), "floating")
    e_out, t_out = ember.empty(1, dtype=ember.float64), torch.empty(1, dtype=torch.float64)
    assert ember.rand(2, 3, out=e_out) is e_out
    _same_meta(e_out, torch.rand(2, 3, out=t_out))


@pytest.mark.parametrize("name", ["int64", "int32", "int16", "int8", "uint8", "bool", "float32",
                                  "float64", "float16"])
def test_randint_dtypes_and_bounds(name):
    ed, td = DTYPE_PAIRS[name]
    low, high = (0, 2) if name in ("bool",) else (-3, 9) if name != "uint8" else (3, 9)
    e = ember.randint(low, high, (2000,), dtype=ed)
    _same_meta(e, torch.randint(low, high, (2000,), dtype=td))
    values = _np(e).astype(np.int64)
    assert values.min() >= low and values.max() < high
    assert set(np.unique(values)) == set(range(low, high))


def test_randint_signatures_and_errors():
    _same_meta(ember.randint(10, (3,)), torch.randint(10, (3,)))
    _same_meta(ember.randint(low=2, high=5, size=(3, 2)), torch.randint(low=2, high=5,
                                                                         size=(3, 2)))
    _same_meta(ember.randint(5, size=(4,)), torch.randint(5, size=(4,)))
    _raises_like(lambda: ember.randint(5, 3, (2,)), lambda: torch.randint(5, 3, (2,)),
                 "random_ expects 'from' to be less than 'to', but got from=5 >= to=3")
    _raises_like(lambda: ember.randint(0, 300, (2,), dtype=ember.uint8),
                 lambda: torch.randint(0, 300, (2,), dtype=torch.uint8), "out of bounds")
    _raises_like(lambda: ember.randint(0, 5, 3), lambda: torch.randint(0, 5, 3))
    assert ember.randint(0, 5, (2, 2), device="meta").shape == (2, 2)


@pytest.mark.parametrize("n", [0, 1, 2, 17, 1000])
def test_randperm_is_a_permutation(n):
    e = ember.randperm(n)
    _same_meta(e, torch.randperm(n))
    assert sorted(e.tolist()) == list(range(n))
    f = ember.randperm(n, dtype=ember.float32)
    _same_meta(f, torch.randperm(n, dtype=torch.float32))
    assert sorted(f.tolist()) == list(range(n))


def test_randperm_errors():
    _raises_like(lambda: ember.randperm(-1), lambda: torch.randperm(-1), "negative")
    _raises_like(lambda: ember.randperm(300, dtype=ember.uint8),
                 lambda: torch.randperm(300, dtype=torch.uint8))


# ---------------------------------------------------------------- normal overloads


def test_normal_overloads_shapes_dtypes():
    e, t = ember.zeros(2, 1), torch.zeros(2, 1)
    _same_meta(ember.normal(e, ember.ones(3)), torch.normal(t, torch.ones(3)))
    _same_meta(ember.normal(e, 2.0), torch.normal(t, 2.0))
    _same_meta(ember.normal(e), torch.normal(t))
    _same_meta(ember.normal(0.0, ember.ones(3, dtype=ember.float64)),
               torch.normal(0.0, torch.ones(3, dtype=torch.float64)))
    _same_meta(ember.normal(0, 1, (2, 3)), torch.normal(0, 1, (2, 3)))
    _same_meta(ember.normal(0.0, 1.0, size=(4,), dtype=ember.float64),
               torch.normal(0.0, 1.0, size=(4,), dtype=torch.float64))
    _same_meta(ember.normal(ember.zeros(2), ember.ones(2, dtype=ember.float64)),
               torch.normal(torch.zeros(2), torch.ones(2, dtype=torch.float64)))
    e_out, t_out = ember.empty(2), torch.empty(2)
    assert ember.normal(ember.zeros(2), 1.0, out=e_out) is e_out
    _same_meta(e_out, torch.normal(torch.zeros(2), 1.0, out=t_out))
    assert ember.normal(ember.zeros(3, device="meta"), 1.0).shape == (3,)


def test_normal_errors():
    _raises_like(lambda: ember.normal(0.0, -1.0, (2,)), lambda: torch.normal(0.0, -1.0, (2,)),
                 "normal expects std >= 0.0, but found std -1")
    _raises_like(lambda: ember.normal(ember.zeros(2), -1.0),
                 lambda: torch.normal(torch.zeros(2), -1.0), "std >= 0.0")
    _raises_like(lambda: ember.normal(ember.zeros(2), ember.tensor([-1.0, 1.0])),
                 lambda: torch.normal(torch.zeros(2), torch.tensor([-1.0, 1.0])),
                 "all elements of std")
    _raises_like(lambda: ember.normal(ember.zeros(4), ember.ones(2, 2)),
                 lambda: torch.normal(torch.zeros(4), torch.ones(2, 2)), "must match")
    _raises_like(lambda: ember.normal(ember.zeros(2, dtype=ember.int64), 1.0),
                 lambda: torch.normal(torch.zeros(2, dtype=torch.int64), 1.0))


def test_normal_gradient_is_zero_like_torch():
    m, s = ember.zeros(3, requires_grad=True), ember.ones(3, requires_grad=True)
    tm, ts = torch.zeros(3, requires_grad=True), torch.ones(3, requires_grad=True)
    ember.normal(m, s).sum().backward()
    torch.normal(tm, ts).sum().backward()
    assert m.grad.tolist() == tm.grad.tolist() and s.grad.tolist() == ts.grad.tolist()
    p, tp = ember.full((3,), 0.5, requires_grad=True), torch.full((3,), 0.5, requires_grad=True)
    ember.bernoulli(p).sum().backward()
    torch.bernoulli(tp).sum().backward()
    assert p.grad.tolist() == tp.grad.tolist()


# ---------------------------------------------------------------- statistics


N = 200_000


@pytest.mark.parametrize("name", ["float32", "float64"])
def test_uniform_ks_and_moments(name):
    g = ember.Generator().manual_seed(11)
    x = ember.rand(N, generator=g, dtype=getattr(ember, name)).numpy().astype(np.float64)
    assert x.min() >= 0 and x.max() < 1
    assert stats.kstest(x, "uniform").pvalue > 1e-4
    assert abs(x.mean() - 0.5) < 0.005 and abs(x.var() - 1 / 12) < 0.002
    y = ember.empty(N, dtype=getattr(ember, name)).uniform_(-3, 5, generator=g).numpy()
    assert y.min() >= -3 and y.max() <= 5
    assert stats.kstest(y, stats.uniform(-3, 8).cdf).pvalue > 1e-4


@pytest.mark.parametrize("name", ["float16", "bfloat16"])
def test_low_precision_uniform_never_reaches_one(name):
    x = _np(ember.rand(N, generator=ember.Generator().manual_seed(2), dtype=getattr(ember, name)))
    assert x.min() >= 0 and x.max() < 1 and abs(x.mean() - 0.5) < 0.01


@pytest.mark.parametrize("name", ["float32", "float64"])
def test_normal_ks_and_moments(name):
    g = ember.Generator().manual_seed(12)
    x = ember.randn(N, generator=g, dtype=getattr(ember, name)).numpy().astype(np.float64)
    assert stats.kstest(x, "norm").pvalue > 1e-4
    assert abs(x.mean()) < 0.01 and abs(x.var() - 1) < 0.015
    y = ember.empty(N, dtype=getattr(ember, name)).normal_(2.0, 3.0, generator=g).numpy()
    assert stats.kstest(y, stats.norm(2, 3).cdf).pvalue > 1e-4
    z = ember.normal(ember.full((N,), -1.0), ember.full((N,), 0.5), generator=g).numpy()
    assert stats.kstest(z, stats.norm(-1, 0.5).cdf).pvalue > 1e-4
    w = ember.normal(4.0, 2.0, (N,), generator=g).numpy()
    assert abs(w.mean() - 4) < 0.03 and abs(w.std() - 2) < 0.03


def test_complex_randn_variance():
    z = ember.randn(N, dtype=ember.complex128, generator=ember.Generator().manual_seed(1)).numpy()
    assert abs(np.mean(np.abs(z) ** 2) - 1) < 0.02
    assert abs(z.real.var() - 0.5) < 0.01 and abs(z.imag.var() - 0.5) < 0.01


def test_exponential_cauchy_lognormal_geometric():
    g = ember.Generator().manual_seed(13)
    x = ember.empty(N, dtype=ember.float64).exponential_(2.0, generator=g).numpy()
    assert stats.kstest(x, stats.expon(scale=0.5).cdf).pvalue > 1e-4
    c = ember.empty(N, dtype=ember.float64).cauchy_(1.0, 2.0, generator=g).numpy()
    assert stats.kstest(c, stats.cauchy(1, 2).cdf).pvalue > 1e-4
    ln = ember.empty(N, dtype=ember.float64).log_normal_(0.5, 0.25, generator=g).numpy()
    assert stats.kstest(np.log(ln), stats.norm(0.5, 0.25).cdf).pvalue > 1e-4
    geo = ember.empty(N).geometric_(0.25, generator=g).numpy()
    assert geo.min() >= 1 and abs(geo.mean() - 4) < 0.05
    gi = ember.zeros(10, dtype=ember.int64).geometric_(0.5, generator=g)
    assert gi.dtype is ember.int64 and min(gi.tolist()) >= 1


def test_random_ranges():
    g = ember.Generator().manual_seed(14)
    u8 = ember.zeros(N, dtype=ember.uint8).random_(generator=g).numpy()
    assert u8.min() == 0 and u8.max() == 255
    i8 = ember.zeros(N, dtype=ember.int8).random_(-5, 5, generator=g).numpy()
    assert set(np.unique(i8)) == set(range(-5, 5))
    f = ember.zeros(N).random_(10, generator=g).numpy()
    assert set(np.unique(f)) == set(range(10))
    b = ember.zeros(1000, dtype=ember.bool).random_(generator=g).numpy()
    assert b.any() and not b.all()
    big = ember.zeros(1000, dtype=ember.int64).random_(generator=g).numpy()
    assert big.min() >= 0 and big.max() > 2 ** 60
    fl = ember.zeros(1000).random_(generator=g).numpy()
    assert fl.min() >= 0 and fl.max() <= 2 ** 24 and fl.max() > 2 ** 20


@pytest.mark.parametrize("p", [0.0, 0.1, 0.5, 0.9, 1.0])
def test_bernoulli_frequencies(p):
    g = ember.Generator().manual_seed(15)
    x = ember.bernoulli(ember.full((N,), p), generator=g)
    assert x.dtype is ember.float32
    assert abs(x.numpy().mean() - p) < 0.005
    y = ember.empty(N, dtype=ember.float64).bernoulli_(p, generator=g).numpy()
    assert abs(y.mean() - p) < 0.005
    z = ember.bernoulli(ember.zeros(N, dtype=ember.int64), p, generator=g)
    assert z.dtype is ember.int64 and abs(z.numpy().mean() - p) < 0.005


def test_bernoulli_tensor_p_inplace_and_poisson():
    g = ember.Generator().manual_seed(16)
    p = ember.tensor([0.0, 0.25, 1.0])
    x = ember.empty(N // 10, 3).bernoulli_(p, generator=g).numpy()
    assert np.allclose(x.mean(axis=0), [0, 0.25, 1], atol=0.01)
    lam = ember.tensor([0.0, 1.0, 4.5]).expand(N // 10, 3).contiguous()
    counts = ember.poisson(lam, generator=g)
    assert counts.dtype is ember.float32
    assert np.allclose(counts.numpy().mean(axis=0), [0, 1, 4.5], atol=0.05)
    assert np.allclose(counts.numpy().var(axis=0), [0, 1, 4.5], atol=0.15)


def test_multinomial_frequencies_with_and_without_replacement():
    g = ember.Generator().manual_seed(17)
    probs = ember.tensor([[1.0, 0.0, 3.0, 6.0], [0.0, 0.0, 0.0, 2.0]])
    s = ember.multinomial(probs, N // 10, replacement=True, generator=g)
    assert s.dtype is ember.int64 and s.shape == (2, N // 10)
    freq = np.bincount(s.numpy()[0], minlength=4) / (N // 10)
    assert np.allclose(freq, [0.1, 0, 0.3, 0.6], atol=0.01)
    assert (s.numpy()[1] == 3).all()
    draws = ember.multinomial(ember.tensor([1.0, 2.0, 3.0, 4.0]).expand(20000, 4).contiguous(),
                              2, generator=g).numpy()
    assert (draws[:, 0] != draws[:, 1]).all()
    first = np.bincount(draws[:, 0], minlength=4) / 20000
    assert np.allclose(first, [0.1, 0.2, 0.3, 0.4], atol=0.015)
    full = ember.multinomial(ember.tensor([1.0, 0.0, 1.0]), 3, generator=g).tolist()
    assert sorted(full) == [0, 1, 2] and full[2] == 1
    one_d = ember.multinomial(ember.ones(5), 5, generator=g)
    assert one_d.shape == (5,) and sorted(one_d.tolist()) == list(range(5))


# ---------------------------------------------------------------- argument errors vs torch


ERRORS = [
    (lambda lib: lib.bernoulli(lib.tensor([0.5, 1.5])), "p_in >= 0"),
    (lambda lib: lib.bernoulli(lib.zeros(3), 1.5), "bernoulli_ expects p to be in"),
    (lambda lib: lib.bernoulli(lib.zeros(3, dtype=lib.int64)), None),
    (lambda lib: lib.zeros(3).bernoulli_(lib.tensor([0.2, 0.3, 1.2])), "p_in >= 0"),
    (lambda lib: lib.zeros(3).bernoulli_(2.0), "bernoulli_ expects p"),
    (lambda lib: lib.multinomial(lib.ones(3), 4), "without replacement"),
    (lambda lib: lib.multinomial(lib.ones(3), 0), "n_sample <= 0"),
    (lambda lib: lib.multinomial(lib.tensor([1.0, -1.0]), 1), "element < 0"),
    (lambda lib: lib.multinomial(lib.tensor([0.0, 0.0]), 1), "sum of probabilities"),
    (lambda lib: lib.multinomial(lib.tensor([1.0, float("nan")]), 1), "nan"),
    (lambda lib: lib.multinomial(lib.ones(2, 2, 2), 1), "1 or 2 dim"),
    (lambda lib: lib.multinomial(lib.ones(2, dtype=lib.int64), 1), "floating-point"),
    (lambda lib: lib.poisson(lib.tensor([-1.0, 2.0])), "non-negative"),
    (lambda lib: lib.poisson(lib.tensor([1, 2])), None),
    (lambda lib: lib.zeros(3).uniform_(2, 1), "from=2 > to=1"),
    (lambda lib: lib.zeros(3, dtype=lib.int64).uniform_(), None),
    (lambda lib: lib.zeros(3).normal_(0, -1), "std >= 0.0"),
    (lambda lib: lib.zeros(3, dtype=lib.int64).normal_(), None),
    (lambda lib: lib.zeros(3).random_(5, 3), "from=5 >= to=3"),
    (lambda lib: lib.zeros(3, dtype=lib.uint8).random_(0, 300), "out of bounds"),
    (lambda lib: lib.zeros(3).exponential_(-1), "lambda > 0.0"),
    (lambda lib: lib.zeros(3).exponential_(0), "lambda > 0.0"),
    (lambda lib: lib.zeros(3, dtype=lib.int64).exponential_(), "continuous"),
    (lambda lib: lib.zeros(3).geometric_(0), "geometric_ expects p to be in"),
    (lambda lib: lib.zeros(3).geometric_(1.5), "geometric_ expects p"),
    (lambda lib: lib.zeros(3).cauchy_(0, -1), "sigma > 0.0"),
    (lambda lib: lib.zeros(3, dtype=lib.int64).cauchy_(), "continuous"),
    (lambda lib: lib.zeros(3).log_normal_(1, -1), "std > 0.0"),
    (lambda lib: lib.zeros(3, dtype=lib.int64).log_normal_(), None),
    (lambda lib: lib.ones(2, requires_grad=True).uniform_(), "leaf Variable"),
    (lambda lib: lib.ones(2, requires_grad=True).normal_(), "leaf Variable"),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_errors_match_torch(case):
    fn, match = ERRORS[case]
    _raises_like(lambda: fn(ember), lambda: fn(torch), match)


# ---------------------------------------------------------------- in-place details


def test_inplace_samplers_keep_dtype_shape_and_bump_version():
    for method, args in [("uniform_", ()), ("normal_", ()), ("random_", (0, 5)),
                         ("exponential_", ()), ("geometric_", (0.5,)), ("cauchy_", ()),
                         ("log_normal_", ()), ("bernoulli_", (0.5,))]:
        for name in ("float32", "float64", "float16"):
            ed, td = DTYPE_PAIRS[name]
            e, t = ember.zeros(3, 4, dtype=ed).t(), torch.zeros(3, 4, dtype=td).t()
            version = e._version
            assert getattr(e, method)(*args) is e
            getattr(t, method)(*args)
            _same_meta(e, t)
            assert e._version == version + 1
            m = ember.zeros(2, device="meta")
            assert getattr(m, method)(*args) is m


def test_inplace_sampler_on_graph_tensor_gives_zero_grad():
    x, tx = ember.ones(3, requires_grad=True), torch.ones(3, requires_grad=True)
    y, ty = x * 2, tx * 2
    y.uniform_()
    ty.uniform_()
    (y * x).sum().backward()
    (ty * tx).sum().backward()
    assert x.grad.tolist() == y.tolist()  # only y's new values: no gradient through y
    assert tx.grad.tolist() == ty.tolist()
    assert y.requires_grad and ty.requires_grad


def test_threads():
    before = ember.get_num_threads()
    assert before >= 1 and isinstance(ember.get_num_interop_threads(), int)
    ember.set_num_threads(1)
    assert ember.get_num_threads() == 1
    ember.set_num_threads(before)
    assert ember.get_num_threads() == before
    # set_num_interop_threads works once per process: tests/test_threads.py runs it in a fresh one
    _raises_like(lambda: ember.set_num_threads(0), lambda: torch.set_num_threads(0),
                 "positive integer")
    _raises_like(lambda: ember.set_num_interop_threads(0),
                 lambda: torch.set_num_interop_threads(0), "positive integer")


def test_rand_randn_need_a_size():
    _raises_like(lambda: ember.rand(), lambda: torch.rand(), "invalid combination")
    _raises_like(lambda: ember.randn(), lambda: torch.randn(), "invalid combination")
    _same_meta(ember.rand(()), torch.rand(()))


def test_fork_rng_restores_the_default_generator():
    from ember.ops.random import fork_rng

    ember.manual_seed(21)
    with fork_rng():
        inside = ember.rand(4).tolist()
    assert ember.rand(4).tolist() == inside
    with fork_rng(enabled=False):
        ember.rand(1)
    assert ember.rand(4).tolist() != inside


# ---------------------------------------------------------------- torch's numbers, exactly

SEEDS = [0, 1, 7, 2 ** 40 + 3, -5]
ALL_FLOATS = ["float32", "float64", "float16", "bfloat16"]


def _both(seed, ember_fn, torch_fn):
    ember.manual_seed(seed)
    e = ember_fn()
    torch.manual_seed(seed)
    t = torch_fn()
    return e, t


def _exact(e, t):
    _same_meta(e, t)
    en = e.float().numpy() if e.dtype is ember.bfloat16 else e.numpy()
    tn = t.float().numpy() if t.dtype is torch.bfloat16 else t.numpy()
    np.testing.assert_array_equal(en, tn)


def _close(e, t, ulps=2, scale=1.0):
    """Equal up to ``ulps`` units in the last place of the dtype, relative to ``scale`` (for
    float32 normals, whose libm calls round differently in torch; an offset ``mean`` makes the
    error relative to the spread rather than to each value)."""
    _same_meta(e, t)
    en, tn = e.numpy(), t.numpy()
    eps = np.finfo(tn.real.dtype).eps
    np.testing.assert_allclose(en, tn, rtol=ulps * eps, atol=ulps * eps * scale * 4)


def _check(e, t):
    if e.dtype in (ember.float32, ember.complex64):
        _close(e, t)
    elif e.dtype in (ember.float64, ember.complex128):
        _close(e, t, ulps=1)
    else:
        _exact(e, t)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", ALL_FLOATS + ["complex64", "complex128"])
@pytest.mark.parametrize("size", [(), (0,), (1,), (3,), (4, 5), (2, 3, 70)])
def test_rand_is_torchs(seed, name, size):
    ed, td = getattr(ember, name), getattr(torch, name)
    _exact(*_both(seed, lambda: ember.rand(size, dtype=ed), lambda: torch.rand(size, dtype=td)))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", ALL_FLOATS + ["complex64", "complex128"])
@pytest.mark.parametrize("size", [(), (0,), (3,), (15,), (16,), (17,), (33,), (2, 50),
                                  (5003,)])
def test_randn_is_torchs(seed, name, size):
    ed, td = getattr(ember, name), getattr(torch, name)
    e, t = _both(seed, lambda: ember.randn(size, dtype=ed), lambda: torch.randn(size, dtype=td))
    _check(e, t)
    # the generator (with its cached normal) advanced the same way
    _exact(*_both_continue(lambda: ember.rand(3, dtype=ember.float64),
                           lambda: torch.rand(3, dtype=torch.float64)))


def _both_continue(ember_fn, torch_fn):
    return ember_fn(), torch_fn()


@pytest.mark.parametrize("seed", SEEDS[:3])
@pytest.mark.parametrize("name", ALL_FLOATS)
@pytest.mark.parametrize("bounds", [(-3, 5), (0.1, 0.2), (-1e-3, 2.5)])
@pytest.mark.parametrize("transposed", [False, True])
def test_uniform_and_normal_inplace_are_torchs(seed, name, bounds, transposed):
    ed, td = getattr(ember, name), getattr(torch, name)

    def target(lib, dtype, n):
        x = lib.empty(7, n, dtype=dtype)
        return x.t() if transposed else x

    lo, hi = bounds
    _exact(*_both(seed, lambda: target(ember, ed, 40).uniform_(lo, hi),
                  lambda: target(torch, td, 40).uniform_(lo, hi)))
    for n in (1, 3, 40):   # serial (small or non-contiguous) and block paths
        e, t = _both(seed, lambda: target(ember, ed, n).normal_(lo, hi),
                     lambda: target(torch, td, n).normal_(lo, hi))
        if name == "float32":
            _close(e, t, ulps=4, scale=abs(lo) + hi)
        elif name == "float64":
            _close(e, t, ulps=2, scale=abs(lo) + hi)
        else:
            _exact(e, t)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name,low,high", [
    ("int64", 0, 10), ("int64", -5, 100), ("int64", 3, 2 ** 40), ("int64", -2 ** 62, 2 ** 62),
    ("int32", -7, 1000), ("int16", 0, 300), ("int8", -100, 100), ("uint8", 0, 256),
    ("float32", -4, 9), ("float64", 0, 2 ** 40), ("float16", 0, 50), ("bfloat16", -3, 20)])
def test_randint_is_torchs(seed, name, low, high):
    ed, td = getattr(ember, name), getattr(torch, name)
    _exact(*_both(seed, lambda: ember.randint(low, high, (3, 7), dtype=ed),
                  lambda: torch.randint(low, high, (3, 7), dtype=td)))
    _exact(*_both(seed, lambda: ember.randint_like(ember.zeros(4, dtype=ed), low, high),
                  lambda: torch.randint_like(torch.zeros(4, dtype=td), low, high)))


@pytest.mark.parametrize("seed", SEEDS[:3])
@pytest.mark.parametrize("name", ["int64", "int32", "int16", "int8", "uint8", "bool", "float32",
                                  "float64", "float16", "bfloat16"])
def test_random_inplace_is_torchs(seed, name):
    ed, td = getattr(ember, name), getattr(torch, name)
    _exact(*_both(seed, lambda: ember.empty(30, dtype=ed).random_(),
                  lambda: torch.empty(30, dtype=td).random_()))
    _exact(*_both(seed, lambda: ember.empty(5, 6, dtype=ed).t().random_(2),
                  lambda: torch.empty(5, 6, dtype=td).t().random_(2)))
    if name not in ("bool", "uint8"):
        _exact(*_both(seed, lambda: ember.empty(30, dtype=ed).random_(-3, 5),
                      lambda: torch.empty(30, dtype=td).random_(-3, 5)))
    if name == "int64":
        _exact(*_both(seed, lambda: ember.empty(30, dtype=ed).random_(-2 ** 63, None),
                      lambda: torch.empty(30, dtype=td).random_(-2 ** 63, None)))
        _exact(*_both(seed, lambda: ember.empty(30, dtype=ed).random_(5, None),
                      lambda: torch.empty(30, dtype=td).random_(5, None)))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n", [0, 1, 2, 5, 100, 3000])
def test_randperm_is_torchs(seed, n):
    _exact(*_both(seed, lambda: ember.randperm(n), lambda: torch.randperm(n)))
    _exact(*_both(seed, lambda: ember.randperm(n, dtype=ember.float32),
                  lambda: torch.randperm(n, dtype=torch.float32)))


@pytest.mark.parametrize("seed", SEEDS[:3])
@pytest.mark.parametrize("name", ALL_FLOATS)
@pytest.mark.parametrize("n", [5, 40, 300])
def test_other_inplace_distributions_are_torchs(seed, name, n):
    ed, td = getattr(ember, name), getattr(torch, name)
    cases = [("exponential_", (2.5,)), ("geometric_", (0.2,)), ("cauchy_", (1.0, 2.0)),
             ("log_normal_", (0.5, 0.7)), ("bernoulli_", (0.3,))]
    for method, args in cases:
        e, t = _both(seed, lambda: getattr(ember.empty(n, dtype=ed), method)(*args),
                     lambda: getattr(torch.empty(n, dtype=td), method)(*args))
        if name == "float64" and n > 64 and method in ("exponential_", "cauchy_", "log_normal_"):
            _close(e, t, ulps=2)     # NumPy's SIMD log1p/tan/exp vs the C library's
        else:
            _exact(e, t)
    _exact(*_both(seed, lambda: ember.zeros(n, dtype=ember.int64).geometric_(0.4),
                  lambda: torch.zeros(n, dtype=torch.int64).geometric_(0.4)))


@pytest.mark.parametrize("seed", SEEDS[:3])
@pytest.mark.parametrize("name", ALL_FLOATS)
def test_bernoulli_multinomial_poisson_are_torchs(seed, name):
    ed, td = getattr(ember, name), getattr(torch, name)
    p = np.random.default_rng(seed % 100).random((5, 9))
    p[1, 3] = 0.0
    ep, tp = ember.tensor(p, dtype=ed), torch.tensor(p, dtype=td)
    for fn in (lambda lib, x: lib.bernoulli(x),
               lambda lib, x: lib.bernoulli(lib.zeros_like(x), 0.3),
               lambda lib, x: lib.zeros(9, 5, dtype=x.dtype).t().bernoulli_(x[0]),
               lambda lib, x: lib.poisson(x * 30),
               lambda lib, x: lib.poisson(x * 3),
               lambda lib, x: lib.multinomial(x, 20, True),
               lambda lib, x: lib.multinomial(x, 6),
               lambda lib, x: lib.multinomial(x[0], 1, True),
               lambda lib, x: lib.multinomial(x[0], 9)):
        _exact(*_both(seed, lambda: fn(ember, ep), lambda: fn(torch, tp)))


@pytest.mark.parametrize("seed", SEEDS[:3])
@pytest.mark.parametrize("name", ALL_FLOATS)
@pytest.mark.parametrize("shape", [(3,), (40,), (2, 1, 9)])
def test_normal_overloads_are_torchs(seed, name, shape):
    ed, td = getattr(ember, name), getattr(torch, name)
    cases = [lambda lib, d: lib.normal(lib.full(shape, 2.0, dtype=d), lib.full(shape, 3.0, dtype=d)),
             lambda lib, d: lib.normal(lib.full(shape, 2.0, dtype=d), 3.0),
             lambda lib, d: lib.normal(2.0, lib.full(shape, 3.0, dtype=d)),
             lambda lib, d: lib.normal(2.0, 3.0, shape, dtype=d),
             lambda lib, d: lib.randn_like(lib.zeros(shape, dtype=d)),
             lambda lib, d: lib.rand_like(lib.zeros(shape, dtype=d))]
    for fn in cases:
        e, t = _both(seed, lambda: fn(ember, ed), lambda: fn(torch, td))
        if name in ("float32", "float64"):
            _close(e, t, ulps=4, scale=5.0)
        else:
            _exact(e, t)


@pytest.mark.parametrize("seed", [0, 5, -1, 2 ** 63, 2 ** 64 - 1, -2 ** 63, 123456789012345])
def test_seeds_and_state_bytes_are_torchs(seed):
    ember.manual_seed(seed)
    torch.manual_seed(seed)
    assert ember.initial_seed() == torch.initial_seed()
    np.testing.assert_array_equal(ember.get_rng_state().numpy(), torch.get_rng_state().numpy())
    _exact(ember.rand(5), torch.rand(5))
    ember.randn(3, dtype=ember.float64)      # leaves a cached normal in both
    torch.randn(3, dtype=torch.float64)
    np.testing.assert_array_equal(ember.get_rng_state().numpy(), torch.get_rng_state().numpy())
    g, tg = ember.Generator().manual_seed(seed), torch.Generator().manual_seed(seed)
    np.testing.assert_array_equal(g.get_state().numpy(), tg.get_state().numpy())


@pytest.mark.parametrize("draws", [0, 1, 623, 624, 625, 2000])
def test_state_moves_between_ember_and_torch(draws):
    # torch -> ember
    torch.manual_seed(9)
    torch.rand(draws)
    torch.randn(1, dtype=torch.float64)
    ember.set_rng_state(ember.tensor(torch.get_rng_state().numpy()))
    _exact(ember.randn(5, dtype=ember.float64), torch.randn(5, dtype=torch.float64))
    _exact(ember.rand(700), torch.rand(700))
    # ember -> torch
    ember.manual_seed(11)
    ember.rand(draws)
    ember.randn(3, dtype=ember.float64)
    torch.set_rng_state(torch.from_numpy(ember.get_rng_state().numpy()))
    _exact(ember.randn(5, dtype=ember.float64), torch.randn(5, dtype=torch.float64))
    _exact(ember.rand(700), torch.rand(700))
    np.testing.assert_array_equal(ember.get_rng_state().numpy(), torch.get_rng_state().numpy())
    # torch 2.13 refuses the legacy 5048-byte layout; so does ember
    legacy = torch.get_rng_state()[:5048]
    _raises_like(lambda: ember.set_rng_state(ember.tensor(legacy.numpy())),
                 lambda: torch.set_rng_state(legacy), "size to be 5048")


def test_set_state_errors_like_torch():
    g, tg = ember.Generator(), torch.Generator()
    bad = torch.get_rng_state()
    bad[8:12] = 0      # left == 0
    _raises_like(lambda: g.set_state(ember.tensor(bad.numpy())), lambda: tg.set_state(bad),
                 "Invalid mt19937 state")
    _raises_like(lambda: g.set_state(ember.zeros(5050, dtype=ember.uint8)),
                 lambda: tg.set_state(torch.zeros(5050, dtype=torch.uint8)), "5056")


def test_generator_seed_is_reproducible_and_random():
    g = ember.Generator()
    s = g.seed()
    assert 0 <= s < 2 ** 64 and g.initial_seed() == s
    tg = torch.Generator().manual_seed(s)
    _exact(ember.rand(4, generator=g), torch.rand(4, generator=tg))


def test_orthogonal_init_draws_as_torch():
    for seed in (0, 1):
        e, t = _both(seed, lambda: ember.nn.init.orthogonal_(ember.empty(4, 6)),
                     lambda: torch.nn.init.orthogonal_(torch.empty(4, 6)))
        np.testing.assert_allclose(e.numpy(), t.numpy(), atol=1e-6)
        _exact(ember.rand(3), torch.rand(3))       # the generator advanced the same way


def test_float_randint_range_warns_past_the_exact_range_like_torch():
    with pytest.warns(UserWarning, match="out of bounds"):
        torch.randint(0, 2 ** 30, (2,), dtype=torch.float32)
    with pytest.warns(UserWarning, match="out of bounds"):
        ember.randint(0, 2 ** 30, (2,), dtype=ember.float32)


def test_randperm_large_is_fast_enough_and_torchs():
    import time

    ember.manual_seed(3)
    start = time.perf_counter()
    e = ember.randperm(60_000)
    elapsed = time.perf_counter() - start
    torch.manual_seed(3)
    _exact(e, torch.randperm(60_000))
    print(f"randperm(60000): {elapsed * 1e3:.1f} ms")
