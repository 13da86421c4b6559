"""The operator families split into packages (``ember.ops.pointwise``, ``reduce``, ``shape``,
``index``) keep their public paths, and the ops they declare through the shared helpers
(``pointwise.binary``, ``pointwise.declare_x_log``) behave as torch's."""

import importlib
import pickle

import pytest
import torch

import ember

FAMILIES = ["pointwise", "reduce", "shape", "index"]


@pytest.mark.parametrize("family", FAMILIES)
def test_every_public_name_pickles_by_reference_as_torch_functions_do(family):
    """Each function in a package's ``__all__`` is found again under its ``__module__`` and
    ``__qualname__`` (what pickle, fx's generated code and ``inspect`` rely on), as torch's own
    functions are."""
    package = importlib.import_module(f"ember.ops.{family}")
    assert pickle.loads(pickle.dumps(torch.exp)) is torch.exp
    lost = []
    for name in package.__all__:
        fn = getattr(package, name)
        try:
            same = pickle.loads(pickle.dumps(fn)) is fn
        except pickle.PicklingError:
            same = False
        if not same:
            lost.append(f"{name} ({fn.__module__}.{fn.__qualname__})")
    assert lost == []


@pytest.mark.parametrize("name", ["xlog1py", "zeta"])
def test_special_binary_ops_are_not_tensor_methods_as_in_torch(name):
    for attr in (name, name + "_"):
        assert hasattr(ember.Tensor, attr) == hasattr(torch.Tensor, attr)


@pytest.mark.parametrize("name", ["xlogy", "xlog1py", "zeta"])
@pytest.mark.parametrize("args", [
    lambda m: (2.0, 3.0),
    lambda m: ([1.0, 2.0], m.tensor([0.5])),
    lambda m: (m.tensor([0.5]), [1.0, 2.0]),
    lambda m: (None, m.tensor([0.5])),
    lambda m: (m.tensor([1j]), m.tensor([0.5])),
], ids=["two numbers", "list input", "list other", "None input", "complex"])
def test_x_log_family_refuses_bad_operands_as_torch(name, args):
    """xlogy and special.xlog1py share one declaration, special.zeta the generic binary one:
    bad operands raise torch's exception type."""
    with pytest.raises(Exception) as torch_error:
        getattr(torch.special, name)(*args(torch))
    with pytest.raises(Exception) as ember_error:
        getattr(ember.special, name)(*args(ember))
    assert ember_error.type is torch_error.type


@pytest.mark.parametrize("name", ["xlogy", "xlog1py"])
def test_x_log_family_values_and_gradients_match_torch(name):
    """Including the corners the shared derivative handles: input 0 at the log's pole, NaN."""
    x = [0.0, 0.0, 2.0, -1.5, 3.0, 0.0]
    y = [0.0, -1.0, 0.5, 2.0, float("nan"), -3.0]
    tx, ty = (torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in (x, y))
    ex, ey = (ember.tensor(v, dtype=ember.float64, requires_grad=True) for v in (x, y))
    t_out = getattr(torch.special, name)(tx, ty)
    e_out = getattr(ember.special, name)(ex, ey)
    torch.testing.assert_close(torch.from_numpy(e_out.detach().numpy()), t_out.detach(),
                               equal_nan=True)
    t_out.sum().backward()
    e_out.sum().backward()
    for e, t in ((ex, tx), (ey, ty)):
        torch.testing.assert_close(torch.from_numpy(e.grad.numpy()), t.grad, equal_nan=True)
