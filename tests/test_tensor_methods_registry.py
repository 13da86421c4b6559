"""Tensor's methods come from one visible mechanism (issue 12).

Every attribute of ``ember.Tensor`` is either written in ``_tensor.py``'s class body or was
installed by :func:`ember.ops._methods.tensor_method` next to its operator and recorded in
``METHODS``; ``METHODS[name].__module__`` is the module whose source defines it, and
``Tensor.<name>`` is that function (or ember.overrides' wrapper of it). torch.Tensor's public
names are the yardstick for completeness.
"""

import ast
import inspect
import pathlib
import pickle
import sys

import pytest
import torch

import ember
from ember import _tensor
from ember.ops._methods import METHODS, tensor_method

Tensor = ember.Tensor

# what Python itself puts in a class's namespace
_PYTHON_MADE = {"__module__", "__qualname__", "__doc__", "__dict__", "__weakref__",
                "__firstlineno__", "__static_attributes__", "__annotations__", "__slots__"}


def _class_body_names():
    """The names ``_tensor.py``'s ``class Tensor:`` statement binds (read from its source)."""
    tree = ast.parse(inspect.getsource(_tensor))
    body = next(node for node in tree.body
                if isinstance(node, ast.ClassDef) and node.name == "Tensor").body
    names = set()
    for statement in body:
        if isinstance(statement, (ast.FunctionDef, ast.ClassDef)):
            names.add(statement.name)
        elif isinstance(statement, ast.Assign):
            names.update(t.id for t in statement.targets if isinstance(t, ast.Name))
    return names


CLASS_BODY = _class_body_names()
SLOTS = set(vars(Tensor)["__slots__"])


def _recorded_as(value, function):
    """Whether the class attribute ``value`` is ``function`` as tensor_method recorded it,
    possibly inside ember.overrides' ``__torch_function__`` wrapper."""
    if isinstance(value, property):
        value = value.fget
    elif isinstance(value, classmethod):
        value = value.__func__
    return value is function or getattr(value, "__torch_function_implementation__",
                                        None) is function


def test_every_tensor_attribute_comes_from_the_class_body_or_tensor_method():
    installed = set(vars(Tensor)) - _PYTHON_MADE - SLOTS
    stray = sorted(name for name in installed if name not in CLASS_BODY and name not in METHODS)
    assert not stray, f"Tensor attributes set outside tensor_method and _tensor.py: {stray}"
    both = sorted(CLASS_BODY & set(METHODS))
    assert not both, f"defined in the class body and installed again: {both}"


def test_no_one_replaced_a_recorded_method_behind_the_registry():
    replaced = [name for name, function in METHODS.items()
                if not _recorded_as(vars(Tensor)[name], function)]
    assert not replaced, f"Tensor attributes changed after tensor_method recorded them: {replaced}"


def test_every_public_name_of_torch_tensor_is_found_in_one_step():
    torch_names = {name for name in dir(torch.Tensor)
                   if not name.startswith("_") or (name.startswith("__") and
                                                   name in vars(torch._C.TensorBase))}
    missing = sorted(name for name in torch_names if not hasattr(Tensor, name))
    assert not missing, f"torch.Tensor attributes ember lacks: {missing}"
    for name in sorted(torch_names - _PYTHON_MADE):
        if name in vars(Tensor):
            assert name in CLASS_BODY or name in METHODS, name


def _declared_in(module, function):
    """Whether ``module`` binds ``function`` at its top level (``logical_not = unary(...)``:
    the pointwise declarations build their functions in ``_declare.py``)."""
    return any(value is function or getattr(value, "__torch_function_implementation__",
                                            None) is function for value in vars(module).values())


def test_the_recorded_module_is_the_one_whose_source_defines_it():
    wrong = []
    for name, function in METHODS.items():
        module = sys.modules[function.__module__]
        source = inspect.unwrap(function)  # a typed signature's stub wraps the written function
        code = getattr(source, "__code__", None)
        written_there = code is not None and code.co_filename == module.__file__
        if not (written_there or _declared_in(module, function)):
            wrong.append((name, function.__module__, code and code.co_filename))
    assert not wrong, wrong


