"""Graph breaks in ember.compile, against eager ember and torch.compile: a module whose own
code cannot be captured runs that code eagerly and compiles each submodule it calls; results
and gradients equal eager's; fullgraph errors, explain and the graph_breaks log."""

import logging

import numpy as np
import pytest
import torch
import torch._dynamo

import ember
from conftest import assert_same as _assert_same
from conftest import to_torch

pytestmark = pytest.mark.usefixtures("fresh_compile_state")

counters = ember._dynamo.utils.counters


def assert_same(actual, expected):
    if isinstance(expected, ember.Tensor):
        expected = to_torch(expected)
    _assert_same(actual, expected)


class EmberDouble(ember.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


class TorchDouble(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


def _net(lib, kind):
    """Two blocks with ``kind`` of code between them, written in ``forward`` itself (a
    break inside a helper function makes torch split its caller further)."""
    nn = lib.nn
    double = EmberDouble if lib is ember else TorchDouble

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Sequential(nn.Linear(6, 12), nn.GELU(), nn.Linear(12, 6))
            self.b = nn.Sequential(nn.Linear(6, 12), nn.Tanh(), nn.Linear(12, 3))

        def forward(self, x):
            h = self.a(x)
            if kind == "if":
                if h.sum() > 0:
                    h = h * 2
                else:
                    h = -h
            elif kind == "item":
                h = h * h.mean().item()
            elif kind == "print":
                print("between the blocks")
                h = h + 1
            else:  # a custom autograd.Function: captured, as torch does
                h = double.apply(h)
            return self.b(h)
    return Net()


def _pair(make, seed=0):
    """``make(ember)`` and ``make(torch)`` with the same weights."""
    e_model, t_model = make(ember), make(torch)
    rng = np.random.default_rng(seed)
    state = {name: rng.standard_normal(tuple(value.shape)).astype(np.float32) * 0.5
             for name, value in e_model.state_dict().items()}
    e_model.load_state_dict({k: ember.tensor(v) for k, v in state.items()})
    t_model.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()})
    return e_model, t_model


def _inputs(calls=4):
    rng = np.random.default_rng(1)
    return [rng.standard_normal((5, 6)).astype(np.float32) * (1 if i % 2 else -1)
            for i in range(calls)]


def _gradients(model, x, result):
    result.sum().backward()
    grads = [x.grad] + [p.grad for p in model.parameters()]
    model.zero_grad()
    return grads


@pytest.mark.parametrize("kind", ["if", "item", "print", "function"])
def test_modules_around_a_break_match_eager_and_torch_with_gradients(kind, capsys):
    e_model, t_model = _pair(lambda lib: _net(lib, kind))
    compiled = ember.compile(e_model)
    t_compiled = torch.compile(t_model, backend="eager")
    for array in _inputs():
        x, ex, tx = (ember.tensor(array, requires_grad=True),
                     ember.tensor(array, requires_grad=True),
                     torch.tensor(array, requires_grad=True))
        got, eager, expected = compiled(x), e_model(ex), t_compiled(tx)
        assert_same(got, eager)
        assert_same(got, expected)
        for g, e, t in zip(_gradients(e_model, x, got), _gradients(e_model, ex, eager),
                           _gradients(t_model, tx, expected)):
            assert_same(g, e)
            assert_same(g, t)
    if kind == "function":
        assert counters["stats"]["unique_graphs"] == 1 and not counters["graph_break"]
    else:
        # one break in Net.forward; a and b compiled on their own, one graph each
        assert sum(counters["graph_break"].values()) == 1
        assert counters["stats"]["unique_graphs"] == 2
    if kind == "print":
        # once per call: ember compiled, ember eager and torch compiled, 4 calls each
        assert capsys.readouterr().out == "between the blocks\n" * 12


@pytest.mark.parametrize("kind", ["if", "item", "print", "function"])
def test_explain_counts_as_torch(kind, capsys):
    e_model, t_model = _pair(lambda lib: _net(lib, kind))
    array = _inputs(1)[0]
    ours = ember._dynamo.explain(e_model)(ember.tensor(array))
    theirs = torch._dynamo.explain(t_model)(torch.tensor(array))
    assert (ours.graph_count, ours.graph_break_count) == \
        (theirs.graph_count, theirs.graph_break_count)


