"""ember.sparse against torch.sparse: construction, coalescing, reprs, products, reductions,
elementwise ops, gradients, errors and save/load interop with real torch files."""

import io

import numpy as np
import pytest
import torch

import ember

pytestmark = pytest.mark.filterwarnings("ignore:Sparse invariant checks:UserWarning")

INDICES = [[0, 1, 1, 0, 2], [2, 0, 2, 2, 1]]
VALUES = [3.0, 4.0, 5.0, 1.0, -2.0]
SIZE = (3, 3)


def as_ember(t):
    return ember.tensor(t.detach().numpy())


def pair(indices=INDICES, values=VALUES, size=SIZE, **kwargs):
    """The same sparse tensor in torch and in ember."""
    t = torch.sparse_coo_tensor(indices, values, size, **kwargs)
    e = ember.sparse_coo_tensor(indices, values, size, **kwargs)
    return t, e


def assert_same_dense(e, t):
    np.testing.assert_allclose(e.detach().numpy() if e.layout is ember.strided
                               else e.to_dense().detach().numpy(),
                               t.to_dense().detach().numpy() if t.is_sparse else
                               t.detach().numpy(), rtol=1e-6, atol=1e-6)


def assert_same_sparse(e, t):
    assert e.is_sparse and t.is_sparse
    assert tuple(e.shape) == tuple(t.shape)
    assert e.is_coalesced() == t.is_coalesced()
    np.testing.assert_array_equal(e._indices().numpy(), t._indices().numpy())
    np.testing.assert_allclose(e._values().detach().numpy(), t._values().detach().numpy(),
                               rtol=1e-6, atol=1e-6)


def torch_repr(t):
    return repr(t).replace("torch.", "ember.")


# ---------------------------------------------------------------- construction and metadata


def test_metadata_matches_torch():
    t, e = pair()
    assert e.is_sparse and e.layout is ember.sparse_coo
    assert repr(e.layout) == repr(t.layout).replace("torch.", "ember.")
    assert e._nnz() == t._nnz()
    assert (e.sparse_dim(), e.dense_dim()) == (t.sparse_dim(), t.dense_dim())
    assert tuple(e.shape) == tuple(t.shape) and e.size(-1) == t.size(-1)
    assert e.dim() == t.dim() and e.numel() == t.numel()
    assert repr(e.dtype) == repr(t.dtype).replace("torch.", "ember.")
    assert e.is_coalesced() == t.is_coalesced()
    assert ember.zeros(2).is_sparse is False and ember.zeros(2).layout is ember.strided


def test_size_inferred_and_hybrid_values():
    t = torch.sparse_coo_tensor([[0, 3]], [[1.0, 2.0], [3.0, 4.0]])
    e = ember.sparse_coo_tensor([[0, 3]], [[1.0, 2.0], [3.0, 4.0]])
    assert tuple(e.shape) == tuple(t.shape) == (4, 2)
    assert (e.sparse_dim(), e.dense_dim()) == (1, 1)
    assert_same_dense(e.to_dense(), t)


def test_dtype_and_float_indices():
    t = torch.sparse_coo_tensor([[0.0, 1.0]], [1, 2], (3,), dtype=torch.float64)
    e = ember.sparse_coo_tensor([[0.0, 1.0]], [1, 2], (3,), dtype=ember.float64)
    assert e.dtype is ember.float64 and e._indices().dtype is ember.int64
    assert_same_sparse(e, t)


@pytest.mark.parametrize("case", [
    dict(indices=[[0, 5]], values=[1.0, 2.0], size=(3,)),
    dict(indices=[[0, -1]], values=[1.0, 2.0], size=(3,)),
    dict(indices=[[0, -1]], values=[1.0, 2.0], size=None),
    dict(indices=[[0, 1]], values=[1.0, 2.0, 3.0], size=(3,)),
    dict(indices=[[0, 1], [1, 0]], values=[1.0, 2.0], size=(3,)),
])
def test_construction_errors_match_torch(case):
    if case["size"] is None:
        del case["size"]
    with pytest.raises(RuntimeError) as expected:
        torch.sparse_coo_tensor(**case, check_invariants=True)
    with pytest.raises(RuntimeError) as got:
        ember.sparse_coo_tensor(**case)
    assert str(got.value) == str(expected.value)


