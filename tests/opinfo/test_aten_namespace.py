"""``ember.ops.aten.<name>`` against ``torch.ops.aten.<name>`` on PyTorch's OpInfo samples.

For every OpInfo whose ATen operator torch exposes in ``torch.ops.aten``, the first samples
are passed to both namespaces' packets as they are (torch picks the overload from the
arguments; ember's one callable takes them all) and the results compared as
``test_opinfo.py`` compares them (ties, eigenvector gauges, tolerances). Samples torch's ATen
packet refuses are not measured; ops with a known forward failure in ``known_failures.py``
are left to that list.
"""

import itertools

import opinfo_harness as h
import pytest
from known_failures import KNOWN_FAILURES

import ember

SAMPLES = 3
# What ember's packet computes differently from torch's, each a strict xfail.
KNOWN_ATEN_FAILURES = {}


def _aten_name(op):
    name = (op.aten_name or "").removeprefix("torch.ops.aten.")
    return name if name and "." not in name else None


def _cases():
    import torch
    cases = []
    for oid, op in sorted(h.ops_by_id().items()):
        name = _aten_name(op)
        if name is None or name.startswith("__") or (oid, "forward") in KNOWN_FAILURES:
            continue  # (aten::__getitem__ and friends are TorchScript's list operators)
        try:
            getattr(torch.ops.aten, name)
        except AttributeError:
            continue
        marks = [pytest.mark.xfail(strict=True, reason=KNOWN_ATEN_FAILURES[oid])] \
            if oid in KNOWN_ATEN_FAILURES else []
        cases.append(pytest.param(oid, id=oid, marks=marks))
    return cases


def _dtype(op):
    import torch
    supported = op.supported_dtypes("cpu")
    for dtype in (torch.float32, torch.int64, torch.bool, torch.complex64):
        if dtype in supported:
            return dtype
    return None


@pytest.mark.parametrize("oid", _cases())
def test_aten_packet_matches_torch(oid):
    import torch
    op = h.ops_by_id()[oid]
    name = _aten_name(op)
    dtype = _dtype(op)
    if dtype is None:
        pytest.skip("no dtype ember and torch share")
    failures, compared = [], 0
    for sample in itertools.islice(op.sample_inputs("cpu", dtype), SAMPLES):
        if h._unmeasurable(op, sample):
            continue
        try:
            args = h.ToEmber(False)((sample.input, list(sample.args), dict(sample.kwargs)))
            torch.manual_seed(0)
            expected = h.normalize(h._oracle(lambda: getattr(torch.ops.aten, name)(
                sample.input, *sample.args, **sample.kwargs)))
        except h.Unmeasurable:
            continue
        assert hasattr(ember.ops.aten, name), f"ember.ops.aten has no {name}"
        ember.manual_seed(0)
        got, err = h._run(lambda: h.normalize(getattr(ember.ops.aten, name)(
            args[0], *args[1], **args[2])))
        if err is None:
            expected, got = h._untie(op, sample, expected), h._untie(op, sample, got)
            expected, got = h._fix_gauge(op, expected), h._fix_gauge(op, got)
        reason = err or h.compare(expected, got, h.tolerances(op), values=not h.is_random(op))
        compared += 1
        if reason:
            failures.append(reason)
    assert not failures, "\n".join(failures[:3])
    if not compared:
        pytest.skip("torch.ops.aten refuses every sample (they follow the Python signature)")
