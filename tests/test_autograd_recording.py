"""The graph that recording builds, checked against torch's: edges, AccumulateGrad nodes,
saved versions and the view/leaf cases that the spelled-out fast paths of ``record`` and
``record_binary`` (``ember/autograd/graph.py``) handle without their general helper."""

import numpy as np
import pytest
import torch

import ember


def _both(values, requires_grad=True):
    data = np.asarray(values, dtype=np.float32)
    return (ember.tensor(data, requires_grad=requires_grad),
            torch.tensor(data, requires_grad=requires_grad))


def _names(fn):
    return [None if node is None else node.name() for node, _ in fn.next_functions]


@pytest.mark.parametrize("make", [
    lambda x, c: x + c,          # leaf, plain tensor
    lambda x, c: c + x,
    lambda x, c: x * x,          # the same leaf twice
    lambda x, c: (x * 2) * c,    # a non-leaf input
    lambda x, c: x[1:] + c[1:],  # views
    lambda x, c: x.exp(),        # one input, output saved
    lambda x, c: x.sin(),        # one input, input saved
])
def test_edges_match_torch(make):
    x, tx = _both([1.0, 2.0, 3.0])
    c, tc = _both([0.5, 0.25, 2.0], requires_grad=False)
    y, ty = make(x, c), make(tx, tc)
    assert _names(y.grad_fn) == _names(ty.grad_fn)
    assert y.grad_fn.name() == ty.grad_fn.name()
    y.sum().backward()
    ty.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6)


def test_accumulate_grad_is_shared_while_a_graph_holds_it():
    x, tx = _both([1.0, 2.0])
    a, b = x * 2, x * 3
    ta, tb = tx * 2, tx * 3
    acc, tacc = a.grad_fn.next_functions[0][0], ta.grad_fn.next_functions[0][0]
    assert (acc is b.grad_fn.next_functions[0][0]) == \
        (tacc is tb.grad_fn.next_functions[0][0]) == True  # noqa: E712
    assert acc.variable is x and tacc.variable is tx
    assert acc.next_functions == tacc.next_functions == ()
    assert acc.name() == tacc.name()


def test_accumulate_grad_hooks_and_metadata_survive_on_the_graph():
    x, tx = _both([1.0, 2.0])
    seen = []
    for leaf, fw in ((x, "ember"), (tx, "torch")):
        y = leaf * 3
        acc = y.grad_fn.next_functions[0][0]
        acc.metadata["tag"] = fw
        acc.register_prehook(lambda grads, fw=fw: seen.append((fw, grads[0].tolist())))
        del acc
        assert y.grad_fn.next_functions[0][0].metadata["tag"] == fw
        y.sum().backward()
    assert seen == [("ember", [3.0, 3.0]), ("torch", [3.0, 3.0])]


def test_a_leaf_lives_as_long_as_its_graph():
    # the graph holds the leaf through its AccumulateGrad node, as torch's does
    x = ember.ones(2, requires_grad=True)
    x.register_hook(lambda g: g * 10)
    y = (x * 2).sum()
    acc = y.grad_fn.next_functions[0][0].next_functions[0][0]
    del x
    y.backward()
    tx = torch.ones(2, requires_grad=True)
    tx.register_hook(lambda g: g * 10)
    ty = (tx * 2).sum()
    tacc = ty.grad_fn.next_functions[0][0].next_functions[0][0]
    del tx
    ty.backward()
    np.testing.assert_allclose(acc.variable.grad.numpy(), tacc.variable.grad.numpy())


@pytest.mark.parametrize("make", [
    lambda a, b: a * b,      # both inputs saved
    lambda a, b: a.sin(),    # one input saved
])
def test_saved_versions_are_checked(make):
    a, ta = _both([1.0, 2.0])
    b, tb = _both([3.0, 4.0])
    messages = []
    for x, y, fw in ((a, b, ember), (ta, tb, torch)):
        x2 = x * 1
        out = make(x2, y).sum()
        with fw.no_grad():
            x2.add_(1)
        with pytest.raises(RuntimeError) as error:
            out.backward()
        messages.append(str(error.value).split(";")[0])
    assert messages[0] == messages[1]


def test_an_empty_gradient_goes_to_the_right_output_of_a_multi_output_node():
    x, tx = _both([[3.0, 1.0], [2.0, 4.0]])
    values, _ = x.max(dim=1)
    tvalues, _ = tx.max(dim=1)
    (values * 2).sum().backward()
    (tvalues * 2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())
