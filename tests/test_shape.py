"""Shape and view operators against torch: values, strides, storage offsets, shared memory,
gradients (with double backward), meta shapes and errors."""

import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
from conftest import DTYPE_PAIRS, assert_grads_match, assert_same, make_pair
from ember.ops.shape import pad as ember_pad

rng = np.random.default_rng(0)


def _arange(shape, dtype=np.float64):
    return np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)


def _step2(x):
    """``x[:, ::2]`` without indexing (owned by another module): a strided view."""
    return x.unfold(1, 1, 2).squeeze(-1)


def _outputs(x):
    return list(x) if isinstance(x, (tuple, list)) else [x]


def _same_storage(a, b):
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


def _check_geometry(e_out, t_out):
    for e, t in zip(_outputs(e_out), _outputs(t_out)):
        assert_same(e, t)
        assert e.stride() == t.stride(), f"stride {e.stride()} != torch's {t.stride()}"
        assert e.storage_offset() == t.storage_offset()
        assert e.is_contiguous() == t.is_contiguous()


# ---------------------------------------------------------------- bases for the view cases

BASES = {
    "contig": lambda lib: lib(_arange((2, 3, 4))),
    "permuted": lambda lib: lib(_arange((4, 2, 3))).permute(1, 2, 0),
    "sliced": lambda lib: lib(_arange((2, 6, 4))).narrow(1, 2, 3),
}


def _pair(base):
    return BASES[base](lambda a: ember.tensor(a)), BASES[base](lambda a: torch.tensor(a))


# name -> (fn applied to both libraries, which bases, writable)
ALL = ("contig", "permuted", "sliced")
VIEW_CASES = {
    "view": (lambda x: x.view(6, 4), ("contig",), True),
    "view_infer": (lambda x: x.view(-1), ("contig",), True),
    "view_split_last": (lambda x: x.view(2, 3, 2, 2), ALL, True),
    "view_merge_last": (lambda x: x.view(2, 12), ("contig", "sliced"), True),
    "reshape": (lambda x: x.reshape(4, 6), ALL, True),
    "reshape_same": (lambda x: x.reshape(2, 3, 4), ALL, True),
    "flatten": (lambda x: x.flatten(), ALL, True),
    "flatten_1": (lambda x: x.flatten(1), ALL, True),
    "flatten_01": (lambda x: x.flatten(0, 1), ALL, True),
    "unflatten": (lambda x: x.unflatten(2, (2, 2)), ALL, True),
    "unflatten_infer": (lambda x: x.unflatten(-1, (2, -1)), ALL, True),
    "unsqueeze0": (lambda x: x.unsqueeze(0), ALL, True),
    "unsqueeze_mid": (lambda x: x.unsqueeze(2), ALL, True),
    "unsqueeze_last": (lambda x: x.unsqueeze(-1), ALL, True),
    "squeeze_tuple": (lambda x: x.unsqueeze(1).unsqueeze(0).squeeze((0, 1, 2)), ALL, True),
    "squeeze_all": (lambda x: x.narrow(0, 0, 1).unsqueeze(-1).squeeze(), ALL, True),
    "transpose": (lambda x: x.transpose(0, 2), ALL, True),
    "swapaxes": (lambda x: x.swapaxes(-1, 0), ALL, True),
    "permute": (lambda x: x.permute(2, 0, 1), ALL, True),
    "permute_neg": (lambda x: x.permute(-1, -3, -2), ALL, True),
    "movedim": (lambda x: x.movedim(0, -1), ALL, True),
    "movedim_tuple": (lambda x: x.movedim((0, 1), (2, 0)), ALL, True),
    "moveaxis": (lambda x: torch_or_ember(x).moveaxis(x, -1, 0), ALL, True),
    "mT": (lambda x: x.mT, ALL, True),
    "t": (lambda x: x.select(0, 0).t(), ALL, True),
    "T2d": (lambda x: x.select(0, 1).T, ALL, True),
    "mH": (lambda x: x.mH, ALL, True),
    "H": (lambda x: x.select(0, 0).H, ALL, True),
    "expand": (lambda x: x.narrow(1, 0, 1).expand(2, 5, 4), ALL, False),
    "expand_lead": (lambda x: x.expand(1, 2, 3, 4), ALL, True),
    "expand_new": (lambda x: x.narrow(1, 0, 1).expand(3, -1, 2, -1), ALL, False),
    "expand_as": (lambda x: x.narrow(0, 0, 1).expand_as(x), ALL, False),
    "broadcast_to": (lambda x: torch_or_ember(x).broadcast_to(x.select(0, 0).select(0, 0), (3, 4)), ALL, False),
    "narrow": (lambda x: x.narrow(1, 1, 2), ALL, True),
    "narrow_neg": (lambda x: x.narrow(-1, -3, 2), ALL, True),
    "select": (lambda x: x.select(0, 1), ALL, True),
    "select_neg": (lambda x: x.select(-1, -2), ALL, True),
    "unbind": (lambda x: x.unbind(1), ALL, True),
    "split_int": (lambda x: x.split(3, -1), ALL, True),
    "split_sizes": (lambda x: x.split([1, 3], -1), ALL, True),
    "split_with_sizes": (lambda x: x.split_with_sizes([2, 0, 1], 1), ALL, True),
    "chunk": (lambda x: x.chunk(3, -1), ALL, True),
    "tensor_split_sections": (lambda x: x.tensor_split(3, 2), ALL, True),
    "tensor_split_indices": (lambda x: x.tensor_split([1, -1, 10], 2), ALL, True),
    "hsplit": (lambda x: x.hsplit(3), ALL, True),
    "hsplit_indices": (lambda x: x.hsplit([1, 2]), ALL, True),
    "vsplit": (lambda x: x.vsplit(2), ALL, True),
    "dsplit": (lambda x: x.dsplit([3]), ALL, True),
    "diagonal": (lambda x: x.diagonal(), ALL, True),
    "diagonal_offset": (lambda x: x.diagonal(1, 0, 2), ALL, True),
    "diagonal_neg": (lambda x: x.diagonal(-1, -1, 1), ALL, True),
    "diagonal_empty": (lambda x: x.diagonal(7, 1, 2), ALL, True),
    "unfold": (lambda x: x.unfold(2, 2, 2), ALL, True),
    "unfold_overlap": (lambda x: x.unfold(-1, 3, 1), ALL, False),
    "as_strided": (lambda x: x.as_strided((2, 2), (1, 2), 1), ALL, False),
    "as_strided_default_offset": (lambda x: x.as_strided((3, 2), (2, 1)), ALL, True),
    "chain": (lambda x: x.transpose(0, 1).unsqueeze(1).narrow(-1, 1, 2).select(0, 2), ALL,
              True),
}


