"""Straight-line Python running a graph on arrays (``ArrayCode``): the code the joint
forward-backward graph (``joint.py``) runs for its forward and its backward.

Example::

    >>> from ember._inductor.capture import capture
    >>> graph = capture(lambda x: x.exp(), [ember.zeros(1)]).graph
    >>> ArrayCode(graph, {}, np, ember.device("cpu"), "f").function()([np.zeros(1, np.float32)])
    [array([1.], dtype=float32)]
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np

from ..autograd import grad_mode
from ..jit._ir import CALL, CONSTANT, COPY, FUSED, GET_ATTR, OP
from ..ops._registry import _as_array, assign_inplace, device_type_of, wrap
from . import buffers, c_loops, cuda_kernels
from .buffers import BufferPlan, plan_reuse
from .codegen import SourceWriter
from .joint_passes import _product_into
from .state import counters, log, log_enabled

__all__ = ["ArrayCode"]


class ArrayCode(SourceWriter):
    """Straight-line Python running a graph on arrays: each operator's kernel called
    directly (``v3 = K2(xp, v1, v2, **P2)``), parameters read by name per call, fused
    element-wise chains as one kernel when their operands fit one buffer, each temporary
    deleted after its last use. ``function()`` returns ``run(arrays) -> list``.

    Example::

        >>> from ember._inductor.capture import capture
        >>> graph = capture(lambda x: x.exp(), [ember.zeros(1)]).graph
        >>> cpu = ember.device("cpu")
        >>> ArrayCode(graph, {}, np, cpu, "f").function()([np.zeros(1, np.float32)])
        [array([1.], dtype=float32)]
    """

    def __init__(self, graph, attrs, xp, device, name):
        super().__init__({"xp": xp, "read": attrs.__getitem__, "ND": type(xp.zeros(0)),
                          "AS": lambda a: _as_array(a, device), "wrap": wrap, "DEV": device,
                          "assign_inplace": assign_inplace, "no_grad": grad_mode.no_grad,
                          "REFS": sys.getrefcount, "E": xp.empty,
                          "C": xp.ascontiguousarray})
        self.graph = graph
        self.name = name

    def function(self):
        graph = self.graph
        inputs = [self.variable(v) for v in graph.inputs]
        if inputs:
            # the caller's list lets go of the arrays: each is freed after its last use
            self.lines.append(f"    {', '.join(inputs)}, = arrays")
            self.lines.append("    arrays.clear()")
        last = _last_uses(graph)
        outputs = set(graph.output_values())
        # NumPy only: the run-time check reads NumPy's ``base`` and ``flags``
        reuse = buffers.REUSE_BUFFERS and self.names["xp"] is np
        plan = self.plan = plan_reuse(graph, _fits_one_buffer) if reuse else BufferPlan()
        regions = {} if reuse else self.c_regions(outputs)
        done = {k for r in regions.values() for k in r.members + r.leaves}
        for k, node in enumerate(graph.nodes):
            if k in regions:
                self.region(regions[k])
            elif k not in done:
                self.node(node, plan.kinds.get(k), plan.donors.get(k))
            dead = [self.variables[v] for v in last.get(k, ()) if v not in outputs and
                    v in self.variables and v not in plan.held]
            if k in plan.donors:
                dead += [self.variables[plan.donors[k]], "o"]
            if dead:
                self.lines.append(f"    del {', '.join(dead)}")
        results = ", ".join(self.variable(v) for v in graph.output_values())
        self.lines.append(f"    return [{results}]")
        source = f"def {self.name}(arrays):\n" + "\n".join(self.lines)
        function = self.compiled(source, self.name, f"<ember joint graph {self.name}>")
        function.buffers_reused = plan.count
        function.c_regions = len(regions)
        return function

    def c_regions(self, outputs):
        """The graph's element-wise regions compiled to C loops (``c_loops.py``) on NumPy or
        CuPy kernels (``cuda_kernels.py``) on CUDA, by the index of their first node; none
        on webgpu, or when the C compiler fails (logged under ``EMBER_LOGS=aot``)."""
        xp = self.names["xp"]
        on_cuda = xp is not np and device_type_of(xp) == "cuda"
        if not (on_cuda or xp is np and c_loops.enabled()):
            return {}
        regions = c_loops.plan_regions(self.graph, outputs)
        if not regions:
            return {}
        if on_cuda:
            cuda_kernels.compile_regions(list(regions.values()), xp)
            counters["inductor"]["cuda_kernel_regions"] += len(regions)
            return regions
        try:
            c_loops.compile_regions(list(regions.values()))
        except (OSError, subprocess.CalledProcessError) as reason:
            if log_enabled("aot"):
                log.info("element-wise regions stay NumPy calls (compiling C loops "
                         "failed: %s)", getattr(reason, "stderr", None) or reason)
            return {}
        counters["inductor"]["c_loop_regions"] += len(regions)
        return regions

    def region(self, region):
        """One call of a region's C loop: the reads it needs, its outputs allocated, each
        operand's address (full operands made C-ordered first)."""
        for k in region.leaves:
            self.node(self.graph.nodes[k])
        dtype = self.bind("D", region.dtype)
        arrays = []
        on_numpy = self.names["xp"] is np  # (CuPy's kernels read strided operands)
        for v in region.inputs:
            name = self.variable(v)
            if v in region.scalars or not on_numpy:
                arrays.append(name)
                continue
            shape = tuple(v.shape) if v in region.rows else region.shape
            strides = _c_strides(shape, region.dtype.itemsize)
            self.emit(f"c{name} = {name} if {name}.strides == {strides!r} else C({name})")
            arrays.append(f"c{name}")
        for v in region.outputs:
            name = self.variable(v)
            self.emit(f"{name} = E({region.output_shape(v)!r}, {dtype})")
            arrays.append(name)
        # one tuple argument: the C function reads the arrays' data pointers from it
        self.emit(f"{self.bind('L', region.function)}(({', '.join(arrays)},))")
        copies = [f"c{self.variable(v)}" for v in region.inputs
                  if v not in region.scalars and on_numpy]
        if copies:
            self.emit(f"del {', '.join(copies)}")

    def emit(self, line):
        self.lines.append("    " + line)

    def node(self, node, receives=None, donor=None):
        """Emit ``node``; ``receives`` is how it writes into a given array (a
        :class:`~ember._inductor.buffers.BufferPlan` kind) and ``donor`` the dead value whose
        array it writes into (None: a new array)."""
        args = [self.variable(v) for v in node.inputs]
        into = self.into(node, args, donor)
        outputs = [self.variable(v) for v in node.outputs]
        if node.kind == GET_ATTR:
            self.emit(f"{outputs[0]} = read({node.params['name']!r})._data")
        elif node.kind == CONSTANT:
            constant = self.graph.constants[node.params["name"]]._data
            self.emit(f"{outputs[0]} = {self.bind('K', constant)}")
        elif node.kind == COPY:
            self.copy(node, args, outputs)
        elif node.kind == CALL:
            self.call(node, args, outputs)
        elif node.kind == FUSED:
            self.fused(node, args, outputs[0], into)
        elif receives == "elementwise":
            self.step(node.op.fuse, args, node.params, outputs[0], into)
        elif _transposes_numpy(node, self.names["xp"]):
            # the array's own method: permute_op's call, keyword dict and xp.transpose cost
            # ~5 us each in a training step (three per MLP backward), this ~1
            self.emit(f"{outputs[0]} = {args[0]}.transpose({tuple(node.params['dims'])!r})")
        elif receives == "product" and donor is not None:
            bias = args[2] if len(args) == 3 else "None"
            self.emit(f"{outputs[0]} = {self.bind('M', _product_into)}(xp, {args[0]}, "
                      f"{args[1]}, {bias}, {into})")
        else:
            self.kernel(node.op, args, node.params, outputs)

    def into(self, node, args, donor):
        """The ``out=`` argument of a node writing into ``donor``'s array: that array when
        nothing else refers to it and it and the node's operands are C-ordered (so the
        result has the layout a new array would have), else None."""
        if donor is None:
            return "None"
        name = self.variable(donor)
        checks = [name] + [a for a, v in zip(args, node.inputs) if v.shape != ()]
        flags = " and ".join(f"{a}.flags.c_contiguous" for a in dict.fromkeys(checks))
        # the donor owns its array and only its variable refers to it (a view of it, or a
        # kernel's result that is it, would too); checked before the call reads operands
        self.emit(f"o = {name} if {name}.base is None and REFS({name}) == 2 and {flags} "
                  "else None")
        return "o"

    def step(self, rule, args, params, output, into):
        """One element-wise op as its fusion rule's step, into ``into``."""
        if rule.ufunc is not None:
            self.emit(f"{output} = xp.{rule.ufunc}({', '.join(args)}, out={into})")
        else:
            self.emit(f"{output} = {self.bind('S', rule.step)}(xp, [{', '.join(args)}], "
                      f"{into})")

    def kernel(self, op, args, params, outputs):
        keywords = f", **{self.bind('P', dict(params))}" if params else ""
        call = f"{self.bind('K', op.kernel)}(xp{''.join(', ' + a for a in args)}{keywords})"
        if op.multi_output:
            self.emit(f"r = {call}")
            for i, name in enumerate(outputs):
                self.emit(f"{name} = r[{i}]")
                self.emit(f"if {name}.__class__ is not ND: {name} = AS({name})")
        else:
            self.emit(f"{outputs[0]} = {call}")
            self.emit(f"if {outputs[0]}.__class__ is not ND: {outputs[0]} = AS({outputs[0]})")

    def fused(self, node, args, output, into="None"):
        """A fused chain: on webgpu one WGSL shader (``webgpu/_fused.py``); else in one
        buffer when its operands fit (the first step makes it, or writes into ``into``; the
        others write into it, each step's array function called directly), else its
        operators' kernels one by one."""
        fused = node.op
        xp = self.names["xp"]
        if xp is not np:  # one shader for the whole chain where the device has them
            from ..webgpu._fused import chain_kernel

            kernel = chain_kernel(xp, fused.program, fused.ops)
            if kernel is not None:
                self.emit(f"{output} = {self.bind('W', kernel)}(xp, {', '.join(args)})")
                return
        if _fits_one_buffer(fused, node.inputs):
            for op, (_, refs, params) in zip(fused.ops, fused.program):
                operands = [output if r < 0 else args[r] for r in refs]
                self.step(op.fuse, operands, params, output, into)
                into = output
            return
        running = None
        for op, (_, refs, params) in zip(fused.ops, fused.program):
            operands = [running if r < 0 else args[r] for r in refs]
            running = output
            self.kernel(op, operands, params, [output])

    def copy(self, node, args, outputs):
        """An in-place write: the value copied into the target's array (a parameter or
        buffer through ``assign_inplace``, so its version counter moves)."""
        target = node.inputs[0]
        producer = next((n for n in self.graph.nodes if target in n.outputs), None)
        if producer is not None and producer.kind == GET_ATTR:
            name = producer.params["name"]
            self.emit(f"assign_inplace(read({name!r}), wrap({args[1]}, DEV), "
                      "check_dtype=False)")
        else:
            self.emit(f"xp.copyto({args[0]}, {args[1]}, casting='unsafe')")
        self.emit(f"{outputs[0]} = {args[0]}")

    def call(self, node, args, outputs):
        """A call (random factory, input check) on tensors around the arrays."""
        def operand(template):
            return f"wrap({args[template['v']]}, DEV)" if "v" in template else \
                self.bind("C", template["c"])
        operands = [operand(t) for t in node.params["args"]]
        keywords = [f"{self.bind('N', k)}: {operand(t)}"
                    for k, t in node.params["kwargs"].items()]
        if keywords:
            operands.append("**{" + ", ".join(keywords) + "}")
        self.emit("with no_grad():")
        self.emit(f"    {outputs[0]} = {self.bind('F', node.op)}({', '.join(operands)})._data")


