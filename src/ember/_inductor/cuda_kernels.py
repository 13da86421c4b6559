"""Element-wise regions and fused chains as CuPy kernels on CUDA: one kernel per region.

On NumPy a region of the joint graph (a run of element-wise nodes of one shape and float
dtype, planned by :func:`ember._inductor.c_loops.plan_regions`) becomes one C loop; on CuPy
it becomes one ``cupy.ElementwiseKernel`` that reads each operand once and writes only the
values read later, and a region ending in a ``sum``/``mean`` of every element becomes one
``cupy.ReductionKernel`` (the sum in double, as the C loop's). A jit ``FusedOp`` chain
becomes one ElementwiseKernel the same way.

The kernels' code is the C loops' own: each step's C form (``c_loops.C_FORMS``) and the
helpers that give NumPy's NaN rules, as CUDA ``__device__`` functions. A region's steps
become one device function ``em_region(inputs..., outputs...)`` that returns the value a
reduction sums; the kernel calls it per element. CuPy compiles a kernel once (NVRTC, cached
on disk by CuPy) and broadcasts one-element operands and reads strided ones itself, so no
operand is copied first.

Example (on a CUDA machine)::

    >>> from ember._inductor.capture import capture
    >>> graph = capture(lambda x: (x + 1).tanh(), [ember.zeros(4)]).graph
    >>> region, = c_loops.plan_regions(graph, set(graph.output_values())).values()
    >>> print(device_function(region, "em_region").splitlines()[0])
    static __device__ inline double em_region(const float i0, const float i1, float *o0) {
"""

from __future__ import annotations

import numpy as np

from . import c_loops

__all__ = ["device_function", "compile_regions", "chain_kernel", "DEVICE_PRELUDE"]

# the C loops' helpers (NumPy's maximum/minimum/power/logaddexp) as device functions; the
# CUDA math library has every function the C forms call, under the C library's names
DEVICE_PRELUDE = c_loops._PRELUDE.replace("#include <math.h>\n", "").replace(
    "static inline", "static __device__ inline")


def device_function(region, name):
    """The CUDA device function computing one element of ``region``: its inputs as values,
    its element-wise outputs as pointers; it returns the value its reduction sums (0 when
    it has none).

    Example::

        >>> from ember._inductor.capture import capture
        >>> graph = capture(lambda x: (x * 2).exp(), [ember.zeros(4)]).graph
        >>> region, = c_loops.plan_regions(graph, set(graph.output_values())).values()
        >>> print(device_function(region, "f"))
        static __device__ inline double f(const float i0, const float i1, float *o0) {
            const float t0 = (i0 * i1);
            const float t1 = expf(t0);
            *o0 = t1;
            return 0;
        }
        <BLANKLINE>
    """
    ctype, suffix = c_loops._C_TYPES[region.dtype]
    names = {v: f"i{i}" for i, v in enumerate(region.inputs)}
    reduced = region.reduction[2] if region.reduction is not None else None
    written = [v for v in region.outputs if v is not reduced]
    parameters = [f"const {ctype} i{i}" for i in range(len(region.inputs))]
    parameters += [f"{ctype} *o{i}" for i in range(len(written))]
    body = []
    for j, (form, operands, result) in enumerate(region.steps):
        expression = form.format(*[names[v] for v in operands], F=suffix, T=ctype)
        body.append(f"    const {ctype} t{j} = {expression};")
        names[result] = f"t{j}"
    body += [f"    *o{i} = {names[v]};" for i, v in enumerate(written)]
    summed = "0" if reduced is None else f"(double){names[region.reduction[1]]}"
    body.append(f"    return {summed};")
    return (f"static __device__ inline double {name}({', '.join(parameters)}) {{\n" +
            "\n".join(body) + "\n}\n")


