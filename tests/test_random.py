"""Random numbers: determinism under seeds and generators, state save/restore, shapes and dtypes
against torch, statistical checks (moments, KS tests, frequencies) and torch's argument errors.
Matching torch's streams is not a goal: torch is the oracle for shapes, dtypes and errors."""

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
    ember.set_num_interop_threads(3)
    assert ember.get_num_interop_threads() == 3
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
