"""Autograd against torch: in-place writes through views, custom Functions, hooks, saved-tensor
hooks, errors and grad modes. Each program runs once with ``lib=ember`` and once with
``lib=torch`` and the results are compared."""

import threading

import numpy as np
import pytest
import scipy.special
import torch

import ember
from conftest import assert_same

LIBS = (ember, torch)


def both(program, **kw):
    """Run ``program(lib)`` for ember and torch and compare what they return."""
    assert_same(program(ember), program(torch), **kw)


def errors_of(program):
    """The exception each library raises for ``program`` (must raise in both)."""
    out = []
    for lib in LIBS:
        with pytest.raises(Exception) as info:
            program(lib)
        out.append(info.value)
    return out


def same_error(program, *, exact=False):
    e, t = errors_of(program)
    assert type(e).__name__ == type(t).__name__ or isinstance(e, type(t)), (e, t)
    if exact:
        assert str(e) == str(t)
    return e, t


def data(*shape, seed=0, dtype=np.float64):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


# ---------------------------------------------------------------- in-place through views


VIEW_WRITES = {
    "select_mul": lambda lib, y, o: y.select(1, 0).mul_(o.select(1, 0)),
    "view_add": lambda lib, y, o: y.view(-1).add_(o.reshape(-1)),
    "narrow_copy_broadcast": lambda lib, y, o: y.narrow(1, 1, 2).copy_(o.select(0, 0)
                                                                       .narrow(0, 0, 2)),
    "transpose_mul": lambda lib, y, o: y.t().mul_(o.t()),
    "diagonal_mul": lambda lib, y, o: y.diagonal().mul_(o.diagonal().exp()),
    "view_of_view": lambda lib, y, o: y.t().narrow(0, 1, 2).select(1, 1).sub_(o.select(0, 1)
                                                                              .narrow(0, 0, 2)),
    "scalar_into_view": lambda lib, y, o: y.narrow(0, 1, 1).mul_(0.5),
    "fill_view": lambda lib, y, o: y.select(0, 0).fill_(2.0),
    "unsqueeze_view_div": lambda lib, y, o: y.unsqueeze(0).div_(o.unsqueeze(0) + 3),
}


@pytest.mark.parametrize("name", sorted(VIEW_WRITES))
def test_inplace_through_view_grads_match_torch(name):
    write = VIEW_WRITES[name]
    a, b, w = data(2, 3), data(2, 3, seed=1), data(2, 3, seed=2)

    def program(lib):
        x = lib.tensor(a, requires_grad=True)
        o = lib.tensor(b, requires_grad=True)
        y = x.clone()
        v = write(lib, y, o)
        loss = (y * lib.tensor(w)).sum() + (v * v).sum()
        gx, go = lib.autograd.grad(loss, (x, o), allow_unused=True, materialize_grads=True)
        return y, v, gx, go, y.grad_fn.name(), v.grad_fn.name()

    both(program)


def test_inplace_through_view_double_backward():
    a, b = data(3, 3), data(3, 3, seed=1)

    def program(lib):
        x = lib.tensor(a, requires_grad=True)
        o = lib.tensor(b, requires_grad=True)
        y = x.sin()
        y.t().narrow(0, 0, 2).mul_(o.narrow(1, 0, 2).t() * x.narrow(1, 0, 2).t())
        (gx,) = lib.autograd.grad((y ** 2).sum(), x, create_graph=True)
        return lib.autograd.grad((gx * gx).sum(), (x, o))

    both(program)


def test_inplace_view_of_base_not_requiring_grad():
    def program(lib):
        o = lib.tensor([1., 2., 3.], requires_grad=True)
        y = lib.zeros(2, 3, dtype=lib.float64)
        y.select(0, 1).add_(o.double() * 2)
        (g,) = lib.autograd.grad((y * y).sum(), o)
        return y, g, y.requires_grad, y.grad_fn.name()

    both(program)


def test_inplace_through_view_on_meta():
    x = ember.ones(4, 3, device="meta", requires_grad=True)
    y = x.clone()
    v = y.narrow(0, 1, 2)
    v.mul_(2)
    assert y.grad_fn.name() == "torch::autograd::CopySlices" and v.grad_fn.name() == "AsStridedBackward0"
    (g,) = ember.autograd.grad(y.sum(), x)
    assert g.shape == (4, 3) and g.device.type == "meta" and g.dtype is ember.float32


