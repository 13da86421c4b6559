"""MaskedTensor (torch.masked's prototype) against torch's own: values under the mask, masks,
dtypes, printing, warnings, exception types and gradients."""

import copy
import doctest
import pickle
import warnings

import numpy as np
import pytest
import torch

import ember

pytestmark = pytest.mark.filterwarnings("ignore:The PyTorch API of MaskedTensors")

DATA = np.arange(6.0, dtype=np.float32).reshape(2, 3)
MASK = np.array([[True, False, True], [False, True, True]])


def make(lib, data=DATA, mask=MASK, **kwargs):
    """A MaskedTensor of ``lib`` (torch or ember) over copies of the NumPy ``data``/``mask``."""
    return lib.masked.masked_tensor(lib.tensor(np.array(data)), lib.tensor(np.array(mask)),
                                    **kwargs)


def run(case, lib):
    """``case(lib)``'s result, or the type of the exception it raised."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return case(lib)
        except Exception as error:  # compared by type with torch's
            return type(error)


def plain(t):
    """A torch or ember tensor as a NumPy array."""
    return np.asarray(t.detach().cpu().numpy())


def assert_same(ours, theirs):
    """ember's result matches torch's: exceptions by type, MaskedTensors by mask and by the
    data under the mask, tensors by value and dtype, anything else by equality."""
    if isinstance(theirs, type) and issubclass(theirs, BaseException):
        assert isinstance(ours, type) and issubclass(ours, theirs), (ours, theirs)
    elif isinstance(theirs, torch.masked.MaskedTensor):
        assert isinstance(ours, ember.masked.MaskedTensor), ours
        mask = plain(theirs.get_mask())
        np.testing.assert_array_equal(plain(ours.get_mask()), mask)
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
        np.testing.assert_allclose(plain(ours.get_data())[mask],
                                   plain(theirs.get_data())[mask], rtol=1e-5, atol=1e-6)
    elif isinstance(theirs, torch.Tensor):
        assert isinstance(ours, ember.Tensor) and not isinstance(ours, ember.masked.MaskedTensor)
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
        np.testing.assert_allclose(plain(ours), plain(theirs), rtol=1e-5, atol=1e-6)
    elif isinstance(theirs, (tuple, list)):
        assert isinstance(ours, (tuple, list)) and len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            assert_same(a, b)
    elif isinstance(theirs, (torch.Size, torch.dtype)):
        assert str(ours).split(".")[-1] == str(theirs).split(".")[-1]
    else:
        assert ours == theirs


def compare(case):
    assert_same(run(case, ember), run(case, torch))


def other_mask(lib):
    return make(lib, DATA * 2, ~MASK)


BOOLS = ([True, False, True], [True, True, False])
INTS = ([5, 6, 7], [True, True, False])

CASES = {
    # pointwise unary, methods, functions, operators, in place
    "sin": lambda T: T.sin(make(T)),
    "method exp": lambda T: make(T).exp(),
    "exp_": lambda T: make(T).exp_(),
    "neg": lambda T: -make(T),
    "abs": lambda T: abs(make(T)),
    "pos": lambda T: +make(T),
    "pow": lambda T: make(T).pow(2),
    "pow operator": lambda T: make(T) ** 2,
    "pow masked exponent": lambda T: make(T) ** make(T),
    "clamp": lambda T: make(T).clamp(1, 3),
    "clamp min keyword": lambda T: make(T).clamp(min=1),
    "clamp tensor bound": lambda T: T.clamp(make(T), T.zeros(2, 3)),
    "sin out=None": lambda T: T.sin(make(T), out=None),
    "round decimals": lambda T: T.round(make(T), decimals=1),
    "sigmoid of int": lambda T: make(T, *INTS).sigmoid(),
    "sin_ of int": lambda T: make(T, *INTS).sin_(),
    "isnan": lambda T: T.isnan(make(T)),
    "invert": lambda T: ~make(T, *BOOLS),
    "nan_to_num keyword": lambda T: make(T).nan_to_num(nan=0.0),
    "relu unsupported": lambda T: T.relu(make(T)),
    "logical_not unsupported": lambda T: T.logical_not(make(T)),
    # binary
    "add": lambda T: make(T) + make(T),
    "add scalar": lambda T: make(T) + 1,
    "radd scalar": lambda T: 1 + make(T),
    "add tensor": lambda T: make(T) + T.tensor(DATA),
    "add tensor first": lambda T: T.add(T.tensor(DATA), make(T)),
    "add broadcast tensor": lambda T: make(T) + T.ones(3),
    "add broadcast masked": lambda T: make(T, DATA[:1], MASK[:1]) + T.ones(2, 3),
    "add alpha": lambda T: T.add(make(T), make(T), alpha=2),
    "add by keyword": lambda T: T.add(make(T), other=make(T)),
    "mask mismatch": lambda T: make(T) + other_mask(T),
    "shape mismatch": lambda T: make(T) + make(T, DATA[0], MASK[0]),
    "mul": lambda T: make(T) * make(T),
    "mul bool tensor": lambda T: make(T) * T.tensor(MASK),
    "div": lambda T: make(T) / 2,
    "rdiv": lambda T: 2 / make(T),
    "rsub": lambda T: 1 - make(T),
    "rpow": lambda T: 2 ** make(T),
    "div rounding_mode": lambda T: T.div(make(T), 2, rounding_mode="floor"),
    "floordiv": lambda T: make(T) // 2,
    "mod": lambda T: make(T) % 2,
    "and": lambda T: make(T, *BOOLS) & make(T, *BOOLS),
    "or": lambda T: make(T, *BOOLS) | make(T, *BOOLS),
    "xor": lambda T: make(T, *BOOLS) ^ make(T, *BOOLS),
    "matmul": lambda T: make(T) @ make(T).t(),
    "maximum": lambda T: T.maximum(make(T), make(T) * 0 + 3),
    "atan2": lambda T: T.atan2(make(T), make(T) + 1),
    "add_": lambda T: make(T).add_(1),
    "add_ masked": lambda T: make(T).add_(make(T)),
    "iadd": lambda T: make(T).__iadd__(make(T)),
    "add_ mismatch": lambda T: make(T).add_(other_mask(T)),
    "add_ tensor": lambda T: make(T).add_(T.ones(2, 3)),
    "mul_ scalar": lambda T: make(T).mul_(3),
    "int plus float": lambda T: make(T, *INTS) + 0.5,
    "eq None": lambda T: make(T) == None,  # noqa: E711
    "ne None": lambda T: make(T) != None,  # noqa: E711
    "eq str": lambda T: make(T) == "a",
    "add list": lambda T: make(T) + [1, 2, 3],
    "in list": lambda T: (lambda mt: mt in [mt])(make(T)),
    "type()": lambda T: make(T).type(),
    # comparisons
    "lt": lambda T: make(T) < 2,
    "lt mismatch (torch's __lt__)": lambda T: make(T) < other_mask(T),
    "gt": lambda T: make(T) > 2,
    "gt mismatch": lambda T: make(T) > other_mask(T),
    "ge": lambda T: make(T) >= 2,
    "le": lambda T: make(T) <= 2,
    "eq": lambda T: make(T) == 2,
    "eq masked": lambda T: make(T) == make(T),
    "ne": lambda T: make(T) != 2,
    "eq mismatch": lambda T: make(T) == other_mask(T),
    # reductions
    "sum": lambda T: make(T).sum(),
    "sum 0": lambda T: make(T).sum(0),
    "sum -1": lambda T: make(T).sum(-1),
    "sum keepdim": lambda T: make(T).sum(1, keepdim=True),
    "sum dim keyword": lambda T: make(T).sum(dim=1),
    "torch.sum": lambda T: T.sum(make(T), 1),
    "sum dims": lambda T: make(T).sum((0, 1)),
    "sum dim list": lambda T: make(T).sum([0, 1]),
    "sum dtype": lambda T: make(T).sum(1, dtype=T.float64),
    "sum bad dim": lambda T: make(T).sum(5),
    "sum non-contiguous": lambda T: make(T).t().sum(0),
    "sum bool": lambda T: make(T, *BOOLS).sum(),
    "sum int32": lambda T: make(T, np.array(INTS[0], np.int32), INTS[1]).sum(),
    "mean": lambda T: make(T).mean(),
    "mean 1": lambda T: make(T).mean(1),
    "mean dtype": lambda T: make(T).mean(1, dtype=T.float64),
    "mean int": lambda T: make(T, *INTS).mean(),
    "amax": lambda T: make(T).amax(),
    "amax 1": lambda T: make(T).amax(1),
    "amax keepdim": lambda T: make(T).amax(1, True),
    "amin": lambda T: make(T).amin(0),
    "amax int": lambda T: make(T, *INTS).amax(0),
    "argmax": lambda T: make(T).argmax(),
    "argmax 1": lambda T: make(T).argmax(1),
    "argmax keywords": lambda T: make(T).argmax(dim=1, keepdim=True),
    "argmin": lambda T: make(T).argmin(0),
    "argmax int": lambda T: make(T, *INTS).argmax(),
    "prod": lambda T: make(T).prod(),
    "prod 1": lambda T: make(T).prod(1),
    "prod int": lambda T: make(T, *INTS).prod(),
    "all": lambda T: (make(T) > 1).all(),
    "all 1": lambda T: (make(T) > 1).all(1),
    "all keyword": lambda T: make(T).all(dim=1),
    "all bool 0": lambda T: make(T, *BOOLS).all(0),
    "var": lambda T: make(T).var(),
    "var 1": lambda T: make(T).var(1),
    "var int": lambda T: make(T, *INTS).var(),
    "var unbiased keyword": lambda T: make(T).var(1, unbiased=False),
    "std": lambda T: make(T).std(),
    "std 1": lambda T: make(T).std(1),
    "all masked sum": lambda T: make(T, [1.0, 2.0], [False, False]).sum(),
    "all masked amax": lambda T: make(T, [1.0, 2.0], [False, False]).amax(),
    "all masked mean": lambda T: make(T, [1.0, 2.0], [False, False]).mean(),
    "any unsupported": lambda T: (make(T) > 1).any(),
    "max unsupported": lambda T: make(T).max(),
    "norm unsupported": lambda T: make(T).norm(),
    "cumsum unsupported": lambda T: make(T).cumsum(1),
    # softmax
    "softmax": lambda T: T.softmax(make(T), 1),
    "softmax method": lambda T: make(T).softmax(1),
    "softmax dim 0": lambda T: T.softmax(make(T), 0),
    "F.softmax": lambda T: T.nn.functional.softmax(make(T), -1),
    "F.softmax dtype": lambda T: T.nn.functional.softmax(make(T), 1, dtype=T.float64),
    "F.softmin": lambda T: T.nn.functional.softmin(make(T), 1),
    "softmax masked row": lambda T: T.softmax(make(T, DATA, [[False] * 3, [True] * 3]), 1),
    "softmax int": lambda T: make(T, *INTS).softmax(0),
    "log_softmax unsupported": lambda T: T.log_softmax(make(T), 1),
    # where
    "where": lambda T: T.where(T.tensor(MASK), make(T), make(T) * 2),
    "where tensor": lambda T: T.where(T.tensor(MASK), make(T), T.tensor(DATA)),
    "where masks": lambda T: T.where(T.tensor(MASK), make(T), other_mask(T)).get_mask(),
    "where one argument": lambda T: T.where(make(T)),
    "where keywords": lambda T: T.where(T.tensor(MASK), input=make(T), other=make(T)),
    # shape and indexing
    "transpose": lambda T: make(T).transpose(0, 1),
    "t": lambda T: make(T).t(),
    "t 1-d": lambda T: make(T, *INTS).t(),
    "mT": lambda T: make(T).mT,
    "T unsupported": lambda T: make(T).T,
    "permute unsupported": lambda T: make(T).permute(1, 0),
    "swapaxes": lambda T: make(T).swapaxes(0, 1),
    "view": lambda T: make(T).view(3, 2),
    "view -1 mask": lambda T: make(T).view(-1).get_mask(),
    "view non-contiguous": lambda T: make(T).t().view(6),
    "view_as": lambda T: make(T).view_as(T.zeros(3, 2)),
    "reshape": lambda T: make(T).reshape(3, 2),
    "reshape_as": lambda T: make(T).reshape_as(T.zeros(3, 2)),
    "flatten": lambda T: make(T).flatten(),
    "select": lambda T: make(T)[0],
    "slice": lambda T: make(T)[:, 1:],
    "step": lambda T: make(T)[:, ::2],
    "ellipsis": lambda T: make(T)[..., 1],
    "None index": lambda T: make(T)[None, 0],
    "list index": lambda T: make(T)[[1, 0]],
    "bool index": lambda T: make(T)[T.tensor(MASK)],
    "narrow": lambda T: make(T).narrow(1, 0, 2),
    "unsqueeze": lambda T: make(T).unsqueeze(0),
    "squeeze unsupported": lambda T: make(T).unsqueeze(0).squeeze(0),
    "expand": lambda T: make(T)[0:1].expand(3, 3),
    "expand_as": lambda T: make(T)[:1].expand_as(make(T)),
    "cat": lambda T: T.cat([make(T), make(T)]),
    "cat dim 1": lambda T: T.cat([make(T), make(T)], 1),
    "stack": lambda T: T.stack([make(T), make(T)]),
    "split": lambda T: make(T).split(1),
    "chunk": lambda T: make(T).chunk(2),
    "unbind unsupported": lambda T: make(T).unbind(),
    "iterate unsupported": lambda T: list(make(T)),
    "flip unsupported": lambda T: make(T).flip(0),
    "index_select unsupported": lambda T: make(T).index_select(0, T.tensor([1])),
    "setitem unsupported": lambda T: make(T).__setitem__(0, 1.0),
    "fill_ unsupported": lambda T: make(T).fill_(1.0),
    "masked_fill unsupported": lambda T: make(T).masked_fill(T.tensor(MASK), 0.0),
    "zeros_like unsupported": lambda T: T.zeros_like(make(T)),
    # conversions and copies
    "to float64": lambda T: make(T).to(T.float64),
    "double": lambda T: make(T).double(),
    "half": lambda T: make(T).half(),
    "int": lambda T: make(T).int(),
    "long": lambda T: make(T).long(),
    "bool conversion": lambda T: make(T).bool(),
    "byte unsupported dtype": lambda T: make(T).byte(),
    "type": lambda T: make(T).type(T.float64),
    "float of int": lambda T: make(T, *INTS).float(),
    "cpu": lambda T: make(T).cpu(),
    "to same dtype is self": lambda T: (lambda mt: mt.to(T.float32) is mt)(make(T)),
    "clone": lambda T: make(T).clone(),
    "detach": lambda T: make(T, requires_grad=True).detach(),
    "detach requires_grad": lambda T: make(T, requires_grad=True).detach().requires_grad,
    "data": lambda T: make(T).data,
    "contiguous": lambda T: make(T).t().contiguous(),
    "is_contiguous": lambda T: make(T).t().is_contiguous(),
    "ones_like": lambda T: T.ones_like(make(T)),
    "copy_": lambda T: make(T).copy_(make(T) * 2),
    "is_same_size": lambda T: make(T).is_same_size(make(T)),
    "deepcopy": lambda T: copy.deepcopy(make(T)),
    "to_dense": lambda T: make(T).to_dense(),
    "to_dense is new": lambda T: (lambda mt: mt.to_dense() is mt)(make(T)),
    "to_tensor": lambda T: make(T).to_tensor(0),
    "to_tensor nan": lambda T: make(T).to_tensor(float("nan")).isnan(),
    "get_data": lambda T: make(T).get_data(),
    "get_mask": lambda T: make(T).get_mask(),
    # metadata and scalars
    "shape": lambda T: make(T).shape,
    "size": lambda T: make(T).size(),
    "size 1": lambda T: make(T).size(1),
    "dtype": lambda T: make(T).dtype,
    "dim": lambda T: make(T).dim(),
    "ndim": lambda T: make(T).ndim,
    "numel": lambda T: make(T).numel(),
    "len": lambda T: len(make(T)),
    "len 0-d": lambda T: len(make(T).sum()),
    "stride": lambda T: make(T).stride(),
    "is_floating_point": lambda T: make(T).is_floating_point(),
    "requires_grad": lambda T: make(T).requires_grad,
    "is_leaf": lambda T: make(T).is_leaf,
    "is_sparse": lambda T: make(T).is_sparse,
    "is_sparse_coo": lambda T: make(T).is_sparse_coo(),
    "is_tensor": lambda T: T.is_tensor(make(T)),
    "isinstance Tensor": lambda T: isinstance(make(T), T.Tensor),
    "is_masked_tensor": lambda T: T.masked.is_masked_tensor(make(T)),
    "is_masked_tensor plain": lambda T: T.masked.is_masked_tensor(T.ones(2)),
    "item": lambda T: make(T).sum().item(),
    "item of several": lambda T: make(T).item(),
    "item masked out": lambda T: make(T, 2.0, False).item(),
    "item specified": lambda T: make(T, 2.0, True).item(),
    "bool of several": lambda T: bool(make(T)),
    "bool": lambda T: bool(make(T).sum()),
    "float": lambda T: float(make(T).sum()),
    "int()": lambda T: int(make(T, 2.0, True)),
    "tolist": lambda T: make(T).tolist(),
    "numpy": lambda T: make(T).numpy(),
    "format": lambda T: f"{make(T)}",
    "format spec": lambda T: f"{make(T).sum():.2f}",
    # creation and its checks
    "data not a tensor": lambda T: T.masked.masked_tensor([1.0, 2.0], T.tensor([True, False])),
    "mask not a tensor": lambda T: T.masked.masked_tensor(T.tensor(DATA), [True, False]),
    "mask not bool": lambda T: T.masked.masked_tensor(T.tensor(DATA), T.tensor(MASK).int()),
    "mask dims": lambda T: T.masked.masked_tensor(T.tensor(DATA), T.tensor(MASK[0])),
    "mask size": lambda T: T.masked.masked_tensor(T.tensor(DATA), T.tensor(MASK[:, :2])),
    "uint8 data": lambda T: make(T, DATA.astype(np.uint8)),
    "complex data": lambda T: make(T, DATA.astype(np.complex64)),
    "float16 data": lambda T: make(T, DATA.astype(np.float16)),
    "int16 data": lambda T: make(T, DATA.astype(np.int16)),
    "bfloat16 data": lambda T: T.masked.masked_tensor(T.tensor(DATA).bfloat16(), T.tensor(MASK)),
    "MaskedTensor class": lambda T: T.masked.MaskedTensor(T.tensor(DATA), T.tensor(MASK)),
    "masked data": lambda T: T.masked.masked_tensor(make(T), T.tensor(MASK)),
    "requires_grad int": lambda T: make(T, *INTS, requires_grad=True),
    "requires_grad=True": lambda T: make(T, requires_grad=True).requires_grad,
    "as_masked_tensor": lambda T: T.masked.as_masked_tensor(T.tensor(DATA), T.tensor(MASK)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_matches_torch(name):
    compare(CASES[name])


# ---------------------------------------------------------------- every pointwise operation

RNG = np.random.default_rng(0)
POINTWISE_DATA = RNG.standard_normal((4, 5)).astype(np.float32)
POINTWISE_OTHER = RNG.standard_normal((4, 5)).astype(np.float32)
POINTWISE_MASK = RNG.random((4, 5)) > 0.5


def _unary_input(name):
    """Data inside ``name``'s domain (float32 unless the operation wants integers)."""
    name = name.rstrip("_")
    data = POINTWISE_DATA
    if name in ("log", "log10", "log1p", "log2", "sqrt", "rsqrt", "acosh", "arccosh"):
        data = np.abs(data) + 1
    elif name in ("acos", "arccos", "asin", "arcsin", "logit", "atanh", "arctanh", "erfinv"):
        data = np.clip(np.abs(data) * 0.4, 0, 0.9)
    elif name == "bitwise_not":
        data = (data * 100).astype(np.int8)
    return data


