"""Each sampler's order against torch's, with the same generator seed (ember's CPU generator is
torch's mt19937, so the orders are identical), plus random_split and module initialisation."""

import numpy as np
import pytest
import torch
import torch.utils.data as tdata

import ember
import ember.utils.data as edata

SEEDS = [0, 1, 17, 2 ** 40 + 5]


def _pair(seed):
    return ember.Generator().manual_seed(seed), torch.Generator().manual_seed(seed)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n", [1, 7, 100])
@pytest.mark.parametrize("replacement,num_samples", [(False, None), (False, 5), (False, 250),
                                                     (True, None), (True, 70), (True, 3)])
def test_random_sampler_with_generator(seed, n, replacement, num_samples):
    eg, tg = _pair(seed)
    es = edata.RandomSampler(range(n), replacement, num_samples, generator=eg)
    ts = tdata.RandomSampler(range(n), replacement, num_samples, generator=tg)
    assert list(es) == list(ts)
    assert list(es) == list(ts)          # the generator advanced the same way
    assert len(es) == len(ts)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("replacement", [False, True])
def test_random_sampler_default_generator(seed, replacement):
    ember.manual_seed(seed)
    torch.manual_seed(seed)
    es = edata.RandomSampler(range(50), replacement)
    ts = tdata.RandomSampler(range(50), replacement)
    assert list(es) == list(ts)
    assert list(es) == list(ts)
    assert ember.rand(4).tolist() == torch.rand(4).tolist()


@pytest.mark.parametrize("seed", SEEDS)
def test_subset_random_sampler(seed):
    indices = [3, 9, 27, 81, 5, 11, 2]
    eg, tg = _pair(seed)
    assert list(edata.SubsetRandomSampler(indices, eg)) == \
        list(tdata.SubsetRandomSampler(indices, tg))
    ember.manual_seed(seed)
    torch.manual_seed(seed)
    assert list(edata.SubsetRandomSampler(indices)) == list(tdata.SubsetRandomSampler(indices))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("replacement,num_samples", [(True, 30), (True, 1), (False, 6),
                                                     (False, 1)])
def test_weighted_random_sampler(seed, replacement, num_samples):
    weights = np.random.default_rng(seed % 1000).random(9).tolist()
    weights[4] = 0.0
    eg, tg = _pair(seed)
    es = edata.WeightedRandomSampler(weights, num_samples, replacement, generator=eg)
    ts = tdata.WeightedRandomSampler(weights, num_samples, replacement, generator=tg)
    assert list(es) == list(ts)
    ember.manual_seed(seed)
    torch.manual_seed(seed)
    es = edata.WeightedRandomSampler(weights, num_samples, replacement)
    ts = tdata.WeightedRandomSampler(weights, num_samples, replacement)
    assert list(es) == list(ts)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("drop_last", [False, True])
def test_batch_sampler_over_random_samplers(seed, drop_last):
    eg, tg = _pair(seed)
    inner = [(edata.RandomSampler(range(23), generator=eg),
              tdata.RandomSampler(range(23), generator=tg)),
             (edata.RandomSampler(range(23), True, 40, generator=eg),
              tdata.RandomSampler(range(23), True, 40, generator=tg)),
             (edata.WeightedRandomSampler([1.0, 2.0, 3.0], 10, generator=eg),
              tdata.WeightedRandomSampler([1.0, 2.0, 3.0], 10, generator=tg))]
    for es, ts in inner:
        eb = edata.BatchSampler(es, 4, drop_last)
        tb = tdata.BatchSampler(ts, 4, drop_last)
        assert list(eb) == list(tb)
        assert len(eb) == len(tb)


@pytest.mark.parametrize("size", [10, 11, 3])
@pytest.mark.parametrize("replicas", [1, 3, 4])
@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("shuffle", [True, False])
def test_distributed_sampler(size, replicas, drop_last, shuffle):
    for rank in range(replicas):
        for seed in (0, 7):
            es = edata.DistributedSampler(range(size), replicas, rank, shuffle, seed, drop_last)
            ts = tdata.DistributedSampler(range(size), replicas, rank, shuffle, seed, drop_last)
            for epoch in (0, 1, 5):
                es.set_epoch(epoch)
                ts.set_epoch(epoch)
                assert list(es) == list(ts), (rank, seed, epoch)
                assert len(es) == len(ts)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("lengths", [[3, 7], [0.5, 0.5], [0.3, 0.3, 0.4], [10], [1, 2, 3, 4]])
def test_random_split(seed, lengths):
    eg, tg = _pair(seed)
    es = edata.random_split(range(10), lengths, generator=eg)
    ts = tdata.random_split(range(10), lengths, generator=tg)
    assert [list(s.indices) for s in es] == [list(s.indices) for s in ts]
    ember.manual_seed(seed)
    torch.manual_seed(seed)
    es = edata.random_split(range(10), lengths)
    ts = tdata.random_split(range(10), lengths)
    assert [list(s.indices) for s in es] == [list(s.indices) for s in ts]


def _params(e_module, t_module):
    e = [p.detach().numpy() for p in e_module.parameters()]
    t = [p.detach().numpy() for p in t_module.parameters()]
    assert len(e) == len(t)
    return e, t


@pytest.mark.parametrize("seed", [0, 3])
@pytest.mark.parametrize("build", [
    lambda nn: nn.Linear(5, 3),
    lambda nn: nn.Linear(7, 4, bias=False),
    lambda nn: nn.Conv2d(3, 4, 3),
    lambda nn: nn.Conv1d(2, 5, 4, groups=1),
    lambda nn: nn.Sequential(nn.Linear(8, 6), nn.ReLU(), nn.Linear(6, 2)),
], ids=["linear", "linear_nobias", "conv2d", "conv1d", "mlp"])
def test_module_init_matches_torch_exactly(seed, build):
    ember.manual_seed(seed)
    torch.manual_seed(seed)
    e, t = _params(build(ember.nn), build(torch.nn))
    for a, b in zip(e, t):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("seed", [0, 3])
def test_embedding_init_matches_torch_to_an_ulp(seed):
    # normal_ on float32: Box-Muller with torch's float libm vs ours evaluated in double
    ember.manual_seed(seed)
    torch.manual_seed(seed)
    e, t = _params(ember.nn.Embedding(10, 20), torch.nn.Embedding(10, 20))
    np.testing.assert_allclose(e[0], t[0], rtol=3e-7, atol=3e-7)
    assert ember.rand(3).tolist() == torch.rand(3).tolist()


@pytest.mark.parametrize("seed", [0, 3])
def test_lstm_init_matches_torch(seed):
    ember.manual_seed(seed)
    torch.manual_seed(seed)
    e, t = _params(ember.nn.LSTM(4, 6, num_layers=2), torch.nn.LSTM(4, 6, num_layers=2))
    for a, b in zip(e, t):
        np.testing.assert_array_equal(a, b)