def torch_or_ember(x):
    return torch if isinstance(x, torch.Tensor) else ember


@pytest.mark.parametrize("name,base", [(n, b) for n in sorted(VIEW_CASES)
                                       for b in VIEW_CASES[n][1]])
def test_view_values_strides_and_shared_memory(name, base):
    fn, _, writable = VIEW_CASES[name]
    e_base, t_base = _pair(base)
    e_out, t_out = fn(e_base), fn(t_base)
    _check_geometry(e_out, t_out)
    shares = [_same_storage(t, t_base) for t in _outputs(t_out)]
    for e, share in zip(_outputs(e_out), shares):
        assert _same_storage(e, e_base) == share, "ember copies where torch views or vice versa"
        if share:
            assert e._version == e_base._version
    if not writable or not all(shares):
        return
    for i, (e, t) in enumerate(zip(_outputs(e_out), _outputs(t_out))):
        e.fill_(100.0 + i)
        t.fill_(100.0 + i)
        assert_same(e_base, t_base)
        assert e._version == e_base._version == t_base._version
    # and the other way: a write into the base is seen through the view
    e_base.mul_(2)
    t_base.mul_(2)
    for e, t in zip(_outputs(e_out), _outputs(t_out)):
        assert_same(e, t)


@pytest.mark.parametrize("name", sorted(VIEW_CASES))
def test_view_gradients(name):
    fn, bases, _ = VIEW_CASES[name]
    base = bases[-1]

    def f(x):
        return _squared(fn(_rebuild(base, x)))

    array = rng.standard_normal(_raw_shape(base))
    assert_grads_match(f, f, array, double_backward=True)


def _squared(out):
    """Each output times itself: the gradient then depends on the input, so double backward
    differentiates the op's derivative too (a linear op's gradient alone is constant)."""
    if isinstance(out, (tuple, list)):
        return tuple(o * o for o in out)
    return out * out


def _raw_shape(base):
    return {"contig": (2, 3, 4), "permuted": (4, 2, 3), "sliced": (2, 6, 4)}[base]


def _rebuild(base, x):
    if base == "permuted":
        return x.permute(1, 2, 0)
    if base == "sliced":
        return x.narrow(1, 2, 3)
    return x


@pytest.mark.parametrize("name", sorted(VIEW_CASES))
def test_view_meta(name):
    fn, bases, _ = VIEW_CASES[name]
    if "contig" not in bases:
        return
    e = ember.empty(2, 3, 4, dtype=ember.float64, device="meta")
    t = torch.empty(2, 3, 4, dtype=torch.float64, device="meta")
    for eo, to in zip(_outputs(fn(e)), _outputs(fn(t))):
        assert eo.device.type == "meta"
        assert tuple(eo.shape) == tuple(to.shape)
        assert eo.dtype.name == str(to.dtype).removeprefix("torch.")


def test_view_errors_match_torch():
    e, t = make_pair(_arange((2, 3, 4)))
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        t.transpose(0, 1).view(-1)
    with pytest.raises(RuntimeError, match="view size is not compatible with input tensor's size"):
        e.transpose(0, 1).view(-1)
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        e.narrow(1, 1, 2).view(-1)
    cases = [
        (lambda x: x.view(5, -1), RuntimeError),
        (lambda x: x.view(-1, -1), RuntimeError),
        (lambda x: x.view(0, -1), RuntimeError),
        (lambda x: x.reshape(7), RuntimeError),
        (lambda x: x.squeeze(3), IndexError),
        (lambda x: x.unsqueeze(4), IndexError),
        (lambda x: x.transpose(0, 3), IndexError),
        (lambda x: x.permute(0, 1), RuntimeError),
        (lambda x: x.permute(0, 1, 1), RuntimeError),
        (lambda x: x.t(), RuntimeError),
        (lambda x: x.select(0, 0).select(0, 0).mT, RuntimeError),
        (lambda x: x.H, RuntimeError),
        (lambda x: x.flatten(2, 0), RuntimeError),
        (lambda x: x.unflatten(1, (2, 2)), RuntimeError),
        (lambda x: x.movedim((0, 0), (1, 2)), RuntimeError),
        (lambda x: x.movedim((0, 1), (1,)), RuntimeError),
        (lambda x: x.expand(3, 3, 4), RuntimeError),
        (lambda x: x.expand(3, 4), RuntimeError),
        (lambda x: x.expand(-1, 2, 3, 4), RuntimeError),
        (lambda x: x.narrow(1, 2, 2), RuntimeError),
        (lambda x: x.narrow(1, 4, 0), IndexError),
        (lambda x: x.narrow(3, 0, 1), IndexError),
        (lambda x: x.select(1, 3), IndexError),
        (lambda x: x.select(1, -4), IndexError),
        (lambda x: x.flatten().select(0, 0).select(0, 0), IndexError),
        (lambda x: x.split([1, 1], 1), RuntimeError),
        (lambda x: x.split([-1, 4], 1), RuntimeError),
        (lambda x: x.split(0, 1), RuntimeError),
        (lambda x: x.split(-1, 1), RuntimeError),
        (lambda x: x.chunk(0), RuntimeError),
        (lambda x: x.tensor_split(0), RuntimeError),
        (lambda x: x.hsplit(2), RuntimeError),
        (lambda x: x.flatten().select(0, 0).hsplit(1), RuntimeError),
        (lambda x: x.select(0, 0).dsplit(2), RuntimeError),
        (lambda x: x.diagonal(0, 1, 1), RuntimeError),
        (lambda x: x.diagonal(0, 0, 3), IndexError),
        (lambda x: x.unfold(0, 3, 1), RuntimeError),
        (lambda x: x.unfold(0, 1, 0), RuntimeError),
        (lambda x: x.as_strided((5, 5), (5, 1)), RuntimeError),
        (lambda x: x.as_strided((2,), (-1,)), RuntimeError),
        (lambda x: x.unbind(3), IndexError),
    ]
    for fn, error in cases:
        with pytest.raises(error):
            fn(t)
        with pytest.raises(error):
            fn(e)


