"""Random numbers on the webgpu device: Philox-4x32-10 in WGSL against a NumPy Philox written
here from the published algorithm (itself checked on Random123's known-answer vectors), the
generator's seed and offset as torch's CUDA generator keeps them, the distributions' moments
against bounds from the central limit theorem, and dropout in strict mode against torch's
scaling and a CPU step with the same mask."""

import math

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.webgpu import _random as webgpu_random
from ember.webgpu import _runtime

needs_gpu = pytest.mark.skipif(not ember.webgpu.is_available(),
                               reason=f"webgpu unavailable: {_runtime.probe().reason}")
pytestmark = needs_gpu

# ---------------------------------------------------------------- the reference generator

_MULTIPLIERS = (0xD2511F53, 0xCD9E8D57)
_WEYL = (0x9E3779B9, 0xBB67AE85)
_MASK = np.uint64(0xFFFFFFFF)


def philox4x32_10(counters, key):
    """Philox-4x32-10 of ``counters`` (rows of four uint32 words) under ``key`` (two words):
    ten rounds of two 32x32->64 multiplications, the key bumped by the Weyl constants before
    every round but the first. Returns rows of four uint32 words."""
    c = [np.asarray(counters, np.uint64)[..., j] for j in range(4)]
    k0, k1 = np.uint64(key[0]), np.uint64(key[1])
    for round_ in range(10):
        if round_:
            k0 = (k0 + np.uint64(_WEYL[0])) & _MASK
            k1 = (k1 + np.uint64(_WEYL[1])) & _MASK
        p0 = np.uint64(_MULTIPLIERS[0]) * c[0]
        p1 = np.uint64(_MULTIPLIERS[1]) * c[2]
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ k0, p1 & _MASK,
             (p0 >> np.uint64(32)) ^ c[3] ^ k1, p0 & _MASK]
    return np.stack(c, axis=-1).astype(np.uint32)


def reference_words(seed, offset, n):
    """The ``n`` words a draw at ``offset`` makes: blocks ``offset / 4 + b``, key = the seed."""
    blocks = (n + 3) // 4
    base = offset // 4 + np.arange(blocks, dtype=np.uint64)
    counters = np.stack([base & _MASK, base >> np.uint64(32), 0 * base, 0 * base], axis=-1)
    return philox4x32_10(counters, (seed & 0xFFFFFFFF, seed >> 32)).ravel()[:n]


def reference_unit(words):
    return (words & np.uint32(0xFFFFFF)).astype(np.float32) * np.float32(2.0 ** -24)


# Random123's kat_vectors for philox4x32 with 10 rounds: counter, key, result
KNOWN_ANSWERS = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


@pytest.mark.parametrize("counter,key,expected", KNOWN_ANSWERS)
def test_the_numpy_reference_gives_the_known_answers(counter, key, expected):
    assert philox4x32_10([counter], key)[0].tolist() == list(expected)


@pytest.mark.parametrize("counter,key,expected", KNOWN_ANSWERS)
def test_the_wgsl_kernel_gives_the_known_answers(counter, key, expected):
    """Any counter (its high words too) and key through the kernel itself."""
    generator = ember.Generator("webgpu").manual_seed(key[0] | key[1] << 32)
    generator._offset = 4 * (counter[0] | counter[1] << 32)
    words = webgpu_random.PhiloxDraws(generator)._draw(
        "words", (4,), dtype=np.uint32, counter_high=counter[2:])
    assert words.get().tolist() == list(expected)


@pytest.mark.parametrize("seed", [0, 7, 2**64 - 1, 0x299F31D0A4093822])
def test_generator_words_are_bit_identical_to_the_reference(seed):
    generator = ember.Generator("webgpu").manual_seed(seed)
    draws = webgpu_random.PhiloxDraws(generator)
    first = draws.words(10).get()                  # 3 blocks: the offset moves by 12
    second = draws.words(5).get()
    assert first.tolist() == reference_words(seed, 0, 10).tolist()
    assert second.tolist() == reference_words(seed, 12, 5).tolist()
    assert generator.get_state()[8:].tolist() == list((20).to_bytes(8, "little"))


# ---------------------------------------------------------------- the sampling functions


