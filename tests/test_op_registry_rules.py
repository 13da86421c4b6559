"""Every registered operator owns each of its rules, or says why it has none (issue 12).

The rules are a reverse-mode derivative, a forward-mode rule (``jvp``), a vmap batching
rule and an ONNX form. Each is given next to the op, follows from the op's kind, or is declined with a reason
(``op.opt_out(rule, reason)``). These tests walk the registry and name every offender, then
check against torch that the rules derived from a kind compute what the named rules did.
"""

import importlib

import numpy as np
import pytest
import torch

import ember
import ember.autograd.forward_ad as fwAD
from ember.func import _batching_rules
from ember.ops._registry import KINDS, RULES, Op, registry

# the modules that define ops but are not imported by ``import ember``
for _module in ("ember.autograd.views", "ember.distributions._ops",
                "ember.nn.modules._backward_hooks", "ember.onnx.ops"):
    importlib.import_module(_module)


def _all_ops():
    return [op for ops in registry.values() for op in ops]


def _has_jvp(op):
    """Explicit, derived from the kind, or what ``forward_ad.propagate`` falls back to: the
    view rule (a view) or the transposed derivative (any differentiable op)."""
    return (op.jvp is not None or fwAD.derived_rule(op) is not None or op.view
            or op.derivative is not None or "derivative" in op.opt_outs)


def test_every_op_has_a_derivative_or_says_why_not():
    offenders = sorted(op.name for op in _all_ops()
                       if op.derivative is None and "derivative" not in op.opt_outs)
    assert offenders == [], f"ops without a derivative or opt_out('derivative', why): {offenders}"


def test_every_op_has_a_forward_rule_or_says_why_not():
    offenders = sorted(op.name for op in _all_ops()
                       if not _has_jvp(op) and "jvp" not in op.opt_outs)
    assert offenders == [], f"ops without a jvp or opt_out('jvp', why): {offenders}"


def test_every_op_has_a_batching_rule_or_says_why_not():
    offenders = sorted(op.name for op in _all_ops()
                       if _batching_rules.rule_for(op) is None and "batch" not in op.opt_outs)
    assert offenders == [], f"ops without a batching rule or opt_out('batch', why): {offenders}"


def test_opt_outs_give_a_reason_and_kinds_are_known():
    for op in _all_ops():
        assert op.kind in KINDS, op
        for rule, reason in op.opt_outs.items():
            assert rule in RULES and isinstance(reason, str) and len(reason) > 10, (op, rule)


def test_an_opt_out_names_a_known_rule():
    op = Op("scratch", lambda xp, a: a, register=False)
    with pytest.raises(ValueError, match="unknown rule 'vmap'"):
        op.opt_out("vmap", "a misspelt rule")
    with pytest.raises(ValueError, match="unknown kind"):
        Op("scratch", lambda xp, a: a, kind="elementwise", register=False)


def test_defjvp_and_defbatch_attach_to_the_op():
    op = Op("scratch", lambda xp, a: a * 2, kind="pointwise-unary", register=False)

    @op.defjvp
    def rule(p, t, y):
        return t[0] * 2

    @op.defbatch
    def batch(xp, step, arrays, batched, batch_size):
        return arrays[0] * 2

    assert op.jvp is rule and op.batch is batch and op.pointwise
    assert _batching_rules.rule_for(op) is batch


def test_every_op_has_an_onnx_form_or_says_why_not():
    """The ONNX export reads ``op.onnx`` (``Op.defonnx``, next to the op); an op without one
    declines it with a reason, and none does both."""
    offenders = sorted(op.name for op in _all_ops()
                       if op.onnx is None and "onnx" not in op.opt_outs)
    assert offenders == [], f"ops without an ONNX form or opt_out('onnx', why): {offenders}"
    both = sorted(op.name for op in _all_ops() if op.onnx is not None and "onnx" in op.opt_outs)
    assert both == [], f"ops with an ONNX form that also decline it: {both}"


def test_an_onnx_form_named_by_a_string_is_an_onnx_operator():
    """``Op(..., onnx="Exp")`` names an operator of ONNX's default domain at opset 13, the
    exporter's lowest; other forms are mapping functions."""
    defs = pytest.importorskip("onnx").defs
    named = {op.name: op.onnx for op in _all_ops() if isinstance(op.onnx, str)}
    assert named, "no op declares its ONNX form by name"
    unknown = {name: form for name, form in named.items()
               if not defs.has(form) or defs.get_schema(form, 13).since_version > 13}
    assert unknown == {}
    assert all(callable(op.onnx) for op in _all_ops()
               if op.onnx is not None and not isinstance(op.onnx, str))


