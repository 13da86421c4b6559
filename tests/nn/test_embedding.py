"""Embedding, EmbeddingBag and one_hot against torch: lookups, weight gradients (padding_idx,
scale_grad_by_freq), max_norm renormalisation, bags (sum/mean/max, offsets,
per_sample_weights, include_last_offset, padding_idx), errors, reprs, init, meta device."""

import numpy as np
import pytest
import torch

import ember
from conftest import assert_grads_match, assert_same, to_torch
from ember import nn

F = ember.nn.functional
TF = torch.nn.functional


def _rng(seed=0):
    return np.random.default_rng(seed)


def _idx(array, dtype="int64"):
    array = np.asarray(array, dtype=dtype)
    return ember.tensor(array), torch.from_numpy(array.copy())


# ---------------------------------------------------------------- F.embedding


@pytest.mark.parametrize("indices", [[[0, 2, 2], [5, 1, 2]], [3], 4, [[]], [[[1, 1], [0, 5]]]])
@pytest.mark.parametrize("padding_idx", [None, 2, -1, 0])
@pytest.mark.parametrize("scale", [False, True])
def test_embedding_values_and_grads(indices, padding_idx, scale):
    weight = _rng().standard_normal((6, 3))
    ie, it = _idx(indices)
    assert_grads_match(
        lambda w: F.embedding(ie, w, padding_idx=padding_idx, scale_grad_by_freq=scale),
        lambda w: TF.embedding(it, w, padding_idx=padding_idx, scale_grad_by_freq=scale),
        weight, double_backward=True)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int64", "complex64"])
@pytest.mark.parametrize("index_dtype", ["int64", "int32"])
def test_embedding_dtypes(dtype, index_dtype):
    weight = (_rng().standard_normal((5, 4)) * 4).astype(np.float32)
    we, wt = ember.tensor(weight).to(getattr(ember, dtype)), torch.from_numpy(weight).to(
        getattr(torch, dtype))
    ie, it = _idx([[1, 4], [0, 1]], index_dtype)
    assert_same(F.embedding(ie, we), TF.embedding(it, wt))


def test_embedding_noncontiguous_weight_and_indices():
    weight = _rng().standard_normal((4, 6))
    idx = np.array([[0, 3, 5], [1, 1, 2]])
    we, wt = ember.tensor(weight).t(), torch.from_numpy(weight).t()
    ie, it = _idx(idx)
    assert_same(F.embedding(ie.t(), we), TF.embedding(it.t(), wt))


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, float("inf")])
def test_embedding_max_norm_renormalises_in_place(norm_type):
    weight = _rng(1).standard_normal((6, 3)) * 3
    we = ember.tensor(weight, requires_grad=True)
    wt = torch.from_numpy(weight.copy()).requires_grad_()
    ie, it = _idx([[0, 2, 2], [5, 1, 2]])
    version = we._version
    ye = F.embedding(ie, we, max_norm=1.5, norm_type=norm_type)
    yt = TF.embedding(it, wt, max_norm=1.5, norm_type=norm_type)
    assert_same(ye, yt)
    assert_same(we.detach(), wt.detach())  # rows 0, 1, 2, 5 rescaled; 3, 4 untouched
    assert we._version > version
    g = _rng(2).standard_normal(tuple(yt.shape))
    ye.backward(ember.tensor(g))
    yt.backward(torch.from_numpy(g))
    assert_same(we.grad, wt.grad)


def test_embedding_errors():
    for f, lib in ((F, ember), (TF, torch)):
        w = lib.zeros(5, 3)
        with pytest.raises(RuntimeError, match="'indices' to have one of the following scalar"):
            f.embedding(lib.tensor([1.0, 2.0]), w)
        with pytest.raises(RuntimeError, match="Long, Int"):
            f.embedding(lib.tensor([1], dtype=lib.int16), w)
        with pytest.raises(IndexError, match="index out of range in self"):
            f.embedding(lib.tensor([5]), w)
        with pytest.raises(IndexError, match="index out of range in self"):
            f.embedding(lib.tensor([-1]), w)
        with pytest.raises(RuntimeError, match="'weight' must be 2-D"):
            f.embedding(lib.tensor([1]), lib.zeros(5))
        with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
            f.embedding(lib.tensor([1]), w, padding_idx=5)
        with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
            f.embedding(lib.tensor([1]), w, padding_idx=-6)


# ---------------------------------------------------------------- nn.Embedding


@pytest.mark.parametrize("kwargs", [{}, {"padding_idx": 1}, {"padding_idx": -2},
                                    {"max_norm": 1.0}, {"max_norm": 2.0, "norm_type": 1.0},
                                    {"scale_grad_by_freq": True}])
