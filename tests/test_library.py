"""ember.library custom operators against torch.library: calling (directly and through
ember.ops), gradients (gradcheck and torch's values), fake rules on the meta device,
per-device kernels, mutation, and torch's errors."""

import numpy as np
import pytest
import torch

import ember
from ember.autograd import gradcheck


def _define_numpy_sin(lib, namespace):
    tensor_type = lib.Tensor

    def numpy_sin(x: tensor_type) -> tensor_type:
        return lib.from_numpy(np.sin(x.numpy()))

    def setup_context(ctx, inputs, output):
        (ctx.x,) = inputs

    def backward(ctx, grad):
        return grad * ctx.x.cos()

    op = lib.library.custom_op(f"{namespace}::numpy_sin", numpy_sin, mutates_args=())
    op.register_autograd(backward, setup_context=setup_context)
    op.register_fake(lambda x: lib.empty_like(x))
    return op


E_SIN = _define_numpy_sin(ember, "embertest")
T_SIN = _define_numpy_sin(torch, "embertest")


def test_values_and_gradients_match_torch():
    values = np.linspace(-2, 2, 7)
    e = ember.tensor(values, requires_grad=True)
    t = torch.tensor(values, requires_grad=True)
    e_out, t_out = E_SIN(e), T_SIN(t)
    np.testing.assert_allclose(e_out.detach().numpy(), t_out.detach().numpy())
    (e_out * e_out).sum().backward()
    (t_out * t_out).sum().backward()
    np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-12)


def test_gradcheck_of_a_numpy_op():
    x = ember.tensor(np.linspace(-1, 1, 5), dtype=ember.float64, requires_grad=True)
    assert gradcheck(E_SIN, (x,))


def test_called_through_ember_ops():
    x = ember.tensor([0.5, 1.0])
    packet = ember.ops.embertest.numpy_sin
    assert packet.default.op is E_SIN
    assert repr(packet.default) == repr(torch.ops.embertest.numpy_sin.default)
    assert packet.overloads() == torch.ops.embertest.numpy_sin.overloads()
    assert repr(packet) == repr(torch.ops.embertest.numpy_sin)
    assert str(packet) == str(torch.ops.embertest.numpy_sin)
    np.testing.assert_allclose(packet(x).numpy(), torch.ops.embertest.numpy_sin(
        torch.tensor([0.5, 1.0])).numpy())
    assert repr(E_SIN) == repr(T_SIN)


def test_fake_rule_gives_meta_shapes():
    @ember.library.custom_op("embertest::row_sums", mutates_args=())
    def row_sums(x: ember.Tensor) -> ember.Tensor:
        return ember.from_numpy(x.numpy().sum(1))

    @row_sums.register_fake
    def _(x):
        return x.new_empty(x.shape[0])

    real = row_sums(ember.ones(3, 4))
    fake = row_sums(ember.empty(3, 4, device="meta"))
    assert fake.device.type == "meta" and fake.shape == real.shape and fake.dtype == real.dtype
    results = ember.library.opcheck(row_sums, (ember.ones(3, 4),))
    assert set(results.values()) == {"SUCCESS"}


def test_missing_fake_and_missing_formula_error_as_torch():
    def plain(lib):
        def f(x: lib.Tensor) -> lib.Tensor:
            return x * 2
        return lib.library.custom_op("embertest::plain", f, mutates_args=())

    e_op, t_op = plain(ember), plain(torch)
    with pytest.raises(RuntimeError) as expected:
        t_op(torch.ones(2, device="meta"))
    with pytest.raises(RuntimeError) as got:
        e_op(ember.ones(2, device="meta"))
    assert str(got.value) == str(expected.value)
    with pytest.raises(RuntimeError) as expected:
        t_op(torch.ones(2, requires_grad=True)).sum().backward()
    with pytest.raises(RuntimeError) as got:
        e_op(ember.ones(2, requires_grad=True)).sum().backward()
    assert str(got.value) == str(expected.value)