@pytest.mark.parametrize("name, module", [
    ("add", "ember.ops.pointwise.arithmetic"), ("sum", "ember.ops.reduce.sums"),
    ("view", "ember.ops.shape.views"), ("uniform_", "ember.ops._random_inplace"),
    ("T", "ember.ops.shape.views"), ("copy_", "ember.ops._copies")])
def test_one_step_from_a_method_to_its_file(name, module):
    assert METHODS[name].__module__ == module
    value = getattr(Tensor, name) if name != "T" else vars(Tensor)["T"].fget
    assert inspect.unwrap(value) is inspect.unwrap(METHODS[name])


def test_methods_pickle_by_reference_as_torch_methods_do():
    # torch.Tensor.add pickles; so must every ember method function (found through its module)
    assert pickle.loads(pickle.dumps(torch.Tensor.add)) is torch.Tensor.add
    refused = []
    for name in sorted(METHODS):
        value = vars(Tensor)[name]
        if not inspect.isfunction(value):
            continue
        try:
            if pickle.loads(pickle.dumps(value)) is not value:
                refused.append(name)
        except (pickle.PicklingError, AttributeError, TypeError):
            refused.append(name)
    assert not refused, refused


def test_tensor_method_installs_and_records_a_new_method():
    def _twice_for_test(self):
        return self * 2

    try:
        assert tensor_method(_twice_for_test, "_twice_for_test") is _twice_for_test
        x = ember.tensor([1.0, 2.0])
        assert x._twice_for_test().tolist() == (torch.tensor([1.0, 2.0]) * 2).tolist()
        assert METHODS["_twice_for_test"] is _twice_for_test

        @tensor_method("_halved_for_test")
        def _halved(self):
            return self / 2

        assert x._halved_for_test().tolist() == (torch.tensor([1.0, 2.0]) / 2).tolist()
        tensor_method(property(_halved), "_half_for_test")
        assert x._half_for_test.tolist() == [0.5, 1.0]
        assert METHODS["_half_for_test"] is _halved
    finally:
        for name in ("_twice_for_test", "_halved_for_test", "_half_for_test"):
            METHODS.pop(name, None)
            if name in vars(Tensor):
                delattr(Tensor, name)


def test_python_2_spellings_and_item_deletion_as_torch():
    results = {}
    for name in ("ember", "torch"):
        module = ember if name == "ember" else torch
        x = module.tensor([1.0, 2.0])
        y = x.clone()
        y.__idiv__(2)
        with pytest.raises(TypeError) as deleting:
            del x[0]
        results[name] = (x.__div__(2).tolist(), y.tolist(), module.tensor(3.7).__long__(),
                         module.tensor(0.0).__nonzero__(), str(deleting.value))
    assert results["ember"] == results["torch"]


def test_a_method_declared_over_a_typed_signature_is_the_checked_public_function():
    # ``@tensor_method`` above ``@signature(...)``: Tensor.<name> runs the argument checks, and
    # METHODS records the function the module exports, never the body the checker wraps
    wrapped_inner = []
    for name, function in METHODS.items():
        layer = vars(sys.modules[function.__module__]).get(getattr(function, "__name__", ""))
        while layer is not None and layer is not function:  # the module's layers, outside in
            if "__ember_signature__" in vars(layer) and layer.__wrapped__ is function:
                wrapped_inner.append(name)
            layer = getattr(layer, "__wrapped__", None)
    assert not wrapped_inner, wrapped_inner
    with pytest.raises(TypeError) as method_error:
        ember.ones(2).cumsum("0")
    with pytest.raises(TypeError) as torch_error:
        torch.ones(2).cumsum("0")
    assert str(method_error.value) == str(torch_error.value)