def test_embedding_module(kwargs):
    e = nn.Embedding(7, 4, **kwargs)
    t = torch.nn.Embedding(7, 4, **kwargs)
    with torch.no_grad():
        t.weight.copy_(to_torch(e.weight))
    assert repr(e) == repr(t)
    assert list(e.state_dict()) == list(t.state_dict())
    assert e.padding_idx == t.padding_idx
    ie, it = _idx([[1, 2, 5], [6, 1, 0]])
    for _ in range(2):  # the second step sees renormalised weights
        ye, yt = e(ie), t(it)
        assert_same(ye, yt, rtol=1e-5, atol=1e-6)
        g = _rng().standard_normal(tuple(yt.shape)).astype(np.float32)
        ye.backward(ember.tensor(g))
        yt.backward(torch.from_numpy(g))
        assert_same(e.weight.grad, t.weight.grad, rtol=1e-5, atol=1e-6)
        assert_same(e.weight.detach(), t.weight.detach(), rtol=1e-5, atol=1e-6)


def test_embedding_init_distribution_and_padding_row():
    m = nn.Embedding(400, 50, padding_idx=3)
    w = m.weight.detach().numpy()
    assert np.all(w[3] == 0)
    rest = np.delete(w, 3, axis=0)
    assert abs(rest.mean()) < 0.02 and abs(rest.std() - 1) < 0.02
    m64 = nn.Embedding(3, 2, dtype=ember.float64)
    assert m64.weight.dtype is ember.float64 and m64.weight.requires_grad


def test_embedding_from_pretrained_and_freeze():
    pre = _rng().standard_normal((4, 3)).astype(np.float32)
    for freeze in (True, False):
        e = nn.Embedding.from_pretrained(ember.tensor(pre), freeze=freeze, padding_idx=1)
        t = torch.nn.Embedding.from_pretrained(torch.from_numpy(pre), freeze=freeze,
                                               padding_idx=1)
        assert e.weight.requires_grad is t.weight.requires_grad is (not freeze)
        assert repr(e) == repr(t)
        ie, it = _idx([0, 1, 3])
        assert_same(e(ie), t(it))
    for mod, lib in ((nn, ember), (torch.nn, torch)):
        with pytest.raises(AssertionError, match="expected to be 2-dimensional"):
            mod.Embedding.from_pretrained(lib.zeros(3))
        with pytest.raises(AssertionError, match="Shape of weight does not match"):
            mod.Embedding(3, 2, _weight=lib.zeros(2, 3))
        with pytest.raises(AssertionError, match="Padding_idx must be within"):
            mod.Embedding(3, 2, padding_idx=3)


# ---------------------------------------------------------------- embedding_bag

_INPUT = [1, 2, 4, 5, 4, 3, 2, 0]


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("offsets,last", [([0, 2, 2, 5], False), ([0, 3, 8], False),
                                          ([0, 2, 2, 5, 8], True), ([0], False)])
@pytest.mark.parametrize("padding_idx", [None, 4, -1])
def test_embedding_bag_1d(mode, offsets, last, padding_idx):
    weight = _rng().standard_normal((6, 3))
    ie, it = _idx(_INPUT)
    oe, ot = _idx(offsets)
    assert_grads_match(
        lambda w: F.embedding_bag(ie, w, oe, mode=mode, include_last_offset=last,
                                  padding_idx=padding_idx),
        lambda w: TF.embedding_bag(it, w, ot, mode=mode, include_last_offset=last,
                                   padding_idx=padding_idx), weight)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_2d(mode):
    weight = _rng(1).standard_normal((6, 4))
    ie, it = _idx([[1, 2, 2], [5, 0, 2]])
    assert_grads_match(lambda w: F.embedding_bag(ie, w, mode=mode),
                       lambda w: TF.embedding_bag(it, w, mode=mode), weight)


@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_embedding_bag_scale_grad_by_freq(mode):
    # torch 2.13's CPU embedding_bag divides by the counts of the wrong indices here (index 5
    # gets 1/3, index 2 gets 1), so the oracle is torch's F.embedding, whose scaling is right:
    # each index's gradient divided by its frequency in the batch.
    weight = _rng(1).standard_normal((6, 4))
    ie, it = _idx([[1, 2, 2], [5, 0, 2]])
    assert_grads_match(
        lambda w: F.embedding_bag(ie, w, mode=mode, scale_grad_by_freq=True),
        lambda w: getattr(TF.embedding(it, w, scale_grad_by_freq=True), mode)(1), weight)


