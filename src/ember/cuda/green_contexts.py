"""``ember.cuda.green_contexts``: CUDA green contexts (a share of a GPU's SMs for a stream).

CuPy has no green contexts, so ember, like a torch built without them, refuses to create
one (RuntimeError); an instance made directly has no context to enter (AttributeError, as
torch's).

Example::

    >>> from ember.cuda.green_contexts import GreenContext
    >>> GreenContext.create(num_sms=8)       # doctest: +SKIP
    RuntimeError: ...
"""

from __future__ import annotations

from ._errors import NO_GPU_MESSAGE, CudaBindingMissingError

__all__ = ["GreenContext"]

_UNSUPPORTED = ("PyTorch was not built with Green Context support! (ember: CuPy has no CUDA "
                "green contexts)")


class GreenContext:
    """A CUDA green context: :meth:`create` refuses (no green-context support).

    Example::

        >>> GreenContext.max_workqueue_concurrency()   # doctest: +SKIP
    """

    @staticmethod
    def create(*, num_sms=None, workqueue_scope=None, workqueue_concurrency_limit=None,
               device_id=None):
        """Create a green context with ``num_sms`` SMs and/or a workqueue setting: refused."""
        raise RuntimeError(_UNSUPPORTED)

    @staticmethod
    def max_workqueue_concurrency(device_id=None):
        """The most concurrent workqueue workloads a green context may set: refused."""
        raise RuntimeError(_UNSUPPORTED)

    def set_context(self):
        """Make this green context current: there is none to enter."""
        raise CudaBindingMissingError(f"GreenContext.set_context: {NO_GPU_MESSAGE}")

    def pop_context(self):
        """Leave this green context: there is none."""
        raise CudaBindingMissingError(f"GreenContext.pop_context: {NO_GPU_MESSAGE}")

    def Stream(self):  # noqa: N802  (torch's name)
        """A stream running on this green context's SMs: there is none."""
        raise CudaBindingMissingError(f"GreenContext.Stream: {NO_GPU_MESSAGE}")
