"""``ember.profiler``: where the time goes, with torch's profiler API.

Every operator call (named as torch's ATen operators: ``aten::add``, ``aten::mm``), every
autograd node run by backward (``autograd::engine::evaluate_function: MulBackward0``) and
every :class:`record_function` range becomes an event with its CPU time; events nest, and
an event's self time is its total time minus its children's.

Example::

    >>> import ember
    >>> from ember.profiler import profile, record_function, ProfilerActivity
    >>> with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
    ...     with record_function("model_inference"):
    ...         ember.mm(ember.ones(8, 8), ember.ones(8, 8)).relu()
    >>> print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=10))
    ... # doctest: +SKIP
"""

from . import itt  # noqa: F401
from ._events import DeviceType, EventList, FunctionEvent, FunctionEventAvg
from ._recorder import record_function
from .profiler import (
    ExecutionTraceObserver,
    ProfilerAction,
    ProfilerActivity,
    kineto_available,
    profile,
    schedule,
    supported_activities,
    tensorboard_trace_handler,
)

__all__ = ["profile", "schedule", "supported_activities", "tensorboard_trace_handler",
           "ProfilerAction", "ProfilerActivity", "DeviceType", "record_function",
           "EventList", "FunctionEvent", "FunctionEventAvg", "ExecutionTraceObserver",
           "kineto_available", "itt"]
