"""ember.utils.safetensors against the safetensors package (and so against torch)."""

import numpy as np
import pytest
import safetensors.torch as st_torch
import torch

import ember
from conftest import DTYPE_PAIRS, assert_same, to_ember
from ember.utils import safetensors as est

STORABLE = [n for n in DTYPE_PAIRS if not n.startswith("complex")]


def _torch_tensor(name, shape, seed=0):
    values = np.asarray(np.random.default_rng(seed).standard_normal(shape) * 5)
    return torch.from_numpy(values).to(DTYPE_PAIRS[name][1])


@pytest.mark.parametrize("name", STORABLE)
def test_round_trip_both_ways_with_the_safetensors_package(name, tmp_path):
    t = {"a": _torch_tensor(name, (3, 4)), "b": _torch_tensor(name, (0, 2), 1),
         "s": _torch_tensor(name, (), 2)}
    st_torch.save_file(t, tmp_path / "t.safetensors", metadata={"who": "torch"})
    loaded = est.load_file(tmp_path / "t.safetensors")
    for key in t:
        assert_same(loaded[key], t[key])
    assert est.safe_metadata(tmp_path / "t.safetensors") == {"who": "torch"}
    e = {k: to_ember(v) for k, v in t.items()}
    e["view"] = to_ember(t["a"]).t()  # non-contiguous: written contiguously
    est.save_file(e, tmp_path / "e.safetensors", metadata={"who": "ember"})
    back = st_torch.load_file(tmp_path / "e.safetensors")
    for key in t:
        torch.testing.assert_close(back[key], t[key], equal_nan=True)
    torch.testing.assert_close(back["view"], t["a"].t().contiguous())
    assert est.load(est.save(e))["a"].tolist() == to_ember(t["a"]).tolist()


def test_module_state_dict_round_trip(tmp_path):
    model = ember.nn.Linear(4, 3)
    est.save_file(model.state_dict(), tmp_path / "m.safetensors")
    other = ember.nn.Linear(4, 3)
    other.load_state_dict(est.load_file(tmp_path / "m.safetensors"))
    assert other.weight.tolist() == model.weight.tolist()
    torch_model = torch.nn.Linear(4, 3)
    torch_model.load_state_dict(st_torch.load_file(tmp_path / "m.safetensors"))
    assert torch_model.bias.tolist() == model.bias.tolist()


def test_errors(tmp_path):
    shared = ember.ones(3)
    with pytest.raises(RuntimeError, match="share memory"):
        est.save({"a": shared, "b": shared})
    with pytest.raises(TypeError, match="complex"):
        est.save({"c": ember.ones(2, dtype=ember.complex64)})
    with pytest.raises(ValueError):
        est.save({"a": ember.ones(1)}, metadata={"epoch": 3})
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"\x05\x00")
    with pytest.raises(RuntimeError, match="bad.safetensors"):
        est.load_file(bad)
    good = est.save({"a": ember.ones(4)})
    truncated = tmp_path / "cut.safetensors"
    truncated.write_bytes(good[:-4])
    with pytest.raises(RuntimeError, match="cut.safetensors"):
        est.load_file(truncated)
    garbage = tmp_path / "json.safetensors"
    garbage.write_bytes(np.uint64(4).tobytes() + b"{{{{")
    with pytest.raises(RuntimeError, match="header"):
        est.load_file(garbage)