def _transposes_numpy(node, xp):
    """Whether ``node`` is a ``permute`` of a non-empty NumPy array (``permute_op`` keeps
    torch's strides on empty ones itself), which ``ndarray.transpose`` computes as it does.

    Example::

        >>> from ember._inductor.capture import capture
        >>> graph = capture(lambda x: x.permute(1, 0), [ember.zeros(2, 3)]).graph
        >>> [_transposes_numpy(n, np) for n in graph.nodes]
        [True]
    """
    if node.kind != OP or node.op.name != "permute" or xp is not np or len(node.inputs) != 1:
        return False
    shape = node.inputs[0].shape
    return shape is not None and all(type(d) is int and d > 0 for d in shape)


def _fits_one_buffer(fused, inputs):
    """Whether a fused chain runs in one buffer on its traced operands (one float dtype,
    every operand broadcasting to the first step's shape), as ``FusedOp`` checks per call."""
    from ..jit._passes import _FUSED_DTYPES

    try:
        dtypes = {np.dtype(v.dtype) for v in inputs}
    except TypeError:
        return False
    if len(dtypes) != 1 or dtypes.pop() not in _FUSED_DTYPES:
        return False
    shapes = [tuple(v.shape) for v in inputs]
    try:
        start = np.broadcast_shapes(*(shapes[r] for r in fused.program[0][1] if r >= 0))
        return np.broadcast_shapes(start, *shapes) == start
    except ValueError:
        return False


def _c_strides(shape, itemsize):
    """The strides of a C-ordered array of ``shape``."""
    strides, step = [], itemsize
    for size in reversed(shape):
        strides.append(step)
        step *= size
    return tuple(reversed(strides))


def _last_uses(graph):
    """Node index -> the values read for the last time there."""
    last = {}
    for k, n in enumerate(graph.nodes):
        for v in n.inputs:
            last[v] = k
    by_node = {}
    for v, k in last.items():
        by_node.setdefault(k, []).append(v)
    return by_node
