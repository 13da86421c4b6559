"""The rest of torch.utils.checkpoint's public names: selective-checkpoint policies, device
RNG state helpers, debug/early-stop switches and the legacy helpers.

Selective activation checkpointing (``create_selective_checkpoint_contexts``) chooses which
operator outputs to keep instead of recomputing: a memory trade-off that never changes the
gradients. ember's checkpoint recomputes the whole region, so the contexts it returns are
accepted (and validated as torch validates them) and the results equal torch's.
"""

from __future__ import annotations

import contextlib
import enum
import warnings

from .._tensor import Tensor

__all__ = ["CheckpointPolicy", "DefaultDeviceType", "GraphExecGroup",
           "SAC_IGNORED_OPS", "SelectiveCheckpointContext", "check_backward_validity",
           "create_selective_checkpoint_contexts", "detach_variable", "get_device_states",
           "noop_context_fn", "set_checkpoint_debug_enabled", "set_checkpoint_early_stop",
           "set_device_states"]

# operators whose outputs torch never caches (size and layout queries)
SAC_IGNORED_OPS: set = {"size", "sym_size", "stride", "sym_stride", "storage_offset",
                        "sym_storage_offset", "numel", "sym_numel", "dim", "detach",
                        "is_contiguous", "is_strides_like_format",
                        "is_non_overlapping_and_dense", "device"}


class CheckpointPolicy(enum.Enum):
    """What selective checkpointing does with an operator's output (torch's values)."""

    MUST_SAVE = 0
    PREFER_SAVE = 1
    MUST_RECOMPUTE = 2
    PREFER_RECOMPUTE = 3
    MUST_CPU_OFFLOAD = 4
    PREFER_CPU_OFFLOAD = 5


class SelectiveCheckpointContext:
    """What a selective-checkpoint policy function is told about the current call.

    Example::

        >>> SelectiveCheckpointContext(is_recompute=False).is_recompute
        False
    """

    def __init__(self, *, is_recompute, op_output=None):
        self.is_recompute = is_recompute
        self.op_output = op_output


def create_selective_checkpoint_contexts(policy_fn_or_list, allow_cache_entry_mutation=False):
    """The ``(forward, recompute)`` context managers of a selective checkpoint policy (a
    function ``policy(ctx, op, *args, **kwargs)`` or a list of operators to save); pass them
    to :func:`~ember.utils.checkpoint.checkpoint` as ``context_fn``.

    Example::

        >>> fwd, rec = create_selective_checkpoint_contexts(lambda ctx, op, *a, **k: None)
    """
    if isinstance(policy_fn_or_list, list):
        for op in policy_fn_or_list:
            if not callable(op):
                raise ValueError(f"Expected op in `op_list` to be an OpOverload but got: {op} "
                                 f"of type {type(op)}. ")
    elif not callable(policy_fn_or_list):
        raise TypeError("policy_fn_or_list must be either a function or a list of ops.")
    return contextlib.nullcontext(), contextlib.nullcontext()


def noop_context_fn():
    """The default ``context_fn`` of checkpoint: two null context managers.

    Example::

        >>> len(noop_context_fn())
        2
    """
    return contextlib.nullcontext(), contextlib.nullcontext()


def detach_variable(inputs):
    """Detached copies of the tensors in the tuple ``inputs`` that keep ``requires_grad``.

    Example::

        >>> x = ember.ones(1, requires_grad=True)
        >>> detach_variable((x * 2, 3))[0].is_leaf
        True
    """
    if not isinstance(inputs, tuple):
        raise RuntimeError("Only tuple of tensors is supported. Got Unsupported input type: "
                           f"{type(inputs).__name__}")
    out = []
    for item in inputs:
        if isinstance(item, Tensor):
            detached = item.detach()
            detached.requires_grad = item.requires_grad
            out.append(detached)
        else:
            out.append(item)
    return tuple(out)


def check_backward_validity(inputs):
    """Warn (as torch) when no input tensor requires grad: the checkpoint's gradients would
    all be None.

    Example::

        >>> check_backward_validity([ember.ones(1, requires_grad=True)])
    """
    if not any(x.requires_grad for x in inputs if isinstance(x, Tensor)):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                      stacklevel=2)


class DefaultDeviceType:
    """The device type whose RNG state checkpoint saves and restores (default: the current
    accelerator, else ``"cpu"``).

    Example::

        >>> DefaultDeviceType.get_device_type()
        'cpu'
    """

    _default_device_type = None

    @staticmethod
    def set_device_type(device="cuda"):
        DefaultDeviceType._default_device_type = device

    @staticmethod
    def get_device_type():
        if not DefaultDeviceType._default_device_type:
            from .. import cuda
            DefaultDeviceType._default_device_type = "cuda" if cuda.is_available() else "cpu"
        return DefaultDeviceType._default_device_type


def get_device_states(*args):
    """The indices and RNG states of the non-CPU devices of the tensors in ``args``.

    Example::

        >>> get_device_states(ember.ones(1))
        ([], [])
    """
    indices = []

    def collect(value):
        if isinstance(value, Tensor) and value.device.type not in ("cpu", "meta"):
            indices.append(value.device.index or 0)
        elif isinstance(value, (list, tuple)):
            for item in value:
                collect(item)
        elif isinstance(value, dict):
            for item in value.values():
                collect(item)

    collect(args)
    if not indices:
        return [], []
    from .. import cuda
    states = []
    for index in indices:
        with cuda.device(index):
            states.append(cuda.get_rng_state())
    return indices, states


def set_device_states(devices, states, *, device_type=None):
    """Restore the RNG state of each device (the inverse of :func:`get_device_states`)."""
    if not devices:
        return
    from .. import cuda
    for index, state in zip(devices, states):
        with cuda.device(index):
            cuda.set_rng_state(state)


_switches = {"debug": None, "early_stop": True}


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled):
    """Override checkpoint's ``debug`` flag inside the block (None: defer to each call)."""
    previous = _switches["debug"]
    _switches["debug"] = enabled
    try:
        yield
    finally:
        _switches["debug"] = previous


@contextlib.contextmanager
def set_checkpoint_early_stop(enable):
    """Whether recomputation stops once the needed tensors exist (a speed switch; ember's
    recomputation gives the same gradients either way)."""
    previous = _switches["early_stop"]
    _switches["early_stop"] = enable
    try:
        yield
    finally:
        _switches["early_stop"] = previous


class GraphExecGroup:
    """Backward calls inside one group recompute each checkpointed region at most once; the
    groups cannot nest (torch's error).

    Example::

        >>> with GraphExecGroup():
        ...     pass
    """

    _current = None

    def __enter__(self):
        if GraphExecGroup._current is not None:
            raise RuntimeError("GraphExecGroup contexts cannot be nested. Already inside group "
                               f"{GraphExecGroup._current}")
        GraphExecGroup._current = self
        return self

    def __exit__(self, *args):
        GraphExecGroup._current = None

