"""The autograd leftovers of the bad-input check, each compared with torch: forward-mode AD
through ``cdist`` (torch refuses it for every ``p``), gradients of the weights of
``binary_cross_entropy(_with_logits)`` (torch refuses them), and autograd with sparse
leaves (``autograd.grad``, ``nn.Parameter``, ``register_hook``)."""

import copy
import math

import numpy as np
import pytest
import torch

import ember


def _pair(shape, seed=0):
    values = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return torch.tensor(values), ember.tensor(values)


def _outcome(fn):
    """``('ok', None)`` or ``(exception type name, message)`` of calling ``fn``."""
    try:
        fn()
    except Exception as error:  # noqa: BLE001 - the type and message are what is compared
        return type(error).__name__, str(error).split("\n")[0]
    return "ok", None


# ---------------------------------------------------------------- cdist under forward AD


def _cdist_dual(lib, forward_ad, x1, x2, tangent, p, compute_mode, on_second):
    with forward_ad.dual_level():
        if on_second:
            x2 = forward_ad.make_dual(x2, tangent)
        else:
            x1 = forward_ad.make_dual(x1, tangent)
        lib.cdist(x1, x2, p=p, compute_mode=compute_mode)


@pytest.mark.parametrize("p", [0., 0.5, 1., 2., 3., math.inf])
@pytest.mark.parametrize("rows", [3, 30])
@pytest.mark.parametrize("compute_mode", ["use_mm_for_euclid_dist_if_necessary",
                                          "use_mm_for_euclid_dist",
                                          "donot_use_mm_for_euclid_dist"])
@pytest.mark.parametrize("on_second", [False, True])
def test_cdist_forward_ad_refused_as_torch(p, rows, compute_mode, on_second):
    (t1, e1), (t2, e2), (tt, et) = _pair((rows, 4), 0), _pair((5, 4), 1), \
        _pair((5 if on_second else rows, 4), 2)
    expected = _outcome(lambda: _cdist_dual(torch, torch.autograd.forward_ad, t1, t2, tt, p,
                                            compute_mode, on_second))
    got = _outcome(lambda: _cdist_dual(ember, ember.autograd.forward_ad, e1, e2, et, p,
                                       compute_mode, on_second))
    assert got == expected


@pytest.mark.parametrize("p", [1., 2., math.inf, 0.5])
def test_cdist_func_jvp_refused_as_torch(p):
    (t1, e1), (t2, e2), (tt, et) = _pair((3, 4), 0), _pair((5, 4), 1), _pair((3, 4), 2)
    expected = _outcome(lambda: torch.func.jvp(lambda a: torch.cdist(a, t2, p=p), (t1,), (tt,)))
    got = _outcome(lambda: ember.func.jvp(lambda a: ember.cdist(a, e2, p=p), (e1,), (et,)))
    assert got == expected


