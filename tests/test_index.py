"""Indexing operators against torch: values, dtypes, errors, gradients, meta shapes."""

import numpy as np
import pytest
import torch

import ember
from conftest import DTYPE_PAIRS, assert_grads_match, assert_same, make_pair

RNG = np.random.default_rng(0)
pytestmark = [pytest.mark.filterwarnings("ignore:The reduce argument of torch.scatter"),
              pytest.mark.filterwarnings("ignore:Using a non-tuple sequence"),
              pytest.mark.filterwarnings("ignore:indexing with dtype torch.uint8")]


def _pair_index(array):
    return ember.tensor(np.asarray(array)), torch.from_numpy(np.asarray(array).copy())


def _raises_like(e_fn, t_fn, words=()):
    with pytest.raises(Exception) as t_err:
        t_fn()
    with pytest.raises(type(t_err.value)) as e_err:
        e_fn()
    for w in words:
        assert w in str(e_err.value), (str(e_err.value), str(t_err.value))
    return e_err.value, t_err.value


def _values(dtype_name, shape, rng=RNG):
    if dtype_name == "bool":
        return rng.random(shape) > 0.5
    np_dtype = {"bfloat16": np.float32}.get(dtype_name, dtype_name)
    if dtype_name.startswith("complex"):
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np_dtype)
    if dtype_name.startswith(("int", "uint")):
        return rng.integers(0, 50, shape).astype(np_dtype)
    return rng.standard_normal(shape).astype(np_dtype)


def _cast_pair(array, dtype_name):
    e_dtype, t_dtype = DTYPE_PAIRS[dtype_name]
    e, t = make_pair(array)
    return e.to(e_dtype), t.to(t_dtype)


# ---------------------------------------------------------------- gather / scatter


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool", "bfloat16",
                                   "complex64", "uint8"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_gather_values(dtype, dim):
    x, tx = _cast_pair(_values(dtype, (4, 5)), dtype)
    idx = RNG.integers(0, x.shape[dim], (3, 2))
    ei, ti = _pair_index(idx)
    assert_same(ember.gather(x, dim, ei), torch.gather(tx, dim, ti))
    assert_same(x.gather(dim, ei), tx.gather(dim, ti))
    assert_same(x.gather(dim, ei.int()), tx.gather(dim, ti.int()))


def test_gather_zero_dim_and_empty_and_transposed():
    x, tx = make_pair(np.array(5.0))
    i, ti = _pair_index(np.array(0))
    assert_same(x.gather(0, i), tx.gather(0, ti))
    y, ty = make_pair(RNG.standard_normal((3, 4)))
    e0, t0 = _pair_index(np.zeros((0, 4), np.int64))
    assert_same(y.gather(0, e0), ty.gather(0, t0))
    yt, tyt = y.t(), ty.t()
    idx = RNG.integers(0, 3, (4, 3))
    ei, ti = _pair_index(idx)
    assert_same(yt.gather(1, ei), tyt.gather(1, ti))
    out, tout = ember.empty(0, dtype=ember.float64), torch.empty(0, dtype=torch.float64)
    ei, ti = _pair_index(idx[:3, :2])
    assert_same(ember.gather(y, 1, ei, out=out), torch.gather(ty, 1, ti, out=tout))
    assert_same(out, tout)


def test_gather_errors():
    x, tx = make_pair(np.arange(12.0).reshape(3, 4))
    cases = [
        (np.array([[0]], np.int16), 0, ["gather(): Expected dtype int32/int64 for index"]),
        (np.array([[0.0]]), 0, ["gather(): Expected dtype int32/int64 for index"]),
        (np.array([0]), 0, ["same number of dimensions"]),
        (np.array([[5]]), 0, ["index 5 is out of bounds for dimension 0 with size 3"]),
        (np.array([[-1]]), 0, ["index -1 is out of bounds"]),
        (np.zeros((2, 5), np.int64), 0, ["Size does not match at dimension 1"]),
        (np.zeros((2, 2), np.int64), 2, ["Dimension out of range"]),
    ]
    for idx, dim, words in cases:
        ei, ti = _pair_index(idx)
        _raises_like(lambda: x.gather(dim, ei), lambda: tx.gather(dim, ti), words)


@pytest.mark.parametrize("dim", [0, 1, -2])
def test_gather_grad(dim):
    x = RNG.standard_normal((4, 3))
    shape = (5, 3) if dim % 2 == 0 else (4, 5)
    idx = torch.from_numpy(RNG.integers(0, x.shape[dim], shape))
    ei = ember.tensor(idx.numpy())
    assert_grads_match(lambda a: a.gather(dim, ei), lambda a: a.gather(dim, idx), x,
                       double_backward=True)


def _perm_index(shape, size, dim, rng=RNG):
    """An index with no repeats along ``dim`` (scatter without reduce is then deterministic)."""
    idx = np.empty(shape, np.int64)
    moved = np.moveaxis(idx, dim, -1)
    for pos in np.ndindex(moved.shape[:-1]):
        moved[pos] = rng.permutation(size)[:moved.shape[-1]]
    return idx


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "bool", "complex128",
                                   "float16"])
@pytest.mark.parametrize("dim", [0, -1])
def test_scatter_values(dtype, dim):
    x, tx = _cast_pair(_values(dtype, (4, 5)), dtype)
    src, tsrc = _cast_pair(_values(dtype, (4, 6)), dtype)
    shape = (3, 4) if dim == 0 else (4, 3)
    ei, ti = _pair_index(_perm_index(shape, x.shape[dim], dim % 2))
    assert_same(x.scatter(dim, ei, src), tx.scatter(dim, ti, tsrc))
    assert_same(ember.scatter(x, dim, ei, src), torch.scatter(tx, dim, ti, tsrc))
    value = True if dtype == "bool" else 3
    assert_same(x.scatter(dim, ei, value), tx.scatter(dim, ti, value))
    if dtype != "bool":
        assert_same(x.scatter_add(dim, ei, src), tx.scatter_add(dim, ti, tsrc))
        dup, tdup = _pair_index(RNG.integers(0, x.shape[dim], shape))
        assert_same(x.scatter_add(dim, dup, src), tx.scatter_add(dim, tdup, tsrc))
        assert_same(x.scatter(dim, dup, src, reduce="add"),
                    tx.scatter(dim, tdup, tsrc, reduce="add"))
        assert_same(x.scatter(dim, dup, src, reduce="multiply"),
                    tx.scatter(dim, tdup, tsrc, reduce="multiply"))
        assert_same(x.scatter(dim, dup, 2, reduce="multiply"),
                    tx.scatter(dim, tdup, 2, reduce="multiply"))


