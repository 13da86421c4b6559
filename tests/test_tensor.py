"""The Tensor itself: construction, conversion, storage, devices and the Python protocol."""

import numpy as np
import pytest
import torch

import ember
from conftest import DTYPE_PAIRS, assert_same, torch_dtype


def test_from_numpy_shares_memory():
    a = np.zeros(3, dtype=np.float32)
    t = ember.from_numpy(a)
    t += 1
    assert a.tolist() == [1.0, 1.0, 1.0]
    a[0] = 7
    assert t.tolist()[0] == 7.0


def test_numpy_shares_memory_and_refuses_grad():
    t = ember.zeros(3)
    t.numpy()[1] = 5
    assert t.tolist() == [0.0, 5.0, 0.0]
    w = ember.zeros(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="requires grad"):
        w.numpy()


def test_from_numpy_rejects_negative_strides_and_objects():
    with pytest.raises(ValueError):
        torch.from_numpy(np.arange(3)[::-1])
    with pytest.raises(ValueError):
        ember.from_numpy(np.arange(3)[::-1])
    with pytest.raises(TypeError):
        ember.from_numpy(np.array(["a"], dtype=object))
    with pytest.raises(TypeError):
        ember.from_numpy([1, 2])


def test_tensor_copies_and_as_tensor_shares():
    a = np.array([1.0, 2.0])
    ember.tensor(a).add_(5)
    assert a.tolist() == [1.0, 2.0]
    shared = ember.as_tensor(a)
    shared.add_(1)
    assert a.tolist() == [2.0, 3.0]
    converted = ember.as_tensor(a, dtype=ember.float32)
    converted.add_(1)
    assert a.tolist() == [2.0, 3.0]


@pytest.mark.parametrize("name", list(DTYPE_PAIRS))
def test_item_tolist_and_dtype_conversion(name):
    e_dtype, t_dtype = DTYPE_PAIRS[name]
    data = [[1, 0], [3, 2]]
    e, t = ember.tensor(data, dtype=e_dtype), torch.tensor(data, dtype=t_dtype)
    assert e.tolist() == t.tolist()
    assert ember.tensor(2, dtype=e_dtype).item() == torch.tensor(2, dtype=t_dtype).item()
    assert e.element_size() == t.element_size()
    assert_same(e.to(ember.float64), t.to(torch.float64))
    assert_same(e.long(), t.long())
    assert_same(e.bool(), t.bool())


def test_conversion_methods():
    e, t = ember.tensor([1.7, -2.2]), torch.tensor([1.7, -2.2])
    for method in ("float", "double", "half", "bfloat16", "long", "int", "short", "char",
                   "byte", "bool"):
        assert_same(getattr(e, method)(), getattr(t, method)())
    assert e.type() == t.type()
    assert_same(e.type(ember.int64), t.type(torch.int64))
    assert_same(e.type("torch.DoubleTensor"), t.type("torch.DoubleTensor"))
    assert_same(e.to(e), t.to(t))
    assert e.to(ember.float32) is e


def test_item_errors():
    with pytest.raises(RuntimeError):
        torch.zeros(2).item()
    with pytest.raises(RuntimeError, match="2 elements"):
        ember.zeros(2).item()


def test_shape_size_and_counts():
    e, t = ember.zeros(2, 3, 4), torch.zeros(2, 3, 4)
    assert tuple(e.shape) == tuple(t.shape) and e.size() == (2, 3, 4)
    assert e.size(-1) == t.size(-1) and e.dim() == t.dim() == e.ndim
    assert e.numel() == t.numel() == ember.numel(e)
    assert repr(e.shape) == "ember.Size([2, 3, 4])"
    assert isinstance(e.shape[1:], ember.Size)
    with pytest.raises(IndexError):
        t.size(3)
    with pytest.raises(IndexError, match="Dimension out of range"):
        e.size(3)


def test_strides_offsets_and_contiguity_match_torch():
    e, t = ember.zeros(4, 6), torch.zeros(4, 6)
    assert e.stride() == t.stride() and e.stride(0) == t.stride(0)
    assert e.t().stride() == t.t().stride()
    assert e.t().is_contiguous() == t.t().is_contiguous()
    assert e.is_contiguous() and e.t().contiguous().is_contiguous()
    assert e.storage_offset() == 0
    assert e.untyped_storage().nbytes() == t.untyped_storage().nbytes()
    assert e.t().untyped_storage().data_ptr() == e.untyped_storage().data_ptr()
    assert e.data_ptr() == e.t().data_ptr()


