"""Autograd leftovers against torch: Variable, the engine flags, increment_version,
register_multi_grad_hook and allow_mutation_on_saved_tensors."""

import warnings

import pytest
import torch

import ember
from ember.autograd import graph


def test_variable_is_a_detached_alias_as_torch():
    for lib in (ember, torch):
        base = lib.ones(2, requires_grad=True) * 2
        v = lib.autograd.Variable(base)
        w = lib.autograd.Variable(base.detach(), requires_grad=True)
        assert v is not base and v.grad_fn is None and not v.requires_grad
        assert v.data_ptr() == base.data_ptr()
        assert w.requires_grad and w.is_leaf
        assert isinstance(v, lib.autograd.Variable) and not isinstance(3, lib.autograd.Variable)
        assert lib.autograd.Variable().shape == (0,)
    for bad in (3, [1.0]):
        with pytest.raises(TypeError) as expected:
            torch.autograd.Variable(bad)
        with pytest.raises(TypeError) as got:
            ember.autograd.Variable(bad)
        assert str(got.value) == str(expected.value)


def test_variable_volatile_warns_as_torch():
    messages = []
    for lib in (ember, torch):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lib.autograd.Variable(lib.ones(1), volatile=True)
        messages.append([str(w.message) for w in caught])
    assert messages[0] == messages[1] and len(messages[0]) == 1


def test_engine_flags_match_torch():
    for lib in (ember, torch):
        assert lib.autograd.is_multithreading_enabled() is True
        with lib.autograd.set_multithreading_enabled(False):
            assert lib.autograd.is_multithreading_enabled() is False
        assert lib.autograd.is_multithreading_enabled() is True
        assert lib.autograd.is_view_replay_enabled() is False


def test_increment_version_as_torch():
    for lib in (ember, torch):
        a, b = lib.ones(1), lib.ones(1)
        lib.autograd.graph.increment_version(a)
        lib.autograd.graph.increment_version([a, b])
        assert (a._version, b._version) == (2, 1)
    x = ember.ones(2, requires_grad=True)
    y = ember.ones(2)
    z = (x * y).sum()
    graph.increment_version(y)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward()


def _multi_hook_calls(lib, mode, use_b, inputs=None):
    a = lib.tensor([1.0, 2.0], requires_grad=True)
    b = lib.tensor([3.0, 4.0], requires_grad=True)
    c = lib.tensor([5.0, 6.0], requires_grad=True)
    calls = []

    def record(grads):
        if mode == "any":
            calls.append(grads.tolist())
        else:
            calls.append([None if g is None else g.tolist() for g in grads])

    handle = lib.autograd.graph.register_multi_grad_hook((a, b, c), record, mode=mode)
    loss = (a * 2).sum() + ((b * 3).sum() if use_b else 0) + (c * c).sum()
    if inputs is None:
        loss.backward()
    else:
        loss.backward(inputs=[{"a": a, "b": b, "c": c}[n] for n in inputs])
    loss2 = (a * 5).sum()
    loss2.backward()
    handle.remove()
    (a * 7).sum().backward()  # removed: no call
    return calls


@pytest.mark.parametrize("mode", ["all", "any"])
@pytest.mark.parametrize("use_b,inputs", [(True, None), (False, None), (True, ("a", "c"))])
def test_register_multi_grad_hook_matches_torch(mode, use_b, inputs):
    assert _multi_hook_calls(ember, mode, use_b, inputs) == \
        _multi_hook_calls(torch, mode, use_b, inputs)


def test_register_multi_grad_hook_bad_mode():
    x = ember.ones(1, requires_grad=True)
    with pytest.raises(ValueError) as expected:
        torch.autograd.graph.register_multi_grad_hook((torch.ones(1, requires_grad=True),),
                                                      print, mode="some")
    with pytest.raises(ValueError) as got:
        graph.register_multi_grad_hook((x,), print, mode="some")
    assert str(got.value) == str(expected.value)


def test_allow_mutation_on_saved_tensors_matches_torch():
    grads = []
    for lib in (ember, torch):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = lib.tensor([3.0, 4.0])
        with lib.autograd.graph.allow_mutation_on_saved_tensors():
            loss = (x * y).sum() + (x.sin() * x).sum()
            y.mul_(10)
            loss.backward()
        grads.append(x.grad.tolist())
    assert grads[0] == pytest.approx(grads[1], rel=1e-6)
