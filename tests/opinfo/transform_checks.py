"""OpInfo checks of ember's program transforms: ``vmap`` and ``jit.trace``, on torch's samples.

Both batch or re-run an op on a second input: the sample's first tensor with every dim
flipped (the same values in another order, so an op's domain is kept: positive stays
positive, a positive-definite matrix stays positive-definite). torch's eager op on each
input is the oracle:

* :func:`check_vmap`: ``ember.func.vmap(op)`` over the stack of the two inputs against
  ``torch.stack`` of torch's two results (the op's other arguments are shared);
* :func:`check_jit`: ``ember.jit.trace(op)`` on the first input, the traced graph then called
  on the second, against torch's result on the second (a graph that froze a value of the
  first input, or lost a parameter, gives the first input's answer);
* :func:`check_onnx`: ember's ONNX export run in onnxruntime on the second input.

The three share one loop over the samples (:func:`_check`); each says only how it builds
the expected result and ember's.
"""

import opinfo_harness as h

import ember

GRAD_DTYPE = h.GRAD_DTYPE  # float64: both checks run where the op is differentiable


def _second_input(x):
    """``x`` with every dim flipped (``x`` itself for a 0-dim tensor)."""
    return x.flip(tuple(range(x.dim()))) if x.dim() else x.clone()


def _tensor_outputs(out):
    """The output's tensors in order; Unmeasurable when it holds anything else."""
    import torch
    leaves = h._tensors(out)
    flat = out if isinstance(out, (list, tuple)) else (out,)
    if not leaves or len(leaves) != len(flat) or any(
            not isinstance(t, torch.Tensor) or t.layout != torch.strided for _, t in leaves):
        raise h.Unmeasurable("an output that is not a tuple of strided tensors")
    return [t for _, t in leaves]


def _usable(op, sample):
    import torch
    return (not h.is_random(op) and not h._unmeasurable(op, sample)
            and not h._dropout_active(op, sample) and not h._layout_dependent_repeats(op, sample)
            and isinstance(sample.input, torch.Tensor) and sample.input.layout == torch.strided)


def _pair(op, sample):
    """torch's results on the sample's input and on its flipped copy, and that copy."""
    x1 = _second_input(sample.input.detach())

    def run(x):
        return _tensor_outputs(op(x, *sample.args, **sample.kwargs))
    return h._oracle(lambda: run(sample.input.detach())), h._oracle(lambda: run(x1)), x1


def _stacked(first, second):
    import torch
    if [t.shape for t in first] != [t.shape for t in second]:
        raise h.Unmeasurable("output shapes depend on the values (not vmappable)")
    return h.normalize([torch.stack([a, b]) for a, b in zip(first, second)])


def _comparable(op, sample, expected, got):
    """Both results with ties and gauges (eigenvector signs and phases) settled alike."""
    pair = [h._fix_gauge(op, h._untie(op, sample, tree)) for tree in (expected, got)]
    return pair


def _check(op, check, dtype, transform, quota=None, report=None, tols=None, path=None):
    """The loop the transform checks share: for each usable sample of ``op`` in ``dtype``,
    ``transform(call, first, second, x0, x1, conv)`` gets ember's op on the sample's other
    arguments (``call(x)``), torch's results on the input and on its flipped copy, the input
    in ember and the flipped copy in torch, and the converter; it returns the expected
    leaves and a thunk that computes ember's, or raises Unmeasurable to pass the sample by
    (also from the thunk: an op that declines the transform's form). ``check`` picks the
    samples (see ``h.samples``); ``path`` names ember's side in a failure (default ``check``)."""
    report = report or h.Report()
    fn = h.resolve(op)
    tols = tols or h.tolerances(op)
    for i, sample in h.samples(op, dtype, False, quota, check):
        if report.full:
            break
        if not _usable(op, sample):
            continue
        try:
            first, second, x1 = _pair(op, sample)
            conv = h.ToEmber()
            x0_e, args, kwargs = conv((sample.input, list(sample.args), dict(sample.kwargs)))
            expected, ember_result = transform(lambda x: fn(x, *args, **kwargs), first, second,
                                               x0_e, x1, conv)
        except h.Unmeasurable:
            continue
        got, err = h._run(ember_result)
        if err and err.startswith("Unmeasurable"):
            continue
        reason = err or h.compare(*_comparable(op, sample, expected, got), tols,
                                  path=path or check)
        report.compared += 1
        if reason:
            report.fail(h._describe(sample, i, dtype, False), reason)
    return report