# ---------------------------------------------------------------- coalesce, conversions, repr


def test_coalesce_sorts_and_sums_duplicates():
    t, e = pair()
    assert_same_sparse(e, t)  # uncoalesced: stored as given
    assert_same_sparse(e.coalesce(), t.coalesce())
    np.testing.assert_array_equal(e.coalesce().indices().numpy(), t.coalesce().indices().numpy())
    np.testing.assert_array_equal(e.coalesce().values().numpy(), t.coalesce().values().numpy())


def test_coalesce_hybrid_and_empty():
    idx = [[1, 0, 1], [0, 0, 0]]
    vals = np.arange(6.0).reshape(3, 2)
    t, e = pair(idx, vals.tolist(), (2, 1, 2))
    assert_same_sparse(e.coalesce(), t.coalesce())
    t0 = torch.sparse_coo_tensor(torch.zeros(2, 0, dtype=torch.long), torch.zeros(0), (2, 3))
    e0 = ember.sparse_coo_tensor(ember.zeros(2, 0, dtype=ember.int64), ember.zeros(0), (2, 3))
    assert_same_sparse(e0.coalesce(), t0.coalesce())
    assert_same_dense(e0.to_dense(), t0)


def test_indices_values_need_coalesced():
    t, e = pair()
    for name in ("indices", "values"):
        with pytest.raises(RuntimeError) as expected:
            getattr(t, name)()
        with pytest.raises(RuntimeError) as got:
            getattr(e, name)()
        assert str(got.value) == str(expected.value)


def test_to_dense_and_to_sparse_round_trip():
    t, e = pair()
    assert_same_dense(e.to_dense(), t)
    x = np.array([[0.0, 1.5, 0.0], [2.0, 0.0, 0.0]])
    assert_same_sparse(ember.tensor(x).to_sparse(), torch.tensor(x).to_sparse())
    assert_same_sparse(ember.tensor(x).to_sparse_coo(), torch.tensor(x).to_sparse_coo())
    assert_same_sparse(ember.tensor(x).to_sparse(1), torch.tensor(x).to_sparse(1))
    dense = ember.ones(2)
    assert dense.to_dense() is dense


@pytest.mark.parametrize("make", [
    lambda lib: lib.sparse_coo_tensor(INDICES, VALUES, SIZE),
    lambda lib: lib.sparse_coo_tensor(INDICES, VALUES, SIZE).coalesce(),
    lambda lib: lib.sparse_coo_tensor([[0, 1]], [[1.0, 2.0], [3.0, 4.0]], (3, 2),
                                      dtype=lib.float64),
    lambda lib: lib.sparse_coo_tensor(lib.zeros(2, 0, dtype=lib.long), lib.zeros(0), (2, 3)),
    lambda lib: lib.sparse_coo_tensor(INDICES, VALUES, SIZE, requires_grad=True),
    lambda lib: lib.tensor([[0.0, 0.25], [3.0, 0.0]]).to_sparse(),
    lambda lib: lib.sparse_coo_tensor([[0, 2]], [1, 5], (3,)),
    lambda lib: lib.sparse_coo_tensor([[0, 2]], [True, False], (3,)),
    lambda lib: lib.sparse_coo_tensor([[0, 2]], [1, 5], (3,), dtype=lib.int32),
])
def test_repr_matches_torch(make):
    assert repr(make(ember)) == torch_repr(make(torch))


# ---------------------------------------------------------------- products