def test_cdist_without_tangent_still_differentiates_as_torch():
    (t1, e1), (t2, e2) = _pair((3, 4), 0), _pair((5, 4), 1)
    t1.requires_grad_()
    e1.requires_grad_()
    torch.cdist(t1, t2).sum().backward()
    ember.cdist(e1, e2).sum().backward()
    np.testing.assert_allclose(e1.grad.numpy(), t1.grad.numpy(), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- binary cross entropy weights


def _bce_with_logits_call(lib, names, grad_mode, rows):
    """``binary_cross_entropy_with_logits`` with the weights ``names`` requiring grad, under
    ``grad_mode`` (a context-manager name of ``lib`` or None), then backward."""
    x = lib.tensor(np.linspace(-2, 2, 3 * rows, dtype=np.float32).reshape(rows, 3),
                   requires_grad=True)
    y = lib.tensor(np.linspace(0, 1, 3 * rows, dtype=np.float32).reshape(rows, 3))
    weights = {name: lib.tensor([0.5, 1.5, 2.0], requires_grad=name in names)
               for name in ("weight", "pos_weight")}
    context = getattr(lib, grad_mode)() if grad_mode else _nothing()
    with context:
        loss = lib.nn.functional.binary_cross_entropy_with_logits(x, y, **weights)
    if loss.requires_grad:
        loss.backward()
    return loss


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@pytest.mark.parametrize("names", [(), ("weight",), ("pos_weight",), ("weight", "pos_weight")])
@pytest.mark.parametrize("grad_mode", [None, "no_grad", "inference_mode"])
@pytest.mark.parametrize("rows", [1, 2])
def test_bce_with_logits_weight_requiring_grad_as_torch(names, grad_mode, rows):
    expected = _outcome(lambda: _bce_with_logits_call(torch, names, grad_mode, rows))
    got = _outcome(lambda: _bce_with_logits_call(ember, names, grad_mode, rows))
    assert got == expected
    if expected[0] == "ok":
        np.testing.assert_allclose(
            _bce_with_logits_call(ember, names, grad_mode, rows).detach().numpy(),
            _bce_with_logits_call(torch, names, grad_mode, rows).detach().numpy(), rtol=1e-6)


def _bce_call(lib, weight_grad, target_grad, grad_mode, inputs_ok=True, weights=(0.5, 2., 1.)):
    x = lib.tensor([0.2, 0.7, 0.9] if inputs_ok else [0.2, 1.7, 0.9], requires_grad=True)
    y = lib.tensor([0., 1., 1.], requires_grad=target_grad)
    w = lib.tensor(weights, requires_grad=weight_grad)
    context = getattr(lib, grad_mode)() if grad_mode else _nothing()
    with context:
        loss = lib.nn.functional.binary_cross_entropy(x, y, weight=w)
    if loss.requires_grad:
        loss.backward()
    return loss, x.grad


@pytest.mark.parametrize("weight_grad", [False, True])
@pytest.mark.parametrize("target_grad", [False, True])
@pytest.mark.parametrize("grad_mode", [None, "no_grad"])
@pytest.mark.parametrize("inputs_ok", [True, False])
@pytest.mark.parametrize("weights", [(0.5, 2., 1.), ((1.,), (2.,))])  # the second: [2, 3]
def test_bce_weight_requiring_grad_as_torch(weight_grad, target_grad, grad_mode, inputs_ok,
                                            weights):
    expected = _outcome(lambda: _bce_call(torch, weight_grad, target_grad, grad_mode,
                                          inputs_ok, weights))
    got = _outcome(lambda: _bce_call(ember, weight_grad, target_grad, grad_mode, inputs_ok,
                                     weights))
    assert got == expected
    if expected[0] == "ok":
        for e, t in zip(_bce_call(ember, weight_grad, target_grad, grad_mode, weights=weights),
                        _bce_call(torch, weight_grad, target_grad, grad_mode, weights=weights)):
            if t is None:
                assert e is None
            else:
                np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-5)


# ---------------------------------------------------------------- autograd with sparse tensors


_SPARSE_CASES = {
    "coalesced": ([[0, 1, 2], [1, 0, 2]], [1., 2., 3.], (3, 3)),
    "uncoalesced": ([[2, 0, 2], [2, 1, 2]], [1., 2., 3.], (3, 3)),
    "hybrid": ([[0, 2]], [[1., 2., 3.], [4., 5., 6.]], (3, 3)),
}
_DENSE = np.arange(6, dtype=np.float32).reshape(3, 2) - 2.5


def _sparse_leaf(lib, case, requires_grad=True):
    indices, values, size = _SPARSE_CASES[case]
    return lib.sparse_coo_tensor(lib.tensor(indices), lib.tensor(values), size,
                                 requires_grad=requires_grad)


_PATHS = {
    "sparse.mm": lambda lib, s: (lib.sparse.mm(s, lib.tensor(_DENSE)) ** 2).sum(),
    "to_dense": lambda lib, s: (s.to_dense() * lib.tensor(_DENSE[:, :1] + 0.5)).sum(),
}


