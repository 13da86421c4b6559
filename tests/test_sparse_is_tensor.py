"""Sparse tensors are ``ember.Tensor`` instances, as torch's are ``torch.Tensor``: type
queries, dense operators refused with torch's exception, the functions that run the layout's
own methods, Tensor queries without strided memory, autograd, pickling and modules, each
against torch."""

import copy
import io
import pickle

import numpy as np
import pytest
import torch

import ember

pytestmark = pytest.mark.filterwarnings("ignore:Sparse (CSR|invariant):UserWarning")

DENSE = [[0.0, 2.0, 0.0], [3.0, 0.0, 4.0]]
LAYOUTS = ["coo", "csr", "csc"]


def make(module, layout, dense=DENSE):
    """The same sparse matrix in torch or ember (``module``), in ``layout``."""
    return getattr(module.tensor(dense), f"to_sparse_{layout}")()


def outcome(fn):
    """What a call gives: ``("ok", result)`` or ``("raises", exception type, message)``."""
    try:
        return "ok", fn()
    except Exception as error:  # noqa: BLE001 (the type is what is compared)
        return "raises", type(error), str(error)


def same_outcome(call, layout, *, message=True):
    """Run ``call(module, sparse)`` on torch and on ember; compare the outcome kind, the
    exception type (and message, torch's names made ember's), or the dense values."""
    expected = outcome(lambda: call(torch, make(torch, layout)))
    got = outcome(lambda: call(ember, make(ember, layout)))
    assert got[0] == expected[0], (got, expected)
    if expected[0] == "raises":
        assert got[1] is expected[1], (got, expected)
        if message:
            assert got[2] == expected[2].replace("torch.", "ember."), (got[2], expected[2])
        return None, None
    return got[1], expected[1]


def assert_same_values(got, expected):
    if isinstance(expected, torch.Tensor):
        assert str(got.layout).split(".")[-1] == str(expected.layout).split(".")[-1]
        if expected.layout is not torch.strided:
            got, expected = got.to_dense(), expected.to_dense()
        np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy(), rtol=1e-6)
    else:
        assert got == expected


# ---------------------------------------------------------------- type queries


@pytest.mark.parametrize("layout", LAYOUTS)
def test_sparse_tensors_are_tensors(layout):
    t, e = make(torch, layout), make(ember, layout)
    assert isinstance(t, torch.Tensor) and isinstance(e, ember.Tensor)
    assert ember.is_tensor(e) and torch.is_tensor(t)
    assert ember.overrides.is_tensor_like(e)
    assert str(e.layout) == str(t.layout).replace("torch.", "ember.")
    for flag in ("is_sparse", "is_sparse_csr", "is_cuda", "is_cpu", "is_meta", "is_leaf",
                 "requires_grad", "is_quantized", "is_nested", "is_mkldnn"):
        assert getattr(e, flag) == getattr(t, flag), flag
    assert e.dtype is ember.float32 and e.device == ember.device("cpu")
    assert tuple(e.shape) == tuple(t.shape) and e.dim() == t.dim() and e.numel() == t.numel()
    assert e.element_size() == t.element_size() and e.itemsize == t.itemsize
    assert ember.is_floating_point(e) and e.is_floating_point() and not e.is_complex()
    assert e.sparse_dim() == t.sparse_dim() and e.dense_dim() == t.dense_dim()


def test_type_names_match_torch():
    assert make(ember, "coo").type() == make(torch, "coo").type() == "torch.sparse.FloatTensor"
    assert make(ember, "coo").type(ember.float64).dtype is ember.float64


# ---------------------------------------------------------------- dense operators


