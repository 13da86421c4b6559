"""``ember.distributed.checkpoint``: distributed checkpoints (DCP), as
``torch.distributed.checkpoint``.

:func:`save` writes each rank's pieces of a (sharded) state dict to a directory, with one
index file; :func:`load` fills a state dict in place from it, on any number of ranks. The
``state_dict`` submodule gives models' and optimisers' state dicts under clean names.

Example::

    >>> import ember.distributed.checkpoint as dcp
    >>> dcp.save({"model": model.state_dict()}, checkpoint_id="ckpt")
    >>> sd = {"model": model.state_dict()}
    >>> dcp.load(sd, checkpoint_id="ckpt")
"""

from . import default_planner, filesystem, state_dict  # noqa: F401
from ._dcp import (
    CheckpointException,
    DefaultLoadPlanner,
    DefaultSavePlanner,
    FileSystemReader,
    FileSystemWriter,
    async_save,
    load,
    load_state_dict,
    save,
    save_state_dict,
)
from .stateful import Stateful

__all__ = ["save", "load", "async_save", "save_state_dict", "load_state_dict",
           "FileSystemReader", "FileSystemWriter", "DefaultSavePlanner", "DefaultLoadPlanner",
           "CheckpointException", "Stateful"]
