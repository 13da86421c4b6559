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


def materialised(lib):
    with lib.device("meta"):
        net = lib.nn.Sequential(lib.nn.Linear(2, 3), lib.nn.BatchNorm1d(3))
    weight = net[0].weight
    net.to_empty(device="cpu")
    lib.manual_seed(0)
    net[0].reset_parameters()
    net[1].reset_running_stats()
    return (net[0].weight is weight, [(tuple(t.shape), str(t.dtype).split(".")[-1],
                                       t.device.type) for t in net.state_dict().values()],
            net[0].weight.detach().numpy().copy(), net[1].running_var.numpy().copy())


def test_to_empty_materialises_a_meta_module_as_torch():
    e, t = materialised(ember), materialised(torch)
    assert e[0]  # ember's _apply keeps parameter objects (torch makes new ones here)
    assert e[1] == t[1]
    assert e[2].shape == t[2].shape
    assert (e[3] == t[3]).all()
