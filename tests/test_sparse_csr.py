"""ember's CSR/CSC matrices against torch's: construction, indices, conversions, reprs,
products with gradients, errors and files in torch's format."""

import io

import numpy as np
import pytest
import torch

import ember

pytestmark = pytest.mark.filterwarnings("ignore:Sparse (CSR|invariant):UserWarning")

DENSE = [[0.0, 2.0, 0.0, 1.0], [3.0, 0.0, 4.0, 0.0], [0.0, 0.0, 0.0, 0.0]]
LAYOUTS = [("csr", "crow_indices", "col_indices"), ("csc", "ccol_indices", "row_indices")]


def torch_repr(t):
    return repr(t).replace("torch.", "ember.")


def both(kind, dense=DENSE, dtype="float32"):
    t = getattr(torch.tensor(dense, dtype=getattr(torch, dtype)), f"to_sparse_{kind}")()
    e = getattr(ember.tensor(dense, dtype=getattr(ember, dtype)), f"to_sparse_{kind}")()
    return t, e


@pytest.mark.parametrize("kind,compressed,plain", LAYOUTS)
def test_conversion_indices_values_and_repr(kind, compressed, plain):
    t, e = both(kind)
    assert repr(e.layout) == repr(t.layout).replace("torch.", "ember.")
    for name in (compressed, plain, "values"):
        np.testing.assert_array_equal(getattr(e, name)().numpy(), getattr(t, name)().numpy())
    assert e._nnz() == t._nnz() and tuple(e.shape) == tuple(t.shape)
    assert e.is_sparse == t.is_sparse and e.is_sparse_csr == t.is_sparse_csr
    assert repr(e) == torch_repr(t)
    np.testing.assert_array_equal(e.to_dense().numpy(), t.to_dense().numpy())


@pytest.mark.parametrize("kind", ["csr", "csc"])
def test_repr_float64_empty_and_wide(kind):
    for dense, dtype in ([[0.0, 1.5]], "float64"), ([[0.0] * 3] * 2, "float32"), (
            [[float(i * j % 3) for j in range(30)] for i in range(3)], "float32"):
        t, e = both(kind, dense, dtype)
        assert repr(e) == torch_repr(t)


@pytest.mark.parametrize("kind", ["csr", "csc"])
def test_to_sparse_coo_matches_torch(kind):
    t, e = both(kind)
    tc, ec = t.to_sparse(), e.to_sparse()
    assert ec.is_coalesced() == tc.is_coalesced()
    np.testing.assert_array_equal(ec._indices().numpy(), tc._indices().numpy())
    np.testing.assert_array_equal(ec._values().numpy(), tc._values().numpy())
    assert repr(ec) == torch_repr(tc)


def test_csr_csc_round_trips():
    t, e = both("csr")
    assert repr(e.to_sparse_csc()) == torch_repr(t.to_sparse_csc())
    t, e = both("csc")
    assert repr(e.to_sparse_csr()) == torch_repr(t.to_sparse_csr())
    dense = ember.tensor(DENSE)
    assert repr(dense.to_sparse(layout=ember.sparse_csr)) == repr(dense.to_sparse_csr())


def test_constructors_match_torch():
    args = ([0, 2, 3], [1, 3, 0], [1.0, 2.0, 3.0])
    t = torch.sparse_csr_tensor(*args, (2, 4), dtype=torch.float64)
    e = ember.sparse_csr_tensor(*args, (2, 4), dtype=ember.float64)
    assert repr(e) == torch_repr(t)
    t, e = torch.sparse_csr_tensor(*args), ember.sparse_csr_tensor(*args)
    assert tuple(e.shape) == tuple(t.shape)
    t, e = torch.sparse_csc_tensor(*args), ember.sparse_csc_tensor(*args)
    assert tuple(e.shape) == tuple(t.shape)
    np.testing.assert_array_equal(e.to_dense().numpy(), t.to_dense().numpy())
    t = torch.sparse_csr_tensor(*args, (2, 4), requires_grad=True)
    e = ember.sparse_csr_tensor(*args, (2, 4), requires_grad=True)
    assert repr(e) == torch_repr(t)


BAD = [([0, 1, 1], [0], [1.0, 2.0], (2, 2)),
       ([1, 1, 1], [0], [1.0], (2, 2)),
       ([0, 1, 2], [0, 5], [1.0, 2.0], (2, 2)),
       ([0, 2, 1], [0, 1], [1.0, 2.0], (2, 2)),
       ([0, 1, 2, 2], [0, 1], [1.0, 2.0], (2, 2)),
       ([0, 2, 3], [1, 0, 1], [1.0, 2.0, 3.0], (2, 3))]


@pytest.mark.parametrize("crow,col,values,size", BAD)
def test_invalid_indices_raise_torch_errors(crow, col, values, size):
    with pytest.raises(RuntimeError) as expected:
        torch.sparse_csr_tensor(crow, col, values, size, check_invariants=True)
    with pytest.raises(RuntimeError) as got:
        ember.sparse_csr_tensor(crow, col, values, size)
    assert str(got.value) == str(expected.value)