def test_op_takes_its_onnx_form_and_opt_outs_as_keywords():
    op = Op("scratch", lambda xp, a: a, onnx="Identity", register=False)
    assert op.onnx == "Identity" and op.opt_outs == {}
    declined = Op("scratch", lambda xp, a: a, opt_outs={"onnx": "a test op with no form"},
                  register=False)
    assert declined.onnx is None and declined.opt_outs == {"onnx": "a test op with no form"}
    with pytest.raises(ValueError, match="unknown rule 'export'"):
        Op("scratch", lambda xp, a: a, opt_outs={"export": "a misspelt rule"}, register=False)

    @op.defonnx
    def mapping(ctx, x):
        return x
    assert op.onnx is mapping


@pytest.mark.parametrize("name", ["atan2", "hypot", "logaddexp", "xlogy", "erf", "sinh"])
def test_a_pointwise_ops_derived_jvp_matches_torch(name):
    """The element-wise rule that pointwise ops get from their kind, against torch's jvp."""
    fn_e = getattr(ember, name, None) or getattr(ember.special, name)
    fn_t = getattr(torch, name, None) or getattr(torch.special, name)
    rng = np.random.default_rng(0)
    nargs = 1 if name in ("erf", "sinh") else 2
    primals = [rng.uniform(0.5, 2.0, (3, 4)) for _ in range(nargs)]
    tangents = [rng.standard_normal((3, 4)) for _ in range(nargs)]
    out_e = ember.func.jvp(fn_e, tuple(map(ember.tensor, primals)),
                           tuple(map(ember.tensor, tangents)))[1]
    out_t = torch.func.jvp(fn_t, tuple(map(torch.tensor, primals)),
                           tuple(map(torch.tensor, tangents)))[1]
    np.testing.assert_allclose(out_e.numpy(), out_t.numpy(), rtol=1e-12, atol=1e-12)


def test_a_holomorphic_ops_complex_tangent_matches_torch():
    x = np.array([0.3 + 0.4j, -1.2 + 0.7j])
    t = np.array([1.0 - 2.0j, 0.5 + 0.5j])
    out_e = ember.func.jvp(ember.sinh, (ember.tensor(x),), (ember.tensor(t),))[1]
    out_t = torch.func.jvp(torch.sinh, (torch.tensor(x),), (torch.tensor(t),))[1]
    np.testing.assert_allclose(out_e.numpy(), out_t.numpy(), rtol=1e-12)


def test_a_pointwise_op_is_batched_from_its_kind_as_torch():
    a, b = np.random.default_rng(1).standard_normal((2, 5, 3))
    out_e = ember.func.vmap(ember.hypot, in_dims=(0, None))(ember.tensor(a), ember.tensor(b[0]))
    out_t = torch.func.vmap(torch.hypot, in_dims=(0, None))(torch.tensor(a), torch.tensor(b[0]))
    np.testing.assert_allclose(out_e.numpy(), out_t.numpy(), rtol=1e-12)
    assert _batching_rules.rule_for(ember.hypot.op) is _batching_rules.pointwise


# ---------------------------------------------------------------- vmap rules live on the ops


def test_a_batching_rule_is_given_or_declined_never_both():
    both = sorted(op.name for op in _all_ops() if op.batch is not None and "batch" in op.opt_outs)
    assert both == [], f"ops with a batching rule that also decline one: {both}"


def test_every_rule_builder_serves_an_op():
    """Each rule of ``func/_batching_rules.py`` is some op's rule or a kind's (a builder no op
    uses would be dead code); :func:`guard` is the recorder's own step."""
    import inspect

    used = {_batching_rules.rule_for(op) for op in _all_ops()} - {None}
    builders = {fn for name, fn in vars(_batching_rules).items()
                if inspect.isfunction(fn) and not name.startswith("_")
                and fn.__module__ == _batching_rules.__name__
                and list(inspect.signature(fn).parameters)
                == ["xp", "step", "arrays", "batched", "batch_size"]}
    unused = sorted(fn.__name__ for fn in builders - used - {_batching_rules.guard})
    assert unused == [], f"batching rules no op uses: {unused}"


def test_a_deferred_rule_is_the_builder_it_names():
    from ember.ops import reduce
    from ember.ops._vmap_rules import DeferredRule, batching

    assert type(reduce.sum_op.batch) is DeferredRule
    assert _batching_rules.rule_for(reduce.sum_op) is _batching_rules.reduction
    with pytest.raises(AttributeError):
        batching.no_such_builder.resolve()