def test_scatter_inplace_and_zero_dim():
    x, tx = make_pair(np.zeros((3, 4)))
    ei, ti = _pair_index(np.array([[2, 0, 1, 0]]))
    src, tsrc = make_pair(np.ones((1, 4)))
    version = x._version
    assert x.scatter_(0, ei, src) is x
    tx.scatter_(0, ti, tsrc)
    assert_same(x, tx)
    assert x._version > version
    x.scatter_add_(1, ei, src)
    tx.scatter_add_(1, ti, tsrc)
    assert_same(x, tx)
    s, ts = make_pair(np.array(5.0))
    i0, t0 = _pair_index(np.array(0))
    assert_same(s.scatter(0, i0, 2.0), ts.scatter(0, t0, 2.0))


def test_scatter_errors():
    x, tx = make_pair(np.arange(12.0, dtype=np.float32).reshape(3, 4))
    cases = [
        (lambda m, t, i: m.scatter(0, i(np.array([[0]], np.int16)), 1.0), ["int32/int64"]),
        (lambda m, t, i: m.scatter_add(0, i(np.array([[0.0]])), m), ["int32/int64"]),
        (lambda m, t, i: m.scatter(0, i(np.array([[5]])), 1.0), ["index 5 is out of bounds"]),
        (lambda m, t, i: m.scatter(0, i(np.array([[0]])), t(np.ones((1, 1)))), ["dtype"]),
        (lambda m, t, i: m.scatter(0, i(np.zeros((2, 5), np.int64)),
                                   t(np.ones((2, 2), np.float32))), ["to be no larger than self"]),
        (lambda m, t, i: m.scatter_add(0, i(np.zeros((2, 2), np.int64)),
                                       t(np.ones((1, 1), np.float32))), ["no larger size than src"]),
        (lambda m, t, i: m.scatter(0, i(np.array([[0]])), t(np.ones((1, 1), np.float32)),
                                   reduce="foo"), ["reduce argument must be"]),
        (lambda m, t, i: m.scatter_reduce(0, i(np.array([[0]])), t(np.ones((1, 1), np.float32)),
                                          "foo"), ["sum, prod, mean, amax or amin"]),
    ]
    for fn, words in cases:
        _raises_like(lambda: fn(x, ember.tensor, ember.tensor),
                     lambda: fn(tx, torch.tensor, torch.tensor), words)


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dtype", ["float64", "int64", "float32"])
def test_scatter_reduce_values(reduce, include_self, dtype):
    x, tx = _cast_pair(_values(dtype, (5, 3)), dtype)
    src, tsrc = _cast_pair(_values(dtype, (6, 3)), dtype)
    ei, ti = _pair_index(RNG.integers(0, 4, (6, 3)))
    assert_same(x.scatter_reduce(0, ei, src, reduce, include_self=include_self),
                tx.scatter_reduce(0, ti, tsrc, reduce, include_self=include_self))
    y, ty = x.clone(), tx.clone()
    y.scatter_reduce_(0, ei, src, reduce, include_self=include_self)
    ty.scatter_reduce_(0, ti, tsrc, reduce, include_self=include_self)
    assert_same(y, ty)


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_grad(reduce, include_self):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((5, 3))
    src = rng.standard_normal((6, 3))
    if reduce == "prod":
        src[1, 0] = 0.0  # a single zero factor: the exact branch of the gradient
    idx = torch.from_numpy(rng.integers(0, 4, (6, 3)))
    ei = ember.tensor(idx.numpy())
    assert_grads_match(
        lambda a, s: a.scatter_reduce(0, ei, s, reduce, include_self=include_self),
        lambda a, s: a.scatter_reduce(0, idx, s, reduce, include_self=include_self),
        x, src, double_backward=reduce in ("sum", "mean"))


def test_scatter_grads():
    x, src = RNG.standard_normal((4, 5)), RNG.standard_normal((3, 5))
    idx = torch.from_numpy(_perm_index((3, 5), 4, 0))
    ei = ember.tensor(idx.numpy())
    assert_grads_match(lambda a, s: a.scatter(0, ei, s), lambda a, s: a.scatter(0, idx, s),
                       x, src, double_backward=True)
    assert_grads_match(lambda a: a.scatter(0, ei, 2.5), lambda a: a.scatter(0, idx, 2.5), x,
                       double_backward=True)
    dup = torch.from_numpy(RNG.integers(0, 4, (3, 5)))
    edup = ember.tensor(dup.numpy())
    assert_grads_match(lambda a, s: a.scatter_add(0, edup, s),
                       lambda a, s: a.scatter_add(0, dup, s), x, src, double_backward=True)


def test_scatter_reduce_legacy_is_not_differentiable():
    x = ember.zeros(3, requires_grad=True)
    y = x.scatter(0, ember.tensor([0]), ember.ones(1, requires_grad=True), reduce="add")
    with pytest.raises(RuntimeError, match="not implemented"):
        y.sum().backward()


# ---------------------------------------------------------------- index_select / index_add


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "bfloat16", "complex64"])
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("index_dtype", [np.int64, np.int32])
def test_index_select_values(dtype, dim, index_dtype):
    x, tx = _cast_pair(_values(dtype, (4, 3, 2)), dtype)
    idx = RNG.integers(-0, x.shape[dim], 5).astype(index_dtype)
    ei, ti = _pair_index(idx)
    assert_same(x.index_select(dim, ei), tx.index_select(dim, ti))
    ei, ti = _pair_index(np.array([1, 0, 1], index_dtype))
    assert_same(ember.index_select(x.transpose(0, 2), dim, ei),
                torch.index_select(tx.transpose(0, 2), dim, ti))