def test_mm_all_spellings_match_torch():
    t, e = pair()
    d = torch.randn(3, 4, generator=torch.Generator().manual_seed(0))
    expected = torch.sparse.mm(t, d)
    for got in (ember.sparse.mm(e, as_ember(d)), ember.mm(e, as_ember(d)), e @ as_ember(d),
                ember.matmul(e, as_ember(d)), e.mm(as_ember(d))):
        assert_same_dense(got, expected)
    bias = torch.randn(3, 4, generator=torch.Generator().manual_seed(1))
    assert_same_dense(ember.addmm(as_ember(bias), e, as_ember(d), beta=0.5, alpha=2.0),
                      torch.addmm(bias, t, d, beta=0.5, alpha=2.0))
    assert_same_dense(ember.sparse.addmm(as_ember(bias), e, as_ember(d)),
                      torch.sparse.addmm(bias, t, d))


def test_dense_mm_unchanged_by_sparse_dispatch():
    a, b = torch.randn(2, 3), torch.randn(3, 2)
    assert_same_dense(ember.mm(as_ember(a), as_ember(b)), torch.mm(a, b))
    assert_same_dense(ember.addmm(ember.zeros(2), as_ember(a), as_ember(b)),
                      torch.addmm(torch.zeros(2), a, b))


def test_mm_errors_match_torch():
    t, e = pair()
    with pytest.raises(RuntimeError) as expected:
        torch.sparse.mm(t, torch.ones(4, 2))
    with pytest.raises(RuntimeError) as got:
        ember.sparse.mm(e, ember.ones(4, 2))
    assert str(got.value) == str(expected.value)
    with pytest.raises(RuntimeError) as expected:
        torch.mm(t, torch.ones(3, 2, dtype=torch.float64))
    with pytest.raises(RuntimeError) as got:
        ember.mm(e, ember.ones(3, 2, dtype=ember.float64))
    assert str(got.value) == str(expected.value)


def test_mm_gradients_match_torch():
    idx = torch.tensor(INDICES)
    v = torch.tensor(VALUES, requires_grad=True)
    d = torch.randn(3, 2, generator=torch.Generator().manual_seed(2), requires_grad=True)
    w = torch.randn(3, 2, generator=torch.Generator().manual_seed(3))
    (torch.sparse.mm(torch.sparse_coo_tensor(idx, v, SIZE), d) * w).sum().backward()
    ev = ember.tensor(VALUES, requires_grad=True)
    ed = ember.tensor(d.detach().numpy(), requires_grad=True)
    es = ember.sparse_coo_tensor(INDICES, ev, SIZE)
    assert es.requires_grad and not es.is_leaf
    (ember.sparse.mm(es, ed) * as_ember(w)).sum().backward()
    assert_same_dense(ev.grad, v.grad)
    assert_same_dense(ed.grad, d.grad)


def test_leaf_sparse_grad_is_restricted_to_pattern():
    d = torch.randn(3, 2, generator=torch.Generator().manual_seed(4))
    leaf = torch.sparse_coo_tensor(INDICES, VALUES, SIZE, requires_grad=True)
    torch.sparse.mm(leaf, d).pow(2).sum().backward()
    e_leaf = ember.sparse_coo_tensor(INDICES, VALUES, SIZE, requires_grad=True)
    assert e_leaf.is_leaf and e_leaf.grad is None
    ember.sparse.mm(e_leaf, as_ember(d)).pow(2).sum().backward()
    assert_same_sparse(e_leaf.grad, leaf.grad)


def test_to_dense_and_coalesce_gradients():
    v = torch.tensor(VALUES, requires_grad=True)
    w = torch.randn(3, 3, generator=torch.Generator().manual_seed(5))
    (torch.sparse_coo_tensor(INDICES, v, SIZE).coalesce().to_dense() * w).sum().backward()
    ev = ember.tensor(VALUES, requires_grad=True)
    (ember.sparse_coo_tensor(INDICES, ev, SIZE).coalesce().to_dense() * as_ember(w)).sum() \
        .backward()
    assert_same_dense(ev.grad, v.grad)


