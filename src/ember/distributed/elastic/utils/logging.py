"""``torch.distributed.elastic.utils.logging``: a logger named after the calling module."""

from __future__ import annotations

import inspect
import logging
import os

__all__ = ["get_logger", "get_log_level"]


def get_logger(name=None):
    """The logger ``name``, or that of the module calling this function; its level from
    ``$LOGLEVEL`` (as torch's elastic loggers).

    Example::

        >>> get_logger("ember.distributed.run").name
        'ember.distributed.run'
    """
    if name is None:
        caller = inspect.stack()[1]
        module = inspect.getmodule(caller.frame)
        name = module.__name__ if module is not None else "__main__"
    logger = logging.getLogger(name)
    logger.setLevel(os.environ.get("LOGLEVEL", get_log_level()))
    return logger


def get_log_level():
    """The default level of the elastic loggers (torch's: ``"WARNING"``).

    Example::

        >>> get_log_level()
        'WARNING'
    """
    return "WARNING"
