"""ember.nested against torch.nested (strided layout): values, sizes, gradients and errors."""

import numpy as np
import pytest
import torch

import ember
import ember.nn.functional as F

pytestmark = pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors")

SHAPES = [(2, 3), (4, 3), (1, 3)]


def _arrays(shapes=SHAPES, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(np.float32) for shape in shapes]


def _pair(shapes=SHAPES, seed=0, requires_grad=False):
    """The same nested tensor in torch and in ember."""
    arrays = _arrays(shapes, seed)
    ours = ember.nested.nested_tensor([ember.tensor(a) for a in arrays],
                                      requires_grad=requires_grad)
    theirs = torch.nested.nested_tensor([torch.tensor(a) for a in arrays],
                                        requires_grad=requires_grad)
    return ours, theirs


def _same(ours, theirs, atol=1e-5):
    """Equal results: nested tensors component by component, dense tensors whole."""
    if isinstance(theirs, (tuple, list)):
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            _same(a, b, atol)
        return
    if theirs.is_nested:
        assert ours.is_nested
        mine, expected = ours.unbind(), theirs.unbind()
        assert len(mine) == len(expected)
        for a, b in zip(mine, expected):
            _same(a, b, atol)
        return
    assert not getattr(ours, "is_nested", False)
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), atol=atol)


def _same_error(ours, theirs):
    """Both calls raise the same exception type with the same message."""
    with pytest.raises(Exception) as expected:
        theirs()
    with pytest.raises(type(expected.value)) as got:
        ours()
    mine = str(got.value).replace("ember.", "torch.")  # ember names its dtypes/layouts so
    if type(expected.value) is NotImplementedError:
        # torch appends its dispatcher table, and names the overload (aten::pow.Tensor_Scalar)
        assert _operator_named(mine) == _operator_named(str(expected.value))
    else:
        assert mine == str(expected.value)


def _operator_named(message):
    return message.split(" This")[0].split("'")[1].split(".")[0]


# ---------------------------------------------------------------- construction and metadata


def test_metadata_matches_torch():
    ours, theirs = _pair()
    assert ours.is_nested and theirs.is_nested
    assert ours.dim() == theirs.dim() == ours.ndim
    assert ours.size(0) == theirs.size(0) and ours.size(-1) == theirs.size(-1)
    assert ours.numel() == theirs.numel() and ours.element_size() == theirs.element_size()
    assert ours.is_contiguous() == theirs.is_contiguous()
    assert ours.layout is ember.strided and theirs.layout is torch.strided
    assert ours._nested_tensor_size().tolist() == theirs._nested_tensor_size().tolist()
    assert repr(ours).replace("ember", "torch") == repr(theirs)


def test_metadata_errors_match_torch():
    ours, theirs = _pair()
    _same_error(lambda: ours.size(1), lambda: theirs.size(1))
    _same_error(lambda: ours.size(), lambda: theirs.size())
    _same_error(lambda: ours.shape, lambda: theirs.shape)
    _same_error(lambda: ours.size(5), lambda: theirs.size(5))
    _same_error(lambda: ours.unbind(1), lambda: theirs.unbind(1))
    _same_error(lambda: bool(ours), lambda: bool(theirs))
    _same_error(lambda: ours.item(), lambda: theirs.item())


def test_constructors_match_torch():
    _same(ember.nested.nested_tensor([[1, 2], [3]]), torch.nested.nested_tensor([[1, 2], [3]]))
    mixed = ember.nested.nested_tensor([ember.tensor([1.5, 2.0]), ember.arange(3)])
    _same(mixed, torch.nested.nested_tensor([torch.tensor([1.5, 2.0]), torch.arange(3)]))
    _same(ember.nested.nested_tensor([ember.ones(2)], dtype=ember.float64),
          torch.nested.nested_tensor([torch.ones(2)], dtype=torch.float64))
    empty = ember.nested.nested_tensor([])
    assert empty.dim() == torch.nested.nested_tensor([]).dim() and empty.size(0) == 0
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    _same(ember.nested.as_nested_tensor(ember.tensor(x)),
          torch.nested.as_nested_tensor(torch.tensor(x)))
    x = np.arange(24, dtype=np.float32).reshape(4, 3, 2)
    _same(ember.nested.narrow(ember.tensor(x), 0, 1, 2),
          torch.nested.narrow(torch.tensor(x), 0, 1, 2))