class RegionKernel:
    """One region's CuPy kernel(s), called as a C loop's function is: with one tuple of the
    region's input arrays then the arrays its element-wise outputs (and its reduction's
    result) go to. A region with element-wise outputs and a reduction writes each
    element's summed value too, and sums those with a second kernel."""

    def __init__(self, region, cupy):
        dtype = np.dtype(region.dtype).name
        self.inputs = len(region.inputs)
        self.shape = region.shape
        self.reduction = region.reduction
        reduced = region.reduction[2] if region.reduction is not None else None
        self.written = len([v for v in region.outputs if v is not reduced])
        preamble = DEVICE_PRELUDE + device_function(region, "em_region")
        inputs = ", ".join(f"{dtype} i{i}" for i in range(self.inputs))
        arguments = [f"i{i}" for i in range(self.inputs)]
        self._cupy = cupy
        if self.reduction is not None and self.written == 0:
            self.sum = self._reduction_kernel(cupy, inputs, f"em_region({', '.join(arguments)})",
                                              "double", dtype, preamble)
            self.elementwise = None
            return
        outputs = [f"{dtype} o{i}" for i in range(self.written)]
        call = f"em_region({', '.join(arguments + [f'&o{i}' for i in range(self.written)])})"
        if self.reduction is not None:
            outputs.append("float64 summand")
            call = f"summand = {call}"
            self.sum = self._reduction_kernel(cupy, "float64 x", "x", "double", dtype, "")
        self.elementwise = cupy.ElementwiseKernel(
            inputs, ", ".join(outputs), call, "ember_region", preamble=preamble)

    def _reduction_kernel(self, cupy, inputs, mapped, accumulate, dtype, preamble):
        total = "a" if self.reduction[0] == "sum" else "a / (double)_in_ind.size()"
        ctype = c_loops._C_TYPES[np.dtype(dtype)][0]
        return cupy.ReductionKernel(inputs, f"{dtype} r", mapped, "a + b",
                                    f"r = ({ctype})({total})", "0", "ember_region_sum",
                                    reduce_type=accumulate, preamble=preamble)

    def __call__(self, arrays):
        inputs = [a.reshape(()) if a.size == 1 else a for a in arrays[:self.inputs]]
        outputs = arrays[self.inputs:]
        if self.elementwise is None:
            if all(a.shape != self.shape for a in inputs):  # (one-element operands only:
                inputs[0] = self._cupy.broadcast_to(inputs[0], self.shape)  # sum them all)
            outputs[0][...] = self.sum(*inputs).reshape(outputs[0].shape)
            return
        written = list(outputs[:self.written])
        if self.reduction is None:
            self.elementwise(*inputs, *written)
            return
        summands = self._cupy.empty(written[0].shape, np.float64)
        self.elementwise(*inputs, *written, summands)
        result = outputs[self.written]
        result[...] = self.sum(summands).reshape(result.shape)


def compile_regions(regions, cupy):
    """Make each region's ``function`` its CuPy kernel (:class:`RegionKernel`); CuPy
    compiles each on its first call."""
    for region in regions:
        region.function = RegionKernel(region, cupy)


def chain_kernel(program, ops, dtype, cupy):
    """A jit ``FusedOp`` chain (``program``: ``(name, refs, params)`` per step, refs into the
    inputs, -1 the running result) as one ``cupy.ElementwiseKernel`` called with the input
    arrays (broadcast by CuPy) that returns the result; None when a step has no C form.

    Example (on a CUDA machine)::

        >>> import cupy
        >>> ops = [ember.ops._registry.registry[n][0] for n in ("add", "tanh")]
        >>> f = chain_kernel([["add", [0, 1], {}], ["tanh", [-1], {}]], ops,
        ...                  np.dtype(np.float32), cupy)
        >>> f(cupy.zeros(3, np.float32), cupy.ones(1, np.float32))
        array([0.7615942, 0.7615942, 0.7615942], dtype=float32)
    """
    region = c_loops.chain_region(program, ops, dtype)
    if region is None:
        return None
    name = np.dtype(dtype).name
    inputs = ", ".join(f"{name} i{i}" for i in range(len(region.inputs)))
    arguments = ", ".join([f"i{i}" for i in range(len(region.inputs))] + ["&o0"])
    return cupy.ElementwiseKernel(inputs, f"{name} o0", f"em_region({arguments})",
                                  "ember_fused_chain",
                                  preamble=DEVICE_PRELUDE + device_function(region, "em_region"))