DENSE_ONLY = {
    "exp": lambda m, s: m.exp(s),
    "Tensor.exp": lambda m, s: s.exp(),
    "exp_": lambda m, s: s.exp_(),
    "sigmoid": lambda m, s: m.sigmoid(s),
    "view": lambda m, s: s.view(6),
    "mean": lambda m, s: s.mean(),
    "max": lambda m, s: s.max(),
    "eq": lambda m, s: m.eq(s, s),
    "==": lambda m, s: s == s,
    "softmax": lambda m, s: m.softmax(s, 0),
    "F.relu6": lambda m, s: m.nn.functional.relu6(s),
}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", sorted(DENSE_ONLY))
def test_dense_operators_raise_torchs_exception(name, layout):
    """torch raises NotImplementedError ("Could not run 'aten::...' with arguments from the
    'SparseCPU' backend") or, for element-wise ops on CSR/CSC, RuntimeError ("unsupported
    tensor layout"); ember raises the same type (its operator names may differ from torch's
    overload names, so only the type is compared)."""
    expected = outcome(lambda: DENSE_ONLY[name](torch, make(torch, layout)))
    got = outcome(lambda: DENSE_ONLY[name](ember, make(ember, layout)))
    assert expected[0] == "raises" and got[0] == "raises", (got, expected)
    assert got[1] is expected[1], (got, expected)


@pytest.mark.parametrize("layout,backend", [("coo", "SparseCPU"), ("csr", "SparseCsrCPU")])
def test_refusal_names_operator_and_backend(layout, backend):
    for call in (lambda m, s: m.mean(s), lambda m, s: s.view(-1)):
        expected = outcome(lambda: call(torch, make(torch, layout)))[2]
        got = outcome(lambda: call(ember, make(ember, layout)))[2]
        assert f"with arguments from the '{backend}' backend" in got
        assert got.split(" with ")[0].split("::")[0] == expected.split(" with ")[0].split("::")[0]
    coo = make(ember, "coo")
    with pytest.raises(NotImplementedError, match=r"^Could not run 'aten::exp' with arguments "
                                                  r"from the 'SparseCPU' backend"):
        ember.exp(coo)


def test_dense_fields_are_never_read_as_dense():
    s = make(ember, "coo")
    for field in ("_data", "_rg", "_grad_fn", "_base", "_vc"):
        with pytest.raises(NotImplementedError, match="sparse tensor has no"):
            getattr(s, field)
    with pytest.raises(NotImplementedError):
        s._data = np.zeros(3)


def test_sparse_plus_dense_and_dense_with_sparse_as_torch():
    for layout in ("coo",):
        got, expected = same_outcome(lambda m, s: s + m.ones(2, 3), layout)
        got, expected = same_outcome(lambda m, s: m.ones(2, 3) + s, layout)
        assert_same_values(got, expected)
    for layout in LAYOUTS:
        got, expected = same_outcome(lambda m, s: m.ones(4, 3) @ s.t().to_dense().to_sparse(),
                                     layout)
        assert_same_values(got, expected)
        got, expected = same_outcome(lambda m, s: m.mm(s, m.ones(3, 2)), layout)
        assert_same_values(got, expected)
        for method in ("mm", "matmul"):  # a dense tensor's method with a sparse argument
            got, expected = same_outcome(lambda m, s: getattr(m.ones(4, 2), method)(s), layout)
            assert_same_values(got, expected)


# ---------------------------------------------------------------- functions on sparse tensors


SPARSE_FUNCTIONS = {
    "clone": lambda m, s: m.clone(s),
    "add": lambda m, s: m.add(s, s),
    "sub": lambda m, s: m.sub(s, s),
    "mul": lambda m, s: m.mul(s, 3.0),
    "neg": lambda m, s: m.neg(s),
    "transpose": lambda m, s: m.transpose(s, 0, 1),
    "t": lambda m, s: m.t(s),
    "sum": lambda m, s: m.sum(s),
    "detach": lambda m, s: m.detach(s),
    "select": lambda m, s: m.select(s, 1, 2),
    "index_select": lambda m, s: m.index_select(s, 1, m.tensor([2, 0])),
    "zeros_like": lambda m, s: m.zeros_like(s),
    "empty_like shape": lambda m, s: m.empty_like(s, dtype=m.float64).to_dense().shape,
    "new_zeros": lambda m, s: s.new_zeros(4, 5),
    "new_empty layout": lambda m, s: str(s.new_empty((2, 2)).layout).split(".")[1],
    "new_ones": lambda m, s: s.new_ones(2),
    "new_zeros 1-D": lambda m, s: str(s.new_zeros(3).layout).split(".")[1],
    "norm": lambda m, s: m.norm(s),
    "norm 1": lambda m, s: s.norm(1),
    "norm inf": lambda m, s: s.norm(float("inf")),
    "norm all dims": lambda m, s: s.norm(dim=(0, -1)),
    "norm one dim": lambda m, s: s.norm(dim=0),
}


