"""``ember.cuda.jiterator``: torch's run-time compiled CUDA elementwise kernels.

Example::

    >>> from ember.cuda.jiterator import _create_jit_fn
"""

from ._unavailable import _needs_gpu

__all__: list[str] = []

_create_jit_fn = _needs_gpu("jiterator._create_jit_fn")
_create_multi_output_jit_fn = _needs_gpu("jiterator._create_multi_output_jit_fn")
