"""torch's 2:4 semi-structured sparse tensors (``torch.sparse.SparseSemiStructuredTensor``):
their kernels are cuSPARSELt's and CUTLASS's, NVIDIA GPU libraries that ember does not bind.
On a CPU tensor the classes raise torch's own error; on a GPU tensor,
``NotImplementedError`` naming what to use instead.
"""

from __future__ import annotations

__all__ = ["SparseSemiStructuredTensor", "SparseSemiStructuredTensorCUTLASS",
           "SparseSemiStructuredTensorCUSPARSELT", "to_sparse_semi_structured"]


def _refuse(original_tensor):
    device = getattr(original_tensor, "device", None)
    if getattr(device, "type", None) != "cuda":
        raise RuntimeError(f"Error original_tensor.device= {device} is not supported! Only "
                           f"CUDA tensors are currently supported.")
    raise NotImplementedError(
        "torch.sparse semi-structured (2:4) tensors need cuSPARSELt/CUTLASS kernels, which "
        "ember does not bind; keep the weight dense (or prune it with "
        "ember.nn.utils.prune and a dense matmul)")


class SparseSemiStructuredTensor:
    """The base class of torch's 2:4 sparse tensors; see :func:`to_sparse_semi_structured`.

    Example::

        >>> SparseSemiStructuredTensor.from_dense(ember.zeros(64, 64))  # doctest: +SKIP
        Traceback (most recent call last):
        RuntimeError: Error original_tensor.device= cpu is not supported! ...
    """

    _FORCE_CUTLASS = False

    def __init__(self, *args, **kwargs):
        _refuse(args[0] if args else None)

    @classmethod
    def from_dense(cls, original_tensor):
        """torch's conversion from a dense 2:4-pruned tensor (CUDA only; see the module)."""
        _refuse(original_tensor)


class SparseSemiStructuredTensorCUTLASS(SparseSemiStructuredTensor):
    """torch's 2:4 sparse tensor on CUTLASS kernels (CUDA only; see the module).

    Example::

        >>> SparseSemiStructuredTensorCUTLASS.from_dense(ember.zeros(64, 64))  # doctest: +SKIP
        Traceback (most recent call last):
        RuntimeError: ...
    """


class SparseSemiStructuredTensorCUSPARSELT(SparseSemiStructuredTensor):
    """torch's 2:4 sparse tensor on cuSPARSELt kernels (CUDA only; see the module).

    Example::

        >>> SparseSemiStructuredTensorCUSPARSELT.from_dense(ember.zeros(64, 64))  # doctest: +SKIP
        Traceback (most recent call last):
        RuntimeError: ...
    """


def to_sparse_semi_structured(original_tensor, transposed=False):
    """torch's conversion of a dense 2:4-pruned matrix to a semi-structured sparse tensor:
    CPU tensors raise torch's ``RuntimeError``, CUDA tensors ``NotImplementedError``.

    Example::

        >>> ember.sparse.to_sparse_semi_structured(ember.zeros(64, 64))
        Traceback (most recent call last):
        RuntimeError: Error original_tensor.device= cpu is not supported! ...
    """
    _refuse(original_tensor)