def test_rand_randint_and_bernoulli_are_the_reference_transforms(strict):
    ember.webgpu.manual_seed(123)
    uniform = ember.rand(2, 3, device="webgpu")
    ints = ember.randint(-5, 12, (7,), device="webgpu")
    wide = ember.randint(-2**62, 2**62, (5,), device="webgpu")
    coins = ember.empty(9, device="webgpu").bernoulli_(0.3)
    scaled = ember.empty(6, device="webgpu").uniform_(-2.0, 3.0)
    words = reference_words(123, 0, 8 + 8 + 12 + 12 + 8)
    np.testing.assert_array_equal(uniform.cpu().numpy(), reference_unit(words[:6]).reshape(2, 3))
    assert ints.dtype == ember.int64
    np.testing.assert_array_equal(ints.cpu().numpy(), words[8:15].astype(np.int64) % 17 - 5)
    pairs = words[16:26].astype(np.uint64).reshape(5, 2)
    high_first = (pairs[:, 0] << np.uint64(32)) | pairs[:, 1]
    expected = [int(w) % 2**63 - 2**62 for w in high_first]
    assert wide.cpu().tolist() == expected
    np.testing.assert_array_equal(coins.cpu().numpy(),
                                  (reference_unit(words[28:37]) < np.float32(0.3)) * 1.0)
    np.testing.assert_array_equal(
        scaled.cpu().numpy(), reference_unit(words[40:46]) * np.float32(5.0) + np.float32(-2.0))


