"""Storages (UntypedStorage, TypedStorage, legacy FloatStorage...) and Tensor.set_, against
torch: sizes, bytes, sharing with the tensor, conversions and errors."""

import pickle
import warnings

import numpy as np
import pytest
import torch

import ember
from conftest import DTYPE_PAIRS


@pytest.fixture(autouse=True)
def _quiet_typed_storage_warning():
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="TypedStorage is deprecated")
        yield


def _pair(values, dtype_name="float32"):
    e_dtype, t_dtype = DTYPE_PAIRS[dtype_name]
    return ember.tensor(values, dtype=e_dtype), torch.tensor(values, dtype=t_dtype)


def _raises_like(fn_ember, fn_torch):
    """Both calls raise the same exception type with the same message."""
    with pytest.raises(Exception) as expected:
        fn_torch()
    with pytest.raises(type(expected.value)) as got:
        fn_ember()
    assert str(got.value) == str(expected.value)


# ---------------------------------------------------------------- UntypedStorage


@pytest.mark.parametrize("dtype_name", ["float32", "int64", "int16", "bool", "float64",
                                        "bfloat16", "complex64"])
def test_untyped_bytes_match_torch(dtype_name):
    values = [[1, 0], [2, 3], [0, 1]] if dtype_name != "bool" else [[True, False]]
    e, t = _pair(values, dtype_name)
    es, ts = e.untyped_storage(), t.untyped_storage()
    assert es.nbytes() == ts.nbytes() == len(es) == es.size()
    assert es.tolist() == ts.tolist()
    assert [es[i] for i in range(-2, 2)] == [ts[i] for i in range(-2, 2)]
    assert es.data_ptr() == e.data_ptr()


def test_untyped_storage_of_a_view_is_the_whole_memory():
    e, t = _pair([0., 1., 2., 3., 4., 5.])
    ev, tv = e[2:].view(2, 2).t(), t[2:].view(2, 2).t()
    assert ev.untyped_storage().nbytes() == tv.untyped_storage().nbytes() == 24
    assert ev.untyped_storage().data_ptr() == e.data_ptr()
    assert ev.untyped_storage().tolist() == tv.untyped_storage().tolist()


def test_byte_writes_are_seen_by_the_tensor():
    e, t = _pair([0., 1., 2.])
    for storage in (e.untyped_storage(), t.untyped_storage()):
        storage[4] = 1
        storage[0] = 300         # wraps modulo 256, as torch
        storage[11] = -1
    assert e.tolist() == t.tolist()
    assert e.untyped_storage().tolist() == t.untyped_storage().tolist()


def test_byte_slices_share_memory():
    e, t = _pair([0., 1., 2.])
    es, ts = e.untyped_storage()[4:8], t.untyped_storage()[4:8]
    assert es.nbytes() == ts.nbytes() == 4
    assert es.data_ptr() - e.data_ptr() == ts.data_ptr() - t.data_ptr()
    es[0], ts[0] = 7, 7
    assert e.tolist() == t.tolist()


def test_untyped_constructors_fill_copy_clone_resize():
    e, t = ember.UntypedStorage([1, 2, 300]), torch.UntypedStorage([1, 2, 300])
    assert e.tolist() == t.tolist()
    assert ember.UntypedStorage(5).nbytes() == torch.UntypedStorage(5).nbytes()
    assert ember.UntypedStorage().nbytes() == torch.UntypedStorage().nbytes() == 0
    assert e.fill_(9).tolist() == t.fill_(9).tolist()
    ec, tc = e.clone(), t.clone()
    ec[0], tc[0] = 1, 1
    assert (e.tolist(), ec.tolist()) == (t.tolist(), tc.tolist())
    assert ec.data_ptr() != e.data_ptr()
    e.copy_(ember.UntypedStorage([4, 5, 6]))
    t.copy_(torch.UntypedStorage([4, 5, 6]))
    assert e.tolist() == t.tolist()
    e.resize_(5)
    t.resize_(5)
    assert e.nbytes() == t.nbytes() and e.tolist()[:3] == t.tolist()[:3]
    assert e.resizable() == t.resizable()
    assert e.cpu() is e and t.cpu() is t
    assert str(e.device) == str(t.device) and e.is_cuda == t.is_cuda
    assert e.element_size() == t.element_size()


