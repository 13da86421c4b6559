"""view_as_real / view_as_complex: views sharing memory, strides, errors and gradients vs torch."""

import numpy as np
import pytest
import torch

import ember
from conftest import assert_grads_match, assert_same, make_pair


def _complex(shape, seed=0, dtype=np.complex128):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("make", [
    lambda x: x,
    lambda x: x.t(),
    lambda x: x[:, 1:],
    lambda x: x[::2],
    lambda x: x[0, 0],
])
def test_view_as_real_is_a_view_with_torch_strides(dtype, make):
    e, t = make_pair(_complex((4, 3), dtype=dtype))
    er, tr = ember.view_as_real(make(e)), torch.view_as_real(make(t))
    assert_same(er, tr)
    assert er.stride() == tr.stride() and er.storage_offset() == tr.storage_offset()
    er.mul_(2)
    tr.mul_(2)
    assert_same(e, t)  # the write went through to the complex tensor


@pytest.mark.parametrize("make", [
    lambda x: x,
    lambda x: x[1:],
    lambda x: x.transpose(0, 1),
    lambda x: x[:, ::2],
])
def test_view_as_complex_is_a_view_with_torch_strides(make):
    e, t = make_pair(np.arange(24.0).reshape(3, 4, 2))
    ec, tc = ember.view_as_complex(make(e)), torch.view_as_complex(make(t))
    assert_same(ec, tc)
    assert ec.stride() == tc.stride() and ec.storage_offset() == tc.storage_offset()
    ec.add_(1j)
    tc.add_(1j)
    assert_same(e, t)


@pytest.mark.parametrize("make", [
    lambda lib: lib.arange(6.0).view(2, 3),                        # last dim not 2
    lambda lib: lib.arange(8.0).view(2, 2, 2).transpose(1, 2),     # last stride not 1
    lambda lib: lib.arange(12.0).view(3, 4)[:, 1:3],               # odd stride
    lambda lib: lib.arange(6.0)[1:5].view(2, 2),                   # odd offset
    lambda lib: lib.arange(4),                                     # integer dtype
    lambda lib: lib.zeros(()),                                     # 0-dim
])
def test_view_as_complex_refuses_as_torch(make):
    with pytest.raises(RuntimeError) as theirs:
        torch.view_as_complex(make(torch))
    with pytest.raises(RuntimeError) as ours:
        ember.view_as_complex(make(ember))
    assert str(ours.value).split(",")[0] == str(theirs.value).split(",")[0]


def test_view_as_real_refuses_real_tensors():
    with pytest.raises(RuntimeError, match="complex"):
        torch.view_as_real(torch.zeros(2))
    with pytest.raises(RuntimeError, match="complex"):
        ember.view_as_real(ember.zeros(2))


def test_gradients_and_double_backward_as_torch():
    z = _complex((3, 2))
    assert_grads_match(lambda x: ember.view_as_real(x), lambda x: torch.view_as_real(x), z)
    assert_grads_match(lambda x: (ember.view_as_real(x) ** 2).sum(-1),
                       lambda x: (torch.view_as_real(x) ** 2).sum(-1), z)
    r = np.random.default_rng(1).standard_normal((4, 2))
    assert_grads_match(lambda x: ember.view_as_complex(x).abs(),
                       lambda x: torch.view_as_complex(x).abs(), r, double_backward=True)
    x = ember.tensor(z, requires_grad=True)
    assert ember.autograd.gradcheck(ember.view_as_real, (x,))
    assert ember.autograd.gradgradcheck(lambda t: ember.view_as_real(t) ** 2, (x,))
    y = ember.tensor(r, requires_grad=True)
    assert ember.autograd.gradcheck(ember.view_as_complex, (y,))
    assert ember.view_as_real(x).grad_fn.name() == "ViewAsRealBackward0"
    assert ember.view_as_complex(y).grad_fn.name() == "ViewAsComplexBackward0"


def test_meta_shapes():
    z = ember.zeros(3, 4, dtype=ember.complex64, device="meta")
    r = ember.view_as_real(z)
    assert r.shape == (3, 4, 2) and r.dtype is ember.float32 and r.device.type == "meta"
    c = ember.view_as_complex(ember.zeros(5, 2, dtype=ember.float64, device="meta"))
    assert c.shape == (5,) and c.dtype is ember.complex128


def test_conj_physical_and_lazy_bit_queries_as_torch():
    e, t = make_pair(_complex((2, 3)))
    assert_same(ember.conj_physical(e), torch.conj_physical(t))
    assert_same(e.conj_physical(), t.conj_physical())
    # torch's conj() is lazy (is_conj True until resolved); ember's is computed: values agree
    assert_same(e.conj().resolve_conj(), t.conj().resolve_conj())
    assert not e.conj().is_conj() and not ember.is_neg(e) and e.resolve_neg() is e
    r, tr = make_pair(np.arange(3.0))
    assert_same(ember.conj_physical(r), torch.conj_physical(tr))