def _unary_arguments(name):
    name = name.rstrip("_")
    return {"pow": (2.0,), "clamp": (-0.5, 0.5), "clip": (-0.5, 0.5)}.get(name, ())


@pytest.mark.parametrize("name", ember.masked.maskedtensor.unary.UNARY_NAMES +
                         ember.masked.maskedtensor.unary.INPLACE_UNARY_NAMES)
def test_every_unary_operation_matches_torch(name):
    def case(T):
        mt = make(T, _unary_input(name), POINTWISE_MASK)
        function = getattr(mt, name) if name.endswith("_") else getattr(T, name)
        arguments = _unary_arguments(name)
        return function(*arguments) if name.endswith("_") else function(mt, *arguments)
    compare(case)


def _binary_inputs(name):
    name = name.rstrip("_")
    if name.startswith("bitwise_") and "shift" not in name:
        return (POINTWISE_DATA * 100).astype(np.int8), (POINTWISE_OTHER * 100).astype(np.int8)
    if "shift" in name:
        return (np.abs(POINTWISE_DATA) * 3).astype(np.int64), \
            (np.abs(POINTWISE_OTHER) * 3).astype(np.int64)
    return POINTWISE_DATA, POINTWISE_OTHER


@pytest.mark.parametrize("second", ["masked", "plain"])
@pytest.mark.parametrize("name", ember.masked.maskedtensor.binary.BINARY_NAMES +
                         ember.masked.maskedtensor.binary.INPLACE_BINARY_NAMES)