def test_untyped_errors_match_torch():
    e, t = ember.UntypedStorage(3), torch.UntypedStorage(3)
    _raises_like(lambda: e[3], lambda: t[3])
    _raises_like(lambda: e[-4], lambda: t[-4])
    _raises_like(lambda: e[-10], lambda: t[-10])
    _raises_like(lambda: e.__setitem__(-1, 0), lambda: t.__setitem__(-1, 0))
    _raises_like(lambda: e.__setitem__(3, 0), lambda: t.__setitem__(3, 0))
    _raises_like(lambda: e[0:3:2], lambda: t[0:3:2])
    _raises_like(lambda: e["a"], lambda: t["a"])
    _raises_like(lambda: e.copy_(ember.UntypedStorage(2)), lambda: t.copy_(torch.UntypedStorage(2)))
    _raises_like(lambda: ember.UntypedStorage(1.5), lambda: torch.UntypedStorage(1.5))
    meta_e = ember.zeros(2, device="meta").untyped_storage()
    meta_t = torch.zeros(2, device="meta").untyped_storage()
    assert meta_e.nbytes() == meta_t.nbytes()
    _raises_like(lambda: meta_e[0], lambda: meta_t[0])
    _raises_like(lambda: meta_e.tolist(), lambda: meta_t.tolist())


def test_resize_of_non_resizable_storage_errors_as_torch():
    # ember: a tensor's storage never resizes (its tensors would not see new memory); torch's
    # message for non-resizable storages (here: NumPy memory in both) is the one used
    e = ember.from_numpy(np.zeros(3, np.float32)).untyped_storage()
    t = torch.from_numpy(np.zeros(3, np.float32)).untyped_storage()
    assert e.resizable() == t.resizable() is False
    _raises_like(lambda: e.resize_(100), lambda: t.resize_(100))
    assert ember.zeros(2).untyped_storage().resizable() is False


def test_from_buffer_matches_torch():
    data = np.arange(4, dtype=">f4").tobytes()
    for order in ("big", "little"):
        e = ember.UntypedStorage.from_buffer(data, order, dtype=ember.float32)
        t = torch.UntypedStorage.from_buffer(data, order, dtype=torch.float32)
        assert e.tolist() == t.tolist() and e.resizable() == t.resizable()
    e = ember.UntypedStorage.from_buffer(b"\x01\x02\x03", dtype=ember.uint8, offset=1, count=2)
    t = torch.UntypedStorage.from_buffer(b"\x01\x02\x03", dtype=torch.uint8, offset=1, count=2)
    assert e.tolist() == t.tolist()
    _raises_like(lambda: ember.UntypedStorage.from_buffer(b"\x01"),
                 lambda: torch.UntypedStorage.from_buffer(b"\x01"))
    _raises_like(lambda: ember.UntypedStorage.from_buffer(b"\x01\x02\x03\x04", dtype=ember.float32),
                 lambda: torch.UntypedStorage.from_buffer(b"\x01\x02\x03\x04", dtype=torch.float32))


def test_share_memory_moves_the_tensor_along():
    e = ember.arange(4.)
    storage = e.untyped_storage()
    assert storage.is_shared() == torch.arange(4.).untyped_storage().is_shared() is False
    assert storage.share_memory_() is storage and storage.is_shared() and e.is_shared()
    storage[0] = 1  # still the tensor's memory
    assert e[0].item() == _torch_byte_write_result()
    alone = ember.UntypedStorage([1, 2]).share_memory_()
    assert alone.is_shared() and alone.tolist() == [1, 2]


