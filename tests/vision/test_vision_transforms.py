"""ember.vision.transforms against their definitions and torch's ops on the same data."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
from conftest import assert_same, to_ember, to_torch
from ember.vision import transforms as T


def _rng(seed=0):
    return np.random.default_rng(seed)


# ---------------------------------------------------------------- ToTensor


@pytest.mark.parametrize("shape", [(5, 7, 3), (5, 7, 1), (5, 7), (0, 4, 3)])
def test_to_tensor_uint8(shape):
    array = _rng().integers(0, 256, shape, dtype=np.uint8)
    expected = torch.from_numpy(array.copy())
    expected = expected.unsqueeze(-1) if array.ndim == 2 else expected
    expected = expected.permute(2, 0, 1).float() / 255
    out = T.ToTensor()(array)
    assert_same(out, expected)
    assert out.is_contiguous()


def test_to_tensor_uses_default_dtype():
    array = np.full((2, 2), 255, np.uint8)
    ember.set_default_dtype(ember.float64)
    try:
        assert T.ToTensor()(array).dtype == ember.float64
    finally:
        ember.set_default_dtype(ember.float32)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int16])
def test_to_tensor_other_dtypes_keep_values(dtype):
    array = (_rng().random((4, 3, 2)) * 100).astype(dtype)
    out = T.ToTensor()(array)
    assert_same(out, torch.from_numpy(array.transpose(2, 0, 1).copy()))


def test_to_tensor_non_contiguous_input():
    array = _rng().integers(0, 256, (6, 8, 3), dtype=np.uint8)[::2, ::-1]
    expected = torch.from_numpy(array.copy()).permute(2, 0, 1).float() / 255
    assert_same(T.ToTensor()(array), expected)


def test_to_tensor_errors():
    with pytest.raises(TypeError, match="ndarray"):
        T.ToTensor()(ember.zeros(3, 2, 2))
    with pytest.raises(ValueError, match="2/3 dimensional"):
        T.ToTensor()(np.zeros((1, 2, 2, 3), np.uint8))


# ---------------------------------------------------------------- Normalize


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(3, 4, 5), (2, 3, 4, 5)])
def test_normalize_matches_formula(dtype, shape):
    x = _rng(1).standard_normal(shape).astype(dtype)
    mean, std = (0.1, 0.2, 0.3), (0.5, 2.0, 0.25)
    expected = (torch.from_numpy(x) - torch.tensor(mean, dtype=getattr(torch, dtype))[:, None,
                                                                                      None]) \
        / torch.tensor(std, dtype=getattr(torch, dtype))[:, None, None]
    e = ember.tensor(x)
    out = T.Normalize(mean, std)(e)
    assert_same(out, expected)
    assert_same(e, torch.from_numpy(x))  # not in place
    inplace = T.Normalize(mean, std, inplace=True)(e)
    assert inplace is e
    assert_same(e, expected)


def test_normalize_scalar_stats_and_grad():
    x = ember.rand(2, 3, 3, requires_grad=True)
    xt = to_torch(x).requires_grad_()
    out = T.Normalize(0.5, 0.2)(x)
    ref = (xt - 0.5) / 0.2
    assert_same(out, ref)
    out.sum().backward()
    ref.sum().backward()
    assert_same(x.grad, xt.grad)


def test_normalize_errors():
    with pytest.raises(TypeError, match="float tensor"):
        T.Normalize((0.5,), (0.5,))(ember.zeros(1, 2, 2, dtype=ember.uint8))
    with pytest.raises(ValueError, match="tensor image of size"):
        T.Normalize((0.5,), (0.5,))(ember.zeros(2, 2))
    with pytest.raises(ValueError, match="std evaluated to zero"):
        T.Normalize((0.5, 0.5), (0.5, 0.0))(ember.zeros(2, 2, 2))
    with pytest.raises(TypeError, match="Tensor Image"):
        T.Normalize((0.5,), (0.5,))(np.zeros((1, 2, 2)))


# ---------------------------------------------------------------- RandomCrop


def _windows(padded, th, tw):
    """Every ``(top, left, window)`` of size ``th`` x ``tw`` in ``padded``."""
    h, w = padded.shape[-2:]
    return [(i, j, padded[..., i:i + th, j:j + tw]) for i in range(h - th + 1)
            for j in range(w - tw + 1)]


@pytest.mark.parametrize("mode,torch_mode", [("constant", "constant"), ("edge", "replicate"),
                                             ("reflect", "reflect")])
def test_random_crop_is_a_window_of_the_padded_image(mode, torch_mode):
    x = _rng(2).random((2, 6, 7)).astype(np.float32)
    padded = TF.pad(torch.from_numpy(x)[None], (2, 2, 2, 2), mode=torch_mode)[0]
    windows = _windows(padded, 6, 7)
    seen = set()
    ember.manual_seed(0)
    crop = T.RandomCrop((6, 7), padding=2, padding_mode=mode)
    for _ in range(150):
        out = crop(ember.tensor(x))
        assert tuple(out.shape) == (2, 6, 7)
        hits = [(i, j) for i, j, win in windows if torch.equal(to_torch(out), win)]
        assert hits, "the crop is not a window of the padded image"
        seen.update(hits)
    assert len(seen) == 25  # every offset in [0, 4] x [0, 4] is drawn


def test_random_crop_symmetric_and_fill_match_numpy():
    x = _rng(3).integers(0, 255, (4, 5, 3), dtype=np.uint8)
    crop = T.RandomCrop((6, 9), padding=(2, 1), padding_mode="symmetric")
    out = crop(x)
    padded = np.pad(x, ((1, 1), (2, 2), (0, 0)), mode="symmetric")
    assert out.shape == (6, 9, 3)
    np.testing.assert_array_equal(out, padded)  # the crop is the whole padded image
    filled = T.RandomCrop((4 + 3 + 1, 5 + 2 + 4), padding=(2, 3, 4, 1), fill=7)(ember.tensor(
        x.transpose(2, 0, 1).copy()))
    expected = np.pad(x.transpose(2, 0, 1), ((0, 0), (3, 1), (2, 4)), constant_values=7)
    np.testing.assert_array_equal(filled.numpy(), expected)


def test_random_crop_is_reproducible_and_works_on_arrays():
    x = _rng(4).random((10, 10, 3)).astype(np.float32)
    ember.manual_seed(5)
    a = T.RandomCrop(6)(x)
    ember.manual_seed(5)
    b = T.RandomCrop(6)(ember.tensor(x.transpose(2, 0, 1).copy()))
    assert a.shape == (6, 6, 3)
    np.testing.assert_array_equal(a.transpose(2, 0, 1), b.numpy())


def test_random_crop_pad_if_needed_and_errors():
    out = T.RandomCrop((6, 8), pad_if_needed=True)(ember.ones(1, 4, 5))
    assert tuple(out.shape) == (1, 6, 8)
    with pytest.raises(ValueError, match="larger than input image size"):
        T.RandomCrop(9)(ember.ones(1, 8, 8))
    with pytest.raises(ValueError, match="Padding mode"):
        T.RandomCrop(8, padding=1, padding_mode="wrap")
    with pytest.raises(ValueError, match="Padding must be"):
        T.RandomCrop(8, padding=(1, 2, 3))
    with pytest.raises(ValueError, match="two dimensions"):
        T.RandomCrop((1, 2, 3))
    with pytest.raises(TypeError):
        T.RandomCrop(2)([1, 2, 3])


# ---------------------------------------------------------------- flips


def test_flips_match_torch_and_numpy():
    x = _rng(5).random((2, 3, 4, 5)).astype(np.float32)
    assert_same(T.RandomHorizontalFlip(p=1.0)(ember.tensor(x)), torch.from_numpy(x).flip(-1))
    assert_same(T.RandomVerticalFlip(p=1.0)(ember.tensor(x)), torch.from_numpy(x).flip(-2))
    assert_same(T.RandomHorizontalFlip(p=0.0)(ember.tensor(x)), torch.from_numpy(x))
    hwc = x[0].transpose(1, 2, 0)
    np.testing.assert_array_equal(T.RandomHorizontalFlip(1.0)(hwc), hwc[:, ::-1])
    np.testing.assert_array_equal(T.RandomVerticalFlip(1.0)(hwc), hwc[::-1])


def test_flip_probability():
    ember.manual_seed(1)
    x = ember.tensor([[[0.0, 1.0]]])
    flips = sum(T.RandomHorizontalFlip(p=0.3)(x)[0, 0, 0].item() == 1.0 for _ in range(600))
    assert abs(flips / 600 - 0.3) < 0.06


# ---------------------------------------------------------------- Resize


def _torch_resize(x, size, mode):
    kwargs = {} if mode.startswith("nearest") else {"align_corners": False, "antialias": False}
    return TF.interpolate(x, size=size, mode=mode, **kwargs)


MODES = ["nearest", "nearest-exact", "bilinear", "bicubic"]


@pytest.mark.parametrize("size", [(4, 4), (12, 9), (5, 16), (8, 8), (1, 3)])
@pytest.mark.parametrize("mode", MODES)
def test_resize_matches_torch_interpolate(size, mode):
    x = _rng(6).random((2, 3, 8, 10))
    expected = _torch_resize(torch.from_numpy(x), size, mode)
    assert_same(T.Resize(size, interpolation=T.InterpolationMode(mode))(ember.tensor(x)),
                expected)
    assert_same(T.Resize(size, interpolation=mode)(ember.tensor(x[0])), expected[0])
    assert_same(T.Resize(size, interpolation=mode)(ember.tensor(x[0, 0])), expected[0, 0])
    # a NumPy (H, W, C) image gives the same pixels, laid out (H, W, C)
    hwc = T.Resize(size, interpolation=mode)(x[0].transpose(1, 2, 0).copy())
    np.testing.assert_allclose(hwc, expected[0].permute(1, 2, 0).numpy(), rtol=1e-12)


@pytest.mark.parametrize("mode", MODES)
def test_resize_uint8_and_arrays(mode):
    x = _rng(7).integers(0, 256, (3, 9, 6), dtype=np.uint8)
    expected = _torch_resize(torch.from_numpy(x)[None].float(), (5, 11), mode)[0]
    expected = expected.round().clamp(0, 255).to(torch.uint8)
    out = T.Resize((5, 11), interpolation=mode)(ember.tensor(x))
    assert_same(out, expected, atol=1, rtol=0)
    hwc = T.Resize((5, 11), interpolation=mode)(x.transpose(1, 2, 0))
    assert hwc.dtype == np.uint8 and hwc.shape == (5, 11, 3)
    np.testing.assert_array_equal(hwc.transpose(2, 0, 1), out.numpy())
    grey = T.Resize((5, 11), interpolation=mode)(x[0])
    assert grey.shape == (5, 11)
    np.testing.assert_array_equal(grey, out.numpy()[0])


def test_resize_smaller_edge_and_max_size():
    assert tuple(T.Resize(4)(ember.rand(1, 8, 16)).shape) == (1, 4, 8)
    assert tuple(T.Resize(4)(ember.rand(1, 15, 8)).shape) == (1, 7, 4)
    assert tuple(T.Resize([6])(ember.rand(1, 6, 9)).shape) == (1, 6, 9)
    assert tuple(T.Resize(4, max_size=6)(ember.rand(1, 8, 16)).shape) == (1, 3, 6)
    with pytest.raises(ValueError, match="max_size"):
        T.Resize((4, 4), max_size=6)(ember.rand(1, 8, 8))
    with pytest.raises(ValueError, match="strictly greater"):
        T.Resize(4, max_size=4)(ember.rand(1, 8, 8))
    with pytest.raises(TypeError, match="Size should be int or sequence"):
        T.Resize("4")
    with pytest.raises(ValueError, match="1 or 2 values"):
        T.Resize((1, 2, 3))
    with pytest.raises(ValueError):
        T.Resize(4, interpolation="lanczos-ish")
    with pytest.raises(TypeError, match="InterpolationMode"):
        T.Resize(4, interpolation=2)


def test_resize_gradient_matches_torch():
    x = ember.rand(1, 2, 5, 6, dtype=ember.float64, requires_grad=True)
    xt = to_torch(x).requires_grad_()
    out = T.Resize((7, 4))(x)
    ref = TF.interpolate(xt, size=(7, 4), mode="bilinear", align_corners=False)
    weights = torch.randn(ref.shape, dtype=torch.float64)
    (out * to_ember(weights)).sum().backward()
    (ref * weights).sum().backward()
    assert_same(x.grad, xt.grad)


# ---------------------------------------------------------------- CenterCrop


@pytest.mark.parametrize("size", [(4, 4), (3, 6), 5, (8, 10), (2, 1)])
def test_center_crop(size):
    x = _rng(8).random((3, 8, 10)).astype(np.float32)
    th, tw = (size, size) if isinstance(size, int) else size
    top, left = int(round((8 - th) / 2.0)), int(round((10 - tw) / 2.0))
    expected = torch.from_numpy(x)[:, top:top + th, left:left + tw]
    assert_same(T.CenterCrop(size)(ember.tensor(x)), expected)
    np.testing.assert_array_equal(T.CenterCrop(size)(x.transpose(1, 2, 0)),
                                  expected.permute(1, 2, 0).numpy())


def test_center_crop_larger_than_image_pads_with_zeros():
    x = ember.ones(1, 3, 4)
    out = T.CenterCrop((6, 7))(x)
    expected = TF.pad(torch.ones(1, 3, 4), (1, 2, 1, 2))
    assert_same(out, expected)


# ---------------------------------------------------------------- Lambda, Compose, dtypes


def test_lambda_and_compose():
    double = T.Lambda(lambda t: t * 2)
    pipeline = T.Compose([T.ToTensor(), double, T.Normalize((1.0,), (2.0,))])
    array = np.full((2, 3), 255, np.uint8)
    assert_same(pipeline(array), torch.full((1, 2, 3), 0.5))
    assert "ToTensor()" in repr(pipeline) and "Normalize(mean=(1.0,), std=(2.0,))" in \
        repr(pipeline)
    with pytest.raises(TypeError, match="should be callable"):
        T.Lambda(3)


def _convert_reference(x, dtype):
    """torchvision's documented convert_image_dtype rule written with torch ops."""
    def top(d):
        return 1.0 if d.is_floating_point else torch.iinfo(d).max
    if x.is_floating_point():
        if dtype.is_floating_point:
            return x.to(dtype)
        return x.mul(top(dtype) + 1.0 - 1e-3).to(dtype)
    if dtype.is_floating_point:
        return x.to(dtype) / top(x.dtype)
    if top(x.dtype) > top(dtype):
        return torch.div(x, (top(x.dtype) + 1) // (top(dtype) + 1), rounding_mode="floor").to(
            dtype)
    return x.to(dtype) * ((top(dtype) + 1) // (top(x.dtype) + 1))


@pytest.mark.parametrize("src,dst", [("uint8", "float32"), ("uint8", "float64"),
                                     ("float32", "uint8"), ("float64", "int16"),
                                     ("int16", "uint8"), ("uint8", "int16"),
                                     ("int32", "int64"), ("float32", "float64"),
                                     ("float64", "int32"), ("uint8", "uint8")])
def test_convert_image_dtype(src, dst):
    rng = _rng(9)
    if src.startswith("float"):
        x = rng.random((2, 3, 3)).astype(src)
        x[0, 0, 0], x[0, 0, 1] = 0.0, 1.0
    else:
        info = np.iinfo(src)
        x = rng.integers(0, info.max, (2, 3, 3), endpoint=True).astype(src)
        x[0, 0, 0] = info.max
    expected = _convert_reference(torch.from_numpy(x), getattr(torch, dst))
    out = T.ConvertImageDtype(getattr(ember, dst))(ember.tensor(x))
    assert_same(out, expected)


@pytest.mark.parametrize("src,dst", [("float32", "int32"), ("float32", "int64"),
                                     ("float64", "int64")])
def test_convert_image_dtype_unsafe(src, dst):
    with pytest.raises(RuntimeError, match="cannot be performed safely"):
        T.ConvertImageDtype(getattr(ember, dst))(ember.zeros(1, 2, 2, dtype=getattr(ember, src)))


def test_transforms_on_meta_shapes():
    x = ember.empty(2, 3, 8, 10, device="meta")
    assert tuple(T.CenterCrop(4)(x).shape) == (2, 3, 4, 4)
    assert tuple(T.RandomHorizontalFlip(1.0)(x).shape) == (2, 3, 8, 10)
    assert tuple(T.Resize((5, 4), interpolation="nearest")(x).shape) == (2, 3, 5, 4)