def test_python_protocol():
    e = ember.tensor([3, 4, 5])
    assert len(e) == 3
    assert bool(ember.tensor([1.0])) and not bool(ember.tensor(0))
    assert float(ember.tensor(2.5)) == 2.5 and int(ember.tensor(7)) == 7
    assert [1, 2, 3][ember.tensor(1)] == 2
    with pytest.raises(TypeError):
        [1, 2][ember.tensor(1.0)]
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(ember.tensor([1, 2]))
    with pytest.raises(TypeError, match="0-d"):
        len(ember.tensor(1))
    s = {e}
    assert e in s and ember.tensor([3, 4, 5]) not in s
    assert np.asarray(e).tolist() == [3, 4, 5]
    assert f"{ember.tensor(2.5):.2f}" == "2.50"


def test_dlpack_round_trip_with_numpy_and_torch():
    e = ember.arange(6).reshape(2, 3).float()
    assert np.from_dlpack(e).tolist() == e.tolist()
    t = torch.from_dlpack(e)
    assert t.tolist() == e.tolist()


def test_legacy_constructor():
    assert_same(ember.Tensor([1, 2]), torch.Tensor([1, 2]))
    assert ember.Tensor(2, 3).shape == (2, 3) and ember.Tensor(2, 3).dtype is ember.float32


def test_requires_grad_rules():
    with pytest.raises(RuntimeError, match="floating point and complex"):
        ember.tensor([1, 2], requires_grad=True)
    x = ember.ones(2, requires_grad=True)
    y = x * 2
    assert x.is_leaf and not y.is_leaf and y.requires_grad
    with pytest.raises(RuntimeError, match="leaf variables"):
        y.requires_grad = False
    assert not y.detach().requires_grad
    assert y.detach()._version == y._version


def test_devices_and_cuda_absent():
    assert ember.device("cuda:1") == ember.device("cuda", 1)
    assert repr(ember.device("cuda:1")) == repr(torch.device("cuda:1"))
    assert str(ember.device("cpu")) == "cpu" and ember.device("cpu") == "cpu"
    with pytest.raises(RuntimeError):
        torch.device("tpu")
    with pytest.raises(RuntimeError):
        ember.device("tpu")
    assert ember.zeros(2).device == ember.device("cpu")
    if not ember.cuda.is_available():
        assert ember.cuda.device_count() == 0
        with pytest.raises(RuntimeError, match="CuPy"):
            ember.zeros(2).cuda()
        with pytest.raises(RuntimeError):
            ember.zeros(2, device="cuda")


def test_meta_device_carries_shapes_only():
    m = ember.zeros(1000, 1000, device="meta")
    assert m.device.type == "meta" and m.is_meta
    out = (m * 2 + 1).exp().sum(0)
    assert out.shape == (1000,) and out.dtype is ember.float32 and out.device.type == "meta"
    assert m.t().shape == (1000, 1000) and m.reshape(-1).shape == (1000000,)
    with pytest.raises(RuntimeError):
        m.item()
    meta = ember.zeros(2, 3).to("meta")
    assert meta.shape == (2, 3) and meta.device == ember.device("meta")


@pytest.mark.parametrize("name", list(DTYPE_PAIRS))
def test_meta_dtypes_follow_promotion(name):
    e_dtype, t_dtype = DTYPE_PAIRS[name]
    em = ember.zeros(3, dtype=e_dtype, device="meta")
    tm = torch.zeros(3, dtype=t_dtype, device="meta")
    if name == "bool":
        assert torch_dtype((em * 2.5).dtype) == (tm * 2.5).dtype
    else:
        assert torch_dtype((em + em).dtype) == (tm + tm).dtype
        assert torch_dtype((em / 2).dtype) == (tm / 2).dtype


def test_bad_data_errors_match_torch():
    for data in ([[1, 2], [3]], [[[1], [2]], [[3], [4, 5]]]):
        with pytest.raises(ValueError) as expected:
            torch.tensor(data)
        with pytest.raises(ValueError) as actual:
            ember.tensor(data)
        assert str(actual.value) == str(expected.value)
    with pytest.raises(TypeError):
        torch.ones(2).new_tensor("x")
    with pytest.raises(TypeError, match="invalid data type 'str'"):
        ember.ones(2).new_tensor("x")


def test_from_dlpack_shares_memory_with_numpy_and_torch():
    a = np.arange(4.0)
    t = ember.from_dlpack(a)
    t.add_(1)
    assert a.tolist() == [1.0, 2.0, 3.0, 4.0] and t.dtype is ember.float64
    source = torch.arange(3, dtype=torch.int32)
    shared = ember.from_dlpack(source)
    source.add_(10)
    assert shared.tolist() == [10, 11, 12] and shared.dtype is ember.int32
    back = torch.from_dlpack(ember.tensor([1.5, 2.5]))
    assert back.tolist() == [1.5, 2.5]
    with pytest.raises(TypeError):
        ember.from_dlpack([1, 2])


def test_random_module_like_torch_random():
    ember.random.manual_seed(3)
    first = ember.rand(3).tolist()
    state = ember.random.get_rng_state()
    second = ember.rand(3).tolist()
    ember.random.set_rng_state(state)
    assert ember.rand(3).tolist() == second and first != second
    assert ember.random.initial_seed() == 3
