"""``torch.distributed.rendezvous``: how the ranks of a process group find each other.

A rendezvous handler is a generator function ``handler(url, **kwargs)`` that yields
``(store, rank, world_size)``; one is registered per URL scheme. ember registers ``env``,
``tcp`` and ``file`` (the ``init_method`` URLs of :func:`init_process_group`), and
``init_process_group`` hands any other scheme to the handler registered for it.

Example::

    >>> import ember.distributed as dist
    >>> def one_rank(url, **kwargs):
    ...     yield dist.HashStore(), 0, 1
    >>> dist.register_rendezvous_handler("solo", one_rank)
    >>> store, rank, world_size = next(dist.rendezvous("solo://"))
    >>> rank, world_size
    (0, 1)
"""

from __future__ import annotations

import numbers
import urllib.parse

from .distributed_c10d import _make_store, default_pg_timeout

__all__ = ["register_rendezvous_handler", "rendezvous"]

_handlers = {}


def register_rendezvous_handler(scheme, handler):
    """Make ``handler`` (a generator function yielding ``(store, rank, world_size)``) the
    rendezvous of URLs with ``scheme``; each scheme can be registered once.

    Example::

        >>> def mine(url, **kwargs):
        ...     yield ember.distributed.HashStore(), 0, 1
        >>> register_rendezvous_handler("mine", mine)
    """
    if scheme in _handlers:
        raise RuntimeError(f"Rendezvous handler for {scheme}:// already registered")
    _handlers[scheme] = handler


def _query(url):
    """The ``key=value`` pairs of a URL's query, in order."""
    query = urllib.parse.urlparse(url).query
    return dict(pair.split("=", 1) for pair in query.split("&") if pair)


def _with_rank_and_size(url, rank, world_size):
    """``url`` with ``rank``/``world_size`` written into its query (torch puts the
    node-specific values there, where the handler reads them)."""
    parsed = urllib.parse.urlparse(url)
    query = _query(url)
    if "rank" in query or "world_size" in query:
        raise AssertionError(f"The url: {url} has node-specific arguments(rank, world_size) "
                             f"already.")
    if rank != -1:
        query["rank"] = str(rank)
    if world_size != -1:
        query["world_size"] = str(world_size)
    new_query = "&".join(f"{key}={value}" for key, value in query.items())
    return urllib.parse.urlunparse(parsed._replace(query=new_query))


def rendezvous(url, rank=-1, world_size=-1, **kwargs):
    """The handler's iterator of ``(store, rank, world_size)`` for ``url``; ``rank`` and
    ``world_size`` (when not -1) are passed to it in the URL's query.

    Example::

        >>> store, rank, size = next(rendezvous("file:///tmp/rdzv", rank=0, world_size=1))
    """
    if not isinstance(url, (str, bytes)):
        raise RuntimeError(f"`url` must be a string. {type(url)}: {url}")
    if not isinstance(rank, numbers.Integral):
        raise RuntimeError(f"`rank` must be an integer. {rank}")
    if not isinstance(world_size, numbers.Integral):
        raise RuntimeError(f"`world_size` must be an integer. {world_size}")
    if isinstance(url, bytes):
        url = url.decode()
    if rank != -1 or world_size != -1:
        url = _with_rank_and_size(url, rank, world_size)
    scheme = urllib.parse.urlparse(url).scheme
    if scheme not in _handlers:
        raise RuntimeError(f"No rendezvous handler for {scheme}://")
    return _handlers[scheme](url, **kwargs)


def _builtin_handler(url, timeout=default_pg_timeout, **kwargs):
    """The ``env://``, ``tcp://`` and ``file://`` rendezvous of ``init_process_group``."""
    yield _make_store(url, None, None, timeout)


for _scheme in ("env", "tcp", "file"):
    register_rendezvous_handler(_scheme, _builtin_handler)