def test_index_select_edge_cases():
    s, ts = make_pair(np.array(5.0))
    for idx in (np.array([0]), np.array(0)):
        ei, ti = _pair_index(idx)
        assert_same(s.index_select(0, ei), ts.index_select(0, ti))
    x, tx = make_pair(RNG.standard_normal((3, 4)))
    ei, ti = _pair_index(np.zeros(0, np.int64))
    assert_same(x.index_select(1, ei), tx.index_select(1, ti))
    e1, t1 = _pair_index(np.array(2))
    assert_same(x.index_select(0, e1), tx.index_select(0, t1))
    out, tout = ember.empty(2, 4, dtype=ember.float64), torch.empty(2, 4, dtype=torch.float64)
    ei, ti = _pair_index(np.array([2, 0]))
    assert_same(ember.index_select(x, 0, ei, out=out), torch.index_select(tx, 0, ti, out=tout))
    assert_same(out, tout)


def test_index_select_errors():
    x, tx = make_pair(np.arange(12.0).reshape(3, 4))
    for idx, words in [(np.array([0.0]), ["int32 or int64"]), (np.array([[0]]), ["vector"]),
                       (np.array([5]), ["index out of range in self"]),
                       (np.array([-1]), ["index out of range in self"])]:
        ei, ti = _pair_index(idx)
        _raises_like(lambda: x.index_select(0, ei), lambda: tx.index_select(0, ti), words)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_index_select_grad(dim):
    x = RNG.standard_normal((4, 3))
    idx = torch.from_numpy(RNG.integers(0, x.shape[dim], 6))
    ei = ember.tensor(idx.numpy())
    assert_grads_match(lambda a: a.index_select(dim, ei), lambda a: a.index_select(dim, idx), x,
                       double_backward=True)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "complex64", "float16"])
@pytest.mark.parametrize("dim", [0, -1])
def test_index_add_values(dtype, dim):
    x, tx = _cast_pair(_values(dtype, (4, 5)), dtype)
    n = 6
    src_shape = (n, 5) if dim == 0 else (4, n)
    src, tsrc = _cast_pair(_values(dtype, src_shape), dtype)
    ei, ti = _pair_index(RNG.integers(0, x.shape[dim], n))
    assert_same(x.index_add(dim, ei, src), tx.index_add(dim, ti, tsrc))
    assert_same(ember.index_add(x, dim, ei, src, alpha=2), torch.index_add(tx, dim, ti, tsrc,
                                                                          alpha=2))
    y, ty = x.clone(), tx.clone()
    y.index_add_(dim, ei.int(), src)
    ty.index_add_(dim, ti.int(), tsrc)
    assert_same(y, ty)


def test_index_add_errors():
    x, tx = make_pair(np.arange(12.0).reshape(3, 4).astype(np.float32))
    cases = [
        (np.array([0.0]), np.ones((1, 4), np.float32), ["int32/int64 for index"]),
        (np.array([0]), np.ones((2, 4), np.float32), ["Number of indices (1)"]),
        (np.array([0]), np.ones((1, 3), np.float32), ["source tensor shape must match"]),
        (np.array([7]), np.ones((1, 4), np.float32), ["index 7 is out of bounds"]),
        (np.array([0]), np.ones((1, 4)), ["must have the same scalar type"]),
    ]
    for idx, src, words in cases:
        ei, ti = _pair_index(idx)
        es, ts = make_pair(src)
        _raises_like(lambda: x.index_add(0, ei, es), lambda: tx.index_add(0, ti, ts), words)
    ei, ti = _pair_index(np.array([0, 0]))
    ei_, ti_ = make_pair(np.array([1, 3]))
    xi, txi = make_pair(np.arange(3))
    assert_same(xi.index_add(0, ei, ei_, alpha=2.5), txi.index_add(0, ti, ti_, alpha=2.5))


def test_index_add_grad():
    x, src = RNG.standard_normal((4, 3)), RNG.standard_normal((5, 3))
    idx = torch.from_numpy(RNG.integers(0, 4, 5))
    ei = ember.tensor(idx.numpy())
    assert_grads_match(lambda a, s: a.index_add(0, ei, s, alpha=1.5),
                       lambda a, s: a.index_add(0, idx, s, alpha=1.5), x, src,
                       double_backward=True)


def test_gather_scatter_meta():
    x = ember.zeros(4, 5, device="meta")
    idx = ember.zeros(3, 5, dtype=ember.int64, device="meta")
    src = ember.zeros(3, 5, device="meta")
    assert x.gather(0, idx).shape == (3, 5) and x.gather(0, idx).device.type == "meta"
    for result in (x.scatter(0, idx, src), x.scatter(0, idx, 1.0), x.scatter_add(0, idx, src),
                   x.scatter_reduce(0, idx, src, "amax")):
        assert result.shape == (4, 5) and result.dtype is ember.float32
        assert result.device.type == "meta"
    assert x.index_add(0, ember.zeros(3, dtype=ember.int64, device="meta"), src).shape == (4, 5)
    r = x.index_select(1, ember.zeros(7, dtype=ember.int64, device="meta"))
    assert r.shape == (4, 7) and r.device.type == "meta"


# ---------------------------------------------------------------- __getitem__