def test_every_binary_operation_matches_torch(name, second):
    def case(T):
        first_data, second_data = _binary_inputs(name)
        mt = make(T, first_data, POINTWISE_MASK)
        other = make(T, second_data, POINTWISE_MASK) if second == "masked" else \
            T.tensor(second_data)
        if name.endswith("_"):
            return getattr(mt, name)(other)
        return getattr(T, name)(mt, other)
    compare(case)


@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 4)], ids=str)
@pytest.mark.parametrize("name", ember.masked.maskedtensor.reductions.REDUCE_NAMES)
def test_every_reduction_over_every_dim_matches_torch(name, shape):
    rng = np.random.default_rng(len(shape))
    data = rng.standard_normal(shape).astype(np.float32)
    mask = rng.random(shape) > 0.4
    compare(lambda T: getattr(make(T, data, mask), name)())
    for dim in range(-len(shape), len(shape)):
        for keepdim in (False, True):
            compare(lambda T: getattr(make(T, data, mask), name)(dim, keepdim))


REPRS = {
    "2-d float": (DATA, MASK),
    "int": (DATA.astype(np.int64), MASK),
    "bool": ([True, False], [True, False]),
    "3-d": (np.arange(8.0).reshape(2, 2, 2), np.ones((2, 2, 2), bool)),
    "0-d masked out": (1.5, False),
    "0-d int": (3, True),
    "0-d float": (2.25, True),
    "wide numbers": ([123456.789, -1e-5, 1e10], [True, True, True]),
    "wide int": ([123456789, 1], [True, False]),
    "half": (np.array([1.5, 2.25], np.float16), [True, False]),
    "special values": ([-0.0, float("nan"), float("inf")], [True, True, True]),
    "empty rows": (np.zeros((0, 3), np.float32), np.zeros((0, 3), bool)),
}


