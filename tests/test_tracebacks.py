"""Errors point at the user's line: ember hides its own frames from the tracebacks of errors that
leave it through its API (``src/ember/_traceback.py``), as torch's tracebacks end at the user's
line (its checks are in C++).

Each case is a small program written against a framework ``fw`` (``ember`` or ``torch``); the
test runs it with both, compares the exception's type and message, and checks that ember's
traceback ends at the case's own line, with no frame of ember's package in it.
"""

import os
import subprocess
import sys
import traceback

import pytest
import torch

import ember
from ember import _traceback

HERE = os.path.abspath(__file__)
EMBER_DIR = os.path.dirname(os.path.abspath(ember.__file__)) + os.sep


def matmul_operator(fw):
    a, b = fw.ones(2, 3), fw.ones(4, 5)
    return a @ b  # user line


def matmul_function(fw):
    a, b = fw.ones(2, 3), fw.ones(4, 5)
    return fw.matmul(a, b)  # user line


def linear_layer(fw):
    layer = fw.nn.Linear(10, 5)
    return layer(fw.ones(3, 7))  # user line


def cross_entropy_batch(fw):
    logits, target = fw.ones(3, 5), fw.zeros(4, dtype=fw.long)
    return fw.nn.functional.cross_entropy(logits, target)  # user line


def invalid_view(fw):
    x = fw.ones(2, 3)
    return x.view(7)  # user line


def cat_sizes(fw):
    return fw.cat([fw.ones(2, 3), fw.ones(2, 4)])  # user line


def broadcast_add(fw):
    return fw.ones(2, 3) + fw.ones(4)  # user line


def index_out_of_range(fw):
    x = fw.ones(2, 3)
    return x[5]  # user line


def setitem_out_of_range(fw):
    x = fw.ones(2, 3)
    x[5] = 1.0  # user line


def backward_twice(fw):
    x = fw.ones(3, requires_grad=True)
    loss = x.exp().sum()
    loss.backward()
    loss.backward()  # user line


def grad_of_constant(fw):
    y = fw.ones(3, requires_grad=True).sum()
    return fw.autograd.grad(y, fw.ones(2))  # user line


CASES = [matmul_operator, matmul_function, linear_layer, cross_entropy_batch, invalid_view,
         cat_sizes, broadcast_add, index_out_of_range, setitem_out_of_range, backward_twice,
         grad_of_constant]


def raised(case, fw):
    """The exception that ``case(fw)`` raises."""
    with pytest.raises(Exception) as info:
        case(fw)
    return info.value


def frames(error):
    return traceback.extract_tb(error.__traceback__)


def assert_no_ember_frames(error):
    inside = [f"{f.filename}:{f.lineno}" for f in frames(error)
              if f.filename.startswith(EMBER_DIR)]
    assert inside == [], inside


def assert_same_error_as_torch(case):
    error, expected = raised(case, ember), raised(case, torch)
    assert type(error) is type(expected)
    assert str(error) == str(expected)
    return error


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.__name__)
def test_traceback_ends_at_the_users_line(case):
    error = assert_same_error_as_torch(case)
    last = frames(error)[-1]
    assert (last.filename, last.name) == (HERE, case.__name__)
    assert last.line.endswith("# user line")
    assert_no_ember_frames(error)
    assert getattr(error, "__notes__", None) is None  # as torch's: no note on a deliberate error