# ---------------------------------------------------------------- custom Functions


def make_functions(lib):
    """The same custom Functions written against ``lib``."""
    F = lib.autograd.Function

    class MulAdd(F):
        @staticmethod
        def forward(ctx, x, y, scale, shift=0.0):
            ctx.save_for_backward(x, y)
            ctx.scale = scale
            return x * y * scale + shift

        @staticmethod
        def backward(ctx, grad):
            x, y = ctx.saved_tensors
            gx = grad * y * ctx.scale if ctx.needs_input_grad[0] else None
            gy = grad * x * ctx.scale if ctx.needs_input_grad[1] else None
            return gx, gy, None, None

    class Cube(F):  # setup_context style, saved output, double-differentiable backward
        @staticmethod
        def forward(x):
            return x ** 3, x * 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            (x,) = inputs
            ctx.save_for_backward(x, output[0])

        @staticmethod
        def backward(ctx, g_cube, g_double):
            x, cube = ctx.saved_tensors
            return g_cube * 3 * cube / x + g_double * 2

    class SplitNone(F):  # tuple outputs; reports what backward received
        seen = []

        @staticmethod
        def forward(ctx, x, materialize):
            ctx.set_materialize_grads(materialize)
            return x.exp(), x * 3

        @staticmethod
        def backward(ctx, ga, gb):
            SplitNone.seen.append((ga is None, gb is None))
            out = 0
            if ga is not None:
                out = out + ga
            if gb is not None:
                out = out + gb * 3
            return out, None

    class ArgMaxLike(F):  # an integer output marked non-differentiable
        @staticmethod
        def forward(ctx, x):
            idx = (x > 0).long()
            ctx.mark_non_differentiable(idx)
            return x * 2, idx

        @staticmethod
        def backward(ctx, g, g_idx):
            return g * 2

    class Double_(F):  # modifies its input in place
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class Identity(F):  # returns an input as is
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 5

    class Erf(F):  # backward in NumPy/SciPy terms
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return lib.tensor(scipy.special.erf(x.detach().numpy()))

        @staticmethod
        @lib.autograd.function.once_differentiable
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            d = 2 / np.sqrt(np.pi) * np.exp(-x.detach().numpy() ** 2)
            return grad * lib.tensor(d)

    return dict(MulAdd=MulAdd, Cube=Cube, SplitNone=SplitNone, ArgMaxLike=ArgMaxLike,
                Double_=Double_, Identity=Identity, Erf=Erf)


FUNCS = {lib: make_functions(lib) for lib in LIBS}


def test_function_saved_tensors_nontensor_args_and_names():
    a, b = data(2, 3), data(3, seed=1)

    def program(lib):
        f = FUNCS[lib]["MulAdd"]
        x, y = lib.tensor(a, requires_grad=True), lib.tensor(b)
        out = f.apply(x, y, 2.5, shift=1.0)
        out.sum().backward()
        return out, x.grad, out.grad_fn.name(), out.grad_fn.scale, \
            out.grad_fn.needs_input_grad, len(out.grad_fn.next_functions)

    both(program)


def test_function_setup_context_double_backward():
    a = data(4) + 2

    def program(lib):
        x = lib.tensor(a, requires_grad=True)
        cube, dbl = FUNCS[lib]["Cube"].apply(x)
        (g,) = lib.autograd.grad((cube + dbl).sum(), x, create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), x)
        return cube, dbl, g, gg, cube.grad_fn.name()

    both(program)


@pytest.mark.parametrize("materialize", [True, False])
def test_function_materialize_grads(materialize):
    def program(lib):
        f = FUNCS[lib]["SplitNone"]
        f.seen.clear()
        x = lib.tensor([1., 2.], requires_grad=True)
        a, _ = f.apply(x, materialize)
        a.sum().backward()
        return x.grad, tuple(f.seen)

    both(program)