@pytest.mark.parametrize("kind", ["if", "print"])
def test_fullgraph_raises_torchs_error_naming_the_line(kind, capsys):
    e_model, t_model = _pair(lambda lib: _net(lib, kind))
    array = _inputs(1)[0]
    with pytest.raises(torch._dynamo.exc.Unsupported):
        torch.compile(t_model, backend="eager", fullgraph=True)(torch.tensor(array))
    with pytest.raises(ember._dynamo.exc.Unsupported) as error:
        ember.compile(e_model, fullgraph=True)(ember.tensor(array))
    line = "if h.sum() > 0:" if kind == "if" else 'print("between the blocks")'
    assert __file__ in str(error.value) and line in str(error.value)


def test_training_steps_through_a_broken_forward_match_torch():
    e_model, t_model = _pair(lambda lib: _net(lib, "item"))
    compiled = ember.compile(e_model)
    e_opt = ember.optim.SGD(e_model.parameters(), lr=0.1, momentum=0.9)
    t_opt = torch.optim.SGD(t_model.parameters(), lr=0.1, momentum=0.9)
    for array in _inputs(5):
        e_loss = compiled(ember.tensor(array)).square().mean()
        t_loss = t_model(torch.tensor(array)).square().mean()
        assert_same(e_loss, t_loss)
        for loss, opt in ((e_loss, e_opt), (t_loss, t_opt)):
            opt.zero_grad()
            loss.backward()
            opt.step()
    for e, t in zip(e_model.parameters(), t_model.parameters()):
        assert_same(e, t.detach())
    assert counters["stats"]["unique_graphs"] == 2  # the optimiser's updates are read live


def test_fullgraph_accepts_a_custom_function_as_torch_does():
    e_model, t_model = _pair(lambda lib: _net(lib, "function"))
    array = _inputs(1)[0]
    expected = torch.compile(t_model, backend="eager", fullgraph=True)(torch.tensor(array))
    assert_same(ember.compile(e_model, fullgraph=True)(ember.tensor(array)), expected)


def test_a_submodule_that_breaks_compiles_its_own_children():
    def make(lib):
        nn = lib.nn

        class Inner(nn.Module):
            def __init__(self):
                super().__init__()
                self.left = nn.Sequential(nn.Linear(4, 4), nn.Sigmoid())
                self.right = nn.Sequential(nn.Linear(4, 4), nn.ReLU())

            def forward(self, x):
                h = self.left(x)
                return self.right(h) if h.mean() > 0.5 else self.right(-h)

        class Outer(nn.Module):
            def __init__(self):
                super().__init__()
                self.inner = Inner()
                self.head = nn.Sequential(nn.Linear(4, 2), nn.Softplus())

            def forward(self, x):
                h = self.inner(x)
                if h.abs().max() > 0.75:
                    h = h / 2
                return self.head(h)
        return Outer()

    e_model, t_model = _pair(make)
    compiled = ember.compile(e_model)
    t_compiled = torch.compile(t_model, backend="eager")
    for array in _inputs(5):
        array = array[:, :4]
        x, tx = ember.tensor(array, requires_grad=True), torch.tensor(array, requires_grad=True)
        got, expected = compiled(x), t_compiled(tx)
        assert_same(got, expected)
        for g, t in zip(_gradients(e_model, x, got), _gradients(t_model, tx, expected)):
            assert_same(g, t)
    # Outer's capture meets both branches; Inner's own capture its branch; the statements
    # after Outer's first cut meet Outer's branch. Graphs: Inner's statement before its
    # branch (left), right (called by the branch) and Outer's last statement (head)
    assert sum(counters["graph_break"].values()) == 4
    assert counters["stats"]["unique_graphs"] == 3


def test_blocks_in_a_module_list_are_compiled_one_by_one():
    def make(lib):
        nn = lib.nn

        class Stack(nn.Module):
            def __init__(self):
                super().__init__()
                self.blocks = nn.ModuleList(
                    [nn.Sequential(nn.Linear(6, 6), nn.LayerNorm(6), nn.GELU())
                     for _ in range(3)])

            def forward(self, x):
                for block in self.blocks:
                    x = block(x)
                    if x.std() > 10:  # a data-dependent early exit
                        break
                return x
        return Stack()

    e_model, t_model = _pair(make)
    compiled = ember.compile(e_model)
    for array in _inputs(3):
        assert_same(compiled(ember.tensor(array)), t_model(torch.tensor(array)))
    from ember._inductor.breaks import routed_modules

    assert routed_modules(compiled._compiled) == list(e_model.blocks)
    assert all("forward" not in block.__dict__ for block in e_model.blocks)  # put back


