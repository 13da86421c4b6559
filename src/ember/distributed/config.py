"""``torch.distributed.config``: global switches of the distributed package, read from the
environment at import as torch reads them.

* ``compile_on_one_rank`` (``TORCH_DISTRIBUTED_COMPILE_ON_ONE_RANK``): torch.compile's
  cross-rank compile sharing; ember compiles nothing across ranks, so it is only recorded.
* ``use_torchcomms`` (``TORCH_DISTRIBUTED_USE_TORCHCOMMS``): torch's experimental torchcomms
  backend; ember has none, so it is only recorded.

Example::

    >>> import ember.distributed.config as config
    >>> config.use_torchcomms
    False
"""

import os

__all__ = ["compile_on_one_rank", "use_torchcomms"]


def _flag(name):
    """A boolean switch from the environment ("1"/"true"/... on, unset or "0"/"false" off)."""
    return os.environ.get(name, "0").strip().lower() in ("1", "true", "yes", "on")


# torch takes any non-empty value of this variable as on (bool of the string)
compile_on_one_rank = bool(os.environ.get("TORCH_DISTRIBUTED_COMPILE_ON_ONE_RANK", False))
use_torchcomms = _flag("TORCH_DISTRIBUTED_USE_TORCHCOMMS")
