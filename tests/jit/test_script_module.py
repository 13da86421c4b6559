"""ember.jit.script on modules: forward, exported and ignored methods, Final constants, standard
layers, data-dependent control flow; outputs against torch.jit.script's, gradients against
eager, save in this process and load in a fresh one that lacks the classes, torch's errors."""

import json
import subprocess
import sys
import textwrap
import zipfile
from typing import Final, Optional

import numpy as np
import pytest
import torch
from torch import Tensor  # an annotation only: ember reads it as the name "Tensor"

import ember
from conftest import assert_same


def shifted(x, k: int = 2):
    """A plain function a module calls: compiled with it."""
    if x.sum() > 0:
        return x * k
    return x - k


def make_models(lib):
    """The same model classes written against ``lib`` (torch or ember)."""
    nn = lib.nn
    python_calls = []

    class LoopNet(nn.Module):
        """A loop whose trip count comes from a tensor, an if on x.sum() > 0, a while."""

        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x, steps):
            n = int(steps.sum())
            for i in range(n):
                x = lib.tanh(self.lin(x)) + i
            if x.sum() > 0:
                x = x * 2
            else:
                x = -x
            k = 0
            while k < 2:
                x = x + 0.5
                k += 1
            return x

    class WithMethods(nn.Module):
        scale: Final[int]
        __constants__ = ["shift"]

        def __init__(self):
            super().__init__()
            self.scale = 3
            self.shift = 0.5
            self.seq = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Dropout(0.25),
                                     nn.Linear(8, 2))

        def forward(self, x: Tensor, y: Optional[Tensor] = None):  # noqa: UP045 (as real code)
            out = self.seq(x) * self.scale + self.shift
            if y is not None:
                out = out + y
            return out

        @lib.jit.export
        def double(self, x: Tensor, n: int) -> Tensor:
            return self.forward(x, None) * n

    class WithIgnored(WithMethods):
        @lib.jit.ignore
        def in_python(self, x: Tensor) -> Tensor:
            python_calls.append(tuple(x.shape))  # Python code, run as Python
            return x + 100 * self.scale

        @lib.jit.export
        def uses_ignored(self, x: Tensor) -> Tensor:
            return self.in_python(x) * 2

    class Typed(nn.Module):
        """List/Tuple/int arguments, iteration over a tensor and a list, an early return."""

        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList([nn.Linear(3, 3), nn.Linear(3, 3)])

        def forward(self, x, sizes: list[int], pair: tuple[int, int], flag: bool):
            total = x.sum() * 0
            for row in x:
                total = total + row.max()
            for s in sizes:
                total = total + s
            for block in self.blocks:
                x = block(x).relu()
            a, b = pair
            if flag:
                return x * a, total
            while x.sum() < 10:
                x = x + b
            return x, total

    class Helpers(nn.Module):
        """A plain function, is_scripting(), a no_grad block."""

        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 3)

        def forward(self, x):
            if lib.jit.is_scripting():
                y = shifted(self.fc(x))
            else:
                y = x
            with lib.no_grad():
                z = self.fc(x) * 2
            return y, z

    class Heads(nn.Module):
        """A ModuleDict indexed by a literal, a str argument, None checks folded or not."""

        def __init__(self):
            super().__init__()
            self.heads = nn.ModuleDict({"a": nn.Linear(2, 2), "b": nn.Linear(2, 2)})
            self.missing = None

        def forward(self, x, which: str, y: Optional[Tensor] = None):  # noqa: UP045
            if self.missing is not None:
                x = x * 0
            if y is None:
                y = x
            if which == "a":
                out = self.heads["a"](x)
            else:
                out = self.heads["b"](x)
            return out + y

    class Jumps(nn.Module):
        """continue, break (also out of `while True`), return from inside a loop."""

        def forward(self, x, n: int):
            total = x * 0
            for i in range(n):
                if i == 1:
                    continue
                total = total + x * i
                if total.sum() > 20:
                    break
            k = 0
            while True:
                k += 1
                if k > 3:
                    break
                x = x + 1
            for j in range(5):
                if x.sum() > 30:
                    return total, x * j
                x = x * 2
            return total, x

    class Nested(nn.Module):
        """A return from an inner loop leaves both loops; the inner loop breaks."""

        def forward(self, x, n: int):
            for i in range(n):
                for j in range(n):
                    if j > i:
                        break
                    x = x + j
                    if x.sum() > 40:
                        return x * 0 + i * 10 + j
                x = x * 1.5
            return x

    def stack():
        return nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                             nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16, 5), nn.Tanh())

    return {"loop": LoopNet, "methods": WithMethods, "ignored": WithIgnored, "typed": Typed, "helpers": Helpers, "heads": Heads, "jumps": Jumps, "nested": Nested,
            "stack": stack, "python_calls": python_calls}