@pytest.mark.parametrize("name", list(REPRS))
def test_printing_matches_torch(name):
    data, mask = REPRS[name]
    compare(lambda T: repr(make(T, data, mask)))
    compare(lambda T: str(make(T, data, mask)))


def test_printing_empty_raises_as_torch():
    compare(lambda T: repr(make(T, np.zeros(0, np.float32), np.zeros(0, bool))))


def test_repr_of_results_matches_torch():
    for case in ("sin", "sum 0", "softmax", "lt", "and", "int", "t"):
        compare(lambda T: repr(CASES[case](T)))


def _message(case, lib):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            case(lib)
        except Exception as error:
            return str(error).replace("ember.", "torch.")
    return None


@pytest.mark.parametrize("name", [
    "clamp tensor bound", "round decimals", "add alpha", "mask mismatch", "add_ mismatch",
    "gt mismatch", "sum bad dim", "mean int", "softmax int", "where one argument",
    "where keywords", "item of several", "item masked out", "bool of several", "tolist",
    "numpy", "data not a tensor", "mask not a tensor", "mask not bool", "mask dims",
    "mask size", "uint8 data", "masked data", "len 0-d", "format spec"])
def test_error_messages_match_torch(name):
    assert _message(CASES[name], ember) == _message(CASES[name], torch)


ATEN_CASES = {
    "sin": lambda A, T, mt: A.sin(mt),
    "sin.default": lambda A, T, mt: A.sin.default(mt),
    "add.Tensor": lambda A, T, mt: A.add.Tensor(mt, mt),
    "add scalar": lambda A, T, mt: A.add(mt, 2),
    "mul_": lambda A, T, mt: A.mul_(mt, 2),
    "mask mismatch": lambda A, T, mt: A.add(mt, other_mask(T)),
    "sum": lambda A, T, mt: A.sum(mt),
    "sum.dim_IntList": lambda A, T, mt: A.sum.dim_IntList(mt, [1]),
    "amax": lambda A, T, mt: A.amax(mt, [0]),
    "select.int": lambda A, T, mt: A.select.int(mt, 0, 1),
    "transpose.int": lambda A, T, mt: A.transpose.int(mt, 0, 1),
    "view": lambda A, T, mt: A.view(mt, [3, 2]),
    "slice.Tensor": lambda A, T, mt: A.slice.Tensor(mt, 1, 0, 2),
    "cat": lambda A, T, mt: A.cat([mt, mt]),
    "where.self": lambda A, T, mt: A.where.self(T.tensor([[True] * 3, [False] * 3]), mt, mt * 2),
    "clone": lambda A, T, mt: A.clone(mt),
    "_to_copy": lambda A, T, mt: A._to_copy(mt, dtype=T.float64),
    "_softmax": lambda A, T, mt: A._softmax(mt, 1, False),
    "_local_scalar_dense": lambda A, T, mt: A._local_scalar_dense(A.sum(mt)),
    "ones_like": lambda A, T, mt: A.ones_like(mt),
    "relu unsupported": lambda A, T, mt: A.relu(mt),
}


