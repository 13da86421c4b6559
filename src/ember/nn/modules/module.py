"""``nn.Module``: the base class of every layer and model, with torch's registration rules.

A module keeps three ordered dicts, ``_parameters``, ``_buffers`` and ``_modules``, filled by
attribute assignment (``self.fc = Linear(...)``, ``self.w = Parameter(...)``) or by the
``register_*`` methods. Everything else (``parameters()``, ``state_dict()``, ``to()``, ``repr``)
walks those dicts.
"""

from __future__ import annotations

import functools
import itertools
import weakref
from collections import OrderedDict, namedtuple

from ... import _dtype as dt
from ..._tensor import Tensor
from ..._traceback import hide_internal_frames as _hide_internal_frames
from ...autograd import grad_mode
from ..parameter import Buffer, Parameter, is_lazy

__all__ = ["Module", "register_module_forward_hook", "register_module_forward_pre_hook",
           "register_module_full_backward_pre_hook", "register_module_full_backward_hook",
           "register_module_backward_hook", "register_module_buffer_registration_hook",
           "register_module_module_registration_hook",
           "register_module_parameter_registration_hook"]

_global_forward_hooks: dict = OrderedDict()
_global_forward_pre_hooks: dict = OrderedDict()
_global_backward_pre_hooks: dict = OrderedDict()
_global_backward_hooks: dict = OrderedDict()
_global_is_full_backward_hook = None  # True/False once a global backward hook was registered
# run when any module registers a buffer, submodule or parameter; each may replace the value
_global_buffer_registration_hooks: dict = OrderedDict()
_global_module_registration_hooks: dict = OrderedDict()
_global_parameter_registration_hooks: dict = OrderedDict()
# counts attribute assignments and deletions on every module: ember.compile's guards reread
# a module's plain attributes only when it moved (_inductor/guards.py, GuardedModules)
_setattr_count = 0


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


class RemovableHandle:
    """Returned by ``register_*_hook``: ``remove()`` unregisters the hook."""

    _ids = itertools.count()

    def __init__(self, *hooks_dicts, extra_dict=None):
        self.hooks_dict_refs = [weakref.ref(d) for d in hooks_dicts]
        self.id = next(RemovableHandle._ids)
        self.extra_dict_ref = weakref.ref(extra_dict) if extra_dict is not None else None

    def remove(self):
        """Unregister the hook."""
        for ref in self.hooks_dict_refs:
            hooks = ref()
            if hooks is not None:
                hooks.pop(self.id, None)
        if self.extra_dict_ref is not None:
            extra = self.extra_dict_ref()
            if extra is not None:
                extra.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def register_module_forward_pre_hook(hook):
    """Register ``hook(module, args)`` to run before every module's forward."""
    handle = RemovableHandle(_global_forward_pre_hooks)
    _global_forward_pre_hooks[handle.id] = hook
    return handle


def register_module_forward_hook(hook):
    """Register ``hook(module, args, output)`` to run after every module's forward."""
    handle = RemovableHandle(_global_forward_hooks)
    _global_forward_hooks[handle.id] = hook
    return handle


def _add_global_hook(hooks, hook):
    handle = RemovableHandle(hooks)
    hooks[handle.id] = hook
    return handle


def _set_backward_hook_kind(full):
    global _global_is_full_backward_hook
    if _global_is_full_backward_hook is (not full):
        raise RuntimeError("Cannot use both regular backward hooks and full backward hooks as a "
                           "global Module hook. Please use only one of them.")
    _global_is_full_backward_hook = full


def register_module_full_backward_pre_hook(hook):
    """Register ``hook(module, grad_output)`` to run before every module's input gradients are
    computed (before the module's own backward pre-hooks); it may return new grad_output.

    Example::

        >>> handle = register_module_full_backward_pre_hook(lambda m, g: None)
        >>> handle.remove()
    """
    return _add_global_hook(_global_backward_pre_hooks, hook)


