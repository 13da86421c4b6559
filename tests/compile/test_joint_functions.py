"""Custom ``autograd.Function``s inside the joint forward-backward graph
(``_inductor/joint.py``): their forward's and backward's operators are traced into the
forward and backward graphs, as torch.compile traces them. Gradients against eager ember,
eager torch and ``torch.compile(backend="aot_eager")`` with the same Function written in
torch; Functions the trace cannot record fall back to the replay with autograd and say why
under ``EMBER_LOGS=aot``."""

import logging

import numpy as np
import pytest
import torch
import torch._dynamo

import ember
from conftest import assert_same

pytestmark = pytest.mark.usefixtures("fresh_compile_state")


# ---------------------------------------------------------------- the Functions, per library


def straight_through(lib):
    class RoundSTE(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.round()

        @staticmethod
        def backward(ctx, grad):
            return grad
    return lambda h, w: RoundSTE.apply(h * 3) * w.sum()


def clamp_saving_input(lib):
    class Clamp(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, low, high):
            ctx.save_for_backward(x)
            ctx.low, ctx.high = low, high
            return x.clamp(low, high)

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            inside = (x >= ctx.low) & (x <= ctx.high)
            return grad * inside, None, None
    return lambda h, w: Clamp.apply(h, -0.5, 0.7) * w.sum()


def two_outputs(lib):
    class SinAndScaledCos(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            ctx.save_for_backward(x, w)
            return x.sin(), x.cos() * w

        @staticmethod
        def backward(ctx, grad_sin, grad_cos):
            x, w = ctx.saved_tensors
            grad_x = grad_sin * x.cos() - grad_cos * x.sin() * w
            grad_w = (grad_cos * x.cos()).sum(0)
            return grad_x, grad_w

    def f(h, w):
        s, c = SinAndScaledCos.apply(h, w)
        return s * 2 + c
    return f


def needs_input_grad(lib):
    class Product(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            ctx.save_for_backward(x, w)
            return x * w

        @staticmethod
        def backward(ctx, grad):
            x, w = ctx.saved_tensors
            grad_x = grad * w if ctx.needs_input_grad[0] else None
            grad_w = (grad * x).sum(0) if ctx.needs_input_grad[1] else None
            return grad_x, grad_w
    return lambda h, w: Product.apply(h, w)


def once_differentiable(lib):
    class Cube(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        @lib.autograd.function.once_differentiable
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return 3 * x * x * grad
    return lambda h, w: Cube.apply(h) * w


def non_tensor_on_ctx(lib):
    class Scale(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, factor):
            ctx.factor = factor
            ctx.rows = x.shape[0]
            return x * factor

        @staticmethod
        def backward(ctx, grad):
            return grad * ctx.factor / ctx.rows, None
    return lambda h, w: Scale.apply(h, 2.5) * w


def non_differentiable_indices(lib):
    class MaxWithIndex(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            values, indices = x.max(dim=1)
            ctx.mark_non_differentiable(indices)
            ctx.save_for_backward(indices)
            ctx.width = x.shape[1]
            return values, indices

        @staticmethod
        def backward(ctx, grad, _):
            (indices,) = ctx.saved_tensors
            spread = lib.zeros(grad.shape[0], ctx.width, dtype=grad.dtype)
            return spread.scatter(1, indices.unsqueeze(1), grad.unsqueeze(1))

    def f(h, w):
        values, indices = MaxWithIndex.apply(h * w)
        return h * (values * (indices + 1)).unsqueeze(1)
    return f


def setup_context_style(lib):
    class Softsign(lib.autograd.Function):
        @staticmethod
        def forward(x):
            return x / (1 + x.abs())

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad / (1 + x.abs()) ** 2
    return lambda h, w: Softsign.apply(h) * w


TRACED = [straight_through, clamp_saving_input, two_outputs, needs_input_grad,
          once_differentiable, non_tensor_on_ctx, non_differentiable_indices,
          setup_context_style]


def _model(lib, body):
    """``body(lib)`` between two layers: a parameter before it, one inside it, one after."""
    rng = np.random.default_rng(0)
    first = rng.standard_normal((5, 4)).astype(np.float32) * 0.5
    middle = rng.standard_normal(4).astype(np.float32)
    last = rng.standard_normal((4, 3)).astype(np.float32) * 0.5
    params = [lib.tensor(a, requires_grad=True) for a in (first, middle, last)]
    fn = body(lib)

    def step(x):
        h = fn(x @ params[0], params[1])
        return (h.tanh() @ params[2]).sum()
    return step, params


def _inputs(lib, calls=3):
    rng = np.random.default_rng(1)
    return [lib.tensor(rng.standard_normal((6, 5)).astype(np.float32), requires_grad=True)
            for _ in range(calls)]


def _gradients(step, params, x):
    loss = step(x)
    loss.backward()
    grads = [x.grad] + [p.grad for p in params]
    x.grad = None
    for p in params:
        p.grad = None
    return loss, grads


@pytest.mark.parametrize("body", TRACED, ids=lambda b: b.__name__)
def test_traceable_functions_train_in_the_joint_graph_with_eager_and_torch_gradients(body):
    e_step, e_params = _model(ember, body)
    compiled = ember.compile(e_step)
    t_step, t_params = _model(torch, body)
    t_compiled = torch.compile(t_step, backend="aot_eager")
    for call, (x, tx) in enumerate(zip(_inputs(ember), _inputs(torch))):
        loss, grads = _gradients(compiled, e_params, x)
        # the first call is the capture's eager run
        assert call == 0 or loss.grad_fn.name() == "CompiledFunctionBackward"
        eager_loss, eager_grads = _gradients(e_step, e_params, x)
        t_loss, t_grads = _gradients(t_step, t_params, tx)
        tc_loss, tc_grads = _gradients(t_compiled, t_params, tx)
        assert_same(loss, t_loss, rtol=1e-5, atol=1e-5)
        for got, eager, want, want_compiled in zip(grads, eager_grads, t_grads, tc_grads):
            np.testing.assert_allclose(got.numpy(), eager.numpy(), rtol=1e-5, atol=1e-6)
            assert_same(got, want, rtol=1e-5, atol=1e-5)
            assert_same(got, want_compiled, rtol=1e-5, atol=1e-5)


def test_needs_input_grad_follows_which_inputs_require_grad():
    # a variant per requires_grad pattern: the one without the input's gradient skips it
    e_step, e_params = _model(ember, needs_input_grad)
    t_step, t_params = _model(torch, needs_input_grad)
    compiled = ember.compile(e_step)
    (x,), (tx,) = _inputs(ember, 1), _inputs(torch, 1)
    x.requires_grad_(False)
    tx.requires_grad_(False)
    compiled(x)
    loss = compiled(x)
    assert loss.grad_fn.name() == "CompiledFunctionBackward"
    loss.backward()
    t_step(tx).backward()
    assert x.grad is None
    for p, tp in zip(e_params, t_params):
        assert_same(p.grad, tp.grad, rtol=1e-5, atol=1e-5)


def test_double_backward_through_a_traced_function_matches_torch():
    class Cube(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return 3 * x * x * grad

    x = ember.tensor([0.5, -1.0, 2.0], requires_grad=True)
    compiled = ember.compile(lambda x: Cube.apply(x * 1.5).sum())
    compiled(x)
    loss = compiled(x)
    assert loss.grad_fn.name() == "CompiledFunctionBackward"
    (g,) = ember.autograd.grad(loss, x, create_graph=True)
    (gg,) = ember.autograd.grad(g.sum(), x)
    tx = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
    (tg,) = torch.autograd.grad(((tx * 1.5) ** 3).sum(), tx, create_graph=True)
    (tgg,) = torch.autograd.grad(tg.sum(), tx)
    assert_same(g, tg, rtol=1e-6, atol=1e-6)
    assert_same(gg, tgg, rtol=1e-6, atol=1e-6)



# ---------------------------------------------------------------- what falls back, and why


def _reads_item(lib):
    class DataDependent(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2 if x.sum().item() > 0 else x * 3

        @staticmethod
        def backward(ctx, grad):
            return grad * 2
    return DataDependent


def _numpy_in_backward(lib):
    class NumpyBackward(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @lib.autograd.function.once_differentiable
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return lib.tensor(2 * x.detach().numpy() * grad.numpy())
    return NumpyBackward


def _random_in_forward(lib):
    class StochasticRound(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return (x + lib.rand_like(x) - 0.5).round()

        @staticmethod
        def backward(ctx, grad):
            return grad
    return StochasticRound


def _writes_input(lib):
    class AddOneInPlace(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad
    return AddOneInPlace


def _one_hot_in_forward(lib):
    class KeepLargest(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            # one_hot is computed on arrays, outside ember's operators: the trace would
            # keep this call's mask
            mask = lib.nn.functional.one_hot(x.argmax(), x.shape[0]).to(x.dtype)
            ctx.save_for_backward(mask)
            return x * mask

        @staticmethod
        def backward(ctx, grad):
            (mask,) = ctx.saved_tensors
            return grad * mask
    return KeepLargest


def _one_hot_in_backward(lib):
    class KeepLargestLate(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 1

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * lib.nn.functional.one_hot(x.argmax(), x.shape[0]).to(x.dtype)
    return KeepLargestLate


def _prints(lib):
    class Noisy(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            print("forward ran")
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 2
    return Noisy


FALLBACKS = [(_reads_item, "a tensor was read as a Python number while tracing in "
                           "DataDependent.forward ("),
             (_numpy_in_backward, "Tensor.numpy() in NumpyBackward.backward ("),
             (_writes_input, "AddOneInPlace.forward writes into an input in place"),
             (_one_hot_in_forward, "KeepLargest.forward read a tensor computed outside "
                                   "ember's operators"),
             (_one_hot_in_backward, "the backward read a tensor computed outside ember's "
                                    "operators"),
             (_prints, "print() in Noisy.forward (")]


@pytest.mark.parametrize("make, reason", FALLBACKS, ids=lambda v: getattr(v, "__name__", ""))
def test_untraceable_functions_fall_back_with_a_reason_and_eager_gradients(
        make, reason, caplog, monkeypatch, capsys):
    monkeypatch.setenv("EMBER_LOGS", "aot")

    def step_of(lib):
        function = make(lib)
        w = lib.tensor([0.5, -1.5, 2.0], requires_grad=True)
        return (lambda x: function.apply(x * w).sin().sum()), w

    step, w = step_of(ember)
    t_step, tw = step_of(torch)
    compiled = ember.compile(step)
    with caplog.at_level(logging.INFO, logger="ember._dynamo"):
        for seed in range(2):
            x = ember.tensor(np.random.default_rng(seed).standard_normal(3).astype(np.float32))
            tx = torch.from_numpy(x.numpy().copy())
            loss = compiled(x)
            assert loss.grad_fn is not None and \
                loss.grad_fn.name() != "CompiledFunctionBackward"
            loss.backward()
            t_step(tx).backward()
            assert_same(w.grad, tw.grad, rtol=1e-5, atol=1e-6)
            w.grad, tw.grad = None, None
    messages = [r.getMessage() for r in caplog.records]
    assert any("no joint forward-backward graph" in m and reason in m for m in messages), \
        messages


def test_a_function_drawing_random_numbers_breaks_the_capture_and_draws_as_eager():
    function = _random_in_forward(ember)
    w = ember.tensor([0.5, -1.5, 2.0], requires_grad=True)

    def step(x):
        return function.apply(x * w).sum()

    compiled = ember.compile(step)
    x = ember.tensor([0.3, 0.6, 0.9])
    for seed in range(3):
        ember.manual_seed(seed)
        got = compiled(x)
        ember.manual_seed(seed)
        want = step(x)
        assert got.item() == want.item()


# ---------------------------------------------------------------- backward hooks: the replay


def _hooked_model(lib, seen):
    """An MLP whose middle layer has full backward hooks (one scales the input gradient,
    one records the output gradient) and a backward pre-hook."""
    nn = lib.nn
    rng = np.random.default_rng(3)
    model = nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 4), nn.Sigmoid(),
                          nn.Linear(4, 2))
    for p in model.parameters():
        p.data = lib.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32) * 0.5)

    def record(module, grad_input, grad_output):
        seen.append(("hook", grad_output[0].detach().numpy().copy()))
        return (grad_input[0] * 3,)

    def record_pre(module, grad_output):
        seen.append(("pre", grad_output[0].detach().numpy().copy()))
    model[2].register_full_backward_hook(record)
    model[2].register_full_backward_pre_hook(record_pre)
    return model


def test_module_backward_hooks_fall_back_and_run_once_per_backward_as_torch(
        caplog, monkeypatch):
    monkeypatch.setenv("EMBER_LOGS", "aot")
    seen, t_seen, tc_seen = [], [], []
    model, t_model = _hooked_model(ember, seen), _hooked_model(torch, t_seen)
    compiled = ember.compile(model)
    tc_model = _hooked_model(torch, tc_seen)
    t_compiled = torch.compile(tc_model, backend="aot_eager")
    rng = np.random.default_rng(4)
    with caplog.at_level(logging.INFO, logger="ember._dynamo"):
        for _ in range(3):
            array = rng.standard_normal((6, 5)).astype(np.float32)
            x = ember.tensor(array, requires_grad=True)
            tx = torch.from_numpy(array.copy()).requires_grad_(True)
            txc = torch.from_numpy(array.copy()).requires_grad_(True)
            compiled(x).sum().backward()
            t_model(tx).sum().backward()
            t_compiled(txc).sum().backward()
            assert_same(x.grad, tx.grad, rtol=1e-5, atol=1e-6)
            assert_same(x.grad, txc.grad, rtol=1e-5, atol=1e-6)
            for p, tp in zip(model.parameters(), t_model.parameters()):
                assert_same(p.grad, tp.grad, rtol=1e-5, atol=1e-6)
            model.zero_grad(), t_model.zero_grad(), tc_model.zero_grad()
    # each backward ran the pre-hook and the hook once, with torch's gradients (the joint
    # trace did not run them)
    assert [kind for kind, _ in seen] == [kind for kind, _ in t_seen] == \
        [kind for kind, _ in tc_seen] == ["pre", "hook"] * 3
    for (_, got), (_, want) in zip(seen, t_seen):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert any("backward hooks" in r.getMessage() for r in caplog.records)


def _row_mean(lib):
    class RowMean(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.rows = x.shape[0]
            return x.sum(0) / x.shape[0]

        @staticmethod
        def backward(ctx, grad):
            return grad.expand(ctx.rows, -1) / ctx.rows
    return RowMean


@pytest.mark.parametrize("dynamic", [False, True])
def test_an_apply_bound_before_the_capture_is_recorded_as_the_function(dynamic):
    # a default argument holds the bound method: before, capture did not see the call, its
    # forward's operators were traced as plain no-grad ones and the output lost its grad
    e_mean, t_mean = _row_mean(ember).apply, _row_mean(torch).apply
    w = ember.tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3),
                     requires_grad=True)
    tw = torch.from_numpy(w.detach().numpy().copy()).requires_grad_(True)

    def step(x, w, mean=e_mean):
        return (mean((x @ w).tanh()) ** 2).sum()

    compiled = ember.compile(step, dynamic=dynamic)
    for seed, size in enumerate([4, 5, 6, 7, 3, 6]):
        array = np.random.default_rng(seed).standard_normal((size, 4)).astype(np.float32)
        loss = compiled(ember.tensor(array), w)
        loss.backward()
        step(torch.from_numpy(array), tw, t_mean).backward()
        assert_same(w.grad, tw.grad, rtol=1e-5, atol=1e-6)
        w.grad, tw.grad = None, None
    assert loss.grad_fn.name() == "CompiledFunctionBackward"