def test_error_messages_match_torch_text():
    e, t = make_pair(_arange((2, 3, 4)))
    for fn in (lambda x: x.view(5, -1), lambda x: x.select(1, 3), lambda x: x.narrow(1, 2, 2),
               lambda x: x.split([1, 1], 1), lambda x: x.expand(3, 3, 4),
               lambda x: x.permute(0, 1, 1), lambda x: x.unsqueeze(4),
               lambda x: x.diagonal(0, 1, 1), lambda x: x.chunk(0),
               lambda x: x.unflatten(1, (2, 2))):
        with pytest.raises(Exception) as t_err:
            fn(t)
        with pytest.raises(type(t_err.value)) as e_err:
            fn(e)
        assert str(e_err.value) == str(t_err.value)


def test_T_on_3d_warns_and_reverses():
    e, t = make_pair(_arange((2, 3, 4)))
    with pytest.warns(UserWarning):
        out = e.T
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _check_geometry(out, t.T)


def test_zero_dim_and_zero_size_views():
    for shape in ((), (0, 3), (2, 0, 3)):
        e, t = ember.zeros(shape, dtype=ember.float64), torch.zeros(shape, dtype=torch.float64)
        fns = [lambda x: x.reshape(-1), lambda x: x.unsqueeze(0), lambda x: x.flatten(),
               lambda x: x.view(-1), lambda x: x.squeeze(),
               lambda x: x.t() if x.dim() <= 2 else x.mT, lambda x: x.expand(2, *x.shape)]
        for fn in fns:
            _check_geometry(fn(e), fn(t))
    e, t = ember.zeros(0, 3), torch.zeros(0, 3)
    _check_geometry(e.split(2, 1), t.split(2, 1))
    _check_geometry(e.chunk(2, 0), t.chunk(2, 0))
    _check_geometry(e.unbind(0), t.unbind(0))
    _check_geometry(e.view(3, 0), t.view(3, 0))


def test_view_dtype():
    e, t = make_pair(_arange((2, 4), np.float32))
    for target in ("int32", "float32", "float16", "int16", "uint8", "float64", "int64",
                   "complex64"):
        et, tt = DTYPE_PAIRS[target]
        _check_geometry(e.view(et), t.view(tt))
    _check_geometry(e.narrow(1, 2, 2).view(ember.float16), t.narrow(1, 2, 2).view(torch.float16))
    with pytest.raises(RuntimeError):
        t.t().view(torch.float16)
    with pytest.raises(RuntimeError):
        e.t().view(ember.float16)
    with pytest.raises(RuntimeError):
        t.narrow(1, 0, 3).view(torch.float64)
    with pytest.raises(RuntimeError):
        e.narrow(1, 0, 3).view(ember.float64)
    v = e.view(ember.int32)
    v.fill_(0)
    assert float(e.sum()) == 0.0
    assert e._version == v._version


def test_view_shares_version_and_base():
    e = ember.zeros(3, 4)
    v = e.view(12)
    w = v.narrow(0, 2, 10).view(2, 5)
    w.add_(1)
    assert e._version == v._version == w._version == 1
    assert w._base is e
    assert float(e.sum()) == 10.0


def test_iteration_uses_unbind():
    e, t = make_pair(_arange((3, 2)))
    for a, b in zip(e, t):
        _check_geometry(a, b)


# ---------------------------------------------------------------- as_strided against storage


def test_as_strided_relative_to_storage():
    e, t = make_pair(_arange((10,)))
    ev, tv = e.narrow(0, 4, 6), t.narrow(0, 4, 6)
    _check_geometry(ev.as_strided((2, 2), (1, 3), 0), tv.as_strided((2, 2), (1, 3), 0))
    _check_geometry(ev.as_strided((3,), (2,)), tv.as_strided((3,), (2,)))
    _check_geometry(ev.as_strided((2,), (1,), 8), tv.as_strided((2,), (1,), 8))


@pytest.mark.parametrize("args", [((2, 2), (1, 2), 1), ((3, 3), (1, 1), 0), ((2, 3), (0, 2), 2),
                                  ((4,), (2,), 0)])
def test_as_strided_gradients(args):
    size, stride, offset = args
    assert_grads_match(lambda x: _squared(x.as_strided(size, stride, offset)),
                       lambda x: _squared(x.as_strided(size, stride, offset)),
                       rng.standard_normal(9), double_backward=True)


def test_as_strided_gradient_on_overlapping_input():
    def fn(lib):
        return lambda x: x.narrow(0, 0, 1).expand(3, 4).as_strided((2, 2), (1, 1), 0)
    assert_grads_match(fn(ember), fn(torch), rng.standard_normal((2, 4)))


# ---------------------------------------------------------------- cat / stack family


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cat_values_grads(dim):
    shapes = [(2, 3), (2, 3), (2, 3)]
    arrays = [rng.standard_normal(s) for s in shapes]
    assert_grads_match(lambda *xs: _squared(ember.cat(xs, dim)),
                       lambda *xs: _squared(torch.cat(xs, dim)), *arrays, double_backward=True)
    assert_grads_match(lambda *xs: _squared(ember.stack(xs, dim)),
                       lambda *xs: _squared(torch.stack(xs, dim)),
                       *arrays, double_backward=True)


def test_cat_promotion_and_empty_skip():
    a = np.arange(6).reshape(2, 3)
    b = np.ones((2, 1), dtype=np.float32)
    (ea, ta), (eb, tb) = make_pair(a), make_pair(b)
    assert_same(ember.cat([ea, eb], 1), torch.cat([ta, tb], 1))
    ez, tz = make_pair(np.zeros(0, dtype=np.float64))
    assert_same(ember.cat([ea, ez, ea]), torch.cat([ta, tz, ta]))
    assert_same(ember.concat([ez, ez]), torch.concat([tz, tz]))
    assert_same(ember.concatenate((ea.bool(), ea), dim=-1),
                torch.concatenate((ta.bool(), ta), dim=-1))
    eh, th = make_pair(np.ones((2, 3), dtype=np.float16))
    assert_same(ember.cat([eh, ea]), torch.cat([th, ta]))
    out_e, out_t = ember.empty(0), torch.empty(0)
    ember.cat([ea, eb], 1, out=out_e)
    torch.cat([ta, tb], 1, out=out_t)
    assert_same(out_e, out_t)


def test_cat_noncontiguous_and_meta():
    e, t = make_pair(_arange((3, 4)))
    assert_same(ember.cat([e.t(), _step2(e).t()], 0), torch.cat([t.t(), _step2(t).t()], 0))
    em = ember.empty(2, 3, device="meta")
    out = ember.cat([em, em], 1)
    assert out.device.type == "meta" and tuple(out.shape) == (2, 6)
    out = ember.stack([em, em], -1)
    assert tuple(out.shape) == (2, 3, 2)


