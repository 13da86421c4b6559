"""ember.compile's fast path for a call (guards.FastGuard, CompiledFunction's last static hit):
it must accept exactly the calls whose full guard key equals the cached variant's. Checked two
ways: the fast guard's answer against the key's for calls that change one guarded thing each,
and sequences of calls (each repeated, so the second one takes the fast path) whose results,
gradients and frame counts are compared with eager ember and torch.compile."""

import logging

import numpy as np
import pytest
import torch

import ember
from conftest import assert_same
from ember._inductor import guards

pytestmark = pytest.mark.usefixtures("fresh_compile_state")


def _values(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _frames(counters):
    return dict(counters["frames"])


# ---------------------------------------------------------------- the guard against the key


def _variants():
    """Calls of a two-tensor function, each differing from the first in one guarded way."""
    x, y = ember.tensor(_values((2, 3))), ember.tensor(_values((2, 3), 1))
    return {
        "same": lambda: (x, y),
        "other tensors, same metadata": lambda: (ember.tensor(_values((2, 3), 2)),
                                                  ember.tensor(_values((2, 3), 3))),
        "shape": lambda: (ember.tensor(_values((3, 3))), y),
        "dtype": lambda: (x.double(), y),
        "requires_grad": lambda: (x.detach().requires_grad_(), y),
        "a view of a tensor requiring grad": lambda: (
            ember.tensor(_values((2, 3)), requires_grad=True)[:], y),
        "strides": lambda: (ember.tensor(_values((3, 2))).t(), y),
        "aliasing": lambda: (x, x),
        "subclass": lambda: (ember.nn.Parameter(x.clone()), y),
        "one argument fewer": lambda: (x,),
        "a non-tensor argument": lambda: (x, 2.0),
    }


@pytest.mark.parametrize("variant", sorted(_variants()))
def test_the_fast_guard_accepts_exactly_the_calls_of_an_equal_key(variant):
    variants = _variants()
    key, _ = guards.call_key(variants["same"](), {}, ())
    guard = guards.FastGuard.of(key, "entry", (), None)
    args = variants[variant]()
    assert guard.matches(args) == (guards.call_key(args, {}, ())[0] == key)
    assert guard.matches(args) == (variant in ("same", "other tensors, same metadata"))


@pytest.mark.parametrize("change", ["grad mode", "autocast", "default dtype"])
def test_the_fast_guard_checks_the_modes(change):
    x = ember.ones(2)
    key, _ = guards.call_key((x,), {}, ())
    guard = guards.FastGuard.of(key, "entry", (), None)
    assert guard.matches((x,))
    if change == "grad mode":
        context = ember.no_grad()
    elif change == "autocast":
        context = ember.autocast("cpu")
    else:
        context = _default_dtype(ember.float64)
    with context:
        assert guards.call_key((x,), {}, ())[0] != key
        assert not guard.matches((x,))
    assert guard.matches((x,))


class _default_dtype:
    def __init__(self, dtype):
        self.dtype = dtype

    def __enter__(self):
        self.saved = ember.get_default_dtype()
        ember.set_default_dtype(self.dtype)

    def __exit__(self, *exc):
        ember.set_default_dtype(self.saved)


@pytest.mark.parametrize("kind", ["keywords", "a container", "an empty tensor", "aliasing"])
def test_keys_of_other_kinds_have_no_fast_guard(kind):
    x = ember.ones(2)
    args, kwargs = {"keywords": ((), {"x": x}), "a container": (([x],), {}),
                    "an empty tensor": ((ember.ones(0),), {}),
                    "aliasing": ((x, x), {})}[kind]
    key, _ = guards.call_key(args, kwargs, ())
    assert guards.FastGuard.of(key, "entry", (), None) is None


def test_a_compiled_function_takes_the_fast_path_on_a_repeated_call():
    f = ember.compile(lambda x: x * 2 + 1)
    x = ember.ones(16)
    f(x)
    f(x)
    assert f._fast is not None and f._fast.matches((x,))
    assert_same(f(x), torch.ones(16) * 2 + 1)


def _module_changes():
    def set_data(m):
        with ember.no_grad():
            m.weight.data = ember.ones(4, 3).t()  # same shape, transposed strides
    return {
        "nothing": lambda m: None,
        "p.data = a transposed array": set_data,
        "a parameter assigned": lambda m: setattr(m, "weight", ember.nn.Parameter(
            ember.ones(3, 4))),
        "the parameters dict written": lambda m: m._parameters.__setitem__(
            "bias", ember.nn.Parameter(ember.zeros(3))),
        "the training flag": lambda m: m.eval(),
        "a forward hook": lambda m: m.register_forward_hook(lambda *a: None),
        "a buffer registered": lambda m: m.register_buffer("extra", ember.ones(1)),
        "a plain attribute": lambda m: setattr(m, "in_features", 5),
    }


@pytest.mark.parametrize("change", sorted(_module_changes()))
def test_the_cached_module_state_is_reread_after_each_change(change):
    model = ember.nn.Linear(4, 3)
    modules = guards.GuardedModules(model.modules())
    before = modules.state()
    assert modules.state() is before
    _module_changes()[change](model)
    after = modules.state()
    assert after == guards.StateToken.of(guards.module_state(tuple(model.modules())))
    assert (after is before) == (change == "nothing")


# ---------------------------------------------------------------- call sequences against torch


def _compare(source, calls, backend="inductor", training=False):
    """Run ``source``'s ``f`` compiled by ember (``backend``) and by torch (eager backend) and
    eagerly on ember, calling each twice in a row (the second call takes the fast path);
    results (and, ``training``, the inputs' gradients) and frame counts must agree."""
    e_scope, t_scope = {"torch": ember}, {"torch": torch}
    exec(source, e_scope)
    exec(source, t_scope)
    e_compiled = ember.compile(e_scope["f"], backend=backend)
    t_compiled = torch.compile(t_scope["f"], backend="eager")
    for call in calls:
        for _ in range(2):
            e_args, eager_args, t_args = call(ember), call(ember), call(torch)
            got, eager, expected = e_compiled(*e_args), e_scope["f"](*eager_args), \
                t_compiled(*t_args)
            assert_same(got, expected, rtol=1e-5, atol=1e-6)
            assert_same(eager, expected, rtol=1e-5, atol=1e-6)
            if training:
                got.sum().backward()
                expected.sum().backward()
                for e, t in zip(e_args, t_args):
                    if t.requires_grad:
                        assert_same(e.grad, t.grad, rtol=1e-5, atol=1e-6)
    assert _frames(ember._dynamo.utils.counters) == _frames(torch._dynamo.utils.counters)


def _tensor(shape, seed=0, requires_grad=False, dtype=np.float32, transposed=False):
    def make(lib):
        values = _values(shape[::-1] if transposed else shape, seed).astype(dtype)
        t = lib.tensor(values)
        t = t.t() if transposed else t
        return t.requires_grad_() if requires_grad else t
    return make


def _args(*makers):
    return lambda lib: tuple(make(lib) for make in makers)


@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_pointwise_calls_changing_one_guard_at_a_time(backend):
    _compare("def f(x): return x * 2 + 1", [
        _args(_tensor((16,))),
        _args(_tensor((16,), seed=1)),
        _args(_tensor((8,))),
        _args(_tensor((16,), dtype=np.float64)),
        _args(_tensor((2, 3))),
        _args(_tensor((2, 3), transposed=True)),
        _args(_tensor((16,))),
    ], backend=backend)


def test_calls_switching_requires_grad_train_like_torch():
    _compare("def f(x, y): return (x * y).sin() + x", [
        _args(_tensor((4, 3)), _tensor((4, 3), 1)),
        _args(_tensor((4, 3), requires_grad=True), _tensor((4, 3), 1)),
        _args(_tensor((4, 3)), _tensor((4, 3), 1, requires_grad=True)),
        _args(_tensor((4, 3), requires_grad=True), _tensor((4, 3), 1)),
    ], training=False)
    ember._dynamo.reset()
    torch._dynamo.reset()
    ember._dynamo.utils.counters.clear()
    torch._dynamo.utils.counters.clear()
    _compare("def f(x, y): return (x * y).sin() + x", [
        _args(_tensor((4, 3), requires_grad=True), _tensor((4, 3), 1)),
        _args(_tensor((4, 3), requires_grad=True), _tensor((4, 3), 1, requires_grad=True)),
    ], training=True)


def test_the_same_tensor_passed_twice_after_two_distinct_ones():
    x = ember.tensor(_values((3,)))
    t = torch.from_numpy(_values((3,)))
    y, u = ember.tensor(_values((3,), 1)), torch.from_numpy(_values((3,), 1))
    e_f = ember.compile(lambda a, b: a * 2 + b, backend="inductor")
    t_f = torch.compile(lambda a, b: a * 2 + b, backend="eager")
    for e_args, t_args in [((x, y), (t, u))] * 2 + [((x, x), (t, t))] * 2 + [((x, y), (t, u))]:
        assert_same(e_f(*e_args), t_f(*t_args))
    assert _frames(ember._dynamo.utils.counters) == _frames(torch._dynamo.utils.counters)


def test_grad_mode_switches_between_fast_calls():
    e_f = ember.compile(lambda x: x * 3)
    t_f = torch.compile(lambda x: x * 3, backend="eager")
    x = ember.ones(4, requires_grad=True)
    t = torch.ones(4, requires_grad=True)
    for no_grad in (False, False, True, True, False):
        if no_grad:
            with ember.no_grad(), torch.no_grad():
                got, expected = e_f(x), t_f(t)
        else:
            got, expected = e_f(x), t_f(t)
        assert got.requires_grad == expected.requires_grad
        assert_same(got.detach(), expected.detach())
    assert _frames(ember._dynamo.utils.counters) == _frames(torch._dynamo.utils.counters)


def test_a_replaced_global_tensor_is_read_by_the_fast_path():
    scope = {}
    exec("def f(x): return x * w", scope)
    scope["w"] = ember.full((2,), 2.0)
    f = ember.compile(scope["f"])
    x = ember.ones(2)
    assert_same(f(x), torch.full((2,), 2.0))
    assert_same(f(x), torch.full((2,), 2.0))
    scope["w"] = ember.full((2,), 5.0)  # another object: the guard holds the identity
    assert_same(f(x), torch.full((2,), 5.0))
    scope["w"] = ember.full((3,), 1.0)  # another layout too: broadcasting fails as in eager
    with pytest.raises(RuntimeError):
        f(x)
    with pytest.raises(RuntimeError):
        scope["f"](x)


def test_the_cache_limit_holds_with_the_fast_path(caplog):
    f = ember.compile(lambda x: x + 1, recompile_limit=2, dynamic=False)
    with caplog.at_level(logging.WARNING):
        for size in (2, 2, 3, 3, 4, 4, 2, 2, 3, 4):
            assert_same(f(ember.zeros(size)), torch.ones(size))
    assert ember._dynamo.utils.counters["stats"]["unique_graphs"] == 2
    assert "hit config.recompile_limit (2)" in caplog.text


def _linear_pair(bias=True):
    e, t = ember.nn.Linear(4, 3, bias=bias), torch.nn.Linear(4, 3, bias=bias)
    with ember.no_grad(), torch.no_grad():
        for ep, tp in zip(e.parameters(), t.parameters()):
            values = _values(tuple(ep.shape), ep.numel())
            ep.copy_(ember.tensor(values))
            tp.copy_(torch.from_numpy(values))
    return e, t


def _step(model, lib, seed=5, shape=(2, 4), grad=True):
    x = lib.tensor(_values(shape, seed))
    if not grad:
        with lib.no_grad():
            return model(x)
    out = model(x)
    out.sum().backward()
    return out


def _assert_grads(e_model, t_model):
    for (name, ep), tp in zip(e_model.named_parameters(), t_model.parameters()):
        if tp.grad is None:
            assert ep.grad is None, name
        else:
            assert_same(ep.grad, tp.grad, rtol=1e-5, atol=1e-6)
        ep.grad, tp.grad = None, None


def test_a_compiled_linear_under_module_changes_matches_torch():
    e_model, t_model = _linear_pair()
    compiled = ember.compile(e_model)
    t_compiled = torch.compile(t_model, backend="eager")

    def both(grad=True, shape=(2, 4)):
        for _ in range(2):
            assert_same(_step(compiled, ember, grad=grad, shape=shape),
                        _step(t_compiled, torch, grad=grad, shape=shape), rtol=1e-5, atol=1e-6)
            _assert_grads(e_model, t_model)

    both(grad=False)
    both()
    e_model.eval(), t_model.eval()
    both()
    e_model.train(), t_model.train()
    both()
    e_model.weight.requires_grad_(False), t_model.weight.requires_grad_(False)
    both()
    e_model.weight.requires_grad_(True), t_model.weight.requires_grad_(True)
    both()
    values = _values((4, 3), 9)  # the same shape by a transposed array: layout guard
    with ember.no_grad(), torch.no_grad():
        e_model.weight.data = ember.tensor(values).t()
        t_model.weight.data = torch.from_numpy(values).t()
    both()
    e_model.weight = ember.nn.Parameter(ember.ones(3, 4))
    t_model.weight = torch.nn.Parameter(torch.ones(3, 4))
    both()
    e_model._parameters["bias"] = ember.nn.Parameter(ember.zeros(3))
    t_model._parameters["bias"] = torch.nn.Parameter(torch.zeros(3))
    both()
    both(shape=(5, 4))


def test_a_forward_hook_added_after_fast_calls_runs():
    # ember guards forward hooks (torch.compile skips hook guards by default and keeps
    # the hookless graph), so the reference here is torch's eager module
    e_model, t_model = _linear_pair()
    compiled = ember.compile(e_model)
    for _ in range(2):
        assert_same(_step(compiled, ember, grad=False), _step(t_model, torch, grad=False))
    e_model.register_forward_hook(lambda m, i, o: o * 10)
    t_model.register_forward_hook(lambda m, i, o: o * 10)
    for _ in range(2):
        assert_same(_step(compiled, ember, grad=False), _step(t_model, torch, grad=False),
                    rtol=1e-5, atol=1e-5)


def test_a_parameter_unfrozen_after_fast_training_calls_gets_its_gradient():
    # a parameter's requires_grad is not in the guard key: the compiled training graph
    # itself must notice that one it traced as frozen now wants a gradient
    e_model, t_model = _linear_pair()
    e_model.weight.requires_grad_(False), t_model.weight.requires_grad_(False)
    compiled = ember.compile(e_model)
    t_compiled = torch.compile(t_model, backend="eager")
    for frozen in (True, True, False, False, True):
        e_model.weight.requires_grad_(not frozen), t_model.weight.requires_grad_(not frozen)
        assert_same(_step(compiled, ember), _step(t_compiled, torch), rtol=1e-5, atol=1e-6)
        _assert_grads(e_model, t_model)


def test_a_captured_view_follows_its_bases_requires_grad_as_torch_does():
    # a view made before its base required grad then requires grad too, with no link to
    # the base (a leaf of its own): the compiled training graph must see the change
    def make(lib):
        base = lib.from_numpy(_values((2, 3)))
        view = base[0]
        return base, view, lambda x: (x * view).sum()

    e_base, e_view, e_fn = make(ember)
    t_base, t_view, t_fn = make(torch)
    compiled = ember.compile(e_fn)
    for base_wants_grad in (False, False, True, True):
        e_base.requires_grad_(base_wants_grad), t_base.requires_grad_(base_wants_grad)
        e_view.grad = t_view.grad = None
        ex = ember.from_numpy(_values((3,), 1)).requires_grad_()
        tx = torch.from_numpy(_values((3,), 1)).requires_grad_()
        compiled(ex).backward()
        t_fn(tx).backward()
        assert e_view.requires_grad == t_view.requires_grad
        assert_same(ex.grad, tx.grad)
        assert e_base.grad is None and t_base.grad is None
        if t_view.grad is None:
            assert e_view.grad is None
        else:
            assert_same(e_view.grad, t_view.grad)
