"""``torch.distributed.launcher``: start the workers of a distributed job from Python
(:class:`LaunchConfig`, :class:`elastic_launch`); ``ember.distributed.run`` (torchrun) is
built on it."""

from .api import LaunchConfig, elastic_launch, launch_agent

__all__ = ["LaunchConfig", "elastic_launch", "launch_agent"]