MIXED = {
    "add(dense, sparse)": lambda m, d, s: m.add(d, s),
    "dense.add(sparse, alpha)": lambda m, d, s: d.add(s, alpha=2),
    "dense - sparse": lambda m, d, s: d - s,
    "sub(dense, sparse)": lambda m, d, s: m.sub(d, s, alpha=3),
    "dense.add_(sparse)": lambda m, d, s: d.add_(s, alpha=-1),
    "mul(dense, sparse)": lambda m, d, s: m.mul(d, s),
    "dense * sparse": lambda m, d, s: d * s,
    "sparse * dense": lambda m, d, s: s * d,
    "sparse / dense": lambda m, d, s: s / d,
    "dense / sparse": lambda m, d, s: d / s,
    "sparse / 0-dim": lambda m, d, s: s / m.tensor(2.0),
    "true_divide": lambda m, d, s: m.true_divide(s, 2),
    "pow": lambda m, d, s: m.pow(s, 2),
    "** -1": lambda m, d, s: s ** -1,
    "pow 0": lambda m, d, s: s.pow(0),
    "square": lambda m, d, s: m.square(s),
}


@pytest.mark.parametrize("name", sorted(MIXED))
def test_dense_and_sparse_operands_as_torch(name):
    dense = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    got, expected = same_outcome(lambda m, s: MIXED[name](m, m.tensor(dense), s), "coo")
    if expected is not None:
        assert_same_values(got, expected)


def test_dense_times_sparse_gradients_as_torch():
    grads = {}
    for m in (torch, ember):
        d = m.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
        v = m.tensor([2.0, 3.0, 4.0], requires_grad=True)
        s = m.sparse_coo_tensor([[0, 1, 1], [1, 0, 2]], v, (2, 3))
        ((d * s).to_dense() * m.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])).sum().backward()
        grads[m] = d.grad, v.grad
    (dense_e, values_e), (dense_t, values_t) = grads[ember], grads[torch]
    assert_same_values(values_e, values_t)
    # torch gives the dense operand a sparse gradient, ember a dense one (docs/sparse.md)
    np.testing.assert_allclose(dense_e.numpy(), dense_t.to_dense().numpy(), rtol=1e-6)


JOINS = {
    "cat 0": lambda m, a, b: m.cat([a, b]),
    "cat 1": lambda m, a, b: m.cat([a, b], 1),
    "cat -1": lambda m, a, b: m.cat((a, b, a), -1),
    "stack 0": lambda m, a, b: m.stack([a, b]),
    "stack 2": lambda m, a, b: m.stack([a, b], 2),
    "unsqueeze 0": lambda m, a, b: a.unsqueeze(0),
    "unsqueeze -1": lambda m, a, b: m.unsqueeze(a, -1),
    "cat hybrid dense dim": lambda m, a, b: m.cat([_hybrid(m), _hybrid(m)], 1),
    "cat hybrid sparse dim": lambda m, a, b: m.cat([_hybrid(m), _hybrid(m)], 0),
    "stack hybrid 1": lambda m, a, b: m.stack([_hybrid(m), _hybrid(m)], 1),
    "unsqueeze hybrid 1": lambda m, a, b: _hybrid(m).unsqueeze(1),
    "unsqueeze hybrid 2": lambda m, a, b: _hybrid(m).unsqueeze(2),
    "cat with dense": lambda m, a, b: m.cat([a, m.ones(2, 3)]),
    "cat other shape": lambda m, a, b: m.cat([a, m.sparse_coo_tensor([[0]], [1.0], (2,))]),
}


def _hybrid(m):
    return m.sparse_coo_tensor([[0, 1]], [[1.0, 2.0], [3.0, 4.0]], (2, 2))