def pair(name, seed=0, libs=None):
    """An ember model and a torch model of the same class, with the same parameters."""
    e_lib, t_lib = libs or (make_models(ember), make_models(torch))
    ember.manual_seed(seed)
    e_model = e_lib[name]()
    t_model = t_lib[name]()
    t_model.load_state_dict({k: torch.tensor(v.detach().numpy())
                             for k, v in e_model.state_dict().items()})
    return e_model, t_model


def both(*arrays):
    return [ember.tensor(a) for a in arrays], [torch.tensor(a) for a in arrays]


RNG = np.random.default_rng(0)


@pytest.mark.parametrize("sign,steps", [(1.0, [1.0, 2.0]), (-1.0, [0.0, 0.0]), (1.0, [0.0, 1.0]),
                                        (-1.0, [2.0, 2.0])])
@pytest.mark.parametrize("batch", [1, 3])
def test_data_dependent_control_flow_matches_torch_script(sign, steps, batch):
    e_model, t_model = pair("loop")
    scripted, t_scripted = ember.jit.script(e_model), torch.jit.script(t_model)
    x = (sign * np.abs(RNG.standard_normal((batch, 4)))).astype(np.float32)
    (ex, es), (tx, ts) = both(x, np.array(steps, np.float32))
    assert_same(scripted(ex, es), t_scripted(tx, ts), rtol=1e-5, atol=1e-5)
    assert_same(scripted(ex, es), t_model(tx, ts), rtol=1e-5, atol=1e-5)


def test_graph_and_code_keep_the_control_flow():
    scripted = ember.jit.script(pair("loop")[0])
    text = str(scripted.graph)
    assert text.count("prim::Loop") == 2 and "prim::If" in text
    # the Linear is one of ember's layers: read and called, as torch's graph shows it
    assert 'prim::GetAttr[name="lin"]' in text and 'prim::CallMethod[name="forward"](%lin' in text
    code = scripted.code
    assert "for " in code and "while " in code and "if " in code
    assert code.startswith("def forward(self, vx: Tensor, vsteps: Tensor):")


@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
def test_sequential_of_standard_layers_matches_torch_in_train_and_eval(training):
    e_model, t_model = pair("stack")
    e_model.train(training)
    t_model.train(training)
    scripted, t_scripted = ember.jit.script(e_model), torch.jit.script(t_model)
    for batch in (2, 5):
        x = RNG.standard_normal((batch, 3, 4, 4)).astype(np.float32)
        (ex,), (tx,) = both(x)
        assert_same(scripted(ex), t_scripted(tx), rtol=1e-4, atol=1e-5)
    # the batch-norm running statistics were updated in place, as torch's
    assert_same(e_model[1].running_mean, t_model[1].running_mean, rtol=1e-4, atol=1e-6)
    assert_same(e_model[1].num_batches_tracked, t_model[1].num_batches_tracked)