def test_register_kernel_per_device():
    @ember.library.custom_op("embertest::tagged", mutates_args=(), device_types="cuda")
    def tagged(x: ember.Tensor) -> ember.Tensor:
        return x + 100

    with pytest.raises(NotImplementedError, match="no kernel registered for device type 'cpu'"):
        tagged(ember.zeros(1))
    tagged.register_kernel("cpu", lambda x: x + 1)
    assert tagged(ember.zeros(1)).tolist() == [1.0]


def test_mutating_op_matches_torch():
    def define(lib):
        def add_into(x: lib.Tensor, y: lib.Tensor) -> None:
            x.add_(y)
        return lib.library.custom_op("embertest::add_into", add_into, mutates_args={"x"})

    e_op, t_op = define(ember), define(torch)
    e, t = ember.zeros(2), torch.zeros(2)
    assert e_op(e, ember.ones(2)) is None and t_op(t, torch.ones(2)) is None
    assert e.tolist() == t.tolist()


@pytest.fixture
def torch_registries_restored():
    """torch.library.custom_op("my lib::foo") raises, yet leaves the name in torch's
    registries (``torch.library._defs``, the simple registry, custom_ops' ``OPDEF_TO_LIB``),
    where a later torch.compile (aot_eager) fails parsing it; the oracle's registries are put
    back after the test."""
    from torch._library import custom_ops, simple_registry

    registries = (torch.library._defs, simple_registry.singleton._data,
                  custom_ops.OPDEF_TO_LIB)
    saved = [registry.copy() for registry in registries]
    yield
    for registry, before in zip(registries, saved):
        registry.clear()
        registry.update(before)


def test_errors_match_torch(torch_registries_restored):
    def annotated(x: ember.Tensor) -> ember.Tensor:
        return x.clone()

    def t_annotated(x: torch.Tensor) -> torch.Tensor:
        return x.clone()

    def unannotated(x):
        return x

    cases = [
        (lambda: ember.library.custom_op("foo", annotated, mutates_args=()),
         lambda: torch.library.custom_op("foo", t_annotated, mutates_args=()), True),
        (lambda: ember.library.custom_op("embertest::foo", annotated),
         lambda: torch.library.custom_op("embertest::foo", t_annotated), True),
        (lambda: ember.library.custom_op("embertest::un", unannotated, mutates_args=()),
         lambda: torch.library.custom_op("embertest::un", unannotated, mutates_args=()), True),
        (lambda: ember.library.custom_op("my lib::foo", annotated, mutates_args=()),
         lambda: torch.library.custom_op("my lib::foo", t_annotated, mutates_args=()), False),
        (lambda: ember.library.custom_op("embertest::m", annotated, mutates_args=("y",)),
         lambda: torch.library.custom_op("embertest::m", t_annotated, mutates_args=("y",)),
         False),
        (lambda: E_SIN(3), lambda: T_SIN(3), False),
    ]
    for ember_call, torch_call, same_message in cases:
        with pytest.raises(Exception) as expected:
            torch_call()
        with pytest.raises(type(expected.value)) as got:
            ember_call()
        if same_message:
            assert str(got.value) == str(expected.value)
        else:  # the same first words (torch's text names its own types and schema)
            assert str(got.value).split(":")[0][:40] == str(expected.value).split(":")[0][:40]


def test_output_aliasing_an_input_errors_as_torch():
    def define(lib):
        def same(x: lib.Tensor) -> lib.Tensor:
            return x
        return lib.library.custom_op("embertest::same", same, mutates_args=())

    with pytest.raises(RuntimeError) as expected:
        define(torch)(torch.ones(1))
    with pytest.raises(RuntimeError) as got:
        define(ember)(ember.ones(1))
    tail = "The output of this custom operator (1) must not also be an input"
    assert tail in str(expected.value) and tail in str(got.value)


def test_docstring_examples_run():
    import doctest

    import ember.library

    finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner(
        optionflags=doctest.NORMALIZE_WHITESPACE)
    for test in finder.find(ember.library, globs={"ember": ember}):
        runner.run(test)
    assert runner.summarize(verbose=False).failed == 0
