"""``ember.fx.config``: switches read by ``ember.fx`` passes (torch.fx's names and defaults).

- ``disable_progress``: no progress display while graph passes run;
- ``verbose_progress``: with progress shown, name each node as it is processed;
- ``do_not_emit_stack_traces``: tracers leave ``node.meta["stack_trace"]`` unset even with
  ``record_stack_traces``, saving the cost of capturing the stack for every node.
"""

disable_progress = True
verbose_progress = False
do_not_emit_stack_traces = False