@pytest.mark.parametrize("two_d", [False, True])
def test_embedding_bag_per_sample_weights(two_d):
    weight = _rng(2).standard_normal((6, 3))
    psw = _rng(3).standard_normal(8)
    if two_d:
        ie, it = _idx(np.array(_INPUT).reshape(2, 4))
        psw = psw.reshape(2, 4)
        oe = ot = None
    else:
        ie, it = _idx(_INPUT)
        oe, ot = _idx([0, 2, 2, 5])
    assert_grads_match(
        lambda w, p: F.embedding_bag(ie, w, oe, mode="sum", per_sample_weights=p,
                                     padding_idx=2),
        lambda w, p: TF.embedding_bag(it, w, ot, mode="sum", per_sample_weights=p,
                                      padding_idx=2), weight, psw)


def test_embedding_bag_max_norm_and_int32():
    weight = _rng(4).standard_normal((6, 3)) * 3
    we, wt = ember.tensor(weight), torch.from_numpy(weight.copy())
    ie, it = _idx(_INPUT, "int32")
    oe, ot = _idx([0, 3], "int32")
    assert_same(F.embedding_bag(ie, we, oe, max_norm=1.0), TF.embedding_bag(it, wt, ot,
                                                                           max_norm=1.0))
    assert_same(we, wt)


def test_embedding_bag_module():
    for kwargs in ({}, {"mode": "sum", "padding_idx": -2}, {"mode": "max", "max_norm": 1.0},
                   {"norm_type": 1.0, "include_last_offset": True}):
        e, t = nn.EmbeddingBag(6, 3, **kwargs), torch.nn.EmbeddingBag(6, 3, **kwargs)
        with torch.no_grad():
            t.weight.copy_(to_torch(e.weight))
        assert repr(e) == repr(t)
        assert list(e.state_dict()) == list(t.state_dict())
        ie, it = _idx(_INPUT)
        oe, ot = _idx([0, 2, 5, 8] if kwargs.get("include_last_offset") else [0, 2, 5])
        ye, yt = e(ie, oe), t(it, ot)
        assert_same(ye, yt, rtol=1e-5, atol=1e-6)
        ye.sum().backward()
        yt.sum().backward()
        assert_same(e.weight.grad, t.weight.grad, rtol=1e-5, atol=1e-6)
    pre = _rng().standard_normal((4, 3)).astype(np.float32)
    e = nn.EmbeddingBag.from_pretrained(ember.tensor(pre), mode="sum")
    t = torch.nn.EmbeddingBag.from_pretrained(torch.from_numpy(pre), mode="sum")
    assert not e.weight.requires_grad and repr(e) == repr(t)
    ie, it = _idx([[0, 1], [3, 3]])
    assert_same(e(ie), t(it))


def test_embedding_bag_errors():
    for f, lib in ((F, ember), (TF, torch)):
        w = lib.zeros(5, 3)
        idx = lib.tensor([1, 2, 3])
        with pytest.raises(ValueError, match="offsets has to be None"):
            f.embedding_bag(lib.tensor([[1, 2]]), w, lib.tensor([0]))
        with pytest.raises(ValueError, match="offsets has to be a 1D Tensor but got None"):
            f.embedding_bag(idx, w)
        with pytest.raises(ValueError, match="mode has to be one of sum, mean or max"):
            f.embedding_bag(idx, w, lib.tensor([0]), mode="min")
        with pytest.raises(NotImplementedError, match="per_sample_weights is only supported"):
            f.embedding_bag(idx, w, lib.tensor([0]), per_sample_weights=lib.ones(3))
        with pytest.raises(ValueError, match="must have the same shape as the input"):
            f.embedding_bag(idx, w, lib.tensor([0]), mode="sum", per_sample_weights=lib.ones(2))
        with pytest.raises(ValueError, match="max mode does not support scaling"):
            f.embedding_bag(idx, w, lib.tensor([0]), mode="max", scale_grad_by_freq=True)
        with pytest.raises(ValueError, match="weight has to be a 2D Tensor"):
            f.embedding_bag(idx, lib.zeros(5), lib.tensor([0]))
        with pytest.raises(RuntimeError, match="offsets\\[0\\] has to be 0"):
            f.embedding_bag(idx, w, lib.tensor([1]))
        with pytest.raises(RuntimeError, match="can not be greater than input's length"):
            f.embedding_bag(idx, w, lib.tensor([0, 4]))
        with pytest.raises(RuntimeError, match="not in the valid range"):
            f.embedding_bag(lib.tensor([1, 9]), w, lib.tensor([0]))
        with pytest.raises(RuntimeError, match="number of offset should be at least 1"):
            f.embedding_bag(idx, w, lib.tensor([], dtype=lib.int64), include_last_offset=True)
        with pytest.raises(RuntimeError, match="same type"):
            f.embedding_bag(idx, w, lib.tensor([0]), mode="sum",
                            per_sample_weights=lib.ones(3, dtype=lib.float64))