@pytest.mark.parametrize("name", sorted(JOINS))
def test_joins_and_unsqueeze_of_coo_as_torch(name):
    def call(m, _):
        a = m.sparse_coo_tensor([[0, 1], [1, 0]], [1.0, 2.0], (2, 3))
        b = m.sparse_coo_tensor([[1], [2]], [5.0], (2, 3))
        return JOINS[name](m, a, b)

    got, expected = same_outcome(call, "coo")
    if expected is not None:
        assert_same_values(got, expected)
        assert (got.sparse_dim(), got.dense_dim(), got._nnz()) == \
            (expected.sparse_dim(), expected.dense_dim(), expected._nnz())


def test_cat_gradient_reaches_the_values():
    """torch cannot differentiate a sparse cat (no as_strided for SparseCPU): the oracle is
    torch's gradient through the dense equivalent."""
    grads = {}
    for m in (torch, ember):
        v = m.tensor([1.0, 2.0], requires_grad=True)
        s = m.sparse_coo_tensor([[0, 1], [1, 0]], v, (2, 3))
        joined = m.cat([s, s * 3], 1).to_dense() if m is ember else \
            m.cat([s.to_dense(), (s * 3).to_dense()], 1)
        (joined * m.arange(12.0).reshape(2, 6)).sum().backward()
        grads[m] = v.grad
    np.testing.assert_allclose(grads[ember].numpy(), grads[torch].numpy())


LINEAR = {
    "sparse weight 3-D input": lambda m, x, w: m.nn.functional.linear(x, w),
    "sparse weight and bias": lambda m, x, w: m.nn.functional.linear(x, w, m.ones(2)),
    "1-D input": lambda m, x, w: m.nn.functional.linear(x[0, 0], w),
    "sparse input": lambda m, x, w: m.nn.functional.linear(w, m.ones(4, 3)),
    "CSR weight": lambda m, x, w: m.nn.functional.linear(x, w.to_dense().to_sparse_csr()),
}


@pytest.mark.parametrize("name", sorted(LINEAR))
def test_linear_with_sparse_operands_as_torch(name):
    def call(m, w):
        return LINEAR[name](m, m.arange(12.0).reshape(2, 2, 3), w)

    got, expected = same_outcome(call, "coo")
    assert_same_values(got, expected)


def test_linear_gradients_through_a_sparse_weight_as_torch():
    grads = {}
    for m in (torch, ember):
        w = m.sparse_coo_tensor([[0, 1, 1], [1, 0, 2]], [2.0, 3.0, 4.0], (2, 3),
                                requires_grad=True)
        x = m.arange(12.0).reshape(4, 3).requires_grad_()
        (m.nn.functional.linear(x, w) ** 2).sum().backward()
        grads[m] = w.grad, x.grad
    (w_e, x_e), (w_t, x_t) = grads[ember], grads[torch]
    assert_same_values(x_e, x_t)
    # torch gives the sparse leaf a dense gradient here, ember the sparse gradient of
    # torch.sparse.mm: torch's on the leaf's pattern (docs/sparse.md)
    assert w_e.layout is ember.sparse_coo and w_t.layout is torch.strided
    pattern = np.array([[0, 1, 0], [1, 0, 1]], dtype=np.float32)
    np.testing.assert_allclose(w_e.to_dense().numpy(), w_t.numpy() * pattern, rtol=1e-6)


@pytest.mark.parametrize("name", sorted(SPARSE_FUNCTIONS))
def test_top_level_functions_on_coo_as_torch(name):
    got, expected = same_outcome(SPARSE_FUNCTIONS[name], "coo", message=False)
    if expected is not None:
        assert_same_values(got, expected)


@pytest.mark.parametrize("layout", ["csr", "csc"])
@pytest.mark.parametrize("call", [lambda m, s: s.t(), lambda m, s: m.transpose(s, -1, 0),
                                  lambda m, s: s.transpose(1, 1), lambda m, s: s.t().t()])
def test_compressed_transpose_swaps_layout_as_torch(call, layout):
    got, expected = same_outcome(call, layout)
    assert repr(got) == repr(expected).replace("torch.", "ember.")


