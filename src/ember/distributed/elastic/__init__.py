"""``torch.distributed.elastic``: the parts of torch's elastic launcher that
``ember.distributed.run`` and ``ember.distributed.launcher`` use: how workers' output is
logged (:mod:`.multiprocessing`), how their failures are reported
(:mod:`.multiprocessing.errors`) and small helpers (:mod:`.utils`). torch's elastic agents,
rendezvous backends, timers and metrics are not built: ember's launcher starts a fixed set of
workers and restarts them all when one fails (``max_restarts``).
"""