def test_function_non_differentiable_dirty_and_identity():
    def program(lib):
        fs = FUNCS[lib]
        x = lib.tensor([-1., 2., 3.], requires_grad=True)
        y, idx = fs["ArgMaxLike"].apply(x)
        z = x.clone()
        w = fs["Double_"].apply(z)
        same = w is z
        i = fs["Identity"].apply(x)
        (y.sum() + (w * w).sum() + i.sum()).backward()
        return (y, idx, idx.requires_grad, w, same, z.grad_fn.name(), i is x, x.grad,
                z._version)

    both(program)


def test_function_dirty_leaf_raises():
    def program(lib):
        FUNCS[lib]["Double_"].apply(lib.ones(2, requires_grad=True))

    same_error(program)


def test_function_backward_with_scipy_and_once_differentiable():
    a = data(5)

    def program(lib):
        x = lib.tensor(a, requires_grad=True)
        y = FUNCS[lib]["Erf"].apply(x)
        (g,) = lib.autograd.grad(y.sum(), x)
        return y, g

    both(program)

    def twice(lib):
        x = lib.tensor(a, requires_grad=True)
        v = lib.ones(5, dtype=lib.float64, requires_grad=True)
        (g,) = lib.autograd.grad(FUNCS[lib]["Erf"].apply(x), x, v, create_graph=True)
        assert g.requires_grad
        return g

    e, t = same_error(lambda lib: twice(lib).sum().backward(), exact=True)
    assert "once_differentiable" in str(e)
    same_error(lambda lib: lib.autograd.grad(twice(lib).sum(), lib.ones(1, requires_grad=True)),
               exact=True)


def test_function_dirty_without_grad_bumps_version():
    def program(lib):
        z = lib.ones(2)
        w = FUNCS[lib]["Double_"].apply(z)
        return w, w is z, z._version, w.requires_grad

    both(program)


def test_function_saved_tensor_modified_inplace_message():
    def program(lib):
        x = lib.tensor([1., 2.], requires_grad=True)
        y = x.clone()
        out = FUNCS[lib]["MulAdd"].apply(y, y, 1.0)
        y.add_(1)
        out.sum().backward()

    e, t = same_error(program)
    assert str(e).replace("MulAddBackward", "X") == str(t).replace("MulAddBackward", "X") or \
        str(e).split("Hint")[0].split(", which")[0] == str(t).split("Hint")[0].split(", which")[0]


def test_function_backward_twice_and_bad_gradients():
    def twice(lib):
        x = lib.tensor([1., 2.], requires_grad=True)
        out = FUNCS[lib]["MulAdd"].apply(x, x, 1.0)
        out.sum().backward()
        out.sum().backward()

    e, t = same_error(twice)
    assert str(e).startswith("Trying to backward through the graph a second time")

    def make(lib, backward):
        class Bad(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, k):
                return x * k

        Bad.backward = staticmethod(backward)
        return Bad

    for backward in (lambda ctx, g: g,  # too few gradients
                     lambda ctx, g: (g.sum(), None),  # wrong shape... expandable: allowed
                     lambda ctx, g: (g, g)):  # gradient for a non-tensor input
        def program(lib, backward=backward):
            x = lib.tensor([1., 2.], requires_grad=True)
            make(lib, backward).apply(x, 3.0).sum().backward()
            return x.grad
        try:
            expected = program(torch)
        except RuntimeError:
            e, t = same_error(program)
            assert str(e).split(" ", 2)[2][:40] == str(t).split(" ", 2)[2][:40]
        else:
            assert_same(program(ember), expected)

    def wrong_shape(lib):
        x = lib.tensor([1., 2.], requires_grad=True)
        make(lib, lambda ctx, g: (lib.ones(3, dtype=g.dtype), None)).apply(x, 3.0).sum() \
            .backward()

    e, t = same_error(wrong_shape)
    assert "returned an invalid gradient at index 0 - got [3] but expected shape compatible " \
        "with [2]" in str(e)


# ---------------------------------------------------------------- hooks


def test_tensor_hooks_leaf_nonleaf_retain_grad_and_removal():
    def program(lib):
        x = lib.tensor([1., 2., 3.], requires_grad=True)
        seen = []
        h1 = x.register_hook(lambda g: g * 2)
        y = x * x
        y.register_hook(lambda g: seen.append(g.clone()))
        y.register_hook(lambda g: g + 1)
        y.retain_grad()
        y.sum().backward()
        first = (x.grad.clone(), y.grad.clone())
        h1.remove()
        h1.remove()
        x.grad = None
        (x * 3).sum().backward()
        return first, x.grad, seen, y.is_leaf, y.retains_grad

    both(program)