def test_mm_gradcheck_float64():
    values = ember.tensor(VALUES, dtype=ember.float64, requires_grad=True)
    dense = ember.randn(3, 2, dtype=ember.float64, requires_grad=True)

    def product(vals, mat):
        return ember.sparse.mm(ember.sparse_coo_tensor(INDICES, vals, SIZE), mat)

    assert ember.autograd.gradcheck(product, (values, dense))


# ---------------------------------------------------------------- elementwise, transpose, sum


def test_add_matches_torch():
    t, e = pair()
    t2, e2 = pair([[2, 0], [2, 2]], [7.0, 1.0])
    assert_same_sparse(e + e2, t + t2)
    assert_same_sparse(e.coalesce() + e2.coalesce(), t.coalesce() + t2.coalesce())
    assert_same_dense((e - e2).to_dense(), (t - t2))
    assert_same_dense(e.add(e2, alpha=3).to_dense(), t.add(t2, alpha=3))


def test_add_errors_match_torch():
    t, e = pair()
    cases = [(t, torch.ones(3, 3), e, ember.ones(3, 3)),
             (t, torch.sparse_coo_tensor([[0]], [1.0], (4,)),
              e, ember.sparse_coo_tensor([[0]], [1.0], (4,)))]
    for ta, tb, ea, eb in cases:
        with pytest.raises(RuntimeError) as expected:
            ta + tb
        with pytest.raises(RuntimeError) as got:
            ea + eb
        assert str(got.value) == str(expected.value)


def test_mul_matches_torch():
    t, e = pair()
    t2, e2 = pair([[0, 2, 1], [2, 2, 0]], [2.0, 5.0, -1.0])
    assert_same_dense((e * e2).to_dense(), t * t2)
    assert_same_dense((e * 2.5).to_dense(), t * 2.5)
    assert_same_sparse(e * 2.5, t * 2.5)
    assert_same_sparse(2.5 * e.coalesce(), 2.5 * t.coalesce())
    assert_same_dense((e / 4).to_dense(), t / 4)
    assert_same_dense((-e).to_dense(), -t)


def test_transpose_matches_torch():
    t, e = pair([[0, 1], [2, 0], [1, 1]], [1.0, 2.0], (2, 3, 2))
    assert_same_sparse(e.transpose(0, 2), t.transpose(0, 2))
    t2, e2 = pair()
    assert_same_sparse(e2.coalesce().t(), t2.coalesce().t())
    th, eh = pair([[0, 1]], [[[1.0, 2.0]], [[3.0, 4.0]]], (2, 1, 2))
    for dims in ((0, 1), (1, 2)):
        with pytest.raises(RuntimeError) as expected:
            th.transpose(*dims)
        with pytest.raises(RuntimeError) as got:
            eh.transpose(*dims)
        assert str(got.value) == str(expected.value)


@pytest.mark.parametrize("dim", [None, 0, 1, -1, (0, 1)])
def test_sparse_sum_matches_torch(dim):
    t, e = pair()
    expected = torch.sparse.sum(t) if dim is None else torch.sparse.sum(t, dim)
    got = ember.sparse.sum(e) if dim is None else ember.sparse.sum(e, dim)
    if expected.is_sparse:
        assert_same_sparse(got, expected)
    else:
        assert isinstance(got, ember.Tensor) and got.layout is ember.strided
        assert_same_dense(got, expected)


