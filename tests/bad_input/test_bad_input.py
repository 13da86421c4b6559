"""Careless calls behave as in torch: every public function and method, fixed invalid calls.

For each function both libraries have (see ``harness.py``), one valid base call and a fixed
list of mutations of it (None/str/list for a tensor, dims out of range or float, wrong
dtypes, empty/NaN/inf input, mismatched shapes, negative sizes, floats for ints, an unknown
keyword) run on torch and on ember. A case matches when both raise the same exception type,
or both succeed with the same shape, dtype and values. Cases that do not match yet are
listed in ``known_mismatches.py``: every other case must match, and every listed case must
still mismatch (fix it, then regenerate the list), so the list only shrinks. Calls where
torch itself leaks an internal error from its Python code and ember raises a typed error
(``torch_leaks`` in the harness) are neither: ember keeps its typed error.
"""

import collections

import pytest

from . import harness as h
from .known_mismatches import KNOWN_MISMATCHES

KNOWN = collections.defaultdict(dict)  # function -> {mutation: category}
for _function, _mutation, _category in KNOWN_MISMATCHES:
    KNOWN[_function][_mutation] = _category


@pytest.mark.parametrize("name", h.checked_names())
def test_matches_torch(name):
    cases = {case.mutation: case for case in h.run_function(name)}
    known = KNOWN.get(name, {})
    mismatches = h.CATEGORIES[1:]  # (a torch_leaks case is no mismatch: see harness.py)
    new = [f"{c.mutation}: {c.category}: {c.detail}" for c in cases.values()
           if c.category in mismatches and c.mutation not in known]
    fixed = [m for m in known if m in cases and cases[m].category not in mismatches]
    gone = [m for m in known if m not in cases]
    assert not new, f"{name}: calls that no longer behave as torch's:\n" + "\n".join(new)
    assert not fixed and not gone, (
        f"{name}: known mismatches that now match torch {fixed} or no longer exist {gone}: "
        "regenerate known_mismatches.py (python -m tests.bad_input.harness --write-known)")


def test_known_mismatches_name_checked_functions():
    """Every listed case names a checked function and one of the harness's categories."""
    checked = set(h.checked_names())
    stale = [entry for entry in KNOWN_MISMATCHES
             if entry[0] not in checked or entry[2] not in h.CATEGORIES[1:]]
    assert not stale, f"entries for no checked function or with no category: {stale[:10]}"


def test_every_function_gets_its_type_mutations():
    """Each tensor argument but a method's self is replaced by None, a str and a list, and
    every function gets an unknown keyword."""
    for name in h.checked_names():
        base = h.base_call(name)
        ids = {m.id for m in h.mutations(name)}
        assert "kwarg" in ids, name
        target = h.targets()[name]
        for where, label, value in h._slots(target, base):
            if h._is_tensor(value) and not (target.method and where == ("arg", 0)):
                assert {f"none:{label}", f"str:{label}", f"list:{label}"} <= ids, (name, label)
