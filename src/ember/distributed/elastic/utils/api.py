"""``torch.distributed.elastic.utils.api``: environment and port helpers, and ``macros`` (the
``${local_rank}`` placeholder of worker arguments)."""

from __future__ import annotations

import os
import socket
from string import Template

__all__ = ["get_env_variable_or_raise", "get_socket_with_port", "macros"]


def get_env_variable_or_raise(env_name):
    """The value of environment variable ``env_name``; ``ValueError`` when it is not set.

    Example::

        >>> get_env_variable_or_raise("HOME")            # doctest: +SKIP
        '/root'
    """
    value = os.environ.get(env_name)
    if value is None:
        raise ValueError(f"Environment variable {env_name} expected, but not set")
    return value


def get_socket_with_port():
    """A socket bound to a free port of this host (close it before using the port).

    Example::

        >>> sock = get_socket_with_port(); port = sock.getsockname()[1]; sock.close()
    """
    with_port = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    with_port.bind(("localhost", 0))
    with_port.listen(0)
    return with_port


class macros:
    """Placeholders in worker arguments: ``${local_rank}`` becomes each worker's local rank.

    Example::

        >>> macros.substitute(["--rank=${local_rank}", "x"], "3")
        ['--rank=3', 'x']
    """

    local_rank = "${local_rank}"

    @staticmethod
    def substitute(args, local_rank):
        return [Template(arg).safe_substitute(local_rank=local_rank)
                if isinstance(arg, str) else arg for arg in args]
