"""``ember.distributed.checkpoint.filesystem``: checkpoints in a directory.

Example::

    >>> from ember.distributed.checkpoint.filesystem import FileSystemWriter
"""

from ._dcp import FileSystemReader, FileSystemWriter

__all__ = ["FileSystemReader", "FileSystemWriter"]