def test_cat_stack_errors():
    e, t = make_pair(_arange((2, 3)))
    e1, t1 = make_pair(_arange((3, 3)))
    for lib, x, y in ((torch, t, t1), (ember, e, e1)):
        with pytest.raises(RuntimeError, match="Sizes of tensors must match"):
            lib.cat([x, y], 1)
        with pytest.raises(ValueError):
            lib.cat([])
        with pytest.raises(RuntimeError, match="zero-dimensional"):
            lib.cat([x.select(0, 0).select(0, 0)] * 2)
        with pytest.raises(IndexError):
            lib.cat([x, x], 2)
        with pytest.raises(RuntimeError):
            lib.cat([x, x.select(0, 0)])
        with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
            lib.stack([x, y])
        with pytest.raises(RuntimeError):
            lib.stack([])
        with pytest.raises(IndexError):
            lib.stack([x, x], 3)
        with pytest.raises(TypeError):
            lib.cat(x)
    with pytest.raises(RuntimeError) as t_err:
        torch.cat([t, t1], 1)
    with pytest.raises(RuntimeError) as e_err:
        ember.cat([e, e1], 1)
    assert str(e_err.value) == str(t_err.value)


@pytest.mark.parametrize("fn", ["hstack", "vstack", "row_stack", "dstack", "column_stack"])
@pytest.mark.parametrize("shapes", [[(3,), (3,)], [(2, 3), (2, 3)], [(), ()],
                                    [(2, 3, 1), (2, 3, 2)]])
def test_directional_stacks(fn, shapes):
    if fn in ("vstack", "row_stack") and shapes[0] == (2, 3, 1):
        shapes = [(1, 3, 1), (2, 3, 1)]
    if fn == "hstack" and shapes[0] == (2, 3, 1):
        shapes = [(2, 1, 1), (2, 2, 1)]
    if fn == "column_stack" and len(shapes[0]) == 3:
        shapes = [(2, 1, 1), (2, 2, 1)]
    arrays = [rng.standard_normal(s) for s in shapes]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_grads_match(lambda *xs: getattr(ember, fn)(xs), lambda *xs: getattr(torch, fn)(xs),
                           *arrays)


@pytest.mark.parametrize("fn", ["atleast_1d", "atleast_2d", "atleast_3d"])
def test_atleast(fn):
    for shape in [(), (3,), (2, 3), (2, 3, 4), (1, 2, 3, 4)]:
        e, t = make_pair(_arange(shape))
        _check_geometry(getattr(ember, fn)(e), getattr(torch, fn)(t))
    es, ts = zip(*(make_pair(_arange(s)) for s in [(), (2,)]))
    _check_geometry(getattr(ember, fn)(*es), getattr(torch, fn)(*ts))
    _check_geometry(getattr(ember, fn)(list(es)), getattr(torch, fn)(list(ts)))


# ---------------------------------------------------------------- flip / roll / rot90


@pytest.mark.parametrize("case", [
    lambda lib, x: lib.flip(x, [0]), lambda lib, x: lib.flip(x, (-1, 0)),
    lambda lib, x: x.flip(1), lambda lib, x: lib.fliplr(x), lambda lib, x: lib.flipud(x),
    lambda lib, x: lib.roll(x, 1), lambda lib, x: lib.roll(x, -2, 1),
    lambda lib, x: lib.roll(x, (1, 5), (0, -1)), lambda lib, x: x.roll(7, 0),
    lambda lib, x: lib.rot90(x), lambda lib, x: lib.rot90(x, 2), lambda lib, x: lib.rot90(x, -1),
    lambda lib, x: lib.rot90(x, 3, [1, 0]), lambda lib, x: lib.rot90(x, 4),
])
@pytest.mark.parametrize("layout", ["contig", "transposed", "strided"])
def test_flip_roll_rot90(case, layout):
    array = rng.standard_normal((3, 4))

    def prep(x):
        if layout == "transposed":
            return x.t()
        if layout == "strided":
            return _step2(x)
        return x

    e, t = make_pair(array)
    e_out, t_out = case(ember, prep(e)), case(torch, prep(t))
    _check_geometry(e_out, t_out)
    assert e_out.data_ptr() != e.data_ptr() or e_out.numel() == 0
    assert_grads_match(lambda x: _squared(case(ember, prep(x))),
                       lambda x: _squared(case(torch, prep(x))), array, double_backward=True)


@pytest.mark.parametrize("dtype", ["bool", "int64", "float16", "bfloat16", "complex64"])
def test_flip_roll_dtypes(dtype):
    ed, td = DTYPE_PAIRS[dtype]
    e = ember.tensor(_arange((2, 3)) % 3).to(ed)
    t = torch.tensor(_arange((2, 3)) % 3).to(td)
    assert_same(e.flip(0), t.flip(0))
    assert_same(e.roll(1), t.roll(1))
    assert_same(ember.rot90(e), torch.rot90(t))
    assert_same(ember.tril(e), torch.tril(t))


def test_flip_roll_rot90_errors_and_zero_dim():
    e, t = make_pair(_arange((2, 3)))
    for lib, x in ((torch, t), (ember, e)):
        with pytest.raises(RuntimeError):
            lib.flip(x, (0, 0))
        with pytest.raises(IndexError):
            lib.flip(x, (2,))
        with pytest.raises(RuntimeError):
            lib.fliplr(x.select(0, 0))
        with pytest.raises(RuntimeError):
            lib.flipud(x.select(0, 0).select(0, 0))
        with pytest.raises(RuntimeError):
            lib.roll(x, (1, 2))
        with pytest.raises(RuntimeError):
            lib.roll(x, (1, 2), 0)
        with pytest.raises(RuntimeError):
            lib.rot90(x, 1, [0])
        with pytest.raises(RuntimeError):
            lib.rot90(x, 1, [0, 0])
        with pytest.raises(RuntimeError):
            lib.rot90(x.select(0, 0))
    e0, t0 = make_pair(np.array(2.0))
    assert_same(e0.flip(()), t0.flip(()))
    assert_same(e0.roll(1), t0.roll(1))
    em = ember.empty(2, 3, device="meta")
    assert tuple(em.flip(0).shape) == (2, 3) and tuple(ember.rot90(em).shape) == (3, 2)


# ---------------------------------------------------------------- repeat / tile / interleave