def _keys(lib):
    """Index forms; ``lib`` makes index tensors (ember.tensor or torch.tensor)."""
    return [
        0, -1, (1, 2), (slice(None), 1), slice(1, None), slice(None, None, 2), (..., 1),
        (None, 0), (0, None, slice(1, 3)), (slice(0, 100),), (slice(-100, 2),), (..., None),
        ..., (1, ..., slice(None, None, 3)), True, False, (None, True, 1), (0, 1, 2),
        [0, 2], [[0, 1], [2, 2]], ([0, 1], [1, 2]), (slice(None), [0, 2]),
        ([0, 1], slice(None), [1, 2]), (0, slice(None), [1, 2]), ([1], 0, [2]),
        (slice(None), [0], [[1], [2]]), ([0, 1], None, [1, 2]), (..., [0, -1]),
        lib([1, 0]), lib([[True, False, True, True], [False, False, True, False],
                          [True, True, True, False]]),
        lib([True, False, True]), (lib([True, False, True]), slice(None), 1), lib(1), lib(True),
        (slice(None), lib([False, True, True, False])), (1, lib([[True] * 5] * 4)),
        (lib([0, 1], dtype=lib.int32 if hasattr(lib, "int32") else None), 0),
        (slice(None), lib([[0, 1]]), lib([[2], [0]])), np.array([1, 0]), (0, np.int64(2)),
        [], (slice(None), slice(2, 1)), (lib(-1), lib([-3])), (..., ...), (0, ..., 1, ...),
    ]


def test_getitem_matches_torch():
    base = RNG.standard_normal((3, 4, 5))
    x, tx = make_pair(base)
    ekeys, tkeys = _keys(_EmberLib), _keys(_TorchLib)
    for ek, tk in zip(ekeys, tkeys):
        expected = tx[tk]
        actual = x[ek]
        assert_same(actual, expected)
        assert (actual._base is not None) == (expected._base is not None), ek


class _EmberLib:
    int32 = ember.int32

    def __new__(cls, data, dtype=None):
        return ember.tensor(data, dtype=dtype)


class _TorchLib:
    int32 = torch.int32

    def __new__(cls, data, dtype=None):
        return torch.tensor(data, dtype=dtype)


def test_basic_index_is_a_view():
    x, tx = make_pair(np.arange(24.0).reshape(2, 3, 4))
    for key in [(0,), (slice(None), 1), (1, slice(1, None), slice(None, None, 2)), (None, ...)]:
        v, tv = x[key], tx[key]
        assert_same(v, tv)
        assert v._base is x and v.stride() == tv.stride()
        assert v.storage_offset() == tv.storage_offset()
    v = x[1, :, ::2]
    version = x._version
    v[0, 0] = 100.0
    assert x[1, 0, 0].item() == 100.0 and x._version == version + 1 == v._version
    x[1, 2, 2] = -5.0
    assert v[2, 1].item() == -5.0
    a = x[[0, 1]]
    a[0, 0, 0] = 7.0
    assert x[0, 0, 0].item() != 7.0


@pytest.mark.parametrize("dtype", ["bool", "int8", "float16", "bfloat16", "complex64"])
def test_getitem_dtypes_and_non_contiguous(dtype):
    x, tx = _cast_pair(_values(dtype, (4, 5)), dtype)
    x, tx = x.t(), tx.t()
    for key in [(1, slice(None, None, 2)), ([0, 4], [1, 3]), (slice(None), [2, 0])]:
        assert_same(x[key], tx[key])
    mask = (tx.to(torch.float32).real > 0) if dtype != "bool" else tx
    assert_same(x[ember.tensor(mask.numpy())], tx[mask])


def test_getitem_zero_dim_and_empty():
    s, ts = make_pair(np.array(3.5))
    for key in [None, ..., (), True, False]:
        assert_same(s[key], ts[key])
    e, te = make_pair(np.zeros((0, 3)))
    for key in [(slice(None), 1), ([],), (slice(None), [0, 2])]:
        assert_same(e[key], te[key])


def test_getitem_errors():
    x, tx = make_pair(np.arange(12.0).reshape(3, 4))
    s, ts = make_pair(np.array(1.0))
    cases = [
        (5, ["index 5 is out of bounds for dimension 0 with size 3"]),
        ((slice(None), 5), ["index 5 is out of bounds for dimension 1 with size 4"]),
        ("t5", ["index 5 is out of bounds for dimension 0 with size 3"]),
        ("t-5col", ["index -5 is out of bounds for dimension 0 with size 4"]),
        (slice(None, None, -1), ["step must be greater than zero"]),
        (slice(None, None, 0), ["slice step cannot be zero"]),
        ((0, 0, 0), ["too many indices for tensor of dimension 2"]),
        (1.0, ["only integers, slices"]),
        ("tfloat", ["tensors used as indices must be long, int, byte or bool tensors"]),
        ("tint16", ["tensors used as indices must be long"]),
        ("mask14", ["The shape of the mask [1, 4] at index 0 does not match"]),
        (([0, 1], [0, 1, 2]), ["shape mismatch: indexing tensors could not be broadcast"]),
    ]

    def make(key, lib):
        special = {"t5": lambda: lib.tensor([5]), "t-5col": lambda: (slice(None), lib.tensor([-5])),
                   "tfloat": lambda: lib.tensor([1.0]),
                   "tint16": lambda: lib.tensor([0], dtype=lib.int16),
                   "mask14": lambda: lib.ones(1, 4, dtype=lib.bool)}
        return special[key]() if isinstance(key, str) else key

    for key, words in cases:
        _raises_like(lambda: x[make(key, ember)], lambda: tx[make(key, torch)], words)
    _raises_like(lambda: s[0], lambda: ts[0], ["invalid index of a 0-dim tensor"])


@pytest.mark.parametrize("key", [
    (1,), (slice(None), slice(1, 3)), (..., 0), (None, 1, slice(None, None, 2)),
    ([0, 2, 2],), (slice(None), [1, 1, 0]), ([0, 1], [2, 2]), (0, slice(None), [1, 0]),
    ([1, 0], None, [0, 2]), "mask",
])
def test_getitem_grad(key):
    x = RNG.standard_normal((3, 4, 2))
    mask = RNG.random((3, 4)) > 0.4

    def pick(lib):
        return lib.tensor(mask) if key == "mask" else key

    assert_grads_match(lambda a: a[pick(ember)], lambda a: a[pick(torch)], x,
                       double_backward=True)


# ---------------------------------------------------------------- __setitem__


