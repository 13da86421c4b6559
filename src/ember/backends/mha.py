"""``ember.backends.mha``: the fast path of ``nn.MultiheadAttention``/``TransformerEncoderLayer``
in inference (a flag; ember runs one implementation, whose results equal torch's).

Example::

    >>> ember.backends.mha.get_fastpath_enabled()
    True
"""

__all__ = ["get_fastpath_enabled", "set_fastpath_enabled"]

_state = {"enabled": True}


def get_fastpath_enabled():
    """Whether the fast path may be taken."""
    return _state["enabled"]


def set_fastpath_enabled(value):
    """Allow or forbid the fast path."""
    _state["enabled"] = bool(value)