def test_post_accumulate_hook_and_errors():
    def program(lib):
        w = lib.tensor([1., 2.], requires_grad=True)
        calls = []
        handle = w.register_post_accumulate_grad_hook(lambda t: calls.append(t.grad.clone()))
        (w * 2).sum().backward()
        (w * 3).sum().backward()
        handle.remove()
        (w * 4).sum().backward()
        return calls, w.grad

    both(program)
    e, t = same_error(lambda lib: (lib.ones(2, requires_grad=True) * 2)
                      .register_post_accumulate_grad_hook(lambda t: None), exact=True)
    e, t = same_error(lambda lib: lib.ones(2).register_post_accumulate_grad_hook(
        lambda t: None), exact=True)
    e, t = same_error(lambda lib: lib.ones(2).register_hook(lambda g: g), exact=True)


def test_node_hooks_and_prehooks():
    def program(lib):
        x = lib.tensor([1., 2.], requires_grad=True)
        y = x.exp()
        z = y * 3
        log = []
        z.grad_fn.register_prehook(lambda gout: log.append(("pre", gout[0].clone())))
        h = y.grad_fn.register_hook(lambda gin, gout: (gin[0] * 10,))
        y.grad_fn.register_hook(lambda gin, gout: log.append(("post", gin[0].clone(),
                                                               gout[0].clone())))
        z.sum().backward(retain_graph=True)
        first = x.grad.clone()
        h.remove()
        x.grad = None
        z.sum().backward()
        return first, x.grad, log

    both(program)