def test_constructor_errors_match_torch():
    _same_error(lambda: ember.nested.nested_tensor([ember.ones(2), ember.ones(2, 3)]),
                lambda: torch.nested.nested_tensor([torch.ones(2), torch.ones(2, 3)]))
    _same_error(lambda: ember.nested.nested_tensor(ember.ones(2, 3)),
                lambda: torch.nested.nested_tensor(torch.ones(2, 3)))
    _same_error(lambda: ember.nested.nested_tensor([ember.ones(2)], layout=ember.sparse_coo),
                lambda: torch.nested.nested_tensor([torch.ones(2)], layout=torch.sparse_coo))
    _same_error(lambda: ember.nested.as_nested_tensor(3), lambda: torch.nested.as_nested_tensor(3))
    _same_error(lambda: ember.nested.as_nested_tensor(ember.ones(3)),
                lambda: torch.nested.as_nested_tensor(torch.ones(3)))
    _same_error(lambda: ember.nested.narrow(ember.ones(3, 4, 5), 1, 0, 2),
                lambda: torch.nested.narrow(torch.ones(3, 4, 5), 1, 0, 2))
    _same_error(lambda: ember.nested.narrow(ember.ones(3, 4), 1, ember.tensor([0, 1, 2]), 2),
                lambda: torch.nested.narrow(torch.ones(3, 4), 1, torch.tensor([0, 1, 2]), 2))


def test_jagged_layout_is_refused_with_the_strided_way():
    with pytest.raises(NotImplementedError, match="strided"):
        ember.nested.nested_tensor([ember.ones(2)], layout=ember.jagged)
    with pytest.raises(NotImplementedError, match="as_nested_tensor"):
        ember.nested.nested_tensor_from_jagged(ember.ones(5), ember.tensor([0, 2, 5]))
    with pytest.raises(NotImplementedError, match="as_nested_tensor"):
        ember.nested.masked_select(ember.ones(2, 3), ember.ones(2, 3) > 0)


# ---------------------------------------------------------------- padding


def test_to_padded_tensor_matches_torch():
    ours, theirs = _pair()
    _same(ours.to_padded_tensor(-1.0), theirs.to_padded_tensor(-1.0))
    _same(ember.nested.to_padded_tensor(ours, 2.0, (4, 5, 6)),
          torch.nested.to_padded_tensor(theirs, 2.0, (4, 5, 6)))
    _same_error(lambda: ours.to_padded_tensor(0.0, (3, 2, 2)),
                lambda: theirs.to_padded_tensor(0.0, (3, 2, 2)))
    _same_error(lambda: ours.to_padded_tensor(0.0, (3, 5)),
                lambda: theirs.to_padded_tensor(0.0, (3, 5)))
    _same_error(lambda: ember.nested.to_padded_tensor(ember.ones(2), 0.0),
                lambda: torch.nested.to_padded_tensor(torch.ones(2), 0.0))


# ---------------------------------------------------------------- operators

UNARY = ["abs", "neg", "relu", "sin", "cos", "tanh", "sgn", "clone", "detach",
         "contiguous", "double", "positive", "logical_not", "isnan"]


@pytest.mark.parametrize("name", UNARY)
def test_unary_methods_match_torch(name):
    ours, theirs = _pair()
    _same(getattr(ours, name)(), getattr(theirs, name)())