def _leaves(out):
    return h.normalize(list(out) if isinstance(out, (list, tuple)) else [out])


def check_vmap(op, quota=None, report=None):
    """``vmap`` of ember's op over a batch of two inputs against torch's op on each."""
    def batched(call, first, second, x0, x1, conv):
        batch = ember.stack([x0, conv(x1)])
        return _stacked(first, second), lambda: _leaves(ember.func.vmap(call)(batch))
    return _check(op, "vmap", GRAD_DTYPE, batched, quota, report)


def check_jit(op, quota=None, report=None):
    """ember's op traced on one input, the trace run on another, against torch's eager op."""
    def traced(call, first, second, x0, x1, conv):
        x1_e = conv(x1)
        return h.normalize(second), lambda: _leaves(
            ember.jit.trace(call, (x0,), check_trace=False)(x1_e))
    return _check(op, "jit", GRAD_DTYPE, traced, quota, report, path="traced")


ONNX_DTYPE = "float32"  # what exported models run in
ONNX_RESULT_DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32",
                      "float64")
# onnxruntime's kernels round differently from torch's (fused and reordered arithmetic):
# torch's own ONNX tests compare with rtol 1e-3
ONNX_TOLERANCE = (1e-3, 1e-5)


def _onnx_session(fn, example):
    """An onnxruntime session of ``fn`` exported by ember on ``example``, or Unmeasurable
    when the traced ops include one that declares no ONNX form."""
    import io

    import onnxruntime

    from ember.onnx.errors import SymbolicValueError, UnsupportedOperatorError
    buffer = io.BytesIO()
    try:
        ember.onnx.export(fn, (example,), buffer, input_names=["x"])
    except (UnsupportedOperatorError, SymbolicValueError) as e:
        # an op, or this configuration of it, declares that it has no ONNX form (torch's
        # exporter refuses with the same errors)
        raise h.Unmeasurable(f"declines ONNX: {e}") from e
    except TypeError as e:
        if "ONNX export does not support tensors of dtype" in str(e):
            raise h.Unmeasurable(str(e)) from e
        raise
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    return onnxruntime.InferenceSession(buffer.getvalue(), options,
                                        providers=["CPUExecutionProvider"])


def _normalized_arrays(arrays):
    return ("S", [("T", a, str(a.dtype), tuple(a.shape)) for a in arrays])


def check_onnx(op, quota=None, report=None):
    """ember's ONNX export of the op (float32) run in onnxruntime on a second input,
    against torch's eager result on it. A sample whose traced ops decline ONNX is skipped
    (the registry test holds every op to a form or a declared reason)."""
    def exported(call, first, second, x0, x1, conv):
        expected = h.normalize(second)
        if any(t[2] not in ONNX_RESULT_DTYPES for t in expected[1]):
            # onnxruntime hands bfloat16/complex results to no NumPy type
            raise h.Unmeasurable("a result dtype onnxruntime cannot return")
        return expected, lambda: _normalized_arrays(
            _onnx_session(call, x0).run(None, {"x": h._numpy_of(x1)}))
    tols = h.tolerances(op)
    tols["float32"] = tuple(max(a, b) for a, b in zip(tols["float32"], ONNX_TOLERANCE))
    return _check(op, "onnx", ONNX_DTYPE, exported, quota, report, tols)