def test_a_function_that_breaks_compiles_the_modules_it_calls():
    e_model, t_model = _pair(lambda lib: lib.nn.Sequential(
        lib.nn.Linear(6, 6), lib.nn.Tanh(), lib.nn.Linear(6, 1)))

    def make_step(model):
        def step(x):
            y = model(x)
            if y.mean() > 0:
                return y.exp()
            return y * 3
        return step

    compiled = ember.compile(make_step(e_model))
    t_compiled = torch.compile(make_step(t_model), backend="eager")
    for array in _inputs():
        assert_same(compiled(ember.tensor(array)), t_compiled(torch.tensor(array)))
    assert sum(counters["graph_break"].values()) == 1
    assert counters["stats"]["unique_graphs"] == 1  # the model's graph
    before = counters["stats"]["unique_graphs"]
    e_model(ember.ones(1, 6))  # outside the compiled function: eager
    assert counters["stats"]["unique_graphs"] == before


def test_single_operator_submodules_stay_eager():
    runs = []

    def counting_backend(graph_module, example_inputs):
        def run(*args):
            runs.append(graph_module)
            return graph_module(*args)
        return run

    class Net(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.act = ember.nn.ReLU()
            self.mlp = ember.nn.Sequential(ember.nn.Linear(3, 3), ember.nn.Tanh())

        def forward(self, x):
            h = self.act(x)
            if h.sum() > 0:
                h = h + 1
            return self.mlp(h)

    model = Net()
    compiled = ember.compile(model, backend=counting_backend)
    x = ember.ones(2, 3)
    for _ in range(6):
        assert_same(compiled(x), model(x))
    # call 1 captures Net (a break); call 2 captures act and mlp; calls 3-6 run act eagerly
    # (one operator: the guard check would cost more than it saves) and mlp's graph on
    # calls 3 and 5 (the trial times mlp's compiled and plain forward alternately)
    assert len(runs) == 2 and all(r is runs[0] for r in runs)


def test_module_compile_in_place_routes_children_too():
    e_model, t_model = _pair(lambda lib: _net(lib, "if"))
    expected = [t_model(torch.tensor(a)) for a in _inputs()]
    e_model.compile()
    for array, want in zip(_inputs(), expected):
        assert_same(e_model(ember.tensor(array)), want)
    assert counters["stats"]["unique_graphs"] == 2


def test_graph_breaks_log_names_the_line_what_was_captured_and_the_pieces(monkeypatch,
                                                                            caplog):
    monkeypatch.setenv("EMBER_LOGS", "graph_breaks,recompiles")
    e_model, _ = _pair(lambda lib: _net(lib, "if"))
    with caplog.at_level(logging.INFO, logger="ember._dynamo"):
        ember.compile(e_model)(ember.ones(2, 6))
    text = caplog.text
    assert "Graph break in Net.forward" in text and __file__ in text
    assert "if h.sum() > 0:" in text
    assert "captured before the break:" in text and "gelu" in text
    assert "each submodule it calls compiled on its own (a, b)" in text


# ---------------------------------------------------------------- cutting a function


def _print_between(x):
    y = x.sin() * 2
    print("between")
    return y.cos() + 1


def _early_return(x, scale=2.0):
    y = x.sin()
    if y.sum() > 0:
        return y.exp()
    z = y * scale
    return z.tanh()


def _float_into_the_rest(x):
    y = x.exp()
    scale = float(y.max())   # a value read into Python: the rest gets a new float each call
    return (y / scale).sin()


@pytest.mark.parametrize("fn", [_print_between, _early_return, _float_into_the_rest])
def test_a_function_is_cut_at_its_break_and_matches_torch(fn, capsys):
    compiled = ember.compile(fn)
    t_compiled = torch.compile(fn, backend="eager")
    for array in _inputs(6):
        x, tx = ember.tensor(array, requires_grad=True), torch.tensor(array, requires_grad=True)
        got, expected = compiled(x), t_compiled(tx)
        assert_same(got, expected)
        got.sum().backward()
        expected.sum().backward()
        assert_same(x.grad, tx.grad)
    assert counters["stats"]["unique_graphs"] >= 1  # the statements before the break
    # a piece whose Python values change per call stops recompiling after its second graph
    assert counters["stats"]["unique_graphs"] <= 4


def test_explain_of_a_cut_function_counts_as_torch(capsys):
    x = _inputs(1)[0]
    ours = ember._dynamo.explain(_print_between)(ember.tensor(x))
    theirs = torch._dynamo.explain(_print_between)(torch.tensor(x))
    assert (ours.graph_count, ours.graph_break_count) == (2, 1) == \
        (theirs.graph_count, theirs.graph_break_count)


def test_a_training_step_compiles_its_forward_and_runs_its_effects_eagerly():
    e_model, t_model = _pair(lambda lib: lib.nn.Sequential(
        lib.nn.Linear(6, 12), lib.nn.GELU(), lib.nn.Linear(12, 1)))

    def train_step(model, optimizer, x):
        optimizer.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        optimizer.step()
        return loss

    compiled = ember.compile(train_step)
    e_opt = ember.optim.Adam(e_model.parameters(), lr=0.01)
    t_opt = torch.optim.Adam(t_model.parameters(), lr=0.01)
    for array in _inputs(5):
        assert_same(compiled(e_model, e_opt, ember.tensor(array)),
                    train_step(t_model, t_opt, torch.tensor(array)))
    for e, t in zip(e_model.parameters(), t_model.parameters()):
        assert_same(e, t.detach())
    # zero_grad, backward and step read or write gradients: each breaks and runs eagerly;
    # the forward between them is a graph
    assert counters["stats"]["unique_graphs"] >= 1
    assert any(".grad" in reason for reason in counters["graph_break"])


def test_functions_without_source_stay_whole():
    namespace = {}
    exec("def f(x):\n    y = x * 2\n    print('no source')\n    return y + 1", namespace)
    compiled = ember.compile(namespace["f"])
    for _ in range(3):
        assert compiled(ember.ones(1)).tolist() == [3.0]
    assert counters["stats"]["unique_graphs"] == 0


_LOG = []


class _Keeping(ember.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = ember.nn.Linear(3, 3)
        self.history = []

    def forward(self, x):
        h = self.fc(x).relu()
        self.history.append(h.detach())   # Python effects before the break
        _LOG.append(len(self.history))
        if h.sum() > 0:
            h = h * 2
        return h.exp()


def test_appends_to_lists_are_not_lost_in_a_compiled_piece():
    model = _Keeping()
    compiled = ember.compile(model)
    _LOG.clear()
    for _ in range(4):
        assert_same(compiled(ember.ones(2, 3)), model.forward.__func__(model, ember.ones(2, 3)))
    assert len(model.history) == 8 and _LOG == list(range(1, 9))  # every call appended
    assert any("list, dict or set" in reason for reason in counters["graph_break"])


def test_docstring_examples_of_the_break_modules_run(capsys):
    import doctest
    import importlib

    for name in ("ember._inductor.breaks", "ember._inductor.split", "ember._inductor.capture",
                 "ember._inductor.guards", "ember._dynamo"):
        module = importlib.import_module(name)
        finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner(
            optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
        for test in finder.find(module, globs={"ember": ember, **vars(module)}):
            runner.run(test)
        results = runner.summarize(verbose=False)
        assert results.attempted > 0 and results.failed == 0, name


class _Private(ember.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = ember.nn.Linear(3, 3)
        self.__scale = 2.0  # a private name: mangled inside the class only

    def forward(self, x):
        h = self.fc(x) * self.__scale
        if h.sum() > 0:
            h = h + 1
        return h.exp()


def test_methods_with_private_names_are_left_whole():
    model = _Private()
    compiled = ember.compile(model)
    for sign in (1, -1, 1):
        x = ember.ones(2, 3) * sign
        assert_same(compiled(x), model(x))
    from ember._inductor.split import split_at

    assert split_at(_Private.forward, _Private.forward.__code__.co_firstlineno + 2) is None
    assert counters["stats"]["unique_graphs"] == 1  # fc, compiled on its own
