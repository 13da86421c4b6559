"""What the profiler records while it runs, and the hooks that feed it.

The operator dispatcher (``ops/_registry.run_op``) and the autograd engine test
``state.recorder`` once per call; it is None unless a profiling session is active, so
profiling costs nothing more than that test when it is off. While a session is active,
:class:`Recorder` times every operator call, every backward node and every
:class:`record_function` range as a :class:`_Record`; the sessions turn their records into
``FunctionEvent`` trees when they stop (``_events.py``).

This module imports nothing from ember at load time: the dispatcher imports it.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import os
import sys
import threading
import time

from ._events import build_event_list

__all__ = ["record_function"]


class _HotPathState:
    """``recorder`` is the active :class:`Recorder`, else None: the one attribute test that
    the dispatcher and the autograd engine make."""

    __slots__ = ("recorder",)


state = _HotPathState()
state.recorder = None

# Begin and end marks of all records, from one counter: a record contains another exactly when
# it began before and ended after it on the same thread (clock ticks may tie, marks never do).
_marks = itertools.count()

# ember's own op names that differ from the ATen operator torch's profiler shows
_ATEN_NAMES = {
    "_relu": "relu", "_relu_backward": "threshold_backward", "_slice": "slice",
    "_slice_backward": "slice_backward", "_basic_put": "index_put_", "_binomial": "binomial",
    "_gru_cell": "gru_cell", "_lstm_cell": "lstm_cell", "_batch_norm_train": "native_batch_norm",
    "_batch_norm_train_backward": "native_batch_norm_backward", "max_dim": "max",
    "min_dim": "min", "median_dim": "median", "nanmedian_dim": "nanmedian", "div_floor": "div",
    "div_trunc": "div", "convolution_input_grad": "convolution_backward",
    "convolution_weight_grad": "convolution_backward",
}


def aten_name(op_name):
    """The event name of an operator, as torch's profiler names it.

    Example::

        >>> aten_name("mm"), aten_name("_relu")
        ('aten::mm', 'aten::relu')
    """
    return "aten::" + _ATEN_NAMES.get(op_name, op_name)


class _Record:
    """One timed range: an operator call, a backward node or a user annotation."""

    __slots__ = ("name", "category", "thread", "start_ns", "end_ns", "begin_mark", "end_mark",
                 "shapes", "dtypes", "cpu_memory", "device_memory", "flops", "stack",
                 "sequence_nr")

    def __init__(self, name, category):
        self.name = name
        self.category = category
        self.thread = threading.get_native_id()
        self.shapes = None
        self.dtypes = None
        self.cpu_memory = 0
        self.device_memory = 0
        self.flops = 0
        self.stack = None
        self.sequence_nr = -1
        self.end_ns = None
        self.begin_mark = next(_marks)
        self.start_ns = time.perf_counter_ns()


class _ThreadState(threading.local):
    def __init__(self):
        # set just before the recorder runs an op through the dispatcher again: that inner
        # call runs the op instead of recording it a second time
        self.pass_through = False


class Recorder:
    """Times what runs while at least one :class:`Session` is active, for all of them."""

    def __init__(self):
        self.sessions = ()
        self.record_shapes = self.profile_memory = self.with_stack = self.with_flops = False
        self._thread = _ThreadState()
        self._lock = threading.Lock()

    # ------------------------------------------------------------ sessions

    def attach(self, session):
        """Start feeding ``session``; the hooks go live with the first one."""
        with self._lock:
            self.sessions = self.sessions + (session,)
            self._merge_options()
            state.recorder = self

    def detach(self, session):
        """Stop feeding ``session``; the hooks go quiet with the last one."""
        with self._lock:
            self.sessions = tuple(s for s in self.sessions if s is not session)
            self._merge_options()
            if not self.sessions:
                state.recorder = None

    def _merge_options(self):
        for option in ("record_shapes", "profile_memory", "with_stack", "with_flops"):
            setattr(self, option, any(getattr(s, option) for s in self.sessions))

    # ------------------------------------------------------------ ranges

    def begin(self, name, category="cpu_op"):
        """Open a range named ``name`` on this thread."""
        record = _Record(name, category)
        if self.with_stack:
            record.stack = _python_stack()
        return record

    def end(self, record):
        """Close ``record`` and hand it to every session that was running when it began."""
        record.end_ns = time.perf_counter_ns()
        record.end_mark = next(_marks)
        for session in self.sessions:
            if session.first_mark < record.begin_mark:
                session.records.append(record)

    # ------------------------------------------------------------ hooks

    def run_op(self, op, inputs, params):
        """Run ``op`` as one recorded event (called by the dispatcher); None for the inner
        call that the dispatcher must run itself."""
        thread = self._thread
        if thread.pass_through:
            thread.pass_through = False
            return None
        record = self.begin(aten_name(op.name))
        if self.record_shapes:
            record.shapes = [list(t._data.shape) for t in inputs]
            record.dtypes = [t._data.dtype.name for t in inputs]
        thread.pass_through = True
        try:
            result = op(*inputs, **params)
        finally:
            thread.pass_through = False
            self.end(record)
        outputs = result if isinstance(result, tuple) else (result,)
        grad_fn = outputs[0]._grad_fn if outputs else None
        if grad_fn is not None and grad_fn.op is op:
            record.sequence_nr = grad_fn._seq
        if self.profile_memory:
            _count_allocations(record, outputs)
        if self.with_flops:
            record.flops = flop_count(op.name, inputs, outputs)
        return result

    def evaluate_function(self, node, execute, args):
        """Run the engine's ``execute(*args)`` for ``node`` inside torch's
        ``autograd::engine::evaluate_function: <node>`` range."""
        name = node.name()
        outer = self.begin("autograd::engine::evaluate_function: " + name)
        outer.sequence_nr = _node_sequence(node)
        try:
            if node.op is None:  # AccumulateGrad: the whole step is the node's own work
                inner = self.begin(name)
                try:
                    execute(*args)
                finally:
                    self.end(inner)
            else:
                execute(*args)
        finally:
            self.end(outer)

    def apply_node(self, node, grads):
        """``node._apply(grads)`` as an event named after the node (``MulBackward0``)."""
        record = self.begin(node.name())
        record.sequence_nr = _node_sequence(node)
        if self.record_shapes:
            record.shapes = [list(g._data.shape) if g is not None else [] for g in grads]
        try:
            return node._apply(grads)
        finally:
            self.end(record)


recorder = Recorder()


def _node_sequence(node):
    seq = node._seq
    return seq if isinstance(seq, int) else -1  # AccumulateGrad sorts last with an infinite one


def _count_allocations(record, outputs):
    """Bytes of new memory the op's results hold (views and aliases allocate nothing)."""
    for t in outputs:
        if t._base is not None:
            continue
        device_type = t._device.type
        if device_type == "cpu":
            record.cpu_memory += t._data.nbytes
        elif device_type != "meta":
            record.device_memory += t._data.nbytes


