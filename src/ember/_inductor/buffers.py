"""Buffer reuse in a joint graph's generated code: a temporary array that dies gives its
memory to a later node of the same shape and dtype that can write into ``out=``.

The generated forward and backward (``array_code.ArrayCode``) are straight-line code, so which
array dies where is known when the code is written. :func:`plan_reuse` walks the graph once
and pairs *receivers* with *donors*:

* a receiver is a node whose result can be written into a given array: an element-wise op
  run as its fusion rule's step, a fused chain that runs in one buffer (its first step), or
  a float matrix product (``mm``, ``matmul`` of two matrices, the bias product;
  oneDNN's GEMM or ``matmul`` take ``out``);
* a donor is the result of a receiver or of another operator's kernel with one result
  (never an input, a parameter, a constant, a view or a call's result) once it and every
  value that may share its memory (views of it) are read for the last time, provided
  none of them is returned (an output or a value saved for the backward).

A donor dying at the receiver itself (``y = tanh(x)``, ``x`` read last there) is taken
only where NumPy's ufunc overlap rules keep the result exact: a one-ufunc step, or a fused
chain whose later steps do not read it. At run time the generated code gives the array
away only when the donor owns it (``base is None``) and nothing but the donor's variable
refers to it (a view made by a kernel, or a kernel's result that is its operand, would:
NumPy views hold their base), and when it and the receiver's operands are C-ordered (so
results keep the layout the trace saw); otherwise the receiver makes a new array.

It runs on NumPy arrays (the CPU) only, and is off unless ``EMBER_REUSE_BUFFERS=1`` (or
:data:`REUSE_BUFFERS` set to True before compiling): on the bench's compiled MLP, GPT,
LSTM and 50-pointwise steps it changed the step's thread CPU time by no more than the
noise (0.99x-1.02x), since glibc's allocator hands a freed block of the same size back
without page faults (no minor faults per step in those steps either way), so a workspace
kept between calls would not pay either. :data:`stats` counts the reuses planned.

Example::

    >>> from ember._inductor.capture import capture
    >>> graph = capture(lambda x: (x * 2).exp().sum(), [ember.ones(8)]).graph
    >>> plan_reuse(graph, lambda fused, inputs: True).count
    1
"""

from __future__ import annotations

import os

from ..jit._ir import FUSED, OP
from ..jit._passes import _fusible

__all__ = ["plan_reuse", "BufferPlan", "receiver_kind", "REUSE_BUFFERS", "stats"]

# whether ArrayCode plans buffer reuse (read when a graph is compiled; off: it did not pay)
REUSE_BUFFERS = os.environ.get("EMBER_REUSE_BUFFERS", "0") == "1"
# reuses planned so far in this process (``stats["reused"]``), for tests and diagnostics
# (and by how the receiver writes: "elementwise", "fused", "product")
stats = {"reused": 0, "elementwise": 0, "fused": 0, "product": 0}

_PRODUCT_DTYPES = ("float32", "float64")


class BufferPlan:
    """Which node writes into which dead value's array: ``donors`` maps a node's index to
    the value whose array it receives; ``held`` are the donors (their variables are kept
    until the receiver runs, not deleted at their last use); ``kinds`` maps a receiver's
    index to how it writes (``"elementwise"``, ``"fused"`` or ``"product"``).

    Example::

        >>> plan = BufferPlan()
        >>> plan.count, plan.donors
        (0, {})
    """

    def __init__(self):
        self.donors = {}
        self.held = set()
        self.kinds = {}

    @property
    def count(self):
        return len(self.donors)


def receiver_kind(node, fits_one_buffer):
    """How ``node`` can write its result into a given array, or None: ``"elementwise"``
    (one fusible op), ``"fused"`` (a chain in one buffer) or ``"product"`` (a float matrix
    product), for results of a known shape with at least one dim.

    Example::

        >>> from ember._inductor.capture import capture
        >>> graph = capture(lambda x: x.exp(), [ember.ones(3)]).graph
        >>> receiver_kind(graph.nodes[0], None)
        'elementwise'
    """
    out = node.outputs[0] if len(node.outputs) == 1 else None
    if out is None or not _static(out):
        return None
    if node.kind == FUSED:
        return "fused" if fits_one_buffer(node.op, node.inputs) else None
    if node.kind != OP:
        return None
    if _fusible(node):
        return "elementwise"
    from .joint_passes import _MATMUL, _MM, mm_bias_op

    matrices = node.op is _MM or node.op is mm_bias_op or node.op is _MATMUL and \
        all(v.shape is not None and len(v.shape) == 2 for v in node.inputs)
    if matrices and out.dtype in _PRODUCT_DTYPES and \
            all(v.dtype == out.dtype for v in node.inputs):
        return "product"
    return None