def layer_in_user_module(fw):
    class Net(fw.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = fw.nn.Linear(10, 5)

        def forward(self, x):
            return self.fc(x)  # user forward line

    return Net()(fw.ones(3, 7))  # user line


def test_user_modules_forward_frame_stays():
    # ember's Module.__call__ between the two user frames is hidden, as JAX hides its frames
    error = assert_same_error_as_torch(layer_in_user_module)
    caller, forward = frames(error)[-2:]
    assert (caller.name, forward.name) == ("layer_in_user_module", "forward")
    assert forward.filename == HERE and forward.line.endswith("# user forward line")
    assert_no_ember_frames(error)


def hook_raising_in_backward(fw):
    x = fw.ones(3, requires_grad=True)

    def hook(grad):
        raise ValueError("the hook refuses this gradient")  # user hook line

    x.register_hook(hook)
    (x * 2).sum().backward()  # user line


def closure_raising_in_step(fw):
    w = fw.nn.Parameter(fw.ones(2))
    optimizer = fw.optim.SGD([w], lr=0.1)

    def closure():
        raise ValueError("the closure failed")  # user hook line

    optimizer.step(closure)  # user line


def dataset_raising_in_loader(fw):
    class Broken(fw.utils.data.Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, index):
            raise KeyError(index)  # user hook line

    for _ in fw.utils.data.DataLoader(Broken(), batch_size=2):
        pass  # (the loop's own line is where the error surfaces)


def function_raising_in_forward(fw):
    class Double(fw.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            raise ValueError("forward failed")  # user hook line

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    return Double.apply(fw.ones(2, requires_grad=True))  # user line


def function_raising_in_backward(fw):
    class Double(fw.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            raise ValueError("backward failed")  # user hook line

    Double.apply(fw.ones(2, requires_grad=True)).sum().backward()  # user line


def vmap_of_a_raising_function(fw):
    def per_sample(x):
        raise ValueError("per-sample failure")  # user hook line

    return fw.vmap(per_sample)(fw.ones(2, 3))  # user line


def grad_transform_of_a_shape_error(fw):
    def loss(x):
        return (x @ fw.ones(5)).sum()  # user hook line

    return fw.func.grad(loss)(fw.ones(3))  # user line


CALLBACK_CASES = [hook_raising_in_backward, closure_raising_in_step, dataset_raising_in_loader,
                  function_raising_in_forward, function_raising_in_backward,
                  vmap_of_a_raising_function, grad_transform_of_a_shape_error]


@pytest.mark.parametrize("case", CALLBACK_CASES, ids=lambda case: case.__name__)
def test_user_code_called_by_ember_keeps_its_frames(case):
    error = assert_same_error_as_torch(case)
    stack = frames(error)
    assert stack[-1].filename == HERE and stack[-1].line.endswith("# user hook line")
    assert stack[-2].name == case.__name__  # the user's call, with ember's frames between hidden
    assert_no_ember_frames(error)
    assert getattr(error, "__notes__", None) is None  # the user's own error: no note from ember


def test_full_traceback_stays_reachable():
    error = raised(matmul_operator, ember)
    full = traceback.extract_tb(_traceback.full_traceback(error))
    assert [f.name for f in full[:2]] == ["raised", "matmul_operator"]
    assert full[-1].filename.startswith(EMBER_DIR) and full[-1].name == "_check_mm"
    # the user's frames of the full traceback are the frames shown
    shown = [(f.filename, f.lineno) for f in frames(error)]
    assert [(f.filename, f.lineno) for f in full if not f.filename.startswith(EMBER_DIR)] == shown


def test_full_traceback_of_an_error_crossing_two_entry_points():
    error = raised(layer_in_user_module, ember)
    full = traceback.extract_tb(_traceback.full_traceback(error))
    names = [f.name for f in full]
    # Module.__call__, the user's forward, Linear's own call and forward, ..., the shape check
    assert names[:2] == ["raised", "layer_in_user_module"]
    assert "forward" in names and names[-1] == "_check_mm"
    assert [f.name for f in full if not f.filename.startswith(EMBER_DIR)] == \
        [f.name for f in frames(error)]


_SCRIPT = """
import traceback, ember
try:
    ember.ones(2, 3) @ ember.ones(4, 5)
except RuntimeError as error:
    for frame in traceback.extract_tb(error.__traceback__):
        print(frame.name)
"""


@pytest.mark.parametrize("switch, expected_last", [("1", "_check_mm"), ("0", "<module>")])
def test_environment_switch_shows_every_frame(switch, expected_last):
    env = dict(os.environ, EMBER_FULL_TRACEBACK=switch)
    run = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, capture_output=True,
                         text=True, check=True)
    names = run.stdout.split()
    assert names[0] == "<module>" and names[-1] == expected_last
    if switch == "1":
        assert "matmul" in names  # every ember frame between is there too


def test_probable_bug_in_ember_gets_a_note(monkeypatch):
    # a shape check that fails with an AttributeError, compiled as if it lived in ember's package
    namespace = {}
    source = "def _check_mm(a, b, name='mm'):\n    return a.no_such_attribute\n"
    exec(compile(source, os.path.join(EMBER_DIR, "ops", "linalg", "products.py"), "exec"), namespace)
    monkeypatch.setattr(ember.ops.linalg.products, "_check_mm", namespace["_check_mm"])
    error = raised(matmul_operator, ember)
    assert isinstance(error, AttributeError)
    assert_no_ember_frames(error)
    (note,) = error.__notes__
    assert "EMBER_FULL_TRACEBACK=1" in note and "bug in ember" in note
    assert traceback.extract_tb(_traceback.full_traceback(error))[-1].name == "_check_mm"
    # the note is printed with the error, once
    assert "".join(traceback.format_exception(error)).count("bug in ember") == 1
