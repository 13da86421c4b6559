"""Distances and similarities against torch: pairwise_distance, cosine_similarity, pdist,
normalize and the PairwiseDistance / CosineSimilarity modules (values, gradients, double
backward, broadcasting, dtypes, errors, reprs, meta device)."""

import numpy as np
import pytest
import torch

import ember
from conftest import assert_grads_match, assert_same, make_pair
from ember import nn

F = ember.nn.functional
TF = torch.nn.functional

# ember's vector-norm derivative divides by a zero norm before masking it out
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

P_VALUES = [2.0, 1.0, 3.0, 0.5, float("inf"), 0.0]


def _rng(seed=0):
    return np.random.default_rng(seed)


@pytest.mark.parametrize("p", P_VALUES)
@pytest.mark.parametrize("shapes", [((4, 5), (4, 5)), ((4, 5), (5,)), ((2, 1, 3), (4, 3)),
                                    ((5,), (5,)), ((0, 3), (0, 3))])
@pytest.mark.parametrize("keepdim", [False, True])
def test_pairwise_distance(p, shapes, keepdim):
    rng = _rng()
    a, b = rng.standard_normal(shapes[0]), rng.standard_normal(shapes[1])
    assert_grads_match(lambda x, y: F.pairwise_distance(x, y, p=p, keepdim=keepdim),
                       lambda x, y: TF.pairwise_distance(x, y, p=p, keepdim=keepdim), a, b,
                       double_backward=p not in (float("inf"), 0.0))


def test_pairwise_distance_scalars_ints_eps_and_module():
    for a, b in (([1.0], [3.0]), ([1, 2], [3, 1])):
        (ae, at), (be, bt) = make_pair(np.array(a)), make_pair(np.array(b))
        assert_same(F.pairwise_distance(ae, be), TF.pairwise_distance(at, bt))
    ae, at = make_pair(np.float32(1.0))
    be, bt = make_pair(np.float32(3.0))
    assert_same(F.pairwise_distance(ae, be), TF.pairwise_distance(at, bt))
    x = _rng(1).standard_normal((3, 4)).astype(np.float32)
    y = x.copy()  # distance 0: only eps remains
    for kwargs in ({}, {"p": 1.0, "eps": 1e-3, "keepdim": True}):
        e, t = nn.PairwiseDistance(**kwargs), torch.nn.PairwiseDistance(**kwargs)
        assert repr(e) == repr(t) and list(e.state_dict()) == []
        assert_same(e(ember.tensor(x), ember.tensor(y)),
                    t(torch.from_numpy(x), torch.from_numpy(y)))


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("shapes", [((4, 5), (4, 5)), ((4, 5), (1, 5)), ((3, 1, 5), (4, 5))])
def test_cosine_similarity(dim, shapes):
    rng = _rng(2)
    a, b = rng.standard_normal(shapes[0]), rng.standard_normal(shapes[1])
    assert_grads_match(lambda x, y: F.cosine_similarity(x, y, dim=dim),
                       lambda x, y: TF.cosine_similarity(x, y, dim=dim), a, b,
                       double_backward=True)


def test_cosine_similarity_clamps_each_norm():
    rng = _rng(3)
    a, b = rng.standard_normal((4, 5)), rng.standard_normal((4, 5))
    a[1] = 0.0
    a[2] *= 1e-10
    b[3] *= 1e-9
    assert_grads_match(lambda x, y: F.cosine_similarity(x, y, eps=1e-8),
                       lambda x, y: TF.cosine_similarity(x, y, eps=1e-8), a, b)
    # large inputs stay within [-1, 1]
    big = rng.standard_normal((2, 3)) * 1e200
    (be, bt) = make_pair(big)
    assert_same(F.cosine_similarity(be, be), TF.cosine_similarity(bt, bt))


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_cosine_similarity_dtypes_and_module(dtype):
    x = _rng(4).standard_normal((3, 4)).astype(np.float32)
    y = _rng(5).standard_normal((3, 4)).astype(np.float32)
    xe, ye = ember.tensor(x).to(getattr(ember, dtype)), ember.tensor(y).to(getattr(ember, dtype))
    xt, yt = torch.from_numpy(x).to(getattr(torch, dtype)), torch.from_numpy(y).to(
        getattr(torch, dtype))
    tol = {} if dtype in ("float32", "float64") else {"rtol": 2e-2, "atol": 2e-2}
    for kwargs in ({}, {"dim": 0, "eps": 1e-6}):
        e, t = nn.CosineSimilarity(**kwargs), torch.nn.CosineSimilarity(**kwargs)
        assert repr(e) == repr(t)
        assert_same(e(xe, ye), t(xt, yt), **tol)
    ie, it = make_pair(np.array([1, 2, 3]))
    assert_same(F.cosine_similarity(ie, xe[0, :3], dim=0),
                TF.cosine_similarity(it, xt[0, :3], dim=0), **tol)