@pytest.mark.parametrize("case", [
    lambda lib, x: x.repeat(2, 1), lambda lib, x: x.repeat(1, 3, 2),
    lambda lib, x: x.repeat((2, 0)), lambda lib, x: lib.tile(x, (2,)),
    lambda lib, x: lib.tile(x, (2, 1, 2)), lambda lib, x: x.tile((3, 2)),
    lambda lib, x: lib.repeat_interleave(x, 2), lambda lib, x: x.repeat_interleave(3, dim=0),
    lambda lib, x: lib.repeat_interleave(x, 2, -1),
    lambda lib, x: lib.repeat_interleave(x, lib.tensor([1, 0, 3]), dim=1),
    lambda lib, x: lib.repeat_interleave(x, lib.tensor([2]), dim=0),
    lambda lib, x: lib.repeat_interleave(x, lib.tensor([2, 1]), 0, output_size=3),
])
def test_repeat_family(case):
    array = rng.standard_normal((2, 3))
    e, t = make_pair(array)
    assert_same(case(ember, e), case(torch, t))
    assert_same(case(ember, e.t().t()), case(torch, t.t().t()))
    assert_grads_match(lambda x: _squared(case(ember, x)), lambda x: _squared(case(torch, x)),
                       array, double_backward=True)
    em, tm = ember.empty(2, 3, device="meta"), torch.empty(2, 3, device="meta")
    if "lib.tensor" not in case.__code__.co_names and "tensor" not in case.__code__.co_names:
        assert tuple(case(ember, em).shape) == tuple(case(torch, tm).shape)


def test_repeat_interleave_indices_and_errors():
    for counts in ([2, 0, 1], [0], [3]):
        e, t = make_pair(np.array(counts))
        assert_same(ember.repeat_interleave(e), torch.repeat_interleave(t))
    e, t = make_pair(_arange((2, 3)))
    assert_same(e.repeat_interleave(2), t.repeat_interleave(2))
    for lib, x in ((torch, t), (ember, e)):
        with pytest.raises(RuntimeError):
            x.repeat(2)
        with pytest.raises(RuntimeError):
            lib.repeat_interleave(x, -1)
        with pytest.raises(RuntimeError):
            lib.repeat_interleave(x, lib.tensor([1, 2]), dim=1)
        with pytest.raises(RuntimeError):
            lib.repeat_interleave(x, lib.tensor([[1, 2]]), dim=1)


# ---------------------------------------------------------------- tril / triu


@pytest.mark.parametrize("diagonal", [0, 1, -1, 5, -5])
@pytest.mark.parametrize("shape", [(3, 4), (2, 4, 3), (0, 3)])
def test_tril_triu(diagonal, shape):
    array = rng.standard_normal(shape)
    for name in ("tril", "triu"):
        assert_grads_match(lambda x: _squared(getattr(ember, name)(x, diagonal)),
                           lambda x: _squared(getattr(torch, name)(x, diagonal)), array,
                           double_backward=True)
        e, t = make_pair(array)
        assert_same(getattr(e.mT, name)(diagonal=diagonal),
                    getattr(t.mT, name)(diagonal=diagonal))
    e, t = make_pair(np.arange(3))
    with pytest.raises(RuntimeError):
        torch.tril(t)
    with pytest.raises(RuntimeError):
        ember.tril(e)
    with pytest.raises(RuntimeError):
        ember.triu(e)
    em = ember.empty(*shape, device="meta")
    assert tuple(ember.triu(em).shape) == shape


# ---------------------------------------------------------------- meshgrid / broadcast


@pytest.mark.parametrize("indexing", ["ij", "xy"])
def test_meshgrid(indexing):
    arrays = [rng.standard_normal(n) for n in (2, 3, 4)]
    for count in (1, 2, 3):
        sub = arrays[:count]
        pairs = [make_pair(a) for a in sub]
        e_out = ember.meshgrid(*[e for e, _ in pairs], indexing=indexing)
        t_out = torch.meshgrid(*[t for _, t in pairs], indexing=indexing)
        _check_geometry(e_out, t_out)
        assert_grads_match(lambda *xs: _squared(ember.meshgrid(xs, indexing=indexing)),
                           lambda *xs: _squared(torch.meshgrid(xs, indexing=indexing)), *sub,
                           double_backward=True)
    with pytest.raises(RuntimeError):
        ember.meshgrid(ember.zeros(2, 2), indexing=indexing)


def test_meshgrid_default_warns_and_errors():
    e = ember.arange(3)
    with pytest.warns(UserWarning):
        out = ember.meshgrid(e, e)
    assert tuple(out[0].shape) == (3, 3)
    with pytest.raises(RuntimeError):
        torch.meshgrid(torch.arange(3), indexing="yx")
    with pytest.raises(RuntimeError):
        ember.meshgrid(e, indexing="yx")


def test_broadcast_tensors_and_shapes():
    arrays = [rng.standard_normal(s) for s in [(2, 1), (3,), ()]]
    assert_grads_match(lambda *xs: _squared(ember.broadcast_tensors(*xs)),
                       lambda *xs: _squared(torch.broadcast_tensors(*xs)), *arrays,
                       double_backward=True)
    pairs = [make_pair(a) for a in arrays]
    _check_geometry(ember.broadcast_tensors(*[e for e, _ in pairs]),
                    torch.broadcast_tensors(*[t for _, t in pairs]))
    assert tuple(ember.broadcast_shapes((2, 1), (3,), ())) == tuple(
        torch.broadcast_shapes((2, 1), (3,), ()))
    with pytest.raises(RuntimeError):
        torch.broadcast_tensors(torch.zeros(2), torch.zeros(3))
    with pytest.raises(RuntimeError):
        ember.broadcast_tensors(ember.zeros(2), ember.zeros(3))
    with pytest.raises(RuntimeError):
        ember.broadcast_to(ember.zeros(2), (3,))


# ---------------------------------------------------------------- pad