_INSTALLERS = {"tensor_method", "_tensor_method"}


def _is_str(node):
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _name_variables(loop):
    """The loop variables of ``loop`` that hold names, and whether the loop runs over a literal
    table of name strings: ``for n in ("sum", "mean")`` gives ``{"n"}, True``; in ``for n, f in
    (("abs", abs), ...)`` only ``n`` holds a name; a loop over anything else (``NAMES``,
    ``table.items()``) may hold names in any of its variables."""
    targets = [loop.target] if isinstance(loop.target, ast.Name) else list(
        getattr(loop.target, "elts", []))
    every = {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)}
    rows = getattr(loop.iter, "elts", None)
    if not isinstance(loop.iter, (ast.Tuple, ast.List, ast.Set)) or not rows:
        return every, False
    if isinstance(loop.target, ast.Name):
        return ({loop.target.id}, True) if all(map(_is_str, rows)) else (set(), False)
    names = {target.id for i, target in enumerate(targets) if isinstance(target, ast.Name)
             and all(isinstance(row, ast.Tuple) and len(row.elts) > i and _is_str(row.elts[i])
                     for row in rows)}
    return names, bool(names)


def _looked_up_by_name(argument, names, over_strings):
    """Whether ``argument`` finds a function from one of the loop variables ``names``:
    ``getattr(module, name)``, ``namespace[name]``, or (looping over name strings) any call
    given the name, such as ``_public(name)``."""
    for node in ast.walk(argument):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id == "getattr" and len(node.args) > 1
                and isinstance(node.args[1], ast.Name) and node.args[1].id in names):
            return True
        if (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Name)
                and node.slice.id in names):
            return True
        if over_strings and isinstance(node, ast.Call) and any(
                isinstance(a, ast.Name) and a.id in names for a in node.args):
            return True
    return False


def _tables_of_method_names(source):
    """The line numbers of ``tensor_method`` calls inside a loop that looks up the installed
    function by a name string (the op-name tables issue 12 removed)."""
    found = []
    for loop in ast.walk(ast.parse(source)):
        if not isinstance(loop, ast.For):
            continue
        names, over_strings = _name_variables(loop)
        for node in ast.walk(loop):
            if (isinstance(node, ast.Call) and node.args
                    and getattr(node.func, "id", getattr(node.func, "attr", None)) in _INSTALLERS
                    and _looked_up_by_name(node.args[0], names, over_strings)):
                found.append(node.lineno)
    return found


def test_the_table_detector_finds_each_form_of_name_table():
    tables = [
        'for _name in ("sum", "mean"):\n    tensor_method(_public(_name), _name)\n',
        'for name in NAMES:\n    tensor_method(getattr(module, name), name)\n',
        'for _n, _u in (("add_", "add"),):\n    tensor_method(wrap(_u, getattr(T, _n)), _n)\n',
        'def f():\n    for name in names:\n        _tensor_method(globals()[name], name)\n']
    assert [_tables_of_method_names(source) for source in tables] == [[2], [2], [2], [3]]
    declarations = [
        '@tensor_method\ndef sum(input):\n    pass\n',
        'for name, why in STUBS.items():\n    tensor_method(_stub(name, why), name)\n',
        'for _fn in (a, b):\n    tensor_method(_fn, _fn.__name__)\n',
        'for _n, _fn in (("add", add),):\n    tensor_method(operator(_fn, f"__{_n}__"), _n)\n']
    assert [_tables_of_method_names(source) for source in declarations] == [[], [], [], []]


def test_no_module_installs_tensor_methods_from_a_table_of_names():
    # each method is declared at its function (``@tensor_method``); a loop over op names
    # that looks each function up again is the table this test keeps from coming back
    root = pathlib.Path(ember.__file__).parent
    tables = {str(path.relative_to(root)): lines for path in sorted(root.rglob("*.py"))
              if (lines := _tables_of_method_names(path.read_text(encoding="utf-8")))}
    assert not tables, tables