def _op_name_strings_in(tree, names):
    """Where a module's syntax tree uses an op name as data: an element of a tuple, list or set,
    a dict key, a comparison operand or a subscript key; and ``.name`` read anywhere but in an
    f-string (a message)."""
    import ast

    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}

    def is_name(node):
        return isinstance(node, ast.Constant) and isinstance(node.value, str) \
            and node.value in names

    found = []
    for node in ast.walk(tree):
        operands = []
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            operands = node.elts
        elif isinstance(node, ast.Dict):
            operands = [k for k in node.keys if k is not None]
        elif isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
        elif isinstance(node, ast.Subscript):
            operands = [node.slice]
        found += [f"line {o.lineno}: {o.value!r}" for o in operands if is_name(o)]
        if isinstance(node, ast.Attribute) and node.attr == "name" \
                and not isinstance(parents.get(node), ast.FormattedValue):
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


def test_vmap_finds_rules_on_the_op_never_by_its_name():
    """func/ (vmap's engine and rule builders) keeps no table of op names and looks nothing up
    by an op's name: the rule is ``op.batch`` or follows from ``op.kind``."""
    import ast
    import pathlib

    found = {}
    for path in sorted((pathlib.Path(ember.__file__).parent / "func").glob("*.py")):
        uses = _op_name_strings_in(ast.parse(path.read_text()), set(registry))
        if uses:
            found[path.name] = uses
    assert found == {}, f"op names used as data in ember/func: {found}"


def test_the_name_scan_finds_a_table_of_names():
    import ast

    table = ast.parse('RULES = {"sum": 1}\nMATMUL = ("mm", "bmm")\nif op.name == "cat": pass')
    assert len(_op_name_strings_in(table, {"sum", "mm", "bmm", "cat"})) == 5


def _op_lookups_by_name_in(tree, names):
    """Where a module's syntax tree decides something by an op's name: a set of op names
    (literal, ``set(...)`` or ``frozenset(...)``), a comparison with one, or ``op.name`` read
    anywhere but in an f-string (a message). Narrower than :func:`_op_name_strings_in`, for
    modules whose protobuf objects have ``.name`` fields and whose dicts use words such as
    ``"index"`` as keys."""
    import ast

    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}

    def is_name(node):
        return isinstance(node, ast.Constant) and isinstance(node.value, str) \
            and node.value in names

    def set_elements(node):
        if isinstance(node, ast.Set):
            return node.elts
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in ("set", "frozenset") and node.args \
                and isinstance(node.args[0], (ast.Tuple, ast.List)):  # a set literal: above
            return node.args[0].elts
        return []

    def is_op(node):
        return isinstance(node, ast.Name) and node.id == "op" \
            or isinstance(node, ast.Attribute) and node.attr == "op"

    found = []
    for node in ast.walk(tree):
        operands = set_elements(node)
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
        found += [f"line {o.lineno}: {o.value!r}" for o in operands if is_name(o)]
        if isinstance(node, ast.Attribute) and node.attr == "name" and is_op(node.value) \
                and not isinstance(parents.get(node), ast.FormattedValue):
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


def test_onnx_export_decides_nothing_by_an_op_name():
    """onnx/ keeps no set of op names: what the exporter does with an op (its mapping, whether
    it may constant-fold it) comes from the op's ``onnx`` rule and its kind."""
    import ast
    import pathlib

    root = pathlib.Path(ember.__file__).parent / "onnx"
    found = {}
    for path in sorted(root.rglob("*.py")):
        uses = _op_lookups_by_name_in(ast.parse(path.read_text()), set(registry))
        if uses:
            found[str(path.relative_to(root))] = uses
    assert found == {}, f"op names used to decide in ember/onnx: {found}"


def test_the_onnx_scan_finds_a_set_of_names_and_a_lookup():
    import ast

    table = ast.parse('SKIP = frozenset({"expand", "repeat"})\nif node.op.name in SKIP: pass\n'
                      'if op.name == "cat": pass\nreport = {"index": 1, "abs": 2}\n'
                      'raise KeyError(f"no form for {node.op.name}")\nx = proto.name')
    assert len(_op_lookups_by_name_in(table, {"expand", "repeat", "cat", "index", "abs"})) == 5


def test_the_exporter_folds_what_the_op_allows():
    """Constant folding follows the op's rules: a random draw (its kind) and an op whose ONNX
    mapping is ``unfolded`` (its result is larger than its inputs) stay in the graph; an
    element-wise op of known inputs folds."""
    from ember.onnx._export import _foldable
    from ember.ops._onnx_rules import folds, unfolded

    by_name = {op.name: op for op in _all_ops()}
    never = ("bernoulli", "normal", "poisson", "_binomial", "_standard_gamma",
             "_sample_dirichlet", "expand", "repeat", "onnx_symbolic")
    assert [name for name in never if _foldable(by_name[name])] == []
    assert _foldable(by_name["exp"]) and _foldable(by_name["add"])
    assert folds("Exp") and not folds(unfolded(lambda ctx, x: x))