# ---------------------------------------------------------------- one_hot


@pytest.mark.parametrize("values,num_classes", [([0, 2, 1], -1), ([[1, 3], [0, 0]], 5),
                                                (3, -1), ([], 4), ([[]], 2)])
def test_one_hot(values, num_classes):
    ie, it = _idx(values)
    assert_same(F.one_hot(ie, num_classes), TF.one_hot(it, num_classes))


def test_one_hot_errors():
    for f, lib in ((F, ember), (TF, torch)):
        with pytest.raises(RuntimeError, match="only applicable to index tensor"):
            f.one_hot(lib.tensor([1, 2], dtype=lib.int32))
        with pytest.raises(RuntimeError, match="Can not infer total number of classes"):
            f.one_hot(lib.tensor([], dtype=lib.int64))
        with pytest.raises(RuntimeError, match="Class values must be non-negative"):
            f.one_hot(lib.tensor([-1]))
        with pytest.raises(RuntimeError, match="Class values must be smaller than num_classes"):
            f.one_hot(lib.tensor([3]), 3)


# ---------------------------------------------------------------- meta device


def test_meta_device():
    e = nn.Embedding(5, 3).to("meta")
    t = torch.nn.Embedding(5, 3).to("meta")
    ye = e(ember.empty((2, 4), dtype=ember.int64, device="meta"))
    yt = t(torch.empty((2, 4), dtype=torch.int64, device="meta"))
    assert ye.device.type == "meta" and tuple(ye.shape) == tuple(yt.shape)
    assert ye.dtype is ember.float32
    oh = F.one_hot(ember.empty((2, 3), dtype=ember.int64, device="meta"), 4)
    assert oh.device.type == "meta" and tuple(oh.shape) == (2, 3, 4) and oh.dtype is ember.int64
    bag = F.embedding_bag(ember.empty(6, dtype=ember.int64, device="meta"),
                          ember.empty((5, 3), device="meta"),
                          ember.empty(2, dtype=ember.int64, device="meta"))
    assert tuple(bag.shape) == (2, 3) and bag.device.type == "meta"


# ---------------------------------------------------------------- sparse gradients


def _sparse_parts(grad):
    """(indices, values, size, is_coalesced) of a sparse COO gradient, as NumPy arrays."""
    return (np.asarray(grad._indices().tolist()), np.asarray(grad._values().tolist()),
            tuple(grad.shape), grad.is_coalesced())


def _assert_same_sparse(ge, gt):
    assert ge.layout is ember.sparse_coo and gt.layout is torch.sparse_coo
    (ie, ve, se, ce), (it, vt, st, ct) = _sparse_parts(ge), _sparse_parts(gt)
    np.testing.assert_array_equal(ie, it)
    np.testing.assert_allclose(ve, vt, rtol=1e-12)
    assert se == st and ce == ct


@pytest.mark.parametrize("padding_idx", [None, 2])
def test_embedding_sparse_grad_matches_torch(padding_idx):
    weight = _rng(3).standard_normal((6, 3))
    ie, it = _idx([[0, 2, 2], [5, 1, 2]])
    cot = _rng(4).standard_normal((2, 3, 3))
    grads = []
    for lib, idx, f in ((ember, ie, F), (torch, it, TF)):
        w = lib.tensor(weight, requires_grad=True)
        f.embedding(idx, w, padding_idx=padding_idx, sparse=True).backward(lib.tensor(cot))
        grads.append(w.grad)
    _assert_same_sparse(*grads)


def test_embedding_bag_sparse_grad_matches_torch():
    weight = _rng(5).standard_normal((6, 3))
    ie, it = _idx([0, 2, 2, 4, 1, 5])
    oe, ot = _idx([0, 2, 5])
    psw = np.arange(1.0, 7.0)
    pe, pt = ember.tensor(psw), torch.tensor(psw)
    grads = []
    for lib, f, idx, off, psw in ((ember, F, ie, oe, pe), (torch, TF, it, ot, pt)):
        w = lib.tensor(weight, requires_grad=True)
        f.embedding_bag(idx, w, off, mode="mean", sparse=True, padding_idx=1).sum().backward()
        f.embedding_bag(idx, w, off, mode="sum", sparse=True,
                        per_sample_weights=psw).sum().backward()
        grads.append(w.grad)
    assert_same(grads[0].to_dense(), grads[1].to_dense())