def test_wrong_layout_accessors_raise_torch_errors():
    t, e = both("csr")
    tc, ec = both("csc")
    for tensor_t, tensor_e, name in ((t, e, "ccol_indices"), (tc, ec, "crow_indices"),
                                     (t, e, "indices"), (t, e, "exp")):
        with pytest.raises(RuntimeError) as expected:
            getattr(tensor_t, name)()
        with pytest.raises(RuntimeError) as got:
            getattr(tensor_e, name)()
        assert str(got.value) == str(expected.value)


@pytest.mark.parametrize("kind", ["csr", "csc"])
def test_mm_matmul_addmm_values_and_gradients(kind):
    rng = np.random.default_rng(0)
    weights = rng.standard_normal((4, 3))
    bias = rng.standard_normal((3, 3))
    compressed_t, compressed_e = both(kind, dtype="float64")
    values_t = compressed_t.values().clone().requires_grad_()
    values_e = ember.tensor(values_t.detach().numpy(), requires_grad=True)
    build_t = getattr(torch, f"sparse_{kind}_tensor")
    build_e = getattr(ember, f"sparse_{kind}_tensor")
    names = ("crow_indices", "col_indices") if kind == "csr" else ("ccol_indices",
                                                                   "row_indices")
    mt = build_t(*(getattr(compressed_t, n)() for n in names), values_t, (3, 4))
    me = build_e(*(getattr(compressed_e, n)() for n in names), values_e, (3, 4))
    wt = torch.tensor(weights, requires_grad=True)
    we = ember.tensor(weights, requires_grad=True)
    bt, be = torch.tensor(bias), ember.tensor(bias)
    outs_t = [torch.mm(mt, wt), mt @ wt, torch.matmul(mt, wt), torch.addmm(bt, mt, wt, alpha=2)]
    outs_e = [ember.mm(me, we), me @ we, ember.matmul(me, we), ember.addmm(be, me, we, alpha=2)]
    for out_t, out_e in zip(outs_t, outs_e):
        np.testing.assert_allclose(out_e.detach().numpy(), out_t.detach().numpy(), rtol=1e-12)
    sum(o.sin().sum() for o in outs_t).backward()
    sum(o.sin().sum() for o in outs_e).backward()
    np.testing.assert_allclose(values_e.grad.numpy(), values_t.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(we.grad.numpy(), wt.grad.numpy(), rtol=1e-12)


def test_dense_times_csr():
    t, e = both("csr")
    left = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    expected = torch.tensor(left) @ t
    np.testing.assert_allclose((ember.tensor(left) @ e).numpy(), expected.numpy())
    np.testing.assert_allclose(ember.mm(ember.tensor(left), e).numpy(), expected.numpy())


def test_mm_shape_error_matches_torch():
    t, e = both("csr")
    with pytest.raises(RuntimeError) as expected:
        t @ torch.ones(3, 2)
    with pytest.raises(RuntimeError) as got:
        e @ ember.ones(3, 2)
    assert str(got.value) == str(expected.value)


@pytest.mark.parametrize("kind", ["csr", "csc"])
def test_save_load_interop_with_torch(kind):
    t, e = both(kind)
    buffer = io.BytesIO()
    ember.save({"m": e}, buffer)
    buffer.seek(0)
    loaded_t = torch.load(buffer)["m"]
    assert loaded_t.layout == t.layout and torch.equal(loaded_t.to_dense(), t.to_dense())
    buffer = io.BytesIO()
    torch.save({"m": t}, buffer)
    buffer.seek(0)
    loaded_e = ember.load(buffer)["m"]  # weights_only: the allow-list has the layouts
    assert repr(loaded_e) == torch_repr(t)


# ---------------------------------------------------------------- mm(reduce=), sampled_addmm

REDUCE_DENSE = [[2.0, 0.0, -1.0, 0.5], [0.0, 0.0, 0.0, 0.0], [1.5, 3.0, 0.0, -2.0]]


def _csr_pair(dense, requires_grad=True):
    t = torch.tensor(dense, dtype=torch.float64).to_sparse_csr().requires_grad_(requires_grad)
    e = ember.sparse_csr_tensor(t.crow_indices().tolist(), t.col_indices().tolist(),
                                t.values().tolist(), tuple(t.shape), dtype=ember.float64,
                                requires_grad=requires_grad)
    return t, e


@pytest.mark.parametrize("reduce", ["sum", "mean", "amax", "amin", "max", "min"])
def test_mm_reduce_values_and_gradients(reduce):
    t, e = _csr_pair(REDUCE_DENSE)
    other = np.random.default_rng(1).standard_normal((4, 5))
    ot, oe = torch.tensor(other, requires_grad=True), ember.tensor(other, requires_grad=True)
    out_t, out_e = torch.sparse.mm(t, ot, reduce), ember.sparse.mm(e, oe, reduce)
    np.testing.assert_allclose(out_e.detach().numpy(), out_t.detach().numpy(), rtol=1e-12)
    cot = np.random.default_rng(2).standard_normal(out_t.shape)
    gt = torch.autograd.grad(out_t, (t, ot), torch.tensor(cot))
    ge = ember.autograd.grad(out_e, (e.values(), oe), ember.tensor(cot))
    assert gt[0].layout is torch.sparse_csr
    np.testing.assert_allclose(ge[0].numpy(), gt[0].values().numpy(), rtol=1e-12)
    np.testing.assert_allclose(ge[1].numpy(), gt[1].numpy(), rtol=1e-12)


def test_mm_reduce_errors_match_torch():
    t, e = _csr_pair(REDUCE_DENSE, requires_grad=False)
    cases = [
        (lambda lib, s: lib.sparse.mm(s, lib.ones(4, 2, dtype=lib.float64), "prod"),
         RuntimeError),
        (lambda lib, s: lib.sparse.mm(s, lib.ones(4, 2, dtype=lib.float64), "foo"),
         RuntimeError),
        (lambda lib, s: lib.sparse.mm(s, lib.ones(3, 2, dtype=lib.float64), "sum"),
         RuntimeError),
        (lambda lib, s: lib.sparse.mm(s.to_dense().to_sparse_csc(),
                                      lib.ones(4, 2, dtype=lib.float64), "sum"), RuntimeError),
        (lambda lib, s: lib.sparse.mm(s, lib.ones(4, 2), "sum"), RuntimeError),
    ]
    for call, error in cases:
        with pytest.raises(error) as expected:
            call(torch, t)
        with pytest.raises(error) as got:
            call(ember, e)
        assert str(got.value).split("(")[0].replace("ember", "torch") == \
            str(expected.value).split("(")[0]


@pytest.mark.parametrize("alpha, beta", [(1.0, 1.0), (0.6, 0.2), (2.0, 0.0)])
def test_sampled_addmm_values_pattern_and_gradients(alpha, beta):
    t, e = _csr_pair(REDUCE_DENSE)
    rng = np.random.default_rng(3)
    m1, m2 = rng.standard_normal((3, 6)), rng.standard_normal((6, 4))
    m1t, m2t = torch.tensor(m1, requires_grad=True), torch.tensor(m2, requires_grad=True)
    m1e, m2e = ember.tensor(m1, requires_grad=True), ember.tensor(m2, requires_grad=True)
    out_t = torch.sparse.sampled_addmm(t, m1t, m2t, alpha=alpha, beta=beta)
    out_e = ember.sparse.sampled_addmm(e, m1e, m2e, alpha=alpha, beta=beta)
    assert out_e.layout is ember.sparse_csr
    assert out_e.crow_indices().tolist() == out_t.crow_indices().tolist()
    assert out_e.col_indices().tolist() == out_t.col_indices().tolist()
    np.testing.assert_allclose(out_e.values().detach().numpy(), out_t.values().detach().numpy(),
                               rtol=1e-12)
    cot = rng.standard_normal(out_t._nnz())
    cot_t = torch.sparse_csr_tensor(out_t.crow_indices(), out_t.col_indices(),
                                    torch.tensor(cot), out_t.shape)
    gt = torch.autograd.grad(out_t, (t, m1t, m2t), cot_t)
    ge = ember.autograd.grad(out_e.values(), (e.values(), m1e, m2e), ember.tensor(cot))
    np.testing.assert_allclose(ge[0].numpy(), gt[0].values().numpy(), rtol=1e-12)
    np.testing.assert_allclose(ge[1].numpy(), gt[1].numpy(), rtol=1e-12)
    np.testing.assert_allclose(ge[2].numpy(), gt[2].numpy(), rtol=1e-12)


def test_sampled_addmm_errors_match_torch():
    t, e = _csr_pair(REDUCE_DENSE, requires_grad=False)
    cases = [
        lambda lib, s: lib.sparse.sampled_addmm(s, lib.ones(3, 2, dtype=lib.float64),
                                                lib.ones(3, 4, dtype=lib.float64)),
        lambda lib, s: lib.sparse.sampled_addmm(s, lib.ones(2, 2, dtype=lib.float64),
                                                lib.ones(2, 4, dtype=lib.float64)),
        lambda lib, s: lib.sparse.sampled_addmm(s, lib.ones(3, 2, dtype=lib.float64),
                                                lib.ones(2, 4)),
    ]
    for call in cases:
        with pytest.raises(RuntimeError) as expected:
            call(torch, t)
        with pytest.raises(RuntimeError) as got:
            call(ember, e)
        assert str(got.value) == str(expected.value)
    with pytest.raises(NotImplementedError, match="sparse_sampled_addmm"):
        ember.sparse.sampled_addmm(ember.eye(2), ember.ones(2, 2), ember.ones(2, 2))