def _assert_same_sparse(got, expected):
    assert got.layout.__repr__().split(".")[-1] == expected.layout.__repr__().split(".")[-1]
    assert tuple(got.shape) == tuple(expected.shape)
    np.testing.assert_allclose(got.to_dense().detach().numpy(),
                               expected.to_dense().detach().numpy(), rtol=1e-5)


@pytest.mark.parametrize(("case", "path"), [  # torch.sparse.mm takes no hybrid tensor (below)
    (case, path) for case in sorted(_SPARSE_CASES) for path in sorted(_PATHS)
    if (case, path) != ("hybrid", "sparse.mm")])
def test_autograd_grad_of_sparse_leaf_as_torch(case, path):
    got, expected = ([lib.autograd.grad(_PATHS[path](lib, s), s)[0]
                      for lib, s in ((lib, _sparse_leaf(lib, case)) for lib in (ember, torch))])
    _assert_same_sparse(got, expected)


def test_sparse_mm_of_hybrid_refused_as_torch():
    got, expected = (_outcome(lambda: _PATHS["sparse.mm"](lib, _sparse_leaf(lib, "hybrid")))
                     for lib in (ember, torch))
    assert got[0] == expected[0]


@pytest.mark.parametrize("path", sorted(_PATHS))
def test_backward_inputs_sparse_leaf_as_torch(path):
    grads = []
    for lib in (ember, torch):
        s = _sparse_leaf(lib, "uncoalesced")
        _PATHS[path](lib, s).backward(inputs=[s])
        grads.append(s.grad)
    _assert_same_sparse(*grads)


def test_autograd_grad_of_sparse_with_values_requiring_grad_as_torch():
    grads = []
    for lib in (ember, torch):
        values = lib.tensor([1., 2., 3.], requires_grad=True)
        s = lib.sparse_coo_tensor(lib.tensor([[0, 1, 2], [1, 0, 2]]), values, (3, 3))
        grads.append(lib.autograd.grad(_PATHS["to_dense"](lib, s), s)[0])
    _assert_same_sparse(*grads)


@pytest.mark.parametrize("path", sorted(_PATHS))
def test_register_hook_on_sparse_leaf_as_torch(path):
    seen, grads = [], []
    for lib in (ember, torch):
        s = _sparse_leaf(lib, "coalesced")
        s.register_hook(lambda g: seen.append(g) or g * 2)
        _PATHS[path](lib, s).backward()
        grads.append(s.grad)
    _assert_same_sparse(*seen)
    _assert_same_sparse(*grads)


def test_register_hook_removed_and_refused_as_torch():
    grads = []
    for lib in (ember, torch):
        s = _sparse_leaf(lib, "coalesced")
        s.register_hook(lambda g: g * 3).remove()
        _PATHS["sparse.mm"](lib, s).backward()
        grads.append(s.grad)
    _assert_same_sparse(*grads)
    got, expected = (_outcome(lambda: _sparse_leaf(lib, "coalesced", False).register_hook(id))
                     for lib in (ember, torch))
    assert got == expected


@pytest.mark.parametrize("requires_grad", [True, False])
def test_parameter_of_sparse_tensor_as_torch(requires_grad):
    results = []
    for lib in (ember, torch):
        module = lib.nn.Module()
        module.weight = lib.nn.Parameter(_sparse_leaf(lib, "coalesced", False), requires_grad)
        names = [name for name, _ in module.named_parameters()]
        p = module.weight
        results.append((isinstance(p, lib.nn.Parameter), isinstance(p, lib.Tensor), p.is_sparse,
                        p.requires_grad, p.is_leaf, names, repr(p).split("\n")[0]))
        if requires_grad:
            _PATHS["sparse.mm"](lib, p).backward()
            results[-1] += (p.grad.is_sparse, p.grad.to_dense().numpy().tolist())
    assert results[0] == results[1]


