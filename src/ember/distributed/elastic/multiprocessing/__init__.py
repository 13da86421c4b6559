"""``torch.distributed.elastic.multiprocessing``: where workers' output goes (:class:`Std`,
:class:`LogsSpecs`, :class:`DefaultLogsSpecs`)."""

from .api import DefaultLogsSpecs, LogsDest, LogsSpecs, Std, to_map

__all__ = ["DefaultLogsSpecs", "LogsDest", "LogsSpecs", "Std", "to_map"]
