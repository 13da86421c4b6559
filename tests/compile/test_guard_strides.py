"""ember.compile guards each tensor argument's strides (view operators replay the strides they
were traced with): inputs of one shape in other layouts (transposed, channels_last, expanded,
sliced with a step, offset into their storage, aliasing another argument) are compared, call
by call, with eager ember and with torch.compile(backend="eager"), and the number of frames
compiled with torch's count."""

import numpy as np
import pytest
import torch

import ember
from conftest import assert_same

pytestmark = pytest.mark.usefixtures("fresh_compile_state")

BACKENDS = ("eager", "aot_eager", "inductor")


def _values(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _layout(lib, kind, rows=2, cols=3, seed=0):
    """A (rows, cols) tensor of ``lib`` in layout ``kind``, its values from ``seed``."""
    if kind == "plain":
        return lib.tensor(_values((rows, cols), seed))
    if kind == "transposed":  # strides (1, rows)
        return lib.tensor(_values((cols, rows), seed)).t()
    if kind == "offset":  # contiguous strides, storage offset 1
        return lib.tensor(_values((rows * cols + 1,), seed))[1:].view(rows, cols)
    if kind == "expanded":  # a 0 stride
        return lib.tensor(_values((cols,), seed)).expand(rows, cols)
    if kind == "stepped":  # a gap: every other column
        return lib.tensor(_values((rows, 2 * cols), seed))[:, ::2]
    raise ValueError(kind)


def _frames(counters):
    return dict(counters["frames"])


def _compare(source, calls, backend="eager", dynamic=None):
    """Run ``source``'s ``f`` compiled by ember and by torch, and eagerly on ember, for each
    call's arguments (``call(lib)``); every result must agree, and so must the frame counts."""
    e_scope, t_scope = {"torch": ember}, {"torch": torch}
    exec(source, e_scope)
    exec(source, t_scope)
    e_compiled = ember.compile(e_scope["f"], backend=backend, dynamic=dynamic)
    t_compiled = torch.compile(t_scope["f"], backend="eager", dynamic=dynamic)
    for call in calls:
        got, eager, expected = e_compiled(*call(ember)), e_scope["f"](*call(ember)), \
            t_compiled(*call(torch))
        assert_same(got, expected)
        assert_same(eager, expected)
    assert _frames(ember._dynamo.utils.counters) == _frames(torch._dynamo.utils.counters)


def _one(kind, **sizes):
    return lambda lib: (_layout(lib, kind, **sizes),)


def test_the_reported_transposed_reshape():
    f = ember.compile(lambda x: x.reshape(-1) * 2)
    f(ember.arange(6.0).reshape(2, 3))
    x = ember.arange(6.0).reshape(3, 2).t()
    t = torch.arange(6.0).reshape(3, 2).t()
    assert_same(f(x), t.reshape(-1) * 2)


VIEW_FUNCTIONS = {
    "reshape": "def f(x): return x.reshape(-1) * 2",
    "view chain": "def f(x): return (x.t().reshape(-1) + 1).view(3, 2)",
    "contiguous then view": "def f(x): return x.contiguous().view(-1) * 2",
    "flatten, slice, squeeze": "def f(x):\n"
                               "    y = x.unsqueeze(0).squeeze(0).reshape(3, 2)\n"
                               "    return x.flatten()[1:4].sum() + y[0]",
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(VIEW_FUNCTIONS))
def test_views_of_inputs_in_other_layouts(name, backend):
    kinds = ("plain", "transposed", "offset", "expanded", "stepped", "plain", "transposed")
    _compare(VIEW_FUNCTIONS[name], [_one(k, seed=i) for i, k in enumerate(kinds)], backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_storage_offset_reuses_the_graph_as_torch(backend):
    calls = [_one("plain"), _one("offset", seed=1), _one("offset", seed=2)]
    _compare(VIEW_FUNCTIONS["reshape"], calls, backend)
    assert _frames(ember._dynamo.utils.counters)["total"] == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_recompiles_log_names_the_stride(backend, monkeypatch, caplog):
    monkeypatch.setenv("EMBER_LOGS", "recompiles")
    f = ember.compile(lambda x: x.reshape(-1) * 2, backend=backend)
    f(_layout(ember, "plain"))
    with caplog.at_level("INFO", logger="ember._dynamo"):
        f(_layout(ember, "transposed"))
    t = torch.compile(lambda x: x.reshape(-1) * 2, backend="eager")
    t(_layout(torch, "plain"))
    t(_layout(torch, "transposed"))
    torch_reason = next(iter(torch._dynamo.utils.guard_failures.values()))[-1]
    words = torch_reason.split("tensor 'x' ")[1]  # "stride mismatch at index 0. expected ..."
    assert f"tensor argument 0: {words}" in caplog.text
    assert sum(ember._dynamo.utils.counters["recompiles"].values()) == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_dynamic_graphs_with_other_layouts_at_new_sizes(backend):
    source = "def f(x): return x.reshape(-1) * 2 + x.sum()"
    kinds = ("plain", "plain", "transposed", "transposed", "stepped", "plain", "stepped")
    calls = [_one(k, rows=n, seed=n) for n, k in enumerate(kinds, start=2)]
    _compare(source, calls, backend, dynamic=True)


@pytest.mark.parametrize("backend", BACKENDS)
def test_automatic_dynamic_with_other_layouts(backend):
    kinds = ("plain", "plain", "plain", "transposed", "transposed", "transposed", "plain")
    calls = [_one(k, rows=n, seed=n) for n, k in enumerate(kinds, start=2)]
    _compare(VIEW_FUNCTIONS["reshape"], calls, backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_argument_aliasing_another(backend):
    # the first argument is written in place; the second is a copy, the same tensor, a view
    # of all of it, or a view of it in another shape
    def call(kind):
        def make(lib):
            a = lib.tensor(_values((2, 3)))
            other = {"copy": a.clone(), "same": a, "view": a[:], "reshaped": a.view(3, 2)}
            return a, other[kind]
        return make

    source = "def f(a, b):\n    a.mul_(2)\n    return a + b.reshape(2, 3)"
    _compare(source, [call(k) for k in ("copy", "same", "view", "copy", "reshaped")], backend)


def _conv_models():
    e_model = ember.nn.Sequential(ember.nn.Conv2d(3, 4, 3), ember.nn.BatchNorm2d(4),
                                  ember.nn.ReLU(), ember.nn.Flatten(), ember.nn.Linear(64, 2))
    t_model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4),
                                  torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(64, 2))
    rng = np.random.default_rng(0)
    for e_value, t_value in zip(e_model.state_dict().values(), t_model.state_dict().values()):
        if e_value.dtype.is_floating_point:
            array = np.abs(rng.standard_normal(tuple(e_value.shape))).astype(np.float32) + 0.1
            with ember.no_grad():
                e_value.copy_(ember.tensor(array))
            with torch.no_grad():
                t_value.copy_(torch.from_numpy(array))
    return e_model.eval(), t_model.eval()


@pytest.mark.parametrize("backend", BACKENDS)
def test_channels_last_inputs_to_a_conv_model_without_grad(backend):
    e_model, t_model = _conv_models()
    e_compiled = ember.compile(e_model, backend=backend)
    t_compiled = torch.compile(t_model, backend="eager")
    for i, channels_last in enumerate((False, True, True, False)):
        x = _values((2, 3, 6, 6), seed=i)
        ex, tx = ember.tensor(x), torch.tensor(x)
        if channels_last:
            ex = ex.to(memory_format=ember.channels_last)
            tx = tx.to(memory_format=torch.channels_last)
        with ember.no_grad(), torch.no_grad():
            got, eager, expected = e_compiled(ex), e_model(ex), t_compiled(tx)
        assert_same(got, expected, rtol=1e-5, atol=1e-5)
        assert_same(eager, expected, rtol=1e-5, atol=1e-5)
    assert _frames(ember._dynamo.utils.counters) == _frames(torch._dynamo.utils.counters)


@pytest.mark.parametrize("dynamic", (None, True))
def test_training_through_the_joint_graph_in_other_layouts(dynamic):
    """inductor with grad: the joint forward-backward graph; gradients of the input (through
    the view that made the layout) and of a weight, against eager ember and torch."""
    def run(lib, compiled):
        w = lib.tensor(_values((6, 4), seed=9), requires_grad=True)

        def f(x):
            return (x.reshape(-1, 6) @ w).relu().sum(0)
        if compiled == "ember":
            f = ember.compile(f, backend="inductor", dynamic=dynamic)
        elif compiled == "torch":
            f = torch.compile(f, backend="eager", dynamic=dynamic)
        results = []
        for i, (rows, transposed) in enumerate(((2, False), (2, True), (2, False), (2, True),
                                                (4, True), (3, False))):
            base = lib.tensor(_values((rows * 6,), seed=i), requires_grad=True)
            x = (base * 1).reshape(6, rows).t() if transposed else (base * 1).reshape(rows, 6)
            y = f(x)
            y.sum().backward()
            results.append((y, base.grad, w.grad.clone()))
            w.grad = None
        return results

    expected = run(torch, "torch")
    for mode in ("ember", None):
        for got, want in zip(run(ember, mode), expected):
            assert_same(tuple(got), want, rtol=1e-5, atol=1e-5)
    assert _frames(ember._dynamo.utils.counters) == _frames(torch._dynamo.utils.counters)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_conjugated_input(backend):
    # ember materialises conj() (it has no conjugate bit, so nothing to guard: torch compiles
    # a second frame for the bit, ember reuses its graph); the values agree
    def f(z):
        return (z * 2).reshape(-1)
    e_compiled = ember.compile(f, backend=backend)
    t_compiled = torch.compile(f, backend="eager")
    z = np.array([[1 + 2j, 3 - 1j], [0.5j, 2]], dtype=np.complex64)
    for conjugated in (False, True, True):
        ez, tz = ember.tensor(z), torch.tensor(z)
        if conjugated:
            ez, tz = ez.conj(), tz.conj()
        assert_same(e_compiled(ez), t_compiled(tz).resolve_conj())


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_parameter_given_another_layout_through_data(backend):
    # the guard holds the parameter's identity, which `.data = ...` keeps: its layout
    # (strides, then shape) is guarded too
    def model(lib):
        class Flat(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.w = lib.nn.Parameter(lib.tensor(_values((2, 3))))

            def forward(self, x):
                return self.w.reshape(-1) * x
        return Flat()

    e_model, t_model = model(ember), model(torch)
    e_compiled = ember.compile(e_model, backend=backend)
    t_compiled = torch.compile(t_model, backend="eager")
    layouts = (("plain", 2, 3), ("transposed", 2, 3), ("plain", 3, 2), ("transposed", 2, 3))
    for i, (kind, rows, cols) in enumerate(layouts):
        with ember.no_grad(), torch.no_grad():
            if i:
                e_model.w.data = _layout(ember, kind, rows, cols, seed=i)
                t_model.w.data = _layout(torch, kind, rows, cols, seed=i)
            ex, tx = ember.tensor(_values((6,), seed=9)), torch.tensor(_values((6,), seed=9))
            got, eager, expected = e_compiled(ex), e_model(ex), t_compiled(tx)
        assert_same(got, expected)
        assert_same(eager, expected)
    assert _frames(ember._dynamo.utils.counters) == _frames(torch._dynamo.utils.counters)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_global_tensor_given_another_layout_through_data(backend):
    scope_e, scope_t = {"torch": ember}, {"torch": torch}
    source = "def f(x): return (w.reshape(-1) + x).sum(0)"
    for scope, lib in ((scope_e, ember), (scope_t, torch)):
        exec(source, scope)
        scope["w"] = _layout(lib, "plain")
    e_compiled = ember.compile(scope_e["f"], backend=backend)
    t_compiled = torch.compile(scope_t["f"], backend="eager")
    for i, kind in enumerate(("plain", "transposed", "stepped", "plain")):
        if i:
            scope_e["w"].data = _layout(ember, kind, seed=i)
            scope_t["w"].data = _layout(torch, kind, seed=i)
        ex, tx = ember.tensor(_values((6,), seed=9)), torch.tensor(_values((6,), seed=9))
        assert_same(e_compiled(ex), t_compiled(tx))
        assert_same(scope_e["f"](ex), t_compiled(tx))
    assert _frames(ember._dynamo.utils.counters) == _frames(torch._dynamo.utils.counters)


def test_the_pieces_around_a_graph_break_in_other_layouts():
    # the pieces compiled around a data-dependent branch are guarded like whole functions
    def make(lib):
        def f(x):
            y = x.reshape(-1) * 2
            if y.sum() > -1e9:
                y = y + 1
            return (x.t().reshape(-1) + y).view(2, -1)
        return f

    e_fn, t_fn = make(ember), make(torch)
    e_compiled, t_compiled = ember.compile(e_fn), torch.compile(t_fn, backend="eager")
    for i, kind in enumerate(("plain", "transposed", "plain", "transposed", "transposed")):
        ex, tx = _layout(ember, kind, seed=i), _layout(torch, kind, seed=i)
        expected = t_compiled(tx)
        assert_same(e_compiled(ex), expected)
        assert_same(e_fn(ex), expected)


def test_empty_inputs_recompile_as_torch():
    # NumPy gives fresh empty arrays zero strides; the guard counts torch's strides
    def calls(lib):
        return (lib.empty(0, 3), lib.zeros(0, 3), lib.ones(3, 0).t(), lib.ones(6)[:0].view(0, 3),
                lib.ones(2, 3)[:0])
    e_compiled = ember.compile(lambda x: x.reshape(-1) * 2)
    t_compiled = torch.compile(lambda x: x.reshape(-1) * 2, backend="eager")
    for ex, tx in zip(calls(ember), calls(torch)):
        assert_same(e_compiled(ex), t_compiled(tx))
    assert _frames(ember._dynamo.utils.counters) == _frames(torch._dynamo.utils.counters)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_view_argument_read_before_and_after_a_write_into_the_other(backend):
    # b sees a's in-place write: c must keep b's values from before it (no reordering of
    # the product past the write, as a fused chain could)
    def call(kind):
        def make(lib):
            a = lib.tensor(_values((2, 3)))
            return a, (a.clone() if kind == "copy" else a[:])
        return make

    source = "def f(a, b):\n    c = b * 3\n    a.add_(1)\n    return c + b"
    _compare(source, [call(k) for k in ("copy", "view", "view", "copy", "view")], backend)


def test_channels_last_inputs_to_a_training_conv_model():
    # inductor with grad: the joint graph, BatchNorm updating its statistics
    e_model, t_model = _conv_models()
    e_model.train()
    t_model.train()
    e_compiled, t_compiled = ember.compile(e_model), torch.compile(t_model, backend="eager")
    for i, channels_last in enumerate((False, True, True, False, True)):
        x = _values((2, 3, 6, 6), seed=i)
        ex, tx = ember.tensor(x), torch.tensor(x)
        if channels_last:
            ex = ex.to(memory_format=ember.channels_last)
            tx = tx.to(memory_format=torch.channels_last)
        ex.requires_grad_()
        tx.requires_grad_()
        got, expected = e_compiled(ex), t_compiled(tx)
        (got ** 2).sum().backward()
        (expected ** 2).sum().backward()
        assert_same(got, expected, rtol=1e-4, atol=1e-4)
        assert_same(ex.grad, tx.grad, rtol=1e-4, atol=1e-4)
        for (name, p), q in zip(e_model.named_parameters(), t_model.parameters()):
            if name == "0.bias":
                # the conv's bias before a training BatchNorm: its gradient is zero (the
                # batch mean takes it out), so both sides hold rounding noise of the order
                # of the summed terms' (1e-4), which no tolerance on their difference fits
                assert float(p.grad.abs().max()) < 1e-3 and float(q.grad.abs().max()) < 1e-3
            else:
                assert_same(p.grad, q.grad, rtol=1e-4, atol=1e-4)
            p.grad, q.grad = None, None
    assert _frames(ember._dynamo.utils.counters) == _frames(torch._dynamo.utils.counters)
