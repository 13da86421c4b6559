"""``torch.distributed.remote_device``: ``_remote_device``, a device on another worker,
written ``"<workername>/<device>"``, ``"rank:<rank>/<device>"`` or ``"<device>"`` (torch keeps it
private; RPC and sharding code use it).

Example::

    >>> from ember.distributed.remote_device import _remote_device
    >>> d = _remote_device("rank:1/cpu")
    >>> d.rank(), d.device()
    (1, device(type='cpu'))
"""

from __future__ import annotations

from .._device import device as _device

__all__ = []

_FORMAT = ("The valid format is '<workername>/<device>' or 'rank:<rank>/<device>' or "
           "'<device>'")


def _as_device(text):
    """``text`` as a device, or None when it does not name one."""
    try:
        return _device(text)
    except (RuntimeError, ValueError, TypeError):
        return None


class _remote_device:
    """A worker (by name or rank) and a device on it.

    Example::

        >>> _remote_device("worker0/cpu").worker_name()
        'worker0'
    """

    def __init__(self, remote_device):
        self._worker_name = self._rank = None
        if isinstance(remote_device, _device):
            self._device = remote_device
            return
        if not isinstance(remote_device, str):
            raise TypeError(f"Invalid type for remote_device: {type(remote_device)}")
        fields = remote_device.split("/")
        if len(fields) == 1:
            self._device = _as_device(fields[0])
            if self._device is None:  # a bare worker name: its CPU
                self._worker_name, self._device = fields[0], _device("cpu")
            return
        if len(fields) != 2:
            raise ValueError(f"Could not parse remote_device: {remote_device}. {_FORMAT}")
        worker, device_text = fields
        if worker.startswith("rank:"):
            rank_text = worker[len("rank:"):]
            if not rank_text.isdigit():
                raise ValueError(f"Could not parse remote_device: {remote_device}. {_FORMAT}")
            self._rank = int(rank_text)
        else:
            self._worker_name = worker
        self._device = _device(device_text)

    def worker_name(self):
        """The worker's name, or None when given by rank."""
        return self._worker_name

    def rank(self):
        """The worker's rank, or None when given by name."""
        return self._rank

    def device(self):
        """The device on that worker."""
        return self._device

    def __repr__(self):
        if self._worker_name is not None:
            return f"{self._worker_name}/{self._device}"
        if self._rank is not None:
            return f"rank:{self._rank}/{self._device}"
        return str(self._device)

    def __eq__(self, other):
        if not isinstance(other, _remote_device):
            return False
        return (self._worker_name, self._rank, self._device) == \
            (other._worker_name, other._rank, other._device)

    def __hash__(self):
        return hash((self._worker_name, self._rank, self._device))
