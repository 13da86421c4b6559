"""torch's experimental DataFrame DataPipes (a tracing layer over pandas/torcharrow frames).

ember does not implement them: each name exists and raises ``NotImplementedError`` naming the
torch API, so imports succeed and use fails clearly. Use the iterable DataPipes on rows instead.
"""

from __future__ import annotations


def _message(qualname):
    return (f"torch.utils.data.datapipes.dataframe {qualname} (torch's experimental DataFrame "
            "DataPipes) is not implemented in ember; map and batch rows with the IterDataPipes "
            "instead")


def unsupported_function(qualname):
    """A function named ``qualname`` that raises ``NotImplementedError`` when called."""

    def function(*args, **kwargs):
        raise NotImplementedError(_message(qualname))

    function.__name__ = qualname.rsplit(".", 1)[-1]
    function.__qualname__ = function.__name__
    function.__doc__ = f"torch's ``{qualname}``: raises ``NotImplementedError`` in ember."
    return function


def unsupported_class(qualname, base=object):
    """A class named ``qualname`` whose construction raises ``NotImplementedError``."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError(_message(qualname))

    name = qualname.rsplit(".", 1)[-1]
    doc = f"torch's ``{qualname}``: raises ``NotImplementedError`` in ember."
    return type(name, (base,), {"__init__": __init__, "__doc__": doc})
