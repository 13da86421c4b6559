"""vmap's batched path: record ``func`` on the first batch element, replay it on the batch.

Why record and replay: a BatchedTensor (torch's design: a tensor whose shape hides a batch
dim, with a batching rule at every op) would have to pass for an ordinary Tensor inside every
public function of ember, which read ``_data.shape`` and ``_data`` directly for their checks,
promotion and parameters. Instead ember runs ``func`` once, on batch element 0, with a
:class:`Recorder` in the tracer slot that ``run_op`` already tests (``Tensor._trace_state``,
the one ``is None`` check that ``ember.jit`` uses: vmap adds nothing to the hot path). The
public functions then see the logical (per-element) shapes they expect and record only
primitives, whose parameters are already resolved (wrapped dims, view shapes, slicing keys).
``grad`` inside ``func`` runs its backward through the same primitives, so ``vmap(grad(f))``
records forward and backward alike. The recording is then replayed once on whole-batch arrays
(batch dim in front, "physical" arrays; the recorded shapes are the "logical" ones), each
primitive through its batching rule (``_batching_rules.py``): the kernel runs once for all
elements.

The replay is only taken when it is sure to give what the per-element loop gives; otherwise
vmap simply goes on with the loop from element 1 (element 0's result is the recorded run's):

* a primitive without a batching rule (it declares why: ``op.opt_out("batch", reason)``),
  or a rule that cannot handle its operands;
* an in-place write (recorded ``assign_inplace``/``write_out``, or a version counter that
  moved behind the recorder's back);
* a random draw (the loop implements the randomness modes);
* a tensor turned into a Python value (``.item()``, ``bool()``, ``tolist()``...): the
  recorder notes the value element 0 gave (a *guard*); the replay computes it for every
  element and falls back when any differs, so data-dependent branches that all elements take
  alike (argument checks such as cross_entropy's target range) stay batched;
* results that must keep an autograd graph or forward-mode tangents (inputs that require grad,
  tensors captured from outside that do), nested recording (an inner vmap inside an outer
  vmap's recording, or inside ``ember.jit.trace``, loops; the outer recording batches it).

Example::

    >>> rec = Recorder()
    >>> with recording(rec):
    ...     y = (ember.ones(3) * 2).sum()
    >>> [step.op.name for step in rec.steps]
    ['mul', 'sum']
"""

from __future__ import annotations

import contextlib
import threading

import numpy as np

from .._tensor import _trace_state
from ..ops._registry import on_device
from . import _batching_rules as rules

__all__ = ["Recorder", "recording", "Unbatchable", "replay"]

Unbatchable = rules.Unbatchable


class Step:
    """One recorded primitive call: its rule, op, operand slots, parameters and the logical
    shapes of its operands and results."""

    __slots__ = ("rule", "op", "ins", "params", "outs", "in_shapes", "out_shapes")

    def __init__(self, rule, op, ins, params, outs, in_shapes, out_shapes):
        self.rule, self.op, self.ins, self.params, self.outs = rule, op, ins, params, outs
        self.in_shapes, self.out_shapes = in_shapes, out_shapes


