"""``ember.backends``: the backend switches of ``torch.backends``.

The flags are settable and keep their values, so scripts written for torch run unchanged;
most have no effect on ember's kernels (NumPy's BLAS and CuPy's cuBLAS/cuDNN choose their
own algorithms), as each module's docstring says.

Example::

    >>> ember.backends.cudnn.benchmark = True
    >>> ember.backends.cudnn.benchmark
    True
"""

from __future__ import annotations

from . import (
    cpu,
    cuda,
    cudnn,
    cusparselt,
    kleidiai,
    mha,
    miopen,
    mkl,
    mkldnn,
    mps,
    nnpack,
    openmp,
    opt_einsum,
    quantized,
    xnnpack,
)

__all__ = ["cpu", "cuda", "cudnn", "cusparselt", "kleidiai", "mha", "miopen", "mkl", "mkldnn",
           "mps", "nnpack", "openmp", "opt_einsum", "quantized", "xnnpack"]
