"""torch.backends' switches at their paths, against torch's CPU build."""

import pytest
import torch

import ember


def test_sdp_switches_share_state_with_sdpa_kernel_like_torch():
    q = torch.ones(1, 1, 2, 4)
    for lib, x in ((torch, q), (ember, ember.ones(1, 1, 2, 4))):
        C = lib.backends.cuda
        assert C.flash_sdp_enabled() and C.math_sdp_enabled()
        C.enable_flash_sdp(False)
        C.enable_math_sdp(False)
        try:
            with pytest.raises(RuntimeError, match="No viable backend"):
                lib.nn.functional.scaled_dot_product_attention(x, x, x)
        finally:
            C.enable_flash_sdp(True)
            C.enable_math_sdp(True)
        with lib.nn.attention.sdpa_kernel(lib.nn.attention.SDPBackend.EFFICIENT_ATTENTION):
            assert not C.math_sdp_enabled() and C.mem_efficient_sdp_enabled()
        assert C.math_sdp_enabled()
        assert C.is_flash_attention_available() is False
        assert C.fp16_bf16_reduction_math_sdp_allowed() is False


@pytest.mark.parametrize("query", [
    lambda B: B.cusparselt.is_available(),
    lambda B: B.cusparselt.version(), lambda B: B.mha.get_fastpath_enabled(),
    lambda B: (B.mkl.VERBOSE_OFF, B.mkl.VERBOSE_ON), lambda B: B.kleidiai.is_available()])
def test_backend_queries_match_torchs_cpu_build(query):
    import torch.backends.cusparselt  # noqa: F401
    import torch.backends.kleidiai  # noqa: F401
    import torch.backends.mha  # noqa: F401
    import torch.backends.nnpack  # noqa: F401
    assert query(ember.backends) == query(torch.backends)


def test_mps_queries_raise_without_mps_like_torch():
    for lib in (torch, ember):
        with pytest.raises(RuntimeError, match="without MPS backend"):
            lib.backends.mps.is_macos_or_newer(14, 0)
        with lib.backends.mkl.verbose(lib.backends.mkl.VERBOSE_ON):
            pass
        with lib.backends.nnpack.flags(enabled=False):
            pass