def _static(value):
    shape = value.shape
    return shape is not None and len(shape) >= 1 and \
        all(isinstance(s, int) for s in shape) and isinstance(value.dtype, str)


def plan_reuse(graph, fits_one_buffer):
    """The :class:`BufferPlan` of ``graph`` (see the module docstring);
    ``fits_one_buffer(fused_op, inputs)`` says whether a fused chain runs in one buffer.

    Example::

        >>> from ember._inductor.capture import capture
        >>> graph = capture(lambda x: x.exp().sum(), [ember.ones(8)]).graph
        >>> plan_reuse(graph, lambda fused, inputs: True).count  # x is an input: kept
        0
    """
    nodes = graph.nodes
    kinds = {k: kind for k, n in enumerate(nodes)
             if (kind := receiver_kind(n, fits_one_buffer)) is not None}
    holders = _holders(nodes, kinds)
    death = _deaths(graph, holders)
    plan = BufferPlan()
    plan.kinds = kinds
    pool = {}  # (shape, dtype) -> donors dead so far, the latest last
    dying = {}
    for root, k in death.items():
        dying.setdefault(k, []).append(root)
    for k, node in enumerate(nodes):
        for root in dying.get(k, ()):
            pool.setdefault(_key(root), []).append(root)
        kind = kinds.get(k)
        if kind is not None:
            donor = _take(pool.get(_key(node.outputs[0]), []), node, k, kind, death,
                          holders)
            if donor is not None:
                plan.donors[k] = donor
                stats[kind] += 1
                plan.held.add(donor)
    stats["reused"] += plan.count
    return plan


def _key(value):
    return tuple(value.shape), value.dtype


def _holders(nodes, kinds):
    """Donor candidate -> the values that may share its memory (itself included): the
    candidates are the results of receivers (new arrays) and of other kernels with one
    result (not views); views, writes, calls and several results share their operands'
    memory. A kernel may still return an operand, or a view of one: the run-time check
    (the donor owns its array and nothing else refers to it) catches that."""
    roots = {}       # value -> the candidates it may share memory with
    holders = {}
    for k, n in enumerate(nodes):
        if k in kinds or _kernel_result(n):
            out = n.outputs[0]
            roots[out] = {out}
            holders[out] = {out}
            continue
        shared = set().union(*(roots.get(v, ()) for v in n.inputs)) if n.inputs else set()
        for v in n.outputs:
            roots[v] = shared
            for root in shared:
                holders[root].add(v)
    return holders


def _kernel_result(node):
    """Whether ``node`` is an operator's kernel, not a view, with one result."""
    return node.kind == OP and not node.op.view and len(node.outputs) == 1 and \
        _static(node.outputs[0])


def _deaths(graph, holders):
    """Donor candidate -> the index of the node after which nothing reads its memory;
    candidates whose memory is returned are left out."""
    last = {}
    for k, n in enumerate(graph.nodes):
        for v in n.outputs:
            last.setdefault(v, k)
        for v in n.inputs:
            last[v] = k
    returned = set(graph.output_values())
    return {root: max(last[v] for v in values) for root, values in holders.items()
            if not values & returned and all(v in last for v in values)}


def _take(candidates, node, k, kind, death, holders):
    """A dead donor for receiver ``node`` (index ``k``) from ``candidates``, removed from
    them; the latest one whose use is safe."""
    for i in range(len(candidates) - 1, -1, -1):
        root = candidates[i]
        if death[root] < k or death[root] == k and _overlap_safe(node, kind, holders[root]):
            del candidates[i]
            return root
    return None


def _overlap_safe(node, kind, shared):
    """Whether ``node`` may write into memory that its operands in ``shared`` read: a
    ufunc step computes as if its operands were copied first; a fused chain's later
    steps must not read it."""
    if kind == "elementwise":
        return node.op.fuse.ufunc is not None
    if kind == "fused":
        late = {node.inputs[r] for _, refs, _ in node.op.program[1:] for r in refs if r >= 0}
        return node.op.ops[0].fuse.ufunc is not None and not late & shared
    return False
