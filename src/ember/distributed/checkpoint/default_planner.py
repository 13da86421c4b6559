"""``ember.distributed.checkpoint.default_planner``: the default save and load planners.

Example::

    >>> from ember.distributed.checkpoint.default_planner import DefaultSavePlanner
"""

from ._dcp import DefaultLoadPlanner, DefaultSavePlanner

__all__ = ["DefaultSavePlanner", "DefaultLoadPlanner"]