def test_functions_and_operators_match_torch():
    ours, theirs = _pair()
    _same(ember.relu(ours), torch.relu(theirs))
    _same(F.gelu(ours, approximate="tanh"), torch.nn.functional.gelu(theirs, approximate="tanh"))
    _same(ours.abs().sqrt(), theirs.abs().sqrt())
    _same(F.silu(ours), torch.nn.functional.silu(theirs))
    _same(-ours, -theirs)
    _same(abs(ours), abs(theirs))
    _same(ours + ours, theirs + theirs)
    _same(ours * 2.5, theirs * 2.5)
    _same(1 + ours, 1 + theirs)
    _same(ours - ours * 3, theirs - theirs * 3)
    _same(ours / 4, theirs / 4)
    _same(ember.add(ours, ours, alpha=2), torch.add(theirs, theirs, alpha=2))
    _same(ours + ember.tensor(2.0), theirs + torch.tensor(2.0))
    _same(ours == 0.5, theirs == 0.5)
    _same(ours > 0, theirs > 0)
    _same(ours.masked_fill(ours > 0, -1.0), theirs.masked_fill(theirs > 0, -1.0))
    _same(ember.ones_like(ours), torch.ones_like(theirs))
    _same(ours.to(ember.float64), theirs.to(torch.float64))


def test_in_place_operators_match_torch():
    ours, theirs = _pair()
    ours2, theirs2 = _pair(seed=1)
    for a, b in ((ours, theirs), (ours2, theirs2)):
        a.mul_(2).add_(a).relu_()
        b.mul_(2).add_(b).relu_()
        _same(a, b)
    ours.copy_(ours2)
    theirs.copy_(theirs2)
    _same(ours, theirs)
    ours += ours2
    theirs += theirs2
    _same(ours, theirs)
    _same(ours.fill_(3.0), theirs.fill_(3.0))
    _same(ours.zero_(), theirs.zero_())


def test_products_match_torch():
    ours, theirs = _pair()
    _same(ember.matmul(ours, ours.transpose(1, 2)), torch.matmul(theirs, theirs.transpose(1, 2)))
    _same(ours @ ours.transpose(-1, -2), theirs @ theirs.transpose(-1, -2))
    _same(ember.bmm(ours, ours.transpose(1, 2)), torch.bmm(theirs, theirs.transpose(1, 2)))
    dense = np.random.default_rng(3).standard_normal((3, 3, 5)).astype(np.float32)
    _same(ember.bmm(ours, ember.tensor(dense)), torch.bmm(theirs, torch.tensor(dense)))
    weight = np.random.default_rng(4).standard_normal((5, 3)).astype(np.float32)
    bias = np.arange(5, dtype=np.float32)
    _same(F.linear(ours, ember.tensor(weight), ember.tensor(bias)),
          torch.nn.functional.linear(theirs, torch.tensor(weight), torch.tensor(bias)))


def test_product_errors_match_torch():
    ours, theirs = _pair()
    _same_error(lambda: ember.bmm(ours, ours), lambda: torch.bmm(theirs, theirs))
    _same_error(lambda: ember.matmul(ours, ember.ones(3, 5)),
                lambda: torch.matmul(theirs, torch.ones(3, 5)))
    _same_error(lambda: F.linear(ours, ember.ones(5, 4)),
                lambda: torch.nn.functional.linear(theirs, torch.ones(5, 4)))
    _same_error(lambda: ember.mm(ours, ember.ones(3, 5)), lambda: torch.mm(theirs, torch.ones(3, 5)))
    four = ember.nested.nested_tensor([ember.ones(2, 2, 3)])
    _same_error(lambda: F.linear(four, ember.ones(4, 3)),
                lambda: torch.nn.functional.linear(torch.nested.nested_tensor(
                    [torch.ones(2, 2, 3)]), torch.ones(4, 3)))