def test_saved_tensors_hooks_pack_unpack():
    def program(lib):
        packed = []

        def pack(t):
            packed.append(tuple(t.shape))
            return t * 1

        def unpack(t):
            return t

        x = lib.tensor(data(2, 3), requires_grad=True)
        y = lib.tensor(data(3, seed=1), requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(pack, unpack):
            out = (x * y).exp().sum()
        out.backward()
        return sorted(packed), x.grad, y.grad

    both(program)


def test_saved_tensors_hooks_unpack_result_is_used():
    def program(lib):
        x = lib.tensor([1., 2., 3.], requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t.detach() * 2, lambda t: t):
            y = x.sin()
        y.sum().backward()
        return x.grad   # cos(2x): the derivative saw the packed value

    both(program)


def test_save_on_cpu_and_function_saved_tensors_hooks():
    def program(lib):
        x = lib.tensor(data(4), requires_grad=True)
        count = []
        with lib.autograd.graph.save_on_cpu():
            a = (x * x).tanh()
        with lib.autograd.graph.saved_tensors_hooks(lambda t: count.append(1) or t, lambda t: t):
            b = FUNCS[lib]["MulAdd"].apply(a, x, 2.0)
        b.sum().backward()
        return x.grad, len(count)

    both(program)


# ---------------------------------------------------------------- errors


MODIFIED_PROGRAMS = {
    "saved_input_modified_by_add": lambda lib: _modified(lib, lambda b: b * b,
                                                         lambda b, c: b.add_(1)),
    "saved_output_modified": lambda lib: _modified(lib, lambda b: b.exp(),
                                                   lambda b, c: c.add_(1)),
    "saved_input_modified_by_mul": lambda lib: _modified(lib, lambda b: b.sin(),
                                                         lambda b, c: b.mul_(2)),
}


def _modified(lib, forward, modify):
    a = lib.ones(3, requires_grad=True)
    b = a.clone()
    c = forward(b)
    modify(b, c)
    c.sum().backward()


@pytest.mark.parametrize("name", sorted(MODIFIED_PROGRAMS))
def test_modified_saved_tensor_message_is_torchs(name):
    same_error(MODIFIED_PROGRAMS[name], exact=True)


def test_modified_saved_leaf_like_tensor_message():
    def program(lib):
        a = lib.ones(3, requires_grad=True)
        b = lib.ones(3)
        c = a * b
        b.add_(1)
        c.sum().backward()

    same_error(program, exact=True)


@pytest.mark.parametrize("program", [
    lambda lib: (lambda x: (x.exp().sum().backward(), x.grad))(lib.ones(2, requires_grad=True)),
])
def test_valid_programs_do_not_raise(program):
    both(program)


ERROR_PROGRAMS = {
    "backward_twice": lambda lib: [y := (lib.ones(2, requires_grad=True) * 2).exp().sum(),
                                   y.backward(), y.backward()],
    "inplace_leaf": lambda lib: lib.ones(2, requires_grad=True).add_(1),
    "nonscalar_backward": lambda lib: (lib.ones(2, requires_grad=True) * 2).backward(),
    "int_requires_grad": lambda lib: lib.tensor([1, 2]).requires_grad_(),
    "int_requires_grad_factory": lambda lib: lib.ones(2, dtype=lib.int64, requires_grad=True),
    "no_grad_fn": lambda lib: lib.ones(2).sum().backward(),
    "grad_unused": lambda lib: lib.autograd.grad(
        (lib.ones(2, requires_grad=True) * 2).sum(), lib.ones(2, requires_grad=True)),
    "grad_input_not_requiring": lambda lib: lib.autograd.grad(
        (lib.ones(2, requires_grad=True) * 2).sum(), lib.ones(2)),
    "materialize_without_allow_unused": lambda lib: lib.autograd.grad(
        (x := lib.ones(2, requires_grad=True)).sum(), x, allow_unused=False,
        materialize_grads=True),
    "grad_shape_mismatch": lambda lib: lib.autograd.grad(
        (x := lib.ones(2, requires_grad=True)) * 2, x, lib.ones(3)),
}


@pytest.mark.parametrize("name", sorted(ERROR_PROGRAMS))
def test_errors_match_torch(name):
    e, t = same_error(ERROR_PROGRAMS[name])
    words = [w.lower() for w in str(t).split()[:4] if w.isalpha()]
    assert all(w in str(e).lower() for w in words), (str(e), str(t))


def test_grad_allow_unused_and_materialize():
    def program(lib):
        x = lib.tensor([1., 2.], requires_grad=True)
        u = lib.tensor([5., 6., 7.], requires_grad=True)
        out = (x * x).sum()
        g1 = lib.autograd.grad(out, (x, u), allow_unused=True, retain_graph=True)
        g2 = lib.autograd.grad(out, (x, u), materialize_grads=True)
        return g1[0], g1[1] is None, g2

    both(program)


# ---------------------------------------------------------------- grad modes


def test_grad_modes_as_context_managers_and_decorators():
    def program(lib):
        x = lib.ones(2, requires_grad=True)
        res = []
        with lib.no_grad():
            res.append((x * 2).requires_grad)
            with lib.enable_grad():
                res.append((x * 2).requires_grad)
        with lib.set_grad_enabled(False):
            res.append((x * 2).requires_grad)
        res.append(lib.is_grad_enabled())
        with lib.inference_mode():
            res.append(((x * 2).requires_grad, lib.is_inference_mode_enabled()))
        with lib.inference_mode(False):
            res.append(lib.is_inference_mode_enabled())

        @lib.no_grad()
        def f(t):
            return (t * 2).requires_grad

        @lib.no_grad
        def g(t):
            return (t * 2).requires_grad

        @lib.enable_grad()
        def h(t):
            return (t * 2).requires_grad

        @lib.inference_mode()
        def i(t):
            return lib.is_inference_mode_enabled()

        @lib.set_grad_enabled(False)
        def j(t):
            return lib.is_grad_enabled()

        res += [f(x), g(x), i(x), j(x), lib.is_grad_enabled()]
        with lib.no_grad():
            res.append(h(x))
        lib.set_grad_enabled(False)
        res.append(lib.is_grad_enabled())
        lib.set_grad_enabled(True)
        res.append(lib.is_grad_enabled())
        return res

    both(program)


def test_grad_mode_is_thread_local():
    def program(lib):
        seen = {}

        def worker():
            seen["worker"] = lib.is_grad_enabled()
            with lib.no_grad():
                seen["worker_inside"] = lib.is_grad_enabled()

        with lib.no_grad():
            t = threading.Thread(target=worker)
            t.start()
            t.join()
            seen["main"] = lib.is_grad_enabled()
        return seen["worker"], seen["worker_inside"], seen["main"], lib.is_grad_enabled()

    both(program)