LAYERS = {
    "LayerNorm": (lambda nn: nn.LayerNorm(4), (2, 4)),
    "GroupNorm": (lambda nn: nn.GroupNorm(2, 4), (2, 4, 3)),
    "GELU": (lambda nn: nn.GELU(), (2, 4)),
    "Softmax": (lambda nn: nn.Softmax(-1), (2, 4)),
    "LeakyReLU": (lambda nn: nn.LeakyReLU(0.1), (2, 4)),
    "AdaptiveAvgPool2d": (lambda nn: nn.AdaptiveAvgPool2d(1), (1, 2, 4, 4)),
    "AvgPool2d": (lambda nn: nn.AvgPool2d(2), (1, 2, 4, 4)),
    "Conv1d": (lambda nn: nn.Conv1d(2, 3, 3, stride=2), (1, 2, 9)),
    "BatchNorm1d": (lambda nn: nn.BatchNorm1d(4), (3, 4)),
    "Upsample": (lambda nn: nn.Upsample(scale_factor=2), (1, 2, 3, 3)),
    "PixelShuffle": (lambda nn: nn.PixelShuffle(2), (1, 4, 2, 2)),
    "Hardswish": (lambda nn: nn.Hardswish(), (2, 4)),
    "Unflatten": (lambda nn: nn.Unflatten(1, (2, 2)), (3, 4)),
    "ZeroPad2d": (lambda nn: nn.ZeroPad2d(1), (1, 1, 2, 2)),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_standard_layers_script_as_torchs(name):
    make, shape = LAYERS[name]
    ember.manual_seed(0)
    e_layer, t_layer = make(ember.nn), make(torch.nn)
    t_layer.load_state_dict({k: torch.tensor(v.detach().numpy())
                             for k, v in e_layer.state_dict().items()})
    scripted, t_scripted = ember.jit.script(e_layer), torch.jit.script(t_layer)
    (ex,), (tx,) = both(RNG.standard_normal(shape).astype(np.float32))
    assert_same(scripted(ex), t_scripted(tx), rtol=1e-5, atol=1e-6)


def test_exported_and_ignored_methods_match_torch():
    libs = make_models(ember), make_models(torch)
    e_model, t_model = pair("ignored", libs=libs)
    e_model.eval()
    t_model.eval()
    scripted, t_scripted = ember.jit.script(e_model), torch.jit.script(t_model)
    x, y = RNG.standard_normal((3, 4)).astype(np.float32), np.ones(2, np.float32)
    (ex, ey), (tx, ty) = both(x, y)
    assert_same(scripted(ex), t_scripted(tx), rtol=1e-5, atol=1e-6)
    assert_same(scripted(ex, ey), t_scripted(tx, ty), rtol=1e-5, atol=1e-6)
    assert_same(scripted(ex, y=ey), t_scripted(tx, y=ty), rtol=1e-5, atol=1e-6)
    assert_same(scripted.double(ex, 4), t_scripted.double(tx, 4), rtol=1e-5, atol=1e-6)
    # the ignored method runs as Python, on the original module, in both
    assert_same(scripted.uses_ignored(ex), t_scripted.uses_ignored(tx))
    assert libs[0]["python_calls"] == libs[1]["python_calls"] == [(3, 4)]
    assert scripted.scale == t_scripted.scale == 3  # constants stay attributes
    assert "double" in scripted.double.code and "vn: int" in scripted.double.code


def test_final_and_constants_are_folded_into_the_graph():
    scripted = ember.jit.script(pair("methods")[0])
    code = scripted.code
    assert "scale" not in code and "shift" not in code
    assert "operator.mul(" in code and ", 3)" in code and ", 0.5)" in code
    # the Sequential of ember's layers is called as a whole (torch's prim::CallMethod)
    assert "(vseq).forward(vx)" in code


def test_called_layers_follow_train_and_eval_of_the_scripted_module():
    e_model, t_model = pair("methods")
    scripted, t_scripted = ember.jit.script(e_model), torch.jit.script(t_model)
    scripted.eval()
    t_scripted.eval()
    assert not scripted.seq[2].training
    assert e_model.seq[2].training  # the original module keeps its own mode, as in torch
    (ex,), (tx,) = both(RNG.standard_normal((3, 4)).astype(np.float32))
    assert_same(scripted(ex), t_scripted(tx), rtol=1e-5, atol=1e-6)
    scripted.train()
    assert scripted.seq[2].training


def test_typed_arguments_iteration_and_early_return_match_torch():
    e_model, t_model = pair("typed")
    scripted, t_scripted = ember.jit.script(e_model), torch.jit.script(t_model)
    for flag in (True, False):
        for sizes, pair_ in (([1, 2], (2, 3)), ([], (1, 1)), ([5], (-1, 4))):
            x = RNG.standard_normal((4, 3)).astype(np.float32)
            (ex,), (tx,) = both(x)
            assert_same(scripted(ex, sizes, pair_, flag), t_scripted(tx, sizes, pair_, flag),
                        rtol=1e-5, atol=1e-5)


def test_functions_no_grad_and_is_scripting_match_torch():
    e_model, t_model = pair("helpers")
    scripted, t_scripted = ember.jit.script(e_model), torch.jit.script(t_model)
    for sign in (1.0, -1.0):
        x = (sign * np.abs(RNG.standard_normal((2, 3)))).astype(np.float32)
        (ex,), (tx,) = both(x)
        got, want = scripted(ex), t_scripted(tx)
        assert_same(got, want, rtol=1e-5, atol=1e-6)
        assert [g.requires_grad for g in got] == [w.requires_grad for w in want] == [True, False]
    assert ember.is_grad_enabled()


@pytest.mark.parametrize("n", [0, 2, 5, 10])
@pytest.mark.parametrize("value", [0.5, 3.0])
def test_break_continue_and_return_in_loops_match_torch(n, value):
    for name in ("jumps", "nested"):
        e_model, t_model = pair(name)
        scripted, t_scripted = ember.jit.script(e_model), torch.jit.script(t_model)
        (ex,), (tx,) = both(np.full(2, value, np.float32))
        assert_same(scripted(ex, n), t_scripted(tx, n))


def test_module_dict_strings_and_optional_match_torch():
    e_model, t_model = pair("heads")
    scripted, t_scripted = ember.jit.script(e_model), torch.jit.script(t_model)
    (ex, ey), (tx, ty) = both(*RNG.standard_normal((2, 3, 2)).astype(np.float32))
    for which in ("a", "b"):
        assert_same(scripted(ex, which), t_scripted(tx, which), rtol=1e-5, atol=1e-6)
        assert_same(scripted(ex, which, ey), t_scripted(tx, which, ty), rtol=1e-5, atol=1e-6)


def test_arguments_are_checked_as_torch():
    e_model, t_model = pair("loop")
    scripted, t_scripted = ember.jit.script(e_model), torch.jit.script(t_model)
    (ex,), (tx,) = both(np.ones((2, 4), np.float32))
    with pytest.raises(RuntimeError, match="Expected a value of type 'Tensor"):
        t_scripted(tx, 3)
    with pytest.raises(RuntimeError, match="Expected a value of type 'Tensor"):
        scripted(ex, 3)
    with pytest.raises(RuntimeError):
        t_scripted(tx)
    with pytest.raises(RuntimeError, match="missing value for argument 'steps'"):
        scripted(ex)
    typed, t_typed = ember.jit.script(pair("typed")[0]), torch.jit.script(pair("typed")[1])
    with pytest.raises(RuntimeError, match="List\\[int\\]"):
        t_typed(tx[:, :3], [1.5], (1, 2), True)
    with pytest.raises(RuntimeError, match="List\\[int\\]"):
        typed(ex[:, :3], [1.5], (1, 2), True)


def test_gradients_through_the_scripted_module_equal_eager():
    e_model, _ = pair("loop")
    scripted = ember.jit.script(e_model)
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    steps = ember.tensor([1.0, 1.0])
    grads = []
    for run in (e_model, scripted):
        e_model.zero_grad()
        inp = ember.tensor(x, requires_grad=True)
        (run(inp, steps) ** 2).sum().backward()
        grads.append([inp.grad.numpy().copy()] + [p.grad.numpy().copy()
                                                  for p in e_model.parameters()])
    for eager, scripted_grad in zip(*grads):
        np.testing.assert_allclose(scripted_grad, eager, rtol=1e-6, atol=1e-7)
    # and eager equals torch's
    _, t_model = pair("loop")
    tx = torch.tensor(x, requires_grad=True)
    (t_model(tx, torch.tensor([1.0, 1.0])) ** 2).sum().backward()
    np.testing.assert_allclose(grads[0][0], tx.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_parameters_and_modes_are_shared_with_the_module():
    e_model, _ = pair("stack")
    scripted = ember.jit.script(e_model)
    assert list(scripted.state_dict()) == list(e_model.state_dict())
    x = ember.tensor(RNG.standard_normal((2, 3, 4, 4)).astype(np.float32))
    scripted.eval()
    e_model.eval()
    before = scripted(x)
    with ember.no_grad():
        e_model[5].bias.add_(1.0)  # the scripted module reads the same tensor
    assert_same(scripted(x), torch.tensor(e_model(x).detach().numpy()))
    assert not np.allclose(before.detach().numpy(), scripted(x).detach().numpy())


LOADER = """
import json, sys
import ember
model = ember.jit.load(sys.argv[1])
inputs = ember.load(sys.argv[2])
out = {"forward": model(inputs["x"]).tolist(), "with_y": model(inputs["x"], inputs["y"]).tolist(),
       "double": model.double(inputs["x"], 3).tolist(),
       "loop": ember.jit.load(sys.argv[3])(inputs["x"], inputs["steps"]).tolist(),
       "classes_absent": "test_script_module" not in sys.modules}
print(json.dumps(out))
"""


def test_save_and_load_in_a_fresh_process_without_the_classes(tmp_path):
    e_model, t_model = pair("methods")
    e_model.eval()
    t_model.eval()
    scripted = ember.jit.script(e_model)
    scripted.save(tmp_path / "methods.pt")
    e_loop, t_loop = pair("loop")
    ember.jit.save(ember.jit.script(e_loop), tmp_path / "loop.pt")
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    y = RNG.standard_normal(2).astype(np.float32)
    steps = np.array([1.0, 2.0], np.float32)
    ember.save({"x": ember.tensor(x), "y": ember.tensor(y), "steps": ember.tensor(steps)},
               tmp_path / "inputs.pt")
    (tmp_path / "loader.py").write_text(LOADER)
    done = subprocess.run([sys.executable, "loader.py", "methods.pt", "inputs.pt", "loop.pt"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["classes_absent"]
    t_scripted, t_loop_s = torch.jit.script(t_model), torch.jit.script(t_loop)
    tx, ty = torch.tensor(x), torch.tensor(y)
    for got, want in ((out["forward"], t_scripted(tx)), (out["with_y"], t_scripted(tx, ty)),
                      (out["double"], t_scripted.double(tx, 3)),
                      (out["loop"], t_loop_s(tx, torch.tensor(steps)))):
        np.testing.assert_allclose(np.array(got), want.detach().numpy(), rtol=1e-5, atol=1e-5)


def test_saving_a_module_that_calls_python_is_refused_as_torch(tmp_path):
    e_model, t_model = pair("ignored")
    with pytest.raises(RuntimeError, match="Could not export Python function call 'in_python'"):
        torch.jit.script(t_model).save(str(tmp_path / "t.pt"))
    with pytest.raises(RuntimeError, match="Could not export Python function call 'in_python'"):
        ember.jit.script(e_model).save(tmp_path / "e.pt")


BAD_METHODS = {
    "lambda": ("def forward(self, x):\n    return (lambda y: y)(x)\n", "UnsupportedNodeError"),
    "varargs": ("def forward(self, x, *args):\n    return x\n", "NotSupportedError"),
    "try": ("def forward(self, x):\n    try:\n        return x\n    except Exception:\n"
            "        return x\n", "UnsupportedNodeError"),
    "global": ("def forward(self, x):\n    global g\n    return x\n", "UnsupportedNodeError"),
    "missing attribute": ("def forward(self, x):\n    return self.nothere(x)\n", "RuntimeError"),
}


@pytest.mark.parametrize("case", sorted(BAD_METHODS))
def test_code_outside_the_subset_raises_torchs_exception_types(case, tmp_path):
    source, kind = BAD_METHODS[case]
    for lib_name in ("torch", "ember"):
        path = tmp_path / f"{lib_name}_{case.replace(' ', '_')}.py"
        path.write_text(f"import {lib_name} as lib\nclass M(lib.nn.Module):\n"
                        + textwrap.indent(source, "    "))
        import importlib.util

        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        lib = {"torch": torch, "ember": ember}[lib_name]
        expected = RuntimeError if kind == "RuntimeError" else getattr(lib.jit.frontend, kind)
        with pytest.raises(expected) as error:
            lib.jit.script(module.M())
        if kind == "RuntimeError":
            assert "has no attribute 'nothere'" in str(error.value)


def test_loaded_module_keeps_state_modes_and_types_and_refuses_python(tmp_path):
    e_model, t_model = pair("stack")
    scripted = ember.jit.script(e_model)
    scripted.save(tmp_path / "stack.pt")
    loaded = ember.jit.load(tmp_path / "stack.pt")
    assert list(loaded.state_dict()) == list(t_model.state_dict())
    x = RNG.standard_normal((2, 3, 4, 4)).astype(np.float32)
    (ex,), (tx,) = both(x)
    for training in (False, True):  # the batch norm follows loaded.train()/eval() as torch's
        loaded.train(training)
        t_model.train(training)
        assert_same(loaded(ex), t_model(tx), rtol=1e-4, atol=1e-5)
    typed = ember.jit.script(pair("typed")[0])
    assert "%sizes : List[int]" in str(typed.graph) and "%flag : bool" in str(typed.graph)
    # a file whose graph was edited to call Python (or any function outside ember's
    # namespaces) is refused when loading, before anything runs
    with zipfile.ZipFile(tmp_path / "stack.pt") as z:
        entries = {name: z.read(name) for name in z.namelist()}
    call = 'prim::CallMethod[name=\\"forward\\"]'
    for old, bad in ((call, "python:os.system"), (call, "builtins.eval"),
                     (call, 'prim::CallMethod[name=\\"_apply\\"]'),
                     ("ember.nn.modules.container:Sequential", "os:system")):
        graph = entries["graph.json"].decode()
        assert old in graph
        graph = graph.replace(old, bad)
        with zipfile.ZipFile(tmp_path / "bad.pt", "w") as z:
            for name, data in entries.items():
                z.writestr(name, graph if name == "graph.json" else data)
        with pytest.raises(RuntimeError, match="refusing"):
            ember.jit.load(tmp_path / "bad.pt")