def _set(t, key, value):
    t[key] = value
    return t


@pytest.mark.parametrize("key", [
    0, (1, slice(1, None)), (..., 1), (None, 0), ([0, 2],), (slice(None), [3, 0]),
    ([0, 1], [1, 2]), (0, slice(None), [1, 0]), ([2, 0], None, [0, 1]), True, "mask",
    (slice(None, None, 2), slice(1, None, 2)),
])
@pytest.mark.parametrize("value", ["scalar", "tensor", "double", "bcast"])
def test_setitem_matches_torch(key, value):
    base = RNG.standard_normal((3, 4, 2))
    mask = base[..., 0] > 0
    x, tx = make_pair(base.astype(np.float32))
    ek = ember.tensor(mask) if key == "mask" else key
    tk = torch.tensor(mask) if key == "mask" else key
    target_shape = tuple(tx[tk].shape)
    if value == "scalar":
        ev = tv = 2.5
    else:
        shape = target_shape[-1:] if value == "bcast" else target_shape
        arr = RNG.standard_normal(shape)
        if value != "double":
            arr = arr.astype(np.float32)
        ev, tv = make_pair(arr)
    version = x._version
    try:
        _set(tx, tk, tv)
    except RuntimeError:  # torch refuses a value of another dtype for advanced indices
        with pytest.raises(RuntimeError, match="dtypes match"):
            _set(x, ek, ev)
        return
    _set(x, ek, ev)
    assert_same(x, tx)
    assert x._version == version + 1


def test_setitem_other_dtypes_and_views():
    x, tx = make_pair(np.arange(6))
    _set(x, 0, 2.7)
    _set(tx, 0, 2.7)
    assert_same(x, tx)
    b, tb = make_pair(np.zeros((2, 3), bool))
    _set(b, (0, [0, 2]), True)
    _set(tb, (0, [0, 2]), True)
    assert_same(b, tb)
    y, ty = make_pair(np.zeros((3, 4)))
    view, tview = y[1:, ::2], ty[1:, ::2]
    _set(view, [0, 1], ember.ones(1, 2, 2, dtype=ember.float64))
    _set(tview, [0, 1], torch.ones(1, 2, 2, dtype=torch.float64))
    assert_same(y, ty)
    _set(y, 0, ember.ones(1, 1, 4))
    _set(ty, 0, torch.ones(1, 1, 4))
    assert_same(y, ty)


def test_setitem_errors():
    x, tx = make_pair(np.arange(12.0).reshape(3, 4))
    _raises_like(lambda: _set(x, 0, ember.ones(3)), lambda: _set(tx, 0, torch.ones(3)),
                 ["The expanded size of the tensor (4) must match the existing size (3)"])
    _raises_like(lambda: _set(x, [0, 1], ember.ones(3, 4)),
                 lambda: _set(tx, [0, 1], torch.ones(3, 4)),
                 ["shape mismatch: value tensor of shape [3, 4] cannot be broadcast to indexing "
                  "result of shape [2, 4]"])
    _raises_like(lambda: _set(x, 5, 1.0), lambda: _set(tx, 5, 1.0), ["out of bounds"])
    _raises_like(lambda: _set(x, ember.tensor([7]), 1.0), lambda: _set(tx, torch.tensor([7]), 1.0),
                 ["index 7 is out of bounds"])
    w, tw = make_pair(np.zeros(3), requires_grad=True)
    _raises_like(lambda: _set(w, 0, 1.0), lambda: _set(tw, 0, 1.0), ["leaf Variable"])
    with ember.no_grad():
        w[0] = 1.0
    assert w[0].item() == 1.0


@pytest.mark.parametrize("key", [1, (slice(None), slice(0, 2)), ([0, 2],), ([0, 1], [1, 0]),
                                 (0, [1, 2]), "mask"])
def test_setitem_grad(key):
    x, v = RNG.standard_normal((3, 4)), RNG.standard_normal(2)
    mask = np.zeros((3, 4), bool)
    mask[0, 1] = mask[2, 3] = True

    def fn(lib):
        k = lib.tensor(mask) if key == "mask" else key

        def f(a, value):
            y = a * 1.5
            y[k] = value if lib is not ember else value
            return y * a
        return f

    if key == 1:
        v = RNG.standard_normal(4)
    elif key == (slice(None), slice(0, 2)):
        v = RNG.standard_normal((1, 2))
    elif key == ([0, 2],):
        v = RNG.standard_normal(4)
    assert_grads_match(fn(ember), fn(torch), x, v, double_backward=True)


def test_setitem_grad_scalar_and_value_only():
    def f(lib):
        def g(value):
            y = lib.zeros(3, 2, dtype=lib.float64)
            y[1] = value
            y[[0, 0], [1, 1]] = value[0] * 2
            return y
        return g

    assert_grads_match(f(ember), f(torch), RNG.standard_normal(2), double_backward=True)


# ---------------------------------------------------------------- index_put, masks, take, put


@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put_values_and_grad(accumulate):
    x, tx = make_pair(RNG.standard_normal((4, 3)))
    i0, t0 = _pair_index(np.array([0, 2, 2] if accumulate else [0, 2, 3]))
    i1, t1 = _pair_index(np.array([1, 0, 0] if accumulate else [1, 0, 2]))
    v, tv = make_pair(RNG.standard_normal(3))
    assert_same(x.index_put((i0, i1), v, accumulate), tx.index_put((t0, t1), tv, accumulate))
    assert_same(ember.index_put(x, (i0,), v, accumulate=accumulate),
                torch.index_put(tx, (t0,), tv, accumulate=accumulate))
    _raises_like(lambda: x.index_put((i0, None), v, accumulate),
                 lambda: tx.index_put((t0, None), tv, accumulate), ["expected Tensor as element 1"])
    y, ty = x.clone(), tx.clone()
    assert y.index_put_((i0, i1), v, accumulate=accumulate) is y
    ty.index_put_((t0, t1), tv, accumulate=accumulate)
    assert_same(y, ty)
    mask = RNG.random((4, 3)) > 0.5
    assert_same(x.index_put((ember.tensor(mask),), ember.tensor(2.0, dtype=ember.float64),
                            accumulate),
                tx.index_put((torch.tensor(mask),), torch.tensor(2.0, dtype=torch.float64),
                             accumulate))
    assert_grads_match(lambda a, b: a.index_put((i0, i1), b, accumulate),
                       lambda a, b: a.index_put((t0, t1), b, accumulate),
                       RNG.standard_normal((4, 3)), RNG.standard_normal(3), double_backward=True)