def register_module_full_backward_hook(hook):
    """Register ``hook(module, grad_input, grad_output)`` for every module's backward (before
    the module's own backward hooks); it may return new grad_input.

    Example::

        >>> handle = register_module_full_backward_hook(lambda m, gi, go: None)
        >>> handle.remove()
    """
    _set_backward_hook_kind(full=True)
    return _add_global_hook(_global_backward_hooks, hook)


def register_module_backward_hook(hook):
    """torch's deprecated global backward hook; ember runs it as a full backward hook.
    Mixing it with :func:`register_module_full_backward_hook` raises, as in torch.

    Example::

        >>> handle = register_module_backward_hook(lambda m, gi, go: None)  # doctest: +SKIP
    """
    _set_backward_hook_kind(full=False)
    return _add_global_hook(_global_backward_hooks, hook)


def register_module_buffer_registration_hook(hook):
    """Register ``hook(module, name, buffer)``, run when any module registers a buffer; a
    non-None result replaces the buffer.

    Example::

        >>> handle = register_module_buffer_registration_hook(lambda m, n, b: None)
        >>> handle.remove()
    """
    return _add_global_hook(_global_buffer_registration_hooks, hook)


def register_module_module_registration_hook(hook):
    """Register ``hook(module, name, submodule)``, run when any module registers a submodule;
    a non-None result replaces the submodule.

    Example::

        >>> handle = register_module_module_registration_hook(lambda m, n, s: None)
        >>> handle.remove()
    """
    return _add_global_hook(_global_module_registration_hooks, hook)


def register_module_parameter_registration_hook(hook):
    """Register ``hook(module, name, param)``, run when any module registers a parameter; a
    non-None result replaces the parameter.

    Example::

        >>> handle = register_module_parameter_registration_hook(lambda m, n, p: None)
        >>> handle.remove()
    """
    return _add_global_hook(_global_parameter_registration_hooks, hook)


def _run_registration_hooks(hooks, module, name, value):
    for hook in hooks.values():
        output = hook(module, name, value)
        if output is not None:
            value = output
    return value


# the fields every module has, with their empty value: filled in when unpickling a module saved
# before a field existed (torch's __setstate__ fills the same ones)
_STATE_DEFAULTS = (
    ("training", lambda: True),
    ("_parameters", dict), ("_buffers", dict), ("_modules", dict),
    ("_non_persistent_buffers_set", set), ("_is_full_backward_hook", lambda: None),
    *((name, OrderedDict) for name in (
        "_forward_hooks", "_forward_hooks_with_kwargs", "_forward_hooks_always_called",
        "_forward_pre_hooks", "_forward_pre_hooks_with_kwargs", "_backward_hooks",
        "_backward_pre_hooks", "_state_dict_hooks", "_state_dict_pre_hooks",
        "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks")),
)


def _addindent(text, spaces):
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    first = lines.pop(0)
    return first + "\n" + "\n".join(" " * spaces + line for line in lines)


