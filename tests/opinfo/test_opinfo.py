"""PyTorch's OpInfo database (``op_db``) run against ember, with torch as the oracle.

One test per op and check:

* ``test_forward``: every CPU dtype that torch and ember share, contiguous samples, plus
  torch's non-contiguous copies of the samples in the op's first dtype (float32 where it
  has it);
* ``test_backward``: float64 vector-Jacobian products against torch's, contiguous and
  non-contiguous inputs;
* ``test_forward_ad``: float64 Jacobian-vector products, for ops where torch has forward AD;
* ``test_vmap`` and ``test_jit``: the op under ``ember.func.vmap`` and ``ember.jit.trace``
  (``transform_checks.py``), float64, against torch's eager results;
* ``test_onnx``: the op exported to ONNX by ember and run in onnxruntime, float32, against
  torch's eager results (samples whose traced ops decline ONNX are not counted).

By default each check runs a fixed, hash-picked share of the samples, and besides the
first one dtype per op picked by a fixed hash (every op, always the same samples), so the
file fits the suite's time budget; ``EMBER_OPINFO_FULL=1`` runs every sample of every
dtype. Known failures are listed, with a reason each,
in ``known_failures.py``; they are strict xfails, so an op that starts passing must leave
the list.
"""

import opinfo_harness as h
import pytest
import transform_checks
from known_failures import KNOWN_FAILURES

# The sampled mode: samples per op and check, and one non-contiguous copy per this many.
QUOTA = {"forward": 8, "forward_dtype": 2, "backward": 4, "forward_ad": 3, "vmap": 2, "jit": 2,
         "onnx": 2}
NONCONTIGUOUS_EVERY = 3

OPS = h.ops_by_id()
RESULTS = {}  # (op id, check) -> samples compared; read by conftest's summary


def _quota(key, oid, check):
    """The sampled mode's quota; None (every sample) in the full mode, and for a known
    failure, so that its strict xfail holds whichever sample fails."""
    return None if h.FULL or (oid, check) in KNOWN_FAILURES else QUOTA[key]


def _noncontiguous_every(oid, check):
    return 1 if (oid, check) in KNOWN_FAILURES else NONCONTIGUOUS_EVERY


def _params(check, applies):
    params = []
    for oid, op in OPS.items():
        if not applies(op):
            continue
        reason = KNOWN_FAILURES.get((oid, check))
        marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
        params.append(pytest.param(oid, marks=marks, id=oid))
    return params


def _resolved(oid):
    """The op's OpInfo, after checking that ember has the op at all."""
    op = OPS[oid]
    assert h.resolve(op) is not None, f"ember has no {oid} (torch.{op.name})"
    return op


def _finish(oid, check, report,
            nothing="torch produces no comparable result for any sample (e.g. sparse output)"):
    RESULTS[(oid, check)] = report.compared
    assert not report.failures, "\n".join(report.failures)
    if not report.compared:
        pytest.skip(nothing)


@pytest.mark.parametrize("oid", _params("forward", h.forward_dtypes))
def test_forward(oid):
    op = _resolved(oid)
    report = h.Report()
    primary, *others = h.forward_dtypes(op)
    h.check_forward(op, primary, _quota("forward", oid, "forward"),
                    _noncontiguous_every(oid, "forward"), report)
    for dtype in _other_dtypes(oid, others):
        h.check_forward(op, dtype, _quota("forward_dtype", oid, "forward"), 0, report)
    _finish(oid, "forward", report)


def _other_dtypes(oid, dtypes):
    """Every other dtype in the full mode; one of them, picked by a fixed hash, otherwise."""
    if h.FULL or (oid, "forward") in KNOWN_FAILURES or not dtypes:
        return dtypes
    return [dtypes[h.stable_hash(oid, "dtype") % len(dtypes)]]


@pytest.mark.parametrize("oid", _params("backward", h.grad_dtype))
def test_backward(oid):
    op = _resolved(oid)
    _finish(oid, "backward",
            h.check_backward(op, _quota("backward", oid, "backward"),
                             _noncontiguous_every(oid, "backward")))


@pytest.mark.parametrize("oid", _params(
    "forward_ad", lambda op: h.grad_dtype(op) and op.supports_forward_ad))
def test_forward_ad(oid):
    op = _resolved(oid)
    _finish(oid, "forward_ad", h.check_forward_ad(op, _quota("forward_ad", oid, "forward_ad")))


@pytest.mark.parametrize("oid", _params("vmap", h.grad_dtype))
def test_vmap(oid):
    op = _resolved(oid)
    _finish(oid, "vmap", transform_checks.check_vmap(op, _quota("vmap", oid, "vmap")))


@pytest.mark.parametrize("oid", _params("jit", h.grad_dtype))
def test_jit(oid):
    op = _resolved(oid)
    _finish(oid, "jit", transform_checks.check_jit(op, _quota("jit", oid, "jit")))


def _exports_float32(op):
    return "float32" in h.forward_dtypes(op)


@pytest.mark.parametrize("oid", _params("onnx", _exports_float32))
def test_onnx(oid):
    pytest.importorskip("onnxruntime")  # the ember[onnx] extra's runtime
    op = _resolved(oid)
    _finish(oid, "onnx", transform_checks.check_onnx(op, _quota("onnx", oid, "onnx")),
            "no sample exports: an op it traces declares no ONNX form (the registry test holds "
            "each to a reason), or torch gives no comparable result")


def test_known_failures_name_real_checks():
    """Every entry of the list names an op of the database and a check it has."""
    applies = {"forward": h.forward_dtypes, "backward": h.grad_dtype,
               "forward_ad": lambda op: h.grad_dtype(op) and op.supports_forward_ad,
               "vmap": h.grad_dtype, "jit": h.grad_dtype, "onnx": _exports_float32}
    stale = [key for key in KNOWN_FAILURES
             if key[0] not in OPS or key[1] not in applies or not applies[key[1]](OPS[key[0]])]
    assert not stale, f"entries without a matching op/check: {stale}"
    assert all(reason.strip() for reason in KNOWN_FAILURES.values())