def test_sparse_grad_accumulates_like_torch():
    """A sparse gradient adds into a dense .grad, and a dense one into a sparse .grad."""
    weight = _rng(6).standard_normal((5, 2))
    ie, it = _idx([[0, 3], [3, 4]])
    results = []
    for lib, f, idx in ((ember, F, ie), (torch, TF, it)):
        w = lib.tensor(weight, requires_grad=True)
        f.embedding(idx, w, sparse=True).sum().backward()
        first = w.grad.layout
        (f.embedding(idx, w, sparse=True).sum() + (w * w).sum()).backward()
        g, = lib.autograd.grad(f.embedding(idx, w, sparse=True).pow(2).sum() + w.sum(), w)
        results.append((first, w.grad, g))
    assert results[0][0] is ember.sparse_coo
    assert_same(results[0][1], results[1][1])
    assert_same(results[0][2], results[1][2])


def test_embedding_sparse_scale_grad_by_freq_refused_like_torch():
    for lib, f in ((ember, F), (torch, TF)):
        w = lib.ones(4, 2, requires_grad=True)
        out = f.embedding(lib.tensor([1, 1]), w, scale_grad_by_freq=True, sparse=True)
        with pytest.raises(RuntimeError, match="scale_grad_by_freq not supported with sparse"):
            out.sum().backward()


def test_embedding_module_sparse_trains_with_sparse_adam():
    torch.manual_seed(0)
    ember.manual_seed(0)
    weight = _rng(7).standard_normal((6, 3)).astype(np.float32)
    idx = [[1, 4], [4, 5]]
    rows = []
    for lib in (ember, torch):
        emb = lib.nn.Embedding.from_pretrained(lib.tensor(weight), freeze=False, sparse=True)
        opt = lib.optim.SparseAdam(emb.parameters(), lr=0.1)
        for _ in range(3):
            opt.zero_grad()
            emb(lib.tensor(idx)).pow(2).sum().backward()
            opt.step()
        rows.append(emb.weight.detach())
    assert_same(rows[0], rows[1])


@pytest.mark.parametrize("name, options", [
    ("SGD", {}), ("SGD", {"momentum": 0.9, "nesterov": True}), ("SGD", {"maximize": True}),
    ("Adagrad", {"lr_decay": 0.01}), ("LBFGS", {}),
])
def test_sparse_gradients_train_like_torch(name, options):
    """The optimisers torch lets take sparse gradients give its values."""
    weight = _rng(8).standard_normal((6, 3)).astype(np.float32)
    trained = []
    for lib in (ember, torch):
        emb = lib.nn.Embedding.from_pretrained(lib.tensor(weight), freeze=False, sparse=True)
        opt = getattr(lib.optim, name)(emb.parameters(), lr=0.1, **options)

        def closure(lib=lib, emb=emb, opt=opt):
            opt.zero_grad()
            loss = emb(lib.tensor([[1, 4], [4, 5]])).pow(2).sum()
            loss.backward()
            return loss
        for _ in range(3):
            opt.step(closure)
        trained.append(emb.weight.detach())
    assert_same(trained[0], trained[1], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name, options", [
    ("SGD", {"weight_decay": 0.1}), ("Adagrad", {"weight_decay": 0.1}), ("Adam", {}),
    ("AdamW", {}), ("RMSprop", {}), ("Rprop", {}), ("ASGD", {}), ("Adafactor", {}),
])
def test_sparse_gradients_refused_like_torch(name, options):
    messages = []
    for lib in (ember, torch):
        emb = lib.nn.Embedding(6, 3, sparse=True)
        opt = getattr(lib.optim, name)(emb.parameters(), lr=0.1, **options)
        emb(lib.tensor([1, 4])).sum().backward()
        with pytest.raises(RuntimeError) as error:
            opt.step()
        messages.append(str(error.value))
    assert messages[0] == messages[1]


def test_zero_grad_keeps_an_empty_sparse_gradient_like_torch():
    grads = []
    for lib in (ember, torch):
        emb = lib.nn.Embedding(6, 3, sparse=True)
        opt = lib.optim.SGD(emb.parameters(), lr=0.1)
        emb(lib.tensor([1, 4])).sum().backward()
        opt.zero_grad(set_to_none=False)
        grads.append(emb.weight.grad)
    assert grads[0].layout is ember.sparse_coo and grads[0]._nnz() == grads[1]._nnz() == 0
    assert tuple(grads[0].shape) == tuple(grads[1].shape)