def test_normalisation_and_reduction_match_torch():
    ours, theirs = _pair()
    _same(ours.softmax(-1), theirs.softmax(-1))
    _same(F.softmax(ours, dim=1), torch.nn.functional.softmax(theirs, dim=1))
    _same(ours.sum(-1, keepdim=True), theirs.sum(-1, keepdim=True))
    weight, bias = np.array([1.0, 2.0, 3.0], np.float32), np.array([0.5, 0.0, -1.0], np.float32)
    _same(F.layer_norm(ours, (3,), ember.tensor(weight), ember.tensor(bias)),
          torch.nn.functional.layer_norm(theirs, (3,), torch.tensor(weight), torch.tensor(bias)))
    _same(F.dropout(ours, 0.0), torch.nn.functional.dropout(theirs, 0.0))
    _same(F.scaled_dot_product_attention(ours.unsqueeze(1), ours.unsqueeze(1), ours.unsqueeze(1)),
          torch.nn.functional.scaled_dot_product_attention(
              theirs.unsqueeze(1), theirs.unsqueeze(1), theirs.unsqueeze(1)))


def test_shape_operations_match_torch():
    ours, theirs = _pair()
    _same(ours.transpose(1, 2), theirs.transpose(1, 2))
    assert ours.transpose(1, 2).is_contiguous() == theirs.transpose(1, 2).is_contiguous()
    _same(ours.reshape(3, -1, 3, 1), theirs.reshape(3, -1, 3, 1))
    _same(ours.view(3, -1, 1, 3), theirs.view(3, -1, 1, 3))
    _same(ours.transpose(1, 2).reshape(3, 3, -1), theirs.transpose(1, 2).reshape(3, 3, -1))
    _same(ours.unsqueeze(-1), theirs.unsqueeze(-1))
    _same(ours.unsqueeze(1).squeeze(1), theirs.unsqueeze(1).squeeze(1))
    _same(ours.select(0, 1), theirs.select(0, 1))
    _same(ours[-1], theirs[-1])
    _same(ours.select(2, 0), theirs.select(2, 0))
    _same(ours.chunk(3, -1), theirs.chunk(3, -1))
    _same(ours.split([1, 2], -1), theirs.split([1, 2], -1))
    _same(ours.narrow(0, 1, 2), theirs.narrow(0, 1, 2))
    _same(ember.cat([ours, ours], -1), torch.cat([theirs, theirs], -1))
    _same(ember.cat([ours, ours], 0), torch.cat([theirs, theirs], 0))
    _same([t for t in ours], [t for t in theirs])
    _same_error(lambda: list(ours), lambda: list(theirs))


SHAPE_ERRORS = [
    lambda t: t.transpose(0, 1), lambda t: t.transpose(1, 3), lambda t: t.reshape(-1, -1, 3),
    lambda t: t.reshape(2, -1, 3), lambda t: t.reshape(3, -1), lambda t: t.reshape(3, 6),
    lambda t: t.unsqueeze(0), lambda t: t.squeeze(0), lambda t: t.squeeze(),
    lambda t: t.select(0, 5), lambda t: t[5], lambda t: t[:, 0], lambda t: t.chunk(2, 1),
    lambda t: t.chunk(2, -1), lambda t: t.split(1, -1), lambda t: t.narrow(2, 0, 2),
    lambda t: t.softmax(0), lambda t: t.softmax(3), lambda t: t.sum(-1), lambda t: t.sum(0, keepdim=True),
    lambda t: t.sum(), lambda t: t.exp(), lambda t: t.sigmoid(), lambda t: t.mean(-1, keepdim=True),
    lambda t: t.permute(0, 2, 1), lambda t: t == t, lambda t: t != t, lambda t: t.gt(t),
    lambda t: t ** 2, lambda t: 1 - t, lambda t: t + t.narrow(0, 0, 2),
    lambda t: t.to_padded_tensor(0.0) + t,
]


@pytest.mark.parametrize("index", range(len(SHAPE_ERRORS)))
def test_operator_errors_match_torch(index):
    ours, theirs = _pair()
    call = SHAPE_ERRORS[index]
    _same_error(lambda: call(ours), lambda: call(theirs))