def test_randn_is_box_muller_on_the_reference_words(strict):
    ember.webgpu.manual_seed(5)
    got = ember.randn(10, device="webgpu").cpu().numpy()
    words = reference_words(5, 0, 12).astype(np.float64)
    u1 = ((words[0::2] // 256) + 1) * 2.0 ** -24
    theta = (words[1::2] // 256) * 2.0 ** -24 * 2 * math.pi
    radius = np.sqrt(-2 * np.log(u1))
    expected = np.stack([radius * np.cos(theta), radius * np.sin(theta)], axis=-1).ravel()[:10]
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


N = 1_000_000
SIGMAS = 6   # a false failure once in ~5e8 runs


def _within(value, expected, sd, what):
    assert abs(value - expected) < SIGMAS * sd, f"{what}: {value} vs {expected} +- {sd}"


def test_uniform_moments_follow_the_central_limit_theorem(strict):
    ember.webgpu.manual_seed(0)
    x = ember.rand(N, device="webgpu").cpu().numpy().astype(np.float64)
    assert x.min() >= 0 and x.max() < 1
    # U(0, 1): mean 1/2, variance 1/12, fourth central moment 1/80
    _within(x.mean(), 0.5, math.sqrt(1 / 12 / N), "mean")
    _within(x.var(), 1 / 12, math.sqrt((1 / 80 - 1 / 144) / N), "variance")


def test_normal_moments_follow_the_central_limit_theorem(strict):
    ember.webgpu.manual_seed(1)
    x = ember.empty(N, device="webgpu").normal_(2.0, 3.0).cpu().numpy().astype(np.float64)
    z = (x - 2.0) / 3.0
    # N(0, 1): the sample variance has variance 2 / n; the fourth moment is 3 (var 96 / n)
    _within(z.mean(), 0.0, math.sqrt(1 / N), "mean")
    _within(z.var(), 1.0, math.sqrt(2 / N), "variance")
    _within((z ** 4).mean(), 3.0, math.sqrt(96 / N), "fourth moment")


@pytest.mark.parametrize("p", [0.1, 0.5, 0.85])
def test_bernoulli_frequency_follows_the_central_limit_theorem(p, strict):
    ember.webgpu.manual_seed(2)
    x = ember.bernoulli(ember.full((N,), p, device="webgpu")).cpu().numpy()
    assert set(np.unique(x).tolist()) <= {0.0, 1.0}
    _within(x.mean(), p, math.sqrt(p * (1 - p) / N), "frequency")


def test_randint_covers_its_range_evenly(strict):
    ember.webgpu.manual_seed(3)
    x = ember.randint(3, 13, (N,), device="webgpu").cpu().numpy()
    counts = np.bincount(x - 3, minlength=10)
    assert x.min() == 3 and x.max() == 12
    for count in counts:
        _within(count / N, 0.1, math.sqrt(0.1 * 0.9 / N), "frequency")


# ---------------------------------------------------------------- the generator's state


def test_the_same_seed_gives_the_same_stream_and_offsets_differ(strict):
    ember.webgpu.manual_seed(11)
    first = [ember.rand(5, device="webgpu").cpu(), ember.randn(5, device="webgpu").cpu()]
    ember.webgpu.manual_seed(11)
    again = [ember.rand(5, device="webgpu").cpu(), ember.randn(5, device="webgpu").cpu()]
    for a, b in zip(first, again):
        assert a.tolist() == b.tolist()
    later = ember.rand(5, device="webgpu").cpu()
    assert not np.any(later.numpy() == first[0].numpy())


def test_state_round_trips_and_counts_the_words_used(strict):
    ember.webgpu.manual_seed(2**40 + 3)
    assert ember.webgpu.initial_seed() == 2**40 + 3
    ember.rand(9, device="webgpu")                       # 3 blocks: offset 12
    state = ember.webgpu.get_rng_state()
    assert state.dtype == ember.uint8 and state.device.type == "cpu"
    raw = bytes(state.tolist())
    assert int.from_bytes(raw[:8], "little") == 2**40 + 3
    assert int.from_bytes(raw[8:], "little") == 12
    a = ember.randn(6, device="webgpu").cpu()
    ember.webgpu.set_rng_state(state)
    assert ember.randn(6, device="webgpu").cpu().tolist() == a.tolist()
    with pytest.raises(RuntimeError, match="of size 16"):
        ember.webgpu.set_rng_state(ember.zeros(5, dtype=ember.uint8))


def test_ember_manual_seed_seeds_the_webgpu_generator_too(strict):
    ember.manual_seed(21)
    a = ember.rand(4, device="webgpu").cpu()
    ember.webgpu.manual_seed(21)
    assert ember.rand(4, device="webgpu").cpu().tolist() == a.tolist()


def test_fork_rng_restores_the_webgpu_generator(strict):
    ember.webgpu.manual_seed(8)
    with ember.random.fork_rng(device_type="webgpu"):
        inside = ember.rand(5, device="webgpu").cpu()
    assert ember.rand(5, device="webgpu").cpu().tolist() == inside.tolist()


def test_a_generator_argument_is_used_and_must_be_a_webgpu_one(strict):
    g = ember.Generator("webgpu").manual_seed(4)
    a = ember.rand(3, device="webgpu", generator=g).cpu()
    np.testing.assert_array_equal(a.numpy(), reference_unit(reference_words(4, 0, 3)))
    with pytest.raises(RuntimeError, match="Expected a 'webgpu' device type for generator but "
                                           "found 'cpu'"):
        ember.rand(3, device="webgpu", generator=ember.Generator())


@pytest.mark.parametrize("make", [
    lambda: ember.rand(3, device="webgpu", dtype=ember.float64),
    lambda: ember.randn(3, device="webgpu", dtype=ember.float64),
    lambda: ember.randint(0, 4, (3,), device="webgpu", dtype=ember.float64),
    lambda: ember.normal(0.0, 1.0, (3,), device="webgpu", dtype=ember.float64),
    lambda: ember.rand_like(ember.zeros(3), device="webgpu", dtype=ember.float64),
], ids=["rand", "randn", "randint", "normal", "rand_like"])
def test_float64_draws_are_refused_as_every_float64_webgpu_tensor(make):
    with pytest.raises(TypeError) as refused:
        ember.zeros(3, device="webgpu", dtype=ember.float64)
    with pytest.raises(TypeError, match="float64") as drawn:
        make()
    assert str(drawn.value) == str(refused.value)


# ---------------------------------------------------------------- dropout


@pytest.fixture
def strict(monkeypatch):
    monkeypatch.setenv("EMBER_WEBGPU_STRICT", "1")


@pytest.mark.parametrize("p", [0.2, 0.5])
def test_dropout_scales_as_torch_and_keeps_one_minus_p(p, strict):
    torch = pytest.importorskip("torch")
    kept_value = torch.nn.functional.dropout(torch.ones(4096), p, training=True)
    torch_scale = kept_value[kept_value != 0].unique().tolist()
    x = ember.ones(N, device="webgpu", requires_grad=True)
    ember.webgpu.manual_seed(9)
    out = F.dropout(x, p, training=True)
    out.sum().backward()
    values = out.detach().cpu().numpy()
    assert np.unique(values[values != 0]).tolist() == torch_scale
    _within((values != 0).mean(), 1 - p, math.sqrt(p * (1 - p) / N), "kept fraction")
    np.testing.assert_array_equal(x.grad.cpu().numpy(), values)   # d(x * mask)/dx = mask
    ember.webgpu.manual_seed(9)
    layer = nn.Dropout(p).to("webgpu").train()
    assert layer(ember.ones(N, device="webgpu")).cpu().tolist() == values.tolist()


def test_mlp_step_with_dropout_runs_on_the_gpu_and_matches_the_cpu_with_its_mask(strict):
    """A training step in strict mode (no fallback, none counted); the CPU, given the mask the
    reference Philox gives for the seed, computes the same loss and gradients."""
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Dropout(0.5), nn.Linear(32, 5))
    x, y = ember.randn(16, 10), ember.randint(0, 5, (16,))
    gpu_model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Dropout(0.5), nn.Linear(32, 5))
    gpu_model.load_state_dict(model.state_dict())
    gpu_model = gpu_model.to("webgpu").train()
    before = ember.webgpu.fallback_ops()
    ember.webgpu.manual_seed(77)
    loss = F.cross_entropy(gpu_model(x.to("webgpu")), y.to("webgpu"))
    loss.backward()
    ember.optim.SGD(gpu_model.parameters(), lr=0.1).step()
    assert ember.webgpu.fallback_ops() == before

    mask = (reference_unit(reference_words(77, 0, 16 * 32)) < np.float32(0.5)).reshape(16, 32)
    hidden = model[1](model[0](x)) * ember.tensor(mask.astype(np.float32)) / 0.5
    expected = F.cross_entropy(model[3](hidden), y)
    expected.backward()
    np.testing.assert_allclose(loss.item(), expected.item(), rtol=1e-5)
    for p, q in zip(model.parameters(), gpu_model.parameters()):
        np.testing.assert_allclose(q.grad.cpu().numpy(), p.grad.numpy(), rtol=1e-4, atol=1e-6)




M = N // 5  # the Poisson tests' samples


@pytest.mark.parametrize("rate", [0.5, 4.0, 10.0, 37.5, 1000.0])
def test_poisson_counts_are_drawn_on_the_gpu_with_poissons_law(rate, strict):
    """Knuth's method below 10, PTRS above: the counts' frequencies against the Poisson pmf
    (a chi-square test on bins expecting at least 20 counts each), reproduced by the seed."""
    stats = pytest.importorskip("scipy.stats")
    ember.webgpu.manual_seed(11)
    counts = ember.poisson(ember.full((M,), rate, device="webgpu"))
    assert counts.device.type == "webgpu" and counts.dtype == ember.float32
    values = counts.cpu().numpy().astype(np.int64)
    assert (values >= 0).all() and (values == counts.cpu().numpy()).all()
    law = stats.poisson(rate)
    low, high = int(law.ppf(1e-4)), int(law.ppf(1 - 1e-4))
    edges = np.arange(low, high + 2)
    expected = np.diff(law.cdf(edges - 1)) * M
    keep = expected >= 20
    observed = np.histogram(values, bins=np.append(edges[:-1], edges[-1]) - 0.5)[0]
    observed, expected = observed[keep], expected[keep]
    expected *= observed.sum() / expected.sum()
    assert stats.chisquare(observed, expected).pvalue > 1e-3
    ember.webgpu.manual_seed(11)
    again = ember.poisson(ember.full((M,), rate, device="webgpu")).cpu().numpy()
    np.testing.assert_array_equal(again, values)


def test_poisson_mixed_rates_keep_their_own_means(strict):
    rates = np.repeat(np.array([0.0, 2.0, 25.0, 1e6], np.float32), M // 4)
    ember.webgpu.manual_seed(12)
    values = ember.poisson(ember.tensor(rates, device="webgpu")).cpu().numpy().reshape(4, -1)
    assert (values[0] == 0).all()
    for row, rate in zip(values[1:], rates.reshape(4, -1)[1:, 0]):
        _within(row.mean(), rate, math.sqrt(rate / row.size), f"mean at rate {rate}")


@pytest.mark.parametrize("n", [0, 1, 2, 3, 31, 32, 33, 1025, 1 << 17])
def test_randperm_on_the_gpu_is_a_permutation_reproduced_by_the_seed(n, strict):
    ember.webgpu.manual_seed(13)
    perm = ember.randperm(n, device="webgpu")
    assert perm.device.type == "webgpu" and perm.dtype == ember.int64
    values = perm.cpu().numpy()
    np.testing.assert_array_equal(np.sort(values), np.arange(n))
    ember.webgpu.manual_seed(13)
    np.testing.assert_array_equal(ember.randperm(n, device="webgpu").cpu().numpy(), values)
    if n > 100:  # the next draw is another permutation
        assert not np.array_equal(ember.randperm(n, device="webgpu").cpu().numpy(), values)


def test_randperm_on_the_gpu_draws_every_order_equally_often(strict):
    """All 6 orders of 3 elements (600 draws: a chi-square test), and the first 4096 values
    of a 2**16-permutation spread evenly over 16 bins."""
    import itertools

    stats = pytest.importorskip("scipy.stats")
    ember.webgpu.manual_seed(14)
    seen = [tuple(ember.randperm(3, device="webgpu").tolist()) for _ in range(600)]
    counts = [seen.count(order) for order in itertools.permutations(range(3))]
    assert stats.chisquare(counts).pvalue > 1e-3
    values = ember.randperm(1 << 16, device="webgpu").cpu().numpy()[:4096]
    assert stats.chisquare(np.bincount(values >> 12, minlength=16)).pvalue > 1e-3