class Recorder:
    """What ``run_op`` reports to while vmap records element 0 (the tracer interface:
    ``record``, ``record_write``, ``python_value``). Every tensor seen gets a *slot*; tensors
    it did not see made are constants (the same for every element)."""

    def __init__(self):
        self.thread = threading.get_ident()  # ops other threads run meanwhile are not seen
        self.failure = None      # why the recording cannot be replayed batched
        self.steps = []
        self.shapes = []         # logical shape per slot
        self.versions = []       # (version counter, its value when seen) per slot
        self.constants = {}      # slot -> array
        self.inputs = []         # slots of the mapped inputs, in order
        self._tensors = {}       # id(tensor) -> (tensor, slot); keeps the tensors alive
        self._arrays = {}        # id(array) -> (array, slot): finds detach()/.data aliases

    def fail(self, reason):
        if self.failure is None:
            self.failure = reason

    # ------------------------------------------------------------ slots

    def _new_slot(self, tensor):
        slot = len(self.shapes)
        self.shapes.append(tensor._data.shape)
        self.versions.append((tensor._vc, tensor._vc[0]))
        self._tensors[id(tensor)] = (tensor, slot)
        self._arrays[id(tensor._data)] = (tensor._data, slot)
        return slot

    def add_input(self, tensor):
        """Bind a mapped input (element 0's slice of it)."""
        self.inputs.append(self._new_slot(tensor))

    def known_slot(self, tensor):
        """The slot of a tensor seen before (itself, or another tensor on the same array as
        ``detach()`` makes), else None."""
        entry = self._tensors.get(id(tensor))
        if entry is not None and entry[0] is tensor:
            return entry[1]
        alias = self._arrays.get(id(tensor._data))
        if alias is not None and alias[0] is tensor._data:
            self._tensors[id(tensor)] = (tensor, alias[1])
            return alias[1]
        return None

    def slot_of(self, tensor):
        slot = self.known_slot(tensor)
        if slot is None:
            if self._derived_from_recorded(tensor._data):
                self.fail("a tensor was made from a recorded one without an operator")
            slot = self._new_slot(tensor)
            self.constants[slot] = tensor._data
        vc, version = self.versions[slot]
        if tensor._vc is vc and vc[0] != version:
            self.fail("a tensor was changed in place")
        return slot

    def _derived_from_recorded(self, array):
        base = getattr(array, "base", None)
        while base is not None:
            entry = self._arrays.get(id(base))
            if entry is not None and entry[0] is base:
                return True
            base = getattr(base, "base", None)
        return False

    # ------------------------------------------------------------ hooks from run_op

    def record(self, op, inputs, params, results):
        if self.failure is not None or threading.get_ident() != self.thread:
            return
        rule = rules.rule_for(op)
        if rule is None:  # the op declines one (the registry test makes every op say why)
            why = op.opt_outs.get("batch", "it declares neither a rule nor why not")
            self.fail(f"no batching rule for {op.name}: {why}")
            return
        ins = [self.slot_of(t) for t in inputs]
        outs = results if op.multi_output else (results,)
        out_slots = [self._new_slot(t) for t in outs]
        self.steps.append(Step(rule, op, ins, params, out_slots,
                               [self.shapes[i] for i in ins],
                               [self.shapes[i] for i in out_slots]))

    def record_write(self, target, result):
        if threading.get_ident() == self.thread:
            self.fail("an in-place write")

    def check_unrecorded_writes(self):
        """Fail if a tensor seen while recording changed in place without ``run_op`` hearing of
        it (``y[0] = 5`` or ``fill_`` without autograd write directly): the replay would not
        repeat the write, so only the per-element loop gives the right results."""
        for vc, version in self.versions:
            if vc[0] != version:
                self.fail("a tensor was changed in place")
                return

    def python_value(self, tensor, what):
        if self.failure is not None or threading.get_ident() != self.thread:
            return
        slot = self.known_slot(tensor)
        if slot is not None:  # guard: every element must give element 0's value
            expected = tensor._data.copy()
            self.steps.append(Step(rules.guard, None, [slot], {"expected": expected}, [],
                                   [self.shapes[slot]], []))


@contextlib.contextmanager
def recording(recorder):
    """Make ``recorder`` the active tracer for the block.

    Example::

        >>> with recording(Recorder()) as rec:
        ...     _ = ember.ones(2).exp()
        >>> rec.failure is None
        True
    """
    _trace_state.tracer = recorder
    try:
        yield recorder
    finally:
        _trace_state.tracer = None


def replay(recorder, batched_inputs, batch_size, device):
    """Run the recorded steps once on the whole batch.

    ``batched_inputs``: one array per mapped input, batch dim first. Returns a function from a
    tensor that element 0's run produced to ``(array, batched)`` (``None`` for a tensor the
    recording did not see). Raises :class:`Unbatchable` when a rule cannot batch a step or a
    guard finds elements that would have taken another branch.

    Example::

        >>> rec = Recorder()
        >>> x = ember.arange(6.).reshape(2, 3)
        >>> row = x[0]
        >>> rec.add_input(row)
        >>> with recording(rec):
        ...     y = row.sum()
        >>> lookup = replay(rec, [x._data], 2, x.device)
        >>> lookup(y)
        (array([ 3., 12.], dtype=float32), True)
    """
    values = [None] * len(recorder.shapes)
    batched = [False] * len(recorder.shapes)
    for slot, array in recorder.constants.items():
        values[slot] = array
    for slot, array in zip(recorder.inputs, batched_inputs):
        values[slot], batched[slot] = array, True
    xp = device._xp
    with on_device(device):
        for step in recorder.steps:
            _run_step(step, values, batched, xp, batch_size)

    def lookup(tensor):
        slot = recorder.known_slot(tensor)
        if slot is None:
            return None
        return values[slot], batched[slot]
    return lookup


def _run_step(step, values, batched, xp, batch_size):
    arrays = [values[i] for i in step.ins]
    flags = [batched[i] for i in step.ins]
    if any(flags):
        out = step.rule(xp, step, arrays, flags, batch_size)
        out_batched = True
    elif step.op is None:  # a guard on a value the batch does not change
        return
    else:
        out = step.op.kernel(xp, *arrays, **step.params)
        out_batched = False
    outs = out if step.op is not None and step.op.multi_output else (out,)
    for slot, array in zip(step.outs, outs):
        if xp is np and type(array) is not np.ndarray:
            array = np.asarray(array)   # NumPy returns scalars for 0-dim results
        values[slot], batched[slot] = array, out_batched
