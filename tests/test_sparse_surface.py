"""torch.sparse's remaining names: as_sparse_gradcheck (checked against torch's verdicts, and
that it catches a wrong gradient) and the 2:4 semi-structured classes (torch's CPU error)."""

import numpy as np
import pytest
import torch

import ember

pytestmark = pytest.mark.filterwarnings("ignore:Sparse invariant checks")

DENSE = np.array([[0.0, 1.5], [2.0, -3.0]])

CASES = {
    "scaled": lambda lib: (lambda s: s * 3),
    "to_dense_sin": lambda lib: (lambda s: s.to_dense().sin()),
    "mm": lambda lib: (lambda s: lib.sparse.mm(s, lib.eye(2, dtype=lib.float64) * 2)),
}


@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("case", sorted(CASES))
def test_as_sparse_gradcheck_agrees_with_torch(case, masked):
    verdicts = []
    for lib in (torch, ember):
        check = lib.sparse.as_sparse_gradcheck(lib.autograd.gradcheck)
        x = lib.tensor(DENSE, dtype=lib.float64).to_sparse().requires_grad_(True)
        verdicts.append(check(CASES[case](lib), x, masked=masked))
    assert verdicts == [True, True]


class _WrongGradient(ember.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 3  # wrong on purpose: the check must fail


def test_as_sparse_gradcheck_catches_a_wrong_gradient():
    check = ember.sparse.as_sparse_gradcheck(ember.autograd.gradcheck)
    x = ember.tensor(DENSE, dtype=ember.float64).to_sparse().requires_grad_(True)
    with pytest.raises(ember.autograd.GradcheckError):
        check(lambda s: _WrongGradient.apply(s.to_dense()), x)
    assert check(lambda s: _WrongGradient.apply(s.to_dense()), x,
                 raise_exception=False) is False


def test_semi_structured_refuses_cpu_tensors_as_torch():
    for name in ("to_sparse_semi_structured",):
        with pytest.raises(RuntimeError) as theirs:
            getattr(torch.sparse, name)(torch.zeros(64, 64))
        with pytest.raises(RuntimeError) as ours:
            getattr(ember.sparse, name)(ember.zeros(64, 64))
        assert str(ours.value) == str(theirs.value)
    for cls in ("SparseSemiStructuredTensorCUTLASS", "SparseSemiStructuredTensorCUSPARSELT"):
        with pytest.raises(RuntimeError) as theirs:
            getattr(torch.sparse, cls).from_dense(torch.zeros(64, 64))
        with pytest.raises(RuntimeError) as ours:
            getattr(ember.sparse, cls).from_dense(ember.zeros(64, 64))
        assert str(ours.value) == str(theirs.value)
    from ember.sparse import semi_structured

    assert semi_structured.SparseSemiStructuredTensor is ember.sparse.SparseSemiStructuredTensor


def test_torch_sparse_all_names_exist_but_solve():
    # torch.sparse.__all__ lists "solve", which torch itself does not define (spsolve is)
    assert not hasattr(torch.sparse, "solve")
    assert [n for n in torch.sparse.__all__ if not hasattr(ember.sparse, n)] == ["solve"]