def test_sparse_sum_hybrid_dense_dim():
    vals = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
    t, e = pair([[0, 1, 1]], vals, (2, 2))
    for dim in (0, 1, (0, 1)):
        expected, got = torch.sparse.sum(t, dim), ember.sparse.sum(e, dim)
        assert got.is_sparse == expected.is_sparse
        assert_same_dense(got, expected)


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dim", [0, 1])
def test_sparse_softmax_matches_torch(fn, dim):
    t, e = pair()
    expected = getattr(torch.sparse, fn)(t, dim)
    got = getattr(ember.sparse, fn)(e, dim)
    assert_same_sparse(got, expected)
    v = torch.tensor(VALUES, requires_grad=True)
    w = torch.randn(3, 3, generator=torch.Generator().manual_seed(6))
    out = getattr(torch.sparse, fn)(torch.sparse_coo_tensor(INDICES, v, SIZE), dim)
    (out.to_dense() * w).sum().backward()
    ev = ember.tensor(VALUES, requires_grad=True)
    eout = getattr(ember.sparse, fn)(ember.sparse_coo_tensor(INDICES, ev, SIZE), dim)
    (eout.to_dense() * as_ember(w)).sum().backward()
    assert_same_dense(ev.grad, v.grad)


# ---------------------------------------------------------------- dense-only ops, storage


def test_dense_only_operations_raise_as_torch():
    t, e = pair()
    for call in (lambda x: x.exp(), lambda x: x.view(9), lambda x: x.data_ptr(),
                 lambda x: x.numpy(), lambda x: x.contiguous()):
        with pytest.raises(Exception) as expected:
            call(t)
        with pytest.raises(type(expected.value)) as got:
            call(e)
        # torch's message ends with a note on custom builds; ember's stops before it
        first = str(got.value).split(". This could")[0]
        assert str(expected.value).startswith(first)


# ---------------------------------------------------------------- save / load interop


def test_torch_file_loads_in_ember(tmp_path):
    t = torch.sparse_coo_tensor(INDICES, VALUES, SIZE)
    path = tmp_path / "sparse.pt"
    torch.save({"s": t, "c": t.coalesce()}, path)
    loaded = ember.load(path)
    assert_same_sparse(loaded["s"], t)
    assert_same_sparse(loaded["c"], t.coalesce())


def test_ember_file_loads_in_torch():
    _, e = pair([[0, 1]], [[1.0, 2.0], [3.0, 4.0]], (3, 2))
    buffer = io.BytesIO()
    ember.save({"s": e, "c": e.coalesce()}, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer, weights_only=True)
    assert_same_sparse(e, loaded["s"])
    assert_same_sparse(e.coalesce(), loaded["c"])
    buffer.seek(0)
    again = ember.load(buffer)
    assert_same_sparse(again["s"], loaded["s"])


def test_docstring_examples_run():
    import doctest

    from ember.sparse import _base, _compressed, _coo, _ops

    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    for module in (ember.sparse, _base, _coo, _compressed, _ops):
        for test in finder.find(module, module.__name__,
                                globs={"ember": ember, **vars(module)}):
            runner.run(test)
    assert runner.failures == 0 and runner.tries > 30


# ---------------------------------------------------------------- dense with sparse, indexing


def test_dense_times_sparse_values_and_gradients():
    t, e = pair()
    left = np.random.default_rng(1).standard_normal((2, 3)).astype(np.float32)
    lt, le = torch.tensor(left, requires_grad=True), ember.tensor(left, requires_grad=True)
    outs_t, outs_e = [torch.mm(lt, t), lt @ t], [ember.mm(le, e), le @ e]
    for out_e, out_t in zip(outs_e, outs_t):
        assert_same_dense(out_e, out_t)
    sum(o.sin().sum() for o in outs_t).backward()
    sum(o.sin().sum() for o in outs_e).backward()
    np.testing.assert_allclose(le.grad.numpy(), lt.grad.numpy(), rtol=1e-5)