@pytest.mark.parametrize("name", list(ATEN_CASES))
def test_torch_ops_aten_on_masked_tensors_as_torch(name):
    compare(lambda T: ATEN_CASES[name](T.ops.aten, T, make(T)))


MASKED_OPS = {
    "sum": lambda T, mt: T.masked.sum(mt, 1),
    "sum all": lambda T, mt: T.masked.sum(mt),
    "sum mask ignored": lambda T, mt: T.masked.sum(mt, 1, mask=~T.tensor(MASK)),
    "prod": lambda T, mt: T.masked.prod(mt, 1),
    "amax": lambda T, mt: T.masked.amax(mt, 1),
    "amin": lambda T, mt: T.masked.amin(mt),
    "argmax": lambda T, mt: T.masked.argmax(mt, 1),
    "argmin": lambda T, mt: T.masked.argmin(mt, 0),
    "mean": lambda T, mt: T.masked.mean(mt, 1),
    "mean with mask": lambda T, mt: T.masked.mean(mt, 1, mask=T.tensor(MASK)),
    "median": lambda T, mt: T.masked.median(mt, 1),
    "norm": lambda T, mt: T.masked.norm(mt, 2.0, 1),
    "var": lambda T, mt: T.masked.var(mt, 1),
    "var with mask": lambda T, mt: T.masked.var(mt, 1, mask=T.tensor(MASK)),
    "std": lambda T, mt: T.masked.std(mt, 1),
    "logsumexp": lambda T, mt: T.masked.logsumexp(mt, 1),
    "softmax": lambda T, mt: T.masked.softmax(mt, 1),
    "log_softmax": lambda T, mt: T.masked.log_softmax(mt, 1),
    "softmin": lambda T, mt: T.masked.softmin(mt, 0),
    "normalize": lambda T, mt: T.masked.normalize(mt, 2.0, 1),
    "cumsum": lambda T, mt: T.masked.cumsum(mt, 1),
    "cumprod": lambda T, mt: T.masked.cumprod(mt, 1),
    "logaddexp": lambda T, mt: T.masked.logaddexp(mt, mt),
}


@pytest.mark.parametrize("name", list(MASKED_OPS))
def test_masked_operations_take_masked_tensors_as_torch(name):
    compare(lambda T: MASKED_OPS[name](T, make(T)))


def test_masked_operation_gradient_reaches_the_masked_tensor():
    leaves = {}
    for lib in (torch, ember):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            leaves[lib] = make(lib, requires_grad=True)
            (lib.masked.sum(leaves[lib] * leaves[lib], 1) * lib.tensor([1.0, 2.0])).sum() \
                .backward()
    assert_same(leaves[ember].grad, leaves[torch].grad)


# ---------------------------------------------------------------- copies and sharing


def test_masked_tensor_and_as_masked_tensor_copy_their_data():
    for lib in (torch, ember):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            data, mask = lib.zeros(3), lib.tensor([True, True, False])
            mt, amt = lib.masked.masked_tensor(data, mask), lib.masked.as_masked_tensor(data, mask)
            data[0] = 5.0
            mask[0] = False
            assert mt.get_data()[0].item() == 0.0 and amt.get_data()[0].item() == 0.0
            assert bool(mt.get_mask()[0]) and bool(amt.get_mask()[0])


def test_get_data_shares_memory_and_get_mask_is_the_mask():
    for lib in (torch, ember):
        mt = run(lambda T: make(T), lib)
        mt.get_data()[0, 0] = 7.0  # torch's get_data is a view of the data
        assert mt.get_data()[0, 0].item() == 7.0
        assert mt.get_mask() is mt.get_mask()


def test_shape_ops_copy_as_torch():
    for lib in (torch, ember):
        mt = run(lambda T: make(T), lib)
        view = run(lambda T: mt.view(6), lib)
        run(lambda T: view.add_(100), lib)
        assert mt.get_data()[0, 0].item() == 0.0


def test_sparse_data_is_refused_clearly():
    # torch supports sparse COO/CSR MaskedTensors; ember's are strided only
    data = ember.tensor(DATA).to_sparse()
    with pytest.raises(TypeError, match="data layout of ember.sparse_coo is not supported"):
        ember.masked.masked_tensor(data, ember.tensor(MASK).to_sparse())


@pytest.mark.parametrize("requires_grad", [False, True])
@pytest.mark.parametrize("writer,reader", [(ember, ember), (torch, ember), (ember, torch)],
                         ids=["ember-ember", "torch-ember", "ember-torch"])
def test_save_and_load_across_libraries(writer, reader, requires_grad):
    import io

    def saved(lib):
        buffer = io.BytesIO()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lib.save(make(lib, requires_grad=requires_grad), buffer)
        buffer.seek(0)
        return buffer

    loaded = reader.load(saved(writer), weights_only=False)
    expected = reader.load(saved(reader), weights_only=False)  # the reader's own round trip
    assert type(loaded) is type(expected) and type(loaded).__name__ == "MaskedTensor"
    np.testing.assert_array_equal(plain(loaded.get_mask()), MASK)
    np.testing.assert_array_equal(plain(loaded.get_data()), DATA)
    assert loaded.requires_grad == expected.requires_grad == requires_grad


def test_weights_only_load_refuses_a_masked_tensor_as_torch():
    import io

    def load(T):
        buffer = io.BytesIO()
        T.save(make(T), buffer)
        buffer.seek(0)
        return T.load(buffer)
    compare(load)


def test_pickle_round_trip():
    mt = run(lambda T: make(T, requires_grad=True), ember)
    back = run(lambda T: pickle.loads(pickle.dumps(mt)), ember)
    theirs = run(lambda T: pickle.loads(pickle.dumps(make(T, requires_grad=True))), torch)
    assert_same(back, theirs)
    assert back.requires_grad and theirs.requires_grad


# ---------------------------------------------------------------- warnings


def _warning_messages(lib, make_it):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            make_it(lib)
        except Exception:
            pass
    return [(w.category, str(w.message)) for w in caught]