PAD_CASES = [
    ("constant", (1, 2), (2, 3)), ("constant", (1, 1, 2, 0), (2, 3)),
    ("constant", (-1, 2), (2, 3)), ("constant", (0, 0, -1, -1, 1, 1), (3, 2, 2)),
    ("constant", (2, 1, 0, 1, 1, 0, 1, 1), (1, 2, 2, 2)), ("constant", (), (2, 3)),
    ("reflect", (2, 1), (2, 4)), ("reflect", (2, 1), (2, 3, 4)),
    ("reflect", (1, 2, 2, 0), (2, 3, 4)), ("reflect", (1, 1, 2, 0, 1, 1), (1, 2, 3, 3, 3)),
    ("replicate", (3, 1), (2, 3)), ("replicate", (3, 0, 1, 4), (1, 2, 3, 2)),
    ("replicate", (1, 2, 0, 1, 2, 0), (2, 3, 2, 2)),
    ("circular", (2, 1), (1, 2, 3)), ("circular", (1, 3, 2, 0), (1, 2, 3, 4)),
    ("circular", (-1, 2), (2, 3)), ("circular", (1, 1, 1, 0, 0, 2), (1, 2, 2, 3, 2)),
]


@pytest.mark.parametrize("mode,pads,shape", PAD_CASES)
def test_pad(mode, pads, shape):
    array = rng.standard_normal(shape)
    assert_grads_match(lambda x: _squared(ember_pad(x, pads, mode=mode)),
                       lambda x: _squared(TF.pad(x, pads, mode=mode)), array,
                       double_backward=True)
    e, t = make_pair(array)
    e, t = e.mT.contiguous().mT, t.mT.contiguous().mT  # same shape, transposed strides
    assert_same(ember_pad(e, pads, mode=mode), TF.pad(t, pads, mode=mode))
    em = ember.empty(*shape, device="meta")
    tm = torch.empty(*shape, device="meta")
    assert tuple(ember_pad(em, pads, mode=mode).shape) == tuple(TF.pad(tm, pads, mode=mode).shape)


def test_pad_constant_value_and_dtypes():
    for dtype in ("int64", "bool", "float16", "bfloat16", "complex64"):
        ed, td = DTYPE_PAIRS[dtype]
        e = ember.tensor(_arange((2, 2)) % 2).to(ed)
        t = torch.tensor(_arange((2, 2)) % 2).to(td)
        value = True if dtype == "bool" else 3
        assert_same(ember_pad(e, (1, 1), value=value), TF.pad(t, (1, 1), value=value))
    e, t = make_pair(_arange((2, 2)))
    assert_same(ember_pad(e, [1, 0, 0, 2], "constant", 1.5), TF.pad(t, [1, 0, 0, 2], "constant",
                                                                    1.5))


def test_pad_errors():
    e, t = make_pair(_arange((2, 3)))
    cases = [
        lambda pad, x: pad(x, (1,)),
        lambda pad, x: pad(x, (1, 1, 1, 1, 1, 1)),
        lambda pad, x: pad(x, (-2, -2)),
        lambda pad, x: pad(x, (3, 0), mode="reflect"),
        lambda pad, x: pad(x, (4, 0), mode="circular"),
        lambda pad, x: pad(x.select(0, 0), (1, 1), mode="reflect"),
        lambda pad, x: pad(x, (1, 1), mode="reflect", value=2.0),
        lambda pad, x: pad(x, (1, 1), mode="wrap"),
    ]
    for case in cases:
        with pytest.raises(Exception) as t_err:
            case(TF.pad, t)
        with pytest.raises(type(t_err.value)):
            case(ember_pad, e)
    assert "pad" not in ember.ops.shape.__all__
    assert not hasattr(ember, "pad")


# ================================================================ in-place view methods

_INPLACE_VIEWS = [
    ("t_", (), (2, 3)),
    ("t_", (), (4,)),
    ("t_", (), ()),
    ("transpose_", (0, -1), (2, 3, 4)),
    ("transpose_", (1, 1), (2, 3)),
    ("swapdims_", (-1, 0), (2, 3, 4)),
    ("swapaxes_", (2, 1), (2, 3, 4)),
    ("squeeze_", (), (1, 3, 1, 2)),
    ("squeeze_", (-2,), (1, 3, 1, 2)),
    ("squeeze_", (1,), (1, 3, 1, 2)),
    ("squeeze_", ((0, 2),), (1, 3, 1, 2)),
    ("unsqueeze_", (0,), (2, 3)),
    ("unsqueeze_", (-1,), (2, 3)),
    ("unsqueeze_", (1,), (0, 3)),
    ("as_strided_", ((3, 2), (1, 3)), (2, 3)),
    ("as_strided_", ((2, 2), (1, 2), 1), (2, 3)),
]


@pytest.mark.parametrize("name,args,shape", _INPLACE_VIEWS)
@pytest.mark.parametrize("source", ["contiguous", "transposed", "sliced"])
def test_inplace_view_geometry(name, args, shape, source):
    base = _arange((5,) + shape if source == "sliced" else shape)
    e, t = make_pair(base)
    if source == "sliced":
        e, t = e[1], t[1]
    elif source == "transposed" and len(shape) >= 2:
        e, t = e.transpose(0, 1).contiguous().transpose(0, 1), t.transpose(0, 1).contiguous() \
            .transpose(0, 1)
    if name == "as_strided_" and source != "contiguous":
        return  # as_strided's geometry is in absolute storage terms: covered for contiguous
    ev, tv = e._version, t._version
    e_data, t_data = e.data_ptr(), t.data_ptr()
    assert getattr(e, name)(*args) is e
    assert getattr(t, name)(*args) is t
    if t.numel():
        _check_geometry(e, t)
    else:  # torch.from_numpy keeps NumPy's zero strides on empty arrays: compare values only
        assert_same(e, t)
    assert e._version - ev == t._version - tv == 1
    assert e.data_ptr() - e_data == t.data_ptr() - t_data
    assert e._is_view() == t._is_view()


@pytest.mark.parametrize("name,args,shape", _INPLACE_VIEWS)
def test_inplace_view_shares_memory_and_version(name, args, shape):
    e, t = make_pair(_arange(shape))
    e_alias, t_alias = e.view(shape), t.view(shape)
    getattr(e, name)(*args)
    getattr(t, name)(*args)
    assert e_alias._version == t_alias._version == 1
    if e.numel():
        t.as_strided((1,), (1,), t.storage_offset())[0] = 100.0
        e.as_strided((1,), (1,), e.storage_offset())[0] = 100.0
        assert_same(e_alias, t_alias)


@pytest.mark.parametrize("name,args,shape", _INPLACE_VIEWS)
def test_inplace_view_grads(name, args, shape):
    def run(lib_fn):
        def fn(x):
            y = x * 2
            lib_fn(y)
            return y * y
        return fn

    def apply(y):
        getattr(y, name)(*args)

    assert_grads_match(run(apply), run(apply), rng.standard_normal(shape), double_backward=True)