def test_sparse_times_sparse_is_sparse_as_torch():
    t, e = pair()
    vt = torch.tensor(VALUES, requires_grad=True)
    ve = ember.tensor(VALUES, requires_grad=True)
    st = torch.sparse_coo_tensor(INDICES, vt, SIZE)
    se = ember.sparse_coo_tensor(INDICES, ve, SIZE)
    for out_t, out_e in ((torch.mm(t, t.t()), ember.mm(e, e.t())),
                         (torch.sparse.mm(st, t), ember.sparse.mm(se, e))):
        assert_same_sparse(out_e, out_t)
        assert repr(out_e.detach()) == torch_repr(out_t.detach())
    torch.sparse.mm(st, t).to_dense().pow(2).sum().backward()
    ember.sparse.mm(se, e).to_dense().pow(2).sum().backward()
    np.testing.assert_allclose(ve.grad.numpy(), vt.grad.numpy(), rtol=1e-6)


def test_dense_plus_sparse_is_dense():
    t, e = pair()
    dense = np.arange(9.0, dtype=np.float32).reshape(3, 3)
    result = ember.tensor(dense) + e
    assert isinstance(result, ember.Tensor) and result.layout is ember.strided
    assert_same_dense(result, torch.tensor(dense) + t)


@pytest.mark.parametrize("dim,index", [(0, 1), (1, 2), (-1, 0), (0, -1)])
def test_select_matches_torch(dim, index):
    t, e = pair()
    assert_same_sparse(e.select(dim, index), t.select(dim, index))
    hybrid = [[1.0, 2.0, 0.0], [3.0, 4.0, 5.0]]
    hybrid_t = torch.sparse_coo_tensor([[0, 2]], hybrid, (3, 3))
    hybrid_e = ember.sparse_coo_tensor([[0, 2]], hybrid, (3, 3))
    assert_same_dense(hybrid_e.select(dim, index), hybrid_t.select(dim, index))


def test_getitem_and_index_select_match_torch():
    t, e = pair()
    assert_same_sparse(e[1], t[1])
    for dim, index in ((0, [1, 1, 0]), (1, [2]), (1, [])):
        expected = t.index_select(dim, torch.tensor(index, dtype=torch.int64))
        got = e.index_select(dim, ember.tensor(index, dtype=ember.int64))
        assert_same_sparse(got, expected)
        assert repr(got) == torch_repr(expected)
    with pytest.raises(IndexError):
        t.select(0, 3)
    with pytest.raises(IndexError):
        e.select(0, 3)


def test_sparse_mask_values_pattern_and_gradient():
    t, e = pair()
    dense = np.random.default_rng(2).standard_normal((3, 3)).astype(np.float32)
    dt_, de = torch.tensor(dense, requires_grad=True), ember.tensor(dense, requires_grad=True)
    masked_t, masked_e = dt_.sparse_mask(t), de.sparse_mask(e)
    assert_same_sparse(masked_e, masked_t)
    assert_same_sparse(de.sparse_mask(e.coalesce()), dt_.sparse_mask(t.coalesce()))
    masked_t.to_dense().pow(2).sum().backward()
    masked_e.to_dense().pow(2).sum().backward()
    np.testing.assert_allclose(de.grad.numpy(), dt_.grad.numpy(), rtol=1e-6)


def test_check_sparse_tensor_invariants_flag():
    checker_t, checker_e = torch.sparse.check_sparse_tensor_invariants, \
        ember.sparse.check_sparse_tensor_invariants
    assert checker_e.is_enabled() == checker_t.is_enabled()
    with checker_t(), checker_e():
        assert checker_e.is_enabled() == checker_t.is_enabled() is True
        with checker_t(enable=False), checker_e(enable=False):
            assert checker_e.is_enabled() == checker_t.is_enabled() is False
    assert checker_e.is_enabled() == checker_t.is_enabled()

    @checker_e()
    def inside():
        return checker_e.is_enabled()

    assert inside() is True and checker_e.is_enabled() is False
    with pytest.raises(RuntimeError):  # ember checks indices always
        ember.sparse_coo_tensor([[5]], [1.0], (2,))