def _torch_byte_write_result():
    t = torch.arange(4.)
    t.untyped_storage()[0] = 1
    return t[0].item()


def test_storage_pickles():
    e = ember.UntypedStorage([3, 4, 5])
    assert pickle.loads(pickle.dumps(e)).tolist() == e.tolist()
    typed = ember.tensor([1.5, 2.5]).storage()
    loaded = pickle.loads(pickle.dumps(typed))
    assert loaded.tolist() == typed.tolist() and loaded.dtype is ember.float32


# ---------------------------------------------------------------- TypedStorage


def test_storage_warns_once_as_torch():
    import torch.storage as torch_storage

    import ember.storage as storage_module

    storage_module._WARNED["typed_storage"] = False
    torch_storage._reset_warn_typed_storage_removal()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ember.zeros(1).storage()
        ember.zeros(1).storage()
        torch.zeros(1).storage()
        torch.zeros(1).storage()
    messages = [str(w.message) for w in caught]
    assert len(messages) == 2 and messages[0] == messages[1]
    assert all(w.category is UserWarning and w.filename == __file__ for w in caught)


@pytest.mark.parametrize("dtype_name", ["float32", "int64", "bool", "float16", "complex128",
                                        "uint8"])
def test_typed_storage_matches_torch(dtype_name):
    values = [1, 0, 3, 2] if dtype_name != "bool" else [True, False, True, True]
    e, t = _pair(values, dtype_name)
    es, ts = e[1:].storage(), t[1:].storage()
    assert es.dtype.name == str(ts.dtype).removeprefix("torch.")
    assert (es.size(), len(es), es.nbytes(), es.element_size()) == \
        (ts.size(), len(ts), ts.nbytes(), ts.element_size())
    assert es.tolist() == ts.tolist()
    assert [es[i] for i in range(-4, 4)] == [ts[i] for i in range(-4, 4)]
    assert [type(es[i]) for i in range(4)] == [type(ts[i]) for i in range(4)]
    assert es.data_ptr() == e.data_ptr() and es.type() == ts.type()
    assert es._untyped_storage.nbytes() == ts._untyped_storage.nbytes()
    assert type(es.untyped()).__name__ == type(ts.untyped()).__name__ == "UntypedStorage"


def test_typed_writes_are_seen_by_the_tensor():
    e, t = _pair([0., 1., 2., 3.])
    for storage in (e.storage(), t.storage()):
        storage[0] = 5.
        storage[-1] = 7
        storage[1:3] = 0.5
    assert e.tolist() == t.tolist()
    assert e.storage().fill_(2).tolist() == t.storage().fill_(2).tolist()
    assert e.tolist() == t.tolist()


def test_typed_errors_match_torch():
    e, t = _pair([0., 1.])
    es, ts = e.storage(), t.storage()
    _raises_like(lambda: es[2], lambda: ts[2])
    _raises_like(lambda: es[-3], lambda: ts[-3])
    _raises_like(lambda: es[0:1], lambda: ts[0:1])
    _raises_like(lambda: es.__setitem__(2, 1.), lambda: ts.__setitem__(2, 1.))
    _raises_like(lambda: es.__setitem__(-3, 1.), lambda: ts.__setitem__(-3, 1.))
    _raises_like(lambda: es.__setitem__(0, "a"), lambda: ts.__setitem__(0, "a"))
    _raises_like(lambda: es.copy_(ember.FloatStorage(3)), lambda: ts.copy_(torch.FloatStorage(3)))