# ---------------------------------------------------------------- element-wise functions

ZERO_KEEPING = ["sin", "abs", "relu", "sqrt", "tanh", "neg", "expm1", "sign", "floor",
                "asinh", "erf", "trunc", "isnan", "sgn", "rad2deg"]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", ZERO_KEEPING + ["exp", "cos", "sigmoid", "angle"])
def test_elementwise_functions_keeping_zero_map_the_values(name, layout):
    """torch's sparse kernels of element-wise functions that keep zero (those apply to the
    values); the others are refused with torch's exception type."""
    for call in (lambda m, s: getattr(m, name)(s), lambda m, s: getattr(s, name)()):
        got, expected = same_outcome(call, layout, message=False)
        if expected is not None:
            assert_same_values(got, expected)
            assert str(got.dtype).split(".")[1] == str(expected.dtype).split(".")[1]


@pytest.mark.parametrize("name", ["abs", "relu", "floor"])  # torch differentiates these
def test_elementwise_of_uncoalesced_coo_and_its_gradient_as_torch(name):
    indices, values = [[0, 2, 0, 1], [1, 1, 1, 0]], [0.5, -1.0, -1.5, 2.0]  # (0, 1) twice
    results = {}
    for m in (torch, ember):
        s = m.sparse_coo_tensor(indices, values, (3, 2), requires_grad=True)
        out = getattr(m, name)(s)
        assert out.is_coalesced() and out.requires_grad
        (out.to_dense() * m.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])).sum().backward()
        results[m] = out.to_dense(), s.grad
    (out_t, grad_t), (out_e, grad_e) = results[torch], results[ember]
    np.testing.assert_allclose(out_e.detach().numpy(), out_t.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(grad_e.to_dense().numpy(), grad_t.to_dense().numpy(),
                               rtol=1e-6)


# ---------------------------------------------------------------- in place

IN_PLACE = {
    "add_": lambda m, s, t: s.add_(t),
    "sub_ alpha": lambda m, s, t: s.sub_(t, alpha=2),
    "mul_ scalar": lambda m, s, t: s.mul_(2),
    "mul_ sparse": lambda m, s, t: s.mul_(t),
    "div_": lambda m, s, t: s.div_(4),
    "neg_": lambda m, s, t: s.neg_(),
    "zero_": lambda m, s, t: s.zero_(),
    "copy_": lambda m, s, t: s.copy_(t),
    "add_ dense": lambda m, s, t: s.add_(m.ones(2, 3)),
    "abs_ uncoalesced": lambda m, s, t: s.abs_(),
    "abs_": lambda m, s, t: s.coalesce().abs_(),
    "sin_": lambda m, s, t: s.coalesce().sin_(),
    "exp_": lambda m, s, t: s.coalesce().exp_(),
}


def _uncoalesced(m):
    return m.sparse_coo_tensor([[0, 1, 0], [1, 2, 1]], [1.0, -2.0, 3.0], (2, 3))


@pytest.mark.parametrize("name", sorted(IN_PLACE))
def test_in_place_ops_on_coo_as_torch(name):
    """Dense values, identity of the result and exceptions as torch's (the number of stored
    elements may differ: ember's sum of two patterns keeps both, as documented)."""
    results = {}
    for m in (torch, ember):
        s, t = _uncoalesced(m), make(m, "coo")
        results[m] = outcome(lambda: (IN_PLACE[name](m, s, t), s))
    (kind_t, *rest_t), (kind_e, *rest_e) = results[torch], results[ember]
    assert kind_e == kind_t, (results[ember], results[torch])
    if kind_t == "raises":  # torch appends its list of backends to "Could not run"
        assert rest_e[0] is rest_t[0] and rest_t[1].startswith(rest_e[1].split(". ")[0])
        return
    (result_t, s_t), (result_e, s_e) = rest_t[0], rest_e[0]
    assert (result_e is s_e) == (result_t is s_t)
    assert_same_values(result_e, result_t)


@pytest.mark.parametrize("op", ["+=", "-=", "*=", "/="])
def test_augmented_assignment_keeps_the_sparse_tensor(op):
    results = {}
    for m in (torch, ember):
        s = before = _uncoalesced(m)
        other = 2.0 if op in ("*=", "/=") else make(m, "coo")
        namespace = {"s": s, "other": other}
        exec(f"s {op} other", namespace)
        assert namespace["s"] is before
        results[m] = namespace["s"].to_dense()
    np.testing.assert_allclose(results[ember].numpy(), results[torch].numpy())


@pytest.mark.parametrize("layout", ["csr", "csc"])
def test_in_place_elementwise_on_compressed_as_torch(layout):
    for name in ("abs_", "relu_", "exp_"):
        got, expected = same_outcome(lambda m, s: getattr(s, name)(), layout, message=False)
        if expected is not None:
            assert_same_values(got, expected)


def test_in_place_on_a_leaf_that_requires_grad_is_refused():
    for m in (torch, ember):
        leaf = m.sparse_coo_tensor([[0]], [1.0], (2,), requires_grad=True)
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
            leaf.mul_(2)


# ---------------------------------------------------------------- queries without strided memory


QUERIES = {
    "item": lambda s: s.item(),
    "bool": lambda s: bool(s),
    "tolist": lambda s: s.tolist(),
    "data_ptr": lambda s: s.data_ptr(),
    "stride": lambda s: s.stride(),
    "is_contiguous": lambda s: s.is_contiguous(),
    "storage_offset": lambda s: s.storage_offset(),
    "is_pinned": lambda s: s.is_pinned(),
    "untyped_storage": lambda s: s.untyped_storage(),
    "nbytes": lambda s: s.nbytes,
    "numpy": lambda s: s.numpy(),
    "len": lambda s: len(s),
    "get_device": lambda s: s.get_device(),
    "format": lambda s: f"{s}" == repr(s),
}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", sorted(QUERIES))
def test_tensor_queries_as_torch(name, layout):
    got, expected = same_outcome(lambda m, s: QUERIES[name](s), layout)
    assert got == expected


def test_one_element_item_and_bool():
    t, e = torch.tensor([2.5]).to_sparse(), ember.tensor([2.5]).to_sparse()
    assert e.item() == t.item() and bool(e) == bool(t)
    assert [x.to_dense().item() for x in e] == [x.to_dense().item() for x in t]


# ---------------------------------------------------------------- autograd


def test_sparse_mm_values_and_gradients_match_torch():
    indices, values = [[0, 1, 1], [2, 0, 2]], [3.0, -1.0, 2.0]
    dense = np.arange(6.0, dtype=np.float32).reshape(3, 2)
    results = {}
    for m in (torch, ember):
        s = m.sparse_coo_tensor(indices, values, (2, 3), requires_grad=True)
        d = m.tensor(dense, requires_grad=True)
        out = m.sparse.mm(s, d)
        (out * out).sum().backward()
        results[m] = out, s.grad, d.grad
    (out_t, sgrad_t, dgrad_t), (out_e, sgrad_e, dgrad_e) = results[torch], results[ember]
    assert isinstance(sgrad_e, ember.Tensor) and sgrad_e.layout is ember.sparse_coo
    np.testing.assert_allclose(out_e.detach().numpy(), out_t.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(sgrad_e.to_dense().numpy(), sgrad_t.to_dense().numpy(),
                               rtol=1e-6)
    np.testing.assert_allclose(dgrad_e.numpy(), dgrad_t.numpy(), rtol=1e-6)


def test_to_dense_gradient_reaches_values_as_torch():
    grads = {}
    for m in (torch, ember):
        v = m.tensor([1.0, 2.0, 3.0], requires_grad=True)
        s = m.sparse_coo_tensor([[0, 1, 1], [1, 0, 1]], v, (2, 2))
        assert isinstance(s, m.Tensor) and not s.is_leaf and s.requires_grad
        weights = m.tensor([[1.0, 2.0], [3.0, 4.0]])
        (s.to_dense() * weights).sum().backward()
        grads[m] = v.grad
    np.testing.assert_allclose(grads[ember].numpy(), grads[torch].numpy())


def test_detach_and_data_leave_the_graph():
    v = ember.tensor([1.0, 2.0], requires_grad=True)
    s = ember.sparse_coo_tensor([[0, 1]], v * 2, (2,))
    assert s.requires_grad and not s.data.requires_grad and not s.detach().requires_grad
    assert s.detach_() is s and not s.requires_grad
    leaf = ember.sparse_coo_tensor([[0]], [1.0], (2,))
    leaf.requires_grad = True
    assert leaf.requires_grad and leaf.is_leaf


# ---------------------------------------------------------------- ember.testing


ASSERT_CLOSE = {
    "equal": lambda m, s: m.testing.assert_close(s, s.clone()),
    "values differ": lambda m, s: m.testing.assert_close(s, s * 2),
    "indices differ": lambda m, s: m.testing.assert_close(s, s.t()),
    "sparse vs dense": lambda m, s: m.testing.assert_close(s, s.to_dense()),
    "check_layout=False": lambda m, s: m.testing.assert_close(s, s.to_dense() + 0,
                                                               check_layout=False),
    "csr scaled": lambda m, s: m.testing.assert_close(s.to_dense().to_sparse_csr(),
                                                      s.to_dense().to_sparse_csr() * 3),
    "csr equal": lambda m, s: m.testing.assert_close(s.to_dense().to_sparse_csr(),
                                                     s.to_dense().to_sparse_csr() * 1),
}


@pytest.mark.parametrize("name", sorted(ASSERT_CLOSE))
def test_assert_close_of_sparse_tensors_as_torch(name):
    """Sparse tensors compared as torch compares them: nnz, stored indices, stored values
    (torch's messages, torch's names made ember's)."""
    same_outcome(ASSERT_CLOSE[name], "coo")


# ---------------------------------------------------------------- pickling, copies, modules


def test_deepcopy_and_pickle_as_torch():
    for requires_grad in (False, True):
        pair = [m.sparse_coo_tensor([[0, 2]], [1.0, 2.0], (3,), requires_grad=requires_grad)
                for m in (torch, ember)]
        for copier in (copy.deepcopy, lambda x: pickle.loads(pickle.dumps(x))):
            t, e = (copier(x) for x in pair)
            assert type(e) is type(pair[1]) and e.requires_grad == t.requires_grad
            assert repr(e) == repr(t).replace("torch.", "ember.")
    nonleaf = ember.sparse_coo_tensor([[0]], ember.ones(1, requires_grad=True) * 2, (2,))
    nonleaf_t = torch.sparse_coo_tensor([[0]], torch.ones(1, requires_grad=True) * 2, (2,))
    with pytest.raises(RuntimeError, match="graph leaves"):
        copy.deepcopy(nonleaf_t)
    with pytest.raises(RuntimeError, match="graph leaves"):
        copy.deepcopy(nonleaf)
    same_outcome(lambda m, s: copy.deepcopy(s), "csr")  # torch: no storage to copy


@pytest.mark.parametrize("layout", LAYOUTS)
def test_save_load_both_ways(layout):
    buffer = io.BytesIO()
    ember.save({"s": make(ember, layout)}, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer)["s"]
    assert repr(loaded) == repr(make(torch, layout))
    buffer = io.BytesIO()
    torch.save([make(torch, layout)], buffer)
    buffer.seek(0)
    back = ember.load(buffer)[0]
    assert isinstance(back, ember.Tensor) and repr(back) == repr(make(ember, layout))


def test_default_collate_refuses_sparse_batches_as_torch():
    import torch.utils.data  # noqa: F401  (torch's submodule, imported on use)

    same_outcome(lambda m, s: m.utils.data.default_collate([s, s]), "coo")


def test_module_buffer_state_dict_and_to():
    results = {}
    for m in (torch, ember):
        module = m.nn.Module()
        module.register_buffer("mask", make(m, "coo"))
        moved = module.to(m.float64)
        state = moved.state_dict()
        results[m] = (str(moved.mask.layout).split(".")[1], str(moved.mask.dtype).split(".")[1],
                      list(state), moved.mask.to_dense().tolist())
    assert results[ember] == results[torch]
