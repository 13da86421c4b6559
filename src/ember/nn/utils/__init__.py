"""``ember.nn.utils``: gradient clipping, parameter/vector conversion and helper submodules.

Example::

    >>> net = ember.nn.Linear(3, 2)
    >>> net(ember.randn(4, 3)).sum().backward()
    >>> total = ember.nn.utils.clip_grad_norm_(net.parameters(), max_norm=1.0)
"""
