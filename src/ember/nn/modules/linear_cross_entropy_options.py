"""``ember.nn.modules.linear_cross_entropy_options``: options of :func:`linear_cross_entropy`.

torch's chunked ``linear_cross_entropy`` takes these to split the batch so the full logits are
never materialised. ember accepts and validates them with torch's messages; it computes the
same loss on its reference path (``linear`` then ``cross_entropy``), so results are identical.

Example::

    >>> from ember.nn import LinearCrossEntropyOptions
    >>> LinearCrossEntropyOptions(batch_chunk_size=64).batch_chunk_size
    64
"""

from __future__ import annotations

import dataclasses

from ... import _dtype

__all__ = ["LinearCrossEntropyOptions"]

_ACC_POLICIES = ("auto", "accurate", "balanced", "compact")


def _valid_chunking_method(method):
    """``"auto"``, ``None``, ``"aspect_ratio"`` or ``"aspect_ratio:<positive int>"``."""
    if method is None or method == "auto":
        return True
    name, sep, factor = method.partition(":")
    factor = factor if sep else "1"
    return name == "aspect_ratio" and factor.isdigit() and int(factor) > 0


@dataclasses.dataclass(slots=True, frozen=True)
class LinearCrossEntropyOptions:
    """How torch's chunked :func:`~ember.nn.functional.linear_cross_entropy` splits its work.

    Fields (torch's): ``allow_retain_graph``, ``batch_chunk_size`` (rows per chunk or ``None``),
    ``chunking_method`` (``"auto"`` or ``"aspect_ratio[:k]"``), ``acc_policy`` (``"auto"``,
    ``"accurate"``, ``"balanced"``, ``"compact"``) and ``acc_dtype`` (a floating dtype or None).

    Example::

        >>> LinearCrossEntropyOptions(acc_policy="accurate").acc_policy
        'accurate'
    """

    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: str = "auto"
    acc_dtype: object = None

    def __post_init__(self):
        if self.acc_policy not in _ACC_POLICIES:
            raise ValueError(f"invalid acc_policy: {self.acc_policy!r}")
        if not _valid_chunking_method(self.chunking_method):
            raise ValueError(f"invalid chunking_method: {self.chunking_method!r}")
        size = self.batch_chunk_size
        if not (size is None or (isinstance(size, int) and size > 0)):
            raise ValueError(f"batch_chunk_size must be positive int or None, got {size!r}")
        allowed = (_dtype.float16, _dtype.bfloat16, _dtype.float32, _dtype.float64)
        if self.acc_dtype is not None and self.acc_dtype not in allowed:
            raise ValueError(
                "acc_dtype must be one of {None, torch.float16, torch.bfloat16, torch.float32, "
                f"torch.float64}}, got {self.acc_dtype!r}. Pass acc_dtype=None to let the op "
                "pick automatically.")