@pytest.mark.parametrize("case", [
    lambda T: make(T),
    lambda T: T.masked.masked_tensor(T.ones(2, requires_grad=True), T.tensor([True, False])),
    lambda T: T.masked.as_masked_tensor(T.ones(2), T.tensor([True, False])),
], ids=["creation", "data requiring grad", "as_masked_tensor"])
def test_creation_warnings_match_torch(case):
    assert _warning_messages(ember, case) == _warning_messages(torch, case)


def test_unsupported_operation_warns_as_torch():
    ours = _warning_messages(ember, lambda T: T.relu(make(T)))
    theirs = _warning_messages(torch, lambda T: T.relu(make(T)))
    assert ours[-1] == theirs[-1]
    assert ours[-1][1].startswith("relu is not implemented in __torch_dispatch__ for MaskedTensor")


@pytest.mark.parametrize("create", [
    lambda: ember.masked.masked_tensor(ember.ones(2), ember.tensor([True, False])),
    lambda: ember.masked.MaskedTensor(ember.ones(2), ember.tensor([True, False])),
    lambda: ember.masked.as_masked_tensor(ember.ones(2), ember.tensor([True, False])),
], ids=["masked_tensor", "MaskedTensor", "as_masked_tensor"])
def test_creation_warning_points_at_the_callers_line(create):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        create()
    assert [w.filename for w in caught] == [__file__]


def test_results_warn_from_one_place():
    mt = run(lambda T: make(T), ember)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        results = [mt + 1, ember.sin(mt), mt.sum(), mt.sum(0), mt[0], mt.softmax(0), mt.double()]
    assert len(caught) == len(results)
    assert len({(w.filename, w.lineno) for w in caught}) == 1


# ---------------------------------------------------------------- autograd


