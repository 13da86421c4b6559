"""``ember.utils.data.datapipes``: composable data loading pipelines (torch's DataPipes).

Example::

    >>> from ember.utils.data.datapipes.iter import IterableWrapper
    >>> list(IterableWrapper(range(4)).filter(lambda x: x > 0).map(lambda x: x * x))
    [1, 4, 9]
"""

from . import (  # noqa: F401
    dataframe,
    datapipe,
    gen_pyi,  # noqa: F401
    iter,
    map,
    utils,
)