def test_deepcopy_of_sparse_parameter():
    """torch 2.13 refuses it (a preserve-format clone of a sparse tensor); ember copies it, a
    parameter with equal values (docs/sparse.md)."""
    p = ember.nn.Parameter(_sparse_leaf(ember, "uncoalesced", False))
    q = copy.deepcopy(p)
    assert isinstance(q, ember.nn.Parameter) and q.requires_grad and q is not p
    np.testing.assert_array_equal(q.to_dense().detach().numpy(),
                                  p.to_dense().detach().numpy())
    with pytest.raises(RuntimeError, match="memory format"):
        copy.deepcopy(torch.nn.Parameter(_sparse_leaf(torch, "uncoalesced", False)))


def _csr_outcomes(lib):
    matrix = lib.tensor([[0., 2.], [3., 4.]]).to_sparse_csr()
    values = lib.tensor([2., 3., 4.], requires_grad=True)
    derived = lib.sparse_csr_tensor(lib.tensor([0, 1, 3]), lib.tensor([1, 0, 1]), values, (2, 2))
    return [_outcome(lambda: lib.nn.Parameter(matrix)),
            _outcome(lambda: lib.nn.Parameter(matrix, requires_grad=False)),
            _outcome(lambda: lib.autograd.grad((derived @ lib.ones(2, 2)).sum(), derived)),
            _outcome(lambda: derived.register_hook(lambda g: None))]


def test_csr_autograd_refusals_are_typed_and_named():
    """torch runs these (a strided gradient for a CSR leaf); ember refuses the ones it cannot
    give with NotImplementedError naming the operation (docs/sparse.md lists them)."""
    expected = _csr_outcomes(torch)
    got = _csr_outcomes(ember)
    assert [kind for kind, _ in expected] == ["ok"] * 4
    assert got[1] == expected[1]
    for (kind, message), operation in zip(got[::2] + got[3:], ("nn.Parameter", "autograd.grad",
                                                                 "register_hook")):
        assert kind == "NotImplementedError" and operation in message


def _module_with_sparse_parameter(lib):
    module = lib.nn.Module()
    module.weight = lib.nn.Parameter(_sparse_leaf(lib, "uncoalesced", False))
    _PATHS["sparse.mm"](lib, module.weight).backward()
    return module


@pytest.mark.parametrize("cast", ["double", "half", "float"])
def test_module_cast_of_sparse_parameter_as_torch(cast):
    results = []
    for lib in (ember, torch):
        module = _module_with_sparse_parameter(lib)
        p = module.weight
        getattr(module, cast)()
        assert module.weight is p
        results.append((str(p.dtype).split(".")[-1], p.is_sparse, p.requires_grad, p.is_leaf,
                        isinstance(p, lib.nn.Parameter), str(p.grad.dtype).split(".")[-1],
                        p.to_dense().detach().float().numpy().tolist(),
                        p.grad.to_dense().float().numpy().tolist()))
    assert results[0] == results[1]


def test_parameter_of_sparse_parameter_as_torch():
    got, expected = (lib.nn.Parameter(lib.nn.Parameter(_sparse_leaf(lib, "coalesced", False)))
                     for lib in (ember, torch))
    assert isinstance(got, ember.nn.Parameter) and isinstance(expected, torch.nn.Parameter)
    assert type(got).__mro__.count(ember.nn.Parameter) == 1
    _assert_same_sparse(got, expected)


def test_optimizer_step_on_sparse_parameter():
    """torch's SGD updates a sparse parameter; ember's optimisers (dense arrays) refuse it
    with NotImplementedError naming the step (docs/sparse.md), and Adam refuses it as
    torch does (no sparse gradients)."""
    outcomes = {}
    for lib in (ember, torch):
        for name in ("SGD", "Adam"):
            module = _module_with_sparse_parameter(lib)
            optimizer = getattr(lib.optim, name)(module.parameters(), lr=0.1)
            outcomes[lib.__name__, name] = _outcome(optimizer.step)
    assert outcomes["torch", "SGD"] == ("ok", None)
    assert outcomes["ember", "SGD"][0] == "NotImplementedError"
    assert "SGD.step" in outcomes["ember", "SGD"][1]
    assert outcomes["ember", "Adam"] == outcomes["torch", "Adam"]
