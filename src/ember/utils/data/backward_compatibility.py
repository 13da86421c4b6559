"""``ember.utils.data.backward_compatibility``: torch's deprecated DataPipe worker hook.

Example::

    >>> from ember.utils.data.backward_compatibility import worker_init_fn
"""

import warnings

__all__ = ["worker_init_fn"]


def worker_init_fn(worker_id):
    """Deprecated: DataLoader applies DataPipe sharding itself; this only warns, as torch's does.

    Example::

        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     worker_init_fn(0)
    """
    warnings.warn("Usage of backward_compatibility.worker_init_fn is deprecated as DataLoader "
                  "automatically applies sharding in every worker", stacklevel=2)
