"""``ember.nn.parallel.data_parallel``: torch's module path of :class:`DataParallel`.

Example::

    >>> from ember.nn.parallel.data_parallel import DataParallel
"""

from ..modules.data_parallel import DataParallel, data_parallel

__all__ = ["DataParallel", "data_parallel"]
