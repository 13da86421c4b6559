"""``ember.types``: the type aliases torch's signatures use.

Example::

    >>> from ember.types import Device, Number
    >>> def move(t, device: Device = None, scale: Number = 1): ...
"""

from __future__ import annotations

import os
from typing import IO, TypeAlias, Union

from ._device import device as _device
from .storage import UntypedStorage as Storage

__all__ = ["Device", "FileLike", "Number", "Storage"]

Number: TypeAlias = Union[int, float, bool]  # noqa: UP007  (torch's spelling)
Device: TypeAlias = Union[_device, str, int, None]  # noqa: UP007
FileLike: TypeAlias = Union[str, os.PathLike, IO[bytes]]  # noqa: UP007