@pytest.mark.parametrize("name,args,shape", _INPLACE_VIEWS[:4] + _INPLACE_VIEWS[7:12])
def test_inplace_view_grad_fn_and_chain(name, args, shape):
    e, t = make_pair(rng.standard_normal(shape), requires_grad=True)
    ey, ty = e * 2, t * 2
    getattr(ey, name)(*args)
    getattr(ty, name)(*args)
    assert ey.grad_fn is not None and not ey.is_leaf and ey.requires_grad
    assert ty.grad_fn is not None
    ey.unsqueeze_(0).t_() if ey.dim() <= 1 else ey.transpose_(0, -1)
    ty.unsqueeze_(0).t_() if ty.dim() <= 1 else ty.transpose_(0, -1)
    _check_geometry(ey.detach(), ty.detach())
    w = rng.standard_normal(tuple(ty.shape))
    (ey * ember.tensor(w)).sum().backward()
    (ty * torch.from_numpy(w)).sum().backward()
    assert_same(e.grad, t.grad)


@pytest.mark.parametrize("name,args,shape", _INPLACE_VIEWS[:4] + _INPLACE_VIEWS[11:13])
def test_inplace_view_bumps_version_of_saved_output(name, args, shape):
    # exp saves its output: changing its geometry in place invalidates it, in both libraries
    e, t = make_pair(rng.standard_normal(shape), requires_grad=True)
    ey, ty = e.exp(), t.exp()
    getattr(ey, name)(*args)
    getattr(ty, name)(*args)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        ty.sum().backward()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        ey.sum().backward()


@pytest.mark.parametrize("name,args,shape", _INPLACE_VIEWS)
def test_inplace_view_leaf_requiring_grad(name, args, shape):
    e, t = make_pair(rng.standard_normal(shape), requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad") as te:
        getattr(t, name)(*args)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad") as ee:
        getattr(e, name)(*args)
    assert str(ee.value) == str(te.value)
    assert e.shape == t.shape  # unchanged by the refused call
    with torch.no_grad():
        getattr(t, name)(*args)
    with ember.no_grad():
        getattr(e, name)(*args)
    assert_same(e, t)
    if t.numel():
        _check_geometry(e.detach(), t.detach())
    assert e.is_leaf and e.requires_grad


def test_inplace_view_of_leaf_view_refused():
    e, t = make_pair(rng.standard_normal((2, 3)), requires_grad=True)
    with pytest.raises(RuntimeError, match="view of a leaf Variable") as te:
        t[0:1].t_()
    with pytest.raises(RuntimeError, match="view of a leaf Variable") as ee:
        e[0:1].t_()
    assert str(ee.value) == str(te.value)


def test_inplace_view_through_a_view_writes_base():
    e, t = make_pair(_arange((3, 4)))
    ev, tv = e[1:], t[1:]
    ev.t_()
    tv.t_()
    _check_geometry(ev, tv)
    assert ev._base is e and tv._base is t
    assert e._version == t._version == 1
    ev[0] = -1.0
    tv[0] = -1.0
    assert_same(e, t)


def test_inplace_view_grad_through_view_of_nonleaf():
    e, t = make_pair(rng.standard_normal((3, 4)), requires_grad=True)
    ey, ty = e * 3, t * 3
    ev, tv = ey[1:], ty[1:]
    ev.t_()
    tv.t_()
    ev.mul_(ember.arange(4.0).unsqueeze(1))
    tv.mul_(torch.arange(4.0, dtype=torch.float64).unsqueeze(1))
    assert_same(ey, ty)
    w = rng.standard_normal((3, 4))
    (ey * ember.tensor(w)).sum().backward()
    (ty * torch.from_numpy(w)).sum().backward()
    assert_same(e.grad, t.grad)


@pytest.mark.parametrize("name,args,shape,exc", [
    ("t_", (), (2, 3, 4), RuntimeError),
    ("transpose_", (0, 3), (2, 3), IndexError),
    ("squeeze_", (5,), (1, 3), IndexError),
    ("unsqueeze_", (4,), (2, 3), IndexError),
    ("as_strided_", ((3, 3), (1, 1, 1)), (2, 3), RuntimeError),
    ("as_strided_", ((10,), (1,)), (2, 3), RuntimeError),
])
def test_inplace_view_errors(name, args, shape, exc):
    e, t = make_pair(_arange(shape))
    with pytest.raises(exc):
        getattr(t, name)(*args)
    with pytest.raises(exc):
        getattr(e, name)(*args)
    _check_geometry(e, t)
    assert e._version == t._version


@pytest.mark.parametrize("name,args,shape", _INPLACE_VIEWS)
def test_inplace_view_meta(name, args, shape):
    e = ember.empty(shape, device="meta")
    t = torch.empty(shape, device="meta")
    getattr(e, name)(*args)
    getattr(t, name)(*args)
    assert tuple(e.shape) == tuple(t.shape) and e.dtype == ember.float32


def test_inplace_view_of_expanded_allowed():
    e, t = make_pair(_arange((3,)))
    ex, tx = e.expand(2, 3), t.expand(2, 3)
    ex.t_()
    tx.t_()
    _check_geometry(ex, tx)


# ================================================================ narrow_copy


@pytest.mark.parametrize("shape,dim,start,length", [
    ((4, 5), 1, 1, 3), ((4, 5), -2, -3, 2), ((4, 5), 0, 4, 0), ((3, 0), 0, 1, 2),
    ((6,), 0, 0, 6),
])
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_])
def test_narrow_copy(shape, dim, start, length, dtype):
    e, t = make_pair(_arange(shape).astype(dtype))
    for eo, to in ((ember.narrow_copy(e, dim, start, length), torch.narrow_copy(t, dim, start,
                                                                               length)),
                   (e.narrow_copy(dim, start, length), t.narrow_copy(dim, start, length))):
        _check_geometry(eo, to)
        assert not _same_storage(eo, e) or eo.numel() == 0
    et, tt = e.t() if e.dim() == 2 else e, t.t() if t.dim() == 2 else t
    d = 0 if et.dim() == 1 else 1 - (dim % 2)
    _check_geometry(ember.narrow_copy(et, d, 0, 1), torch.narrow_copy(tt, d, 0, 1))