def _gradient_case(lib, function, seed_mask=MASK):
    """The leaf's gradient after ``function(leaf)`` backpropagates a MaskedTensor of ones."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        leaf = make(lib, requires_grad=True)
        out = function(lib, leaf)
        if out.dim() == 0:
            out.backward()
        else:
            out.backward(lib.masked.masked_tensor(lib.ones(out.shape), out.get_mask()))
        return leaf, out


GRADIENTS = {
    "sum": lambda T, x: x.sum(),
    "sum dim": lambda T, x: x.sum(1).sum(),
    "mean": lambda T, x: x.mean(),
    "mean dim": lambda T, x: x.mean(0),
    "amax dim": lambda T, x: x.amax(1),
    "prod dim": lambda T, x: (x + 1).prod(1),
    "var dim": lambda T, x: x.var(1),
    "pointwise chain": lambda T, x: (x * x).sin(),
    "binary": lambda T, x: x * 3 + x / 2 - x,
    "pow": lambda T, x: x ** 3,
    "softmax": lambda T, x: T.softmax(x, 1) * T.tensor(DATA),
    "F.softmin": lambda T, x: T.nn.functional.softmin(x, 0) * T.tensor(DATA),
    "where": lambda T, x: T.where(T.tensor(MASK), x * 2, T.tensor(DATA)),
    "transpose": lambda T, x: x.t() * T.tensor(DATA.T),
    "view": lambda T, x: x.view(6) * T.arange(6.0),
    "select": lambda T, x: x[1] * 2,
    "cat": lambda T, x: T.cat([x, x * 2]),
    "to float64": lambda T, x: x.to(T.float64) * 2,
    "clone": lambda T, x: x.clone() * 2,
    "stack": lambda T, x: T.stack([x, x * 2]),
    "flatten": lambda T, x: x.flatten() * 2,
    "reshape": lambda T, x: x.reshape(3, 2) * 2,
    "amin": lambda T, x: x.amin(),
    "amax": lambda T, x: x.amax(),
    "prod": lambda T, x: x.prod(),
    "std": lambda T, x: x.std(),
    "std dim": lambda T, x: x.std(0),
    "var": lambda T, x: x.var(),
    "softmax float64": lambda T, x: T.softmax(x, 1, dtype=T.float64),
    "half": lambda T, x: x.half().float() * 2,
    "exp_": lambda T, x: (x * 1).exp_(),
    "add_": lambda T, x: (x * 1).add_(x),
    "mul_ tensor": lambda T, x: (x * 1).mul_(T.ones(2, 3) * 2),
    "div tensor": lambda T, x: x / T.tensor(DATA + 1),
    "rdiv": lambda T, x: 2 / (x + 1),
    "broadcast tensor requiring grad": lambda T, x: x + T.ones(3, requires_grad=True),
    "contiguous": lambda T, x: x.t().contiguous() * 2,
    "get_data": lambda T, x: T.masked.as_masked_tensor(x.get_data() * 2, x.get_mask()),
    "masked.sum": lambda T, x: T.masked.as_masked_tensor(T.masked.sum(x, 1),
                                                          T.tensor([True, True])),
    "mT": lambda T, x: x.mT * 2,
    "swapaxes": lambda T, x: x.swapaxes(0, 1) * 2,
    "cat dim 1": lambda T, x: T.cat([x, x], 1),
    "unfold": lambda T, x: x.unfold(1, 2, 1) * 2,
    "where tensor requiring grad": lambda T, x: T.where(T.tensor(MASK), x,
                                                         T.zeros(2, 3, requires_grad=True)),
    "expand": lambda T, x: x[0:1].expand(3, 3) * 2,
    "expand_as": lambda T, x: x[:1].expand_as(x) * 2,
    "narrow": lambda T, x: x.narrow(1, 0, 2) * 2,
    "slice": lambda T, x: x[:, 1:] * 2,
    "step": lambda T, x: x[:, ::2] * 2,
    "broadcast masked": lambda T, x: x[0:1] * T.ones(2, 3),
}


@pytest.mark.parametrize("name", list(GRADIENTS))
def test_gradient_matches_torch(name):
    ours_leaf, ours_out = _gradient_case(ember, GRADIENTS[name])
    theirs_leaf, theirs_out = _gradient_case(torch, GRADIENTS[name])
    assert_same(ours_out, theirs_out)
    assert ours_out.requires_grad and not ours_out.is_leaf
    if name in GRADIENT_MASKS_DIFFER:
        assert_same_gradient(ours_leaf, theirs_leaf)
    else:
        assert_same(ours_leaf.grad, theirs_leaf.grad)


# torch's gradient mask also drops the elements no gradient reached (the rows a select left
# out, through a derivative MaskedTensor does not support); ember's keeps them, with 0
GRADIENT_MASKS_DIFFER = {"select", "expand", "expand_as", "narrow", "slice", "step",
                         "broadcast masked"}


# Backward passes that torch's prototype cannot run (a derivative uses an operation its
# MaskedTensor lacks), against their closed forms
CLOSED_FORM_GRADIENTS = {
    "unsqueeze": (lambda T, x: x.unsqueeze(0) * 2, np.full((2, 3), 2.0)),
    "split": (lambda T, x: x.split(1)[1] * 2, np.array([[0.0] * 3, [2.0] * 3])),
    "list index": (lambda T, x: x[[1, 1]] * 3, np.array([[0.0] * 3, [6.0] * 3])),
    # torch's conventions: clamp passes the gradient at its bounds, maximum splits a tie
    "clamp": (lambda T, x: x.clamp(1, 4) * 1, ((DATA >= 1) & (DATA <= 4)).astype(np.float32)),
    "maximum": (lambda T, x: T.maximum(x, x * 0 + 2),
                np.where(DATA > 2, 1.0, np.where(DATA == 2, 0.5, 0.0))),
    "to_tensor": (lambda T, x: T.masked.as_masked_tensor(x.to_tensor(0) * 5, x.get_mask()),
                  np.full((2, 3), 5.0)),
}


@pytest.mark.parametrize("name", list(CLOSED_FORM_GRADIENTS))
def test_gradient_where_torch_fails(name):
    function, expected = CLOSED_FORM_GRADIENTS[name]
    assert isinstance(run(lambda T: _gradient_case(T, function), torch), type)
    leaf, _ = _gradient_case(ember, function)
    np.testing.assert_array_equal(plain(leaf.grad.get_mask()), MASK)
    np.testing.assert_allclose(plain(leaf.grad.get_data())[MASK], expected[MASK])


def assert_same_gradient(ours_leaf, theirs_leaf):
    """A leaf's gradient as torch's, but for elements torch's mask drops and ember's keeps
    (the leaf's mask), where ember's gradient is 0."""
    ours, theirs = ours_leaf.grad, theirs_leaf.grad
    assert isinstance(ours, ember.masked.MaskedTensor)
    ours_mask, theirs_mask = plain(ours.get_mask()), plain(theirs.get_mask())
    np.testing.assert_array_equal(ours_mask, plain(ours_leaf.get_mask()))
    assert not (theirs_mask & ~ours_mask).any()
    np.testing.assert_allclose(plain(ours.get_data())[theirs_mask],
                               plain(theirs.get_data())[theirs_mask], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(plain(ours.get_data())[ours_mask & ~theirs_mask], 0.0)


def test_where_of_two_branches_of_one_leaf_fails_as_torch():
    # the two branches' gradients reach the leaf with different masks, which cannot be added
    cond = np.array([[True, True, False], [False, True, False]])
    compare(lambda T: _gradient_case(T, lambda T, x: T.where(T.tensor(cond), x * 2, x * 3)))


def test_gradient_accumulates_as_masked_tensor():
    leaves = {}
    for lib in (torch, ember):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            leaf = make(lib, requires_grad=True)
            (leaf * 2).sum().backward()
            (leaf * leaf).sum().backward()
            leaves[lib] = leaf
    assert_same(leaves[ember].grad, leaves[torch].grad)


def test_as_masked_tensor_gradient_reaches_data():
    grads = {}
    for lib in (torch, ember):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            x = lib.tensor(DATA, requires_grad=True)
            amt = lib.masked.as_masked_tensor(x * 2, lib.tensor(MASK))
            assert amt.requires_grad and not amt.is_leaf
            (amt * amt).sum().backward()
            grads[lib] = x.grad
    assert_same(grads[ember], grads[torch])


# ---------------------------------------------------------------- what masks are for: a masked-out
# element's NaN or infinity stays out of the gradients, and reductions of nothing are masked out


def _masked_semantics(T):
    """Results of gradients and reductions that plain tensors get wrong (NaN, 0 for "no
    gradient"), in one list to compare with torch's."""
    results = []
    # a division by zero masked out: its gradient is masked out, not NaN
    x = T.tensor([2.0, 3.0, 4.0], requires_grad=True)
    divisor = T.tensor([0.0, 2.0, 4.0])
    T.masked.as_masked_tensor(x / divisor, divisor != 0).sum().backward()
    results.append(x.grad)
    # where between two masked tensors: each gets gradient only where it was chosen
    values = T.tensor([-3.0, -1.0, 2.0, 7.0])
    chosen = values < 0
    first = T.masked.masked_tensor(values, chosen, requires_grad=True)
    second = T.masked.masked_tensor(T.ones_like(values), ~chosen, requires_grad=True)
    T.where(chosen, T.exp(first), second).sum().backward()
    results += [first.grad, second.grad]
    # where picking the other branch: no gradient at all reaches the masked tensor
    leaf = T.masked.masked_tensor(T.tensor(1.5), T.tensor(True), requires_grad=True)
    picked = T.where(T.tensor(False), leaf / 0, T.ones(()))
    results += [picked, T.autograd.grad(picked, leaf)]
    # a NaN under the mask does not reach a plain tensor's gradient through a sum
    scale = T.tensor(2.0, requires_grad=True)
    data = T.tensor([1.0, float("nan"), 4.0])
    total = T.sum(T.masked.masked_tensor(data, ~T.isnan(data)) * scale)
    results += [total, T.autograd.grad(total, scale)]
    # softmax of a fully masked-out column, mean and argmin ignoring zeros, mean of nothing
    grid = T.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.5], [3.0, 1.0, 0.0]])
    keep = T.tensor([[True, False, False], [True, False, True], [False, False, False]])
    results.append(T.masked.masked_tensor(grid, keep).softmax(0))
    series = T.arange(12).float() * T.arange(12).float().fmod(3)
    results += [T.mean(T.masked.masked_tensor(series, series != 0)),
                T.argmin(T.masked.masked_tensor(series, series != 0))]
    nothing = T.full((5,), float("nan"))
    results.append(T.mean(T.masked.masked_tensor(nothing, ~T.isnan(nothing))))
    return results


def test_masked_semantics_of_gradients_and_reductions_match_torch():
    ours, theirs = run(_masked_semantics, ember), run(_masked_semantics, torch)
    assert_same(ours, theirs)
    assert [repr(r) for r in ours if isinstance(r, ember.masked.MaskedTensor)] == \
        [repr(r) for r in theirs if isinstance(r, torch.masked.MaskedTensor)]