def test_cosine_similarity_errors():
    for f, lib in ((F, ember), (TF, torch)):
        with pytest.raises(RuntimeError, match="expected common dtype to be floating point"):
            f.cosine_similarity(lib.tensor([1, 2]), lib.tensor([1, 2]), dim=0)
        with pytest.raises(IndexError, match="Dimension out of range"):
            f.cosine_similarity(lib.ones(3), lib.ones(3), dim=1)
        with pytest.raises(RuntimeError, match="must match the size"):
            f.cosine_similarity(lib.ones(2, 3), lib.ones(4, 3))


@pytest.mark.parametrize("p", P_VALUES)
@pytest.mark.parametrize("shape", [(5, 3), (2, 4), (1, 3), (6, 1)])
def test_pdist(p, shape):
    a = _rng(6).standard_normal(shape)
    assert_grads_match(lambda x: F.pdist(x, p), lambda x: TF.pdist(x, p), a)


@pytest.mark.parametrize("p", P_VALUES)
def test_pdist_no_rows(p):
    # values only: torch 2.13's pdist backward crashes (segfault) on a (0, M) input
    xe, xt = make_pair(np.zeros((0, 3)))
    assert_same(F.pdist(xe, p), TF.pdist(xt, p))


def test_pdist_duplicate_rows_double_backward_and_float32():
    a = _rng(7).standard_normal((4, 3))
    a[2] = a[0]  # a zero distance: its gradient is 0 as in torch
    assert_grads_match(lambda x: F.pdist(x), lambda x: TF.pdist(x), a)
    b = _rng(8).standard_normal((4, 3))
    # torch has no double backward for pdist (nor cdist): the oracle is its definition in torch
    rows, cols = torch.triu_indices(4, 4, 1)
    assert_grads_match(lambda x: F.pdist(x, 3.0),
                       lambda x: torch.linalg.vector_norm(x[rows] - x[cols], 3.0, dim=1), b,
                       double_backward=True)
    c = b.astype(np.float32)
    assert_same(F.pdist(ember.tensor(c)), TF.pdist(torch.from_numpy(c)))
    assert_same(F.pdist(ember.tensor(c).t()), TF.pdist(torch.from_numpy(c).t()))


def test_pdist_errors():
    for f, lib in ((F, ember), (TF, torch)):
        with pytest.raises(RuntimeError, match="pdist only supports 2D tensors, got: 1D"):
            f.pdist(lib.ones(3))
        with pytest.raises(RuntimeError, match="non-negative p"):
            f.pdist(lib.ones(3, 2), p=-1)
        with pytest.raises(RuntimeError, match="floating-point dtypes"):
            f.pdist(lib.ones(3, 2, dtype=lib.int64))


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, float("inf")])
@pytest.mark.parametrize("dim", [1, 0, -1])
def test_normalize(p, dim):
    a = _rng(9).standard_normal((3, 4))
    assert_grads_match(lambda x: F.normalize(x, p, dim), lambda x: TF.normalize(x, p, dim), a,
                       double_backward=p != float("inf"))
    a[1] = 0.0  # the eps clamp (first order only: ember's vector_norm double backward at a
    # zero vector is NaN, an issue of the norm op, not of normalize)
    assert_grads_match(lambda x: F.normalize(x, p, dim), lambda x: TF.normalize(x, p, dim), a)


def test_normalize_out_dtypes_and_errors():
    x = _rng(10).standard_normal((2, 3)).astype(np.float32)
    xe, xt = make_pair(x)
    oe, ot = ember.empty(2, 3), torch.empty(2, 3)
    re_, rt = F.normalize(xe, out=oe), TF.normalize(xt, out=ot)
    assert re_ is oe and rt is ot
    assert_same(oe, ot)
    assert_same(F.normalize(xe.half(), dim=0), TF.normalize(xt.half(), dim=0), rtol=1e-3,
                atol=1e-3)
    assert_same(F.normalize(ember.tensor(3.0), dim=0), TF.normalize(torch.tensor(3.0), dim=0))
    for f, lib in ((F, ember), (TF, torch)):
        with pytest.raises(IndexError, match="Dimension out of range"):
            f.normalize(lib.ones(3), dim=1)
        with pytest.raises(RuntimeError):
            f.normalize(lib.tensor([1, 2]), dim=0)


def test_cdist_is_the_linalg_one():
    a, b = _rng(11).standard_normal((3, 4)), _rng(12).standard_normal((2, 4))
    assert_grads_match(lambda x, y: ember.cdist(x, y), lambda x, y: torch.cdist(x, y), a, b)


def test_meta_device():
    x = ember.empty((3, 4), device="meta")
    for ours, theirs in ((F.pairwise_distance(x, x), TF.pairwise_distance(*[torch.empty(
            3, 4, device="meta")] * 2)),
                         (F.cosine_similarity(x, x), TF.cosine_similarity(*[torch.empty(
                             3, 4, device="meta")] * 2)),
                         (F.pdist(x), TF.pdist(torch.empty(3, 4, device="meta"))),
                         (F.normalize(x), TF.normalize(torch.empty(3, 4, device="meta")))):
        assert ours.device.type == "meta"
        assert tuple(ours.shape) == tuple(theirs.shape)
        assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