def test_narrow_copy_out_grad_errors_meta():
    e, t = make_pair(_arange((4, 5)))
    eo, to = ember.empty(0), torch.empty(0, dtype=torch.float64)
    eo = ember.empty(0, dtype=ember.float64)
    assert ember.narrow_copy(e, 1, 2, 2, out=eo) is eo
    torch.narrow_copy(t, 1, 2, 2, out=to)
    assert_same(eo, to)
    assert_grads_match(lambda x: ember.narrow_copy(x, 1, 1, 3),
                       lambda x: torch.narrow_copy(x, 1, 1, 3), rng.standard_normal((3, 5)),
                       double_backward=True)
    for args in ((2, 0, 1), (0, 5, 1), (0, 2, 3), (0, 0, -1)):
        with pytest.raises(Exception) as te:
            torch.narrow_copy(t, *args)
        with pytest.raises(te.type):
            ember.narrow_copy(e, *args)
    m = ember.narrow_copy(ember.empty(4, 5, device="meta"), 1, 1, 2)
    assert m.shape == (4, 2) and m.device.type == "meta"


# ================================================================ writes into overlapping memory

_OVERLAP = "more than one element of the written-to tensor refers to a single memory location"

_WRITES = {
    "add_": lambda x, lib: x.add_(1),
    "mul_": lambda x, lib: x.mul_(2),
    "exp_": lambda x, lib: x.exp_(),
    "clamp_": lambda x, lib: x.clamp_(0, 1),
    "add_tensor": lambda x, lib: x.add_(lib.ones(x.shape, dtype=x.dtype)),
    "copy_": lambda x, lib: x.copy_(lib.ones(x.shape, dtype=x.dtype)),
    "setitem_all": lambda x, lib: x.__setitem__(..., 1.0),
    "setitem_tensor": lambda x, lib: x.__setitem__(..., lib.ones(x.shape, dtype=x.dtype)),
    "out": lambda x, lib: lib.add(lib.ones(x.shape, dtype=x.dtype), 1, out=x),
    "out_mul": lambda x, lib: lib.mul(lib.ones(x.shape, dtype=x.dtype), 3, out=x),
    "iadd": lambda x, lib: x.__iadd__(1),
}


def _expanded(lib, kind):
    if kind == "expand":
        return lib.zeros(3, dtype=lib.float64).expand(2, 3)
    if kind == "expand_inner":
        return lib.zeros(2, 1, dtype=lib.float64).expand(2, 4)
    if kind == "broadcast_to":
        return lib.broadcast_to(lib.zeros(1, dtype=lib.float64), (5,))
    return lib.zeros(2, dtype=lib.float64).as_strided((3, 2), (0, 1))  # zero stride


@pytest.mark.parametrize("write", sorted(_WRITES))
@pytest.mark.parametrize("kind", ["expand", "expand_inner", "broadcast_to", "as_strided"])
def test_write_into_overlapping_tensor(write, kind):
    e, t = _expanded(ember, kind), _expanded(torch, kind)
    with pytest.raises(RuntimeError, match=_OVERLAP) as te:
        _WRITES[write](t, torch)
    with pytest.raises(RuntimeError, match=_OVERLAP) as ee:
        _WRITES[write](e, ember)
    assert str(ee.value) == str(te.value)
    assert_same(e, t)


def test_write_into_overlapping_tensor_with_grad():
    e, t = make_pair(rng.standard_normal(3), requires_grad=True)
    ex, tx = (e * 1).expand(2, 3), (t * 1).expand(2, 3)
    for fn in (lambda x: x.mul_(2), lambda x: x.__setitem__(..., 0.0)):
        with pytest.raises(RuntimeError, match=_OVERLAP):
            fn(tx)
        with pytest.raises(RuntimeError, match=_OVERLAP):
            fn(ex)


def test_write_into_expanded_without_overlap_allowed():
    # a size-1 expand (zero stride over size 1) and slices of the source are writable
    e, t = make_pair(np.zeros((1, 3)))
    e.expand(1, 3).add_(1)
    t.expand(1, 3).add_(1)
    assert_same(e, t)
    e2, t2 = make_pair(np.zeros(3))
    src_e, src_t = e2.expand(2, 3), t2.expand(2, 3)
    e2.add_(1)  # the source itself stays writable; the expanded view sees it
    t2.add_(1)
    assert_same(src_e, src_t)


def test_write_into_overlapping_unfold_and_as_strided():
    # torch cannot prove these overlap (no zero stride) and writes through them; the values
    # depend on the order of the writes, so only "no error" is compared
    ember.arange(6.0).unfold(0, 3, 1).add_(1)
    ember.arange(6.0).as_strided((3, 3), (1, 1)).copy_(ember.ones(3, 3))
    # windows that do not overlap stay writable, as in torch
    e, t = make_pair(_arange((6,)))
    e.unfold(0, 2, 2).mul_(3)
    t.unfold(0, 2, 2).mul_(3)
    assert_same(e, t)


def test_write_into_expanded_meta_ok():
    e = ember.zeros(3, device="meta").expand(2, 3)
    t = torch.zeros(3, device="meta").expand(2, 3)
    t.add_(1)  # torch does not check meta tensors either
    e.add_(1)
    assert e.shape == t.shape


@pytest.mark.parametrize("write", [
    lambda x, lib: x[0].add_(1),
    lambda x, lib: x[1].mul_(3),
    lambda x, lib: x.__setitem__(0, 5.0),
    lambda x, lib: x.__setitem__((1, slice(0, 2)), lib.tensor([7.0, 8.0], dtype=lib.float64)),
    lambda x, lib: x[0].copy_(lib.arange(3, dtype=lib.float64)),
    lambda x, lib: x[0].exp_(),
    lambda x, lib: lib.add(lib.ones(3, dtype=lib.float64), 1, out=x[1]),
])
def test_write_into_non_overlapping_part_of_expanded(write):
    # a row of an expanded tensor does not overlap itself: torch writes it (into the source)
    es, ts = make_pair(_arange((3,)))
    e, t = es.expand(2, 3), ts.expand(2, 3)
    write(t, torch)
    write(e, ember)
    assert_same(es, ts)
    assert_same(e, t)
    assert es._version == ts._version


def test_write_into_column_of_expanded_refused():
    e, t = _expanded(ember, "expand"), _expanded(torch, "expand")
    with pytest.raises(RuntimeError, match=_OVERLAP):
        t[:, 0] = 2.0
    with pytest.raises(RuntimeError, match=_OVERLAP):
        e[:, 0] = 2.0
    u, tu = ember.arange(6.0).unfold(0, 3, 1), torch.arange(6.0).unfold(0, 3, 1)
    u[1].add_(1)  # one window alone does not overlap
    tu[1].add_(1)
    assert_same(u, tu)