def test_typed_conversions_copy_and_clone():
    e, t = _pair([1.5, -2.0, 0.0])
    es, ts = e.storage(), t.storage()
    for name in ("double", "int", "long", "bool", "half", "byte", "complex_float"):
        ec, tc = getattr(es, name)(), getattr(ts, name)()
        assert ec.dtype.name == str(tc.dtype).removeprefix("torch.")
        assert ec.tolist() == tc.tolist(), name
    assert ember.UntypedStorage([1, 2]).float().tolist() == \
        torch.UntypedStorage([1, 2]).float().tolist()
    ec, tc = es.clone(), ts.clone()
    assert ec.data_ptr() != es.data_ptr() and ec.tolist() == tc.tolist()
    assert es.copy_(ember.FloatStorage([4., 5., 6.])) is es
    ts.copy_(torch.FloatStorage([4., 5., 6.]))
    assert e.tolist() == t.tolist()


def test_legacy_storage_classes():
    for name in ("FloatStorage", "DoubleStorage", "HalfStorage", "BFloat16Storage",
                 "LongStorage", "IntStorage", "ShortStorage", "CharStorage", "ByteStorage",
                 "BoolStorage", "ComplexFloatStorage", "ComplexDoubleStorage"):
        e_cls, t_cls = getattr(ember, name), getattr(torch, name)
        assert e_cls.__name__ == t_cls.__name__
        assert e_cls.dtype.name == str(t_cls.dtype).removeprefix("torch.")
        assert e_cls(3).size() == t_cls(3).size()
        assert e_cls([1, 0]).tolist() == t_cls([1, 0]).tolist()
        assert isinstance(e_cls(1), ember.TypedStorage)
    assert isinstance(ember.zeros(1).storage(), ember.FloatStorage) == \
        isinstance(torch.zeros(1).storage(), torch.FloatStorage) is True
    assert isinstance(ember.zeros(1).storage(), ember.LongStorage) == \
        isinstance(torch.zeros(1).storage(), torch.LongStorage) is False
    assert ember.TypedStorage([1, 2], dtype=ember.float64).tolist() == \
        torch.TypedStorage([1, 2], dtype=torch.float64).tolist()
    assert ember.TypedStorage(2).dtype.name == str(torch.TypedStorage(2).dtype)[6:]
    data = np.array([1.0, 2.0], "<f4").tobytes()
    assert ember.FloatStorage.from_buffer(data, "little").tolist() == \
        torch.FloatStorage.from_buffer(data, "little").tolist()


@pytest.mark.parametrize("dtype_name", ["float32", "int64", "uint8", "bool", "complex64"])
def test_storage_type_and_is_storage(dtype_name):
    e_dtype, t_dtype = DTYPE_PAIRS[dtype_name]
    e, t = ember.zeros(1, dtype=e_dtype), torch.zeros(1, dtype=t_dtype)
    assert e.storage_type().__name__ == t.storage_type().__name__
    assert ember.is_storage(e.storage()) and ember.is_storage(e.untyped_storage())
    assert not ember.is_storage(e) and not torch.is_storage(t)


def test_repr_matches_torch_up_to_the_module_name():
    def normalise(text):
        return text.replace("torch.", "").replace("ember.", "")

    for e, t in ((ember.UntypedStorage([1, 2]), torch.UntypedStorage([1, 2])),
                 (ember.tensor([1.5, 2.0]).storage(), torch.tensor([1.5, 2.0]).storage()),
                 (ember.zeros(2, device="meta").untyped_storage(),
                  torch.zeros(2, device="meta").untyped_storage())):
        assert normalise(repr(e)) == normalise(repr(t))


# ---------------------------------------------------------------- Tensor.set_


def _both_set(make_args):
    e_base, t_base = _pair([0., 1., 2., 3., 4., 5.])
    e, t = ember.zeros(2), torch.zeros(2)
    e.set_(*make_args(e_base, ember))
    t.set_(*make_args(t_base, torch))
    return e, t, e_base, t_base


@pytest.mark.parametrize("make_args", [
    lambda b, m: (b.storage(), 1, (2, 2), (1, 1)),
    lambda b, m: (b.untyped_storage(), 2, (3,)),
    lambda b, m: (b.untyped_storage(),),
    lambda b, m: (b.storage(),),
    lambda b, m: (b[1:],),
    lambda b, m: (b.t() if b.dim() > 1 else b[::2],),
    lambda b, m: (b, 3, (2,), (2,)),
    lambda b, m: (),
], ids=["typed-geometry", "untyped-offset", "untyped", "typed", "tensor", "strided-tensor",
        "tensor-geometry", "empty"])