class Module:
    """Base class for all neural-network modules.

    Subclasses define ``__init__`` (calling ``super().__init__()`` first) and ``forward``;
    assigning parameters, buffers and submodules as attributes registers them.

    Example::

        >>> class Net(ember.nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.fc = ember.nn.Linear(4, 2)
        ...     def forward(self, x):
        ...         return self.fc(x).relu()
        >>> [name for name, _ in Net().named_parameters()]
        ['fc.weight', 'fc.bias']
    """

    _version = 1
    training: bool
    call_super_init = False

    def __init__(self, *args, **kwargs):
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got unexpected arguments")
        # plain dicts and OrderedDicts exactly as torch's Module holds them, so that a pickled
        # module names the same globals as torch's (and loads under torch's weights_only)
        for name, default in _STATE_DEFAULTS:
            object.__setattr__(self, name, default())

    def forward(self, *input):
        """Define the computation; called through ``module(*args)``."""
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required '
                                  '"forward" function')

    # ------------------------------------------------------------ registration

    def register_parameter(self, name, param):
        """Add a parameter (or None) under ``name``."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        self._check_name(name, "parameter")
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is None:
            self._parameters[name] = None
            return
        if not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_type_name(param)}' object to parameter '{name}' "
                            "(torch.nn.Parameter or None required)")
        if param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model "
                             f"parameters must be created explicitly. To express '{name}' as a "
                             "function of another Tensor, compute the value in the forward() "
                             "method.")
        if _global_parameter_registration_hooks:
            param = _run_registration_hooks(_global_parameter_registration_hooks, self, name,
                                            param)
        self._parameters[name] = param

    def register_buffer(self, name, tensor, persistent=True):
        """Add a buffer: state that is not a parameter (running means, masks, ...).

        Example::

            >>> m.register_buffer("running_mean", ember.zeros(3))
        """
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        self._check_name(name, "buffer")
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' "
                            "(torch Tensor or None required)")
        if isinstance(tensor, Buffer):
            persistent = tensor.persistent
            tensor = Tensor._make(tensor._data, tensor._device)
        if _global_buffer_registration_hooks:
            tensor = _run_registration_hooks(_global_buffer_registration_hooks, self, name, tensor)
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name, module):
        """Add a child module under ``name``."""
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._check_name(name, "module")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if _global_module_registration_hooks:
            module = _run_registration_hooks(_global_module_registration_hooks, self, name, module)
        self._modules[name] = module

    register_module = add_module

    @staticmethod
    def _check_name(name, kind):
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain "."')

    def __setattr__(self, name, value):
        global _setattr_count
        _setattr_count += 1
        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._remove_from(name, self.__dict__, self._buffers, self._modules,
                              self._non_persistent_buffers_set)
            self.register_parameter(name, value)
            return
        if params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_type_name(value)}' as parameter '{name}' "
                                "(torch.nn.Parameter or None expected)")
            self.register_parameter(name, value)
            return
        modules = self.__dict__.get("_modules")
        if isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._remove_from(name, self.__dict__, self._parameters, self._buffers,
                              self._non_persistent_buffers_set)
            modules[name] = value
            return
        if modules is not None and name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{_type_name(value)}' as child module '{name}' "
                                "(torch.nn.Module or None expected)")
            modules[name] = value
            return
        buffers = self.__dict__.get("_buffers")
        if isinstance(value, Buffer) or (buffers is not None and name in buffers):
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{_type_name(value)}' as buffer '{name}' "
                                "(torch.Tensor or None expected)")
            if isinstance(value, Buffer):
                persistent = value.persistent
            else:
                persistent = name not in self._non_persistent_buffers_set
            self._remove_from(name, self.__dict__, self._parameters, self._modules)
            self.register_buffer(name, value, persistent)
            return
        object.__setattr__(self, name, value)

    @staticmethod
    def _remove_from(name, *containers):
        for container in containers:
            if name in container:
                if isinstance(container, set):
                    container.discard(name)
                else:
                    del container[name]

    def __getattr__(self, name):
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            if store in d and name in d[store]:
                return d[store][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        global _setattr_count
        _setattr_count += 1
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    def __dir__(self):
        keys = list(object.__dir__(self))
        keys += list(self._parameters) + list(self._buffers) + list(self._modules)
        return sorted(k for k in set(keys) if not k[0].isdigit())

    def __setstate__(self, state):
        self.__dict__.update(state)
        # a module pickled by an older torch (or ember) may lack the newer bookkeeping fields
        for name, default in _STATE_DEFAULTS:
            if name not in self.__dict__:
                object.__setattr__(self, name, default())

    # ------------------------------------------------------------ traversal

    def _named_members(self, get_members, prefix="", recurse=True, remove_duplicate=True):
        memo = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) \
            if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for name, value in get_members(module):
                if value is None or (remove_duplicate and id(value) in memo):
                    continue
                if remove_duplicate:
                    memo.add(id(value))
                yield (module_prefix + ("." if module_prefix else "") + name, value)

    def parameters(self, recurse=True):
        """Iterate over parameters (of submodules too unless ``recurse=False``).

        Example::

            >>> sum(p.numel() for p in ember.nn.Linear(3, 2).parameters())
            8
        """
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        """Iterate over ``(name, parameter)`` pairs with dotted names."""
        yield from self._named_members(lambda m: m._parameters.items(), prefix, recurse,
                                       remove_duplicate)

    def buffers(self, recurse=True):
        """Iterate over buffers."""
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        """Iterate over ``(name, buffer)`` pairs."""
        yield from self._named_members(lambda m: m._buffers.items(), prefix, recurse,
                                       remove_duplicate)

    def children(self):
        """Iterate over direct submodules."""
        for _, module in self.named_children():
            yield module

    def named_children(self):
        """Iterate over ``(name, submodule)`` for direct submodules."""
        memo = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in memo:
                memo.add(id(module))
                yield name, module

    def modules(self):
        """Iterate over this module and all submodules (each once)."""
        for _, module in self.named_modules():
            yield module

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """Iterate over ``(dotted name, module)`` for this module and all below it."""
        if memo is None:
            memo = set()
        stack = [(prefix, self)]
        while stack:
            name, module = stack.pop()
            if remove_duplicate:
                if id(module) in memo:
                    continue
                memo.add(id(module))
            yield name, module
            children = [(name + ("." if name else "") + child_name, child)
                        for child_name, child in module._modules.items() if child is not None]
            stack.extend(reversed(children))

    def get_submodule(self, target):
        """The submodule at dotted path ``target`` ("" is this module)."""
        if target == "":
            return self
        module = self
        for item in target.split("."):
            if not hasattr(module, item):
                raise AttributeError(f"{module._get_name()} has no attribute `{item}`")
            module = getattr(module, item)
            if not isinstance(module, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        return module

    def get_parameter(self, target):
        """The parameter at dotted path ``target``."""
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        if not hasattr(module, name):
            raise AttributeError(f"{module._get_name()} has no attribute `{name}`")
        param = getattr(module, name)
        if not isinstance(param, Parameter):
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return param

    def get_buffer(self, target):
        """The buffer at dotted path ``target``."""
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        if name not in module._buffers:
            raise AttributeError(f"`{name}` is not a buffer")
        return module._buffers[name]

    # ------------------------------------------------------------ modes and conversion

    def compile(self, *args, **kwargs):
        """Compile this module's ``forward`` in place with :func:`ember.compile`'s keyword
        arguments: later calls replay the captured graph (torch's ``Module.compile``).

        Example::

            >>> net = ember.nn.Linear(2, 1)
            >>> net.compile()
            >>> net(ember.ones(1, 2)).shape
            ember.Size([1, 1])
        """
        from ..._inductor.compiled import compile_module_in_place

        compile_module_in_place(self, *args, **kwargs)

    def train(self, mode=True):
        """Set training mode (dropout active, batch norm updating) on this and all children."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self):
        """Set evaluation mode: ``train(False)``."""
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        """Set ``requires_grad`` on every parameter."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        """Reset the gradients of all parameters (to None by default)."""
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                grad = p.grad.detach()
                grad.zero_()
                p._grad = grad

    def apply(self, fn):
        """Call ``fn`` on every submodule (children first) and on this module."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def _apply(self, fn, recurse=True):
        """Replace every parameter's and buffer's data by ``fn(tensor)``, keeping identities."""
        if recurse:
            for module in self.children():
                module._apply(fn)
        for param in self._parameters.values():
            if param is None or is_lazy(param):
                continue
            if hasattr(type(param), "_module_apply"):  # sparse: no dense memory to replace
                param._module_apply(fn)
                continue
            with grad_mode.no_grad():
                new = fn(param)
            param._data, param._device = new._data, new._device
            if param.grad is not None:
                with grad_mode.no_grad():
                    grad = fn(param.grad)
                param._grad = grad
        for key, buf in self._buffers.items():
            if buf is not None and not is_lazy(buf):
                self._buffers[key] = fn(buf)
        return self

    def to(self, *args, **kwargs):
        """Move and/or cast parameters and buffers: ``to(device)``, ``to(dtype)``, both.

        Only floating parameters change dtype, as in torch.

        Example::

            >>> ember.nn.Linear(2, 2).to(ember.float64).weight.dtype
            ember.float64
        """
        from ..._tensor import _parse_to

        device, dtype, _ = _parse_to(None, *args, **kwargs)
        if dtype is not None and not (dtype.is_floating_point or dtype.is_complex):
            raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but "
                            f"got desired dtype={dtype}")

        def convert(t):
            target = dtype if dtype is not None and (t.is_floating_point() or t.is_complex()) \
                else None
            return t.to(device=device, dtype=target)
        return self._apply(convert)

    def cpu(self):
        """Move everything to the CPU."""
        return self._apply(lambda t: t.cpu())

    def to_empty(self, *, device, recurse=True):
        """Move parameters and buffers to ``device`` without copying their values: each gets
        uninitialised memory of its shape and dtype there (parameters keep their identity).
        The way to materialise a module built under ``with ember.device("meta")``.

        Example::

            >>> with ember.device("meta"):
            ...     net = ember.nn.Linear(2, 3)
            >>> net.to_empty(device="cpu").reset_parameters()
        """
        from ...ops.creation import empty_like

        return self._apply(lambda t: empty_like(t, device=device), recurse=recurse)

    def cuda(self, device=None):
        """Move everything to a CUDA device."""
        return self._apply(lambda t: t.cuda(device))

    def _cast_floating(self, dtype):
        return self._apply(lambda t: t.to(dtype) if t.is_floating_point() else t)

    def float(self):
        """Cast floating parameters and buffers to float32."""
        return self._cast_floating(dt.float32)

    def double(self):
        """Cast floating parameters and buffers to float64."""
        return self._cast_floating(dt.float64)

    def half(self):
        """Cast floating parameters and buffers to float16."""
        return self._cast_floating(dt.float16)

    def bfloat16(self):
        """Cast floating parameters and buffers to bfloat16."""
        return self._cast_floating(dt.bfloat16)

    def type(self, dst_type):
        """Cast all parameters and buffers to ``dst_type``."""
        return self._apply(lambda t: t.type(dst_type))

    def share_memory(self):
        """Move parameters and buffers to shared memory (for Hogwild training)."""
        return self._apply(lambda t: t.share_memory_())

    # ------------------------------------------------------------ calling

    def _call_impl(self, *args, **kwargs):
        try:  # free until an error: then ember's frames leave its traceback (_traceback.py)
            if not (self._forward_hooks or self._forward_pre_hooks or self._backward_hooks
                    or self._backward_pre_hooks or _global_forward_hooks
                    or _global_forward_pre_hooks or _global_backward_hooks
                    or _global_backward_pre_hooks):
                return self.forward(*args, **kwargs)
            return _call_with_hooks(self, args, kwargs)
        except Exception as error:
            _hide_internal_frames(error)
            raise

    __call__ = _call_impl

    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """Run ``hook(module, args)`` (or ``(module, args, kwargs)``) before ``forward``; it may
        return new args."""
        handle = RemovableHandle(self._forward_pre_hooks,
                                 extra_dict=self._forward_pre_hooks_with_kwargs)
        _insert(self._forward_pre_hooks, handle.id, hook, prepend)
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        return handle

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False,
                              always_call=False):
        """Run ``hook(module, args, output)`` after ``forward``; it may return a new output."""
        handle = RemovableHandle(self._forward_hooks, extra_dict=self._forward_hooks_with_kwargs)
        _insert(self._forward_hooks, handle.id, hook, prepend)
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        return handle

    def register_full_backward_hook(self, hook, prepend=False):
        """Run ``hook(module, grad_input, grad_output)`` when the gradients w.r.t. the module's
        inputs are computed; it may return new grad_input."""
        handle = RemovableHandle(self._backward_hooks)
        _insert(self._backward_hooks, handle.id, hook, prepend)
        return handle

    def register_full_backward_pre_hook(self, hook, prepend=False):
        """Run ``hook(module, grad_output)`` before the module's input gradients are computed;
        it may return new grad_output."""
        handle = RemovableHandle(self._backward_pre_hooks)
        _insert(self._backward_pre_hooks, handle.id, hook, prepend)
        return handle

    def register_backward_hook(self, hook):
        """Deprecated in torch; here the same as :meth:`register_full_backward_hook`."""
        return self.register_full_backward_hook(hook)

    # ------------------------------------------------------------ state dict

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        """An ordered dict of every parameter and persistent buffer, by dotted name.

        Example::

            >>> list(ember.nn.Linear(2, 3).state_dict())
            ['weight', 'bias']
        """
        if args:  # the deprecated positional form state_dict(destination, prefix, keep_vars)
            destination = args[0]
            if len(args) > 1:
                prefix = args[1]
            if len(args) > 2:
                keep_vars = args[2]
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = {"version": self._version}
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in self._state_dict_pre_hooks.values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".",
                                  keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            result = hook(self, destination, prefix, local_metadata)
            if result is not None:
                destination = result
        return destination

    def register_state_dict_pre_hook(self, hook):
        """Run ``hook(module, prefix, keep_vars)`` before ``state_dict`` collects this module."""
        handle = RemovableHandle(self._state_dict_pre_hooks)
        self._state_dict_pre_hooks[handle.id] = hook
        return handle

    def register_state_dict_post_hook(self, hook):
        """Run ``hook(module, state_dict, prefix, local_metadata)`` after this module's entries
        are added; it may return a replacement dict."""
        handle = RemovableHandle(self._state_dict_hooks)
        self._state_dict_hooks[handle.id] = hook
        return handle

    _register_state_dict_hook = register_state_dict_post_hook

    def register_load_state_dict_pre_hook(self, hook):
        """Run ``hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)`` before this module loads its entries."""
        handle = RemovableHandle(self._load_state_dict_pre_hooks)
        self._load_state_dict_pre_hooks[handle.id] = functools.partial(_with_module, hook, self)
        return handle

    _register_load_state_dict_pre_hook = register_load_state_dict_pre_hook

    def register_load_state_dict_post_hook(self, hook):
        """Run ``hook(module, incompatible_keys)`` after ``load_state_dict``."""
        handle = RemovableHandle(self._load_state_dict_post_hooks)
        self._load_state_dict_post_hooks[handle.id] = hook
        return handle

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs, assign=False):
        for hook in self._load_state_dict_pre_hooks.values():
            hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                 error_msgs)
        persistent_buffers = {k: v for k, v in self._buffers.items()
                              if k not in self._non_persistent_buffers_set}
        local_state = {k: v for k, v in itertools.chain(self._parameters.items(),
                                                        persistent_buffers.items())
                       if v is not None}
        for name, param in local_state.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            value = state_dict[key]
            if not isinstance(value, Tensor):
                error_msgs.append(f'While copying the parameter named "{key}", expected '
                                  f"torch.Tensor or Tensor-like object from checkpoint but "
                                  f"received {type(value)}")
                continue
            if is_lazy(param):
                if is_lazy(value):  # uninitialised into uninitialised: stays lazy, as torch
                    continue
                param.materialize(value.shape, dtype=param.dtype)
            if not is_lazy(param) and value.shape != param.shape:
                error_msgs.append(f"size mismatch for {key}: copying a param with shape "
                                  f"torch.Size({list(value.shape)}) from checkpoint, the shape in "
                                  f"current model is torch.Size({list(param.shape)}).")
                continue
            try:
                if assign:
                    if name in self._parameters:
                        new = value if isinstance(value, Parameter) else \
                            Parameter(value, requires_grad=param.requires_grad)
                        self._parameters[name] = new
                    else:
                        self._buffers[name] = value
                else:
                    with grad_mode.no_grad():
                        param.copy_(value)
            except Exception as error:  # torch reports copy failures in the same list
                error_msgs.append(f'While copying the parameter named "{key}", whose dimensions '
                                  f"in the model are {param.shape} and whose dimensions in the "
                                  f"checkpoint are {value.shape}, an exception occurred : "
                                  f"{error.args}.")
        if strict:
            for key in state_dict:
                if key.startswith(prefix):
                    input_name = key[len(prefix):].split(".", 1)
                    if input_name[0] not in self._modules and input_name[0] not in local_state:
                        unexpected_keys.append(key)

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copy parameters and buffers from ``state_dict``; with ``strict``, keys must match.

        Returns ``(missing_keys, unexpected_keys)``; raises RuntimeError listing every problem.

        Example::

            >>> model.load_state_dict(ember.load("model.pt"))
            <All keys matched successfully>
        """
        if not isinstance(state_dict, dict):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing, unexpected, errors = [], [], []
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)
        if metadata is not None:
            state_dict._metadata = metadata

        def load(module, prefix=""):
            local_metadata = {} if metadata is None else metadata.get(prefix[:-1], {})
            module._load_from_state_dict(state_dict, prefix, local_metadata, True, missing,
                                         unexpected, errors, assign)
            for name, child in module._modules.items():
                if child is not None:
                    load(child, prefix + name + ".")
            incompatible = _IncompatibleKeys(missing, unexpected)
            for hook in module._load_state_dict_post_hooks.values():
                hook(module, incompatible)

        load(self)
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: "
                              + ", ".join(f'"{k}"' for k in unexpected) + ". ")
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: "
                              + ", ".join(f'"{k}"' for k in missing) + ". ")
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {self._get_name()}:\n\t"
                               + "\n\t".join(errors))
        return _IncompatibleKeys(missing, unexpected)

    # ------------------------------------------------------------ printing

    def _get_name(self):
        return type(self).__name__

    def extra_repr(self):
        """Extra text inside this module's repr (the layer's arguments)."""
        return ""

    def __repr__(self):
        lines = []
        extra = self.extra_repr()
        if extra:
            lines = extra.split("\n")
        children = []
        for name, module in self._modules.items():
            text = _addindent(repr(module), 2)
            children.append(f"({name}): {text}")
        body = lines + children
        main = self._get_name() + "("
        if body:
            if len(lines) == 1 and not children:
                main += lines[0]
            else:
                main += "\n  " + "\n  ".join(body) + "\n"
        return main + ")"

    def __getstate__(self):
        return self.__dict__.copy()


def _type_name(value):
    if isinstance(value, Tensor):
        return value.type()
    return type(value).__name__


def _insert(hooks, key, hook, prepend):
    hooks[key] = hook
    if prepend:
        hooks.move_to_end(key, last=False)


def _with_module(hook, module, *args):
    return hook(module, *args)


def _call_with_hooks(module, args, kwargs):
    """``module(*args)`` with forward pre/post hooks and full backward hooks."""
    for key, hook in itertools.chain(_global_forward_pre_hooks.items(),
                                     module._forward_pre_hooks.items()):
        if module._forward_pre_hooks_with_kwargs.get(key):
            result = hook(module, args, kwargs)
            if result is not None:
                args, kwargs = result
        else:
            result = hook(module, args)
            if result is not None:
                args = result if isinstance(result, tuple) else (result,)
    backward = None
    if (module._backward_hooks or module._backward_pre_hooks or _global_backward_hooks
            or _global_backward_pre_hooks):
        from ._backward_hooks import BackwardHook

        backward = BackwardHook(module)
        args = backward.setup_input_hook(args)
    output = module.forward(*args, **kwargs)
    for key, hook in itertools.chain(_global_forward_hooks.items(),
                                     module._forward_hooks.items()):
        if module._forward_hooks_with_kwargs.get(key):
            result = hook(module, args, kwargs, output)
        else:
            result = hook(module, args, output)
        if result is not None:
            output = result
    if backward is not None:
        output = backward.setup_output_hook(output)
    return output