def test_index_put_errors():
    x, tx = make_pair(np.zeros((3, 4), np.float32))
    cases = [
        (lambda m, lib: m.index_put((lib.tensor([0]),), lib.ones(3)), ["shape mismatch"]),
        (lambda m, lib: m.index_put((lib.tensor([0.0]),), lib.ones(1)),
         ["tensors used as indices must be long"]),
        (lambda m, lib: m.index_put((lib.tensor([0]),), lib.ones(1, dtype=lib.float64)),
         ["Index put requires the source and destination dtypes match"]),
        (lambda m, lib: m.index_put((lib.tensor([3]),), lib.ones(1)),
         ["index 3 is out of bounds"]),
    ]
    for fn, words in cases:
        _raises_like(lambda: fn(x, ember), lambda: fn(tx, torch), words)


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "complex64"])
def test_masked_ops_values(dtype):
    x, tx = _cast_pair(_values(dtype, (3, 4)), dtype)
    m = RNG.random((3, 4)) > 0.5
    em, tm = make_pair(m)
    mb, tmb = make_pair(m[0])  # broadcast along rows
    value = True if dtype == "bool" else 2
    assert_same(x.masked_fill(em, value), tx.masked_fill(tm, value))
    assert_same(x.masked_fill(mb, value), tx.masked_fill(tmb, value))
    assert_same(ember.masked_fill(x, em, ember.tensor(value)),
                torch.masked_fill(tx, tm, torch.tensor(value)))
    assert_same(x.masked_select(em), tx.masked_select(tm))
    assert_same(ember.masked_select(x, mb), torch.masked_select(tx, tmb))
    src, tsrc = _cast_pair(_values(dtype, (20,)), dtype)
    assert_same(x.masked_scatter(em, src), tx.masked_scatter(tm, tsrc))
    assert_same(x.masked_scatter(mb, src), tx.masked_scatter(tmb, tsrc))
    y, ty = x.clone(), tx.clone()
    y.masked_fill_(em, value).masked_scatter_(mb, src)
    ty.masked_fill_(tm, value).masked_scatter_(tmb, tsrc)
    assert_same(y, ty)
    bigger, tbigger = make_pair(np.ones((2, 3, 4), bool))
    assert_same(x.masked_fill(bigger, value), tx.masked_fill(tbigger, value))
    assert_same(x.masked_select(bigger), tx.masked_select(tbigger))
    s, ts = _cast_pair(_values(dtype, ()), dtype)
    assert_same(s.masked_select(ember.tensor(True)), ts.masked_select(torch.tensor(True)))


def test_masked_ops_errors():
    x, tx = make_pair(np.zeros((3, 4), np.float32))
    cases = [
        (lambda m, lib: m.masked_fill(lib.ones(3, 4), 1.0), ["only supports boolean masks"]),
        (lambda m, lib: m.masked_fill(lib.ones(3, 4, dtype=lib.bool), lib.tensor([1.0])),
         ["0-dimensional value tensor"]),
        (lambda m, lib: m.masked_fill_(lib.ones(2, 3, 4, dtype=lib.bool), 1.0),
         ["doesn't match the broadcast shape"]),
        (lambda m, lib: m.masked_select(lib.ones(3, 4)), ["expected BoolTensor for mask"]),
        (lambda m, lib: m.masked_scatter(lib.ones(3, 4, dtype=lib.bool), lib.ones(3)),
         ["Number of elements of source < number of ones in mask"]),
        (lambda m, lib: m.masked_scatter(lib.ones(3, 4), lib.ones(30)),
         ["only supports boolean masks"]),
        (lambda m, lib: m.masked_scatter(lib.ones(3, 4, dtype=lib.bool),
                                         lib.ones(12, dtype=lib.float64)), ["same dtypes"]),
    ]
    for fn, words in cases:
        _raises_like(lambda: fn(x, ember), lambda: fn(tx, torch), words)


def test_masked_ops_grad():
    m = RNG.random((3, 4)) > 0.5
    em, tm = ember.tensor(m), torch.tensor(m)
    x = RNG.standard_normal((3, 4))
    assert_grads_match(lambda a: a.masked_fill(em, 1.5), lambda a: a.masked_fill(tm, 1.5), x,
                       double_backward=True)
    assert_grads_match(lambda a, v: a.masked_fill(em, v), lambda a, v: a.masked_fill(tm, v), x,
                       np.array(0.5), double_backward=True)
    assert_grads_match(lambda a: a.masked_select(em[0]), lambda a: a.masked_select(tm[0]), x,
                       double_backward=True)
    assert_grads_match(lambda a, s: a.masked_scatter(em, s), lambda a, s: a.masked_scatter(tm, s),
                       x, RNG.standard_normal(15), double_backward=True)


