"""``torch.distributed.utils``: torch keeps only private helpers of DDP/FSDP here (no public
names); ember's own helpers live next to the code that uses them.

Example::

    >>> import ember.distributed.utils as utils
    >>> utils.__all__
    []
"""

__all__ = []
