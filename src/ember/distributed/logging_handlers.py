"""``torch.distributed.logging_handlers``: named logging handlers for the c10d logger (no
public names; the ``"default"`` destination discards records, as torch's).

Example::

    >>> import ember.distributed.logging_handlers as handlers
    >>> sorted(handlers._log_handlers)
    ['default']
"""

import logging

__all__ = []

_log_handlers = {"default": logging.NullHandler()}