@pytest.mark.parametrize("method", ["get_data", "to_tensor"])
def test_get_data_and_to_tensor_are_differentiable(method):
    grads = {}
    for lib in (torch, ember):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            x = lib.tensor(DATA, requires_grad=True)
            amt = lib.masked.as_masked_tensor(x * 3, lib.tensor(MASK))
            plain_result = amt.get_data() if method == "get_data" else amt.to_tensor(0)
            assert not lib.masked.is_masked_tensor(plain_result)
            (plain_result * lib.tensor(DATA)).sum().backward()
            grads[lib] = x.grad
    assert_same(grads[ember], grads[torch])


MEAN_DATA = np.array([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]], np.float32)
MEAN_MASK = np.array([[True, False, False], [False, True, False]])


@pytest.mark.parametrize("data_requires_grad", [True, False])
@pytest.mark.parametrize("constructor", ["masked_tensor requires_grad", "masked_tensor",
                                         "as_masked_tensor"])
def test_leaf_and_source_gradients_as_torch(constructor, data_requires_grad):
    """Which of the source tensor and the MaskedTensor gets a gradient, or which error."""
    def case(T):
        data = T.tensor(MEAN_DATA, requires_grad=data_requires_grad)
        mask = T.tensor(MEAN_MASK)
        if constructor == "as_masked_tensor":
            mt = T.masked.as_masked_tensor(data, mask)
        else:
            mt = T.masked.masked_tensor(data, mask,
                                        requires_grad=constructor.endswith("requires_grad"))
        mt.mean().backward()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            mt_grad = mt.grad
        return data.grad, mt_grad, [str(w.message)[:40] for w in caught]
    compare(case)


@pytest.mark.parametrize("reduction", ["amax", "amin", "prod", "sum", "mean"])
def test_reduction_gradients_skip_nan_under_the_mask(reduction):
    data = np.array([[2.0, np.nan, 2.0], [3.0, 4.0, -np.inf]], np.float32)

    def case(T):
        mt = make(T, data, MEAN_MASK, requires_grad=True)
        getattr(mt, reduction)().backward()
        return mt.grad
    compare(case)


def test_all_along_dims_as_torch():
    data = np.array([[True, True, False, False], [False, True, True, True]])
    for mask in ([[True, False, False, True], [False, True, False, True]],
                 [[True, False, True, False], [False, True, False, False]]):
        compare(lambda T: make(T, data, mask).all(dim=0))
        compare(lambda T: make(T, data, mask).all())


def test_retain_grad_as_torch():
    def case(T):
        leaf = make(T, requires_grad=True)
        middle = leaf * 2
        middle.retain_grad()
        (middle * middle).sum().backward()
        return middle.retains_grad, middle.grad, leaf.grad
    compare(case)


def test_setting_and_clearing_grad_as_torch():
    def case(T):
        leaf = make(T, requires_grad=True)
        leaf.grad = make(T, DATA * 3)
        assigned = leaf.grad
        leaf.grad = None
        return assigned, leaf.grad
    compare(case)


def _regression_step(T, masked):
    """One gradient of a mean squared error over the targets that are not NaN: through a
    MaskedTensor loss, or (the reference) plain, with the NaN targets filled and indexed out."""
    x = T.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.5], [3.0, 1.0, 0.0], [0.1, 0.2, 0.3]])
    target = T.tensor([1.0, 2.0, float("nan"), 0.5])
    valid = ~T.isnan(target)
    weight = T.tensor([0.1, 0.2, -0.3], requires_grad=True)
    bias = T.tensor(0.05, requires_grad=True)
    if masked:
        error = (x @ weight + bias - target) ** 2
        loss = T.masked.as_masked_tensor(error, valid).mean()
    else:
        loss = ((x @ weight + bias - T.nan_to_num(target)) ** 2)[valid].mean()
    loss.backward()
    return [g.get_data() if T.masked.is_masked_tensor(g) else g
            for g in (weight.grad, bias.grad)]


def test_masked_loss_gradient_through_a_model():
    # a NaN target under the mask stays out of the parameters' gradients; torch's prototype
    # raises here (its MaskedTensor has no matrix-vector product for the backward pass)
    assert run(lambda T: _regression_step(T, masked=True), torch) is TypeError
    assert_same(run(lambda T: _regression_step(T, masked=True), ember),
                run(lambda T: _regression_step(T, masked=False), torch))


def test_get_data_node_is_named_as_torch():
    compare(lambda T: make(T, requires_grad=True).get_data().grad_fn.name())


def test_backward_needs_a_gradient_for_non_scalars():
    compare(lambda T: make(T, requires_grad=True).sin().backward())


def test_in_place_on_a_leaf_that_requires_grad_fails_as_torch():
    compare(lambda T: make(T, requires_grad=True).add_(1))


def test_register_hook_sees_masked_gradients():
    seen = {}
    for lib in (torch, ember):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            leaf = make(lib, requires_grad=True)
            out = leaf * 2
            out.register_hook(lambda g, lib=lib: seen.setdefault(lib, g))
            out.sum().backward()
    assert_same(seen[ember], seen[torch])


def test_autograd_grad_with_masked_inputs():
    compare(lambda T: (lambda mt: T.autograd.grad(mt.sum(), mt))(make(T, requires_grad=True)))
    compare(lambda T: (lambda mt: T.autograd.grad((mt * mt).sin().sum(), mt))(
        make(T, requires_grad=True)))


# ---------------------------------------------------------------- module paths, docs


def test_torch_module_paths():
    import ember.masked.maskedtensor as package
    from ember.masked.maskedtensor import binary, core, creation, passthrough, reductions, unary

    assert package.MaskedTensor is core.MaskedTensor is ember.masked.MaskedTensor
    assert creation.masked_tensor is ember.masked.masked_tensor
    for name in ("MaskedTensor", "masked_tensor", "as_masked_tensor", "is_masked_tensor"):
        assert name in ember.masked.__all__ and name in torch.masked.__all__
    assert binary.BINARY_NAMES and unary.UNARY_NAMES and reductions.REDUCE_NAMES
    assert passthrough.PASSTHROUGH_NAMES


def test_docstring_examples_run():
    from ember.masked import maskedtensor
    from ember.masked.maskedtensor import (
        _ops_refs,
        binary,
        core,
        creation,
        passthrough,
        reductions,
        unary,
    )

    globs = {"ember": ember, "masked_tensor": ember.masked.masked_tensor,
             "as_masked_tensor": ember.masked.as_masked_tensor,
             "MaskedTensor": ember.masked.MaskedTensor,
             "is_masked_tensor": ember.masked.is_masked_tensor}
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for module in (maskedtensor, _ops_refs, binary, core, creation, passthrough,
                       reductions, unary):
            for test in finder.find(module, globs={**vars(module), **globs}):
                runner.run(test)
    assert runner.failures == 0 and runner.tries > 20