def test_a_declined_rule_loops_and_says_why():
    """vmap of an op that declines a batching rule runs element by element, and says the op's
    reason; the results are torch's vmap's."""
    from ember.func import _vmap
    from ember.ops.reduce import histc_op

    x = np.random.default_rng(2).standard_normal((4, 6))
    out_e = ember.func.vmap(lambda t: ember.histc(t, bins=3))(ember.tensor(x))
    assert _vmap.last_call.path == "loop"
    assert histc_op.opt_outs["batch"] in _vmap.last_call.reason
    out_t = torch.func.vmap(lambda t: torch.histc(t, bins=3))(torch.tensor(x))
    np.testing.assert_allclose(out_e.numpy(), out_t.numpy(), rtol=1e-12)


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_of_all_elements_batches_per_element_as_torch(name):
    """``max()``/``min()`` of a whole tensor: the rule written next to the op reduces each
    element over its own dims in one call."""
    from ember.func import _vmap

    x = np.random.default_rng(3).standard_normal((5, 3, 4))
    out_e = ember.func.vmap(getattr(ember, name))(ember.tensor(x))
    assert _vmap.last_call.path == "batched"
    out_t = torch.func.vmap(getattr(torch, name))(torch.tensor(x))
    np.testing.assert_array_equal(out_e.numpy(), out_t.numpy())
# ---------------------------------------------------------------- fusion and autocast rules


def test_every_pointwise_op_fuses_or_says_why_not():
    offenders = sorted(op.name for op in _all_ops()
                       if op.pointwise and op.fuse is None and not op.declines("fuse"))
    assert offenders == [], f"pointwise ops without a fusion rule or a reason: {offenders}"


def test_only_pointwise_ops_fuse_and_other_kinds_decline_once_per_kind():
    from ember.ops._registry import KIND_OPT_OUTS

    assert [op.name for op in _all_ops() if op.fuse is not None and not op.pointwise] == []
    assert {k for k in KINDS if not k.startswith("pointwise")} == set(KIND_OPT_OUTS["fuse"])
    arity = {"pointwise-unary": 1, "pointwise-binary": 2, "pointwise-ternary": 3}
    for op in _all_ops():
        if op.fuse is not None:
            assert op.fuse.arity == arity[op.kind] and "fuse" not in op.opt_outs, op
    with pytest.raises(ValueError, match="only pointwise ops fuse"):
        Op("scratch", lambda xp, a: a, kind="reduction", fuse="exp", register=False)


def test_every_op_has_an_autocast_policy_or_inherits_none_by_kind():
    from ember.ops._registry import AUTOCAST_DEVICES, AUTOCAST_POLICIES

    for op in _all_ops():
        if op.autocast is None:
            reason = op.declines("autocast")
            assert isinstance(reason, str) and len(reason) > 10, op
        else:
            assert set(op.autocast) <= set(AUTOCAST_DEVICES), op
            assert set(op.autocast.values()) <= set(AUTOCAST_POLICIES), op


def test_an_autocast_policy_is_checked_where_it_is_declared():
    from ember.ops._registry import autocast_policy, autocast_rule

    assert autocast_rule("lower") == {"cpu": "lower", "cuda": "lower"}
    assert autocast_rule({"cuda": "fp32"}) == {"cuda": "fp32"}
    with pytest.raises(ValueError, match="autocast policy"):
        Op("scratch", lambda xp, a: a, autocast="half", register=False)
    with pytest.raises(ValueError, match="autocast policy"):
        autocast_policy(cuda="lowest")(lambda x: x)


@pytest.mark.parametrize("name,call", [
    ("kthvalue", lambda lib, x: lib.kthvalue(x, 2, dim=0)),
    ("median", lambda lib, x: lib.median(x, dim=-1, keepdim=True)),
    ("nanmedian", lambda lib, x: lib.nanmedian(x, dim=1)),
    ("mode", lambda lib, x: lib.mode(x.round(), dim=0)),
    ("diff", lambda lib, x: lib.diff(x, n=2, dim=0)),
])
def test_dim_ops_batch_along_their_dim_as_torch(name, call):
    """Ops working along one dim (k-th value, median, mode, differences) batch with the dim
    moved past the batch dim: one kernel call, torch's values and indices."""
    from ember.func import _vmap

    x = np.random.default_rng(4).standard_normal((3, 5, 4)) * 3
    x[0, 1, 2] = np.nan if name == "nanmedian" else x[0, 1, 2]
    out_e = ember.func.vmap(lambda t: call(ember, t))(ember.tensor(x))
    assert _vmap.last_call.path == "batched", _vmap.last_call.reason
    out_t = torch.func.vmap(lambda t: call(torch, t))(torch.tensor(x))
    for e, t in zip(out_e if isinstance(out_e, tuple) else (out_e,),
                    out_t if isinstance(out_t, tuple) else (out_t,)):
        np.testing.assert_array_equal(e.numpy(), t.numpy())


