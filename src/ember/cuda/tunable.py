"""``ember.cuda.tunable``: TunableOp kernel selection for CUDA GEMMs (no effect without a GPU;
the switches report "off").

Example::

    >>> from ember.cuda import tunable
    >>> tunable.is_enabled()
    False
"""

_state = {"enabled": False, "tuning": False}


def enable(val=True):
    """Turn TunableOp on or off (recorded; ember runs no CUDA GEMMs without a GPU)."""
    _state["enabled"] = bool(val)


def is_enabled():
    """Whether TunableOp is on."""
    return _state["enabled"]


def tuning_enable(val=True):
    """Turn tuning of new GEMM shapes on or off."""
    _state["tuning"] = bool(val)


def tuning_is_enabled():
    """Whether new GEMM shapes are tuned."""
    return _state["tuning"]
