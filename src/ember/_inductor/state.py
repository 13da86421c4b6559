"""The compiler's shared state: settings (``ember._dynamo.config``), counters
(``ember._dynamo.utils.counters``), torch's exception types, and the ``EMBER_LOGS`` logs.

``EMBER_LOGS=graph_breaks,recompiles`` (a comma-separated list, like ``TORCH_LOGS``) prints
why a function broke its graph or was compiled again; ``EMBER_LOGS=graph_code`` also prints
each captured graph, ``EMBER_LOGS=aot`` why a graph that trains keeps eager autograd instead
of a joint forward-backward graph (``joint.py``).

Example::

    >>> config.cache_size_limit
    8
"""

from __future__ import annotations

import collections
import logging
import os
import sys

__all__ = ["config", "counters", "TorchDynamoException", "Unsupported", "InvalidBackend",
           "BackendCompilerFailed", "log_enabled", "log", "warn_logger", "stance",
           "default_backend"]


class _Config:
    """``torch._dynamo.config``: the settings ember's compiler reads, and any other setting a
    script makes (kept, without effect).

    Example::

        >>> ember._dynamo.config.suppress_errors = True
    """

    suppress_errors = False       # an error inside a backend: run eagerly instead of raising
    cache_size_limit = 8          # compiled variants per function before it runs eagerly
    recompile_limit = 8
    accumulated_cache_size_limit = 256
    verbose = False
    automatic_dynamic_shapes = True   # a size that changed is traced symbolically next time
    assume_static_by_default = True
    capture_scalar_outputs = False
    optimize_ddp = True

    def __setattr__(self, name, value):
        if name in ("cache_size_limit", "recompile_limit"):  # torch keeps the two in step
            object.__setattr__(self, "cache_size_limit", value)
            object.__setattr__(self, "recompile_limit", value)
            return
        object.__setattr__(self, name, value)


config = _Config()

# torch._dynamo.utils.counters: counters["stats"]["unique_graphs"], ["frames"]["total"],
# ["graph_break"][reason], ["recompiles"]...
counters = collections.defaultdict(collections.Counter)


class TorchDynamoException(RuntimeError):
    """The base of the compiler's errors (``torch._dynamo.exc.TorchDynamoException``).

    Example::

        >>> issubclass(TorchDynamoException, RuntimeError)
        True
    """


class Unsupported(TorchDynamoException):
    """Code the compiler cannot capture, raised under ``fullgraph=True``
    (``torch._dynamo.exc.Unsupported``).

    Example::

        >>> issubclass(Unsupported, RuntimeError)
        True
    """


class InvalidBackend(TorchDynamoException):
    """``backend=`` names no backend (``torch._dynamo.exc.InvalidBackend``).

    Example::

        >>> issubclass(InvalidBackend, TorchDynamoException)
        True
    """


class BackendCompilerFailed(TorchDynamoException):
    """The backend raised while compiling a captured graph
    (``torch._dynamo.exc.BackendCompilerFailed``); ``config.suppress_errors`` runs the
    function eagerly instead.

    Example::

        >>> issubclass(BackendCompilerFailed, TorchDynamoException)
        True
    """


log = logging.getLogger("ember._dynamo")
warn_logger = logging.getLogger("ember._dynamo.convert_frame")
_handler = None


def _log_names():
    return {name.strip().lstrip("+") for name in os.environ.get("EMBER_LOGS", "").split(",")
            if name.strip()}


def log_enabled(name):
    """Whether ``EMBER_LOGS`` names ``name`` (``graph_breaks``, ``recompiles``,
    ``graph_code``, ``aot``); makes sure its messages reach stderr.

    Example::

        >>> log_enabled("no_such_log")
        False
    """
    global _handler
    if name not in _log_names():
        return False
    if _handler is None:
        _handler = logging.StreamHandler(sys.stderr)
        _handler.setFormatter(logging.Formatter("[ember._dynamo] %(message)s"))
        log.addHandler(_handler)
        log.setLevel(logging.INFO)
    return True


class _Stance:
    """``torch.compiler.set_stance``'s setting: ``"default"`` compiles, ``"force_eager"``
    runs every compiled function eagerly, ``"eager_on_recompile"`` uses cached graphs but
    runs new variants eagerly, ``"fail_on_recompile"`` raises on a new variant."""

    current = "default"


stance = _Stance()


class _DefaultBackend:
    """``torch.compiler.set_default_backend``'s setting: what ``backend=None`` means."""

    current = "inductor"


default_backend = _DefaultBackend()
