"""``torch.distributed.c10d_logger``: the logger of the c10d collectives (torch keeps only
private helpers here; no public names).

ember logs its collectives' failures through the ``ember.distributed`` logger.

Example::

    >>> import ember.distributed.c10d_logger as c10d_logger
    >>> c10d_logger.__all__
    []
"""

import logging

__all__ = []

_c10d_logger = logging.getLogger("ember.distributed.c10d")
