"""``with device(...)``: factories and new modules inside the block use that device, as torch's
device context manager does (nested blocks restore the outer default on exit)."""

import torch

import ember


def placements(lib):
    with lib.device("meta"):
        linear = lib.nn.Linear(2, 3)
        inner = None
        with lib.device("cpu"):
            inner = lib.zeros(1).device.type
        after_inner = lib.ones(2).device.type
    return linear.weight.device.type, inner, after_inner, lib.zeros(1).device.type


def test_device_context_matches_torch():
    assert placements(ember) == placements(torch) == ("meta", "cpu", "meta", "cpu")


def test_device_context_restores_on_error():
    for lib in (torch, ember):
        try:
            with lib.device("meta"):
                raise KeyError("inside")
        except KeyError:
            pass
        assert lib.zeros(1).device.type == "cpu"