def flop_count(op_name, inputs, outputs):
    """Floating-point operations of an op call, for the ops torch estimates (0 for others).

    Products count a multiply and an add per term (``2 * M * K * N`` for ``mm``); ``add`` and
    ``mul`` one operation per output element, as torch's profiler counts them.

    Example::

        >>> a = ember.ones(4, 3)
        >>> flop_count("mm", (a, ember.ones(3, 5)), (ember.ones(4, 5),))
        120
    """
    if not outputs:
        return 0
    out_shape = outputs[0]._data.shape
    if op_name in ("mm", "bmm", "matmul", "mv", "dot"):
        return 2 * math.prod(out_shape) * inputs[0]._data.shape[-1]
    if op_name in ("add", "mul"):
        return math.prod(out_shape)
    if op_name == "convolution":  # weight: (out_channels, in_channels / groups, *kernel)
        return 2 * math.prod(out_shape) * math.prod(inputs[1]._data.shape[1:])
    return 0


_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _python_stack():
    """The caller's Python stack, innermost first, as ``'file.py(12): function'`` entries,
    without ember's own frames."""
    entries = []
    frame = sys._getframe(2)
    while frame is not None:
        code = frame.f_code
        if not code.co_filename.startswith(_EMBER_DIR):
            entries.append(f"{code.co_filename}({frame.f_lineno}): {code.co_name}")
        frame = frame.f_back
    return entries


class Session:
    """The records of one profiling run: from :meth:`start` to :meth:`stop`."""

    def __init__(self, record_shapes=False, profile_memory=False, with_stack=False,
                 with_flops=False, use_device=None):
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.use_device = use_device
        self.records = []
        self.first_mark = None
        self.start_ns = None
        self.wall_start_ns = None
        self.running = False

    def start(self):
        """Begin recording everything that starts from now on, on every thread."""
        self.first_mark = next(_marks)
        self.wall_start_ns = time.time_ns()
        self.start_ns = time.perf_counter_ns()
        self.running = True
        recorder.attach(self)

    def stop(self):
        """Stop recording; returns the session's events (an ``EventList``)."""
        recorder.detach(self)
        self.running = False
        return build_event_list(self)


class record_function(contextlib.ContextDecorator):
    """Label a region of code: it shows up in the profile as one event named ``name``, with
    the operators it runs as its children. Works as a context manager and as a decorator;
    costs next to nothing while no profiler runs.

    Example::

        >>> with ember.profiler.profile() as prof:
        ...     with ember.profiler.record_function("forward"):
        ...         y = ember.ones(3) + 1
        >>> [e.name for e in prof.events()]
        ['forward', 'aten::add']
    """

    def __init__(self, name, args=None):
        self.name = name
        self.args = args
        self._open = []  # one entry per active use (a decorated function may recurse)

    def __enter__(self):
        if not isinstance(self.name, str):  # torch checks the name on entry, too
            raise RuntimeError(f"record_function(): Expected a value of type 'str' for "
                               f"argument 'name' but instead found type "
                               f"'{type(self.name).__name__}'.")
        active = state.recorder
        record = None
        if active is not None:
            record = active.begin(self.name, "user_annotation")
        self._open.append((active, record))
        return self

    def __exit__(self, *exc):
        active, record = self._open.pop()
        if record is not None:
            active.end(record)
        return False