def test_diffs_gradient_batches_as_torch():
    """vmap(grad) of diff runs diff's adjoint batched too (per-example gradients)."""
    from ember.func import _vmap

    x = np.random.default_rng(5).standard_normal((3, 6))
    w = np.random.default_rng(6).standard_normal(4)

    def loss(lib, t):
        return (lib.diff(t, n=2) * lib.tensor(w)).sum()

    out_e = ember.func.vmap(ember.func.grad(lambda t: loss(ember, t)))(ember.tensor(x))
    assert _vmap.last_call.path == "batched", _vmap.last_call.reason
    out_t = torch.func.vmap(torch.func.grad(lambda t: loss(torch, t)))(torch.tensor(x))
    np.testing.assert_allclose(out_e.numpy(), out_t.numpy(), rtol=1e-12, atol=1e-12)


def test_a_device_kernel_runs_on_its_device_and_the_generic_one_elsewhere():
    """``op.defkernel(device_type)``: the CPU runs the op's own CPU kernel; the meta device
    (and any device without one) the generic kernel, which the device kernel may call."""
    calls = []
    op = Op("scratch", lambda xp, a: a * 2, kind="pointwise-unary", register=False,
            meta=None)

    @op.defkernel("cpu")
    def twice_on_cpu(xp, a):
        calls.append("cpu")
        return op.generic_kernel(xp, a)

    x = ember.arange(3.0)
    np.testing.assert_array_equal(op(x).numpy(), [0.0, 2.0, 4.0])
    assert calls == ["cpu"] and op.device_kernels == {"cpu": twice_on_cpu}
    assert op(ember.empty(3, device="meta")).shape == (3,) and calls == ["cpu"]
    with pytest.raises(ValueError, match="unknown device type 'tpu'"):
        op.defkernel("tpu", twice_on_cpu)


def test_an_op_without_device_kernels_runs_its_generic_kernel_directly():
    """No device kernel: nothing stands between dispatch and the kernel (the hot path)."""
    from ember.ops.pointwise import add_op

    assert add_op.kernel is add_op.generic_kernel and not add_op.device_kernels


@pytest.mark.parametrize("onednn", [True, False])
def test_the_cpu_kernels_of_convolution_and_layer_norm_match_torch(onednn):
    """The oneDNN CPU kernels and the generic NumPy kernels (oneDNN switched off) both give
    torch's convolution and layer norm, forward and backward."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    results = {}
    for lib in (ember, torch):
        xt = lib.tensor(x, requires_grad=True)
        wt = lib.tensor(w, requires_grad=True)
        with lib.backends.mkldnn.flags(enabled=onednn):
            y = lib.nn.functional.conv2d(xt, wt, padding=1)
            z = lib.nn.functional.layer_norm(y, y.shape[1:])
            (z * z).sum().backward()
        results[lib] = [t.detach().numpy() for t in (z, xt.grad, wt.grad)]
    for e, t in zip(results[ember], results[torch]):
        np.testing.assert_allclose(e, t, rtol=1e-4, atol=1e-4)


def test_dispatch_makes_results_as_tensor_make_does():
    """run_op and run_binary write Tensor._make out (a call costs ~10% of a small op): their
    results, plain and view, carry the same fields with the same values as _make's."""
    from ember._tensor import Tensor
    from ember.ops._registry import run_binary
    from ember.ops.pointwise import add_op

    def fields(t):
        return {name: getattr(t, name) for name in ("_rg", "_grad_fn", "_output_nr", "_base",
                                                     "_gfv", "_vmeta") if hasattr(t, name)}

    a, b = ember.ones(2, 3), ember.ones(2, 3)
    made = Tensor._make(np.ones(3), a._device)
    for result in (add_op(a, b), run_binary(add_op, a, b)):
        assert fields(result) == fields(made) and result._vc == made._vc == [0]
    view, made_view = a.view(6), Tensor._make(a._data.reshape(6), a._device, a)
    assert fields(view) == fields(made_view) and view._vc is a._vc
