"""``ember.distributed.checkpoint.stateful``: objects that save and load their own state.

Example::

    >>> class App(Stateful):
    ...     def state_dict(self): return {"model": model.state_dict()}
    ...     def load_state_dict(self, sd): model.load_state_dict(sd["model"])
"""

from typing import Protocol, runtime_checkable

__all__ = ["Stateful"]


@runtime_checkable
class Stateful(Protocol):
    """Anything with ``state_dict()`` and ``load_state_dict(state_dict)``: ``save`` and ``load``
    call them for the top-level values of the state dict that have them."""

    def state_dict(self):
        ...

    def load_state_dict(self, state_dict):
        ...
