"""Autograd of views across in-place changes, against torch.

A view made before an in-place change of its base (or of another view of it) gets a fresh
``AsStridedBackward0`` node over the base's new history when its ``grad_fn`` is next read;
views made under no_grad or by ops with several view outputs refuse such changes with torch's
errors; in-place writes through ``.real`` / ``.imag`` of complex tensors are differentiable.

Each scenario below is written once against the torch API and run with ``fw`` = ember and
``fw`` = torch on the same inputs: values, gradients (float64, with double backward), node
names and version counters are compared.
"""

import numpy as np
import pytest
import torch

import ember
from conftest import assert_grads_match, assert_same, make_pair


def _rand(*shape, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    data = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        data = data + 1j * rng.standard_normal(shape)
    return data.astype(dtype)


def _name(t):
    return None if t.grad_fn is None else t.grad_fn.name()


def _both(scenario, *arrays):
    """Run ``scenario(fw, *tensors)`` with ember and torch on leaves that require grad (float
    inputs); returns both results."""
    pairs = [make_pair(a, requires_grad=a.dtype.kind in "fc") for a in arrays]
    return scenario(ember, *(e for e, _ in pairs)), scenario(torch, *(t for _, t in pairs))


def _check_grads(scenario, *arrays, double_backward=True):
    assert_grads_match(lambda *xs: scenario(ember, *xs), lambda *xs: scenario(torch, *xs),
                       *arrays, double_backward=double_backward)


def _check_complex_grads(scenario, *arrays):
    """Gradients of the real ``scenario(fw, *inputs)`` (complex inputs allowed), and the
    gradients of the squared norm of those (double backward), against torch."""
    def grads(fw, *xs):
        inputs = [x for x in xs if x.requires_grad]
        first = fw.autograd.grad(scenario(fw, *xs), inputs, create_graph=True,
                                 allow_unused=True)
        total = sum((g.abs() ** 2).sum() for g in first if g is not None)
        return first, fw.autograd.grad(total, inputs, allow_unused=True)
    got, want = _both(grads, *arrays)
    assert_same(got, want)


def _raises_like(scenario, *arrays, match_message=True):
    """ember raises the exception torch raises for ``scenario`` (same type, same message)."""
    e_in, t_in = zip(*(make_pair(a, requires_grad=a.dtype.kind in "fc") for a in arrays))
    with pytest.raises(Exception) as expected:
        scenario(torch, *t_in)
    with pytest.raises(type(expected.value)) as actual:
        scenario(ember, *e_in)
    if match_message:
        assert str(actual.value) == str(expected.value)
    return actual.value, expected.value


# ---------------------------------------------------------------- a view sees its base change


def _base_mul(fw, x):
    a = x.clone()
    v = a[:2]
    a.mul_(2)
    return v * 1


def test_view_before_inplace_of_base_issue_example():
    (e_x, t_x) = make_pair(_rand(4), requires_grad=True)
    for x in (e_x, t_x):
        a = x.clone()
        v = a[:2]
        a.mul_(2)
        v.sum().backward()
    assert_same(e_x.grad, t_x.grad)
    assert e_x.grad.tolist() == [2.0, 2.0, 0.0, 0.0]


def test_view_before_inplace_of_base_grads():
    _check_grads(_base_mul, _rand(4))


def test_regenerated_grad_fn_names_and_edges():
    def scenario(fw, x):
        a = x.clone()
        v = a[1:3]
        before = (_name(v), v._version)
        a.mul_(2)
        after = (_name(v), v._version)
        next_fn = v.grad_fn.next_functions[0][0].name()
        return before, after, next_fn, v.requires_grad, v.is_leaf
    got, want = _both(scenario, _rand(4))
    assert got == want
    assert got[1][0] == "AsStridedBackward0"


def test_regenerated_node_is_kept_until_the_next_change():
    e_x, _ = make_pair(_rand(4), requires_grad=True)
    a = e_x.clone()
    v = a[:2]
    a.add_(1)
    first = v.grad_fn
    assert v.grad_fn is first  # no new node while the version stays
    a.add_(1)
    assert v.grad_fn is not first


@pytest.mark.parametrize("key", ["row", "col", "diag", "transpose", "flat_step", "negative"])
def test_views_of_many_geometries(key):
    views = {"row": lambda a: a[1], "col": lambda a: a[:, -1], "diag": lambda a: a.diagonal(),
             "transpose": lambda a: a.t()[1:], "flat_step": lambda a: a.view(-1)[::4],
             "negative": lambda a: a.narrow(-1, 1, 2).select(-2, -1)}

    def scenario(fw, x, y):
        a = x.clone()
        v = views[key](a)
        a.mul_(y)
        return v * v
    _check_grads(scenario, _rand(3, 3), _rand(3, 3, seed=1))


def test_view_used_as_backward_root():
    def scenario(fw, x):
        a = x.clone()
        v = a.view(2, 2)
        a.sin_()
        v.backward(fw.ones(2, 2, dtype=fw.float64) * 3)
        return x.grad
    got, want = _both(scenario, _rand(4))
    assert_same(got, want)


def test_read_under_no_grad_regenerates_too():
    def scenario(fw, x):
        a = x.clone()
        v = a[:2]
        a.mul_(2)
        with fw.no_grad():
            name = _name(v)
        return name, (v * 3).sum()
    got, want = _both(scenario, _rand(4))
    assert got[0] == want[0] == "AsStridedBackward0"
    assert_same(got[1], want[1])


def test_base_changed_under_no_grad():
    def scenario(fw, x):
        a = x.clone()
        v = a[:2]
        with fw.no_grad():
            a.mul_(2)
        return v * 3
    _check_grads(scenario, _rand(4))
    got, want = _both(lambda fw, x: _name(scenario(fw, x)), _rand(4))
    assert got == want


# ---------------------------------------------------------------- chains and several views


def test_views_of_views():
    def scenario(fw, x, y):
        a = x.clone()
        v = a[1:]            # 3x4
        w = v.t()            # 4x3
        u = w[2]             # a view of a view of a view
        a.add_(y)            # all three are stale now
        return u * u, w.sum(0), v.exp()
    _check_grads(scenario, _rand(4, 4), _rand(4, 4, seed=1))


def test_inplace_through_one_view_updates_the_others():
    def scenario(fw, x, y):
        a = x.clone()
        v1 = a[0]
        v2 = a[:, 1]
        v3 = a.view(-1)[::2]
        v1.mul_(y[0])        # CopySlices on a; v2, v3 stale
        v3.sub_(y.view(-1)[:8])
        return v1 * v2.sum(), v2.exp(), v3 ** 2, a.sum()
    _check_grads(scenario, _rand(4, 4), _rand(4, 4, seed=1))


def test_inplace_on_intermediate_view():
    def scenario(fw, x, y):
        a = x.clone()
        v = a[1:]
        w = v[:, :2]
        v.mul_(y[1:])        # w's base (a) changed through v
        w.add_(1.5)          # then w itself
        return a, v, w
    _check_grads(scenario, _rand(4, 3), _rand(4, 3, seed=1))


def test_inplace_on_base_then_on_view():
    def scenario(fw, x, y):
        a = x.clone()
        v = a[::2]
        a.mul_(y)
        v.div_(y[1::2] + 3)
        a.add_(1)
        return a * v.sum(), v
    _check_grads(scenario, _rand(6), _rand(6, seed=1))


def test_setitem_through_a_stale_view():
    def scenario(fw, x, y):
        a = x.clone()
        r = a[1]
        a.mul_(3)
        r[1:3] = y[:2] * 2
        return a, r
    _check_grads(scenario, _rand(3, 4), _rand(4, seed=1))


def test_version_counters_match():
    def scenario(fw, x):
        a = x.clone()
        v = a[:2]
        w = v[1:]
        out = [(a._version, v._version, w._version)]
        a.mul_(2)
        out.append((a._version, v._version, w._version))
        w.add_(1)
        out.append((a._version, v._version, w._version))
        v[0] = 3
        out.append((a._version, v._version, w._version))
        out.append((_name(a), _name(v), _name(w)))
        return out
    got, want = _both(scenario, _rand(4))
    assert got == want


def test_view_made_from_stale_view():
    def scenario(fw, x):
        a = x.clone()
        v = a[1:]
        a.mul_(3)
        w = v[:2]            # recorded on v's regenerated node
        return w * w, _name(w)
    got, want = _both(scenario, _rand(4))
    assert got[1] == want[1]
    _check_grads(lambda fw, x: scenario(fw, x)[0], _rand(4))


def test_inplace_view_method_on_a_view():
    def scenario(fw, x, y):
        a = x.clone()
        v = a[1:]
        v.t_()
        a.mul_(y)
        return v * 2
    _check_grads(scenario, _rand(3, 3), _rand(3, 3, seed=1))


# ---------------------------------------------------------------- leaves


def test_view_of_leaf_inplace_raises():
    def scenario(fw, x):
        x[:2].mul_(2)
    _raises_like(scenario, _rand(4))


def test_leaf_inplace_raises():
    def scenario(fw, x):
        x.mul_(2)
    _raises_like(scenario, _rand(4))


def test_view_of_leaf_after_no_grad_change():
    def scenario(fw, x):
        v = x[1:]
        with fw.no_grad():
            x.mul_(2)
        return v * v
    _check_grads(scenario, _rand(4), double_backward=False)
    got, want = _both(lambda fw, x: (_name(scenario(fw, x)), ), _rand(4))
    assert got == want


def test_view_of_plain_base_becomes_differentiable():
    def scenario(fw, x):
        a = fw.zeros(4, dtype=fw.float64)
        v = a[1:3]
        before = v.requires_grad
        a.copy_(x)           # the base now has a history: v reads it
        return v * 2, before, v.requires_grad, _name(v)
    got, want = _both(scenario, _rand(4))
    assert got[1:] == want[1:]
    _check_grads(lambda fw, x: scenario(fw, x)[0], _rand(4))


def test_view_of_plain_base_after_requires_grad_():
    def scenario(fw):
        a = fw.zeros(4, dtype=fw.float64)
        v = a[:2]
        a.requires_grad_()
        out = v * 2
        return v.requires_grad, v.is_leaf, out.requires_grad, out.grad_fn.next_functions[0]
    got, want = _both(scenario)
    assert got[:3] == want[:3]
    assert got[3][0] is None and want[3][0] is None


def test_view_of_plain_base_with_own_requires_grad():
    def scenario(fw):
        a = fw.zeros(4, dtype=fw.float64)
        v = a[:2].requires_grad_()
        (v * 2).sum().backward()
        return v.grad, a.grad, v.is_leaf
    got, want = _both(scenario)
    assert_same(got[0], want[0])
    assert got[1:] == want[1:]


# ---------------------------------------------------------------- detach


def test_detached_views_stay_out_of_the_graph():
    def scenario(fw, x):
        a = x.clone()
        d = a.detach()
        dv = d[:2]
        vd = a[:2].detach()
        a.mul_(2)
        return [(t.grad_fn, t.requires_grad, t._version, t._is_view()) for t in (d, dv, vd)]
    got, want = _both(scenario, _rand(4))
    assert got == want


def test_write_through_detached_view_is_seen_by_saved_tensors():
    def scenario(fw, x):
        a = x.clone()
        y = a.sin()          # saves a
        a.detach()[:2].mul_(5)
        y.sum().backward()
    _raises_like(scenario, _rand(4), match_message=False)


def test_write_through_detached_view_is_invisible_to_autograd():
    def scenario(fw, x):
        a = x.clone()
        v = a[:2]
        a.detach()[1:].mul_(5)  # data changes, the graph does not
        return v * 2, _name(v)
    got, want = _both(scenario, _rand(4))
    assert_same(got[0], want[0])
    assert got[1] == want[1]
    _check_grads(lambda fw, x: scenario(fw, x)[0], _rand(4))


def test_detach_inplace_of_view_raises():
    def scenario(fw, x):
        x.clone()[:2].detach_()
    e, t = _raises_like(scenario, _rand(4), match_message=False)
    assert str(e) in str(t)


# ---------------------------------------------------------------- views made under no_grad


def _no_grad_view_direct(fw, x):
    a = x.clone()
    with fw.no_grad():
        v = a[:2]
    v.pow_(2)


def _no_grad_view_of_leaf_direct(fw, x):
    with fw.no_grad():
        v = x[:2]
    v.mul_(2)


def _no_grad_view_indirect(fw, x):
    a = x.clone()
    with fw.no_grad():
        v = a[:2]
    a.mul_(2)
    return v.grad_fn


def _no_grad_view_used_after_base_change(fw, x):
    a = x.clone()
    with fw.no_grad():
        v = a[:2]
    a.mul_(2)
    return v * 2


def _no_grad_view_of_view(fw, x):
    a = x.clone()
    with fw.no_grad():
        v = a[:3]
    w = v[:2]
    w.mul_(2)


def _no_grad_view_of_view_indirect(fw, x):
    a = x.clone()
    with fw.no_grad():
        v = a[:3]
    w = v[:2]
    a.add_(1)
    return w.grad_fn


def _no_grad_view_of_plain_base_written_with_grad(fw, x):
    a = fw.zeros(4, dtype=fw.float64)
    with fw.no_grad():
        v = a[:2]
    v.copy_(x[:2])


def _no_grad_view_both_in_no_grad_then_read(fw, x):
    a = x.clone()
    with fw.no_grad():
        v = a[:3]
        v.mul_(2)
    return v.grad_fn


def _no_grad_leaf_view_after_no_grad_change(fw, x):
    with fw.no_grad():
        v = x[:2]
        x.mul_(2)
    return v.grad_fn


@pytest.mark.parametrize("scenario", [
    _no_grad_view_direct, _no_grad_view_of_leaf_direct, _no_grad_view_indirect,
    _no_grad_view_used_after_base_change, _no_grad_view_of_view,
    _no_grad_view_of_view_indirect, _no_grad_view_of_plain_base_written_with_grad,
    _no_grad_view_both_in_no_grad_then_read, _no_grad_leaf_view_after_no_grad_change])
def test_no_grad_view_errors(scenario):
    _raises_like(scenario, _rand(4))


def test_no_grad_view_flags_and_dead_end():
    def scenario(fw, x):
        a = x.clone()
        with fw.no_grad():
            v = a[:2]
        out = v * 2
        edges = out.grad_fn.next_functions
        out.sum().backward()
        return v.requires_grad, v.is_leaf, v.grad_fn, out.requires_grad, edges[0][0], x.grad
    got, want = _both(scenario, _rand(4))
    assert got == want


def test_no_grad_view_allowed_cases():
    def scenario(fw, x):
        a = x.clone()
        p = fw.zeros(4, dtype=fw.float64)
        with fw.no_grad():
            v = a[:2]
            v.mul_(3)                # in-place inside no_grad: not tracked, allowed
            q = p[:2]
        q.mul_(2)                    # nothing requires grad: allowed
        q.add_(1)
        return a * 1, p, q.grad_fn, q._version
    got, want = _both(scenario, _rand(4))
    assert_same(got[0], want[0])
    assert_same(got[1], want[1])
    assert got[2:] == want[2:]


# ---------------------------------------------------------------- ops with several view outputs


@pytest.mark.parametrize("make", [lambda a: a.unbind(0), lambda a: a.split_with_sizes([1, 3])])
def test_multi_output_view_errors(make):
    def direct(fw, x):
        make(x.clone())[0].mul_(2)

    def indirect(fw, x):
        a = x.clone()
        pieces = make(a)
        a.mul_(2)
        return pieces[0].grad_fn

    def view_of_piece(fw, x):
        make(x.clone())[1].view(-1).add_(1)

    def plain_base_written_with_grad(fw, x):
        piece = make(fw.zeros(4, dtype=fw.float64))[0]
        piece.copy_(x[:1].reshape(piece.shape))

    for scenario in (direct, indirect, view_of_piece, plain_base_written_with_grad):
        _raises_like(scenario, _rand(4))


@pytest.mark.parametrize("make", [lambda a: a.split(2), lambda a: a.chunk(2)])
def test_split_and_chunk_outputs_refuse_inplace(make):
    def scenario(fw, x):
        make(x.clone())[1].mul_(2)
    ember_error, torch_error = _raises_like(scenario, _rand(4), match_message=False)
    # ember names split's node SplitWithSizesBackward0 where torch says SplitBackward0
    tail = "is a view and is being modified inplace. This view is the output of a function"
    assert tail in str(ember_error) and tail in str(torch_error)


def test_multi_output_views_are_fine_without_inplace():
    def scenario(fw, x):
        a = x.clone()
        p, q = a.unbind(0)
        return p * q, a.split(1)[1].exp()
    _check_grads(scenario, _rand(2, 3))


def test_multi_output_views_under_no_grad_are_fine_in_no_grad():
    def scenario(fw, x):
        a = x.clone()
        with fw.no_grad():
            a.unbind(0)[0].mul_(2)
        return a * 1
    _check_grads(scenario, _rand(2, 3), double_backward=False)


# ---------------------------------------------------------------- retain_grad and hooks


def test_retain_grad_on_a_stale_view():
    def scenario(fw, x):
        a = x.clone()
        v = a[:2]
        v.retain_grad()
        a.mul_(2)
        (v * 3).sum().backward()
        return v.grad, x.grad
    got, want = _both(scenario, _rand(4))
    assert_same(got, want)


def test_retain_grad_moves_with_direct_inplace():
    def scenario(fw, x):
        a = x.clone()
        v = a[1:]
        v.retain_grad()
        a.retain_grad()
        v.mul_(2)                    # both a's and v's nodes change
        (a * fw.arange(4, dtype=fw.float64)).sum().backward()
        return v.grad, a.grad, x.grad
    got, want = _both(scenario, _rand(4))
    assert_same(got, want)


def test_retain_grad_moves_with_inplace_on_non_view():
    def scenario(fw, x):
        a = x.clone()
        a.retain_grad()
        a.mul_(3)
        (a * a).sum().backward()
        return a.grad, x.grad
    got, want = _both(scenario, _rand(4))
    assert_same(got, want)


def test_hook_registered_before_base_change_stays_with_old_node():
    def scenario(fw, x):
        a = x.clone()
        v = a[:2]
        v.register_hook(lambda g: g * 10)
        a.mul_(2)
        (v * 3).sum().backward()
        return x.grad
    got, want = _both(scenario, _rand(4))
    assert_same(got, want)


def test_hook_registered_after_base_change():
    def scenario(fw, x):
        a = x.clone()
        v = a[:2]
        a.mul_(2)
        v.grad_fn  # noqa: B018 (torch 2.13 crashes in register_hook on a stale view otherwise)
        v.register_hook(lambda g: g * 10)
        (v * 3).sum().backward()
        return x.grad
    got, want = _both(scenario, _rand(4))
    assert_same(got, want)


# ---------------------------------------------------------------- double backward


def test_double_backward_through_regenerated_node():
    def scenario(fw, x, y):
        a = x * y
        v = a.view(2, 3)[:, 1:]
        a.mul_(x)
        return (v ** 3).sum(1)
    _check_grads(scenario, _rand(6), _rand(6, seed=1))


def test_double_backward_through_copy_slices_of_stale_view():
    def scenario(fw, x, y):
        a = x.clone() ** 2
        v = a[1:]
        w = a[:3]
        a.mul_(y)
        v.mul_(w.exp())     # w is read from a's new history
        return a.sin()
    _check_grads(scenario, _rand(4), _rand(4, seed=1))


# ---------------------------------------------------------------- .real / .imag in place


def _complex_loss(fw, z):
    weights = fw.tensor(np.array([1 + 2j, 3 - 1j, -2 + 0.5j, 0.5 + 0j]), dtype=z.dtype)
    return (z * weights).real.sum() + (z.abs() ** 2).sum()


_COMPLEX_WRITES = {
    "real_mul_": lambda fw, z, t: z.real.mul_(2),
    "imag_add_": lambda fw, z, t: z.imag.add_(1),
    "real_mul_tensor": lambda fw, z, t: z.real.mul_(t),
    "imag_mul_own_real": lambda fw, z, t: z.imag.mul_(z.real.detach() + t),
    "real_copy_": lambda fw, z, t: z.real.copy_(t * 3),
    "imag_copy_": lambda fw, z, t: z.imag.copy_(t.exp()),
    "real_setitem": lambda fw, z, t: z.real.__setitem__(0, 5.0),
    "imag_slice_setitem": lambda fw, z, t: z.imag.__setitem__(slice(1, None), t[:3] ** 2),
    "real_of_view": lambda fw, z, t: z[1:].real.sub_(t[1:]),
    "imag_strided": lambda fw, z, t: z.imag[::2].mul_(-1),
    "view_as_real_mul_": lambda fw, z, t: fw.view_as_real(z).mul_(2),
    "view_as_real_column": lambda fw, z, t: fw.view_as_real(z)[:, 1].add_(t),
    "view_as_real_setitem": lambda fw, z, t: fw.view_as_real(z).__setitem__((0, 0), 5.0),
    "view_as_real_of_slice": lambda fw, z, t: fw.view_as_real(z[1:]).t()[0].mul_(t[1:]),
}


@pytest.mark.parametrize("kind", list(_COMPLEX_WRITES))
def test_inplace_through_real_imag(kind):
    def scenario(fw, z0, t):
        z = z0.clone()
        _COMPLEX_WRITES[kind](fw, z, t)
        return z
    arrays = (_rand(4, dtype=np.complex128), _rand(4, seed=1))
    _check_grads(scenario, *arrays, double_backward=False)
    _check_complex_grads(lambda fw, z0, t: _complex_loss(fw, scenario(fw, z0, t)), *arrays)
    got, want = _both(lambda fw, z0, t: _name(scenario(fw, z0, t)), *arrays)
    assert got == want == "torch::autograd::CopySlices"


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_real_view_of_complex_after_base_change(dtype):
    def scenario(fw, z0):
        z = z0.clone()
        r, i = z.real, z.imag
        z.mul_(2j)
        return r * i, _name(r), r._version
    got, want = _both(scenario, _rand(3, dtype=dtype))
    assert got[1:] == want[1:]
    assert_same(got[0], want[0])
    _check_grads(lambda fw, z0: scenario(fw, z0)[0], _rand(3, dtype=np.complex128),
                 double_backward=False)
    _check_complex_grads(lambda fw, z0: (scenario(fw, z0)[0] ** 2).sum(),
                         _rand(3, dtype=np.complex128))


def test_real_and_imag_views_both_written():
    def scenario(fw, z0, t):
        z = z0.clone()
        r, i = z.real, z.imag
        r.mul_(t)
        i.add_(r)           # i reads r's new values; r's view is rebased on z's CopySlices
        return z, r * i
    arrays = (_rand(3, dtype=np.complex128), _rand(3, seed=1))
    _check_grads(scenario, *arrays, double_backward=False)
    _check_complex_grads(lambda fw, z0, t: (scenario(fw, z0, t)[0].abs() ** 3).sum(), *arrays)


@pytest.mark.parametrize("write", ["view", "base"])
def test_inplace_through_view_as_complex(write):
    def scenario(fw, r0, t):
        r = r0.clone()
        c = fw.view_as_complex(r)
        if write == "view":
            c[1:].mul_(1 + 2j)
        else:
            r.mul_(t[:, None])   # c is stale: regenerated over r's new history
        return r, c * c
    arrays = (_rand(3, 2), _rand(3, seed=1))
    _check_grads(scenario, *arrays, double_backward=False)
    _check_complex_grads(lambda fw, r0, t: (scenario(fw, r0, t)[1].abs() ** 2).sum(), *arrays)


def test_dtype_changing_views_regenerate_like_torch():
    def scenario(fw, z0, r0):
        z, r = z0.clone(), r0.clone()
        views = (fw.view_as_real(z), z.real, z.imag[1:], fw.view_as_complex(r))
        z.mul_(2j)
        r.add_(1)
        return [(_name(v), v._version, v.requires_grad) for v in views]
    got, want = _both(scenario, _rand(3, dtype=np.complex128), _rand(3, 2))
    assert got == want


def test_complex64_real_inplace_values():
    def scenario(fw, z0):
        z = z0.clone()
        z.real.mul_(2)
        z.imag[0] = -1
        out = (z * z.conj()).real.sum()
        out.backward()
        return z, z0.grad
    got, want = _both(scenario, _rand(5, dtype=np.complex64))
    assert_same(got, want)


def test_real_inplace_on_leaf_raises():
    def scenario(fw, z):
        z.real.mul_(2)
    _raises_like(scenario, _rand(3, dtype=np.complex128))


# ---------------------------------------------------------------- meta device


def test_meta_device_view_regeneration():
    results = []
    for fw in (ember, torch):
        x = fw.empty(4, 3, device="meta", dtype=fw.float32, requires_grad=True)
        a = x.clone()
        v = a[1:].t()
        a.mul_(2)
        y = v * 2
        (g,) = fw.autograd.grad(y.sum(), x)
        z = fw.empty(3, device="meta", dtype=fw.complex64, requires_grad=True).clone()
        z.real.mul_(2)
        results.append((_name(v), tuple(y.shape), str(y.dtype).split(".")[-1], tuple(g.shape),
                        str(g.dtype).split(".")[-1], _name(z), z.shape[0]))
    assert results[0] == results[1]


# ---------------------------------------------------------------- other consumers of a stale view


def _scaled(fw):
    class Scaled(fw.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 3

        @staticmethod
        def backward(ctx, grad):
            return grad * 3
    return Scaled


def test_custom_function_on_a_stale_view():
    def scenario(fw, x, y):
        a = x.clone()
        v = a[1:]
        a.mul_(y)
        return _scaled(fw).apply(v) * v
    _check_grads(scenario, _rand(4), _rand(4, seed=1), double_backward=False)


def test_grad_with_respect_to_a_stale_view():
    def scenario(fw, x):
        a = x.clone()
        v = a[1:]
        a.mul_(2)
        out = (v ** 2).sum() + a.sum()
        return fw.autograd.grad(out, (v, a))
    got, want = _both(scenario, _rand(4))
    assert_same(got, want)


@pytest.mark.parametrize("write", [
    lambda v, fw: v.mul_(2),          # a Python number: the in-place fast path
    lambda v, fw: v.add_(1.5),
    lambda v, fw: v.div_(fw.full((2,), 4.0, dtype=fw.float64)),  # a tensor without grad
])
def test_scalar_inplace_on_a_stale_view_is_recorded(write):
    def scenario(fw, x):
        a = x * 1
        v = a[:2]
        a.mul_(3)            # v is now stale
        write(v, fw)
        return a
    _check_grads(scenario, _rand(4))


def test_tensor_split_sections_are_plain_views_that_take_inplace_writes():
    def scenario(fw, x):
        a = x * 1
        first, second, third = a.tensor_split(3)
        second.mul_(5)
        return a
    _check_grads(scenario, _rand(7))


def test_inplace_view_method_node_is_current():
    for fw in (ember, torch):
        b = fw.ones(2, 3, dtype=fw.float64, requires_grad=True) * 1
        b.t_()
        assert b.grad_fn.name() != "AsStridedBackward0"


def test_view_of_a_tensor_that_later_requires_grad_records_scalar_inplace():
    # torch refuses this case ("a leaf Variable that requires grad ..."); ember records it, so
    # the gradient must be the exact one: d/dy sum(a) with a[:2] doubled after a.copy_(y)
    y = ember.ones(4, dtype=ember.float64, requires_grad=True)
    a = ember.zeros(4, dtype=ember.float64)
    v = a[:2]
    a.copy_(y * 1)
    v.mul_(2)
    a.sum().backward()
    assert y.grad.tolist() == [2.0, 2.0, 1.0, 1.0]
