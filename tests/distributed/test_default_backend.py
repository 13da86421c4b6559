"""get_default_backend_for_device answers as torch's."""

import pytest
import torch

import ember


@pytest.mark.parametrize("device", ["cpu", "cuda", "cuda:1", "meta", "xpu", "mps"])
def test_default_backend_matches_torch(device):
    try:
        expected = torch.distributed.get_default_backend_for_device(device)
    except ValueError as error:
        with pytest.raises(ValueError, match=str(error)):
            ember.distributed.get_default_backend_for_device(device)
        return
    assert ember.distributed.get_default_backend_for_device(device) == expected
    if device.split(":")[0] in ("cpu", "cuda"):
        by_object = ember.distributed.get_default_backend_for_device(ember.device(device))
        assert by_object == expected