def test_set_matches_torch_and_shares_memory(make_args):
    e, t, e_base, t_base = _both_set(make_args)
    assert e.tolist() == t.tolist()
    assert (e.shape, e.stride(), e.storage_offset()) == \
        (tuple(t.shape), t.stride(), t.storage_offset())
    if e.numel():
        e.fill_(9.)
        t.fill_(9.)
        assert e_base.tolist() == t_base.tolist()


def test_set_bumps_the_version_and_keeps_dtype():
    e, t = ember.zeros(2), torch.zeros(2)
    ev, tv = e._version, t._version
    e.set_(ember.arange(3.))
    t.set_(torch.arange(3.))
    assert e._version - ev == t._version - tv
    assert e.dtype is ember.float32


def test_set_errors_match_torch():
    e_base, t_base = _pair([0., 1., 2.])
    _raises_like(lambda: ember.zeros(2, dtype=ember.int64).set_(e_base.storage()),
                 lambda: torch.zeros(2, dtype=torch.int64).set_(t_base.storage()))
    _raises_like(lambda: ember.zeros(3).set_(ember.zeros(2, dtype=ember.int64)),
                 lambda: torch.zeros(3).set_(torch.zeros(2, dtype=torch.int64)))
    _raises_like(lambda: ember.zeros(2, requires_grad=True).set_(e_base.storage()),
                 lambda: torch.zeros(2, requires_grad=True).set_(t_base.storage()))
    _raises_like(lambda: ember.zeros(2).set_(e_base.storage(), -1, (2,)),
                 lambda: torch.zeros(2).set_(t_base.storage(), -1, (2,)))
    with pytest.raises(TypeError, match="set_\\(\\) received an invalid combination"):
        ember.zeros(2).set_(5)
    with pytest.raises(TypeError, match="set_\\(\\) received an invalid combination"):
        torch.zeros(2).set_(5)


def test_set_out_of_bounds_errors_where_torch_would_resize():
    # torch grows a resizable storage to fit; ember's storages of tensors never grow, and it
    # raises torch's out-of-bounds message instead (torch's own for non-resizable memory)
    e = ember.from_numpy(np.zeros(2, np.float32))
    t = torch.from_numpy(np.zeros(2, np.float32))
    with pytest.raises(RuntimeError) as expected:
        torch.zeros(1).set_(t.untyped_storage(), 0, (3,))
    with pytest.raises(RuntimeError, match="out of bounds for storage of size 8"):
        ember.zeros(1).set_(e.untyped_storage(), 0, (3,))
    assert "not resizable" in str(expected.value)


def test_set_on_a_standalone_storage_then_serialization(tmp_path):
    storage = ember.UntypedStorage(16).fill_(0)
    e = ember.zeros(1).set_(storage, 1, (3,))
    e.fill_(1.)
    assert e.storage_offset() == 1 and e.untyped_storage().data_ptr() == storage.data_ptr()
    t = torch.zeros(1).set_(torch.UntypedStorage(16).fill_(0), 1, (3,))
    t.fill_(1.)
    assert e.untyped_storage().tolist() == t.untyped_storage().tolist()
    ember.save(e, tmp_path / "e.pt")
    assert torch.load(tmp_path / "e.pt").tolist() == t.tolist()
    assert ember.load(tmp_path / "e.pt").tolist() == e.tolist()


def test_docstring_examples_run():
    import doctest

    import ember.storage

    finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner(
        optionflags=doctest.NORMALIZE_WHITESPACE)
    for test in finder.find(ember.storage, globs={"ember": ember}):
        runner.run(test)
    assert runner.summarize(verbose=False).failed == 0