def test_take_put_take_along_dim():
    x, tx = make_pair(RNG.standard_normal((3, 4)))
    idx = np.array([[0, -1], [11, 5]])
    ei, ti = _pair_index(idx)
    assert_same(x.take(ei), tx.take(ti))
    assert_same(ember.take(x.t(), ei), torch.take(tx.t(), ti))
    src, tsrc = make_pair(RNG.standard_normal((2, 2)))
    assert_same(x.put(ei, src), tx.put(ti, tsrc))
    assert_same(ember.put(x.t(), ei, src, accumulate=True),
                torch.put(tx.t(), ti, tsrc, accumulate=True))
    y, ty = x.clone(), tx.clone()
    y.put_(ei, src, accumulate=True)
    ty.put_(ti, tsrc, accumulate=True)
    assert_same(y, ty)
    for dim in (0, 1, -1):
        shape = (2, 4) if dim == 0 else (3, 2)
        size = x.shape[dim]
        ej, tj = _pair_index(RNG.integers(-size, size, shape))
        assert_same(x.take_along_dim(ej, dim), tx.take_along_dim(tj, dim))
    ej, tj = _pair_index(RNG.integers(0, 3, (5, 1)))
    assert_same(ember.take_along_dim(x, ej, 0), torch.take_along_dim(tx, tj, 0))
    _raises_like(lambda: ember.take_along_dim(x, ei), lambda: torch.take_along_dim(tx, ti),
                 ["out of bounds"])
    assert_same(ember.take_along_dim(x, ei.abs()), torch.take_along_dim(tx, ti.abs()))
    assert_grads_match(lambda a: a.take(ei), lambda a: a.take(ti), RNG.standard_normal((3, 4)),
                       double_backward=True)
    assert_grads_match(lambda a, s: a.put(ei, s, accumulate=True),
                       lambda a, s: a.put(ti, s, accumulate=True), RNG.standard_normal((3, 4)),
                       RNG.standard_normal((2, 2)), double_backward=True)
    ek, tk = _pair_index(RNG.integers(0, 4, (3, 2)))
    assert_grads_match(lambda a: a.take_along_dim(ek, 1), lambda a: a.take_along_dim(tk, 1),
                       RNG.standard_normal((3, 4)), double_backward=True)


def test_take_put_errors():
    x, tx = make_pair(np.zeros((3, 4), np.float32))
    cases = [
        (lambda m, lib: m.take(lib.tensor([12])), ["out of range: tried to access index 12"]),
        (lambda m, lib: m.take(lib.tensor([-13])), ["tried to access index -13"]),
        (lambda m, lib: m.take(lib.tensor([0], dtype=lib.int32)), ["Expected a long tensor"]),
        (lambda m, lib: m.put(lib.tensor([12]), lib.ones(1)), ["out of range"]),
        (lambda m, lib: m.put(lib.tensor([0, 1]), lib.ones(1)),
         ["same number of elements"]),
        (lambda m, lib: m.put(lib.tensor([0], dtype=lib.int32), lib.ones(1)),
         ["Expected a long tensor"]),
        (lambda m, lib: m.take_along_dim(lib.tensor([[0.0]]), 1), ["dtype of indices"]),
        (lambda m, lib: m.take_along_dim(lib.tensor([0]), 1), ["same number of dimensions"]),
        (lambda m, lib: m.take_along_dim(lib.tensor([[0]] * 5), 1), ["must match the size"]),
    ]
    for fn, words in cases:
        _raises_like(lambda: fn(x, ember), lambda: fn(tx, torch), words)


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "complex64", "bfloat16"])
def test_nonzero_argwhere(dtype):
    arr = _values(dtype, (3, 4))
    if dtype != "bool":
        arr[RNG.random((3, 4)) > 0.5] = 0
    x, tx = _cast_pair(arr, dtype)
    assert_same(x.nonzero(), tx.nonzero())
    assert_same(ember.nonzero(x, as_tuple=True), torch.nonzero(tx, as_tuple=True))
    assert_same(ember.argwhere(x), torch.argwhere(tx))
    assert_same(ember.where(x), torch.where(tx))
    for s in (np.array(5), np.array(0), np.zeros((0, 2))):
        e, t = make_pair(s)
        assert_same(e.nonzero(), t.nonzero())
        assert_same(e.nonzero(as_tuple=True), t.nonzero(as_tuple=True))


def test_index_copy_fill():
    x, tx = make_pair(RNG.standard_normal((4, 3)))
    ei, ti = _pair_index(np.array([3, 0]))
    src, tsrc = make_pair(RNG.standard_normal((2, 3)))
    assert_same(x.index_copy(0, ei, src), tx.index_copy(0, ti, tsrc))
    assert_same(x.index_fill(1, ember.tensor([-1, 0]), 7.0),
                tx.index_fill(1, torch.tensor([-1, 0]), 7.0))
    assert_same(x.index_fill(0, ei, ember.tensor(2.0, dtype=ember.float64)),
                tx.index_fill(0, ti, torch.tensor(2.0, dtype=torch.float64)))
    y, ty = x.clone(), tx.clone()
    y.index_copy_(0, ei, src).index_fill_(1, ei[1:], -1.0)
    ty.index_copy_(0, ti, tsrc).index_fill_(1, ti[1:], -1.0)
    assert_same(y, ty)
    _raises_like(lambda: x.index_copy(0, ember.tensor([-5, 0]), src),
                 lambda: tx.index_copy(0, torch.tensor([-5, 0]), tsrc), ["out of bounds"])
    _raises_like(lambda: x.index_copy(0, ei.int(), src), lambda: tx.index_copy(0, ti.int(), tsrc),
                 ["Expected a long tensor"])
    _raises_like(lambda: x.index_fill(0, ei.int(), 1.0), lambda: tx.index_fill(0, ti.int(), 1.0),
                 ["Expected dtype int64"])
    _raises_like(lambda: x.index_fill(0, ei, ember.ones(1)), lambda: tx.index_fill(0, ti, torch.ones(1)),
                 ["0-dimensional value tensor"])
    assert_grads_match(lambda a, s: a.index_copy(0, ei, s), lambda a, s: a.index_copy(0, ti, s),
                       RNG.standard_normal((4, 3)), RNG.standard_normal((2, 3)),
                       double_backward=True)
    assert_grads_match(lambda a, v: a.index_fill(1, ei[1:], v),
                       lambda a, v: a.index_fill(1, ti[1:], v),
                       RNG.standard_normal((4, 3)), np.array(0.3), double_backward=True)


