"""ember._C: torch._C's switches that real programs flip return what torch's return."""

import pytest
import torch

import ember

SETTERS = ["_jit_set_profiling_mode", "_jit_set_profiling_executor",
           "_jit_set_texpr_fuser_enabled", "_jit_override_can_fuse_on_cpu",
           "_jit_override_can_fuse_on_gpu", "_jit_set_nvfuser_guard_mode",
           "_jit_set_nvfuser_enabled"]


@pytest.mark.parametrize("name", SETTERS)
def test_setters_return_what_torch_returns(name):
    for value in (False, True, True, False):
        assert getattr(ember._C, name)(value) == getattr(torch._C, name)(value)


def test_getters_follow_the_setters():
    for value in (True, False):
        ember._C._jit_override_can_fuse_on_cpu(value)
        torch._C._jit_override_can_fuse_on_cpu(value)
        assert ember._C._jit_can_fuse_on_cpu() == torch._C._jit_can_fuse_on_cpu()
    assert ember._C._jit_texpr_fuser_enabled() == torch._C._jit_texpr_fuser_enabled()
    assert ember._C._get_tracing_state() is torch._C._get_tracing_state()
    assert ember._C._get_privateuse1_backend_name() == torch._C._get_privateuse1_backend_name()
