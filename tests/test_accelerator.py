"""ember.accelerator on a machine without a GPU behaves as torch.accelerator on a CPU build."""

import warnings

import pytest
import torch

import ember

NAMES = [n for n in torch.accelerator.__all__]
CALLS = [
    ("is_available", ()), ("device_count", ()), ("current_accelerator", ()),
    ("current_device_index", ()), ("set_device_index", (0,)), ("set_device_index", (-1,)),
    ("synchronize", ()), ("empty_cache", ()), ("empty_host_cache", ()),
    ("memory_allocated", ()), ("max_memory_allocated", ()), ("memory_reserved", ()),
    ("max_memory_reserved", ()), ("memory_stats", ()), ("reset_peak_memory_stats", ()),
    ("reset_accumulated_memory_stats", ()), ("get_memory_info", ()),
    ("get_device_capability", ()), ("current_stream", ()), ("Graph", ()),
    ("current_device_idx", ()), ("set_device_idx", (0,)),
]


def _outcome(module, name, args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        try:
            return ("value", getattr(module, name)(*args))
        except Exception as error:  # noqa: BLE001 - comparing with torch's outcome
            return (type(error), str(error))


def test_every_name_exists():
    assert [n for n in NAMES if not hasattr(ember.accelerator, n)] == []


@pytest.mark.skipif(torch.accelerator.is_available(), reason="compares the no-GPU behaviour")
@pytest.mark.parametrize("name, args", CALLS)
def test_calls_match_torch_without_an_accelerator(name, args):
    ours = _outcome(ember.accelerator, name, args)
    theirs = _outcome(torch.accelerator, name, args)
    assert ours == theirs


def test_device_index_context():
    with ember.accelerator.device_index(None):
        pass
    if not torch.accelerator.is_available():
        with pytest.raises(RuntimeError, match="none is available"):
            with ember.accelerator.device_index(0):
                pass


def test_deprecated_spellings_warn():
    with pytest.warns(FutureWarning, match="current_device_index"):
        try:
            ember.accelerator.current_device_idx()
        except RuntimeError:
            pass