def test_meta_device():
    x = ember.zeros(4, 5, device="meta")
    idx = ember.tensor([0, 2])
    cases = [
        (x[1], (5,)), (x[:, 1:4:2], (4, 2)), (x[None, ..., 0], (1, 4)), (x[idx], (2, 5)),
        (x[idx, 1:][:, idx], (2, 2)), (x.take(idx), (2,)), (x.index_put((idx,), ember.zeros(
            5, device="meta")), (4, 5)), (x.index_copy(0, idx, ember.zeros(2, 5, device="meta")),
                                          (4, 5)),
        (x.index_fill(0, idx, 1.0), (4, 5)), (x.put(idx, ember.zeros(2, device="meta")), (4, 5)),
        (x.take_along_dim(ember.zeros(4, 1, dtype=ember.int64), 1), (4, 1)),
    ]
    for result, shape in cases:
        assert result.device.type == "meta" and tuple(result.shape) == shape
        assert result.dtype is ember.float32
    y = ember.zeros(3, device="meta")
    y[1] = 2.0
    y[ember.tensor([0])] = 1.0
    assert y._version == 2
    with pytest.raises(NotImplementedError):
        ember.zeros(3, device="meta").nonzero()
    with pytest.raises(NotImplementedError):
        torch.zeros(3, device="meta").nonzero()


# ---------------------------------------------------------------- property test


hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@st.composite
def _index_case(draw):
    ndim = draw(st.integers(1, 4))
    shape = tuple(draw(st.integers(1, 4)) for _ in range(ndim))
    parts, dim = [], 0
    used_ellipsis = False
    while dim < ndim and len(parts) < 6:
        kind = draw(st.sampled_from(["int", "slice", "none", "list", "tensor", "mask", "ellipsis",
                                     "stop"]))
        size = shape[dim]
        if kind == "stop":
            break
        if kind == "int":
            parts.append(("int", draw(st.integers(-size, size - 1))))
            dim += 1
        elif kind == "slice":
            start = draw(st.none() | st.integers(-size - 1, size + 1))
            stop = draw(st.none() | st.integers(-size - 1, size + 1))
            step = draw(st.none() | st.integers(1, 3))
            parts.append(("slice", slice(start, stop, step)))
            dim += 1
        elif kind == "none":
            parts.append(("none", None))
        elif kind in ("list", "tensor"):
            n = draw(st.integers(1, 3))
            parts.append((kind, [draw(st.integers(-size, size - 1)) for _ in range(n)]))
            dim += 1
        elif kind == "mask":
            parts.append(("mask", [draw(st.booleans()) for _ in range(size)]))
            dim += 1
        elif not used_ellipsis:
            used_ellipsis = True
            remaining = ndim - dim - sum(1 for k, _ in parts if k not in ("none",))
            parts.append(("ellipsis", None))
            dim = ndim if remaining <= 0 else dim
    return shape, parts


def _build(parts, lib):
    key = []
    for kind, payload in parts:
        if kind in ("int", "slice", "none"):
            key.append(payload)
        elif kind == "ellipsis":
            key.append(...)
        elif kind == "list":
            key.append(list(payload))
        elif kind == "tensor":
            key.append(lib.tensor(payload))
        else:
            key.append(lib.tensor(payload, dtype=lib.bool))
    return tuple(key)


@settings(max_examples=150, deadline=None)
@given(_index_case())
def test_random_index_combinations_match_torch(case):
    shape, parts = case
    base = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    x, tx = make_pair(base)
    ekey, tkey = _build(parts, ember), _build(parts, torch)
    try:
        expected = tx[tkey]
    except (IndexError, RuntimeError, ValueError) as error:
        with pytest.raises(type(error)):
            x[ekey]
        return
    actual = x[ekey]
    assert_same(actual, expected)
    is_view = expected._base is not None
    assert (actual._base is not None) == is_view
    if is_view and expected.numel():
        # strides of size-1 dims carry no layout; torch's depend on where a None stood
        assert [st for st, n in zip(actual.stride(), actual.shape) if n > 1] == \
            [st for st, n in zip(expected.stride(), expected.shape) if n > 1]
        assert actual.storage_offset() == expected.storage_offset()
        actual[...] = -1.0
        expected[...] = -1.0
        assert_same(x, tx)  # the write through the view is visible in the base
    value = np.arange(expected.numel(), dtype=np.float64).reshape(tuple(expected.shape))
    value = np.asarray(value + 100)
    x[ekey] = ember.tensor(value)
    tx[tkey] = torch.from_numpy(value)
    assert_same(x, tx)


def test_setitem_through_a_view_of_a_graph_tensor():
    def f(lib):
        def g(a):
            y = a * 1.0
            row = y[0]
            row[1] = 10.0
            y[1:, ::2] = a[0, 0] * 3
            return y * y
        return g

    assert_grads_match(f(ember), f(torch), RNG.standard_normal((3, 2)))


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_gather_gradient_first_and_second_order_and_under_vmap_against_torch(dim):
    # first order: one kernel adding into fresh zeros (node ScatterAddBackward0, as torch's);
    # double backward through it; vmap batches gather's derivative as scatter_add
    x = np.random.default_rng(4).standard_normal((5, 6, 4))
    index = np.random.default_rng(5).integers(0, x.shape[dim], (3, 6, 4))   # with repeats
    results = []
    for lib in (ember, torch):
        rng = np.random.default_rng(6)
        xs = lib.tensor(x, requires_grad=True)
        y = xs.gather(dim, lib.tensor(index))
        (g,) = lib.autograd.grad((y ** 3).sum(), xs, create_graph=True)
        (gg,) = lib.autograd.grad((g ** 2).sum(), xs)
        row_index = lib.tensor(rng.integers(0, 6, (3, 4)))
        per_row = lib.func.vmap(lib.func.grad(lambda row, i: (row.gather(0, i) ** 2).sum()),
                                in_dims=(0, None))(xs.detach(), row_index)
        results.append((g.grad_fn.name(), g.detach().numpy(), gg.numpy(), per_row.numpy()))
    (name, *mine), (torch_name, *theirs) = results
    assert name == torch_name
    for a, b in zip(mine, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
