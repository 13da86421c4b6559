"""ember.vision.utils: make_grid against a loop-by-image reference on torch, save_image PNGs."""

import math

import numpy as np
import pytest
import torch

import ember
from conftest import assert_same, to_torch
from ember.vision.utils import make_grid, save_image


def _reference_grid(t, nrow=8, padding=2, normalize=False, value_range=None, scale_each=False,
                    pad_value=0.0):
    """torchvision's documented make_grid rule, written image by image with torch ops."""
    if isinstance(t, list):
        t = torch.stack(t)
    if t.dim() == 2:
        t = t.unsqueeze(0)
    if t.dim() == 3:
        t = torch.cat((t, t, t), 0) if t.size(0) == 1 else t
        t = t.unsqueeze(0)
    if t.size(1) == 1:
        t = torch.cat((t, t, t), 1)
    if normalize:
        t = t.clone()

        def norm(img, low, high):
            img.clamp_(min=low, max=high)
            img.sub_(low).div_(max(high - low, 1e-5))
        for img in (t if scale_each else [t]):
            low, high = value_range if value_range is not None else (float(img.min()),
                                                                     float(img.max()))
            norm(img, low, high)
    if t.size(0) == 1:
        return t.squeeze(0)
    n = t.size(0)
    cols = min(nrow, n)
    rows = int(math.ceil(n / cols))
    h, w = t.size(2) + padding, t.size(3) + padding
    grid = t.new_full((t.size(1), h * rows + padding, w * cols + padding), pad_value)
    k = 0
    for y in range(rows):
        for x in range(cols):
            if k >= n:
                break
            grid[:, y * h + padding:(y + 1) * h, x * w + padding:(x + 1) * w] = t[k]
            k += 1
    return grid


CASES = [
    ((6, 3, 5, 4), {}),
    ((6, 1, 5, 4), {"nrow": 4}),
    ((7, 3, 5, 4), {"nrow": 3, "padding": 1, "pad_value": 0.5}),
    ((3, 3, 5, 4), {"nrow": 8, "padding": 0}),
    ((9, 2, 3, 3), {"nrow": 2, "padding": 3}),
    ((5, 3, 4, 4), {"normalize": True}),
    ((5, 3, 4, 4), {"normalize": True, "scale_each": True}),
    ((5, 3, 4, 4), {"normalize": True, "value_range": (-0.5, 0.5)}),
    ((5, 3, 4, 4), {"normalize": True, "value_range": (-0.5, 0.5), "scale_each": True}),
    ((1, 3, 4, 4), {}),
    ((1, 1, 4, 4), {"padding": 3}),
    ((3, 4, 4), {}),
    ((1, 4, 4), {}),
    ((4, 5), {}),
]


@pytest.mark.parametrize("shape,kwargs", CASES)
def test_make_grid_matches_reference(shape, kwargs):
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    expected = _reference_grid(torch.from_numpy(x), **kwargs)
    assert_same(make_grid(ember.tensor(x), **kwargs), expected)


def test_make_grid_list_of_images_and_dtype():
    images = [ember.rand(3, 4, 5, dtype=ember.float64) for _ in range(5)]
    expected = _reference_grid([to_torch(i) for i in images], nrow=2, pad_value=1.0)
    assert_same(make_grid(images, nrow=2, pad_value=1.0), expected)


def test_make_grid_does_not_modify_input_and_keeps_grad():
    x = ember.randn(4, 3, 2, 2, requires_grad=True)
    before = x.detach().clone()
    grid = make_grid(x, normalize=True, nrow=2)
    assert_same(x.detach(), to_torch(before))
    grid.sum().backward()
    assert x.grad is not None and tuple(x.grad.shape) == (4, 3, 2, 2)


def test_make_grid_errors():
    with pytest.raises(TypeError, match="list of tensors expected"):
        make_grid(np.zeros((2, 3, 4, 4)))
    with pytest.raises(TypeError, match="list containing"):
        make_grid([ember.zeros(3, 2, 2), np.zeros((3, 2, 2))])
    with pytest.raises(TypeError, match="value_range has to be a tuple"):
        make_grid(ember.zeros(2, 3, 2, 2), normalize=True, value_range=[0, 1])


@pytest.mark.parametrize("shape,kwargs", [((6, 3, 5, 4), {"nrow": 3}), ((4, 1, 8, 8), {}),
                                          ((3, 7, 9), {})])
def test_save_image_png_round_trip(tmp_path, shape, kwargs):
    from matplotlib import image as mpimg

    x = np.random.default_rng(1).random(shape).astype(np.float32) * 1.2 - 0.1
    path = tmp_path / "grid.png"
    save_image(ember.tensor(x), str(path), **kwargs)
    grid = _reference_grid(torch.from_numpy(x), **kwargs)
    expected = grid.mul(255).add(0.5).clamp(0, 255).to(torch.uint8).permute(1, 2, 0).numpy()
    back = mpimg.imread(str(path))
    assert back.shape[:2] == expected.shape[:2]
    np.testing.assert_array_equal(np.round(back[:, :, :3] * 255).astype(np.uint8), expected)


def test_save_image_to_file_object_with_format(tmp_path):
    from matplotlib import image as mpimg

    path = tmp_path / "out.png"
    with open(path, "wb") as f:
        save_image(ember.ones(2, 3, 4, 4), f, format="png", padding=0)
    back = mpimg.imread(str(path))
    assert back.shape[:2] == (4, 8) and np.all(back[:, :, :3] == 1.0)
