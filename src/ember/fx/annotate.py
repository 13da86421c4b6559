"""``ember.fx.annotate``: give a traced value a type, shown in the graph and generated code."""

from __future__ import annotations

from .proxy import Proxy

__all__ = ["annotate"]


def annotate(val, type):
    """Set the type of the node behind ``val`` when it is a :class:`~ember.fx.Proxy`; any
    other value is returned unchanged. A value can be annotated once.

    >>> import ember.fx
    >>> def f(x):
    ...     return annotate(x + 1, int)
    >>> [node.type for node in ember.fx.symbolic_trace(f).graph.nodes]
    [None, <class 'int'>, None]
    """
    if not isinstance(val, Proxy):
        return val
    if val.node.type:
        raise RuntimeError(f"Tried to annotate a value that already had a type on it! Existing "
                           f"type is {val.node.type} and new type is {type}. This could happen "
                           "if you tried to annotate a function parameter value (in which case "
                           "you should use the type slot on the function signature) or you "
                           "called annotate on the same value twice")
    val.node.type = type
    return val
