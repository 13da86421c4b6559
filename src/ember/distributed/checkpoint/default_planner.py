"""``ember.distributed.checkpoint.default_planner``: the default save and load planners.

Example::

    >>> from ember.distributed.checkpoint.default_planner import DefaultSavePlanner
"""

from ._dcp import DefaultLoadPlanner, DefaultSavePlanner

__all__ = ["DefaultSavePlanner", "DefaultLoadPlanner", "create_default_local_load_plan",
           "create_default_global_load_plan", "create_default_local_save_plan",
           "create_default_global_save_plan"]


def _no_plans(name):
    raise NotImplementedError(f"torch.distributed.checkpoint.default_planner.{name} is not "
                              "supported in ember: ember's save/load need no plans (every "
                              "rank writes its own pieces; load assembles what it needs)")


def create_default_local_load_plan(*args, **kwargs):
    """torch's load-plan builder (ember has no plans: raises NotImplementedError)."""
    _no_plans("create_default_local_load_plan")


def create_default_global_load_plan(*args, **kwargs):
    """torch's load-plan builder (ember has no plans: raises NotImplementedError)."""
    _no_plans("create_default_global_load_plan")


def create_default_local_save_plan(*args, **kwargs):
    """torch's save-plan builder (ember has no plans: raises NotImplementedError)."""
    _no_plans("create_default_local_save_plan")


def create_default_global_save_plan(*args, **kwargs):
    """torch's save-plan builder (ember has no plans: raises NotImplementedError)."""
    _no_plans("create_default_global_save_plan")
