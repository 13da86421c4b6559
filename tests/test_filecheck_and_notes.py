"""torch.testing.FileCheck's directives, and linalg.common_notes, against torch."""

import pytest
import torch
from torch.testing import FileCheck as TorchFileCheck

import ember
from ember.testing import FileCheck

SOURCE = "a\nfoo bar\nbaz\nfoo\nqux qux"
CHAINS = [
    lambda F: F().check("foo").check_next("baz"),
    lambda F: F().check("foo").check_same("bar"),
    lambda F: F().check("a").check_not("zzz").check("baz"),
    lambda F: F().check_count("foo", 2, exactly=True),
    lambda F: F().check_count("qux", 2),
    lambda F: F().check_dag("baz").check_dag("bar").check("foo"),
    lambda F: F().check_regex("b[a-z]z"),
    lambda F: F().check("zzz"),
    lambda F: F().check("a").check_not("bar").check("baz"),
    lambda F: F().check_count("foo", 3),
    lambda F: F().check_count("foo", 1, exactly=True),
    lambda F: F().check("foo").check_next("qux"),
    lambda F: F().check("baz").check_same("bar"),
    lambda F: F().check("qux").check_not("foo"),
]


def _outcome(chain, checker):
    try:
        chain(checker).run(SOURCE)
    except RuntimeError as error:
        return str(error).splitlines()[0]
    return "passed"


@pytest.mark.parametrize("chain", CHAINS, ids=range(len(CHAINS)))
def test_directives_match_torch(chain):
    assert _outcome(chain, FileCheck) == _outcome(chain, TorchFileCheck)


def test_linalg_common_notes_match_torch():
    assert ember.linalg.common_notes == torch.linalg.common_notes