def test_dense_operand_errors_match_torch():
    ours, theirs = _pair()
    _same_error(lambda: ours + ember.ones(3), lambda: theirs + torch.ones(3))
    _same_error(lambda: ember.cat([ours, ember.ones(2, 3)], -1),
                lambda: torch.cat([theirs, torch.ones(2, 3)], -1))
    _same_error(lambda: F.layer_norm(ours, (3,)),
                lambda: torch.nn.functional.layer_norm(theirs, (3,)))
    _same_error(lambda: ember.exp(ours), lambda: torch.exp(theirs))


# ---------------------------------------------------------------- autograd


def _grads(leaves):
    return [leaf.grad.numpy() for leaf in leaves]


def test_backward_reaches_the_components_as_torch():
    arrays = _arrays()
    ours_in = [ember.tensor(a, requires_grad=True) for a in arrays]
    theirs_in = [torch.tensor(a, requires_grad=True) for a in arrays]
    weight = np.random.default_rng(7).standard_normal((4, 3)).astype(np.float32)

    def run(lib, fn, inputs, w):
        nt = lib.nested.as_nested_tensor(inputs)
        assert not nt.is_leaf
        out = fn.linear(nt, w).softmax(-1)
        out = lib.matmul(out, out.transpose(1, 2)).relu() * 2
        return (out.to_padded_tensor(0.0) ** 2).sum()

    ours_w = ember.tensor(weight, requires_grad=True)
    theirs_w = torch.tensor(weight, requires_grad=True)
    ours_loss = run(ember, F, ours_in, ours_w)
    theirs_loss = run(torch, torch.nn.functional, theirs_in, theirs_w)
    np.testing.assert_allclose(ours_loss.item(), theirs_loss.item(), rtol=1e-5)
    ours_loss.backward()
    theirs_loss.backward()
    for a, b in zip(_grads(ours_in + [ours_w]), _grads(theirs_in + [theirs_w])):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_nested_leaf_gradient_matches_torch():
    ours, theirs = _pair(requires_grad=True)
    assert ours.is_leaf and theirs.is_leaf and ours.grad_fn is None
    ours_out, theirs_out = (ours * 3).sin(), (theirs * 3).sin()
    assert not ours_out.is_leaf and ours_out.grad_fn is not None
    seed = _pair(seed=5)
    ours_out.backward(seed[0])
    theirs_out.backward(seed[1])
    _same(ours.grad, theirs.grad)
    _same_error(lambda: ours_out.backward(), lambda: theirs_out.backward())
    _same_error(lambda: ours_out.requires_grad_(False), lambda: theirs_out.requires_grad_(False))
    unbound = ours.unbind()
    assert not unbound[0].is_leaf and unbound[0].requires_grad


def test_gradcheck_through_nested_operations():
    rng = np.random.default_rng(11)
    inputs = [ember.tensor(rng.standard_normal(s), dtype=ember.float64, requires_grad=True)
              for s in ((2, 3), (3, 3))]
    weight = ember.tensor(rng.standard_normal((2, 3)), dtype=ember.float64, requires_grad=True)

    def fn(a, b, w):
        nt = ember.nested.as_nested_tensor([a, b])
        out = F.linear(nt.tanh(), w).softmax(-1)
        return out.to_padded_tensor(0.5)

    assert ember.autograd.gradcheck(fn, (*inputs, weight))


def test_every_torch_nested_name_exists():
    assert set(torch.nested.__all__) <= set(dir(ember.nested))


