"""Row-wise ``add.at`` accumulation (``index_add`` along dim 0, an embedding's weight gradient,
``index_put_`` with ``accumulate``), which the CPU kernel runs in rounds of distinct indices:
against torch, bit for bit where torch also adds each row's terms in index order."""

import numpy as np
import pytest
import torch

import ember


def _indices(rng, rows, count, repeats):
    """``count`` indices into ``rows`` rows, the first of them repeated ``repeats`` times."""
    idx = rng.integers(0, rows, count)
    idx[rng.choice(count, repeats, replace=False)] = idx[0]
    return idx


@pytest.mark.parametrize("repeats", [1, 5, 32, 40])   # 40: past the rounds, add.at again
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_index_add_rows_matches_torch(repeats, dtype):
    rng = np.random.default_rng(repeats)
    idx = _indices(rng, 300, 500, repeats)
    base = (rng.standard_normal((300, 64)) * 10).astype(dtype)
    source = (rng.standard_normal((500, 64)) * 10).astype(dtype)
    ours = ember.tensor(base).index_add(0, ember.tensor(idx), ember.tensor(source))
    theirs = torch.tensor(base).index_add(0, torch.tensor(idx), torch.tensor(source))
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_embedding_weight_grad_matches_torch():
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, 256, (16, 64))
    weight = rng.standard_normal((256, 128)).astype(np.float32)
    grad = rng.standard_normal((16, 64, 128)).astype(np.float32)
    results = []
    for lib in (ember, torch):
        w = lib.tensor(weight, requires_grad=True)
        lib.nn.functional.embedding(lib.tensor(tokens), w).backward(lib.tensor(grad))
        results.append(w.grad.numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-6, atol=1e-6)


def test_index_put_accumulate_with_negative_indices_matches_torch():
    rng = np.random.default_rng(1)
    idx = np.array([-1, 199, 3, -197, 3, 0] * 40)
    values = rng.standard_normal((idx.size, 48)).astype(np.float32)
    results = []
    for lib in (ember, torch):
        out = lib.zeros(200, 48)
        out.index_put_((lib.tensor(idx),), lib.tensor(values), accumulate=True)
        results.append(out.numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-6, atol=1e-5)
