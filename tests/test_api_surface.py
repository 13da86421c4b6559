"""What real PyTorch programs reach for at the edges of the API: any sequence as an index,
devices such as ``cpu:0``, factories given ``size=``, the rarer Tensor attributes, keyword
arguments and top-level names, each against torch."""

import math
import warnings

import numpy as np
import pytest
import torch

import ember
from conftest import assert_same, make_pair


def _outcome(fn):
    """``fn()``'s result as a comparable value, or the type of the exception it raised."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = fn()
    except Exception as err:  # noqa: BLE001 - the exception type is what is compared
        return type(err)
    if hasattr(result, "shape"):
        return tuple(result.shape), np.asarray(result.detach().cpu().numpy()).tolist()
    return result


def _raises_like(fn_e, fn_t, match=None):
    """Both calls raise the same exception type (and ember's message matches ``match``)."""
    with pytest.raises(Exception) as t_err:
        fn_t()
    with pytest.raises(type(t_err.value), match=match):
        fn_e()


# ---------------------------------------------------------------- sequences as indices


class _Index:
    """An object that is not an int but converts to one (``__index__``)."""

    def __index__(self):
        return 2


INDEX_KEYS = {
    "range": lambda m: range(3),
    "range with a list": lambda m: (range(3), [1, 2, 3]),
    "stepped range": lambda m: range(0, 4, 2),
    "empty range": lambda m: range(0),
    "range in a tuple": lambda m: (range(2),),
    "list of ranges": lambda m: [range(2), range(2)],
    "numpy int64": lambda m: np.array([0, 2]),
    "numpy int32": lambda m: np.array([0, 2], dtype=np.int32),
    "numpy 2-d": lambda m: np.array([[0, 1], [2, 3]]),
    "numpy bool": lambda m: np.array([True, False, True, False]),
    "numpy float": lambda m: np.array([0.7, 1.9]),
    "numpy 0-d": lambda m: np.array(1),
    "nested list": lambda m: [[0, 1], [2, 3]],
    "bool list": lambda m: [True, False, True, False],
    "float list": lambda m: [0.0, 1.0],
    "float list, int": lambda m: ([0.0, 1.0], 0),
    "list with a slice": lambda m: [0, slice(None)],
    "list with None": lambda m: [0, None],
    "list of tensors": lambda m: [m.tensor(0), m.tensor(1)],
    "__index__": lambda m: _Index(),
    "__index__ in a tuple": lambda m: (1, _Index()),
    "long list": lambda m: [0] * 40,
    "float": lambda m: 1.0,
    "numpy float scalar": lambda m: np.float64(1.0),
    "numpy bool scalar": lambda m: np.bool_(True),
    "set": lambda m: {1, 2},
    "string": lambda m: "a",
    "bytes": lambda m: b"ab",
}


@pytest.mark.parametrize("name", INDEX_KEYS)
def test_sequence_index_reads_as_torch(name):
    make_key = INDEX_KEYS[name]
    e = ember.arange(24).reshape(4, 6)
    t = torch.arange(24).reshape(4, 6)
    assert _outcome(lambda: e[make_key(ember)]) == _outcome(lambda: t[make_key(torch)])


@pytest.mark.parametrize("name", ["range with a list", "numpy int64", "nested list", "bool list",
                                  "__index__", "list with a slice"])
def test_sequence_index_writes_as_torch(name):
    make_key = INDEX_KEYS[name]
    e = ember.arange(24).reshape(4, 6)
    t = torch.arange(24).reshape(4, 6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e[make_key(ember)] = -1
        t[make_key(torch)] = -1
    assert_same(e, t)


def test_sequence_taken_as_tuple_warns_as_torch():
    e = ember.arange(24).reshape(4, 6)
    with pytest.warns(UserWarning, match="non-tuple sequence for multidimensional indexing"):
        e[[0, slice(None)]]


def test_bad_index_names_its_type_as_torch():
    e = ember.arange(6)
    with pytest.raises(IndexError, match=r"\(got numpy.float64\)"):
        e[np.float64(1.0)]
    with pytest.raises(IndexError, match=r"\(got set\)"):
        e[{1}]


def test_range_index_has_gradients():
    e, t = make_pair(np.arange(12.0).reshape(4, 3), requires_grad=True)
    (e[range(3), [0, 1, 2]] * 2).sum().backward()
    (t[range(3), [0, 1, 2]] * 2).sum().backward()
    assert_same(e.grad, t.grad)


# ---------------------------------------------------------------- devices with an index


def test_cpu_device_with_index_is_kept_but_tensors_land_on_cpu():
    assert repr(ember.device("cpu:0")) == repr(torch.device("cpu:0"))
    assert (ember.device("cpu:0") == ember.device("cpu")) == (torch.device("cpu:0") ==
                                                              torch.device("cpu"))
    assert str(ember.device("cpu", 0)) == str(torch.device("cpu", 0))
    made = {
        "zeros": lambda m: m.zeros(2, device="cpu:0"),
        "tensor": lambda m: m.tensor([1.0], device="cpu:0"),
        "randn": lambda m: m.randn(2, device=m.device("cpu", 0)),
        "to": lambda m: m.ones(2).to("cpu:0"),
        "to device=": lambda m: m.ones(2).to(device=m.device("cpu:3")),
        "new_zeros": lambda m: m.ones(2).new_zeros(2, device="cpu:0"),
        "zeros_like": lambda m: m.zeros_like(m.ones(2), device="cpu:0"),
        "Linear": lambda m: m.nn.Linear(2, 2, device="cpu:0").weight,
        "module.to": lambda m: m.nn.Linear(2, 2).to("cpu:0").weight,
        "meta:0": lambda m: m.zeros(2, device="meta:0"),
    }
    for name, make in made.items():
        assert repr(make(ember).device) == repr(make(torch).device), name
    assert repr(ember.Generator(device="cpu:0").device) == repr(
        torch.Generator(device="cpu:0").device)


def test_cpu0_tensor_mixes_with_cpu_tensor():
    e = ember.ones(2, device="cpu:0") + ember.arange(2.0)
    t = torch.ones(2, device="cpu:0") + torch.arange(2.0)
    assert_same(e, t)
    assert_same(ember.arange(3.0).to("cpu:0") * 2, torch.arange(3.0).to("cpu:0") * 2)


@pytest.mark.parametrize("text", ["cpu:00", "cuda:01", "cpu:-1", "cpu: 0", "cpu:x"])
def test_bad_device_strings_raise_as_torch(text):
    _raises_like(lambda: ember.device(text), lambda: torch.device(text), match="Invalid device")


# ---------------------------------------------------------------- sizes by keyword

SIZE_KEYWORD_CALLS = {
    "empty": lambda m, x: m.empty(size=(2, 3)),
    "empty list": lambda m, x: m.empty(size=[2, 3], dtype=m.int32),
    "zeros": lambda m, x: m.zeros(size=(2, 3)),
    "zeros Size": lambda m, x: m.zeros(size=m.Size([2])),
    "ones": lambda m, x: m.ones(size=(2, 3), dtype=m.float64),
    "full": lambda m, x: m.full(size=(2,), fill_value=3.0),
    "rand": lambda m, x: m.rand(size=(2, 3), generator=m.Generator()),
    "randn": lambda m, x: m.randn(size=(2, 3)),
    "randint": lambda m, x: m.randint(5, size=(2, 3)),
    "normal": lambda m, x: m.normal(0.0, 1.0, size=(2, 3)),
    "new_empty": lambda m, x: x.new_empty(size=(2, 3)),
    "new_zeros": lambda m, x: x.new_zeros(size=(2, 3)),
    "new_ones": lambda m, x: x.new_ones(size=[2]),
    "view": lambda m, x: x.view(size=(3, 2)),
    "reshape": lambda m, x: x.reshape(shape=(3, 2)),
    "torch.reshape": lambda m, x: m.reshape(x, shape=(6,)),
    "expand": lambda m, x: x[:1].expand(size=(4, 3)),
    "permute": lambda m, x: x.permute(dims=(1, 0)),
    "torch.permute": lambda m, x: m.permute(x, dims=(1, 0)),
    "repeat": lambda m, x: x.repeat(repeats=(2, 1)),
    "sum_to_size": lambda m, x: x.sum_to_size(size=(1, 3)),
    "resize_": lambda m, x: x.clone().resize_(size=(3,)),
    # refused as torch refuses them
    "int size": lambda m, x: m.empty(size=2),
    "tensor size": lambda m, x: m.zeros(size=m.tensor([2, 3])),
    "both": lambda m, x: m.ones((2,), size=(2,)),
    "both reshape": lambda m, x: x.reshape(6, shape=(6,)),
    "int to expand": lambda m, x: x.expand(size=3),
    "int to new_empty": lambda m, x: x.new_empty(size=3),
}


@pytest.mark.parametrize("name", SIZE_KEYWORD_CALLS)
def test_sizes_by_keyword_as_torch(name):
    call = SIZE_KEYWORD_CALLS[name]
    e, t = ember.ones(2, 3), torch.ones(2, 3)

    def shape_and_dtype(m, x):
        result = call(m, x)
        return tuple(result.shape), str(result.dtype).split(".")[1]
    assert _outcome(lambda: shape_and_dtype(ember, e)) == _outcome(
        lambda: shape_and_dtype(torch, t))


def test_sizes_by_keyword_give_torch_values():
    assert_same(ember.ones(size=(2, 3)), torch.ones(size=(2, 3)))
    ember.manual_seed(3)
    torch.manual_seed(3)
    assert_same(ember.randn(size=(4,)), torch.randn(size=(4,)))
    assert_same(ember.arange(6.0).view(size=(2, 3)), torch.arange(6.0).view(size=(2, 3)))


# ---------------------------------------------------------------- old sparse product names


def _sparse_value(r):
    """A sparse or dense result as comparable lists (sparse: coalesced indices and values)."""
    if getattr(r, "is_sparse", False):
        r = r.coalesce()
        return "sparse", r.indices().tolist(), r.values().tolist(), list(r.shape)
    return r.tolist()


def _sparse_operands(m):
    a = m.tensor([[0.0, 2.0], [0.0, 0.0], [1.0, 0.0]])
    b = m.tensor([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]])
    return a, a.to_sparse(), b, (a @ a.t()).to_sparse()


@pytest.mark.parametrize("name", ["spmm", "dsmm", "hspmm", "hsmm", "smm"])
@pytest.mark.parametrize("sparse_input", [True, False])
def test_sparse_dense_products_as_torch(name, sparse_input):
    def run(m):
        a, s, b, _ = _sparse_operands(m)
        return _sparse_value(getattr(m, name)(s if sparse_input else a, b))
    assert _outcome(lambda: run(ember)) == _outcome(lambda: run(torch))


@pytest.mark.parametrize("case", ["plain", "scaled", "saddmm", "dense input", "sparse mat2",
                                  "bad shapes"])
def test_sspaddmm_as_torch(case):
    def run(m):
        a, s, b, c = _sparse_operands(m)
        call = {"plain": lambda: m.sspaddmm(c, s, b),
                "scaled": lambda: m.sspaddmm(c, s, b, beta=2, alpha=0.5),
                "saddmm": lambda: m.saddmm(c, s, b),
                "dense input": lambda: m.sspaddmm(a @ a.t(), s, b),
                "sparse mat2": lambda: m.sspaddmm(c, s, b.to_sparse()),
                "bad shapes": lambda: m.sspaddmm(c, s, b.t())}[case]
        return _sparse_value(call())
    assert _outcome(lambda: run(ember)) == _outcome(lambda: run(torch))


# ---------------------------------------------------------------- rarer Tensor attributes

TENSOR_ATTRIBUTE_CALLS = {
    **{flag: (lambda flag: lambda m, x: getattr(x, flag))(flag)
       for flag in ("is_xpu", "is_ipu", "is_maia", "is_mkldnn", "is_mps", "is_mtia",
                    "is_nested", "is_vulkan", "is_xla")},
    **{name: (lambda name: lambda m, x: getattr(x, name)())(name)
       for name in ("values", "indices", "coalesce", "is_coalesced", "crow_indices",
                    "col_indices", "ccol_indices", "row_indices", "sparse_dim", "dense_dim",
                    "is_distributed", "int_repr", "q_scale", "q_zero_point", "qscheme",
                    "q_per_channel_scales", "q_per_channel_zero_points", "q_per_channel_axis",
                    "ipu", "xpu", "mtia", "to_mkldnn", "dequantize")},
    "to_sparse_bsr": lambda m, x: x.to_sparse_bsr((1, 1)),
    "to_sparse_bsc": lambda m, x: x.to_sparse_bsc((1, 1)),
    "int dequantize": lambda m, x: m.arange(3).dequantize(),
    "eig": lambda m, x: x.eig(), "symeig": lambda m, x: x.symeig(),
    "lstsq": lambda m, x: x.lstsq(x), "solve": lambda m, x: x.solve(x),
    "reinforce": lambda m, x: x.reinforce(1.0),
    "resize_as_sparse_": lambda m, x: x.resize_as_sparse_(x),
    "sparse_resize_": lambda m, x: x.sparse_resize_((2, 3), 1, 1),
    "sparse_resize_and_clear_": lambda m, x: x.sparse_resize_and_clear_((2, 3), 1, 1),
    "to_padded_tensor": lambda m, x: x.to_padded_tensor(0.0),
    "smm": lambda m, x: x.smm(x.t()), "sspaddmm": lambda m, x: x.sspaddmm(x, x.t()),
    "sparse smm": lambda m, x: _sparse_value(x.to_sparse().smm(x.t())),
    "sparse values": lambda m, x: x.to_sparse().coalesce().values(),
    "const_data_ptr": lambda m, x: x.const_data_ptr() == x.data_ptr(),
    "name": lambda m, x: x.name,
    "volatile": lambda m, x: x.volatile,
    "module_load": lambda m, x: (x.module_load(m.ones(2, 3)), x),
    "module_load assign": lambda m, x: (x.module_load(m.ones(2, 3), assign=True), x),
    "nonzero_static": lambda m, x: m.tensor([0, 3, 0, 5]).nonzero_static(size=3),
    "nonzero_static cut": lambda m, x: m.tensor([0, 3, 0, 5]).nonzero_static(size=1,
                                                                             fill_value=7),
    "nonzero_static 2-d": lambda m, x: x.nonzero_static(size=7),
    "nonzero_static negative": lambda m, x: x.nonzero_static(size=-1),
    "slice_inverse": lambda m, x: m.arange(4.0).slice_inverse(m.ones(2), 0, 1, 3),
    "slice_inverse 2-d": lambda m, x: x.slice_inverse(x[1:], 0, 1),
    "grad_dtype": lambda m, x: str(x.requires_grad_().grad_dtype).split(".")[1],
    "grad_dtype of a non-leaf": lambda m, x: (x.requires_grad_() * 2).grad_dtype,
    "record_stream": lambda m, x: x.record_stream(None),
    "index": lambda m, x: x.index((0,), None),
}


def _plain(value):
    """Tensors (also inside tuples) as shapes and values, for comparing outcomes."""
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    if hasattr(value, "shape") and hasattr(value, "detach"):
        return tuple(value.shape), str(value.dtype).split(".")[1], value.detach().tolist()
    return value


@pytest.mark.parametrize("name", TENSOR_ATTRIBUTE_CALLS)
def test_rare_tensor_attributes_as_torch(name):
    call = TENSOR_ATTRIBUTE_CALLS[name]

    def run(m):
        return _plain(call(m, m.arange(6.0).reshape(2, 3)))
    expected = _outcome(lambda: run(torch))
    if name == "index":  # torch's first-class dims need functorch.dim; ember has none
        expected = NotImplementedError
    assert _outcome(lambda: run(ember)) == expected


def test_removed_methods_name_their_replacement():
    with pytest.raises(RuntimeError, match="torch.linalg.eig"):
        ember.ones(2, 2).eig()
    with pytest.raises(RuntimeError, match="torch.linalg.lstsq"):
        ember.ones(2, 2).lstsq(ember.ones(2, 2))


def test_chalf_names_the_missing_dtype_and_the_alternative():
    with pytest.raises(NotImplementedError, match=r"complex32.*cfloat"):
        ember.ones(2).chalf()


def test_volatile_warns_as_torch():
    e = ember.ones(2)
    with pytest.warns(UserWarning, match="volatile was removed"):
        e.volatile = True
    with pytest.warns(UserWarning, match="volatile was removed"):
        assert e.volatile is False


def test_record_stream_accepts_a_stream():
    assert ember.ones(2).record_stream(ember.Stream()) is None


DIM_ORDER_TENSORS = {
    "contiguous": lambda m: m.zeros(3, 4),
    "transposed": lambda m: m.zeros(3, 4).t(),
    "channels last": lambda m: m.zeros(2, 3, 4, 5).to(memory_format=m.channels_last),
    "channels last 3d": lambda m: m.zeros(2, 3, 4, 5, 6).to(memory_format=m.channels_last_3d),
    "permuted": lambda m: m.zeros(2, 3, 4).permute(1, 2, 0),
    "size-1 permuted": lambda m: m.zeros(2, 1, 3).permute(2, 1, 0),
    "strided": lambda m: m.zeros(3, 4)[:, ::2],
    "expanded": lambda m: m.zeros(3, 4).expand(2, 3, 4),
    "0-d": lambda m: m.zeros(()),
    "1-d": lambda m: m.zeros(5),
    "ambiguous size-1": lambda m: m.zeros(1, 3),
    "size-1 channels last": lambda m: m.zeros(2, 1, 3, 3).to(memory_format=m.channels_last),
}


@pytest.mark.parametrize("name", DIM_ORDER_TENSORS)
@pytest.mark.parametrize("check", [False, True, "formats", "bad"])
def test_dim_order_as_torch(name, check):
    def run(m):
        x = DIM_ORDER_TENSORS[name](m)
        if check == "formats":
            return x.dim_order(ambiguity_check=[m.contiguous_format, m.channels_last])
        if check == "bad":
            return x.dim_order(ambiguity_check="yes")
        return x.dim_order(ambiguity_check=check)
    assert _outcome(lambda: run(ember)) == _outcome(lambda: run(torch))


# ---------------------------------------------------------------- keyword arguments


def _x(m):
    return m.arange(1.0, 7.0).reshape(2, 3)


KEYWORDS_TORCH_HONOURS = {
    "conj_physical out": lambda m: m.conj_physical(m.tensor([1 + 2j]), out=m.empty(0, dtype=m.cfloat)),
    "diff out": lambda m: m.diff(_x(m), out=m.empty(0)),
    "diff n=0 out": lambda m: m.diff(_x(m), n=0, out=m.empty(0)),
    "cpu memory_format": lambda m: m.ones(1, 2, 2, 2).cpu(memory_format=m.channels_last).stride(),
    "pinv rcond": lambda m: m.linalg.pinv(m.tensor([[1.0, 0.0], [0.0, 1e-5]]), rcond=1e-3),
    "pinv rcond positional": lambda m: m.linalg.pinv(m.tensor([[1.0, 0.0], [0.0, 1e-5]]), 1e-3),
    "pinv rcond with rtol": lambda m: m.linalg.pinv(m.eye(2), rcond=1e-3, rtol=1e-3),
    "stft align_to_window with center": lambda m: m.stft(m.ones(16), 8, return_complex=True,
                                                         align_to_window=True),
    "hspmm out": lambda m: m.hspmm(_x(m).to_sparse(), m.ones(3, 2), out=m.empty(0)),
    "sspaddmm out": lambda m: m.sspaddmm(m.eye(2).to_sparse(), m.eye(2).to_sparse(), m.eye(2),
                                         out=m.empty(0)),
}


@pytest.mark.parametrize("name", KEYWORDS_TORCH_HONOURS)
def test_keywords_torch_accepts(name):
    call = KEYWORDS_TORCH_HONOURS[name]
    assert _outcome(lambda: _plain(call(ember))) == _outcome(lambda: _plain(call(torch)))


@pytest.mark.parametrize("win_length", [3, 4, 5, 8])
@pytest.mark.parametrize("align", [True, False])
def test_stft_align_to_window_as_torch(win_length, align):
    def run(m):
        window = m.hann_window(win_length, dtype=m.float64)
        return m.stft(m.arange(16.0, dtype=m.float64), 8, hop_length=4, win_length=win_length,
                      window=window, return_complex=True, center=False, align_to_window=align)
    assert_same(run(ember), run(torch))


def test_mm_out_dtype_multiplies_half_into_float32():
    a = np.arange(6.0).reshape(2, 3)
    b = np.arange(12.0).reshape(3, 4)
    for m_e, m_t in ((ember.mm, torch.mm), (ember.bmm, None)):
        e = m_e(*(ember.tensor(v[None] if m_t is None else v, dtype=ember.float16) for v in (a, b)),
                out_dtype=ember.float32)
        assert e.dtype is ember.float32
        np.testing.assert_allclose(e.numpy().reshape(2, 4), a @ b)
    with pytest.raises(RuntimeError, match="out_dtype must be the same as input dtype"):
        ember.mm(ember.ones(2, 2), ember.ones(2, 2), out_dtype=ember.float64)
    sparse = ember.spmm(ember.eye(2).to_sparse(), ember.ones(2, 2), out_dtype=ember.float64)
    assert sparse.dtype is ember.float64


# keywords that torch's override stubs list but that torch itself refuses (TypeError): every
# keyword api_census.py reports as missing is one of these (its count is of signatures)
KEYWORDS_TORCH_REFUSES = {
    "abs_ out": lambda m: _x(m).abs_(out=m.empty(0)),
    "bernoulli_ out": lambda m: _x(m).bernoulli_(0.5, out=m.empty(0)),
    "conj out": lambda m: m.conj(_x(m), out=m.empty(0)),
    "cumsum_ out": lambda m: _x(m).cumsum_(0, out=m.empty(0)),
    "diag_embed diagonal": lambda m: m.diag_embed(m.ones(2), diagonal=1),
    "diag_embed out": lambda m: m.diag_embed(m.ones(2), out=m.empty(0)),
    "gather out": lambda m: _x(m).gather(1, m.tensor([[0], [1]]), out=m.empty(0)),
    "histogram min max": lambda m: m.histogram(_x(m), bins=3, min=0.0, max=10.0),
    "index_reduce include_input": lambda m: _x(m).index_reduce(
        0, m.tensor([0]), m.ones(1, 3), "prod", include_input=False),
    "msort descending": lambda m: m.msort(_x(m), descending=True),
    "polygamma out": lambda m: _x(m).polygamma(1, out=m.empty(0)),
    "positive out": lambda m: m.positive(_x(m), out=m.empty(0)),
    "relu inplace": lambda m: m.relu(_x(m), inplace=True),
    "resolve_conj out": lambda m: m.resolve_conj(_x(m), out=m.empty(0)),
    "squeeze out": lambda m: m.squeeze(_x(m), out=m.empty(0)),
    "unsqueeze out": lambda m: m.unsqueeze(_x(m), 0, out=m.empty(0)),
    "topk descending": lambda m: m.topk(_x(m), 2, descending=True),
    "tril_ out": lambda m: _x(m).tril_(out=m.empty(0)),
    "where x y": lambda m: m.where(_x(m) > 2, x=_x(m), y=m.zeros(2, 3)),
    "alpha_dropout inplace": lambda m: m.alpha_dropout(_x(m), 0.0, False, inplace=True),
    "bce with logits size_average": lambda m: m.binary_cross_entropy_with_logits(
        _x(m), m.ones(2, 3), size_average=False),
    "celu inplace": lambda m: m.celu(_x(m), inplace=True),
    "cosine_embedding_loss reduce": lambda m: m.cosine_embedding_loss(
        _x(m), _x(m), m.ones(2), reduce=False),
    "dropout inplace": lambda m: m.dropout(_x(m), 0.0, False, inplace=True),
    "embedding max_norm": lambda m: m.embedding(_x(m), m.tensor([0]), max_norm=1.0),
    "full_like out": lambda m: m.full_like(_x(m), 2.0, out=m.empty(0)),
    "hinge_embedding_loss reduce": lambda m: m.hinge_embedding_loss(_x(m), m.ones(2, 3),
                                                                    reduce=False),
    "imag out": lambda m: m.imag(m.ones(2, dtype=m.cfloat), out=m.empty(0)),
    "real out": lambda m: m.real(m.ones(2, dtype=m.cfloat), out=m.empty(0)),
    "kl_div size_average": lambda m: m.kl_div(_x(m), _x(m), size_average=False),
    "linalg.cond ord": lambda m: m.linalg.cond(m.eye(2), ord=1),
    "linalg.lstsq cond": lambda m: m.linalg.lstsq(m.eye(2), m.eye(2), cond=None),
    "margin_ranking_loss reduce": lambda m: m.margin_ranking_loss(_x(m), _x(m), m.ones(2, 3),
                                                                  reduce=False),
    "max_pool1d_with_indices return_indices": lambda m: m.max_pool1d_with_indices(
        m.ones(1, 1, 4), 2, return_indices=True),
    "rrelu inplace": lambda m: m.rrelu(_x(m), inplace=True),
    "selu inplace": lambda m: m.selu(_x(m), inplace=True),
    "threshold inplace": lambda m: m.threshold(_x(m), 2.0, 0.0, inplace=True),
    "triplet_margin_loss size_average": lambda m: m.triplet_margin_loss(
        _x(m), _x(m), _x(m), size_average=False),
    "smm out_dtype": lambda m: m.smm(_x(m).to_sparse(), m.ones(3, 2), out_dtype=m.float32),
    "nuclear_norm p": lambda m: m.nuclear_norm(m.eye(2), p="nuc"),
    "nuclear_norm dtype": lambda m: m.nuclear_norm(m.eye(2), dtype=m.float64),
    "embedding norm_type": lambda m: m.embedding(_x(m), m.tensor([0]), norm_type=2.0),
    "embedding_bag norm_type": lambda m: m.embedding_bag(_x(m), m.tensor([0, 1]), m.tensor([0]),
                                                         norm_type=2.0),
    "Tensor.sspaddmm out": lambda m: m.eye(2).to_sparse().sspaddmm(
        m.eye(2).to_sparse(), m.eye(2), out=m.empty(0)),
    "Tensor.squeeze out": lambda m: _x(m).squeeze(out=m.empty(0)),
    "Tensor.where y": lambda m: _x(m).where(_x(m) > 2, y=0.0),
    "Tensor.topk descending": lambda m: _x(m).topk(2, descending=True),
    "Tensor.histogram min": lambda m: _x(m).histogram(3, min=0.0, max=10.0),
    "resolve_neg out": lambda m: _x(m).resolve_neg(out=m.empty(0)),
    "triu_ out": lambda m: _x(m).triu_(out=m.empty(0)),
    "renorm_ out": lambda m: _x(m).renorm_(2, 0, 1.0, out=m.empty(0)),
    "absolute_ out": lambda m: _x(m).absolute_(out=m.empty(0)),
    "conj_physical_ out": lambda m: _x(m).conj_physical_(out=m.empty(0)),
    "cumprod_ out": lambda m: _x(m).cumprod_(0, out=m.empty(0)),
    "float_power_ out": lambda m: _x(m).double().float_power_(2, out=m.empty(0)),
    "ldexp_ out": lambda m: _x(m).ldexp_(m.ones(2, 3), out=m.empty(0)),
    "polygamma_ out": lambda m: _x(m).polygamma_(1, out=m.empty(0)),
    "bce with logits reduce": lambda m: m.binary_cross_entropy_with_logits(
        _x(m), m.ones(2, 3), reduce=False),
    "cosine_embedding_loss size_average": lambda m: m.cosine_embedding_loss(
        _x(m), _x(m), m.ones(2), size_average=False),
    "embedding_bag max_norm": lambda m: m.embedding_bag(_x(m), m.tensor([0, 1]), m.tensor([0]),
                                                        max_norm=1.0),
    "hinge_embedding_loss size_average": lambda m: m.hinge_embedding_loss(
        _x(m), m.ones(2, 3), size_average=False),
    "kl_div reduce": lambda m: m.kl_div(_x(m), _x(m), reduce=False),
    "margin_ranking_loss size_average": lambda m: m.margin_ranking_loss(
        _x(m), _x(m), m.ones(2, 3), size_average=False),
    "triplet_margin_loss reduce": lambda m: m.triplet_margin_loss(_x(m), _x(m), _x(m),
                                                                  reduce=False),
}


@pytest.mark.parametrize("name", KEYWORDS_TORCH_REFUSES)
def test_keywords_torch_refuses_are_refused(name):
    call = KEYWORDS_TORCH_REFUSES[name]
    assert _outcome(lambda: call(torch)) is TypeError
    assert _outcome(lambda: call(ember)) is TypeError


# ---------------------------------------------------------------- sym_* helpers

SYM_CALLS = {
    "sym_int float": lambda m: m.sym_int(3.7), "sym_int negative": lambda m: m.sym_int(-3.7),
    "sym_int bool": lambda m: m.sym_int(True), "sym_int inf": lambda m: m.sym_int(math.inf),
    "sym_float": lambda m: m.sym_float(3), "sym_max mixed": lambda m: m.sym_max(2, 3.0),
    "sym_max ints": lambda m: m.sym_max(2, 3), "sym_max bool": lambda m: m.sym_max(True, 2),
    "sym_max tensor": lambda m: m.sym_max(2, m.tensor(3.0)),
    "sym_min mixed": lambda m: m.sym_min(2.0, 3), "sym_not": lambda m: m.sym_not(0),
    "sym_ite": lambda m: m.sym_ite(True, 1, 2), "sym_ite int": lambda m: m.sym_ite(0, 1, 2),
    "sym_sqrt": lambda m: m.sym_sqrt(4), "sym_sqrt negative": lambda m: m.sym_sqrt(-1),
    "sym_sum": lambda m: m.sym_sum([1, 2, 3]), "sym_sum empty": lambda m: m.sym_sum([]),
    "sym_sum floats": lambda m: m.sym_sum([1.5, 2]),
    "sym_fresh_size": lambda m: m.sym_fresh_size(3),
    "constrain": lambda m: m.sym_constrain_range(3, min=0, max=5),
    "constrain below": lambda m: m.sym_constrain_range(3, min=4),
    "constrain above": lambda m: m.sym_constrain_range(3, max=2),
    "constrain for size": lambda m: m.sym_constrain_range_for_size(0),
    "constrain for size negative": lambda m: m.sym_constrain_range_for_size(-1),
    "isinstance SymInt": lambda m: isinstance(3, m.SymInt),
    "isinstance SymFloat": lambda m: isinstance(3.0, m.SymFloat),
}


@pytest.mark.parametrize("name", SYM_CALLS)
def test_sym_helpers_on_plain_numbers_as_torch(name):
    e, t = _outcome(lambda: SYM_CALLS[name](ember)), _outcome(lambda: SYM_CALLS[name](torch))
    assert e == t and type(e) is type(t)


def test_sym_classes_cannot_be_made():
    with pytest.raises(NotImplementedError, match="torch.SymInt"):
        ember.SymInt(3)


# ---------------------------------------------------------------- cond, fork, wait, Future

COND_CALLS = {
    "tensor pred": lambda m: m.cond(m.tensor(True), lambda x: x + 1, lambda x: x - 1,
                                    (m.ones(2),)),
    "bool pred, list": lambda m: m.cond(False, lambda x: x + 1, lambda x: x - 1, [m.ones(2)]),
    "int pred": lambda m: m.cond(1, lambda: m.ones(1), lambda: m.zeros(1)),
    "float pred": lambda m: m.cond(0.0, lambda: m.ones(1), lambda: m.zeros(1)),
    "two-element pred": lambda m: m.cond(m.tensor([True, False]), lambda: 1, lambda: 2),
    "string pred": lambda m: m.cond("a", lambda: 1, lambda: 2),
    "not callable": lambda m: m.cond(True, 1, lambda: 2),
}


@pytest.mark.parametrize("name", COND_CALLS)
def test_cond_runs_the_branch_as_torch(name):
    assert _outcome(lambda: _plain(COND_CALLS[name](ember))) == _outcome(
        lambda: _plain(COND_CALLS[name](torch)))


def test_fork_wait_and_future_as_torch():
    for m in (ember, torch):
        assert m.wait(m.fork(lambda x, k: x * k, m.ones(2), k=3)).tolist() == [3.0, 3.0]
        future = m.Future([])
        chained = future.then(lambda done: done.value() + 1)
        assert not future.done()
        future.set_result(1)
        assert future.done() and future.wait() == 1 and chained.wait() == 2
    failed = ember.Future()  # set_exception: torch.futures.Future's, on ember's base class
    failed.set_exception(ValueError("boom"))
    with pytest.raises(ValueError, match="boom"):
        failed.wait()
    with pytest.raises(ZeroDivisionError):
        ember.wait(ember.fork(lambda: 1 / 0))


# ---------------------------------------------------------------- build flags and switches


def test_build_flags_and_device_modules():
    assert ember.has_lapack is torch.has_lapack and ember.has_spectral is torch.has_spectral
    assert ember.is_vulkan_available() is torch.is_vulkan_available()
    assert ember.get_device_module("cpu") is ember.cpu
    assert ember.get_device_module(ember.device("cpu")) is ember.cpu
    assert ember.thread_safe_generator() is torch.thread_safe_generator()
    assert ember.init_num_threads() is None
    _raises_like(lambda: ember.get_device_module(3), lambda: torch.get_device_module(3))


@pytest.mark.parametrize("mode", ["default", "warn", "error", 0, 1, 2, "x", 3, 1.0])
def test_deterministic_debug_mode_as_torch(mode):
    def run(m):
        try:
            m.set_deterministic_debug_mode(mode)
            return (m.get_deterministic_debug_mode(), m.are_deterministic_algorithms_enabled(),
                    m.is_deterministic_algorithms_warn_only_enabled())
        finally:
            m.set_deterministic_debug_mode(0)
    assert _outcome(lambda: run(ember)) == _outcome(lambda: run(torch))


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_older_autocast_switches_as_torch():
    for m in (ember, torch):
        m.set_autocast_cpu_enabled(True)
        assert m.is_autocast_cpu_enabled() and m.is_autocast_enabled("cpu")
        m.set_autocast_cpu_enabled(False)
        assert not m.is_autocast_cpu_enabled()
        for kind in ("ipu", "xla"):
            getattr(m, f"set_autocast_{kind}_enabled")(True)
            assert getattr(m, f"is_autocast_{kind}_enabled")()
            getattr(m, f"set_autocast_{kind}_enabled")(False)
    assert str(ember.get_autocast_ipu_dtype()) == "ember.float16" and str(
        torch.get_autocast_ipu_dtype()) == "torch.float16"
    assert str(ember.get_autocast_xla_dtype()).split(".")[1] == str(
        torch.get_autocast_xla_dtype()).split(".")[1]
    depths = [f() for m in (ember, torch) for f in (m.autocast_increment_nesting,
                                                     m.autocast_increment_nesting,
                                                     m.autocast_decrement_nesting,
                                                     m.autocast_decrement_nesting)]
    assert depths[:4] == depths[4:]


def test_older_autocast_switches_warn_as_torch():
    with pytest.warns(DeprecationWarning, match=r"get_autocast_dtype\('xla'\)"):
        ember.get_autocast_xla_dtype()


# ---------------------------------------------------------------- native_* and friends


def _pair(shape, seed=0):
    array = np.random.default_rng(seed).standard_normal(shape)
    return ember.tensor(array, dtype=ember.float64), torch.tensor(array)


def _assert_all_same(e_results, t_results):
    for e, t in zip(e_results, t_results):
        assert_same(e, t)


@pytest.mark.parametrize("affine", [False, True])
def test_native_layer_norm_as_torch(affine):
    (xe, xt), (we, wt), (be, bt) = _pair((2, 3, 4)), _pair((3, 4), 1), _pair((3, 4), 2)
    args_e = (we, be) if affine else (None, None)
    args_t = (wt, bt) if affine else (None, None)
    _assert_all_same(ember.native_layer_norm(xe, [3, 4], *args_e, 1e-5),
                     torch.native_layer_norm(xt, [3, 4], *args_t, 1e-5))


@pytest.mark.parametrize("training", [True, False])
def test_native_batch_norm_as_torch(training):
    (xe, xt), (we, wt), (be, bt) = _pair((4, 3, 5)), _pair(3, 1), _pair(3, 2)
    rm_e, rm_t = ember.zeros(3, dtype=ember.float64), torch.zeros(3, dtype=torch.float64)
    rv_e, rv_t = ember.ones(3, dtype=ember.float64), torch.ones(3, dtype=torch.float64)
    _assert_all_same(ember.native_batch_norm(xe, we, be, rm_e, rv_e, training, 0.1, 1e-5),
                     torch.native_batch_norm(xt, wt, bt, rm_t, rv_t, training, 0.1, 1e-5))
    assert_same(rm_e, rm_t)
    assert_same(rv_e, rv_t)


def test_native_group_norm_as_torch():
    (xe, xt), (we, wt), (be, bt) = _pair((2, 6, 5)), _pair(6, 1), _pair(6, 2)
    _assert_all_same(ember.native_group_norm(xe, we, be, 2, 6, 5, 3, 1e-5),
                     torch.native_group_norm(xt, wt, bt, 2, 6, 5, 3, 1e-5))


def test_native_layer_norm_gradients_match_torch():
    (xe, xt) = _pair((2, 4))
    xe.requires_grad_()
    xt.requires_grad_()
    out_e, mean_e, rstd_e = ember.native_layer_norm(xe, [4], None, None, 1e-5)
    out_t, mean_t, rstd_t = torch.native_layer_norm(xt, [4], None, None, 1e-5)
    (out_e * ember.arange(4.0, dtype=ember.float64)).sum().backward()
    (out_t * torch.arange(4.0, dtype=torch.float64)).sum().backward()
    assert_same(xe.grad, xt.grad)


@pytest.mark.parametrize("p, train", [(0.5, False), (0.0, True), (1.0, True)])
def test_native_dropout_as_torch(p, train):
    (xe, xt) = _pair((3, 4))
    _assert_all_same(ember.native_dropout(xe, p, train), torch.native_dropout(xt, p, train))


def test_native_dropout_keeps_what_its_mask_says():
    x = ember.ones(1000)
    out, mask = ember.native_dropout(x, 0.3, True)
    assert mask.dtype is ember.bool
    np.testing.assert_allclose(out.numpy(), mask.numpy() / 0.7, rtol=1e-6)
    assert 0.6 < mask.float().mean().item() < 0.8


NATIVE_CALLS = {
    "native_norm sparse": lambda m, x: m.native_norm(x.to_sparse()),
    "native_norm dense": lambda m, x: m.native_norm(x),
    "nuclear_norm": lambda m, x: m.nuclear_norm(x[0]),
    "nuclear_norm keepdim": lambda m, x: m.nuclear_norm(x[0], True),
    "nuclear_norm dims": lambda m, x: m.nuclear_norm(x, dim=(1, 2), keepdim=True),
    "nuclear_norm 3-d": lambda m, x: m.nuclear_norm(x),
    "norm_except_dim 0": lambda m, x: m.norm_except_dim(x, 2, 0),
    "norm_except_dim 1": lambda m, x: m.norm_except_dim(x, 3, 1),
    "norm_except_dim -1": lambda m, x: m.norm_except_dim(x, 2, -1),
    "empty_permuted strides": lambda m, x: m.empty_permuted((2, 3, 4, 5), (0, 2, 3, 1)).stride(),
    "empty_permuted bad": lambda m, x: m.empty_permuted((2, 3), (0,)),
    "nonzero_static": lambda m, x: m.nonzero_static(m.tensor([0, 2, 0]), size=3, fill_value=9),
    "slice_inverse": lambda m, x: m.slice_inverse(x, x[:, 1:], 1, 1),
    "conv_tbc": lambda m, x: m.conv_tbc(x.permute(2, 0, 1).contiguous(),
                                        m.arange(18.0, dtype=m.float64).reshape(2, 3, 3),
                                        m.ones(3, dtype=m.float64), 1),
    "affine_grid_generator": lambda m, x: m.affine_grid_generator(
        m.tensor([[[1.0, 0.2, 0.0], [0.1, 1.0, 0.3]]]), [1, 1, 3, 2], False),
    "grid_sampler_3d": lambda m, x: m.grid_sampler_3d(
        x.reshape(1, 1, 2, 3, 4), m.tensor([[[[[0.1, -0.4, 0.3]]]]], dtype=m.float64), 0, 1,
        True),
    "cudnn_is_acceptable": lambda m, x: m.cudnn_is_acceptable(x),
    "is_distributed": lambda m, x: m.is_distributed(x),
    "dequantize": lambda m, x: m.dequantize(m.arange(3)),
    "values_copy dense": lambda m, x: m.values_copy(x),
    "crow_indices_copy dense": lambda m, x: m.crow_indices_copy(x),
}


def _result_or_error(fn):
    """``fn()``, or the type of the exception it raised."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn()
    except Exception as err:  # noqa: BLE001 - the exception type is what is compared
        return type(err)


@pytest.mark.parametrize("name", NATIVE_CALLS)
def test_native_functions_as_torch(name):
    xe, xt = _pair((2, 3, 3))
    e = _result_or_error(lambda: NATIVE_CALLS[name](ember, xe))
    t = _result_or_error(lambda: NATIVE_CALLS[name](torch, xt))
    if isinstance(t, torch.Tensor):
        assert_same(e, t)
    else:
        assert e == t


def test_sparse_accessor_copies_are_copies():
    s = ember.tensor([[0.0, 2.0], [3.0, 0.0]]).to_sparse().coalesce()
    values = ember.values_copy(s)
    assert values.tolist() == [2.0, 3.0]
    assert ember.indices_copy(s).tolist() == [[0, 1], [1, 0]]
    values.zero_()
    assert s.values().tolist() == [2.0, 3.0]


def test_from_file_reads_as_torch(tmp_path):
    path = tmp_path / "data.bin"
    np.arange(6, dtype=np.float32).tofile(path)
    assert_same(ember.from_file(str(path), size=4), torch.from_file(str(path), size=4,
                                                                     dtype=torch.float32))
    shared = ember.from_file(str(path), shared=True, size=6, dtype=ember.float32)
    shared[0] = 7.0
    del shared
    assert np.fromfile(path, dtype=np.float32)[0] == 7.0
    _raises_like(lambda: ember.from_file(str(path), size=10),
                 lambda: torch.from_file(str(path), size=10, dtype=torch.float32))


# ---------------------------------------------------------------- names ember cannot back

from ember import _unsupported  # noqa: E402


@pytest.mark.parametrize("name", sorted(_unsupported.UNSUPPORTED_DTYPES))
def test_unsupported_dtypes_describe_themselves_as_torch(name):
    e, t = getattr(ember, name), getattr(torch, name)
    assert repr(e) == repr(t).replace("torch.", "ember.")
    for attribute in ("itemsize", "is_floating_point", "is_complex", "is_signed"):
        assert _outcome(lambda: getattr(e, attribute)) == _outcome(lambda: getattr(t, attribute))
    assert e == getattr(ember, name) and e != ember.float32
    with pytest.raises(NotImplementedError, match=f"no {name} tensors"):
        ember.zeros(2, dtype=e)


def test_chalf_is_complex32():
    assert ember.chalf is ember.complex32 and torch.chalf is torch.complex32


@pytest.mark.parametrize("name", sorted(_unsupported.UNSUPPORTED_CLASSES))
def test_unsupported_classes_name_the_torch_api(name):
    assert name in dir(torch)
    with pytest.raises(NotImplementedError, match=f"torch.{name} is not available in ember"):
        getattr(ember, name)()


@pytest.mark.parametrize("name", sorted(_unsupported.UNSUPPORTED_FUNCTIONS))
def test_unsupported_functions_name_the_torch_api(name):
    assert callable(getattr(torch, name))
    with pytest.raises(NotImplementedError, match=f"torch.{name} is not available in ember"):
        getattr(ember, name)(ember.ones(2))


def test_script_classes_and_errors_are_ember_jit_ones():
    assert ember.ScriptModule is ember.jit.ScriptModule
    assert ember.ScriptFunction is ember.jit.ScriptFunction
    assert ember.JITException is ember.jit.Error and torch.JITException is torch.jit.Error
    assert issubclass(ember.AcceleratorError, RuntimeError)
    assert issubclass(torch.AcceleratorError, RuntimeError)
    assert [m.name for m in ember.AggregationType] == ["SUM", "AVG"]
    assert ember.AVG.value == torch.AVG.value and ember.SUM.value == torch.SUM.value


def test_layouts_of_missing_tensor_kinds_exist_as_torch():
    for name in ("jagged", "sparse_bsr", "sparse_bsc"):
        assert repr(getattr(ember, name)) == repr(getattr(torch, name)).replace("torch", "ember")
        assert isinstance(getattr(ember, name), ember.layout)


SPARSE_ATTRIBUTES = ("values", "indices", "crow_indices", "col_indices", "ccol_indices",
                     "row_indices", "is_coalesced", "sparse_dim", "dense_dim", "is_xpu",
                     "is_nested", "is_mps", "dim_order")


@pytest.mark.parametrize("layout", ["coo", "csr", "csc"])
@pytest.mark.parametrize("name", SPARSE_ATTRIBUTES)
def test_attributes_of_sparse_tensors_as_torch(layout, name):
    def run(m):
        dense = m.tensor([[0.0, 2.0], [3.0, 0.0]])
        s = {"coo": dense.to_sparse, "csr": dense.to_sparse_csr,
             "csc": dense.to_sparse_csc}[layout]()
        value = getattr(s, name)
        value = value() if callable(value) else value
        return value.tolist() if isinstance(value, (ember.Tensor, torch.Tensor)) else value
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert _outcome(lambda: run(ember)) == _outcome(lambda: run(torch))


# ---------------------------------------------------------------- NumPy's argument names

NUMPY_NAME_CALLS = {
    "sum axis": lambda m, x: x.sum(axis=0), "torch.sum axis": lambda m, x: m.sum(x, axis=1),
    "sum keepdims": lambda m, x: x.sum(0, keepdims=True),
    "mean axis keepdims": lambda m, x: x.mean(axis=0, keepdims=True),
    "max axis": lambda m, x: x.max(axis=0).values, "amax axis": lambda m, x: x.amax(axis=0),
    "std axis": lambda m, x: x.std(axis=0), "cat axis": lambda m, x: m.cat([x, x], axis=0),
    "concat axis": lambda m, x: m.concat([x, x], axis=2),
    "stack axis": lambda m, x: m.stack([x, x], axis=1),
    "softmax axis": lambda m, x: x.softmax(axis=0), "cumsum axis": lambda m, x: x.cumsum(axis=0),
    "argmax axis": lambda m, x: x.argmax(axis=0), "any axis": lambda m, x: (x > 3).any(axis=0),
    "squeeze axis": lambda m, x: x[:1].squeeze(axis=0),
    "unsqueeze axis": lambda m, x: x.unsqueeze(axis=0),
    "add x": lambda m, x: m.add(x=x, other=x), "abs x": lambda m, x: m.abs(x=x),
    "mul x1 x2": lambda m, x: m.mul(x1=x, x2=x), "eq x": lambda m, x: m.eq(x=x, other=x),
    "gather axis": lambda m, x: x.gather(axis=0, index=m.zeros(1, 3, 4, dtype=m.long)),
    "index_select axis": lambda m, x: x.index_select(axis=0, index=m.tensor([0])),
    "flip axis (refused)": lambda m, x: x.flip(axis=0),
    "transpose axis (refused)": lambda m, x: x.transpose(axis0=0, axis1=1),
    "both names (refused)": lambda m, x: x.sum(axis=0, dim=0),
    "split split_size": lambda m, x: x.split(split_size=1)[0],
    "swapaxes axis0": lambda m, x: m.swapaxes(x, axis0=0, axis1=2),
    "Tensor.swapaxes axis0": lambda m, x: x.swapaxes(axis0=0, axis1=1),
    "swapdims dim0": lambda m, x: x.swapdims(dim0=0, dim1=1),
}


@pytest.mark.parametrize("name", NUMPY_NAME_CALLS)
def test_numpy_argument_names_as_torch(name):
    def run(m):
        return NUMPY_NAME_CALLS[name](m, m.arange(24.0).reshape(2, 3, 4))
    assert _outcome(lambda: run(ember)) == _outcome(lambda: run(torch))


@pytest.mark.parametrize("kind", ["mps", "xpu", "xla", "ipu", "vulkan", "mtia", "mps:0", "hpu"])
def test_other_device_types_make_devices_but_hold_no_tensors(kind):
    assert repr(ember.device(kind)) == repr(torch.device(kind))
    if ":" in kind or kind == "hpu":  # torch's errors there come from deeper, other types
        with pytest.raises(RuntimeError, match=f"not linked with support for {kind[:3]}"):
            ember.ones(1).to(kind)
        return
    _raises_like(lambda: ember.ones(1).to(kind), lambda: torch.ones(1).to(kind))


def test_unknown_device_type_lists_torchs_types():
    _raises_like(lambda: ember.device("foo"), lambda: torch.device("foo"),
                 match="Expected one of cpu, cuda, ipu, xpu")
