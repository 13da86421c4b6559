"""``torch.distributed.constants``: the default timeouts of process groups.

``default_pg_nccl_timeout`` is ``None`` as in torch's CPU build (no C++ NCCL default); ember's
``nccl`` groups use ``default_pg_timeout`` unless given a ``timeout``.

Example::

    >>> from ember.distributed.constants import default_pg_timeout
    >>> default_pg_timeout
    datetime.timedelta(seconds=1800)
"""

from .distributed_c10d import default_pg_timeout

__all__ = ["default_pg_timeout", "default_pg_nccl_timeout"]

default_pg_nccl_timeout = None
