"""Autograd tools against torch: gradcheck, functional (jacobian, hessian, vjp, jvp, hvp, vhp),
forward-mode AD, anomaly detection, checkpointing, and memory/recursion limits."""

import gc
import sys
import tracemalloc
import warnings
import weakref

import numpy as np
import pytest
import torch

import ember
from conftest import assert_same

LIBS = (ember, torch)


def both(program, **kw):
    assert_same(program(ember), program(torch), **kw)


def data(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


# ---------------------------------------------------------------- gradcheck


def bad_function(lib):
    class Bad(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 3
    return Bad


GRADCHECK_FUNCS = {
    "sin_mul": lambda lib: (lambda x, y: (x * y).sin()),
    "exp_div_sum": lambda lib: (lambda x, y: (x.exp() / (y * y + 1)).sum(0)),
    "tuple_outputs": lambda lib: (lambda x, y: (x.tanh(), (x * y).mean())),
    "pow_log": lambda lib: (lambda x, y: (x * x + 1).log() ** 1.5),
}


@pytest.mark.parametrize("name", sorted(GRADCHECK_FUNCS))
def test_gradcheck_and_gradgradcheck_pass_like_torch(name):
    a, b = data(2, 3), data(3, seed=1)

    def program(lib):
        fn = GRADCHECK_FUNCS[name](lib)
        x = lib.tensor(a, requires_grad=True)
        y = lib.tensor(b, requires_grad=True)
        return (lib.autograd.gradcheck(fn, (x, y)),
                lib.autograd.gradgradcheck(fn, (x, y)))

    both(program)


def test_gradcheck_failure_report():
    def program(lib):
        x = lib.tensor([1., 2.], dtype=lib.float64, requires_grad=True)
        return lib.autograd.gradcheck(bad_function(lib).apply, (x,))

    for lib in LIBS:
        with pytest.raises(RuntimeError) as info:
            program(lib)
        assert type(info.value).__name__ == "GradcheckError"
        message = str(info.value)
        assert message.startswith("Jacobian mismatch for output 0 with respect to input 0,\n"
                                  "numerical:tensor([[2.0000, 0.0000],")
        assert "analytical:tensor([[3., 0.]," in message
    assert issubclass(ember.autograd.GradcheckError, RuntimeError)

    def quiet(lib):
        x = lib.tensor([1., 2.], dtype=lib.float64, requires_grad=True)
        return lib.autograd.gradcheck(bad_function(lib).apply, (x,), raise_exception=False,
                                      eps=1e-6, atol=1e-5, rtol=1e-3, check_undefined_grad=True)

    both(quiet)


def test_gradcheck_argument_errors_and_warning():
    for lib in LIBS:
        with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
            lib.autograd.gradcheck(lambda t: t * 2, (lib.ones(2, dtype=lib.float64),))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert lib.autograd.gradcheck(lambda t: t * 2, (lib.ones(2, requires_grad=True),),
                                          eps=1e-3, atol=1e-2, rtol=1e-2)
        assert any("not a double precision" in str(w.message) for w in caught)


def test_gradgradcheck_detects_bad_double_backward():
    def program(lib):
        class BadDouble(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x ** 3

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return g * 3 * x.detach() ** 2   # detached: second derivative lost

        x = lib.tensor([1., 2.], dtype=lib.float64, requires_grad=True)
        return (lib.autograd.gradcheck(BadDouble.apply, (x,)),
                lib.autograd.gradgradcheck(BadDouble.apply, (x,), raise_exception=False))

    both(program)


# ---------------------------------------------------------------- gradcheck: complex numbers


def cdata(*shape, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


# f(lib) -> function of (z: complex (2, 3), w: complex (3, 2), r: real (2, 3)); the second item
# says whether torch's forward AD supports it (check_forward_ad).
COMPLEX_FUNCS = {
    "mul": (lambda lib: (lambda z, w, r: z * w.t() * r), True),
    "abs": (lambda lib: (lambda z, w, r: z.abs() * r), True),
    "angle": (lambda lib: (lambda z, w, r: z.angle() + r), True),
    "exp": (lambda lib: (lambda z, w, r: (z * 0.5).exp()), True),
    "conj": (lambda lib: (lambda z, w, r: z.conj() * w.t()), True),
    "real_imag": (lambda lib: (lambda z, w, r: (z.real * r, z.imag, (z * w.t()).real)), True),
    "matmul": (lambda lib: (lambda z, w, r: z @ w), True),
    "sum": (lambda lib: (lambda z, w, r: (z.sum(1) * w.sum(0), (z.abs() ** 2).sum())), True),
    "sgn": (lambda lib: (lambda z, w, r: z.sgn() * r), True),
    "complex_polar": (lambda lib: (lambda z, w, r: (lib.complex(r, r.sin()) * z,
                                                    lib.polar(r.exp(), r))), True),
    "reductions": (lambda lib: (lambda z, w, r: (z.prod(1), z.var(0),
                                                 lib.linalg.vector_norm(w, 2, 1))), True),
    "views": (lambda lib: (lambda z, w, r: (z.t(), z[1], z.reshape(3, 2) * w)), True),
}


@pytest.mark.parametrize("name", sorted(COMPLEX_FUNCS))
def test_gradcheck_complex_passes_like_torch(name):
    make, forward = COMPLEX_FUNCS[name]
    a, b, c = cdata(2, 3), cdata(3, 2, seed=1), data(2, 3, seed=2)

    def program(lib):
        fn = make(lib)
        inputs = tuple(lib.tensor(v, requires_grad=True) for v in (a, b, c))
        return (lib.autograd.gradcheck(fn, inputs, check_forward_ad=forward),
                lib.autograd.gradgradcheck(fn, inputs))

    both(program)
    assert program(ember) == (True, True)


def complex_bad_functions(lib):
    class MissingConj(lib.autograd.Function):   # backward of x * x without the conj
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * g * x

    class WrongRealPart(lib.autograd.Function):  # right for imaginary output gradients only
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2 + g.real

    class WrongJvp(lib.autograd.Function):   # right backward, jvp ignores imaginary tangents
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

        @staticmethod
        def jvp(ctx, t):
            return t.real * 2 + 0j

    class RealOutput(lib.autograd.Function):   # |x|^2 with the gradient of x * x
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return (x * x.conj()).real

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * g * x.conj()

    return {"missing_conj": (MissingConj.apply, {}, "imaginary part of complex outputs"),
            "wrong_real_part": (WrongRealPart.apply, {}, "real part of complex outputs"),
            "wrong_jvp": (WrongJvp.apply, {"check_forward_ad": True},
                          "imaginary part of complex inputs"),
            "real_output": (RealOutput.apply, {}, "Jacobian mismatch for output 0")}


@pytest.mark.parametrize("name", ["missing_conj", "wrong_real_part", "wrong_jvp",
                                  "real_output"])
def test_gradcheck_complex_detects_wrong_backward_like_torch(name):
    a = cdata(2, seed=3)
    messages = []
    for lib in LIBS:
        fn, kwargs, words = complex_bad_functions(lib)[name]
        x = lib.tensor(a, requires_grad=True)
        assert lib.autograd.gradcheck(fn, (x,), raise_exception=False, **kwargs) is False
        with pytest.raises(RuntimeError) as info:
            lib.autograd.gradcheck(fn, (x,), **kwargs)
        assert type(info.value).__name__ == "GradcheckError"
        assert words in str(info.value)
        messages.append(str(info.value).replace("torch.", "ember."))
    assert messages[0] == messages[1]


def test_gradcheck_names_input_among_those_requiring_grad():
    messages = []
    for lib in LIBS:
        class Bad(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                return x * 2 + y

            @staticmethod
            def backward(ctx, g):
                return g * 3, g

        a = lib.ones(2, dtype=lib.float64)
        b = lib.ones(2, dtype=lib.float64, requires_grad=True)
        with pytest.raises(RuntimeError) as info:
            lib.autograd.gradcheck(lambda u, v: Bad.apply(v, u), (a, b))
        messages.append(str(info.value).replace("torch.", "ember."))
    assert messages[0].startswith("Jacobian mismatch for output 0 with respect to input 0,")
    assert messages[0] == messages[1]


def test_gradcheck_complex_correct_custom_function_passes():
    def program(lib):
        class Square(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return 2 * g * x.conj()

        x = lib.tensor(cdata(3, seed=4), requires_grad=True)
        return lib.autograd.gradcheck(Square.apply, (x,)), lib.autograd.gradgradcheck(
            Square.apply, (x,))

    both(program)
    assert program(ember) == (True, True)


def test_gradgradcheck_complex_detects_bad_double_backward():
    def program(lib):
        class BadDouble(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x ** 3

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return g * (3 * x.detach() ** 2).conj()   # detached: second derivative lost

        x = lib.tensor(cdata(2, seed=5), requires_grad=True)
        return (lib.autograd.gradcheck(BadDouble.apply, (x,)),
                lib.autograd.gradgradcheck(BadDouble.apply, (x,), raise_exception=False))

    both(program)
    assert program(ember) == (True, False)


def test_gradcheck_complex64_warns_and_view_outputs():
    for lib in LIBS:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            x = lib.tensor(cdata(3), dtype=lib.complex64, requires_grad=True)
            assert lib.autograd.gradcheck(lambda t: t * 2, (x,), eps=1e-3, atol=1e-2,
                                          rtol=1e-2)
        assert any("not a double precision" in str(w.message) for w in caught)
        with warnings.catch_warnings():
            warnings.simplefilter("error")   # complex128 and float64 inputs: no warning
            y = lib.tensor(data(2, 3), requires_grad=True)
            z = lib.tensor(cdata(3), requires_grad=True)
            assert lib.autograd.gradcheck(lambda a, b: (a[0], a.t(), b.real, b[1:]), (y, z))


# ---------------------------------------------------------------- functional


def f_two(x, y):
    return (x * y).exp() + x.sin()


def f_scalar(x, y):
    return ((x ** 3) * y).sum() + (x * x).mean()


@pytest.mark.parametrize("create_graph", [False, True])
def test_jacobian_and_hessian_match_torch(create_graph):
    a, b = data(2, 3), data(3, seed=1)

    def program(lib):
        F = lib.autograd.functional
        x, y = lib.tensor(a), lib.tensor(b)
        single = F.jacobian(lambda t: t.tanh(), x, create_graph=create_graph)
        tuple_in = F.jacobian(f_two, (x, y), create_graph=create_graph)
        tuple_both = F.jacobian(lambda t: (t.exp(), t.sum()), x, create_graph=create_graph)
        hess = F.hessian(lambda t: (t ** 3).sum(), x, create_graph=create_graph)
        hess2 = F.hessian(f_scalar, (x, y), create_graph=create_graph)
        return single, tuple_in, tuple_both, hess, hess2

    both(program)


def test_vjp_jvp_vhp_hvp_match_torch():
    a, b, va, vb = data(2, 3), data(3, seed=1), data(2, 3, seed=2), data(3, seed=3)

    def program(lib):
        F = lib.autograd.functional
        x, y = lib.tensor(a), lib.tensor(b)
        v = lib.tensor(va)
        return (F.vjp(f_two, (x, y), v), F.vjp(lambda t: t.exp().sum(), x),
                F.jvp(f_two, (x, y), (v, lib.tensor(vb))), F.jvp(lambda t: t * t, x, v),
                F.vhp(f_scalar, (x, y), (v, lib.tensor(vb))), F.hvp(f_scalar, (x, y),
                                                                   (v, lib.tensor(vb))),
                F.hvp(lambda t: (t ** 3).sum(), x, v, create_graph=True)[1].requires_grad)

    both(program)


def test_functional_strict_and_errors():
    for lib in LIBS:
        F = lib.autograd.functional
        x = lib.tensor([1., 2.])
        with pytest.raises(RuntimeError, match="independent of input 1"):
            F.vjp(lambda a, b: a * 2, (x, x), lib.ones(2), strict=True)
        with pytest.raises(RuntimeError, match="can only be None"):
            F.vjp(lambda a: a * 2, x)
        with pytest.raises(RuntimeError, match="v has invalid size"):
            F.jvp(lambda a: a * 2, x, lib.ones(3))
        with pytest.raises(TypeError, match="must be either a Tensor or a tuple of Tensors"):
            F.jacobian(lambda a: 3, x)
        with pytest.raises(RuntimeError, match="single element"):
            F.hessian(lambda a: a * 2, x)

    def unused(lib):
        return lib.autograd.functional.jacobian(lambda a, b: a * 2,
                                                (lib.tensor([1., 2.]), lib.tensor([3.])))

    both(unused)


# ---------------------------------------------------------------- forward-mode AD


FORWARD_PROGRAMS = {
    "add_sub": lambda lib, x, y: x + y * 2 - x.neg(),
    "mul_div": lambda lib, x, y: x * y / (y * y + 1),
    "exp_log": lambda lib, x, y: (x.exp() + 1).log(),
    "sin_cos_tanh": lambda lib, x, y: x.sin() * y.cos() + (x * y).tanh(),
    "pow": lambda lib, x, y: (x * x + 1) ** (y * 0.5) + x ** 3,
    "sum_mean": lambda lib, x, y: (x * y).sum(1) + x.mean(0).sum(),
    "views": lambda lib, x, y: x.t().reshape(6).view(2, 3).permute(1, 0).expand(2, 3, 2),
}


@pytest.mark.parametrize("name", sorted(FORWARD_PROGRAMS))
def test_forward_ad_matches_torch(name):
    a, b, ta, tb = data(2, 3), data(2, 3, seed=1), data(2, 3, seed=2), data(2, 3, seed=3)

    def program(lib):
        fwAD = lib.autograd.forward_ad
        x, y = lib.tensor(a), lib.tensor(b)
        with fwAD.dual_level():
            dx = fwAD.make_dual(x, lib.tensor(ta))
            dy = fwAD.make_dual(y, lib.tensor(tb))
            out = FORWARD_PROGRAMS[name](lib, dx, dy)
            primal, tangent = fwAD.unpack_dual(out)
        return primal, tangent, fwAD.unpack_dual(out).tangent

    both(program)


def test_forward_ad_matmul_if_available():
    if not hasattr(ember, "matmul"):
        pytest.skip("ember.matmul is not implemented yet (linalg family)")
    a, b, ta = data(2, 3), data(3, 4, seed=1), data(2, 3, seed=2)

    def program(lib):
        fwAD = lib.autograd.forward_ad
        with fwAD.dual_level():
            d = fwAD.make_dual(lib.tensor(a), lib.tensor(ta))
            v = fwAD.make_dual(lib.tensor(b[:, 0]), lib.tensor(b[:, 1]))
            return [fwAD.unpack_dual(out).tangent for out in (
                lib.matmul(d, lib.tensor(b)), d @ v, lib.matmul(v, v), lib.matmul(v, d.t()))]

    both(program)


def test_forward_ad_errors_and_backward_through_tangent():
    for lib in LIBS:
        fwAD = lib.autograd.forward_ad
        x = lib.ones(3)
        with pytest.raises(RuntimeError, match="no level exists"):
            fwAD.make_dual(x, x)
        with fwAD.dual_level():
            with pytest.raises(RuntimeError, match="different size"):
                fwAD.make_dual(x, lib.ones(2))
            with pytest.raises(RuntimeError, match="Nested forward mode AD"):
                with fwAD.dual_level():
                    pass

    def program(lib):
        fwAD = lib.autograd.forward_ad
        x = lib.tensor([1., 2.], requires_grad=True)
        with fwAD.dual_level():
            d = fwAD.make_dual(x, lib.tensor([1., 1.]))
            t = fwAD.unpack_dual((d * d).sin()).tangent
        (g,) = lib.autograd.grad(t.sum(), x)
        return t, g

    both(program)


def test_gradcheck_forward_ad():
    for lib in LIBS:
        x = lib.tensor(data(3), requires_grad=True)
        assert lib.autograd.gradcheck(lambda t: (t * t).sin().exp(), (x,), check_forward_ad=True)


# ---------------------------------------------------------------- anomaly detection


def test_detect_anomaly_names_node_and_forward_line():
    for lib in LIBS:
        x = lib.zeros(1, requires_grad=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with lib.autograd.detect_anomaly():
                y = (x.sqrt() * 0).sum()   # the forward line the report must show
                with pytest.raises(RuntimeError) as info:
                    y.backward()
        assert str(info.value).startswith(
            "Function 'SqrtBackward0' returned nan values in its 0th output.")
        text = "\n".join(str(w.message) for w in caught)
        assert "Error detected in SqrtBackward0" in text
        assert "the forward line the report must show" in text


# ---------------------------------------------------------------- checkpoint


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_checkpoint_recomputes_and_matches_torch(use_reentrant):
    a, w = data(3, 4), data(4, seed=1)

    def program(lib):
        from importlib import import_module

        cp = import_module(f"{lib.__name__}.utils.checkpoint")
        calls = []

        def block(t, s):
            calls.append(1)
            return (t * s).sin().exp() * s

        x = lib.tensor(a, requires_grad=True)
        s = lib.tensor(w, requires_grad=True)
        y = cp.checkpoint(block, x, s, use_reentrant=use_reentrant)
        forward_calls = len(calls)
        (y.sum() * 2).backward()
        return y, x.grad, s.grad, forward_calls, len(calls)

    both(program)


def test_checkpoint_keeps_no_activations():
    from ember.utils.checkpoint import checkpoint

    kept = []

    def block(t):
        h = t.sin()
        kept.append(weakref.ref(h._data))
        return h * h       # mul saves both inputs

    x = ember.tensor(data(1000), requires_grad=True)
    y = checkpoint(block, x, use_reentrant=False)
    gc.collect()
    assert kept[0]() is None          # the activation was not kept by the graph
    y.sum().backward()
    expected = 2 * x.detach().sin() * x.detach().cos()
    assert_same(x.grad, torch.from_numpy(expected.numpy()))

    z = block(x)   # without checkpointing, mul's saved input keeps the data alive
    gc.collect()
    assert kept[-1]() is not None
    del z


def test_checkpoint_without_use_reentrant_warns():
    from ember.utils.checkpoint import checkpoint

    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed explicitly"):
        checkpoint(lambda t: t * 2, ember.ones(2, requires_grad=True))


# ---------------------------------------------------------------- memory and depth


def _count_nodes():
    from ember.autograd.graph import Node

    return sum(1 for o in gc.get_objects() if isinstance(o, Node))


def test_training_loop_memory_is_flat():
    w = ember.tensor(data(8, 4) * 0.1, requires_grad=True)
    x = ember.tensor(data(8, 4))
    gc.collect()
    before = _count_nodes()
    counts = []
    for step in range(10_000):
        if step == 9_000:
            gc.collect()
            counts.append(_count_nodes())
            tracemalloc.start()
            start = tracemalloc.get_traced_memory()[0]
        loss = (x * w).tanh().sum()
        loss.backward()
        w.grad = None
    gc.collect()
    grown = tracemalloc.get_traced_memory()[0] - start
    tracemalloc.stop()
    counts.append(_count_nodes())
    del loss
    gc.collect()
    assert counts[0] == counts[1] and counts[1] <= before + 4, (before, counts)
    assert _count_nodes() <= before + 1
    assert grown < 64 * 1024, grown   # the last 1,000 steps kept (almost) nothing


def test_deep_chain_backward_and_delete_without_recursion():
    limit = sys.getrecursionlimit()
    x = ember.ones(2, requires_grad=True)
    y = x
    gc.disable()   # building 100,000 nodes: spare the test the cyclic collector's passes
    try:
        for _ in range(100_000):
            y = y * 1.0
    finally:
        gc.enable()
    y.sum().backward(retain_graph=True)
    assert_same(x.grad, torch.ones(2))
    del y              # the whole graph (saved tensors included) goes away without recursion
    gc.collect()
    assert sys.getrecursionlimit() == limit
    assert _count_nodes() < 10


def test_function_jvp_in_forward_ad():
    a, ta = data(4), data(4, seed=1)

    def program(lib):
        class Square(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_forward(x)
                return x * x

            @staticmethod
            def backward(ctx, g):
                raise AssertionError("not used")

            @staticmethod
            def jvp(ctx, t):
                (x,) = ctx.saved_tensors
                return 2 * x * t

        fwAD = lib.autograd.forward_ad
        with fwAD.dual_level():
            d = fwAD.make_dual(lib.tensor(a), lib.tensor(ta))
            return fwAD.unpack_dual(Square.apply(d).sin())

    both(program)


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_checkpoint_replays_random_numbers_like_torch(use_reentrant):
    from ember.utils.checkpoint import checkpoint

    def block(t):
        return ember.nn.functional.dropout(t.sin(), p=0.5, training=True) * t

    x = ember.randn(50, requires_grad=True)
    ember.manual_seed(7)
    block(x).sum().backward()
    expected = x.grad.clone()
    x.grad = None
    ember.manual_seed(7)
    checkpoint(block, x, use_reentrant=use_reentrant).sum().backward()
    assert x.grad.tolist() == expected.tolist()
