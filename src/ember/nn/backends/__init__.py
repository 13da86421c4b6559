"""``ember.nn.backends``: torch's historical package of layer backends (kept for old pickles).

Example::

    >>> from ember.nn.backends import thnn
"""

from . import thnn  # noqa: F401
