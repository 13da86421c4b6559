"""``RemoteModule``: an ``nn.Module`` created on an RPC worker, called from anywhere.

The module itself stays on its worker (``module_rref`` points at it); ``forward`` sends the
inputs there through ``rpc_sync`` (``forward_async``: ``rpc_async``) and returns the output,
recorded by distributed autograd inside a context. ``remote_parameters()`` gives RRefs to the
parameters for a :class:`~ember.distributed.optim.DistributedOptimizer`. A RemoteModule can be
passed in RPC arguments: the receiver gets a RemoteModule for the same remote module.

Example::

    >>> lin = RemoteModule("worker1/cpu", ember.nn.Linear, args=(4, 2))
    >>> lin(ember.ones(3, 4)).shape
    ember.Size([3, 2])
"""

from __future__ import annotations

from ....nn.modules.module import Module
from ... import rpc

__all__ = ["RemoteModule"]


def _parse_remote_device(remote_device):
    """``'<worker>/<device>'``, ``'rank:<r>/<device>'`` or ``'<worker>'``: (worker, device)."""
    from .... import device as make_device

    error = (f"Could not parse remote_device: {remote_device}. The valid format is "
             "'<workername>/<device>' or 'rank:<rank>/<device>' or '<device>'")
    if not isinstance(remote_device, str):
        raise TypeError(f"Invalid type for remote_device: {type(remote_device)}")
    fields = remote_device.split("/")
    if len(fields) == 2:
        worker, device = fields
    elif len(fields) == 1:
        worker, device = fields[0], "cpu"
    else:
        raise ValueError(error)
    if not worker:
        raise ValueError(error)
    parts = worker.split(":")
    if len(parts) == 2:
        if parts[0] != "rank" or not parts[1].isdigit():
            raise ValueError(error)
        worker = int(parts[1])
    elif len(parts) > 2:
        raise ValueError(error)
    return worker, make_device(device)


def _create_module(module_cls, args, kwargs, device):
    module = module_cls(*args, **kwargs)
    if not isinstance(module, Module):
        raise ValueError(f"Expect `module_cls(*args, **kwargs)` returns an instance of "
                         f"<class nn.Module>, but it returns an instance of {type(module)}.")
    return module.to(device)


def _param_rrefs(module_rref, recurse):
    return [rpc.RRef(p) for p in module_rref.local_value().parameters(recurse)]


def _remote_forward(module_rref, args, kwargs):
    return module_rref.local_value().forward(*args, **kwargs)


def _not_supported(name):
    def method(self, *args, **kwargs):
        raise ValueError(f"Method ``{name}`` not supported for RemoteModule")
    method.__name__ = name
    method.__doc__ = "Not supported for a RemoteModule (raises ValueError, as torch)."
    return method


class RemoteModule(Module):
    """A module built as ``module_cls(*args, **kwargs)`` on the worker of ``remote_device``.

    Example::

        >>> remote = RemoteModule("ps", ember.nn.Linear, args=(16, 8))
        >>> params = remote.remote_parameters()        # RRefs, for DistributedOptimizer
    """

    def __init__(self, remote_device, module_cls, args=None, kwargs=None,
                 _module_interface_cls=None):
        super().__init__()
        worker, self.device = _parse_remote_device(remote_device)
        self.on = rpc.get_worker_info(worker) if isinstance(worker, str) else worker
        self.is_device_map_set = False
        self.is_scriptable = False
        self.module_rref = rpc.remote(self.on, _create_module,
                                      (module_cls, tuple(args or ()), dict(kwargs or {}),
                                       str(self.device)))

    def forward(self, *args, **kwargs):
        """Run the remote module's ``forward`` on its worker; the output comes back here."""
        return rpc.rpc_sync(self.on, _remote_forward, (self.module_rref, args, kwargs))

    def forward_async(self, *args, **kwargs):
        """Like :meth:`forward`, as a Future."""
        return rpc.rpc_async(self.on, _remote_forward, (self.module_rref, args, kwargs))

    def remote_parameters(self, recurse=True):
        """RRefs to the remote module's parameters (with its submodules' when ``recurse``)."""
        return rpc.rpc_sync(self.on, _param_rrefs, args=(self.module_rref, recurse))

    def get_module_rref(self):
        """The RRef of the remote module itself."""
        return self.module_rref

    def parameters(self, recurse=True):
        """Not supported: the parameters are remote (use :meth:`remote_parameters`)."""
        raise ValueError("Method ``parameters`` not supported for RemoteModule. Please use "
                         "``remote_parameters`` instead.")

    def _rpc_reduce(self):
        """How a RemoteModule travels in an RPC message: the same remote module."""
        return _rebuild_remote_module, (self.on, str(self.device), self.module_rref)

    def __getstate__(self):
        raise RuntimeError("Cannot pickle RemoteModule in python pickler. RemoteModule can "
                           "only be pickled when using RPC")

    def __setstate__(self, state):
        raise RuntimeError("Cannot unpickle RemoteModule in python pickler. RemoteModule can "
                           "only be unpickled when using RPC")


for _name in ("register_buffer", "register_parameter", "add_module", "apply", "cuda", "ipu",
              "xpu", "cpu", "type", "float", "double", "half", "bfloat16", "to",
              "register_backward_hook", "register_forward_pre_hook", "register_forward_hook",
              "state_dict", "load_state_dict", "named_parameters", "buffers", "named_buffers",
              "children", "named_children", "modules", "named_modules", "requires_grad_",
              "zero_grad", "share_memory", "extra_repr"):
    setattr(RemoteModule, _name, _not_supported(_name))


def _rebuild_remote_module(on, device, module_rref):
    from .... import device as make_device

    module = RemoteModule.__new__(RemoteModule)
    Module.__init__(module)
    module.on, module.device = on, make_device(device)
    module.is_device_map_set = False
    module.is_scriptable = False
    module.module_rref = module_rref
    return module