def test_attributes_and_conversions_match_torch():
    ours, theirs = _pair()
    assert (ours == None) is (theirs == None) is False  # noqa: E711  (the operator itself)
    assert (ours != None) is (theirs != None) is True  # noqa: E711
    assert ours.nbytes == theirs.nbytes and ours.itemsize == theirs.itemsize
    _same(ours.mT, theirs.mT)
    _same(ours.cpu(), theirs.cpu())
    for attribute in ("T",):
        _same_error(lambda: getattr(ours, attribute), lambda: getattr(theirs, attribute))
    _same_error(lambda: ours.numpy(), lambda: theirs.numpy())
    _same_error(lambda: ours.tolist(), lambda: theirs.tolist())
    _same_error(lambda: ours.stride(), lambda: theirs.stride())
    _same(ember.nested.nested_tensor([]).to_padded_tensor(0.0),
          torch.nested.nested_tensor([]).to_padded_tensor(0.0))


def test_save_and_load_in_torchs_format():
    import io

    ours, theirs = _pair()
    buffer = io.BytesIO()
    ember.save({"nt": ours.transpose(1, 2)}, buffer)
    buffer.seek(0)
    _same(ours.transpose(1, 2), torch.load(buffer)["nt"])  # torch reads what ember writes
    buffer = io.BytesIO()
    torch.save({"nt": theirs.transpose(1, 2)}, buffer)  # non-contiguous components
    buffer.seek(0)
    loaded = ember.load(buffer)["nt"]  # weights_only: the rebuild is an allowed global
    _same(loaded, theirs.transpose(1, 2))
    assert loaded.is_contiguous() == theirs.transpose(1, 2).is_contiguous()


def test_repr_in_a_graph_matches_torch():
    ours, theirs = _pair(shapes=[(2, 3), (1, 3)], requires_grad=True)
    for mine, expected in ((ours, theirs), (ours.relu(), theirs.relu()),
                           (ours * 2, theirs * 2)):
        assert repr(mine).replace("ember", "torch") == repr(expected)


ALIASES = ["absolute", "negative", "int", "long", "bool", "byte", "short", "isposinf",
           "isneginf", "isreal", "resolve_conj", "resolve_neg", "conj_physical", "cdouble"]


@pytest.mark.parametrize("name", ALIASES)
def test_more_component_methods_match_torch(name):
    ours, theirs = _pair()
    _same(getattr(ours * 3, name)(), getattr(theirs * 3, name)())


def test_relatives_and_aliases_match_torch():
    ours, theirs = _pair()
    _same(ours.divide(2.0), theirs.divide(2.0))
    _same(ours.clone().multiply_(ours), theirs.clone().multiply_(theirs))
    _same(ours.greater_equal(0.0), theirs.greater_equal(0.0))
    _same(ours.flatten(-1), theirs.flatten(-1))
    _same_error(lambda: ours.flatten(1), lambda: theirs.flatten(1))
    assert ours.is_same_size(ours) is theirs.is_same_size(theirs) is True
    _same(ours.reshape_as(ours.unsqueeze(-1)), theirs.reshape_as(theirs.unsqueeze(-1)))
    _same(ours.type_as(ours.double()), theirs.type_as(theirs.double()))
    _same(ours.new_tensor([1.0, 2.0]), theirs.new_tensor([1.0, 2.0]))
    _same(ours.adjoint(), theirs.adjoint())
    _same(ours.clone().absolute_(), theirs.clone().absolute_())
    with pytest.raises(TypeError) as expected:
        theirs @ 2.0
    with pytest.raises(TypeError) as got:
        ours @ 2.0
    assert str(got.value) == str(expected.value)


def test_top_level_and_functional_forms_match_torch():
    ours, theirs = _pair()
    for name in ("softsign", "tanhshrink"):
        _same(getattr(F, name)(ours), getattr(torch.nn.functional, name)(theirs))
    _same(F.alpha_dropout(ours, 0.5, training=False),
          torch.nn.functional.alpha_dropout(theirs, 0.5, training=False))
    for name in ("atleast_1d", "atleast_2d", "atleast_3d", "real"):
        _same(getattr(ember, name)(ours), getattr(torch, name)(theirs))
    _same(ours.real, theirs.real)
    _same(ours.mH, theirs.mH)
    _same(ours.data, theirs.data)
